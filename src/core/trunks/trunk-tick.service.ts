/**
 * The edge's periodic trunk work (POST /trunks/tick): each node reports how its OPTIONS probes and
 * its registrations with trunks went, and learns which trunks to probe now and which registrations to
 * keep. The schedule is stateless (a trunk is due when a multiple of its ping_sec, shifted by a
 * per-trunk offset, falls within the node's last interval), so any instance answers any tick.
 */
import type { DbOrTx } from "../db/db.ts";
import type { ConfigCache } from "../cache/config-cache.ts";
import { accountKey, type LiveStore } from "../live/live-store.ts";
import type { Logger } from "../log/logger.ts";
import type { SecretStore } from "../secrets/secrets.service.ts";
import { trunkContacts } from "../presence/presence.service.ts";
import { hostOf } from "../routing/decide-support.ts";
import { describeError } from "../../http/describe-error.ts";
import { isHealthStale, readTrunkHealth, recordTrunkProbes } from "./trunk-health.ts";
import { MAX_TICK_PROBES, MAX_TICK_REGISTRATIONS, type TrunkTickModel } from "./trunk-tick.model.ts";
import { findRegisteredTrunk, listProbedTrunks, listRegisteredTrunks, listTrunkStatusRows, type RegisteredTrunk } from "./trunks.store.ts";

export interface TrunkTickDeps {
  db: DbOrTx;
  live: LiveStore;
  secrets: SecretStore;
  log: Logger;
  /** The clock (epoch ms); default now. */
  now?: () => number;
  /**
   * Keeps each registration's request between ticks (dropped as its account's configuration changes),
   * so a password is revealed once per change, not every tick; without it every tick builds them.
   */
  configCache?: ConfigCache;
}

/** How long a node's registration report lasts without another (its key's lifetime). */
const REGISTRATION_REPORT_TTL_MS = 10 * 60_000;
/**
 * A node's report of a registration older than this is not shown (three ticks of the longest interval):
 * a node that stopped ticking, or stopped keeping it, no longer says it is registered.
 */
const REGISTRATION_REPORT_FRESH_MS = 180_000;

type RegistrationState = TrunkTickModel.RegistrationState;

/** The hash of an account's registration reports: field `<trunk id> <node>`. */
function registrationKey(accountId: string): string {
  return accountKey(accountId, "trunks", "registration");
}

/** uac_reg_status() as a state. */
function registrationState(status: number): RegistrationState {
  return status === 1 ? "registered" : status === -2 ? "registering" : status === -99 ? "failed" : status === -3 ? "disabled" : "unknown";
}

/**
 * Whether a trunk probed every `pingSec` is due in the tick at `nowSec` covering the last `interval`
 * seconds: a multiple of pingSec, shifted by the trunk's own offset (so trunks spread over the
 * interval instead of all at once), in (nowSec - interval, nowSec].
 * @example probeDue("trk_…", 30, 1795877760, 5)
 */
export function probeDue(trunkId: string, pingSec: number, nowSec: number, interval: number): boolean {
  const offset = hashOf(trunkId) % pingSec;
  return Math.floor((nowSec - offset) / pingSec) > Math.floor((nowSec - interval - offset) / pingSec);
}

/** A trunk's proxy (`host[:port]`) as a SIP URI, with its transport when not UDP. */
function proxyUri(proxy: string, transport: string): string {
  return `sip:${proxy}${transport === "udp" ? "" : `;transport=${transport}`}`;
}

function hashOf(text: string): number {
  let h = 2166136261;
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 16777619);
  return h >>> 0;
}

