/** POST /login on the console host. */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Platform } from "../core/platform.ts";
import { createConsoleApp } from "./app.ts";
import { createPublicApp } from "../public/app.ts";
import { seedConsoleUser, seedTenant, storeKind, TEST_JWT_SECRET, testPlatform } from "../../test/support/platform.ts";
import { call } from "../../test/support/http.ts";
import { verifyHs256 } from "../../test/support/jwt-independent.ts";
import { updateAccount } from "../core/accounts/accounts.store.ts";

let platform: Platform;
let app: ReturnType<typeof createConsoleApp>;

beforeAll(async () => {
  platform = await testPlatform();
  app = createConsoleApp(platform);
});
afterAll(() => platform.close());

describe(`POST /login [${storeKind}]`, () => {
  test("returns exactly SPEC.md's fields and a JWT another implementation verifies", async () => {
    const t = await seedTenant(platform);
    const user = await seedConsoleUser(platform, t.accountId, ["account", "cdr"]);
    const r = await call(app, "POST", "/login", { body: { email: user.email.toUpperCase(), password: user.password } });
    expect(r.status).toBe(200);
    expect(Object.keys(r.body).sort()).toEqual(["expires_in", "ok", "scopes", "token", "token_type"]);
    expect(r.body).toMatchObject({ ok: true, token_type: "Bearer", expires_in: 43200, scopes: ["account", "cdr"] });
    const claims = verifyHs256(r.body.token, TEST_JWT_SECRET);
    expect(claims.acc).toBe(t.accountId);
    expect(claims.scopes).toEqual(["account", "cdr"]);
    expect(String(claims.sub)).toMatch(/^cu_/);
    expect(Number(claims.exp) - Number(claims.iat)).toBe(43200);
    const who = await call(createPublicApp(platform), "GET", "/v1/whoami", { token: r.body.token });
    expect(who.body).toEqual({ accountId: t.accountId, scopes: ["account", "cdr"], via: "token" });
  });

  test("a wrong password and an unknown email get the same 401", async () => {
    const t = await seedTenant(platform);
    const user = await seedConsoleUser(platform, t.accountId);
    const wrong = await call(app, "POST", "/login", { body: { email: user.email, password: "not it at all" } });
    // An address of its own: failures per address are counted in the live store, which outlives a run
    // (a fixed one reached the 429 threshold after ten runs within the window).
    const unknown = await call(app, "POST", "/login", { body: { email: `nobody-${crypto.randomUUID().slice(0, 8)}@example.test`, password: "whatever123" } });
    expect(wrong.status).toBe(401);
    expect(unknown.status).toBe(401);
    expect(wrong.body).toEqual(unknown.body);
    expect(wrong.body.error).toBe("unauthorized");
  });

  test("a suspended account cannot log in", async () => {
    const t = await seedTenant(platform);
    const user = await seedConsoleUser(platform, t.accountId);
    await updateAccount(platform.db, t.accountId, { status: "suspended" });
    expect((await call(app, "POST", "/login", { body: user })).status).toBe(401);
  });

  test("400 for missing or extra fields, 415 for a form body", async () => {
    for (const body of [{}, { email: "a@b.c" }, { email: "a@b.c", password: "x", remember: true }, { email: 5, password: "x" }]) {
      const r = await call(app, "POST", "/login", { body });
      expect(r.status).toBe(400);
      expect(r.body.error).toBe("validation_failed");
    }
    const form = await call(app, "POST", "/login", { body: "email=a&password=b", headers: { "content-type": "application/x-www-form-urlencoded" } });
    expect(form.status).toBe(415);
  });

  test("repeated failures for one email are throttled with 429", async () => {
    const t = await seedTenant(platform);
    const user = await seedConsoleUser(platform, t.accountId);
    // app.handle has no socket: every in-process request shares the "unknown" address bucket.
    await platform.live.del("{ip:unknown}:login-fail");
    for (let i = 0; i < 10; i++) expect((await call(app, "POST", "/login", { body: { email: user.email, password: `wrong-${i}` } })).status).toBe(401);
    const r = await call(app, "POST", "/login", { body: user });
    expect(r.status).toBe(429);
    expect(r.body.error).toBe("rate_limited");
    expect(Number(r.headers.get("retry-after"))).toBeGreaterThan(0);
    // The in-process "unknown" address bucket was filled too: clear it for other tests.
    await platform.live.del("{ip:unknown}:login-fail");
  });

  test("CORS: a browser on another origin may call /login, with header credentials only", async () => {
    const pre = await call(app, "OPTIONS", "/login", {
      headers: { origin: "https://app.example", "access-control-request-method": "POST", "access-control-request-headers": "content-type" },
    });
    expect(pre.status).toBe(204);
    expect(pre.headers.get("access-control-allow-origin")).toBe("*");
    expect(pre.headers.get("access-control-allow-methods")).toContain("POST");
    expect(pre.headers.get("access-control-allow-credentials")).toBeNull();
  });

  test("serves the console page", async () => {
    const r = await call(app, "GET", "/config.json");
    expect(r.body.publicUrl).toBe(platform.config.urls.public);
  });
});
