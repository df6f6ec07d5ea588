/**
 * In-process `LiveStore` for the embedded single-instance deployment. It mirrors Redis semantics
 * method for method (one keyspace, one type per key, empty collections vanish, WRONGTYPE errors,
 * millisecond expiry) so that code tested against it behaves the same once Redis is configured.
 */
import { checkBindingWrite, checkLogId, checkPublishLogged, type LiveStore, type MessageHandler, type WindowHit } from "./live-store.ts";

/** How often expired keys nobody reads are dropped; lazy expiry alone would let them pile up. */
const SWEEP_INTERVAL_MS = 1_000;

// Redis's own error texts, so callers (and tests) can match one message for both stores.
const WRONGTYPE = "WRONGTYPE Operation against a key holding the wrong kind of value";
const NOT_INTEGER = "ERR value is not an integer or out of range";
const HASH_NOT_INTEGER = "ERR hash value is not an integer";

interface StringEntry {
  kind: "string";
  value: string;
  expiresAt: number | null;
}
interface HashEntry {
  kind: "hash";
  value: Map<string, string>;
  expiresAt: number | null;
}
interface SetEntry {
  kind: "set";
  value: Set<string>;
  expiresAt: number | null;
}
interface ZsetEntry {
  kind: "zset";
  value: Map<string, number>;
  expiresAt: number | null;
}
type Entry = StringEntry | HashEntry | SetEntry | ZsetEntry;
type Kind = Entry["kind"];
type EntryOf<K extends Kind> = Extract<Entry, { kind: K }>;

/** One subscription; a token rather than the handler so the same function may subscribe twice. */
interface Subscription {
  handler: MessageHandler;
}

/**
 * Creates an empty in-process store. Its sweep timer is unref()ed, so an unclosed store never keeps
 * the process alive; `close()` stops it and makes every later call throw.
 */
