/**
 * Redis-backed `LiveStore` for scale-out: every instance sees the same counters, leases and
 * messages. Needs Redis 6.2+ (GETDEL). Every compound operation is one command or one Lua script
 * that touches only its KEYS, so it stays atomic and Redis Cluster safe.
 *
 * Bun's `RedisClient` speaks RESP3: HGETALL comes back as a null-prototype object, WITHSCORES as
 * `[member, score]` pairs, doubles as numbers. Lua replies go through RESP2 conversion (flat arrays,
 * `false` becomes null, numbers are truncated to integers), which the scripts below account for.
 */
import { RedisClient } from "bun";
import { checkBindingWrite, checkLogId, checkPublishLogged, type LiveStore, type MessageHandler, type WindowHit } from "./live-store.ts";

/** /readyz must answer even while Bun queues commands for a reconnect that may take ~30 s. */
const PING_TIMEOUT_MS = 2_000;
/** Pause before reconnecting a client Bun gave up on (after its `maxRetries`). */
const REVIVE_DELAY_MS = 1_000;

interface LuaScript {
  source: string;
  sha: string;
}

/** The SHA is computed locally, so no SCRIPT LOAD round trip is needed before first use. */
function lua(source: string): LuaScript {
  return { source, sha: new Bun.CryptoHasher("sha1").update(source).digest("hex") };
}

/** Server clock in ms, so deadlines written by different instances share one clock. */
const NOW = `local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
`;

/** Reads a counter like INCRBY would, so a refused call cannot slip past on a non-integer value. */
const COUNTER = `local function counter(key)
  local raw = redis.call('GET', key)
  if not raw then return 0 end
  if not string.match(raw, '^%-?%d+$') then
    return redis.error_reply('ERR value is not an integer or out of range')
  end
  return tonumber(raw)
end
`;

