/** The rate limit: per key, per IP when unkeyed, per-account override, shared across instances. */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Platform } from "../../core/platform.ts";
import { createPublicApp } from "../app.ts";
import { seedTenant, storeKind, testPlatform } from "../../../test/support/platform.ts";
import { call } from "../../../test/support/http.ts";
import { openLiveStore } from "../../core/live/index.ts";
import type { LiveStore } from "../../core/live/live-store.ts";
import { quotaKey } from "../../core/rate-limit/rate-limit.ts";

const LIMIT = { RATE_LIMIT_REQUESTS: "3", RATE_LIMIT_WINDOW_SEC: "60" };
let a: Platform;
let b: Platform;
let secondLive: LiveStore | null = null;

beforeAll(async () => {
  a = await testPlatform({ env: LIMIT });
  // A second instance: with Redis, its own connection (as another process would have); in memory,
  // the embedded mode's single process shares one store by construction.
  if (process.env.TEST_REDIS_URL) secondLive = await openLiveStore(process.env.TEST_REDIS_URL);
  b = await testPlatform({ env: LIMIT, ...(secondLive ? { live: secondLive } : {}) });
});
afterAll(async () => {
  await a.close();
  await b.close();
  await secondLive?.close();
});

describe(`rate limit [${storeKind}]`, () => {
  test("429 after the limit, with Retry-After, RateLimit headers and the exact body", async () => {
    const app = createPublicApp(a);
    const t = await seedTenant(a);
    for (let i = 0; i < 3; i++) {
      const ok = await call(app, "GET", "/v1/whoami", { key: t.key });
      expect(ok.status).toBe(200);
      expect(ok.headers.get("ratelimit-limit")).toBe("3");
      expect(ok.headers.get("ratelimit-remaining")).toBe(String(2 - i));
      expect(Number(ok.headers.get("ratelimit-reset"))).toBeGreaterThan(0);
    }
    const limited = await call(app, "GET", "/v1/whoami", { key: t.key });
    expect(limited.status).toBe(429);
    const retry = Number(limited.headers.get("retry-after"));
    expect(retry).toBeGreaterThan(0);
    expect(retry).toBeLessThanOrEqual(60);
    expect(limited.body).toEqual({
      ok: false,
      error: "rate_limited",
      message: expect.any(String),
      hint: expect.any(String),
      retry_after_sec: retry,
    });
    expect(limited.headers.get("ratelimit-remaining")).toBe("0");
  });

  test("each key has its own window", async () => {
    const app = createPublicApp(a);
    const t1 = await seedTenant(a);
    const t2 = await seedTenant(a);
    for (let i = 0; i < 3; i++) await call(app, "GET", "/v1/whoami", { key: t1.key });
    expect((await call(app, "GET", "/v1/whoami", { key: t1.key })).status).toBe(429);
    expect((await call(app, "GET", "/v1/whoami", { key: t2.key })).status).toBe(200);
  });

  test("two instances count against one window", async () => {
    const appA = createPublicApp(a);
    const appB = createPublicApp(b);
    const t = await seedTenant(a);
    expect((await call(appA, "GET", "/v1/whoami", { key: t.key })).status).toBe(200);
    expect((await call(appB, "GET", "/v1/whoami", { key: t.key })).status).toBe(200);
    expect((await call(appA, "GET", "/v1/whoami", { key: t.key })).status).toBe(200);
    expect((await call(appB, "GET", "/v1/whoami", { key: t.key })).status).toBe(429);
    expect((await call(appA, "GET", "/v1/whoami", { key: t.key })).status).toBe(429);
  });

  test("an account override raises the limit for its keys only", async () => {
    const app = createPublicApp(a);
    const big = await seedTenant(a, { rate_limit_requests: 5 });
    for (let i = 0; i < 5; i++) expect((await call(app, "GET", "/v1/whoami", { key: big.key })).status).toBe(200);
    const sixth = await call(app, "GET", "/v1/whoami", { key: big.key });
    expect(sixth.status).toBe(429);
    expect(sixth.headers.get("ratelimit-limit")).toBe("5");
  });

  test("requests without a key count per IP, failed attempts included", async () => {
    const app = createPublicApp(a);
    // app.handle has no socket, so every in-process request comes from "unknown": start that bucket clean.
    await a.live.del(quotaKey({ kind: "ip", ip: "unknown" }));
    for (let i = 0; i < 3; i++) expect((await call(app, "GET", "/v1/whoami", { key: "sk_guess" })).status).toBe(401);
    const r = await call(app, "GET", "/v1/whoami");
    expect(r.status).toBe(429);
    expect(r.headers.get("retry-after")).toBeTruthy();
    await a.live.del(quotaKey({ kind: "ip", ip: "unknown" }));
  });

  test("the open endpoints are never rate-limited", async () => {
    const app = createPublicApp(a);
    await a.live.del(quotaKey({ kind: "ip", ip: "unknown" }));
    for (let i = 0; i < 8; i++) {
      expect((await call(app, "GET", "/v1/openapi.json")).status).toBe(200);
      expect((await call(app, "GET", "/v1")).status).toBe(200);
      expect((await call(app, "GET", "/v1/scopes")).status).toBe(200);
    }
    const idx = await call(app, "GET", "/v1");
    expect(idx.headers.get("ratelimit-limit")).toBeNull();
  });
});
