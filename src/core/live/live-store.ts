/**
 * Shared live state: presence, queues, leases, CAC counters, rate limits, tickets.
 *
 * One interface, two implementations: in-process (embedded default, one instance) and Redis
 * (scale-out). Every operation is atomic on its own. Keys are plain strings; callers build them with
 * `accountKey()` so that everything of one account shares a Redis Cluster hash slot, and no single
 * operation touches two accounts' keys. Times are milliseconds unless a name says otherwise.
 */

/** Result of a fixed-window hit: whether it fits, and what the RateLimit headers need. */
export interface WindowHit {
  /** True when this hit is within the limit (it was counted either way). */
  allowed: boolean;
  /** Hits counted in the current window, this one included. */
  count: number;
  /** Hits left in this window (never negative). */
  remaining: number;
  /** Milliseconds until the window resets. */
  resetMs: number;
}

/** The argument of {@link LiveStore.bindExpiring}. */
export interface BindingWrite {
  /** The sorted sets the binding is a member of, each naming the binding `prefix + id`. */
  views: Array<{ key: string; prefix: string }>;
  /** The hash of details: field = the binding's member in view `view` (an index into `views`). */
  detail: { key: string; view: number; value: string };
  id: string;
  /** Epoch ms when the binding expires; 0 removes it. */
  deadline: number;
  /** Epoch ms: members at or before it are expired. */
  now: number;
  /** At most `max` live members in view `view` (an index into `views`). */
  cap?: { view: number; max: number };
  /** How long each view outlives its last deadline. */
  slackMs: number;
}

/** Checks a {@link BindingWrite} the same way in every store. */
export function checkBindingWrite(input: BindingWrite): void {
  const { views, detail, deadline, now, cap, slackMs } = input;
  const index = (i: number) => Number.isInteger(i) && i >= 0 && i < views.length;
  if (!views.length) throw new Error("bindExpiring needs at least one view");
  if (!index(detail.view)) throw new Error("bindExpiring: detail.view is not a view");
  if (cap && (!index(cap.view) || !Number.isInteger(cap.max) || cap.max < 0)) throw new Error("bindExpiring: invalid cap");
  for (const [name, n] of [["deadline", deadline], ["now", now], ["slackMs", slackMs]] as const) {
    if (!Number.isSafeInteger(n) || n < 0) throw new Error(`bindExpiring: ${name} must be a non-negative integer`);
  }
}

/** A handler for pub/sub messages. */
export type MessageHandler = (message: string, channel: string) => void;

export interface LiveStore {
  /** `memory` or `redis`. */
  readonly kind: "memory" | "redis";

  // ---- plain values -----------------------------------------------------------------------
  /** The value at `key`, or null when absent or expired. */
  get(key: string): Promise<string | null>;
  /** Sets `key`; with `ttlMs` it expires on its own. */
  set(key: string, value: string, ttlMs?: number): Promise<void>;
  /** Sets `key` only when absent. True when it was set. */
  setIfAbsent(key: string, value: string, ttlMs?: number): Promise<boolean>;
  /**
   * `setIfAbsent` of several keys in one step, in order: stops at the first key that exists, leaving
   * it and the keys after it as they are (the keys before it stay set). Returns that key's index, or
   * -1 when every key was set. The keys must share a hash slot (one account's: `accountKey`).
   * @example await live.setEachIfAbsent([{ key: nonceKey, value: "1", ttlMs }, { key: claimKey, value: id, ttlMs }]) // 1: the nonce was fresh, the claim is taken
   */
  setEachIfAbsent(entries: ReadonlyArray<{ key: string; value: string; ttlMs: number }>): Promise<number>;
  /**
   * Atomic compare-and-set: replaces the value only when the current value equals `expected`
   * (`null` means "only when absent"). True when it was replaced.
   */
  compareAndSet(key: string, expected: string | null, next: string, ttlMs?: number): Promise<boolean>;
  /** Deletes `key` only when its value equals `expected`. True when deleted. */
  compareAndDelete(key: string, expected: string): Promise<boolean>;
  /** Reads and deletes in one step (single-use tickets). */
  take(key: string): Promise<string | null>;
  /** Deletes keys; returns how many existed. */
  del(...keys: string[]): Promise<number>;
  /** Sets or refreshes the expiry of an existing key. False when the key does not exist. */
  expire(key: string, ttlMs: number): Promise<boolean>;
  /** Milliseconds to live: -1 when the key has no expiry, -2 when it does not exist. */
  ttl(key: string): Promise<number>;