const SCRIPTS = {
  // KEYS: log, floor. ARGV: channel, max, px, then id, message pairs. Integers are written with
  // %d: Lua's own number-to-text switches to exponents past 14 digits.
  publishLogged: lua(`local top = 0
local last = redis.call('ZRANGE', KEYS[1], -1, -1, 'WITHSCORES')
if last[2] then top = tonumber(last[2]) end
local floor = redis.call('GET', KEYS[2])
local ids, parts, low = {}, {}, nil
for i = 4, #ARGV, 2 do
  local n = tonumber(ARGV[i])
  if not low or n < low then low = n end
  if not redis.call('ZSCORE', KEYS[1], ARGV[i]) then
    top = top + 1
    redis.call('ZADD', KEYS[1], string.format('%d', top), ARGV[i])
    ids[#ids + 1] = ARGV[i]
    parts[#parts + 1] = ARGV[i + 1]
  end
end
if floor then floor = tonumber(floor) else floor = low - 1 end
local excess = redis.call('ZCARD', KEYS[1]) - tonumber(ARGV[2])
if excess > 0 then
  for _, gone in ipairs(redis.call('ZRANGE', KEYS[1], 0, excess - 1)) do
    local n = tonumber(gone)
    if n > floor then floor = n end
  end
  redis.call('ZREMRANGEBYRANK', KEYS[1], 0, excess - 1)
end
redis.call('PEXPIRE', KEYS[1], ARGV[3])
redis.call('SET', KEYS[2], string.format('%d', floor), 'PX', ARGV[3])
if #parts == 1 then
  redis.call('PUBLISH', ARGV[1], parts[1])
elseif #parts > 1 then
  redis.call('PUBLISH', ARGV[1], '[' .. table.concat(parts, ',') .. ']')
end
return ids`),

  // KEYS: log. ARGV: id, limit, onlyBelow ('1'|'0'). False (nil) when the log does not hold the id.
  loggedAfter: lua(`local score = redis.call('ZSCORE', KEYS[1], ARGV[1])
if not score then return false end
if ARGV[3] ~= '1' then
  return redis.call('ZRANGE', KEYS[1], '(' .. score, '+inf', 'BYSCORE', 'LIMIT', 0, ARGV[2])
end
local id, limit, out = tonumber(ARGV[1]), tonumber(ARGV[2]), {}
for _, member in ipairs(redis.call('ZRANGE', KEYS[1], '(' .. score, '+inf', 'BYSCORE')) do
  if #out == limit then break end
  if tonumber(member) < id then out[#out + 1] = member end
end
return out`),

  // KEYS: log, floor. ARGV: ids. The floor ('' without a log), then 1 or 0 per id.
  loggedAmong: lua(`local out = { redis.call('GET', KEYS[2]) or '' }
for i = 1, #ARGV do
  if redis.call('ZSCORE', KEYS[1], ARGV[i]) then out[i + 1] = 1 else out[i + 1] = 0 end
end
return out`),

  // ARGV: hasExpected ('1'|'0'), expected, next, [px]
  compareAndSet: lua(`local v = redis.call('GET', KEYS[1])
if ARGV[1] == '1' then
  if v ~= ARGV[2] then return 0 end
elseif v then
  return 0
end
if ARGV[4] then redis.call('SET', KEYS[1], ARGV[3], 'PX', ARGV[4]) else redis.call('SET', KEYS[1], ARGV[3]) end
return 1`),

  // ARGV: field, has expected (1/0), expected, next
  hcompareAndSet: lua(`local v = redis.call('HGET', KEYS[1], ARGV[1])
if ARGV[2] == '1' then
  if v ~= ARGV[3] then return 0 end
elseif v then
  return 0
end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[4])
return 1`),

  // ARGV: value, px of each key in turn
  setEachIfAbsent: lua(`for i = 1, #KEYS do
  if redis.call('EXISTS', KEYS[i]) == 1 then return i - 1 end
  redis.call('SET', KEYS[i], ARGV[2 * i - 1], 'PX', ARGV[2 * i])
end
return -1`),

  // ARGV: expected
  compareAndDelete: lua(`if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('DEL', KEYS[1])
  return 1
end
return 0`),

  // ARGV: by, px
  incrWithTtl: lua(`local n = redis.call('INCRBY', KEYS[1], ARGV[1])
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return n`),

  // ARGV: limit, by, [px]
  incrIfBelow: lua(`${COUNTER}local cur = counter(KEYS[1])
if type(cur) == 'table' then return cur end
if cur + tonumber(ARGV[2]) > tonumber(ARGV[1]) then return false end
local n = redis.call('INCRBY', KEYS[1], ARGV[2])
if ARGV[3] then redis.call('PEXPIRE', KEYS[1], ARGV[3]) end
return n`),

  // ARGV: by. DECRBY keeps the key's TTL; deleting at zero keeps idle counters from lingering.
  decrFloor: lua(`${COUNTER}local cur = counter(KEYS[1])
if type(cur) == 'table' then return cur end
if cur - tonumber(ARGV[1]) <= 0 then
  redis.call('DEL', KEYS[1])
  return 0
end
return redis.call('DECRBY', KEYS[1], ARGV[1])`),

  // ARGV: windowMs. A counter without TTL (first hit, or persisted by accident) starts a window.
  hitWindow: lua(`local n = redis.call('INCRBY', KEYS[1], ARGV[2])
local ttl = redis.call('PTTL', KEYS[1])
if ttl < 0 then
  redis.call('PEXPIRE', KEYS[1], ARGV[1])
  ttl = tonumber(ARGV[1])
end
return {n, ttl}`),

  // KEYS: the n sets, then (with an index) its names set and values hash. ARGV: ttlMs, n, one limit
  // per set, one member per set, then (with an index) its ttlMs, n names and n values. Returns {0, 0}
  // when taken, else {index (1-based), live count without the member} of the first set that would
  // overflow; a set named twice counts every member this take adds to it. Each set's own TTL follows
  // its longest-lived member. The index is written, taken or refused, before the sets, its types
  // checked first (a script's writes are not undone by a later error).
  zaddExpiringWithin: lua(`${NOW}local n = tonumber(ARGV[2])
local refused = nil
local adding = {}
for i = 1, n do
  local key = KEYS[i]
  local member = ARGV[n + 2 + i]
  redis.call('ZREMRANGEBYSCORE', key, '-inf', now)
  local added = adding[key]
  if not added then
    added = {members = {}, count = 0}
    adding[key] = added
  end
  if not added.members[member] and not redis.call('ZSCORE', key, member) then
    added.members[member] = true
    added.count = added.count + 1
  end
  local count = redis.call('ZCARD', key) + added.count
  if count > tonumber(ARGV[i + 2]) then
    refused = {i, count - 1}
    break
  end
end
if #KEYS > n then
  local names, values, at = KEYS[n + 1], KEYS[n + 2], 2 * n + 3
  for _, check in ipairs({{names, 'set'}, {values, 'hash'}}) do
    local kind = redis.call('TYPE', check[1])['ok']
    if kind ~= 'none' and kind ~= check[2] then
      return redis.error_reply('WRONGTYPE Operation against a key holding the wrong kind of value')
    end
  end
  for i = 1, n do
    redis.call('SADD', names, ARGV[at + i])
    redis.call('HSET', values, ARGV[at + i], ARGV[at + n + i])
  end
  redis.call('PEXPIRE', names, ARGV[at])
  redis.call('PEXPIRE', values, ARGV[at])
end
if refused then return refused end
local deadline = now + tonumber(ARGV[1])
for i = 1, n do
  local key = KEYS[i]
  redis.call('ZADD', key, deadline, ARGV[n + 2 + i])
  local last = redis.call('ZRANGE', key, -1, -1, 'WITHSCORES')
  local left = math.ceil(tonumber(last[2]) - now)
  if left > 0 and left < math.huge then redis.call('PEXPIRE', key, left) end
end
return {0, 0}`),

  // KEYS: the n sets, then (with an index) its two keys; ARGV: member, ttlMs, n, then (with an index)
  // its ttlMs. Returns how many sets held the member live.
  zrenewExpiring: lua(`${NOW}local deadline = now + tonumber(ARGV[2])
local n = tonumber(ARGV[3])
local renewed = 0
for i = 1, n do
  local key = KEYS[i]
  local score = redis.call('ZSCORE', key, ARGV[1])
  if score and tonumber(score) > now then
    redis.call('ZADD', key, deadline, ARGV[1])
    if redis.call('PTTL', key) < tonumber(ARGV[2]) then redis.call('PEXPIRE', key, ARGV[2]) end
    renewed = renewed + 1
  end
end
if #KEYS > n then
  redis.call('PEXPIRE', KEYS[n + 1], ARGV[4])
  redis.call('PEXPIRE', KEYS[n + 2], ARGV[4])
end
return renewed`),

  // KEYS: the ended mark, the dialog's users set, then one sorted set per user. ARGV: member,
  // confirmed (1/0), now, ttlMs, then the user ids. Scores are formatted as integers (Lua would print
  // 14 significant digits).
  markDialog: lua(`if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
local member = ARGV[1]
local confirmed = ARGV[2] == '1'
local now = tonumber(ARGV[3])
local ttl = ARGV[4]
local stale = string.format('%.0f', math.max(1, now - tonumber(ttl)) - 1)
for i = 5, #ARGV do redis.call('SADD', KEYS[2], ARGV[i]) end
redis.call('PEXPIRE', KEYS[2], ttl)
for i = 3, #KEYS do
  local current = redis.call('ZSCORE', KEYS[i], member)
  if not (current and tonumber(current) > 0 and not confirmed) then
    local at = current and math.abs(tonumber(current)) or math.max(1, now)
    redis.call('ZADD', KEYS[i], string.format('%.0f', confirmed and at or -at), member)
    redis.call('ZREMRANGEBYSCORE', KEYS[i], '-' .. stale, stale)
    redis.call('PEXPIRE', KEYS[i], ttl)
  end
end
return 1`),

  zliveMembers: lua(`${NOW}redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
return redis.call('ZRANGE', KEYS[1], 0, -1)`),

  // KEYS: the views, then the detail hash. ARGV: id, deadline (0 removes), now, slackMs, detail view
  // (1-based), cap view (1-based, 0 = none), cap max, detail value, then one prefix per view. Scores
  // and deadlines stay strings on their way to Redis (Lua would print big numbers as 1.7e+12).
  // Returns the ids the cap removed.
  bindExpiring: lua(`local n = #KEYS - 1
local id, deadline, now, slack = ARGV[1], ARGV[2], ARGV[3], tonumber(ARGV[4])
local dview, cview, cmax = tonumber(ARGV[5]), tonumber(ARGV[6]), tonumber(ARGV[7])
local hkey = KEYS[n + 1]
local function prefix(i) return ARGV[8 + i] end
for _, m in ipairs(redis.call('ZRANGEBYSCORE', KEYS[dview], '-inf', now)) do redis.call('HDEL', hkey, m) end
for i = 1, n do redis.call('ZREMRANGEBYSCORE', KEYS[i], '-inf', now) end
local function unbind(x)
  for i = 1, n do redis.call('ZREM', KEYS[i], prefix(i) .. x) end
  redis.call('HDEL', hkey, prefix(dview) .. x)
end
local evicted = {}
if tonumber(deadline) > 0 then
  redis.call('HSET', hkey, prefix(dview) .. id, ARGV[8])
  for i = 1, n do redis.call('ZADD', KEYS[i], deadline, prefix(i) .. id) end
  if cview > 0 then
    local live = redis.call('ZRANGEBYSCORE', KEYS[cview], '(' .. now, '+inf')
    local skip = #prefix(cview)
    for j = 1, #live - cmax do
      local x = string.sub(live[j], skip + 1)
      unbind(x)
      evicted[#evicted + 1] = x
    end
  end
else
  unbind(id)
end
for i = 1, n do
  local last = redis.call('ZRANGE', KEYS[i], -1, -1, 'WITHSCORES')
  if #last == 0 then
    redis.call('DEL', KEYS[i])
    if i == dview then redis.call('DEL', hkey) end
  else
    local ttl = math.max(1, math.ceil(tonumber(last[2]) - tonumber(now))) + slack
    redis.call('PEXPIRE', KEYS[i], ttl)
    if i == dview then redis.call('PEXPIRE', hkey, ttl) end
  end
end
return evicted`),

  // ARGV: owner, px
  acquireLease: lua(`local v = redis.call('GET', KEYS[1])
if not v then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
  return 1
end
if v == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return 1
end
return 0`),

  // ARGV: owner, px
  renewLease: lua(`if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return 1
end
return 0`),
} as const;