export function createMemoryLiveStore(): LiveStore {
  const data = new Map<string, Entry>();
  const channels = new Map<string, Set<Subscription>>();
  /** The highest score of each publication log (see publishLogged). */
  const logTops = new WeakMap<ZsetEntry, number>();
  let closed = false;

  const sweep = setInterval(() => {
    const now = Date.now();
    for (const [key, entry] of data) if (isExpired(entry, now)) data.delete(key);
  }, SWEEP_INTERVAL_MS);
  sweep.unref();

  function assertOpen(): void {
    if (closed) throw new Error("live store is closed");
  }

  /** The live entry at `key`, dropping it first when its deadline has passed. */
  function lookup(key: string): Entry | undefined {
    assertOpen();
    const entry = data.get(key);
    if (entry !== undefined && isExpired(entry, Date.now())) {
      data.delete(key);
      return undefined;
    }
    return entry;
  }

  function read<K extends Kind>(key: string, kind: K): EntryOf<K> | undefined {
    const entry = lookup(key);
    if (entry === undefined) return undefined;
    if (!isKind(entry, kind)) throw new Error(WRONGTYPE);
    return entry;
  }

  function readCollection<K extends "hash" | "set" | "zset">(key: string, kind: K, create: () => EntryOf<K>): EntryOf<K> {
    const existing = read(key, kind);
    if (existing !== undefined) return existing;
    const fresh = create();
    data.set(key, fresh);
    return fresh;
  }

  /** Redis deletes a collection with its last member; so must we, or TTL and type checks diverge. */
  function dropIfEmpty(key: string, entry: HashEntry | SetEntry | ZsetEntry): void {
    if (entry.value.size === 0) data.delete(key);
  }

  function putString(key: string, value: string, expiresAt: number | null): void {
    assertOpen();
    data.set(key, { kind: "string", value, expiresAt });
  }

  /** The integer at `key` (0 when absent), as INCRBY would read it. */
  function readCounter(key: string): { value: number; expiresAt: number | null } {
    const entry = read(key, "string");
    if (entry === undefined) return { value: 0, expiresAt: null };
    return { value: parseInteger(entry.value, NOT_INTEGER), expiresAt: entry.expiresAt };
  }

  function readZset(key: string): ZsetEntry | undefined {
    return read(key, "zset");
  }

  /** Removes members whose deadline has passed; `now` is passed in so one call uses one clock. */
  function pruneZset(entry: ZsetEntry, now: number): void {
    for (const [member, score] of entry.value) if (score <= now) entry.value.delete(member);
  }

  function deliver(subs: Set<Subscription>, snapshot: Subscription[], message: string, channel: string): void {
    for (const sub of snapshot) {
      // Checked at delivery time: an unsubscribe that resolved before this microtask must win.
      if (!subs.has(sub)) continue;
      callHandler(sub.handler, message, channel);
    }
  }

  const store: LiveStore = {
    kind: "memory",

    async get(key) {
      return read(key, "string")?.value ?? null;
    },

    async set(key, value, ttlMs) {
      putString(key, value, deadlineOrNull(ttlMs));
    },

    async setIfAbsent(key, value, ttlMs) {
      const expiresAt = deadlineOrNull(ttlMs);
      if (lookup(key) !== undefined) return false;
      putString(key, value, expiresAt);
      return true;
    },

    async setEachIfAbsent(entries) {
      const deadlines = entries.map((e) => deadlineOrNull(e.ttlMs));
      for (let i = 0; i < entries.length; i++) {
        if (lookup(entries[i]!.key) !== undefined) return i;
        putString(entries[i]!.key, entries[i]!.value, deadlines[i]!);
      }
      return -1;
    },

    async compareAndSet(key, expected, next, ttlMs) {
      const expiresAt = deadlineOrNull(ttlMs);
      const current = read(key, "string")?.value ?? null;
      if (current !== expected) return false;
      putString(key, next, expiresAt);
      return true;
    },

    async compareAndDelete(key, expected) {
      if (read(key, "string")?.value !== expected) return false;
      data.delete(key);
      return true;
    },

    async take(key) {
      const entry = read(key, "string");
      if (entry === undefined) return null;
      data.delete(key);
      return entry.value;
    },

    async del(...keys) {
      let removed = 0;
      for (const key of keys) {
        if (lookup(key) === undefined) continue;
        data.delete(key);
        removed++;
      }
      return removed;
    },

    async expire(key, ttlMs) {
      const ms = expireArg(ttlMs);
      const entry = lookup(key);
      if (entry === undefined) return false;
      // Like PEXPIRE: a deadline already passed deletes the key at once.
      if (ms <= 0) data.delete(key);
      else entry.expiresAt = Date.now() + ms;
      return true;
    },

    async ttl(key) {
      const entry = lookup(key);
      if (entry === undefined) return -2;
      if (entry.expiresAt === null) return -1;
      return entry.expiresAt - Date.now();
    },

    async incr(key, by = 1, ttlMs) {
      const step = integerArg("by", by);
      const expiresAt = ttlMs === undefined ? undefined : deadline(ttlMs);
      const current = readCounter(key);
      const next = current.value + step;
      // Without a TTL the existing expiry stays, as INCRBY leaves it.
      putString(key, String(next), expiresAt === undefined ? current.expiresAt : expiresAt);
      return next;
    },

    async incrIfBelow(key, limit, by = 1, ttlMs) {
      const step = integerArg("by", by);
      const expiresAt = ttlMs === undefined ? undefined : deadline(ttlMs);
      const current = readCounter(key);
      const next = current.value + step;
      if (next > limit) return null;
      putString(key, String(next), expiresAt === undefined ? current.expiresAt : expiresAt);
      return next;
    },

    async decrFloor(key, by = 1) {
      const step = integerArg("by", by);
      const current = readCounter(key);
      const next = current.value - step;
      if (next <= 0) {
        data.delete(key);
        return 0;
      }
      putString(key, String(next), current.expiresAt);
      return next;
    },

    async hitWindow(key, limit, windowMs, cost = 1): Promise<WindowHit> {
      const ms = ttlArg(windowMs);
      integerArg("cost", cost);
      const now = Date.now();
      const current = readCounter(key);
      const count = current.value + cost;
      // A counter without expiry (first hit, or one someone persisted) starts a fresh window.
      const expiresAt = current.expiresAt ?? now + ms;
      putString(key, String(count), expiresAt);
      return { allowed: count <= limit, count, remaining: Math.max(0, limit - count), resetMs: expiresAt - now };
    },

    async hset(key, fields) {
      const entries = Object.entries(fields);
      if (entries.length === 0) return; // HSET needs a field; an empty call changes nothing
      const hash = readCollection(key, "hash", () => ({ kind: "hash", value: new Map(), expiresAt: null }));
      for (const [field, value] of entries) hash.value.set(field, value);
    },

    async hget(key, field) {
      return read(key, "hash")?.value.get(field) ?? null;
    },

    async hgetall(key) {
      const hash = read(key, "hash");
      return hash === undefined ? {} : Object.fromEntries(hash.value);
    },

    async hcompareAndSet(key, field, expected, next) {
      if ((read(key, "hash")?.value.get(field) ?? null) !== expected) return false;
      readCollection(key, "hash", () => ({ kind: "hash", value: new Map(), expiresAt: null })).value.set(field, next);
      return true;
    },

    async hdel(key, ...fields) {
      const hash = read(key, "hash");
      if (hash === undefined) return 0;
      let removed = 0;
      for (const field of fields) if (hash.value.delete(field)) removed++;
      dropIfEmpty(key, hash);
      return removed;
    },

    async hincr(key, field, by = 1) {
      const step = integerArg("by", by);
      const existing = read(key, "hash");
      const raw = existing?.value.get(field);
      const next = (raw === undefined ? 0 : parseInteger(raw, HASH_NOT_INTEGER)) + step;
      const hash = existing ?? readCollection(key, "hash", () => ({ kind: "hash", value: new Map(), expiresAt: null }));
      hash.value.set(field, String(next));
      return next;
    },

    async sadd(key, ...members) {
      if (members.length === 0) return 0;
      const set = readCollection(key, "set", () => ({ kind: "set", value: new Set(), expiresAt: null }));
      let added = 0;
      for (const member of members) {
        if (set.value.has(member)) continue;
        set.value.add(member);
        added++;
      }
      return added;
    },

    async srem(key, ...members) {
      const set = read(key, "set");
      if (set === undefined) return 0;
      let removed = 0;
      for (const member of members) if (set.value.delete(member)) removed++;
      dropIfEmpty(key, set);
      return removed;
    },

    async smembers(key) {
      const set = read(key, "set");
      return set === undefined ? [] : [...set.value];
    },

    async sismember(key, member) {
      return read(key, "set")?.value.has(member) ?? false;
    },

    async scard(key) {
      return read(key, "set")?.value.size ?? 0;
    },

    async zadd(key, entries) {
      for (const { score } of entries) scoreArg(score);
      if (entries.length === 0) return 0;
      const zset = readCollection(key, "zset", () => ({ kind: "zset", value: new Map(), expiresAt: null }));
      let added = 0;
      for (const { member, score } of entries) {
        if (!zset.value.has(member)) added++;
        zset.value.set(member, score);
      }
      return added;
    },

    async zrem(key, ...members) {
      const zset = readZset(key);
      if (zset === undefined) return 0;
      let removed = 0;
      for (const member of members) if (zset.value.delete(member)) removed++;
      dropIfEmpty(key, zset);
      return removed;
    },

    async zscore(key, member) {
      return readZset(key)?.value.get(member) ?? null;
    },

    async zrangeByScore(key, min, max, limit) {
      scoreArg(min);
      scoreArg(max);
      const count = limit === undefined ? -1 : integerArg("limit", limit);
      const zset = readZset(key);
      if (zset === undefined) return [];
      const inRange = sortedEntries(zset).filter((e) => e.score >= min && e.score <= max);
      // Like Redis's LIMIT: a negative count means no limit.
      return count < 0 ? inRange : inRange.slice(0, count);
    },

    async zremRangeByScore(key, min, max) {
      scoreArg(min);
      scoreArg(max);
      const zset = readZset(key);
      if (zset === undefined) return 0;
      let removed = 0;
      for (const [member, score] of zset.value) {
        if (score < min || score > max) continue;
        zset.value.delete(member);
        removed++;
      }
      dropIfEmpty(key, zset);
      return removed;
    },

    async zcard(key) {
      return readZset(key)?.value.size ?? 0;
    },

    async zcount(key, min, max) {
      scoreArg(min);
      scoreArg(max);
      const zset = readZset(key);
      if (zset === undefined) return 0;
      let count = 0;
      for (const score of zset.value.values()) if (score >= min && score <= max) count++;
      return count;
    },

    async bindExpiring(input) {
      checkBindingWrite(input);
      const { views, detail, id, deadline, now, cap, slackMs } = input;
      // Synchronous from here on: nothing else runs between the steps (the Redis script's atomicity).
      const zsets = views.map(({ key }) => readCollection(key, "zset", () => ({ kind: "zset", value: new Map(), expiresAt: null })));
      const hash = readCollection(detail.key, "hash", () => ({ kind: "hash", value: new Map(), expiresAt: null }));
      for (const [member, score] of zsets[detail.view]!.value) if (score <= now) hash.value.delete(member);
      for (const zset of zsets) pruneZset(zset, now);
      const unbind = (x: string) => {
        views.forEach(({ prefix }, i) => zsets[i]!.value.delete(prefix + x));
        hash.value.delete(views[detail.view]!.prefix + x);
      };
      const evicted: string[] = [];
      if (deadline > 0) {
        hash.value.set(views[detail.view]!.prefix + id, detail.value);
        views.forEach(({ prefix }, i) => zsets[i]!.value.set(prefix + id, deadline));
        if (cap) {
          const live = sortedEntries(zsets[cap.view]!).filter((e) => e.score > now);
          const skip = views[cap.view]!.prefix.length;
          for (const { member } of live.slice(0, Math.max(0, live.length - cap.max))) {
            const x = member.slice(skip);
            unbind(x);
            evicted.push(x);
          }
        }
      } else {
        unbind(id);
      }
      const wallNow = Date.now();
      views.forEach(({ key }, i) => {
        const zset = zsets[i]!;
        if (!zset.value.size) {
          data.delete(key);
          if (i === detail.view) data.delete(detail.key);
          return;
        }
        const last = Math.max(...zset.value.values());
        // Like PEXPIRE: a TTL from the wall clock.
        const expiresAt = wallNow + Math.max(1, Math.ceil(last - now)) + slackMs;
        zset.expiresAt = expiresAt;
        if (i === detail.view) hash.expiresAt = expiresAt;
      });
      dropIfEmpty(detail.key, hash);
      return evicted;
    },

    async zaddExpiringWithin(sets, member, ttlMs, setIndex) {
      const ms = ttlArg(ttlMs);
      const keep = setIndex === undefined ? 0 : ttlArg(setIndex.ttlMs);
      if (setIndex !== undefined && setIndex.entries.length !== sets.length) throw new RangeError("zaddExpiringWithin: one index entry per set");
      const now = Date.now();
      const zsets = sets.map(({ key }) => readCollection(key, "zset", () => ({ kind: "zset", value: new Map(), expiresAt: null })));
      const members = sets.map((set) => set.member ?? member);
      // The members this take adds to each set: a set named twice (two members) counts both.
      const adding = new Map<string, Set<string>>();
      let refused: { ok: false; index: number; count: number } | null = null;
      for (let i = 0; i < sets.length; i++) {
        const zset = zsets[i]!;
        pruneZset(zset, now);
        const added = adding.get(sets[i]!.key) ?? new Set<string>();
        adding.set(sets[i]!.key, added);
        if (!zset.value.has(members[i]!)) added.add(members[i]!);
        const count = zset.value.size + added.size;
        if (count > sets[i]!.limit) {
          refused = { ok: false, index: i, count: count - 1 };
          break;
        }
      }
      if (setIndex !== undefined && sets.length) {
        // The index's types first, as the script does: a wrong-type key fails the take before any set changes.
        try {
          read(setIndex.namesKey, "set");
          read(setIndex.valuesKey, "hash");
        } catch (error) {
          for (let j = 0; j < sets.length; j++) dropIfEmpty(sets[j]!.key, zsets[j]!);
          throw error;
        }
        const names = readCollection(setIndex.namesKey, "set", () => ({ kind: "set", value: new Set(), expiresAt: null }));
        const values = readCollection(setIndex.valuesKey, "hash", () => ({ kind: "hash", value: new Map(), expiresAt: null }));
        for (const { name, value } of setIndex.entries) {
          names.value.add(name);
          values.value.set(name, value);
        }
        names.expiresAt = values.expiresAt = now + keep;
      }
      if (refused !== null) {
        for (let j = 0; j < sets.length; j++) dropIfEmpty(sets[j]!.key, zsets[j]!);
        return refused;
      }
      for (const [i, zset] of zsets.entries()) {
        zset.value.set(members[i]!, now + ms);
        // The key lives as long as its longest-lived member, so an abandoned set cleans itself up.
        zset.expiresAt = Math.max(...zset.value.values());
      }
      return { ok: true };
    },

    async zrenewExpiring(keys, member, ttlMs, setIndex) {
      const ms = ttlArg(ttlMs);
      const keep = setIndex === undefined ? 0 : ttlArg(setIndex.ttlMs);
      const now = Date.now();
      let renewed = 0;
      for (const key of keys) {
        const zset = readZset(key);
        const score = zset?.value.get(member);
        if (zset === undefined || score === undefined || score <= now) continue;
        zset.value.set(member, now + ms);
        zset.expiresAt = Math.max(zset.expiresAt ?? 0, now + ms);
        renewed++;
      }
      if (setIndex !== undefined) {
        // Like PEXPIRE on each: a key that is not there stays absent.
        for (const key of [setIndex.namesKey, setIndex.valuesKey]) {
          const entry = lookup(key);
          if (entry !== undefined) entry.expiresAt = now + keep;
        }
      }
      return renewed;
    },

    async markDialog(input) {
      if (input.userKeys.length !== input.users.length) throw new RangeError("markDialog: one user key per user");
      integerArg("now", input.now);
      const ms = ttlArg(input.ttlMs);
      if (lookup(input.endedKey) !== undefined) return false;
      if (!input.users.length) return true;
      const { member, confirmed, now } = input;
      const stale = Math.max(1, now - ms) - 1;
      const expiresAt = Date.now() + ms;
      const users = readCollection(input.usersKey, "set", () => ({ kind: "set", value: new Set(), expiresAt: null }));
      for (const user of input.users) users.value.add(user);
      users.expiresAt = expiresAt;
      for (const key of input.userKeys) {
        const zset = readCollection(key, "zset", () => ({ kind: "zset", value: new Map(), expiresAt: null }));
        const current = zset.value.get(member);
        if (current !== undefined && current > 0 && !confirmed) continue;
        const at = current === undefined ? Math.max(1, now) : Math.abs(current);
        zset.value.set(member, confirmed ? at : -at);
        for (const [m, score] of zset.value) if (score >= -stale && score <= stale) zset.value.delete(m);
        dropIfEmpty(key, zset);
        zset.expiresAt = expiresAt;
      }
      return true;
    },

    async zliveMembers(key) {
      const zset = readZset(key);
      if (zset === undefined) return [];
      pruneZset(zset, Date.now());
      dropIfEmpty(key, zset);
      return sortedEntries(zset).map((e) => e.member);
    },

    async acquireLease(key, owner, ttlMs) {
      const expiresAt = deadline(ttlMs);
      const holder = read(key, "string");
      if (holder !== undefined && holder.value !== owner) return false;
      putString(key, owner, expiresAt);
      return true;
    },

    async renewLease(key, owner, ttlMs) {
      const expiresAt = deadline(ttlMs);
      const holder = read(key, "string");
      if (holder?.value !== owner) return false;
      holder.expiresAt = expiresAt;
      return true;
    },

    async releaseLease(key, owner) {
      return store.compareAndDelete(key, owner);
    },

    async publish(channel, message) {
      assertOpen();
      const subs = channels.get(channel);
      if (subs === undefined || subs.size === 0) return;
      const snapshot = [...subs];
      // Asynchronous like a network round trip, so callers cannot come to rely on re-entrancy.
      queueMicrotask(() => deliver(subs, snapshot, message, channel));
    },

    async publishLogged(channel, log, entries) {
      checkPublishLogged(log, entries);
      const order = readZset(log.key);
      const floorEntry = read(log.floorKey, "string");
      const zset = order ?? readCollection(log.key, "zset", () => ({ kind: "zset", value: new Map(), expiresAt: null }));
      // Only publishLogged writes a log, in score order: insertion order is score order, and the top
      // is remembered rather than found again in up to `max` members per publish.
      let top = logTops.get(zset) ?? 0;
      if (!logTops.has(zset)) for (const score of zset.value.values()) top = Math.max(top, score);
      let floor = floorEntry === undefined ? Math.min(...entries.map((e) => e.id)) - 1 : Number(floorEntry.value);
      const published: number[] = [];
      const parts: string[] = [];
      for (const { id, message } of entries) {
        if (zset.value.has(String(id))) continue;
        zset.value.set(String(id), ++top);
        published.push(id);
        parts.push(message);
      }
      logTops.set(zset, top);
      let excess = zset.value.size - log.max;
      for (const member of zset.value.keys()) {
        if (excess-- <= 0) break;
        zset.value.delete(member);
        floor = Math.max(floor, Number(member));
      }
      const expiresAt = Date.now() + log.ttlMs;
      zset.expiresAt = expiresAt;
      putString(log.floorKey, String(floor), expiresAt);
      if (parts.length) await store.publish(channel, parts.length === 1 ? parts[0]! : `[${parts.join(",")}]`);
      return published;
    },

    async loggedAfter(log, id, limit, onlyBelow = false) {
      checkLogId(id);
      const count = integerArg("limit", limit);
      if (count < 0) throw new RangeError("limit must not be negative");
      const zset = readZset(log.key);
      const score = zset?.value.get(String(id));
      if (zset === undefined || score === undefined) return null;
      const after = sortedEntries(zset)
        .filter((e) => e.score > score)
        .map((e) => Number(e.member))
        .filter((n) => !onlyBelow || n < id);
      return after.slice(0, count);
    },

    async loggedAmong(log, ids) {
      for (const id of ids) checkLogId(id);
      const floorEntry = read(log.floorKey, "string");
      const zset = readZset(log.key);
      return {
        floor: floorEntry === undefined ? null : Number(floorEntry.value),
        logged: ids.map((id) => zset?.value.has(String(id)) ?? false),
      };
    },

    async subscribe(channel, handler) {
      assertOpen();
      let subs = channels.get(channel);
      if (subs === undefined) {
        subs = new Set();
        channels.set(channel, subs);
      }
      const sub: Subscription = { handler };
      subs.add(sub);
      const owned = subs;
      return async () => {
        owned.delete(sub);
        if (owned.size === 0 && channels.get(channel) === owned) channels.delete(channel);
      };
    },

    async ping() {
      assertOpen();
    },

    async close() {
      closed = true;
      clearInterval(sweep);
      data.clear();
      channels.clear();
    },
  };
  return store;
}

