/** Quota leasing: never over the limit across instances, little under it, exact for small limits. */
import { describe, expect, test } from "bun:test";
import { createMemoryLiveStore } from "../live/memory-live-store.ts";
import type { LiveStore } from "../live/live-store.ts";
import { sharedStores, storeKind } from "../../../test/support/platform.ts";
import { createRequestQuota, leaseSize } from "./rate-limit.ts";

/** The memory store presented as a shared one, so leases are taken as they are with Redis. */
function asShared(store: LiveStore): LiveStore {
  return new Proxy(store, { get: (target, prop) => (prop === "kind" ? "redis" : Reflect.get(target, prop)) });
}

const bucket = () => ({ kind: "key" as const, accountId: `acc_${crypto.randomUUID()}`, keyId: "sk_x" });

describe(`request quota [${storeKind}]`, () => {
  test("lease size: 1 in one process and for small limits, 1% of the limit up to 1,000", () => {
    expect(leaseSize(100, "memory")).toBe(1);
    expect(leaseSize(3, "redis")).toBe(1);
    expect(leaseSize(100, "redis")).toBe(1);
    expect(leaseSize(1000, "redis")).toBe(10);
    expect(leaseSize(1e8, "redis")).toBe(1000);
  });

  test("one instance admits exactly the limit, with remaining counting down to 0", async () => {
    const live = asShared(createMemoryLiveStore());
    const quota = createRequestQuota(live, { requests: 1000, windowSec: 60 });
    const b = bucket();
    const replies = [];
    for (let i = 0; i < 1100; i++) replies.push(await quota.consume(b));
    expect(replies.filter((r) => r.allowed).length).toBe(1000);
    const remaining = replies.filter((r) => r.allowed).map((r) => r.remaining);
    expect(remaining[remaining.length - 1]).toBe(0);
    for (let i = 1; i < remaining.length; i++) expect(remaining[i]!).toBeLessThanOrEqual(remaining[i - 1]!);
    expect(replies.at(-1)).toMatchObject({ allowed: false, remaining: 0 });
    await live.close();
  });

  test("three instances on one shared window never admit more than the limit, and waste little", async () => {
    const { live: shared } = await sharedStores();
    const live = shared.kind === "redis" ? shared : asShared(shared);
    const instances = [0, 1, 2].map(() => createRequestQuota(live, { requests: 1000, windowSec: 60 }));
    const b = bucket();
    let admitted = 0;
    await Promise.all(
      instances.map(async (q, n) => {
        for (let i = 0; i < 500 + n * 50; i++) if ((await q.consume(b)).allowed) admitted++;
      }),
    );
    expect(admitted).toBeLessThanOrEqual(1000);
    // Each instance may end holding the lease it spends and the one fetched ahead.
    expect(admitted).toBeGreaterThanOrEqual(1000 - 3 * (2 * leaseSize(1000, "redis") - 1));
  });

  test("concurrent requests share one lease fetch instead of each taking a lease", async () => {
    const store = asShared(createMemoryLiveStore());
    let fetches = 0;
    const live = new Proxy(store, {
      get: (target, prop) =>
        prop === "hitWindow"
          ? (...args: Parameters<LiveStore["hitWindow"]>) => {
              fetches++;
              return target.hitWindow(...args);
            }
          : Reflect.get(target, prop),
    });
    const quota = createRequestQuota(live, { requests: 10_000, windowSec: 60 });
    const b = bucket();
    // 10 waves of 64 concurrent requests (a server with 64 connections): 640 requests, 100 per lease.
    for (let wave = 0; wave < 10; wave++) {
      const replies = await Promise.all(Array.from({ length: 64 }, () => quota.consume(b)));
      expect(replies.every((r) => r.allowed)).toBe(true);
    }
    expect(fetches).toBeGreaterThanOrEqual(7);
    expect(fetches).toBeLessThanOrEqual(13);
    await live.close();
  });

  test("a small limit is counted exactly, one request at a time in the shared window", async () => {
    const live = asShared(createMemoryLiveStore());
    const quota = createRequestQuota(live, { requests: 3, windowSec: 60 });
    const b = bucket();
    const replies = await Promise.all(Array.from({ length: 10 }, () => quota.consume(b)));
    expect(replies.filter((r) => r.allowed).length).toBe(3);
    expect(replies.filter((r) => r.allowed).map((r) => r.remaining).sort()).toEqual([0, 1, 2]);
    await live.close();
  });

  test("an account override replaces the default limit", async () => {
    const quota = createRequestQuota(createMemoryLiveStore(), { requests: 2, windowSec: 60 });
    const b = bucket();
    for (let i = 0; i < 5; i++) expect((await quota.consume(b, 5)).allowed).toBe(true);
    expect((await quota.consume(b, 5)).allowed).toBe(false);
  });

  test("a new window starts fresh", async () => {
    const quota = createRequestQuota(createMemoryLiveStore(), { requests: 2, windowSec: 1 });
    const b = bucket();
    await quota.consume(b);
    await quota.consume(b);
    expect((await quota.consume(b)).allowed).toBe(false);
    await Bun.sleep(1100);
    expect((await quota.consume(b)).allowed).toBe(true);
  });
});
