/**
 * What the call path reads of an account's configuration, kept per instance between calls: the read
 * an INVITE costs most (the device's credential and routing context, bench:sip) is then no round trip.
 *
 * Never the only copy of anything, never stale past a change seen: every configuration table has a
 * trigger (migration 0008) that notifies channel `parley_config` with the account id after commit, and
 * each instance drops what it holds of that account when told. A read running while any change is told
 * is not kept. Until the listen is established, and
 * again while it is re-established after a dropped connection, nothing is kept: every read goes to the
 * database, as without the cache.
 *
 * This instance's own writes are seen by its next request: `settle()` (run after every mutating API
 * request, see host-base.ts) waits until the listen has delivered everything committed before it, by
 * sending a notification of its own and waiting for it (notifications arrive in commit order). Other
 * instances see a change a moment after its commit (one notification's trip: well under a millisecond
 * on a local network), as they would see a committed row read just before it.
 *
 * A listen can be lost without a word (its connection dropped, a proxy in between): on PostgreSQL each
 * instance sends itself a notification every HEARTBEAT_MS, and an entry is served only while one sent
 * at most MAX_UNCONFIRMED_MS ago has come back. Past that, the cache is emptied and every read goes to
 * the database until the listen is confirmed again: a lost listen costs speed, never staleness.
 */
import { sql } from "drizzle-orm";
import type { Database } from "../db/db.ts";
import type { Logger } from "../log/logger.ts";

export const CONFIG_CHANNEL = "parley_config";
/** Entries held at most (all accounts); past it the oldest go first. */
const MAX_ENTRIES = 20_000;
/** A settle() waits at most this long for its own notification before giving up (and clearing the cache). */
const SETTLE_TIMEOUT_MS = 2_000;
/** How often an instance checks its listen by a notification to itself (PostgreSQL). */
const HEARTBEAT_MS = 1_000;
/** Entries are served only while a notification sent at most this long ago has come back. */
const MAX_UNCONFIRMED_MS = 3_000;
const SYNC_PREFIX = "~sync:";

/** Timings (tests shorten them). */
export interface ConfigCacheOptions {
  heartbeatMs?: number;
  maxUnconfirmedMs?: number;
  now?: () => number;
}

export interface ConfigCache {
  /**
   * The cached answer for `key`, or `load()`'s (kept, under the account it names, unless the account
   * changed meanwhile or the cache is not listening). `accountOf` names the account of an answer (null:
   * not kept, e.g. nothing found).
   */
  read<T>(key: string, load: () => Promise<T>, accountOf: (value: T) => string | null): Promise<T>;
  /**
   * Per-row answers about several (account, id) pairs, keyed `account\u0000id` like the stores' own
   * maps: the cached ones, and `load(missing)`'s for the rest (one read for all of them). A pair `load`
   * leaves out is "not found", and kept as such too (the pair's account is known, so a change that
   * would make it exist drops it). `prefix` names the question (one cache serves several).
   */
  readEach<T>(
    prefix: string,
    refs: ReadonlyArray<{ account_id: string; id: string }>,
    load: (missing: Array<{ account_id: string; id: string }>) => Promise<ReadonlyMap<string, T>>,
  ): Promise<Map<string, T>>;
  /** Resolves once every change committed before the call has been seen (see above). */
  settle(): Promise<void>;
  /**
   * Calls `listener` with an account's id each time a change of its configuration is told, and with
   * null when anything may have changed unseen (the listen was (re)established); synchronously, as the
   * change is told, so after `settle()` every listener has heard of every change committed before it.
   * Returns the unsubscribe.
   */
  onChange(listener: (accountId: string | null) => void): () => void;
  /** Whether entries are being kept (the listen is established and, on PostgreSQL, confirmed lately). */
  readonly active: boolean;
  /** Entries held now (tests, diagnostics). */
  readonly size: number;
  /** Accounts with entries held now (tests, diagnostics): never more than the entries. */
  readonly accounts: number;
  stop(): Promise<void>;
}

interface Entry {
  account: string;
  value: unknown;
}