function isKind<K extends Kind>(entry: Entry, kind: K): entry is EntryOf<K> {
  return entry.kind === kind;
}

function isExpired(entry: Entry, now: number): boolean {
  return entry.expiresAt !== null && entry.expiresAt <= now;
}

/** Score order, ties broken by member, as Redis orders a sorted set. */
function sortedEntries(zset: ZsetEntry): Array<{ member: string; score: number }> {
  const entries = [...zset.value].map(([member, score]) => ({ member, score }));
  return entries.sort((a, b) => (a.score !== b.score ? (a.score < b.score ? -1 : 1) : compareUtf8(a.member, b.member)));
}

/**
 * Orders two strings as their UTF-8 bytes compare (Redis's order of equal scores): code point order.
 * JavaScript's `<` compares UTF-16 code units, which puts U+E000–U+FFFF after the surrogate pairs of
 * the code points above them.
 */
export function compareUtf8(a: string, b: string): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const x = a.charCodeAt(i);
    const y = b.charCodeAt(i);
    if (x === y) continue;
    const xPair = x >= 0xd800 && x <= 0xdfff;
    const yPair = y >= 0xd800 && y <= 0xdfff;
    // A surrogate stands for a code point above U+FFFF: after any other unit.
    if (xPair !== yPair) return xPair ? 1 : -1;
    return x < y ? -1 : 1;
  }
  return a.length - b.length;
}

