/** /v1/keys: happy paths, errors and security. */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { sql } from "drizzle-orm";
import type { Platform } from "../../core/platform.ts";
import { createPublicApp } from "../app.ts";
import { keyWithScopes, seedTenant, storeKind, testPlatform } from "../../../test/support/platform.ts";
import { call, type Json } from "../../../test/support/http.ts";
import { rawRows } from "../../core/db/migrate.ts";

let platform: Platform;
let app: ReturnType<typeof createPublicApp>;

beforeAll(async () => {
  platform = await testPlatform();
  app = createPublicApp(platform);
});
afterAll(() => platform.close());

describe(`/v1/keys happy [${storeKind}]`, () => {
  test("mint shows the secret once; the list never does; the secret works", async () => {
    const t = await seedTenant(platform);
    const created = await call(app, "POST", "/v1/keys", { key: t.key, body: { label: "billing sync", scopes: ["cdr", "usage"] } });
    expect(created.status).toBe(201);
    const data = created.body.data;
    expect(data.secret).toMatch(/^sk_[0-9A-Za-z]{48}$/);
    expect(data.id).toMatch(/^sk_[0-9A-Z]{26}$/);
    expect(data).toMatchObject({ label: "billing sync", scopes: ["cdr", "usage"], secret_hint: data.secret.slice(-4) });
    const list = await call(app, "GET", "/v1/keys", { key: t.key });
    expect(list.text).not.toContain(data.secret);
    expect((list.body.data as Json[]).map((k) => k.id)).toContain(data.id);
    for (const k of list.body.data as Json[]) expect(Object.keys(k).sort()).toEqual(["created_at", "id", "label", "scopes", "secret_hint"]);
    const who = await call(app, "GET", "/v1/whoami", { key: data.secret });
    expect(who.body).toEqual({ accountId: t.accountId, scopes: ["cdr", "usage"], via: "key" });
  });

  test("only a hash of the secret is stored", async () => {
    const t = await seedTenant(platform);
    const created = await call(app, "POST", "/v1/keys", { key: t.key, body: {} });
    const secret: string = created.body.data.secret;
    const rows = await rawRows<Record<string, unknown>>(platform.db, sql`select * from api_key_lookup join api_key on api_key.id = api_key_lookup.key_id where api_key.id = ${created.body.data.id}`);
    expect(rows.length).toBe(1);
    expect(JSON.stringify(rows)).not.toContain(secret);
    expect(JSON.stringify(rows)).not.toContain(secret.slice(3));
  });

  test("scopes default to the minting credential's own", async () => {
    const t = await seedTenant(platform);
    const limited = await keyWithScopes(platform, t.accountId, ["keys", "cdr"]);
    const created = await call(app, "POST", "/v1/keys", { key: limited, body: {} });
    expect(created.body.data.scopes).toEqual(["keys", "cdr"]);
  });

  test("pagination walks every key exactly once", async () => {
    const t = await seedTenant(platform);
    for (let i = 0; i < 6; i++) await call(app, "POST", "/v1/keys", { key: t.key, body: { label: `k${i}` } });
    const seen: string[] = [];
    let cursor: string | undefined;
    let pages = 0;
    do {
      const page = await call(app, "GET", `/v1/keys?limit=3${cursor ? `&cursor=${cursor}` : ""}`, { key: t.key });
      expect(page.status).toBe(200);
      seen.push(...(page.body.data as Json[]).map((k) => k.id as string));
      cursor = page.body.next_cursor;
      pages++;
    } while (cursor);
    expect(pages).toBe(3);
    expect(seen.length).toBe(7);
    expect(new Set(seen).size).toBe(7);
    expect([...seen].sort()).toEqual(seen);
  });

  test("revoke by path or by body; the key stops working and leaves the list", async () => {
    const t = await seedTenant(platform);
    const k1 = (await call(app, "POST", "/v1/keys", { key: t.key, body: {} })).body.data;
    const k2 = (await call(app, "POST", "/v1/keys", { key: t.key, body: {} })).body.data;
    expect((await call(app, "GET", "/v1/whoami", { key: k1.secret })).status).toBe(200);
    expect((await call(app, "DELETE", `/v1/keys/${k1.id}`, { key: t.key })).body).toEqual({ ok: true });
    expect((await call(app, "DELETE", "/v1/keys", { key: t.key, body: { id: k2.id } })).body).toEqual({ ok: true });
    expect((await call(app, "GET", "/v1/whoami", { key: k1.secret })).status).toBe(401);
    expect((await call(app, "GET", "/v1/whoami", { key: k2.secret })).status).toBe(401);
    const ids = ((await call(app, "GET", "/v1/keys", { key: t.key })).body.data as Json[]).map((k) => k.id);
    expect(ids).not.toContain(k1.id);
    expect(ids).not.toContain(k2.id);
  });
});