/** One channel's Redis subscription; our handlers hang off a single Bun listener. */
interface Channel {
  subs: Set<Subscription>;
  listener: (message: string, channel: string) => void;
  ready: Promise<void>;
  /** Set once the first SUBSCRIBE went through; only then is there anything to renew. */
  active: boolean;
}

/** A token rather than the handler, so the same function may subscribe twice. */
interface Subscription {
  handler: MessageHandler;
  onGap?: () => void;
}

/**
 * Connects to Redis at `url` (redis://, rediss://) and resolves once connected. A second
 * connection for pub/sub is opened on the first `subscribe`.
 */
export async function createRedisLiveStore(url: string): Promise<LiveStore> {
  const client = new RedisClient(url);
  await client.connect();

  let closed = false;
  const isClosed = (): boolean => closed;
  const stopReviving: Array<() => void> = [reviveWhenAbandoned(client, isClosed)];

  const channels = new Map<string, Channel>();
  let subscriber: Promise<RedisClient> | null = null;
  // Subscriber operations run one at a time, so a resubscribe after a reconnect can never
  // interleave with a caller's subscribe or unsubscribe of the same channel.
  let subscriberQueue: Promise<unknown> = Promise.resolve();

  function send(command: string, args: string[]): Promise<unknown> {
    return client.send(command, args);
  }

  async function run(script: LuaScript, keys: string[], args: string[]): Promise<unknown> {
    const tail = [String(keys.length), ...keys, ...args];
    try {
      return await client.send("EVALSHA", [script.sha, ...tail]);
    } catch (error) {
      // Bun does not retry NOSCRIPT (script cache flushed, failover, new node). EVAL runs the
      // script and caches it again, so the next EVALSHA hits.
      if (!isNoScript(error)) throw error;
      return await client.send("EVAL", [script.source, ...tail]);
    }
  }

  function openSubscriber(): Promise<RedisClient> {
    if (subscriber === null) {
      const opening = client.duplicate().then((sub) => {
        stopReviving.push(reviveWhenAbandoned(sub, isClosed));
        // Bun reconnects the socket but does not renew SUBSCRIBEs, so messages would silently stop.
        sub.onconnect = () => {
          onSubscriber(resubscribeAll).catch((error: unknown) => {
            // The next reconnect retries; until then this instance hears nothing, so say so.
            console.error("[live-store] resubscribe after reconnect failed", { error });
          });
        };
        return sub;
      });
      opening.catch(() => {
        if (subscriber === opening) subscriber = null; // let the next subscribe try again
      });
      subscriber = opening;
    }
    return subscriber;
  }

  function onSubscriber<T>(op: (sub: RedisClient) => Promise<T>): Promise<T> {
    const next = subscriberQueue.then(async () => op(await openSubscriber()));
    subscriberQueue = next.catch(() => undefined);
    return next;
  }

  async function resubscribeAll(sub: RedisClient): Promise<void> {
    for (const [name, channel] of channels) {
      // A channel whose first SUBSCRIBE is still queued behind us will subscribe by itself.
      if (!channel.active) continue;
      // Bun keeps its listeners across a reconnect; subscribing again without dropping them first
      // would deliver every message twice.
      await sub.unsubscribe(name);
      await sub.subscribe(name, channel.listener);
      // What was published while the connection was down never arrives: say so.
      for (const s of [...channel.subs]) {
        try {
          s.onGap?.();
        } catch (error) {
          console.error("[live-store] pub/sub gap handler threw", { channel: name, error });
        }
      }
    }
  }

  const store: LiveStore = {
    kind: "redis",

    async get(key) {
      return stringOrNull(await send("GET", [key]));
    },

    async set(key, value, ttlMs) {
      await send("SET", ttlMs === undefined ? [key, value] : [key, value, "PX", ttlArg(ttlMs)]);
    },

    async setIfAbsent(key, value, ttlMs) {
      const args = ttlMs === undefined ? [key, value, "NX"] : [key, value, "NX", "PX", ttlArg(ttlMs)];
      return (await send("SET", args)) !== null;
    },

    async setEachIfAbsent(entries) {
      if (!entries.length) return -1;
      const args = entries.flatMap((e) => [e.value, ttlArg(e.ttlMs)]);
      return integer(await run(SCRIPTS.setEachIfAbsent, entries.map((e) => e.key), args));
    },

    async compareAndSet(key, expected, next, ttlMs) {
      const args = [expected === null ? "0" : "1", expected ?? "", next];
      if (ttlMs !== undefined) args.push(ttlArg(ttlMs));
      return flag(await run(SCRIPTS.compareAndSet, [key], args));
    },

    async compareAndDelete(key, expected) {
      return flag(await run(SCRIPTS.compareAndDelete, [key], [expected]));
    },

    async take(key) {
      return stringOrNull(await send("GETDEL", [key]));
    },

    async del(...keys) {
      if (keys.length === 0) return 0;
      return integer(await send("DEL", keys));
    },

    async expire(key, ttlMs) {
      return flag(await send("PEXPIRE", [key, expireArg(ttlMs)]));
    },

    async ttl(key) {
      return integer(await send("PTTL", [key]));
    },

    async incr(key, by = 1, ttlMs) {
      const step = integerArg("by", by);
      if (ttlMs === undefined) return integer(await send("INCRBY", [key, step]));
      return integer(await run(SCRIPTS.incrWithTtl, [key], [step, ttlArg(ttlMs)]));
    },

    async incrIfBelow(key, limit, by = 1, ttlMs) {
      const args = [numberArg("limit", limit), integerArg("by", by)];
      if (ttlMs !== undefined) args.push(ttlArg(ttlMs));
      const reply = await run(SCRIPTS.incrIfBelow, [key], args);
      return reply === null ? null : integer(reply);
    },

    async decrFloor(key, by = 1) {
      return integer(await run(SCRIPTS.decrFloor, [key], [integerArg("by", by)]));
    },

    async hitWindow(key, limit, windowMs, cost = 1): Promise<WindowHit> {
      const reply = await run(SCRIPTS.hitWindow, [key], [ttlArg(windowMs), integerArg("cost", cost)]);
      if (!Array.isArray(reply)) throw unexpected("hitWindow", reply);
      const count = integer(reply[0]);
      return { allowed: count <= limit, count, remaining: Math.max(0, limit - count), resetMs: integer(reply[1]) };
    },

    async hset(key, fields) {
      const flat = Object.entries(fields).flat();
      if (flat.length === 0) return; // HSET needs a field; an empty call changes nothing
      await send("HSET", [key, ...flat]);
    },

    async hget(key, field) {
      return stringOrNull(await send("HGET", [key, field]));
    },

    async hgetall(key) {
      return record(await send("HGETALL", [key]));
    },

    async hcompareAndSet(key, field, expected, next) {
      return flag(await run(SCRIPTS.hcompareAndSet, [key], [field, expected === null ? "0" : "1", expected ?? "", next]));
    },

    async hdel(key, ...fields) {
      if (fields.length === 0) return 0;
      return integer(await send("HDEL", [key, ...fields]));
    },

    async hincr(key, field, by = 1) {
      return integer(await send("HINCRBY", [key, field, integerArg("by", by)]));
    },

    async sadd(key, ...members) {
      if (members.length === 0) return 0;
      return integer(await send("SADD", [key, ...members]));
    },

    async srem(key, ...members) {
      if (members.length === 0) return 0;
      return integer(await send("SREM", [key, ...members]));
    },

    async smembers(key) {
      return strings(await send("SMEMBERS", [key]));
    },

    async sismember(key, member) {
      return flag(await send("SISMEMBER", [key, member]));
    },

    async scard(key) {
      return integer(await send("SCARD", [key]));
    },

    async zadd(key, entries) {
      const args = entries.flatMap(({ member, score }) => [scoreArg(score), member]);
      if (args.length === 0) return 0;
      return integer(await send("ZADD", [key, ...args]));
    },

    async zrem(key, ...members) {
      if (members.length === 0) return 0;
      return integer(await send("ZREM", [key, ...members]));
    },

    async zscore(key, member) {
      const reply = await send("ZSCORE", [key, member]);
      return reply === null ? null : score(reply);
    },

    async zrangeByScore(key, min, max, limit) {
      const args = [key, scoreArg(min), scoreArg(max), "WITHSCORES"];
      if (limit !== undefined) args.push("LIMIT", "0", integerArg("limit", limit));
      return scoredMembers(await send("ZRANGEBYSCORE", args));
    },

    async zremRangeByScore(key, min, max) {
      return integer(await send("ZREMRANGEBYSCORE", [key, scoreArg(min), scoreArg(max)]));
    },

    async zcard(key) {
      return integer(await send("ZCARD", [key]));
    },

    async zcount(key, min, max) {
      return integer(await send("ZCOUNT", [key, scoreArg(min), scoreArg(max)]));
    },

    async bindExpiring(input) {
      checkBindingWrite(input);
      const { views, detail, id, deadline, now, cap, slackMs } = input;
      const reply = await run(
        SCRIPTS.bindExpiring,
        [...views.map((v) => v.key), detail.key],
        [id, String(deadline), String(now), String(slackMs), String(detail.view + 1), String(cap ? cap.view + 1 : 0), String(cap?.max ?? 0), detail.value, ...views.map((v) => v.prefix)],
      );
      if (!Array.isArray(reply)) throw unexpected("bindExpiring", reply);
      return reply.map(String);
    },

    async zaddExpiringWithin(sets, member, ttlMs, setIndex) {
      // Every argument is checked before anything is sent, sets or none (as the in-process store does).
      const ttl = ttlArg(ttlMs);
      if (setIndex !== undefined && setIndex.entries.length !== sets.length) throw new RangeError("zaddExpiringWithin: one index entry per set");
      const indexKeys = setIndex === undefined ? [] : [setIndex.namesKey, setIndex.valuesKey];
      const indexArgs =
        setIndex === undefined ? [] : [ttlArg(setIndex.ttlMs), ...setIndex.entries.map((e) => e.name), ...setIndex.entries.map((e) => e.value)];
      const limits = sets.map((s) => integerArg("limit", s.limit));
      if (!sets.length) return { ok: true };
      const keys = [...sets.map((s) => s.key), ...indexKeys];
      const reply = await run(SCRIPTS.zaddExpiringWithin, keys, [ttl, String(sets.length), ...limits, ...sets.map((s) => s.member ?? member), ...indexArgs]);
      if (!Array.isArray(reply)) throw unexpected("zaddExpiringWithin", reply);
      const index = integer(reply[0]);
      return index === 0 ? { ok: true } : { ok: false, index: index - 1, count: integer(reply[1]) };
    },

    async zrenewExpiring(keys, member, ttlMs, setIndex) {
      const ttl = ttlArg(ttlMs);
      if (setIndex === undefined) return keys.length ? integer(await run(SCRIPTS.zrenewExpiring, keys, [member, ttl, String(keys.length)])) : 0;
      const keep = ttlArg(setIndex.ttlMs);
      return integer(await run(SCRIPTS.zrenewExpiring, [...keys, setIndex.namesKey, setIndex.valuesKey], [member, ttl, String(keys.length), keep]));
    },

    async markDialog(input) {
      if (input.userKeys.length !== input.users.length) throw new RangeError("markDialog: one user key per user");
      // Checked before anything is sent, with users or without (as the in-process store does).
      const now = integerArg("now", input.now);
      const ttl = ttlArg(input.ttlMs);
      if (!input.users.length) return (await send("GET", [input.endedKey])) === null;
      const args = [input.member, input.confirmed ? "1" : "0", now, ttl, ...input.users];
      return flag(await run(SCRIPTS.markDialog, [input.endedKey, input.usersKey, ...input.userKeys], args));
    },

    async zliveMembers(key) {
      return strings(await run(SCRIPTS.zliveMembers, [key], []));
    },

    async acquireLease(key, owner, ttlMs) {
      return flag(await run(SCRIPTS.acquireLease, [key], [owner, ttlArg(ttlMs)]));
    },

    async renewLease(key, owner, ttlMs) {
      return flag(await run(SCRIPTS.renewLease, [key], [owner, ttlArg(ttlMs)]));
    },

    async releaseLease(key, owner) {
      return flag(await run(SCRIPTS.compareAndDelete, [key], [owner]));
    },

    async publish(channel, message) {
      await send("PUBLISH", [channel, message]);
    },

    async publishLogged(channel, log, entries) {
      checkPublishLogged(log, entries);
      const args = [channel, String(log.max), String(log.ttlMs)];
      for (const { id, message } of entries) args.push(String(id), message);
      return strings(await run(SCRIPTS.publishLogged, [log.key, log.floorKey], args)).map(Number);
    },

    async loggedAfter(log, id, limit, onlyBelow = false) {
      checkLogId(id);
      if (limit < 0) throw new RangeError("limit must not be negative");
      const reply = await run(SCRIPTS.loggedAfter, [log.key], [String(id), integerArg("limit", limit), onlyBelow ? "1" : "0"]);
      return reply === null ? null : strings(reply).map(Number);
    },

    async loggedAmong(log, ids) {
      for (const id of ids) checkLogId(id);
      const reply = await run(SCRIPTS.loggedAmong, [log.key, log.floorKey], ids.map(String));
      if (!Array.isArray(reply) || reply.length !== ids.length + 1) throw unexpected("loggedAmong", reply);
      const [floor, ...logged] = reply as unknown[];
      return {
        floor: floor === "" ? null : integer(floor),
        logged: logged.map((flagged) => integer(flagged) === 1),
      };
    },

    async subscribe(name, handler, onGap) {
      if (closed) throw new Error("live store is closed");
      let channel = channels.get(name);
      if (channel === undefined) {
        const subs = new Set<Subscription>();
        const listener = (message: string, from: string): void => deliver(subs, message, from);
        const created: Channel = {
          subs,
          listener,
          active: false,
          // Queued ops always run asynchronously, so `created` exists by the time this does.
          ready: onSubscriber(async (sub) => {
            await sub.subscribe(name, listener);
            created.active = true;
          }),
        };
        created.ready.catch(() => {
          if (channels.get(name) === created) channels.delete(name);
        });
        channels.set(name, created);
        channel = created;
      }
      const sub: Subscription = onGap ? { handler, onGap } : { handler };
      channel.subs.add(sub);
      try {
        await channel.ready;
      } catch (error) {
        channel.subs.delete(sub);
        throw error;
      }
      const owned = channel;
      let done = false;
      return async () => {
        if (done) return;
        done = true;
        owned.subs.delete(sub);
        if (owned.subs.size > 0 || channels.get(name) !== owned) return;
        channels.delete(name);
        if (!closed) await onSubscriber((s) => s.unsubscribe(name, owned.listener));
      };
    },

    async ping() {
      if (closed) throw new Error("live store is closed");
      const reply = await withTimeout(send("PING", []), PING_TIMEOUT_MS, "Redis did not answer PING in time");
      if (reply !== "PONG") throw unexpected("PING", reply);
    },

    async close() {
      if (closed) return;
      closed = true;
      for (const stop of stopReviving) stop();
      channels.clear();
      client.close();
      const sub = await subscriber?.catch(() => null);
      sub?.close();
    },
  };
  return store;
}