/** What readEach keeps for a pair its load did not find. */
const ABSENT = Symbol("absent");

/**
 * Starts listening on `database` and returns the cache (its entries kept only once listening).
 * @example const cache = await startConfigCache(platform.database, platform.log)
 */
export async function startConfigCache(database: Database, log: Logger, options: ConfigCacheOptions = {}): Promise<ConfigCache> {
  const now = options.now ?? Date.now;
  const maxUnconfirmedMs = options.maxUnconfirmedMs ?? MAX_UNCONFIRMED_MS;
  const heartbeatMs = options.heartbeatMs ?? HEARTBEAT_MS;
  /** PGlite delivers in the committing call itself: nothing to lose, nothing to confirm. */
  const confirming = database.kind === "postgres";
  const entries = new Map<string, Entry>();
  /** Keys per account, to drop an account's entries at once. */
  const keysOf = new Map<string, Set<string>>();
  /** Changes told so far (any account), and re-listens: a read kept only if neither moved while it ran. */
  let changes = 0;
  let epoch = 0;
  let listening = false;
  let syncs = 0;
  /** When the newest notification this instance sent itself and got back was sent. */
  let confirmedAt = 0;
  const waiting = new Map<string, () => void>();
  const listeners = new Set<(accountId: string | null) => void>();
  const tell = (accountId: string | null) => {
    for (const listener of listeners) {
      try {
        listener(accountId);
      } catch (error) {
        log.error("configuration change listener failed", { error: String(error) });
      }
    }
  };

  const clear = () => {
    entries.clear();
    keysOf.clear();
    epoch += 1;
  };
  const drop = (account: string) => {
    changes += 1;
    tell(account);
    const keys = keysOf.get(account);
    if (!keys) return;
    for (const key of keys) entries.delete(key);
    keysOf.delete(account);
  };
  /** Entries may be kept and served: listening, and (PostgreSQL) the listen confirmed lately. */
  const trusted = () => {
    if (!listening) return false;
    if (!confirming || now() - confirmedAt <= maxUnconfirmedMs) return true;
    if (entries.size) {
      log.warn("configuration cache: the listen for changes is not confirmed; emptied (calls read the database until it is)");
      clear();
    }
    return false;
  };

  const onNotify = (payload: string) => {
    if (payload.startsWith(SYNC_PREFIX)) {
      waiting.get(payload)?.();
      return;
    }
    drop(payload);
  };
  // Each (re)listen: whatever changed while not listening is unknown, so nothing held is trusted.
  const onListen = () => {
    clear();
    confirmedAt = now();
    listening = true;
    tell(null);
  };

  /**
   * Sends this instance a notification and waits (at most `timeoutMs`) for it: true once it came back,
   * so every change committed before the call has been told, and the listen is confirmed.
   */
  async function sync(timeoutMs: number): Promise<boolean> {
    const sentAt = now();
    const token = `${SYNC_PREFIX}${process.pid}:${++syncs}:${Math.random().toString(36).slice(2)}`;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const seen = new Promise<boolean>((resolve) => {
      waiting.set(token, () => resolve(true));
      timer = setTimeout(() => resolve(false), timeoutMs);
    });
    try {
      await database.db.execute(sql`select pg_notify(${CONFIG_CHANNEL}, ${token})`);
      const back = await seen;
      if (back) confirmedAt = Math.max(confirmedAt, sentAt);
      return back;
    } catch {
      return false; // The database is unreachable: the heartbeat lapses and the cache stops serving.
    } finally {
      clearTimeout(timer);
      waiting.delete(token);
    }
  }

  let unlisten: (() => Promise<void>) | null = null;
  try {
    unlisten = await database.listen(CONFIG_CHANNEL, onNotify, onListen);
  } catch (error) {
    log.warn("configuration cache off: cannot listen for changes (every call reads the database)", { error: String(error) });
  }
  let beating = false;
  const heartbeat = confirming
    ? setInterval(() => {
        if (!listening || beating) return;
        beating = true;
        // A beat not back within its interval is given up; the next one may confirm.
        void sync(heartbeatMs).finally(() => (beating = false));
      }, heartbeatMs)
    : null;
  heartbeat?.unref?.();

  /** The entry for `key`, most recently used last (the oldest go first when full), if served now. */
  const lookup = (key: string, serve: boolean): Entry | undefined => {
    const hit = serve ? entries.get(key) : undefined;
    if (hit) {
      entries.delete(key);
      entries.set(key, hit);
    }
    return hit;
  };
  /** Forgets `key` in its account's index, and the index itself once it is empty (bounded by the entries). */
  const unindex = (account: string, key: string) => {
    const keys = keysOf.get(account);
    if (keys?.delete(key) && keys.size === 0) keysOf.delete(account);
  };
  const keep = (key: string, account: string, value: unknown) => {
    const replaced = entries.get(key);
    if (replaced && replaced.account !== account) unindex(replaced.account, key);
    if (!replaced && entries.size >= MAX_ENTRIES) {
      const oldest = entries.keys().next().value as string;
      const old = entries.get(oldest)!;
      entries.delete(oldest);
      unindex(old.account, oldest);
    }
    // Shared by every call that reads it: frozen, so no caller can change what the next one gets.
    entries.set(key, { account, value: deepFreeze(value) });
    let keys = keysOf.get(account);
    if (!keys) keysOf.set(account, (keys = new Set()));
    keys.add(key);
  };
  /** Runs a load; its answer may be kept only if no change was told (and nothing re-listened) meanwhile. */
  const loadTracked = async <T>(load: () => Promise<T>): Promise<{ value: T; keepable: boolean }> => {
    const startEpoch = epoch;
    const startChanges = changes;
    const value = await load();
    return { value, keepable: epoch === startEpoch && changes === startChanges && trusted() };
  };

  const cache: ConfigCache = {
    async read(key, load, accountOf) {
      const hit = lookup(key, trusted());
      if (hit) return hit.value as Awaited<ReturnType<typeof load>>;
      // A change told while the read ran may or may not be in its answer: not kept (changes are rare).
      const { value, keepable } = await loadTracked(load);
      const account = accountOf(value);
      if (account !== null && keepable) keep(key, account, value);
      return value;
    },
    async readEach<T>(
      prefix: string,
      refs: ReadonlyArray<{ account_id: string; id: string }>,
      load: (missing: Array<{ account_id: string; id: string }>) => Promise<ReadonlyMap<string, T>>,
    ): Promise<Map<string, T>> {
      const found = new Map<string, T>();
      const missing = new Map<string, { account_id: string; id: string }>();
      const serve = trusted();
      for (const ref of refs) {
        const key = `${ref.account_id}\u0000${ref.id}`;
        if (found.has(key) || missing.has(key)) continue;
        const hit = lookup(prefix + key, serve);
        if (!hit) missing.set(key, ref);
        else if (hit.value !== ABSENT) found.set(key, hit.value as T);
      }
      if (!missing.size) return found;
      const { value: loaded, keepable } = await loadTracked(() => load([...missing.values()]));
      for (const [key, ref] of missing) {
        const value = loaded.get(key);
        if (value !== undefined) found.set(key, value);
        if (keepable) keep(prefix + key, ref.account_id, value === undefined ? ABSENT : value);
      }
      return found;
    },
    async settle() {
      // PGlite tells before the write resolves; an unconfirmed listen serves nothing, so nothing to wait for.
      if (!confirming || !trusted()) return;
      if (!(await sync(SETTLE_TIMEOUT_MS))) {
        log.warn("configuration cache: this instance's change was not told back in time; emptied");
        clear();
      }
    },
    onChange(listener) {
      listeners.add(listener);
      return () => void listeners.delete(listener);
    },
    get active() {
      return trusted();
    },
    get size() {
      return entries.size;
    },
    get accounts() {
      return keysOf.size;
    },
    async stop() {
      listeners.clear();
      if (heartbeat) clearInterval(heartbeat);
      listening = false;
      clear();
      await unlisten?.();
    },
  };
  return cache;
}

function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === "object" && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const inner of Object.values(value)) deepFreeze(inner);
  }
  return value;
}
