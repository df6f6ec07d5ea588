/** Credentials and scopes on the public API: 401 and 403 bodies, tokens, revocation, suspension. */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { SignJWT } from "jose";
import type { Platform } from "../../core/platform.ts";
import { createPublicApp } from "../app.ts";
import { keyWithScopes, seedConsoleUser, seedTenant, storeKind, TEST_JWT_SECRET, testPlatform, type Tenant } from "../../../test/support/platform.ts";
import { call } from "../../../test/support/http.ts";
import { login } from "../../core/auth/auth.service.ts";
import { updateAccount } from "../../core/accounts/accounts.store.ts";

let platform: Platform;
let app: ReturnType<typeof createPublicApp>;
let tenant: Tenant;

beforeAll(async () => {
  platform = await testPlatform();
  app = createPublicApp(platform);
  tenant = await seedTenant(platform);
});
afterAll(() => platform.close());

describe(`public API access [${storeKind}]`, () => {
  test("401 without a credential, with the exact body", async () => {
    const r = await call(app, "GET", "/v1/whoami");
    expect(r.status).toBe(401);
    expect(r.body.ok).toBe(false);
    expect(r.body.error).toBe("unauthorized");
    expect(typeof r.body.message).toBe("string");
    expect(Object.keys(r.body).sort()).toEqual(["error", "message", "ok"]);
  });

  test("401 for an unknown, malformed or revoked key", async () => {
    for (const key of ["sk_" + "A".repeat(48), "nonsense", "", tenant.key + "x"]) {
      const r = await call(app, "GET", "/v1/whoami", { key });
      expect(r.status).toBe(401);
      expect(r.body.error).toBe("unauthorized");
    }
    const extra = await keyWithScopes(platform, tenant.accountId, ["cdr"]);
    expect((await call(app, "GET", "/v1/whoami", { key: extra })).status).toBe(200);
    const listed = await call(app, "GET", "/v1/keys?limit=500", { key: tenant.key });
    const id = (listed.body.data as Array<{ id: string; secret_hint: string }>).find((k) => extra.endsWith(k.secret_hint))!.id;
    expect((await call(app, "DELETE", `/v1/keys/${id}`, { key: tenant.key })).status).toBe(200);
    // Revocation is immediate on this instance, even though the key was cached a moment ago.
    expect((await call(app, "GET", "/v1/whoami", { key: extra })).status).toBe(401);
  });

  test("a key's whoami says via key; a session token's says via token", async () => {
    const viaKey = await call(app, "GET", "/v1/whoami", { key: tenant.key });
    expect(viaKey.body).toEqual({ accountId: tenant.accountId, scopes: ["*"], via: "key" });
    const user = await seedConsoleUser(platform, tenant.accountId, ["account", "keys"]);
    const session = await login(platform.db, platform.tokens, user);
    const viaToken = await call(app, "GET", "/v1/whoami", { token: session.token });
    expect(viaToken.body).toEqual({ accountId: tenant.accountId, scopes: ["account", "keys"], via: "token" });
  });

  test("401 for a forged, expired or malformed bearer token", async () => {
    const forged = await new SignJWT({ acc: tenant.accountId, scopes: ["*"] })
      .setProtectedHeader({ alg: "HS256" }).setSubject("cu_x").setIssuer("parley").setExpirationTime("1h")
      .sign(new TextEncoder().encode("another-secret-another-secret-another"));
    const expired = await new SignJWT({ acc: tenant.accountId, scopes: ["*"] })
      .setProtectedHeader({ alg: "HS256" }).setSubject("cu_x").setIssuer("parley").setIssuedAt(1000).setExpirationTime(2000)
      .sign(new TextEncoder().encode(TEST_JWT_SECRET));
    const none = `${Buffer.from('{"alg":"none"}').toString("base64url")}.${Buffer.from(JSON.stringify({ acc: tenant.accountId, scopes: ["*"], iss: "parley", sub: "x", exp: 9e9 })).toString("base64url")}.`;
    for (const token of [forged, expired, none, "abc"]) {
      const r = await call(app, "GET", "/v1/whoami", { token });
      expect(r.status).toBe(401);
      expect(r.body.error).toBe("unauthorized");
    }
    const basic = await call(app, "GET", "/v1/whoami", { headers: { authorization: "Basic Zm9vOmJhcg==" } });
    expect(basic.status).toBe(401);
  });

  test("403 names the missing scope; * grants everything", async () => {
    const cdrOnly = await keyWithScopes(platform, tenant.accountId, ["cdr"]);
    const r = await call(app, "PATCH", "/v1/account", { key: cdrOnly, body: { name: "x" } });
    expect(r.status).toBe(403);
    expect(r.body).toMatchObject({ ok: false, error: "forbidden", need: "account" });
    expect((await call(app, "GET", "/v1/keys", { key: cdrOnly })).body.need).toBe("keys");
    expect((await call(app, "GET", "/v1/keys", { key: tenant.key })).status).toBe(200);
  });

  test("an unauthenticated request with a bad body gets 401, not 400", async () => {
    const r = await call(app, "PATCH", "/v1/account", { body: { status: "closed" } });
    expect(r.status).toBe(401);
  });

  test("a suspended account's key and token stop working", async () => {
    const t = await seedTenant(platform);
    const user = await seedConsoleUser(platform, t.accountId);
    const session = await login(platform.db, platform.tokens, user);
    // Used once first, so the key and its active account are cached (the path that waits for nothing).
    expect((await call(app, "GET", "/v1/whoami", { key: t.key })).status).toBe(200);
    expect((await call(app, "GET", "/v1/whoami", { key: t.key })).status).toBe(200);
    await updateAccount(platform.db, t.accountId, { status: "suspended" });
    await platform.credentials.invalidateAccount(t.accountId);
    const byKey = await call(app, "GET", "/v1/whoami", { key: t.key });
    expect(byKey.status).toBe(401);
    expect(byKey.body.message).toContain("suspended");
    // Again, now that the suspended account is the one in cache.
    expect((await call(app, "GET", "/v1/whoami", { key: t.key })).status).toBe(401);
    expect((await call(app, "GET", "/v1/whoami", { token: session.token })).status).toBe(401);
  });

  test("credentials are header-only: a key in the query string is ignored", async () => {
    const r = await call(app, "GET", `/v1/whoami?api_key=${tenant.key}&x-api-key=${tenant.key}`);
    expect(r.status).toBe(401);
  });
});