/** Parses a stored counter strictly; Redis refuses to count on "1.5" or "abc", and so do we. */
function parseInteger(raw: string, message: string): number {
  const value = Number(raw);
  if (!/^-?\d+$/.test(raw) || !Number.isSafeInteger(value)) throw new Error(message);
  return value;
}

function callHandler(handler: MessageHandler, message: string, channel: string): void {
  try {
    handler(message, channel);
  } catch (error) {
    // One faulty subscriber must not starve the others of the message.
    console.error("[live-store] pub/sub handler threw", { channel, error });
  }
}

/** Whole milliseconds, rounded up so a tiny positive TTL never means "already expired". */
function ttlArg(ttlMs: number): number {
  if (!Number.isFinite(ttlMs) || ttlMs <= 0) throw new RangeError(`ttlMs must be a positive number, got ${ttlMs}`);
  return Math.ceil(ttlMs);
}

function expireArg(ttlMs: number): number {
  if (!Number.isFinite(ttlMs)) throw new RangeError(`ttlMs must be finite, got ${ttlMs}`);
  return Math.ceil(ttlMs);
}

function deadline(ttlMs: number): number {
  return Date.now() + ttlArg(ttlMs);
}

function deadlineOrNull(ttlMs: number | undefined): number | null {
  return ttlMs === undefined ? null : deadline(ttlMs);
}

function integerArg(name: string, value: number): number {
  if (!Number.isSafeInteger(value)) throw new RangeError(`${name} must be a safe integer, got ${value}`);
  return value;
}

function scoreArg(score: number): void {
  if (Number.isNaN(score)) throw new RangeError("score must be a number, got NaN");
}
