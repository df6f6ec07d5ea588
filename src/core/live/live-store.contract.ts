/**
 * The behaviour every `LiveStore` must have, as one test suite run against each implementation.
 * Both stores pass the same suite; that is what lets the embedded default stand in for Redis.
 */
import { afterAll, beforeAll, describe, expect, spyOn, test } from "bun:test";
import { accountKey, type LiveStore } from "./live-store.ts";

/** Short TTLs keep the suite fast; the sleeps after them leave generous slack for slow machines. */
const SHORT_TTL_MS = 60;
const AFTER_SHORT_TTL_MS = 150;

/** Resolves once `predicate` holds, or fails the test after `timeoutMs`. */
export async function eventually(predicate: () => boolean, timeoutMs = 2_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!predicate()) {
    if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms`);
    await Bun.sleep(5);
  }
}

/**
 * Registers the full contract suite for one store. `make` is called once for the suite (and once
 * more for the close test); keys carry a random account id so concurrent runs never collide.
 */
export function runLiveStoreContract(name: string, make: () => Promise<LiveStore>): void {
  describe(`LiveStore contract: ${name}`, () => {
    const run = `lst_${crypto.randomUUID().replaceAll("-", "")}`;
    const used = new Set<string>();
    let store: LiveStore;

    /** A fresh key for this run; remembered so the suite can clean up after itself. */
    const key = (...parts: string[]): string => {
      const k = accountKey(run, ...parts, crypto.randomUUID().slice(0, 8));
      used.add(k);
      return k;
    };
    const channel = (label: string): string => `${run}:${label}:${crypto.randomUUID().slice(0, 8)}`;

    beforeAll(async () => {
      store = await make();
    });

    afterAll(async () => {
      await store.del(...used);
      await store.close();
    });

    test("reports its kind", () => {
      expect(["memory", "redis"]).toContain(store.kind);
    });

    describe("plain values", () => {
      test("get is null for a missing key; set then get round-trips; set overwrites", async () => {
        const k = key("v");
        expect(await store.get(k)).toBeNull();
        await store.set(k, "one");
        expect(await store.get(k)).toBe("one");
        await store.set(k, "two");
        expect(await store.get(k)).toBe("two");
      });

      test("a value with a TTL expires on its own", async () => {
        const k = key("ttl");
        await store.set(k, "x", SHORT_TTL_MS);
        expect(await store.get(k)).toBe("x");
        const left = await store.ttl(k);
        expect(left).toBeGreaterThan(0);
        expect(left).toBeLessThanOrEqual(SHORT_TTL_MS);
        await Bun.sleep(AFTER_SHORT_TTL_MS);
        expect(await store.get(k)).toBeNull();
        expect(await store.ttl(k)).toBe(-2);
      });

      test("set without a TTL removes an earlier expiry", async () => {
        const k = key("persist");
        await store.set(k, "a", 10_000);
        await store.set(k, "b");
        expect(await store.ttl(k)).toBe(-1);
      });

      test("refuses a TTL that is not positive", async () => {
        const k = key("badttl");
        await expect(store.set(k, "x", 0)).rejects.toThrow(RangeError);
        await expect(store.set(k, "x", -5)).rejects.toThrow(RangeError);
        await expect(store.set(k, "x", Number.NaN)).rejects.toThrow(RangeError);
        expect(await store.get(k)).toBeNull();
      });

      test("setIfAbsent sets only a missing key, and again once it expired", async () => {
        const k = key("nx");
        expect(await store.setIfAbsent(k, "first", SHORT_TTL_MS)).toBe(true);
        expect(await store.setIfAbsent(k, "second")).toBe(false);
        expect(await store.get(k)).toBe("first");
        expect(await store.ttl(k)).toBeGreaterThan(0);
        await Bun.sleep(AFTER_SHORT_TTL_MS);
        expect(await store.setIfAbsent(k, "third")).toBe(true);
        expect(await store.get(k)).toBe("third");
        expect(await store.ttl(k)).toBe(-1);
      });

      test("setIfAbsent counts any existing key, whatever its type", async () => {
        const k = key("nxhash");
        await store.hset(k, { f: "1" });
        expect(await store.setIfAbsent(k, "x")).toBe(false);
        expect(await store.hget(k, "f")).toBe("1");
      });

      test("setEachIfAbsent sets keys in order up to the first that exists, and says which", async () => {
        const [a, b, c] = [key("each-a"), key("each-b"), key("each-c")];
        expect(await store.setEachIfAbsent([{ key: a, value: "1", ttlMs: 60_000 }, { key: b, value: "2", ttlMs: SHORT_TTL_MS }])).toBe(-1);
        expect(await store.get(a)).toBe("1");
        expect(await store.get(b)).toBe("2");
        expect(await store.ttl(a)).toBeGreaterThan(SHORT_TTL_MS);
        expect(await store.ttl(b)).toBeGreaterThan(0);
        // The first exists: nothing is set.
        expect(await store.setEachIfAbsent([{ key: a, value: "x", ttlMs: 60_000 }, { key: c, value: "x", ttlMs: 60_000 }])).toBe(0);
        expect(await store.get(a)).toBe("1");
        expect(await store.get(c)).toBeNull();
        // The second exists: the first is set, the second keeps its value.
        expect(await store.setEachIfAbsent([{ key: c, value: "3", ttlMs: 60_000 }, { key: b, value: "x", ttlMs: 60_000 }])).toBe(1);
        expect(await store.get(c)).toBe("3");
        expect(await store.get(b)).toBe("2");
        // An expired key counts as absent.
        await Bun.sleep(AFTER_SHORT_TTL_MS);
        const d = key("each-d");
        expect(await store.setEachIfAbsent([{ key: d, value: "4", ttlMs: 60_000 }, { key: b, value: "5", ttlMs: 60_000 }])).toBe(-1);
        expect(await store.get(b)).toBe("5");
        expect(await store.setEachIfAbsent([])).toBe(-1);
      });

      test("setEachIfAbsent with a bad expiry sets nothing", async () => {
        const [a, b] = [key("each-bad-a"), key("each-bad-b")];
        await expect(store.setEachIfAbsent([{ key: a, value: "1", ttlMs: 60_000 }, { key: b, value: "2", ttlMs: Number.NaN }])).rejects.toThrow(RangeError);
        expect(await store.get(a)).toBeNull();
        expect(await store.get(b)).toBeNull();
      });

      test("compareAndSet with null expected sets only when absent", async () => {
        const k = key("cas-null");
        expect(await store.compareAndSet(k, null, "a")).toBe(true);
        expect(await store.get(k)).toBe("a");
        expect(await store.compareAndSet(k, null, "b")).toBe(false);
        expect(await store.get(k)).toBe("a");
      });

      test("compareAndSet replaces only the expected value", async () => {
        const k = key("cas");
        expect(await store.compareAndSet(k, "a", "b")).toBe(false);
        expect(await store.get(k)).toBeNull();
        await store.set(k, "a");
        expect(await store.compareAndSet(k, "x", "b")).toBe(false);
        expect(await store.get(k)).toBe("a");
        expect(await store.compareAndSet(k, "a", "b")).toBe(true);
        expect(await store.get(k)).toBe("b");
        expect(await store.compareAndSet(k, "a", "c")).toBe(false);
        expect(await store.get(k)).toBe("b");
      });

      test("compareAndSet applies its TTL, and clears an old one without", async () => {
        const k = key("cas-ttl");
        expect(await store.compareAndSet(k, null, "a", SHORT_TTL_MS)).toBe(true);
        expect(await store.ttl(k)).toBeGreaterThan(0);
        expect(await store.compareAndSet(k, "a", "b")).toBe(true);
        expect(await store.ttl(k)).toBe(-1);
        expect(await store.compareAndSet(k, "b", "c", SHORT_TTL_MS)).toBe(true);
        await Bun.sleep(AFTER_SHORT_TTL_MS);
        expect(await store.get(k)).toBeNull();
      });

      test("compareAndSet lets exactly one of many racers win", async () => {
        const k = key("cas-race");
        const results = await Promise.all(Array.from({ length: 50 }, (_, i) => store.compareAndSet(k, null, `r${i}`)));
        expect(results.filter(Boolean)).toHaveLength(1);
        const winner = results.indexOf(true);
        expect(await store.get(k)).toBe(`r${winner}`);
      });

      test("compareAndDelete deletes only the expected value", async () => {
        const k = key("cad");
        expect(await store.compareAndDelete(k, "a")).toBe(false);
        await store.set(k, "a");
        expect(await store.compareAndDelete(k, "b")).toBe(false);
        expect(await store.get(k)).toBe("a");
        expect(await store.compareAndDelete(k, "a")).toBe(true);
        expect(await store.get(k)).toBeNull();
        expect(await store.compareAndDelete(k, "a")).toBe(false);
      });

      test("take returns a value once", async () => {
        const k = key("take");
        expect(await store.take(k)).toBeNull();
        await store.set(k, "ticket", 10_000);
        expect(await store.take(k)).toBe("ticket");
        expect(await store.take(k)).toBeNull();
        expect(await store.get(k)).toBeNull();
      });

      test("take hands a ticket to exactly one of many concurrent takers", async () => {
        const k = key("take-race");
        await store.set(k, "ticket");
        const results = await Promise.all(Array.from({ length: 50 }, () => store.take(k)));
        expect(results.filter((r) => r === "ticket")).toHaveLength(1);
        expect(results.filter((r) => r === null)).toHaveLength(49);
      });

      test("del counts only keys that existed, of any type", async () => {
        const [a, b, h, s, missing] = [key("del"), key("del"), key("del"), key("del"), key("del")];
        await store.set(a, "1");
        await store.set(b, "2", 10_000);
        await store.hset(h, { f: "v" });
        await store.sadd(s, "m");
        expect(await store.del(a, b, h, s, missing)).toBe(4);
        expect(await store.get(a)).toBeNull();
        expect(await store.hgetall(h)).toEqual({});
        expect(await store.scard(s)).toBe(0);
        expect(await store.del(a)).toBe(0);
        expect(await store.del()).toBe(0);
      });

      test("del does not count a key that already expired", async () => {
        const k = key("del-expired");
        await store.set(k, "x", SHORT_TTL_MS);
        await Bun.sleep(AFTER_SHORT_TTL_MS);
        expect(await store.del(k)).toBe(0);
      });

      test("ttl is -2 when missing and -1 without expiry; expire sets and refreshes it", async () => {
        const k = key("expire");
        expect(await store.ttl(k)).toBe(-2);
        expect(await store.expire(k, 1_000)).toBe(false);
        expect(await store.ttl(k)).toBe(-2);
        await store.set(k, "x");
        expect(await store.ttl(k)).toBe(-1);
        expect(await store.expire(k, 10_000)).toBe(true);
        const long = await store.ttl(k);
        expect(long).toBeGreaterThan(5_000);
        expect(long).toBeLessThanOrEqual(10_000);
        expect(await store.expire(k, SHORT_TTL_MS)).toBe(true);
        expect(await store.ttl(k)).toBeLessThanOrEqual(SHORT_TTL_MS);
        await Bun.sleep(AFTER_SHORT_TTL_MS);
        expect(await store.get(k)).toBeNull();
        expect(await store.expire(k, 1_000)).toBe(false);
      });

      test("expire works on collections, and a zero TTL deletes at once", async () => {
        const h = key("expire-hash");
        await store.hset(h, { f: "v" });
        expect(await store.expire(h, SHORT_TTL_MS)).toBe(true);
        expect(await store.ttl(h)).toBeGreaterThan(0);
        await Bun.sleep(AFTER_SHORT_TTL_MS);
        expect(await store.hgetall(h)).toEqual({});
        const k = key("expire-zero");
        await store.set(k, "x");
        expect(await store.expire(k, 0)).toBe(true);
        expect(await store.ttl(k)).toBe(-2);
      });
    });

    describe("counters", () => {
      test("incr starts at zero, adds by, goes negative", async () => {
        const k = key("incr");
        expect(await store.incr(k)).toBe(1);
        expect(await store.incr(k, 5)).toBe(6);
        expect(await store.incr(k, -10)).toBe(-4);
        expect(await store.get(k)).toBe("-4");
        expect(await store.ttl(k)).toBe(-1);
      });

      test("incr with a TTL sets it on every call, so an untouched counter drains away", async () => {
        const k = key("incr-ttl");
        expect(await store.incr(k, 1, SHORT_TTL_MS)).toBe(1);
        expect(await store.incr(k, 1, 10_000)).toBe(2);
        expect(await store.ttl(k)).toBeGreaterThan(5_000);
        // Set, not extended: a shorter TTL replaces a longer one.
        expect(await store.incr(k, 1, SHORT_TTL_MS)).toBe(3);
        expect(await store.ttl(k)).toBeLessThanOrEqual(SHORT_TTL_MS);
        await Bun.sleep(AFTER_SHORT_TTL_MS);
        expect(await store.get(k)).toBeNull();
        expect(await store.incr(k, 1, SHORT_TTL_MS)).toBe(1);
      });

      test("incr without a TTL keeps an existing expiry", async () => {
        const k = key("incr-keep");
        await store.incr(k, 1, 10_000);
        await store.incr(k);
        expect(await store.ttl(k)).toBeGreaterThan(0);
      });

      test("incr counts every one of many concurrent calls", async () => {
        const k = key("incr-race");
        const values = await Promise.all(Array.from({ length: 200 }, () => store.incr(k)));
        expect(new Set(values).size).toBe(200);
        expect(await store.get(k)).toBe("200");
      });

      test("incr refuses a value that is not an integer, and a fractional step", async () => {
        const k = key("incr-bad");
        await store.set(k, "abc");
        await expect(store.incr(k)).rejects.toThrow(/not an integer/);
        await expect(store.incr(k, 1, 1_000)).rejects.toThrow(/not an integer/);
        expect(await store.get(k)).toBe("abc");
        await expect(store.incr(key("incr-frac"), 1.5)).rejects.toThrow(RangeError);
      });

      test("incrIfBelow increments up to the limit, then refuses without changing anything", async () => {
        const k = key("cac");
        expect(await store.incrIfBelow(k, 3)).toBe(1);
        expect(await store.incrIfBelow(k, 3)).toBe(2);
        expect(await store.incrIfBelow(k, 3)).toBe(3);
        expect(await store.incrIfBelow(k, 3)).toBeNull();
        expect(await store.get(k)).toBe("3");
        expect(await store.incrIfBelow(k, 10, 8)).toBeNull();
        expect(await store.incrIfBelow(k, 10, 7)).toBe(10);
        expect(await store.get(k)).toBe("10");
      });

      test("incrIfBelow refuses a missing key when even one step is too many", async () => {
        const k = key("cac-zero");
        expect(await store.incrIfBelow(k, 0)).toBeNull();
        expect(await store.ttl(k)).toBe(-2);
      });

      test("incrIfBelow sets its TTL when it counts, and leaves it when it refuses", async () => {
        const k = key("cac-ttl");
        expect(await store.incrIfBelow(k, 1, 1, 10_000)).toBe(1);
        expect(await store.ttl(k)).toBeGreaterThan(5_000);
        expect(await store.incrIfBelow(k, 1, 1, SHORT_TTL_MS)).toBeNull();
        expect(await store.ttl(k)).toBeGreaterThan(5_000);
        const d = key("cac-drain");
        expect(await store.incrIfBelow(d, 5, 1, SHORT_TTL_MS)).toBe(1);
        await Bun.sleep(AFTER_SHORT_TTL_MS);
        expect(await store.get(d)).toBeNull();
      });

      test("incrIfBelow is atomic: of 200 concurrent calls exactly `limit` succeed", async () => {
        const k = key("cac-race");
        const limit = 37;
        const results = await Promise.all(Array.from({ length: 200 }, () => store.incrIfBelow(k, limit, 1, 10_000)));
        const granted = results.filter((r): r is number => r !== null);
        expect(granted).toHaveLength(limit);
        expect([...granted].sort((a, b) => a - b)).toEqual(Array.from({ length: limit }, (_, i) => i + 1));
        expect(await store.get(k)).toBe(String(limit));
      });

      test("incrIfBelow refuses a value that is not an integer", async () => {
        const k = key("cac-bad");
        await store.set(k, "1.5");
        await expect(store.incrIfBelow(k, 10)).rejects.toThrow(/not an integer/);
        expect(await store.get(k)).toBe("1.5");
      });

      test("decrFloor decrements, never below zero, deleting the key at zero", async () => {
        const k = key("floor");
        await store.set(k, "5");
        expect(await store.decrFloor(k, 2)).toBe(3);
        expect(await store.decrFloor(k)).toBe(2);
        expect(await store.get(k)).toBe("2");
        expect(await store.decrFloor(k, 10)).toBe(0);
        expect(await store.ttl(k)).toBe(-2);
        expect(await store.decrFloor(k)).toBe(0);
        expect(await store.ttl(k)).toBe(-2);
      });

      test("decrFloor keeps the counter's expiry", async () => {
        const k = key("floor-ttl");
        await store.incr(k, 3, 10_000);
        expect(await store.decrFloor(k)).toBe(2);
        expect(await store.ttl(k)).toBeGreaterThan(5_000);
      });

      test("incrIfBelow and decrFloor together never go negative or past the limit", async () => {
        const k = key("cac-mixed");
        const ops = Array.from({ length: 100 }, (_, i) => (i % 2 === 0 ? store.incrIfBelow(k, 5) : store.decrFloor(k)));
        await Promise.all(ops);
        const final = Number((await store.get(k)) ?? "0");
        expect(final).toBeGreaterThanOrEqual(0);
        expect(final).toBeLessThanOrEqual(5);
      });

      test("hitWindow counts hits, allows `limit`, reports remaining and reset", async () => {
        const k = key("window");
        const windowMs = 200;
        const first = await store.hitWindow(k, 3, windowMs);
        expect(first).toMatchObject({ allowed: true, count: 1, remaining: 2 });
        expect(first.resetMs).toBeGreaterThan(0);
        expect(first.resetMs).toBeLessThanOrEqual(windowMs);
        await Bun.sleep(40);
        const second = await store.hitWindow(k, 3, windowMs);
        expect(second).toMatchObject({ allowed: true, count: 2, remaining: 1 });
        // Later hits do not push the window out: it is fixed from the first hit.
        expect(second.resetMs).toBeLessThan(first.resetMs);
        expect(await store.hitWindow(k, 3, windowMs)).toMatchObject({ allowed: true, count: 3, remaining: 0 });
        const over = await store.hitWindow(k, 3, windowMs);
        expect(over).toMatchObject({ allowed: false, count: 4, remaining: 0 });
        expect(over.resetMs).toBeLessThanOrEqual(second.resetMs);
        await Bun.sleep(windowMs + 100);
        const fresh = await store.hitWindow(k, 3, windowMs);
        expect(fresh).toMatchObject({ allowed: true, count: 1, remaining: 2 });
      });

      test("hitWindow allows exactly `limit` of many concurrent hits", async () => {
        const k = key("window-race");
        const hits = await Promise.all(Array.from({ length: 60 }, () => store.hitWindow(k, 25, 10_000)));
        expect(hits.filter((h) => h.allowed)).toHaveLength(25);
        expect(new Set(hits.map((h) => h.count)).size).toBe(60);
      });

      test("hitWindow with a cost counts that many hits at once, in the same window", async () => {
        const k = key("window-cost");
        expect(await store.hitWindow(k, 10, 10_000, 4)).toMatchObject({ allowed: true, count: 4, remaining: 6 });
        expect(await store.hitWindow(k, 10, 10_000, 4)).toMatchObject({ allowed: true, count: 8, remaining: 2 });
        const over = await store.hitWindow(k, 10, 10_000, 4);
        expect(over).toMatchObject({ allowed: false, count: 12, remaining: 0 });
        expect(over.resetMs).toBeGreaterThan(9_000);
        await expect(store.hitWindow(k, 10, 10_000, 1.5)).rejects.toThrow(RangeError);
      });
    });

    describe("hashes", () => {
      test("hset, hget, hgetall", async () => {
        const k = key("hash");
        expect(await store.hgetall(k)).toEqual({});
        expect(await store.hget(k, "a")).toBeNull();
        await store.hset(k, { a: "1", b: "2" });
        await store.hset(k, { b: "3", c: "4" });
        expect(await store.hget(k, "a")).toBe("1");
        expect(await store.hget(k, "b")).toBe("3");
        expect(await store.hget(k, "zz")).toBeNull();
        expect(await store.hgetall(k)).toEqual({ a: "1", b: "3", c: "4" });
        await store.hset(k, {});
        expect(await store.hgetall(k)).toEqual({ a: "1", b: "3", c: "4" });
      });

      test("hcompareAndSet writes a field only when it holds the expected value (null: absent)", async () => {
        const k = key("hcas");
        expect(await store.hcompareAndSet(k, "a", null, "1")).toBe(true);
        expect(await store.hcompareAndSet(k, "a", null, "2")).toBe(false);
        expect(await store.hcompareAndSet(k, "a", "0", "2")).toBe(false);
        expect(await store.hcompareAndSet(k, "a", "1", "2")).toBe(true);
        expect(await store.hcompareAndSet(k, "b", "", "x")).toBe(false);
        expect(await store.hgetall(k)).toEqual({ a: "2" });
        // Two writers that read the same value: one wins.
        const both = await Promise.all([store.hcompareAndSet(k, "a", "2", "3"), store.hcompareAndSet(k, "a", "2", "4")]);
        expect(both.filter(Boolean)).toHaveLength(1);
        expect(["3", "4"]).toContain((await store.hget(k, "a"))!);
      });

      test("hdel counts removed fields and drops the key with its last field", async () => {
        const k = key("hdel");
        await store.hset(k, { a: "1", b: "2" });
        expect(await store.hdel(k, "a", "missing")).toBe(1);
        expect(await store.hgetall(k)).toEqual({ b: "2" });
        expect(await store.hdel(k, "b")).toBe(1);
        expect(await store.ttl(k)).toBe(-2);
        expect(await store.hdel(k, "b")).toBe(0);
      });

      test("hincr creates, adds and subtracts", async () => {
        const k = key("hincr");
        expect(await store.hincr(k, "n")).toBe(1);
        expect(await store.hincr(k, "n", 10)).toBe(11);
        expect(await store.hincr(k, "n", -20)).toBe(-9);
        expect(await store.hget(k, "n")).toBe("-9");
        await store.hset(k, { s: "text" });
        await expect(store.hincr(k, "s")).rejects.toThrow(/not an integer/);
      });

      test("hset keeps the key's expiry", async () => {
        const k = key("hash-ttl");
        await store.hset(k, { a: "1" });
        await store.expire(k, 10_000);
        await store.hset(k, { b: "2" });
        expect(await store.ttl(k)).toBeGreaterThan(5_000);
      });
    });

    describe("sets", () => {
      test("sadd, smembers, sismember, scard, srem", async () => {
        const k = key("set");
        expect(await store.smembers(k)).toEqual([]);
        expect(await store.sadd(k, "a", "b", "a")).toBe(2);
        expect(await store.sadd(k, "b", "c")).toBe(1);
        expect(await store.sadd(k)).toBe(0);
        expect((await store.smembers(k)).sort()).toEqual(["a", "b", "c"]);
        expect(await store.sismember(k, "a")).toBe(true);
        expect(await store.sismember(k, "z")).toBe(false);
        expect(await store.scard(k)).toBe(3);
        expect(await store.srem(k, "a", "z")).toBe(1);
        expect(await store.scard(k)).toBe(2);
        expect(await store.srem(k, "b", "c")).toBe(2);
        expect(await store.ttl(k)).toBe(-2);
        expect(await store.sismember(k, "b")).toBe(false);
      });
    });

    describe("sorted sets", () => {
      test("zadd counts new members, re-scores existing ones; zscore reads them", async () => {
        const k = key("zset");
        expect(await store.zadd(k, [{ member: "a", score: 1 }, { member: "b", score: 2.5 }])).toBe(2);
        expect(await store.zadd(k, [{ member: "a", score: -3 }, { member: "c", score: 0 }])).toBe(1);
        expect(await store.zadd(k, [])).toBe(0);
        expect(await store.zscore(k, "a")).toBe(-3);
        expect(await store.zscore(k, "b")).toBe(2.5);
        expect(await store.zscore(k, "missing")).toBeNull();
        expect(await store.zcard(k)).toBe(3);
      });

      test("zcount counts scores within inclusive bounds, negative and infinite ones too", async () => {
        const k = key("zcount");
        await store.zadd(k, [
          { member: "a", score: -1_700_000_000_123 },
          { member: "b", score: -5 },
          { member: "c", score: 2 },
          { member: "d", score: 1_700_000_000_123 },
        ]);
        expect(await store.zcount(k, -Infinity, Infinity)).toBe(4);
        expect(await store.zcount(k, -5, 2)).toBe(2);
        expect(await store.zcount(k, -Infinity, -1_700_000_000_123)).toBe(1);
        expect(await store.zcount(k, 1_700_000_000_123, Infinity)).toBe(1);
        expect(await store.zcount(k, 3, 4)).toBe(0);
        expect(await store.zcount(key("zcount-missing"), -Infinity, Infinity)).toBe(0);
        await expect(store.zcount(k, Number.NaN, 1)).rejects.toThrow();
      });

      test("zrangeByScore orders by score then member, bounds inclusive, with a limit", async () => {
        const k = key("zrange");
        await store.zadd(k, [
          { member: "e", score: 5 },
          { member: "b", score: 2 },
          { member: "d", score: 2 },
          { member: "a", score: 1 },
          { member: "c", score: 2 },
          { member: "f", score: 1_700_000_000_123 },
        ]);
        expect(await store.zrangeByScore(k, -Infinity, Infinity)).toEqual([
          { member: "a", score: 1 },
          { member: "b", score: 2 },
          { member: "c", score: 2 },
          { member: "d", score: 2 },
          { member: "e", score: 5 },
          { member: "f", score: 1_700_000_000_123 },
        ]);
        expect((await store.zrangeByScore(k, 2, 5)).map((e) => e.member)).toEqual(["b", "c", "d", "e"]);
        expect((await store.zrangeByScore(k, 2, 5, 2)).map((e) => e.member)).toEqual(["b", "c"]);
        expect(await store.zrangeByScore(k, 2, 5, 0)).toEqual([]);
        expect(await store.zrangeByScore(k, 6, 7)).toEqual([]);
        expect(await store.zrangeByScore(k, 5, 2)).toEqual([]);
        expect(await store.zrangeByScore(key("zrange-missing"), 0, 10)).toEqual([]);
      });

      test("ties are ordered by the members' bytes (UTF-8), as Redis orders them, beyond ASCII too", async () => {
        const k = key("zrange-utf8");
        // UTF-16 code units put U+FF01 after the surrogates of U+1F600; bytes (code points) put it before.
        const members = ["sip:\u{10FFFD}@h", "sip:\uFF01@h", "sip:\u{1F600}@h", "sip:z@h", "sip:\u00e9@h"];
        await store.zadd(k, members.map((member) => ({ member, score: 7 })));
        expect((await store.zrangeByScore(k, -Infinity, Infinity)).map((e) => e.member)).toEqual(["sip:z@h", "sip:\u00e9@h", "sip:\uFF01@h", "sip:\u{1F600}@h", "sip:\u{10FFFD}@h"]);
      });

      test("zadd keeps fractional, negative and infinite scores exactly", async () => {
        const k = key("zscores");
        await store.zadd(k, [
          { member: "inf", score: Infinity },
          { member: "neg", score: -0.125 },
          { member: "ninf", score: -Infinity },
          { member: "frac", score: 0.1 },
        ]);
        expect(await store.zrangeByScore(k, -Infinity, Infinity)).toEqual([
          { member: "ninf", score: -Infinity },
          { member: "neg", score: -0.125 },
          { member: "frac", score: 0.1 },
          { member: "inf", score: Infinity },
        ]);
        expect(await store.zscore(k, "inf")).toBe(Infinity);
      });

      test("zrem and zremRangeByScore count what they remove; the empty set disappears", async () => {
        const k = key("zrem");
        await store.zadd(k, [1, 2, 3, 4, 5].map((n) => ({ member: `m${n}`, score: n })));
        expect(await store.zrem(k, "m1", "nope")).toBe(1);
        expect(await store.zremRangeByScore(k, 2, 3)).toBe(2);
        expect((await store.zrangeByScore(k, -Infinity, Infinity)).map((e) => e.member)).toEqual(["m4", "m5"]);
        expect(await store.zcard(k)).toBe(2);
        expect(await store.zremRangeByScore(k, -Infinity, Infinity)).toBe(2);
        expect(await store.zcard(k)).toBe(0);
        expect(await store.ttl(k)).toBe(-2);
      });

      // One set with room to spare: plain expiring membership.
      const join = (k: string, member: string, ttlMs: number) => store.zaddExpiringWithin([{ key: k, limit: 1000 }], member, ttlMs);

      test("zaddExpiringWithin adds with a deadline and drops expired members", async () => {
        const k = key("zexp");
        await join(k, "short", SHORT_TTL_MS);
        await join(k, "long", 10_000);
        expect(await join(k, "mid", 5_000)).toEqual({ ok: true });
        expect(await store.zliveMembers(k)).toEqual(["short", "mid", "long"]);
        const score = await store.zscore(k, "long");
        expect(score).not.toBeNull();
        expect(Math.abs((score ?? 0) - (Date.now() + 10_000))).toBeLessThan(2_000);
        await Bun.sleep(AFTER_SHORT_TTL_MS);
        expect(await store.zliveMembers(k)).toEqual(["mid", "long"]);
        expect(await store.zcard(k)).toBe(2);
        await join(k, "other", 7_000);
        expect(await store.zcard(k)).toBe(3);
      });

      test("zaddExpiringWithin prunes on add and refreshes a member's deadline", async () => {
        const k = key("zexp-refresh");
        await join(k, "a", SHORT_TTL_MS);
        await join(k, "b", SHORT_TTL_MS);
        await Bun.sleep(SHORT_TTL_MS / 2);
        await join(k, "a", 10_000);
        await Bun.sleep(AFTER_SHORT_TTL_MS);
        await join(k, "c", 5_000);
        expect(await store.zcard(k)).toBe(2);
        expect(await store.zliveMembers(k)).toEqual(["c", "a"]);
      });

      test("a zaddExpiringWithin set with only expired members disappears", async () => {
        const k = key("zexp-gone");
        await join(k, "a", SHORT_TTL_MS);
        await join(k, "b", SHORT_TTL_MS);
        expect(await store.ttl(k)).toBeGreaterThan(0);
        await Bun.sleep(AFTER_SHORT_TTL_MS);
        expect(await store.zliveMembers(k)).toEqual([]);
        expect(await store.ttl(k)).toBe(-2);
        expect(await store.zliveMembers(key("zexp-missing"))).toEqual([]);
      });

      test("zrenewExpiring renews a live member in the sets that hold it and joins none it left", async () => {
        const [a, b, c] = [key("renew-a"), key("renew-b"), key("renew-c")];
        await store.zaddExpiringWithin([{ key: a, limit: 5 }, { key: b, limit: 5 }], "call", SHORT_TTL_MS);
        await store.zaddExpiringWithin([{ key: c, limit: 5 }], "short", SHORT_TTL_MS);
        await store.zrem(b, "call");
        expect(await store.zrenewExpiring([a, b, c, key("renew-missing")], "call", 10_000)).toBe(1);
        expect(Math.abs(((await store.zscore(a, "call")) ?? 0) - (Date.now() + 10_000))).toBeLessThan(2_000);
        expect(await store.zscore(b, "call")).toBeNull();
        expect(await store.zscore(c, "call")).toBeNull();
        expect(await store.ttl(key("renew-missing"))).toBe(-2);
        // The set now lives as long as the renewed member; an expired member is not brought back.
        await Bun.sleep(AFTER_SHORT_TTL_MS);
        expect(await store.zliveMembers(a)).toEqual(["call"]);
        expect(await store.ttl(a)).toBeGreaterThan(5_000);
        expect(await store.zrenewExpiring([c], "short", 10_000)).toBe(0);
        expect(await store.zliveMembers(c)).toEqual([]);
        expect(await store.zrenewExpiring([], "call", 10_000)).toBe(0);
      });

      test("markDialog: first-seen kept through the states, never back to early, stale entries dropped, nothing after the end", async () => {
        const [ended, users, u1, u2] = [key("dlg-ended"), key("dlg-users"), key("dlg-u1"), key("dlg-u2")];
        const ttlMs = 60_000;
        const now = Date.now();
        const mark = (member: string, confirmed: boolean, at: number, keys = [u1, u2], ids = ["us_1", "us_2"]) =>
          store.markDialog({ endedKey: ended, usersKey: users, userKeys: keys, users: ids, member, confirmed, now: at, ttlMs });
        expect(await mark("old", true, now - ttlMs - 5_000, [u1], ["us_1"])).toBe(true);
        expect(await mark("call", false, now)).toBe(true);
        expect(await store.zscore(u1, "call")).toBe(-now);
        expect((await store.smembers(users)).sort()).toEqual(["us_1", "us_2"]);
        // The stale entry left u1 when "call" was written there.
        expect(await store.zscore(u1, "old")).toBeNull();
        expect(await mark("call", true, now + 1_000, [u1], ["us_1"])).toBe(true);
        expect(await store.zscore(u1, "call")).toBe(now);
        expect(await mark("call", false, now + 2_000)).toBe(true);
        expect(await store.zscore(u1, "call")).toBe(now);
        expect(await store.zscore(u2, "call")).toBe(-now);
        for (const k of [users, u1, u2]) expect(await store.ttl(k)).toBeGreaterThan(ttlMs - 5_000);
        await store.set(ended, "1", 10_000);
        expect(await mark("late", true, now + 3_000)).toBe(false);
        expect(await store.zscore(u1, "late")).toBeNull();
        expect(await mark("late", true, now + 3_000, [], [])).toBe(false);
        await store.del(ended);
        expect(await mark("late", true, now + 3_000, [], [])).toBe(true);
        // Bad arguments are refused before anything is written.
        await expect(mark("bad", true, now + 0.5)).rejects.toThrow(RangeError);
        await expect(mark("bad", true, now, [u1], ["us_1", "us_2"])).rejects.toThrow(RangeError);
        await expect(mark("bad", true, now + 0.5, [], [])).rejects.toThrow(RangeError);
        await expect(store.markDialog({ endedKey: ended, usersKey: users, userKeys: [], users: [], member: "bad", confirmed: true, now, ttlMs: -1 })).rejects.toThrow(RangeError);
        expect(await store.zscore(u1, "bad")).toBeNull();
      });

      test("zaddExpiringWithin takes every set or none, and reports the first that would overflow", async () => {
        const [a, b] = [key("within-a"), key("within-b")];
        expect(await store.zaddExpiringWithin([{ key: a, limit: 2 }, { key: b, limit: 1 }], "c1", 10_000)).toEqual({ ok: true });
        // b is full: nothing changes in a either.
        expect(await store.zaddExpiringWithin([{ key: a, limit: 2 }, { key: b, limit: 1 }], "c2", 10_000)).toEqual({ ok: false, index: 1, count: 1 });
        expect(await store.zliveMembers(a)).toEqual(["c1"]);
        expect(await store.zliveMembers(b)).toEqual(["c1"]);
        // The member already in a set is renewed and counted once.
        expect(await store.zaddExpiringWithin([{ key: a, limit: 1 }, { key: b, limit: 1 }], "c1", 20_000)).toEqual({ ok: true });
        expect(Math.abs(((await store.zscore(b, "c1")) ?? 0) - (Date.now() + 20_000))).toBeLessThan(2_000);
        expect(await store.zaddExpiringWithin([{ key: a, limit: 2 }], "c3", 10_000)).toEqual({ ok: true });
        expect(await store.zaddExpiringWithin([{ key: a, limit: 2 }], "c4", 10_000)).toEqual({ ok: false, index: 0, count: 2 });
        const fresh = key("within-fresh");
        expect(await store.zaddExpiringWithin([{ key: fresh, limit: 0 }], "c5", 10_000)).toEqual({ ok: false, index: 0, count: 0 });
        expect(await store.ttl(fresh)).toBe(-2);
        expect(await store.zaddExpiringWithin([], "c6", 10_000)).toEqual({ ok: true });
      });

      test("zaddExpiringWithin with a set's own member: one take may put two members in one set, each counted", async () => {
        const [a, b] = [key("within-own-a"), key("within-own-b")];
        // c1 holds two places in a (in and out), one in b.
        const twice = (call: string, limit: number) => [{ key: a, limit }, { key: b, limit: 5 }, { key: a, limit, member: `${call}:out` }];
        expect(await store.zaddExpiringWithin(twice("c1", 3), "c1", 10_000)).toEqual({ ok: true });
        expect(await store.zliveMembers(a)).toEqual(["c1", "c1:out"]);
        expect(await store.zliveMembers(b)).toEqual(["c1"]);
        // Taken again (a retransmission): renewed, counted once each.
        expect(await store.zaddExpiringWithin(twice("c1", 2), "c1", 10_000)).toEqual({ ok: true });
        // c2's first place in a fits (3 of 3), its second would not: nothing is taken.
        expect(await store.zaddExpiringWithin(twice("c2", 3), "c2", 10_000)).toEqual({ ok: false, index: 2, count: 3 });
        expect(await store.zliveMembers(a)).toEqual(["c1", "c1:out"]);
        expect(await store.zliveMembers(b)).toEqual(["c1"]);
        expect(await store.zaddExpiringWithin(twice("c2", 4), "c2", 10_000)).toEqual({ ok: true });
        expect((await store.zliveMembers(a)).sort()).toEqual(["c1", "c1:out", "c2", "c2:out"]);
      });

      test("zaddExpiringWithin with an index records its sets there in the same step, taken or refused", async () => {
        const [a, b, names, values] = [key("idx-a"), key("idx-b"), key("idx-names"), key("idx-values")];
        const index = (entries: Array<[string, string]>, ttlMs = 30_000) => ({
          namesKey: names,
          valuesKey: values,
          entries: entries.map(([name, value]) => ({ name, value })),
          ttlMs,
        });
        const both = [{ key: a, limit: 2 }, { key: b, limit: 1 }];
        expect(await store.zaddExpiringWithin(both, "c1", 10_000, index([["a", "2"], ["b", "1"]]))).toEqual({ ok: true });
        expect((await store.smembers(names)).sort()).toEqual(["a", "b"]);
        expect(await store.hgetall(values)).toEqual({ a: "2", b: "1" });
        for (const k of [names, values]) {
          expect(await store.ttl(k)).toBeGreaterThan(20_000);
          expect(await store.ttl(k)).toBeLessThanOrEqual(30_000);
        }
        // Refused (b is full): no set changes; the index has the limits this take asked for (what an
        // operator who lowered one sees).
        expect(await store.zaddExpiringWithin(both, "c2", 10_000, index([["a", "7"], ["b2", "9"]]))).toEqual({ ok: false, index: 1, count: 1 });
        expect(await store.zliveMembers(a)).toEqual(["c1"]);
        expect((await store.smembers(names)).sort()).toEqual(["a", "b", "b2"]);
        expect(await store.hgetall(values)).toEqual({ a: "7", b: "1", b2: "9" });
        expect(await store.ttl(key("idx-b2"))).toBe(-2);
        expect(await store.zaddExpiringWithin([{ key: a, limit: 3 }], "c3", 10_000, index([["a", "3"]]))).toEqual({ ok: true });
        expect(await store.hgetall(values)).toEqual({ a: "3", b: "1", b2: "9" });
        // One entry per set, checked before anything is sent.
        await expect(store.zaddExpiringWithin(both, "c4", 10_000, index([["a", "2"]]))).rejects.toThrow(RangeError);
        await expect(store.zaddExpiringWithin(both, "c4", 10_000, index([["a", "2"], ["b", "1"]], 0))).rejects.toThrow(RangeError);
        expect(await store.zliveMembers(a)).toEqual(["c1", "c3"]);
      });

      test("zaddExpiringWithin fails with nothing taken or recorded when a key of its index holds another type", async () => {
        for (const wrong of ["names", "values"] as const) {
          const [k, names, values] = [key(`idx-wrong-${wrong}`), key(`idx-wrong-${wrong}-names`), key(`idx-wrong-${wrong}-values`)];
          await store.set(wrong === "names" ? names : values, "not a collection");
          const take = store.zaddExpiringWithin([{ key: k, limit: 5 }], "c1", 10_000, { namesKey: names, valuesKey: values, entries: [{ name: "k", value: "5" }], ttlMs: 30_000 });
          await expect(take).rejects.toThrow(/WRONGTYPE/);
          expect(await store.zliveMembers(k)).toEqual([]);
          expect(await store.ttl(k)).toBe(-2);
          expect(await store.ttl(wrong === "names" ? values : names)).toBe(-2);
        }
      });

      test("zrenewExpiring with an index gives the index's keys its TTL, whether or not a set was renewed", async () => {
        const [a, names, values] = [key("idx-renew-a"), key("idx-renew-names"), key("idx-renew-values")];
        const index = { namesKey: names, valuesKey: values, ttlMs: 5_000 };
        await store.zaddExpiringWithin([{ key: a, limit: 5 }], "call", 10_000, { ...index, entries: [{ name: "a", value: "5" }] });
        expect(await store.ttl(names)).toBeLessThanOrEqual(5_000);
        expect(await store.zrenewExpiring([a], "call", 60_000, { ...index, ttlMs: 40_000 })).toBe(1);
        expect(await store.zrenewExpiring([a], "gone", 60_000, { ...index, ttlMs: 50_000 })).toBe(0);
        for (const k of [names, values]) expect(await store.ttl(k)).toBeGreaterThan(40_000);
        expect(await store.ttl(a)).toBeGreaterThan(50_000);
        // Index keys that are not there stay absent.
        const absent = { namesKey: key("idx-renew-none-n"), valuesKey: key("idx-renew-none-v"), ttlMs: 40_000 };
        expect(await store.zrenewExpiring([a], "call", 60_000, absent)).toBe(1);
        expect(await store.ttl(absent.namesKey)).toBe(-2);
        expect(await store.ttl(absent.valuesKey)).toBe(-2);
        await expect(store.zrenewExpiring([a], "call", 60_000, { ...index, ttlMs: -1 })).rejects.toThrow(RangeError);
      });

      test("zaddExpiringWithin drops expired members first and gives the sets their members' lifetime", async () => {
        const k = key("within-exp");
        await store.zaddExpiringWithin([{ key: k, limit: 1 }], "short", SHORT_TTL_MS);
        expect(await store.zaddExpiringWithin([{ key: k, limit: 1 }], "next", 10_000)).toEqual({ ok: false, index: 0, count: 1 });
        await Bun.sleep(AFTER_SHORT_TTL_MS);
        expect(await store.zaddExpiringWithin([{ key: k, limit: 1 }], "next", 10_000)).toEqual({ ok: true });
        expect(await store.zliveMembers(k)).toEqual(["next"]);
        const ttl = await store.ttl(k);
        expect(ttl).toBeGreaterThan(5_000);
        expect(ttl).toBeLessThanOrEqual(10_000);
      });

      test("zaddExpiringWithin never admits more than a limit under a concurrent burst", async () => {
        const [shared, own] = [key("within-race"), key("within-race-own")];
        const results = await Promise.all(
          Array.from({ length: 40 }, (_, i) => store.zaddExpiringWithin([{ key: own, limit: 100 }, { key: shared, limit: 7 }], `m${i}`, 10_000)),
        );
        expect(results.filter((r) => r.ok).length).toBe(7);
        expect(await store.zcard(shared)).toBe(7);
        expect(await store.zcard(own)).toBe(7);
      });

      /** Three views of one device's bindings, as presence keeps them: per user, per device, per account. */
      const bindingViews = () => {
        const [user, device, all, info] = [key("bind-u"), key("bind-d"), key("bind-all"), key("bind-info")];
        const views = [
          { key: user, prefix: "dev1 " },
          { key: device, prefix: "" },
          { key: all, prefix: "us1 dev1 " },
        ];
        const bind = (id: string, deadline: number, now: number, max = 10) =>
          store.bindExpiring({ views, detail: { key: info, view: 0, value: `detail of ${id}` }, id, deadline, now, cap: { view: 1, max }, slackMs: 60_000 });
        return { user, device, all, info, bind };
      };

      test("bindExpiring writes a binding to every view and its detail, and removes it from all of them", async () => {
        const { user, device, all, info, bind } = bindingViews();
        const now = Date.now();
        expect(await bind("sip:a@10.0.0.1", now + 30_000, now)).toEqual([]);
        expect(await bind("sip:b@10.0.0.2", now + 40_000, now)).toEqual([]);
        expect(await store.zrangeByScore(user, now, Infinity)).toEqual([
          { member: "dev1 sip:a@10.0.0.1", score: now + 30_000 },
          { member: "dev1 sip:b@10.0.0.2", score: now + 40_000 },
        ]);
        expect((await store.zrangeByScore(device, now, Infinity)).map((e) => e.member)).toEqual(["sip:a@10.0.0.1", "sip:b@10.0.0.2"]);
        expect((await store.zrangeByScore(all, now, Infinity)).map((e) => e.member)).toEqual(["us1 dev1 sip:a@10.0.0.1", "us1 dev1 sip:b@10.0.0.2"]);
        expect(await store.hgetall(info)).toEqual({ "dev1 sip:a@10.0.0.1": "detail of sip:a@10.0.0.1", "dev1 sip:b@10.0.0.2": "detail of sip:b@10.0.0.2" });

        expect(await bind("sip:a@10.0.0.1", 0, now)).toEqual([]);
        expect((await store.zrangeByScore(device, now, Infinity)).map((e) => e.member)).toEqual(["sip:b@10.0.0.2"]);
        expect(await store.zcard(user)).toBe(1);
        expect(await store.zcard(all)).toBe(1);
        expect(Object.keys(await store.hgetall(info))).toEqual(["dev1 sip:b@10.0.0.2"]);
        // The last removal deletes every key; removing again is harmless.
        await bind("sip:b@10.0.0.2", 0, now);
        await bind("sip:b@10.0.0.2", 0, now);
        for (const k of [user, device, all, info]) expect(await store.ttl(k)).toBe(-2);
      });

      test("bindExpiring drops expired bindings from every view and the detail", async () => {
        const { user, device, all, info, bind } = bindingViews();
        const now = Date.now();
        await bind("sip:old@10.0.0.1", now + 1_000, now);
        await bind("sip:new@10.0.0.2", now + 60_000, now + 2_000);
        for (const k of [user, device, all]) expect(await store.zcard(k)).toBe(1);
        expect(Object.keys(await store.hgetall(info))).toEqual(["dev1 sip:new@10.0.0.2"]);
      });

      test("bindExpiring caps the live bindings of a view, evicting the soonest to expire from every view", async () => {
        const { user, device, all, info, bind } = bindingViews();
        const now = Date.now();
        await bind("sip:1@h", now + 10_000, now, 2);
        await bind("sip:2@h", now + 20_000, now, 2);
        expect(await bind("sip:3@h", now + 30_000, now, 2)).toEqual(["sip:1@h"]);
        expect((await store.zrangeByScore(device, now, Infinity)).map((e) => e.member)).toEqual(["sip:2@h", "sip:3@h"]);
        expect((await store.zrangeByScore(user, now, Infinity)).map((e) => e.member)).toEqual(["dev1 sip:2@h", "dev1 sip:3@h"]);
        expect(await store.zcard(all)).toBe(2);
        expect(Object.keys(await store.hgetall(info)).sort()).toEqual(["dev1 sip:2@h", "dev1 sip:3@h"]);
        // A binding that expires sooner than all the others is itself the one evicted.
        expect(await bind("sip:4@h", now + 5_000, now, 2)).toEqual(["sip:4@h"]);
        expect((await store.zrangeByScore(device, now, Infinity)).map((e) => e.member)).toEqual(["sip:2@h", "sip:3@h"]);
        // Renewing a binding counts it once.
        expect(await bind("sip:2@h", now + 50_000, now, 2)).toEqual([]);
        expect((await store.zrangeByScore(device, now, Infinity)).map((e) => e.member)).toEqual(["sip:3@h", "sip:2@h"]);
      });

      test("bindExpiring keeps each view (and the detail with its view) until its last deadline plus the slack", async () => {
        const { user, device, info, bind } = bindingViews();
        const now = Date.now();
        await bind("sip:a@h", now + 30_000, now);
        await bind("sip:b@h", now + 90_000, now);
        for (const k of [user, device, info]) {
          const ttl = await store.ttl(k);
          expect(ttl).toBeGreaterThan(140_000);
          expect(ttl).toBeLessThanOrEqual(150_000);
        }
        await bind("sip:b@h", 0, now);
        const ttl = await store.ttl(info);
        expect(ttl).toBeGreaterThan(80_000);
        expect(ttl).toBeLessThanOrEqual(90_000);
      });

      test("bindExpiring refuses a malformed call and changes nothing", async () => {
        const { user, info } = bindingViews();
        const views = [{ key: user, prefix: "" }];
        const now = Date.now();
        const bad = [
          { views, detail: { key: info, view: 1, value: "x" }, id: "a", deadline: now + 1_000, now, slackMs: 0 },
          { views, detail: { key: info, view: 0, value: "x" }, id: "a", deadline: now + 1_000, now, cap: { view: 0, max: -1 }, slackMs: 0 },
          { views, detail: { key: info, view: 0, value: "x" }, id: "a", deadline: 1.5, now, slackMs: 0 },
          { views: [], detail: { key: info, view: 0, value: "x" }, id: "a", deadline: now + 1_000, now, slackMs: 0 },
        ];
        for (const input of bad) await expect(store.bindExpiring(input)).rejects.toThrow(/bindExpiring/);
        expect(await store.ttl(user)).toBe(-2);
        expect(await store.ttl(info)).toBe(-2);
      });

      test("bindExpiring keeps the views and the detail in step under a concurrent burst", async () => {
        const { user, device, all, info, bind } = bindingViews();
        const now = Date.now();
        const evicted = await Promise.all(Array.from({ length: 30 }, (_, i) => bind(`sip:${i}@h`, now + 10_000 + i, now, 5)));
        expect(evicted.flat().length).toBe(25);
        const live = (await store.zrangeByScore(device, now, Infinity)).map((e) => e.member);
        expect(live).toEqual(["sip:25@h", "sip:26@h", "sip:27@h", "sip:28@h", "sip:29@h"]);
        expect((await store.zrangeByScore(user, now, Infinity)).map((e) => e.member)).toEqual(live.map((c) => `dev1 ${c}`));
        expect((await store.zrangeByScore(all, now, Infinity)).map((e) => e.member)).toEqual(live.map((c) => `us1 dev1 ${c}`));
        expect(Object.keys(await store.hgetall(info)).sort()).toEqual(live.map((c) => `dev1 ${c}`).sort());
      });

      test("zaddExpiringWithin counts every member of a concurrent burst", async () => {
        const k = key("zexp-race");
        const results = await Promise.all(Array.from({ length: 50 }, (_, i) => join(k, `m${i}`, 10_000)));
        expect(results.every((r) => r.ok)).toBe(true);
        expect(await store.zcard(k)).toBe(50);
        expect((await store.zliveMembers(k)).sort()).toEqual(Array.from({ length: 50 }, (_, i) => `m${i}`).sort());
      });
    });

    describe("leases", () => {
      test("acquire, reacquire by the owner, refuse another owner", async () => {
        const k = key("lease");
        expect(await store.acquireLease(k, "node-a", 10_000)).toBe(true);
        expect(await store.acquireLease(k, "node-a", 10_000)).toBe(true);
        expect(await store.acquireLease(k, "node-b", 10_000)).toBe(false);
        expect(await store.get(k)).toBe("node-a");
      });

      test("reacquiring extends the lease", async () => {
        const k = key("lease-extend");
        await store.acquireLease(k, "node-a", SHORT_TTL_MS);
        expect(await store.acquireLease(k, "node-a", 10_000)).toBe(true);
        await Bun.sleep(AFTER_SHORT_TTL_MS);
        expect(await store.acquireLease(k, "node-b", 10_000)).toBe(false);
      });

      test("renew extends only the owner's lease", async () => {
        const k = key("lease-renew");
        expect(await store.renewLease(k, "node-a", 10_000)).toBe(false);
        expect(await store.ttl(k)).toBe(-2);
        await store.acquireLease(k, "node-a", SHORT_TTL_MS);
        expect(await store.renewLease(k, "node-b", 10_000)).toBe(false);
        expect(await store.renewLease(k, "node-a", 10_000)).toBe(true);
        expect(await store.ttl(k)).toBeGreaterThan(5_000);
        await Bun.sleep(AFTER_SHORT_TTL_MS);
        expect(await store.acquireLease(k, "node-b", 10_000)).toBe(false);
      });

      test("release only by the owner; then another can take it", async () => {
        const k = key("lease-release");
        await store.acquireLease(k, "node-a", 10_000);
        expect(await store.releaseLease(k, "node-b")).toBe(false);
        expect(await store.acquireLease(k, "node-b", 10_000)).toBe(false);
        expect(await store.releaseLease(k, "node-a")).toBe(true);
        expect(await store.releaseLease(k, "node-a")).toBe(false);
        expect(await store.acquireLease(k, "node-b", 10_000)).toBe(true);
      });

      test("a lease is free after its TTL, and the old owner can no longer renew it", async () => {
        const k = key("lease-expire");
        await store.acquireLease(k, "node-a", SHORT_TTL_MS);
        await Bun.sleep(AFTER_SHORT_TTL_MS);
        expect(await store.renewLease(k, "node-a", 10_000)).toBe(false);
        expect(await store.acquireLease(k, "node-b", 10_000)).toBe(true);
        expect(await store.renewLease(k, "node-a", 10_000)).toBe(false);
        expect(await store.releaseLease(k, "node-a")).toBe(false);
        expect(await store.get(k)).toBe("node-b");
      });

      test("of many concurrent contenders exactly one gets the lease", async () => {
        const k = key("lease-race");
        const results = await Promise.all(Array.from({ length: 50 }, (_, i) => store.acquireLease(k, `node-${i}`, 10_000)));
        expect(results.filter(Boolean)).toHaveLength(1);
        expect(await store.get(k)).toBe(`node-${results.indexOf(true)}`);
      });
    });

    describe("types", () => {
      test("a key holds one type: other-type commands fail with WRONGTYPE", async () => {
        const s = key("type-string");
        await store.set(s, "x");
        await expect(store.hset(s, { f: "v" })).rejects.toThrow(/WRONGTYPE/);
        await expect(store.sadd(s, "m")).rejects.toThrow(/WRONGTYPE/);
        await expect(store.zadd(s, [{ member: "m", score: 1 }])).rejects.toThrow(/WRONGTYPE/);
        const h = key("type-hash");
        await store.hset(h, { f: "v" });
        await expect(store.get(h)).rejects.toThrow(/WRONGTYPE/);
        await expect(store.incr(h)).rejects.toThrow(/WRONGTYPE/);
        await expect(store.compareAndSet(h, null, "x")).rejects.toThrow(/WRONGTYPE/);
        await expect(store.smembers(h)).rejects.toThrow(/WRONGTYPE/);
        await expect(store.zliveMembers(h)).rejects.toThrow(/WRONGTYPE/);
        await expect(store.acquireLease(h, "node-a", 1_000)).rejects.toThrow(/WRONGTYPE/);
        expect(await store.hget(h, "f")).toBe("v");
      });

      test("set replaces a key of any type", async () => {
        const k = key("type-replace");
        await store.sadd(k, "m");
        await store.set(k, "now a string");
        expect(await store.get(k)).toBe("now a string");
        expect(await store.del(k)).toBe(1);
        await store.hset(k, { f: "v" });
        expect(await store.hgetall(k)).toEqual({ f: "v" });
      });
    });

    describe("pub/sub", () => {
      test("a published message reaches a subscriber, asynchronously, in order", async () => {
        const ch = channel("basic");
        const got: Array<[string, string]> = [];
        const unsubscribe = await store.subscribe(ch, (message, from) => got.push([message, from]));
        const published = store.publish(ch, "one");
        expect(got).toEqual([]); // never delivered inside publish()
        await published;
        await store.publish(ch, "two");
        await store.publish(ch, "three");
        await eventually(() => got.length === 3);
        expect(got).toEqual([
          ["one", ch],
          ["two", ch],
          ["three", ch],
        ]);
        await unsubscribe();
      });

      test("unsubscribe stops delivery; unsubscribing twice is harmless", async () => {
        const ch = channel("unsub");
        const marker = channel("marker");
        const got: string[] = [];
        const markers: string[] = [];
        const unsubscribe = await store.subscribe(ch, (m) => got.push(m));
        const stopMarker = await store.subscribe(marker, (m) => markers.push(m));
        await store.publish(ch, "before");
        await eventually(() => got.length === 1);
        await unsubscribe();
        await unsubscribe();
        await store.publish(ch, "after");
        // A later message on another channel arriving proves the earlier one had its chance.
        await store.publish(marker, "done");
        await eventually(() => markers.length === 1);
        await Bun.sleep(20);
        expect(got).toEqual(["before"]);
        await stopMarker();
      });

      test("two subscribers both get each message; one leaving does not affect the other", async () => {
        const ch = channel("two");
        const first: string[] = [];
        const second: string[] = [];
        const stopFirst = await store.subscribe(ch, (m) => first.push(m));
        const stopSecond = await store.subscribe(ch, (m) => second.push(m));
        await store.publish(ch, "both");
        await eventually(() => first.length === 1 && second.length === 1);
        await stopFirst();
        await store.publish(ch, "second only");
        await eventually(() => second.length === 2);
        expect(first).toEqual(["both"]);
        expect(second).toEqual(["both", "second only"]);
        await stopSecond();
      });

      test("the same handler subscribed twice hears each message twice until both leave", async () => {
        const ch = channel("twice");
        const got: string[] = [];
        const handler = (m: string): void => void got.push(m);
        const stopA = await store.subscribe(ch, handler);
        const stopB = await store.subscribe(ch, handler);
        await store.publish(ch, "x");
        await eventually(() => got.length === 2);
        await stopA();
        await store.publish(ch, "y");
        await eventually(() => got.length === 3);
        expect(got).toEqual(["x", "x", "y"]);
        await stopB();
      });

      test("messages go only to their own channel", async () => {
        const a = channel("a");
        const b = channel("b");
        const gotA: string[] = [];
        const gotB: string[] = [];
        const stopA = await store.subscribe(a, (m) => gotA.push(m));
        const stopB = await store.subscribe(b, (m) => gotB.push(m));
        await store.publish(a, "for a");
        await store.publish(b, "for b");
        await eventually(() => gotA.length === 1 && gotB.length === 1);
        expect(gotA).toEqual(["for a"]);
        expect(gotB).toEqual(["for b"]);
        await stopA();
        await stopB();
      });

      test("a throwing handler does not keep the message from the others", async () => {
        const ch = channel("throw");
        const got: string[] = [];
        const quiet = spyOn(console, "error").mockImplementation(() => {});
        try {
          const stopBad = await store.subscribe(ch, () => {
            throw new Error("handler bug");
          });
          const stopGood = await store.subscribe(ch, (m) => got.push(m));
          await store.publish(ch, "m1");
          await store.publish(ch, "m2");
          await eventually(() => got.length === 2);
          expect(got).toEqual(["m1", "m2"]);
          await stopBad();
          await stopGood();
        } finally {
          quiet.mockRestore();
        }
      });

      test("resubscribing after everyone left works", async () => {
        const ch = channel("again");
        const got: string[] = [];
        const stop = await store.subscribe(ch, (m) => got.push(`1:${m}`));
        await stop();
        const stopAgain = await store.subscribe(ch, (m) => got.push(`2:${m}`));
        await store.publish(ch, "x");
        await eventually(() => got.length === 1);
        await Bun.sleep(20);
        expect(got).toEqual(["2:x"]);
        await stopAgain();
      });

      test("publishing with no subscribers is fine", async () => {
        await store.publish(channel("nobody"), "into the void");
      });
    });

    describe("publication log", () => {
      const logOf = (max = 100, ttlMs = 60_000) => ({ key: key("publog"), floorKey: key("publog-floor"), max, ttlMs });
      const entry = (id: number) => ({ id, message: `{"id":${id}}` });

      test("publishes new ids, one as its message and several as a JSON array, each once, and keeps their order", async () => {
        const ch = channel("logged");
        const log = logOf();
        const got: string[] = [];
        const stop = await store.subscribe(ch, (m) => got.push(m));
        try {
          expect(await store.publishLogged(ch, log, [entry(11)])).toEqual([11]);
          expect(await store.publishLogged(ch, log, [entry(9), entry(12)])).toEqual([9, 12]);
          // Already published: left out; all of them: nothing is published.
          expect(await store.publishLogged(ch, log, [entry(12), entry(10), entry(9)])).toEqual([10]);
          expect(await store.publishLogged(ch, log, [entry(10), entry(11)])).toEqual([]);
          // The same id twice in one call is published once.
          expect(await store.publishLogged(ch, log, [entry(13), entry(13)])).toEqual([13]);
          await eventually(() => got.length === 4);
          await Bun.sleep(20);
          expect(got).toEqual(['{"id":11}', '[{"id":9},{"id":12}]', '{"id":10}', '{"id":13}']);
          // Publication order, not id order.
          expect(await store.loggedAfter(log, 11, 100)).toEqual([9, 12, 10, 13]);
          expect(await store.loggedAfter(log, 12, 2)).toEqual([10, 13]);
          expect(await store.loggedAfter(log, 13, 100)).toEqual([]);
          // Only the smaller ids published after it.
          expect(await store.loggedAfter(log, 11, 100, true)).toEqual([9, 10]);
          expect(await store.loggedAfter(log, 11, 1, true)).toEqual([9]);
          expect(await store.loggedAfter(log, 12, 100, true)).toEqual([10]);
          expect(await store.loggedAfter(log, 8, 100)).toBeNull();
          expect(await store.loggedAfter({ key: key("no-log") }, 1, 100)).toBeNull();
        } finally {
          await stop();
        }
      });

      test("the floor: ids below a new log's first are unknown, and trimmed ids raise it", async () => {
        const ch = channel("floor");
        const log = logOf(3);
        expect(await store.loggedAmong(log, [1])).toEqual({ floor: null, logged: [false] });
        await store.publishLogged(ch, log, [entry(1_000_000_000_000_007), entry(1_000_000_000_000_005)]);
        // Fifteen digits and more stay exact (Lua would print them as exponents).
        expect(await store.loggedAmong(log, [1_000_000_000_000_004, 1_000_000_000_000_005, 1_000_000_000_000_006, 1_000_000_000_000_007])).toEqual({
          floor: 1_000_000_000_000_004,
          logged: [false, true, false, true],
        });
        // Beyond max 3: the earliest published leave, and the floor rises to the highest of them.
        await store.publishLogged(ch, log, [entry(1_000_000_000_000_003), entry(1_000_000_000_000_010)]);
        expect(await store.loggedAmong(log, [1_000_000_000_000_007, 1_000_000_000_000_005, 1_000_000_000_000_003, 1_000_000_000_000_010])).toEqual({
          floor: 1_000_000_000_000_007,
          logged: [false, true, true, true],
        });
        expect(await store.loggedAfter(log, 1_000_000_000_000_005, 10)).toEqual([1_000_000_000_000_003, 1_000_000_000_000_010]);
        expect(await store.loggedAmong(log, [])).toEqual({ floor: 1_000_000_000_000_007, logged: [] });
      });

      test("a log lives its TTL after its last publish", async () => {
        const log = logOf(10, SHORT_TTL_MS);
        await store.publishLogged(channel("ttl"), log, [entry(5)]);
        expect(await store.loggedAfter(log, 5, 10)).toEqual([]);
        await Bun.sleep(AFTER_SHORT_TTL_MS);
        expect(await store.loggedAfter(log, 5, 10)).toBeNull();
        expect((await store.loggedAmong(log, [5])).floor).toBeNull();
        // A new log after it: a new floor.
        await store.publishLogged(channel("ttl"), log, [entry(8)]);
        expect(await store.loggedAmong(log, [5, 8])).toEqual({ floor: 7, logged: [false, true] });
      });

      test("bad arguments are refused and change nothing", async () => {
        const log = logOf();
        await expect(store.publishLogged(channel("bad"), log, [])).rejects.toThrow();
        await expect(store.publishLogged(channel("bad"), log, [entry(-1)])).rejects.toThrow();
        await expect(store.publishLogged(channel("bad"), log, [entry(1.5)])).rejects.toThrow();
        await expect(store.publishLogged(channel("bad"), { ...log, max: 0 }, [entry(1)])).rejects.toThrow();
        await expect(store.loggedAfter(log, Number.NaN, 1)).rejects.toThrow();
        await expect(store.loggedAfter(log, 1, -1)).rejects.toThrow();
        await expect(store.loggedAmong(log, [2 ** 53])).rejects.toThrow();
        expect(await store.loggedAmong(log, [1])).toEqual({ floor: null, logged: [false] });
      });
    });

    describe("lifecycle", () => {
      test("ping resolves while the store is open", async () => {
        await store.ping();
      });

      test("after close, ping rejects", async () => {
        const other = await make();
        await other.ping();
        await other.close();
        await expect(other.ping()).rejects.toThrow();
      });
    });
  });
}