/** The ticks' use cases. */
export function trunkTicker(deps: TrunkTickDeps) {
  type Registration = TrunkTickModel.Reply["registrations"][number];

  /** The uac.reg_add request of a trunk we register with, or null when its password is gone. */
  async function buildRegistration(t: RegisteredTrunk): Promise<Registration | null> {
    let password: string | null = null;
    try {
      password = t.auth_secret_ref && t.auth_username ? await deps.secrets.reveal(deps.db, t.account_id, t.auth_secret_ref) : null;
    } catch (error) {
      // One unreadable secret must not fail every node's tick (no probes, no registration changes anywhere).
      deps.log.error("a do_register trunk's password cannot be read: not registered", { account_id: t.account_id, trunk_id: t.id, error: describeError(error) });
      return null;
    }
    if (password === null || !t.proxy || !t.auth_username) {
      deps.log.warn("a do_register trunk has no usable credentials or proxy: not registered", { account_id: t.account_id, trunk_id: t.id });
      return null;
    }
    // The AoR's domain is the one calls out through the trunk name (from_domain, else the proxy's
    // host); the realm the HA1 is for is the trunk's realm, else that domain.
    const domain = t.from_domain ?? hostOf(t.proxy);
    const realm = t.realm ?? domain;
    const ha1 = new Bun.CryptoHasher("md5").update(`${t.auth_username}:${realm}:${password}`).digest("hex");
    const proxy = proxyUri(t.proxy, t.transport);
    // uac.reg_add: l_uuid, l_username, l_domain, r_username, r_domain, realm, auth_username,
    // auth_password ("." = none), auth_ha1, auth_proxy, expires, flags, reg_delay, socket, contact_addr.
    const params = [t.id, t.id, "parley", t.auth_username, domain, realm, t.auth_username, ".", ha1, proxy, t.expire_sec, 0, 0, ".", "."];
    const rpc = JSON.stringify({ jsonrpc: "2.0", method: "uac.reg_add", params, id: 1 });
    const version = new Bun.CryptoHasher("sha256").update(rpc).digest("base64url").slice(0, 16);
    return { trunk_id: t.id, account_id: t.account_id, version, rpc };
  }

  const registrationOf = (t: RegisteredTrunk): Promise<Registration | null> => {
    const cache = deps.configCache;
    if (!cache) return buildRegistration(t);
    // Kept under the trunk's account: any change of its configuration (the password too) drops it.
    // The load reads the trunk itself, so a change told while it runs keeps nothing (the cache's
    // guard); built from the row the tick listed earlier, a change between that listing and this
    // load was kept for good (a password replaced in place has the same reference).
    return cache.read(
      `trunkreg\u0000${t.account_id}\u0000${t.id}`,
      async () => {
        const now = await findRegisteredTrunk(deps.db, t.account_id, t.id);
        return now ? buildRegistration(now) : null;
      },
      () => t.account_id,
    );
  };

  return {
    /** One node's tick: records what it reports, answers what to probe now and what to keep registered. */
    async tick(input: TrunkTickModel.Request): Promise<TrunkTickModel.Reply> {
      const now = deps.now?.() ?? Date.now();
      const [probed, registered] = await Promise.all([listProbedTrunks(deps.db), listRegisteredTrunks(deps.db, input.node)]);
      // Only reports of what the node was asked to do are kept: a probe of a trunk that is not probed
      // (any more), a registration state of one that is not this node's, are left out.
      const key = (accountId: string, trunkId: string) => `${accountId}\u0000${trunkId}`;
      const probedKeys = new Set(probed.map((t) => key(t.account_id, t.id)));
      const probedByAccount = new Map<string, Set<string>>();
      for (const t of probed) probedByAccount.set(t.account_id, (probedByAccount.get(t.account_id) ?? new Set()).add(t.id));
      const registeredKeys = new Set(registered.map((t) => key(t.account_id, t.id)));
      const probesByAccount = new Map<string, Array<{ trunk_id: string; code: number; node: string; at: number }>>();
      for (const p of input.probes ?? []) {
        if (!probedKeys.has(key(p.account_id, p.trunk_id))) continue;
        const list = probesByAccount.get(p.account_id) ?? [];
        list.push({ trunk_id: p.trunk_id, code: p.code, node: input.node, at: now });
        probesByAccount.set(p.account_id, list);
      }
      const statesByAccount = new Map<string, Record<string, string>>();
      /** This node's reports of registrations it is not to keep any more (told to drop them now). */
      const droppedByAccount = new Map<string, string[]>();
      for (const r of input.registrations ?? []) {
        if (!registeredKeys.has(key(r.account_id, r.trunk_id))) {
          droppedByAccount.set(r.account_id, [...(droppedByAccount.get(r.account_id) ?? []), `${r.trunk_id} ${input.node}`]);
          continue;
        }
        const fields = statesByAccount.get(r.account_id) ?? {};
        fields[`${r.trunk_id} ${input.node}`] = JSON.stringify({ state: registrationState(r.status), at: now });
        statesByAccount.set(r.account_id, fields);
      }
      await Promise.all([
        ...[...probesByAccount].map(async ([accountId, probes]) => {
          const changes = await recordTrunkProbes(deps.live, accountId, probes, probedByAccount.get(accountId));
          for (const [trunkId, { before, after }] of Object.entries(changes)) {
            const where = { account_id: accountId, trunk_id: trunkId, code: after.code, node: input.node };
            if (after.state === "down" && before?.state !== "down") deps.log.warn("trunk stopped answering OPTIONS: tried after the others", where);
            if (after.state === "up" && before?.state === "down") deps.log.info("trunk answers OPTIONS again", where);
          }
        }),
        ...[...statesByAccount].map(async ([accountId, fields]) => {
          await deps.live.hset(registrationKey(accountId), fields);
          await deps.live.expire(registrationKey(accountId), REGISTRATION_REPORT_TTL_MS);
        }),
        ...[...droppedByAccount].map(([accountId, fields]) => deps.live.hdel(registrationKey(accountId), ...fields)),
      ]);

      const nowSec = Math.floor(now / 1000);
      const due = probed.filter((t) => probeDue(t.id, t.ping_sec, nowSec, input.interval));
      let sent = due;
      if (due.length > MAX_TICK_PROBES) {
        deps.log.warn("more trunks due for a probe than one tick sends: some are probed less often", { node: input.node, due: due.length });
        // Each tick starts where the one before left off, so every trunk gets its turn (a fixed order
        // never probed the same tail).
        const start = (Math.floor(nowSec / input.interval) * MAX_TICK_PROBES) % due.length;
        sent = [...due.slice(start), ...due.slice(0, start)].slice(0, MAX_TICK_PROBES);
      }
      const ping = sent.map((t) => ({ account_id: t.account_id, trunk_id: t.id, uri: proxyUri(t.proxy, t.transport) }));
      // Only what the node does not keep as it should: new and changed registrations, a few per tick
      // (the rest next time, once it reports these kept), and the ones it should drop.
      const held = new Map((input.registrations ?? []).map((r) => [r.trunk_id, r.version ?? ""]));
      const wanted = (await Promise.all(registered.map(registrationOf))).filter((r) => r !== null);
      const registrations = wanted.filter((r) => held.get(r.trunk_id) !== r.version).slice(0, MAX_TICK_REGISTRATIONS);
      const keep = new Set(wanted.map((r) => r.trunk_id));
      const unregister = [...held.keys()].filter((id) => !keep.has(id));
      return { ok: true, ping, registrations, unregister };
    },

    /** An account's trunks with their probes' verdict, our registrations with them, and theirs with us. */
    async status(accountId: string): Promise<TrunkTickModel.StatusReply> {
      const now = deps.now?.() ?? Date.now();
      const [rows, health, reports] = await Promise.all([
        listTrunkStatusRows(deps.db, accountId),
        readTrunkHealth(deps.live, accountId),
        deps.live.hgetall(registrationKey(accountId)),
      ]);
      const contacts = await Promise.all(rows.map((r) => (r.inbound_auth === "register" ? trunkContacts(deps.live, accountId, r.id, now) : Promise.resolve([]))));
      const data = rows.map((row, i) => {
        const h = health.get(row.id);
        const registrations = Object.entries(reports)
          .filter(([field]) => field.startsWith(`${row.id} `))
          .map(([field, raw]) => {
            const value = JSON.parse(raw) as { state: RegistrationState; at: number };
            return { node: field.slice(row.id.length + 1), state: value.state, at: value.at };
          })
          .filter((r) => now - r.at <= REGISTRATION_REPORT_FRESH_MS)
          .sort((a, b) => (a.node < b.node ? -1 : 1));
        const probedNow = row.ping_sec !== null && h !== undefined;
        const stale = probedNow && isHealthStale(h, row.ping_sec!, now);
        return {
          trunk_id: row.id,
          name: row.name,
          status: row.status,
          ping: probedNow ? { state: h.state, code: h.code, fails: h.fails, at: h.at, since: h.since, node: h.node, stale: stale ? 1 : 0 } : null,
          registrations: row.do_register === 1 ? registrations : [],
          registered_contacts: contacts[i]!.length,
        };
      });
      return { ok: true, data };
    },
  };
}