  // ---- counters ---------------------------------------------------------------------------
  /**
   * Adds `by` (may be negative) and returns the new value. With `ttlMs` the expiry is (re)set on
   * every call, so a counter nobody touches drains away (a lost BYE cannot hold a slot forever).
   */
  incr(key: string, by?: number, ttlMs?: number): Promise<number>;
  /**
   * Increments only while the result stays at or below `limit`; returns the new value, or null when
   * it would exceed `limit` (nothing changes then). The CAC primitive.
   */
  incrIfBelow(key: string, limit: number, by?: number, ttlMs?: number): Promise<number | null>;
  /** Decrements, never below zero; returns the new value. Deletes the key when it reaches zero. */
  decrFloor(key: string, by?: number): Promise<number>;
  /**
   * Counts `cost` hits (default 1) at once in the fixed window of `windowMs` that `key` names,
   * allowing `limit` per window; `allowed` says whether all of them fit. The rate limiter's
   * primitive (a cost above 1 lets an instance lease several requests' quota in one round trip).
   */
  hitWindow(key: string, limit: number, windowMs: number, cost?: number): Promise<WindowHit>;

  // ---- hashes -----------------------------------------------------------------------------
  hset(key: string, fields: Record<string, string>): Promise<void>;
  hget(key: string, field: string): Promise<string | null>;
  hgetall(key: string): Promise<Record<string, string>>;
  /**
   * Atomic compare-and-set of one hash field: writes `next` only when the field's value equals
   * `expected` (`null`: only when the field is absent). True when it was written.
   */
  hcompareAndSet(key: string, field: string, expected: string | null, next: string): Promise<boolean>;
  hdel(key: string, ...fields: string[]): Promise<number>;
  /** Adds `by` to a numeric hash field and returns the new value. */
  hincr(key: string, field: string, by?: number): Promise<number>;

  // ---- sets -------------------------------------------------------------------------------
  sadd(key: string, ...members: string[]): Promise<number>;
  srem(key: string, ...members: string[]): Promise<number>;
  smembers(key: string): Promise<string[]>;
  sismember(key: string, member: string): Promise<boolean>;
  scard(key: string): Promise<number>;

