/**
 * Call admission control: concurrency counters in the live store, one per slot (an account's
 * inbound / outbound / dialer ceiling, a number's or trunk's channels, a user's simultaneous calls).
 *
 * Each slot is a sorted set of the call ids holding it, scored by a deadline: release removes exactly
 * the call's member (idempotent), and a member whose deadline passed stops counting, so a lost BYE
 * cannot hold a slot longer than CAC_MAX_CALL_SEC. A confirmed call renews its deadline. A call that
 * goes out through the trunk it came in by holds that trunk's set twice: its leg out (a slot with
 * `leg: "out"`) under a member of its own, `call_…:out`.
 *
 * Acquisition is all or nothing in one atomic step (`zaddExpiringWithin`: one round trip, no partial
 * take to undo), so a slot never holds more calls than its limit and two calls racing for the last
 * place cannot both be refused. Every key is under the account's hash tag, so this works unchanged on
 * Redis Cluster and across instances.
 */
import { accountKey, type LiveStore } from "../live/live-store.ts";
import { CAC_LEVELS, type CacSlot } from "../routing/route-types.ts";

/** Levels in the order snapshots list them. */

const slotName = (slot: Pick<CacSlot, "level" | "id">) => `${slot.level}|${slot.id}`;
/** What the leg out of a call holds a trunk's counter under, beside the call's own member (`call_…:out`). */
const OUT_LEG = ":out";
/** The member a call holds `slot` under: its id, or for the leg out through the trunk it came in by, its own. */
const memberOf = (member: string, slot: Pick<CacSlot, "leg">) => (slot.leg === "out" ? member + OUT_LEG : member);
const slotKey = (accountId: string, slot: Pick<CacSlot, "level" | "id">) => accountKey(accountId, "cac", "slot", slot.level, slot.id);
/** Every slot the account has used, so snapshots and resets can find them. */
const registryKey = (accountId: string) => accountKey(accountId, "cac", "slots");
/** The last limit each slot was taken with (what the snapshot shows). */
const limitsKey = (accountId: string) => accountKey(accountId, "cac", "limits");

/** The account's slot index (names and last limits), kept a minute longer than any member it can list. */
const slotIndex = (accountId: string, ttlMs: number) => ({ namesKey: registryKey(accountId), valuesKey: limitsKey(accountId), ttlMs: ttlMs + 60_000 });

/** What a soft slot is taken with: it counts every call and refuses none. */
const SOFT_CEILING = 2 ** 31 - 1;

/** Outcome of `acquireSlots`. */
export type Acquired = { ok: true } | { ok: false; refused: CacSlot; active: number };

/**
 * Takes every slot for `member` (a call id) or none. Re-taking slots the member already holds only
 * renews them (a retransmitted request counts once). A soft slot is taken whatever it holds.
 * @example const got = await acquireSlots(live, acc, "call_…", decision.slots, 14_400_000); if (!got.ok) reject(got.refused)
 */
export async function acquireSlots(live: LiveStore, accountId: string, member: string, slots: readonly CacSlot[], ttlMs: number): Promise<Acquired> {
  if (!slots.length) return { ok: true };
  // The take records its slots (which exist, and their last limits, for snapshots and resets) in
  // the same atomic step, so a slot taken is always findable; the index outlives every member that
  // could still be counted.
  const got = await live.zaddExpiringWithin(
    slots.map((slot) => ({ key: slotKey(accountId, slot), limit: slot.soft ? SOFT_CEILING : slot.limit, member: memberOf(member, slot) })),
    member,
    ttlMs,
    { ...slotIndex(accountId, ttlMs), entries: slots.map((slot) => ({ name: slotName(slot), value: slot.soft ? `-${slot.limit}` : String(slot.limit) })) },
  );
  return got.ok ? { ok: true } : { ok: false, refused: slots[got.index]!, active: got.count };
}

/** Gives back `member`'s place in each slot. Safe to repeat, and for slots it does not hold. */
export async function releaseSlots(live: LiveStore, accountId: string, member: string, slots: readonly CacSlot[]): Promise<void> {
  // Sent together: the live store pipelines them into one round trip.
  await Promise.all(slots.map((slot) => live.zrem(slotKey(accountId, slot), memberOf(member, slot))));
}

/**
 * Renews the deadline of slots `member` holds (a confirmed call: counted until it ends or for
 * another `ttlMs`). Slots it no longer holds (released, or cleared by a reset) are not taken again.
 */
export async function renewSlots(live: LiveStore, accountId: string, member: string, slots: readonly CacSlot[], ttlMs: number): Promise<void> {
  if (!slots.length) return;
  // One atomic step for every slot, the index's expiry with it; a leg out through the trunk the call
  // came in by (its own member) in a second.
  const out = slots.filter((slot) => slot.leg === "out");
  await Promise.all([
    live.zrenewExpiring(
      slots.filter((slot) => slot.leg !== "out").map((slot) => slotKey(accountId, slot)),
      member,
      ttlMs,
      slotIndex(accountId, ttlMs),
    ),
    ...(out.length ? [live.zrenewExpiring(out.map((slot) => slotKey(accountId, slot)), memberOf(member, { leg: "out" }), ttlMs)] : []),
  ]);
}

