/**
 * Whether a trunk answers: the edge sends a SIP OPTIONS to every trunk with `ping_sec` that often and
 * reports each outcome (POST /trunks/tick); outbound routing tries a trunk that stopped answering only
 * after the ones that answer, so callers do not wait out a dead trunk's timer first. The record lives
 * in the live store, one hash per account (field: the trunk id), shared by every instance.
 */
import { accountKey, type LiveStore } from "../live/live-store.ts";

/** Consecutive failed probes before a trunk counts as down (one lost UDP datagram is not an outage). */
export const TRUNK_DOWN_AFTER = 2;

/** A probe result older than this many of its trunk's ping intervals says nothing any more (edge gone, pings stopped). */
const STALE_AFTER_INTERVALS = 3;

/** What the live store keeps of a trunk's probes. */
export interface TrunkHealth {
  /** up: its last probe was answered; down: the last {@link TRUNK_DOWN_AFTER} or more were not. */
  state: "up" | "down";
  /** The SIP code of the last probe (408: no answer; 0: could not be sent). */
  code: number;
  /** Consecutive failed probes so far. */
  fails: number;
  /** Epoch ms of the last probe's outcome. */
  at: number;
  /** Epoch ms since when the state holds. */
  since: number;
  /** The edge node that probed last. */
  node: string;
}

/** The hash of an account's trunk health records. */
export function trunkHealthKey(accountId: string): string {
  return accountKey(accountId, "trunks", "health");
}

/**
 * Whether a probe's reply says the trunk is there: any reply of its SIP stack counts (a 404 or 405 to
 * OPTIONS too), except no reply at all (408, or 0: not sent) and 5xx (overloaded, unavailable).
 * @example probeAnswered(200) // true; probeAnswered(408) // false
 */
export function probeAnswered(code: number): boolean {
  return code >= 100 && code !== 408 && (code < 500 || code >= 600);
}

/** The next record after a probe with `code` (from `node` at `at`), given the current one. */
export function nextHealth(current: TrunkHealth | null, code: number, node: string, at: number): TrunkHealth {
  const answered = probeAnswered(code);
  const fails = answered ? 0 : (current?.fails ?? 0) + 1;
  const state = answered ? "up" : fails >= TRUNK_DOWN_AFTER ? "down" : (current?.state ?? "up");
  return { state, code, fails, at, since: current && current.state === state ? current.since : at, node };
}

/**
 * Records the outcomes of probes of one account's trunks; answers each probed trunk's record before
 * and after. Each trunk's record is replaced by compare-and-set, read again and recomputed when
 * another instance wrote it meanwhile (two edges' ticks at once): no probe's count is lost. A probe
 * older than the record's last probe of the same node (a slow tick of that node's) changes nothing. With `probed` (the account's trunks that are
 * probed now), the records of any others (deleted, or no longer pinged) are dropped.
 */
export async function recordTrunkProbes(
  live: LiveStore,
  accountId: string,
  probes: ReadonlyArray<{ trunk_id: string; code: number; node: string; at: number }>,
  probed?: ReadonlySet<string>,
): Promise<Record<string, { before: TrunkHealth | null; after: TrunkHealth }>> {
  const key = trunkHealthKey(accountId);
  const stored = await live.hgetall(key);
  const byTrunk = new Map<string, Array<(typeof probes)[number]>>();
  for (const probe of probes) byTrunk.set(probe.trunk_id, [...(byTrunk.get(probe.trunk_id) ?? []), probe]);
  const out: Record<string, { before: TrunkHealth | null; after: TrunkHealth }> = {};
  await Promise.all(
    [...byTrunk].map(async ([trunkId, list]) => {
      let raw: string | null = stored[trunkId] ?? null;
      for (let tries = 0; ; tries++) {
        const before = parseHealth(raw ?? undefined);
        let after = before;
        // A probe older than the record's last one of the same node (a slow tick of that node's) says
        // nothing new; another node's counts whenever its tick was taken (instances' clocks and reads differ).
        for (const probe of list) if (!after || probe.node !== after.node || probe.at >= after.at) after = nextHealth(after, probe.code, probe.node, probe.at);
        if (!after || after === before) {
          if (before) out[trunkId] = { before, after: before };
          return;
        }
        if (await live.hcompareAndSet(key, trunkId, raw, JSON.stringify(after))) {
          out[trunkId] = { before, after };
          return;
        }
        // Written by another instance since it was read: once more on what is there now.
        if (tries >= 10) throw new Error(`trunk health record ${trunkId} kept changing while it was written`);
        raw = await live.hget(key, trunkId);
      }
    }),
  );
  const gone = probed ? Object.keys(stored).filter((id) => !probed.has(id)) : [];
  if (gone.length) await live.hdel(key, ...gone);
  return out;
}

/** Every trunk health record of an account, by trunk id (one read). */
export async function readTrunkHealth(live: LiveStore, accountId: string): Promise<Map<string, TrunkHealth>> {
  const out = new Map<string, TrunkHealth>();
  for (const [id, raw] of Object.entries(await live.hgetall(trunkHealthKey(accountId)))) {
    const health = parseHealth(raw);
    if (health) out.set(id, health);
  }
  return out;
}

/** Drops the records of trunks that no longer exist or no longer ping (configuration applied). */
export async function forgetTrunkHealth(live: LiveStore, accountId: string, trunkIds: string[]): Promise<void> {
  if (trunkIds.length) await live.hdel(trunkHealthKey(accountId), ...trunkIds);
}

/**
 * Whether routing should treat the trunk as down now: its probes say so, and recently enough for
 * its ping interval (a record the pings stopped refreshing says nothing). A trunk that is not
 * probed (no ping_sec) is never down.
 */
export function isTrunkDown(health: TrunkHealth | undefined, pingSec: number | null, now: number): boolean {
  if (!health || pingSec === null || health.state !== "down") return false;
  return !isHealthStale(health, pingSec, now);
}

/** Whether a record is too old for its trunk's ping interval to say anything (the probes stopped). */
export function isHealthStale(health: TrunkHealth, pingSec: number, now: number): boolean {
  return now - health.at > pingSec * 1000 * STALE_AFTER_INTERVALS + 5_000;
}

function parseHealth(raw: string | undefined): TrunkHealth | null {
  if (raw === undefined) return null;
  try {
    const value = JSON.parse(raw) as TrunkHealth;
    return value && (value.state === "up" || value.state === "down") && Number.isFinite(value.at) ? value : null;
  } catch {
    // Only this module writes the hash; anything else reads as no record.
    return null;
  }
}