/**
 * Bun reconnects on its own only up to `maxRetries`; after that the client stays dead (every
 * command fails with "Connection has failed") until `connect()` is called. Keep trying, slowly.
 * Returns a function that stops it.
 */
function reviveWhenAbandoned(client: RedisClient, isClosed: () => boolean): () => void {
  let timer: ReturnType<typeof setTimeout> | null = null;
  const schedule = (): void => {
    if (timer !== null || isClosed()) return;
    timer = setTimeout(() => {
      timer = null;
      if (isClosed() || client.connected) return;
      client.connect().catch(schedule);
    }, REVIVE_DELAY_MS);
    timer.unref();
  };
  client.onclose = schedule;
  return () => {
    if (timer !== null) clearTimeout(timer);
    timer = null;
  };
}

function deliver(subs: Set<Subscription>, message: string, channel: string): void {
  for (const sub of [...subs]) {
    if (!subs.has(sub)) continue; // unsubscribed by an earlier handler of this same message
    try {
      sub.handler(message, channel);
    } catch (error) {
      // A throw here would escape Bun's listener as an uncaught exception and end the process.
      console.error("[live-store] pub/sub handler threw", { channel, error });
    }
  }
}

function withTimeout<T>(promise: Promise<T>, ms: number, message: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(message)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

function isNoScript(error: unknown): boolean {
  return error instanceof Error && error.message.startsWith("NOSCRIPT");
}

// ---- argument formatting: the same validation as the memory store, so both reject alike ----

function ttlArg(ttlMs: number): string {
  if (!Number.isFinite(ttlMs) || ttlMs <= 0) throw new RangeError(`ttlMs must be a positive number, got ${ttlMs}`);
  return String(Math.ceil(ttlMs));
}

/** PEXPIRE accepts zero or less (the key is deleted at once); only non-finite values are refused. */
function expireArg(ttlMs: number): string {
  if (!Number.isFinite(ttlMs)) throw new RangeError(`ttlMs must be finite, got ${ttlMs}`);
  return String(Math.ceil(ttlMs));
}

function integerArg(name: string, value: number): string {
  if (!Number.isSafeInteger(value)) throw new RangeError(`${name} must be a safe integer, got ${value}`);
  return String(value);
}

function numberArg(name: string, value: number): string {
  if (Number.isNaN(value)) throw new RangeError(`${name} must be a number, got NaN`);
  return value === Infinity ? "inf" : value === -Infinity ? "-inf" : String(value);
}

/** Redis spells infinite scores `+inf`/`-inf`; JavaScript's "Infinity" would be a syntax error. */
function scoreArg(value: number): string {
  if (Number.isNaN(value)) throw new RangeError("score must be a number, got NaN");
  return value === Infinity ? "+inf" : value === -Infinity ? "-inf" : String(value);
}

// ---- reply normalization: RESP3 from plain commands, RESP2-shaped from Lua --------------------

function unexpected(what: string, reply: unknown): Error {
  return new Error(`unexpected Redis reply to ${what}: ${String(reply)}`);
}

function integer(reply: unknown): number {
  if (typeof reply === "number") return reply;
  if (typeof reply === "bigint") return Number(reply);
  if (typeof reply === "string" && /^-?\d+$/.test(reply)) return Number(reply);
  throw unexpected("an integer command", reply);
}

/** 1/0 integers (Lua, PEXPIRE, SISMEMBER) and RESP3 booleans alike. */
function flag(reply: unknown): boolean {
  if (typeof reply === "boolean") return reply;
  return integer(reply) === 1;
}

function stringOrNull(reply: unknown): string | null {
  if (reply === null || typeof reply === "string") return reply;
  throw unexpected("a string command", reply);
}

function strings(reply: unknown): string[] {
  if (!Array.isArray(reply)) throw unexpected("a list command", reply);
  const items: unknown[] = reply;
  return items.map((item) => {
    if (typeof item !== "string") throw unexpected("a list command", item);
    return item;
  });
}

function score(reply: unknown): number {
  if (typeof reply === "number") return reply;
  if (typeof reply === "string") {
    if (reply === "inf" || reply === "+inf") return Infinity;
    if (reply === "-inf") return -Infinity;
    const value = Number(reply);
    if (!Number.isNaN(value)) return value;
  }
  throw unexpected("a score", reply);
}

/** WITHSCORES replies: `[[member, score], …]` under RESP3, a flat `[member, score, …]` under RESP2. */
function scoredMembers(reply: unknown): Array<{ member: string; score: number }> {
  if (!Array.isArray(reply)) throw unexpected("ZRANGEBYSCORE", reply);
  const items: unknown[] = reply;
  const grouped = items.every(isArray) ? items : chunkPairs(items);
  return grouped.map(([member, value]) => {
    if (typeof member !== "string") throw unexpected("ZRANGEBYSCORE", member);
    return { member, score: score(value) };
  });
}

/** HGETALL: a null-prototype object under RESP3, a flat array under RESP2; a plain object either way. */
function record(reply: unknown): Record<string, string> {
  let entries: unknown[][] | null = null;
  if (Array.isArray(reply)) entries = chunkPairs(reply);
  else if (typeof reply === "object" && reply !== null) entries = Object.entries(reply);
  if (entries === null) throw unexpected("HGETALL", reply);
  return Object.fromEntries(
    entries.map(([field, value]) => {
      if (typeof field !== "string" || typeof value !== "string") throw unexpected("HGETALL", reply);
      return [field, value];
    }),
  );
}

function isArray(value: unknown): value is unknown[] {
  return Array.isArray(value);
}

function chunkPairs(flat: unknown[]): unknown[][] {
  const pairs: unknown[][] = [];
  for (let i = 0; i + 1 < flat.length; i += 2) pairs.push([flat[i], flat[i + 1]]);
  return pairs;
}