/**
 * How many calls hold `slot` now: what /route reads to know a user is busy at its own concurrent limit
 * before CAC would refuse the call (so the call can go to the user's busy forward or mailbox).
 * @example if ((await slotActive(live, acc, { level: "call_limit", id: "cl_…" })) >= 1) busy()
 */
export async function slotActive(live: LiveStore, accountId: string, slot: Pick<CacSlot, "level" | "id">): Promise<number> {
  return (await live.zliveMembers(slotKey(accountId, slot))).length;
}

/** One counter of a snapshot. */
export interface CacCounter {
  level: CacSlot["level"];
  /** The account id for account_* levels, else the num_/trk_/us_ id. */
  id: string;
  /** The ceiling the last admission used. */
  limit: number;
  /** A soft call limit's counter: it refuses no call, so `active` may pass `limit`. */
  soft?: true;
  /** Calls holding the slot now. */
  active: number;
  /** Their call ids, soonest deadline first (a call in and out through one trunk is there twice: two channels). */
  call_ids: string[];
}

/** How long after its slots were taken a call may still be without a record (its admission being written). */
export const ADMISSION_GRACE_MS = 60_000;

/** The account's counters that hold at least one call, by level then id. */
export async function cacSnapshot(live: LiveStore, accountId: string): Promise<CacCounter[]> {
  const names = await live.smembers(registryKey(accountId));
  const limits = await live.hgetall(limitsKey(accountId));
  const out: CacCounter[] = [];
  for (const name of names) {
    const [level, id] = name.split("|") as [CacSlot["level"], string];
    const members = await live.zliveMembers(slotKey(accountId, { level, id }));
    if (!members.length) continue;
    const callIds = members.map((m) => (m.endsWith(OUT_LEG) ? m.slice(0, -OUT_LEG.length) : m));
    // A soft limit's is written negative ("-5"): still a number to an instance of an earlier version.
    const written = limits[name] ?? "0";
    const soft = written.startsWith("-");
    out.push({ level, id, limit: Math.abs(Number(written)), ...(soft ? { soft: true as const } : {}), active: members.length, call_ids: callIds });
  }
  return out.sort((a, b) => CAC_LEVELS.indexOf(a.level) - CAC_LEVELS.indexOf(b.level) || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
}

/**
 * Clears every counter of the account (leaked slots after a crash or a lost BYE). Calls still up
 * stop counting until their next admission or confirmation. With `callsUp`, only the slots of calls
 * that are not up (their record ended, or gone) are cleared. Returns the counters that were cleared
 * (or changed) and how many calls' slots went.
 */
export async function resetCac(
  live: LiveStore,
  accountId: string,
  /**
   * With it, only leaked slots go: those of calls `callsUp` does not name as up (ids of call records):
   * their record has ended, or they have none and their slot was taken (or renewed) more than
   * ADMISSION_GRACE_MS ago (slots are taken before the call's record is written: a call being admitted
   * has none yet). `ttlMs`: the slots' lifetime (CAC_MAX_CALL_SEC).
   */
  leakedOnly?: { callsUp: (callIds: string[]) => Promise<{ up: ReadonlySet<string>; recorded: ReadonlySet<string> }>; ttlMs: number },
): Promise<{ counters: number; calls: number }> {
  const names = await live.smembers(registryKey(accountId));
  let counters = 0;
  let calls = 0;
  for (const name of names) {
    const [level, id] = name.split("|") as [CacSlot["level"], string];
    const key = slotKey(accountId, { level, id });
    if (leakedOnly) {
      // Only what no call up holds: the counter stays listed, with its ceiling, for the calls that are.
      const now = Date.now();
      const held = await live.zrangeByScore(key, now, Number.MAX_SAFE_INTEGER);
      if (!held.length) continue;
      const callOf = (m: string) => (m.endsWith(OUT_LEG) ? m.slice(0, -OUT_LEG.length) : m);
      const { up, recorded } = await leakedOnly.callsUp([...new Set(held.map((h) => callOf(h.member)))]);
      // A slot's score is its deadline: taken (or renewed) at deadline - ttl.
      const recent = (deadline: number) => deadline - leakedOnly.ttlMs > now - ADMISSION_GRACE_MS;
      const leaked = held.filter((h) => !up.has(callOf(h.member)) && (recorded.has(callOf(h.member)) || !recent(h.score))).map((h) => h.member);
      if (!leaked.length) continue;
      await live.zrem(key, ...leaked);
      counters += 1;
      calls += leaked.length;
      continue;
    }
    // Unlisted before its counter is cleared, never after: a call admitted to the slot once it is
    // cleared lists it again (in the same atomic step), so GET /cac shows that call and the next reset
    // clears it. Only the names read above: a slot registered meanwhile stays listed.
    await Promise.all([live.srem(registryKey(accountId), name), live.hdel(limitsKey(accountId), name)]);
    const members = await live.zliveMembers(key);
    if (members.length) {
      counters += 1;
      calls += members.length;
    }
    await live.del(key);
  }
  return { counters, calls };
}