  // ---- sorted sets (scores are numbers; members expire when scored by their deadline) -------
  /** Adds or re-scores members. Returns how many were new. */
  zadd(key: string, entries: Array<{ member: string; score: number }>): Promise<number>;
  zrem(key: string, ...members: string[]): Promise<number>;
  zscore(key: string, member: string): Promise<number | null>;
  /** Members with min <= score <= max, lowest score first, at most `limit`. */
  zrangeByScore(key: string, min: number, max: number, limit?: number): Promise<Array<{ member: string; score: number }>>;
  /** Removes members with min <= score <= max; returns how many. Used to drop expired members. */
  zremRangeByScore(key: string, min: number, max: number): Promise<number>;
  zcard(key: string): Promise<number>;
  /** How many members have min <= score <= max (one read, whatever the set's size). */
  zcount(key: string, min: number, max: number): Promise<number>;
  /**
   * Sorted sets whose members expire, joined all or none in one atomic step: first every member whose
   * deadline (its score) has passed is removed from each set; then `member` joins every set with
   * deadline now+ttlMs only if each set's live count, the member included, stays within that set's
   * `limit`; else no set changes and the first set that would overflow is reported with its live count
   * without the member. A set the member is already in is renewed, and counts it once. Each set lives as
   * long as its longest-lived member, so an abandoned one cleans itself up. The CAC primitive (one
   * round trip per admission, and no partial take to undo). With `index`, the take also records each
   * set in it in the same step, taken or refused (its values are the latest asked); a wrong-type index
   * key fails the take before any set changes. A set's own `member` joins it instead of `member`: one
   * take may put two members in one set (a call's legs in and out through one trunk), each counted.
   * @example await live.zaddExpiringWithin([{ key: userSlot, limit: 2 }, { key: accountSlot, limit: 30 }], "call_…", 14_400_000)
   */
  zaddExpiringWithin(
    sets: Array<{ key: string; limit: number; member?: string }>,
    member: string,
    ttlMs: number,
    index?: ExpiringSetIndex,
  ): Promise<{ ok: true } | { ok: false; index: number; count: number }>;
  /**
   * Renews `member` in each `zaddExpiringWithin` set where it is still live: its deadline becomes
   * now+ttlMs and the set lives at least that long. A set it left (released, expired, cleared) is not
   * joined again. With `index`, the index's keys get its TTL too (whatever was renewed). One atomic
   * step; returns in how many sets it was renewed.
   * @example await live.zrenewExpiring([userSlot, accountSlot], "call_…", 14_400_000)
   */
  zrenewExpiring(keys: string[], member: string, ttlMs: number, index?: Omit<ExpiringSetIndex, "entries">): Promise<number>;
  /** Live (unexpired) members of a `zaddExpiringWithin` set, soonest-to-expire first. */
  zliveMembers(key: string): Promise<string[]>;
  /**
   * One expiring binding (a SIP registration) written or removed in one atomic step across all its
   * views, so no reader ever sees it in one view and not another. Each view is a sorted set holding
   * the binding as the member `prefix + id`, scored by its deadline (epoch ms); the detail hash holds
   * `value` under the binding's member of view `detail.view`. In order:
   * 1. every member whose deadline is at or before `now` leaves each view (and the detail);
   * 2. with `deadline` > 0 the binding is written to the detail and every view; with 0 it is removed;
   * 3. with `cap`, view `cap.view` keeps at most `cap.max` live members: the soonest-to-expire beyond
   *    it are removed from every view and the detail, like a removal (the binding just written included,
   *    when it expires soonest);
   * 4. each view lives until its last deadline plus `slackMs` (the detail hash with its view), and an
   *    empty view is deleted.
   *
   * Returns the ids the cap removed.
   * @example await live.bindExpiring({ views: [{ key: userSet, prefix: "dev_1 " }, { key: deviceSet, prefix: "" }], detail: { key: info, view: 0, value: "{…}" }, id: "sip:a@1.2.3.4", deadline: Date.now() + 3_600_000, now: Date.now(), cap: { view: 1, max: 10 }, slackMs: 60_000 })
   */
  bindExpiring(input: BindingWrite): Promise<string[]>;

  /**
   * Marks users as in a dialog, in one atomic step (the dialog-presence primitive). When `endedKey`
   * exists (the dialog was reported over) nothing is written and the result is false. Otherwise the
   * users join the set `usersKey`, and in each user's sorted set (`userKeys`, one per user, same order)
   * `member`'s score becomes its first-seen time (kept from an earlier mark, else `now`; at least 1),
   * positive when `confirmed`, negative while early; a confirmed member is never set back to early
   * (that user's set is then left as it is). Members first seen before `now - ttlMs` leave every set
   * written, and every key written lives `ttlMs`.
   * @example await live.markDialog({ endedKey, usersKey, userKeys: [k1, k2], users: ["us_1", "us_2"], member: "call-id", confirmed: false, now: Date.now(), ttlMs: 43_200_000 })
   */
  markDialog(input: DialogMark): Promise<boolean>;

  // ---- leases -----------------------------------------------------------------------------
  /** Takes the lease at `key` for `owner` when free (or already `owner`'s). True when held. */
  acquireLease(key: string, owner: string, ttlMs: number): Promise<boolean>;
  /** Extends a lease `owner` holds. False when it is not (any longer) theirs. */
  renewLease(key: string, owner: string, ttlMs: number): Promise<boolean>;
  /** Releases a lease `owner` holds. False when it is not theirs. */
  releaseLease(key: string, owner: string): Promise<boolean>;