describe(`/v1/keys errors [${storeKind}]`, () => {
  test("400 for unknown scopes, bad labels, unknown fields, bad cursors and limits", async () => {
    const t = await seedTenant(platform);
    const cases: Array<[unknown, string]> = [
      [{ scopes: ["nope"] }, "/scopes"],
      [{ scopes: [] }, "/scopes"],
      [{ label: "" }, "/label"],
      [{ label: 5 }, "/label"],
      [{ secret: "sk_mine" }, "/secret"],
    ];
    for (const [body, path] of cases) {
      const r = await call(app, "POST", "/v1/keys", { key: t.key, body });
      expect(r.status).toBe(400);
      expect(r.body.error).toBe("validation_failed");
      expect((r.body.details as Json[]).map((d) => d.path)).toContain(path);
    }
    expect((await call(app, "GET", "/v1/keys?cursor=garbage", { key: t.key })).status).toBe(400);
    expect((await call(app, "GET", "/v1/keys?limit=0", { key: t.key })).body.details).toEqual([{ path: "/query/limit", message: "Expected integer to be greater or equal to 1" }]);
    expect((await call(app, "GET", "/v1/keys?limit=abc", { key: t.key })).body.details).toEqual([{ path: "/query/limit", message: "Expected integer." }]);
    expect((await call(app, "GET", "/v1/keys?limit=501", { key: t.key })).status).toBe(400);
    expect(((await call(app, "GET", "/v1/keys", { key: t.key })).body.data as Json[]).length).toBe(1);
  });

  test("400 for malformed JSON, 415 for another media type", async () => {
    const t = await seedTenant(platform);
    const bad = await call(app, "POST", "/v1/keys", { key: t.key, body: "{not json" });
    expect(bad.status).toBe(400);
    expect(bad.body.error).toBe("validation_failed");
    const form = await call(app, "POST", "/v1/keys", { key: t.key, body: "label=x", headers: { "content-type": "application/x-www-form-urlencoded" } });
    expect(form.status).toBe(415);
    expect(form.body.error).toBe("unsupported_media_type");
  });

  test("404 for revoking an unknown or already revoked key", async () => {
    const t = await seedTenant(platform);
    expect((await call(app, "DELETE", "/v1/keys/sk_01M00000000000000000000000", { key: t.key })).body.error).toBe("not_found");
    const k = (await call(app, "POST", "/v1/keys", { key: t.key, body: {} })).body.data;
    expect((await call(app, "DELETE", `/v1/keys/${k.id}`, { key: t.key })).status).toBe(200);
    expect((await call(app, "DELETE", `/v1/keys/${k.id}`, { key: t.key })).status).toBe(404);
  });
});

describe(`/v1/keys security [${storeKind}]`, () => {
  test("401 without a credential; 403 without the keys scope", async () => {
    const t = await seedTenant(platform);
    expect((await call(app, "GET", "/v1/keys")).status).toBe(401);
    const cdr = await keyWithScopes(platform, t.accountId, ["cdr"]);
    for (const [m, p, body] of [["GET", "/v1/keys", undefined], ["POST", "/v1/keys", {}], ["DELETE", "/v1/keys", { id: t.keyId }]] as const) {
      const r = await call(app, m, p, { key: cdr, body });
      expect(r.status).toBe(403);
      expect(r.body.need).toBe("keys");
    }
  });

  test("a credential cannot grant a scope it does not hold", async () => {
    const t = await seedTenant(platform);
    const limited = await keyWithScopes(platform, t.accountId, ["keys"]);
    for (const scopes of [["*"], ["keys", "cdr"]]) {
      const r = await call(app, "POST", "/v1/keys", { key: limited, body: { scopes } });
      expect(r.status).toBe(403);
      expect(r.body.error).toBe("forbidden");
    }
  });

  test("another account's key is a 404 to revoke and absent from the list", async () => {
    const mine = await seedTenant(platform);
    const theirs = await seedTenant(platform);
    const r = await call(app, "DELETE", `/v1/keys/${theirs.keyId}`, { key: mine.key });
    expect(r.status).toBe(404);
    expect((await call(app, "GET", "/v1/whoami", { key: theirs.key })).status).toBe(200);
    const ids = ((await call(app, "GET", "/v1/keys", { key: mine.key })).body.data as Json[]).map((k) => k.id);
    expect(ids).not.toContain(theirs.keyId);
  });
});