  // ---- pub/sub ----------------------------------------------------------------------------
  /** Publishes to every subscriber of `channel`, on every instance. */
  publish(channel: string, message: string): Promise<void>;
  /**
   * Subscribes; the returned function unsubscribes. Resolves once the subscription is active.
   * `onGap` is called when messages published meanwhile may not have reached it: its connection to
   * the store was lost and the subscription renewed (Redis). The in-process store never loses one.
   */
  subscribe(channel: string, handler: MessageHandler, onGap?: () => void): Promise<() => Promise<void>>;
  /**
   * Publishes, in one atomic step, the entries whose id `log` does not hold yet, and records each in
   * `log` with the next number of the channel's publication order: publishing one id twice (two
   * instances repairing one event) publishes it once. One new entry is published as its `message`,
   * several as one message, the JSON array of theirs, in the order given; none, nothing is published.
   * A log that did not exist knows nothing of ids below the lowest given (its floor, see
   * `loggedAmong`); it keeps its latest `log.max` ids (those trimmed raise the floor) and lives
   * `log.ttlMs` after its last publish. Returns the ids published. Ids are non-negative safe integers.
   * @example await live.publishLogged(channel, { key, floorKey, max: 20_000, ttlMs: 3_600_000 }, [{ id: 41, message: "{…}" }])
   */
  publishLogged(channel: string, log: PublicationLog, entries: ReadonlyArray<{ id: number; message: string }>): Promise<number[]>;
  /**
   * The ids `log` records as published after `id`, in publication order, at most `limit`; with
   * `onlyBelow`, only those smaller than `id` (published out of id order). Null when the log does not
   * hold `id` (never published, trimmed, or the log expired).
   */
  loggedAfter(log: Pick<PublicationLog, "key">, id: number, limit: number, onlyBelow?: boolean): Promise<number[] | null>;
  /**
   * Which of `ids` the log holds, and its floor: ids at or below it may have been published without
   * the log knowing (before it began, or trimmed), so only an id above it that the log does not hold
   * is known unpublished. Without a log (nothing published for its TTL) the floor is null.
   */
  loggedAmong(log: Pick<PublicationLog, "key" | "floorKey">, ids: readonly number[]): Promise<{ floor: number | null; logged: boolean[] }>;

  // ---- lifecycle --------------------------------------------------------------------------
  /** Throws when the store is unreachable. Used by /readyz. */
  ping(): Promise<void>;
  /** Closes connections and timers. */
  close(): Promise<void>;
}

/**
 * Where `zaddExpiringWithin` records the sets a member took, so listings and resets can find them: a
 * set of names and a hash of name → value (e.g. the limit each was taken with), both living `ttlMs`
 * from the take (or renewal). Its keys must share the sets' hash tag (Redis Cluster).
 */
export interface ExpiringSetIndex {
  namesKey: string;
  valuesKey: string;
  /** One per set, in the order of the sets. */
  entries: Array<{ name: string; value: string }>;
  ttlMs: number;
}

/**
 * Where `publishLogged` records the order in which ids were published on one channel: a sorted set of
 * ids scored 1, 2, … in that order, and a string holding its floor. Both keys must share the channel's
 * account hash tag (Redis Cluster).
 */
export interface PublicationLog {
  key: string;
  floorKey: string;
  /** How many of the latest ids it keeps. */
  max: number;
  /** How long it lives after its last publish. */
  ttlMs: number;
}

/** Checks `publishLogged`'s arguments the same way in every store. */
export function checkPublishLogged(log: PublicationLog, entries: ReadonlyArray<{ id: number; message: string }>): void {
  if (!Number.isSafeInteger(log.max) || log.max < 1) throw new Error("publishLogged: max must be a positive integer");
  if (!Number.isSafeInteger(log.ttlMs) || log.ttlMs < 1) throw new Error("publishLogged: ttlMs must be a positive integer");
  if (!entries.length) throw new Error("publishLogged needs at least one entry");
  for (const { id } of entries) checkLogId(id);
}

/** A publication log's ids are non-negative safe integers. */
export function checkLogId(id: number): void {
  if (!Number.isSafeInteger(id) || id < 0) throw new Error("a publication log's ids are non-negative safe integers");
}

/** What `markDialog` writes. */
export interface DialogMark {
  endedKey: string;
  usersKey: string;
  userKeys: string[];
  users: string[];
  member: string;
  confirmed: boolean;
  /** Epoch ms. */
  now: number;
  ttlMs: number;
}

/**
 * A key for one account's live state: `{acc_…}:part:part`. The braces are a Redis Cluster hash tag,
 * so every key of one account lives in one slot and Lua scripts never cross accounts.
 */
export function accountKey(accountId: string, ...parts: string[]): string {
  return `{${accountId}}:${parts.join(":")}`;
}

/** A key for platform-wide state that belongs to no account (per-IP limits, node registry). */
export function globalKey(...parts: string[]): string {
  return `{parley}:${parts.join(":")}`;
}
