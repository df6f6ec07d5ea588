/** Idempotency-Key on POST, PATCH and DELETE. */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Platform } from "../../core/platform.ts";
import { createPublicApp } from "../app.ts";
import { seedTenant, storeKind, testPlatform } from "../../../test/support/platform.ts";
import { call } from "../../../test/support/http.ts";
import { isIdempotencyHook } from "./api-access.ts";
import { sql } from "drizzle-orm";
import { rawRows } from "../../core/db/migrate.ts";

let platform: Platform;
let app: ReturnType<typeof createPublicApp>;

beforeAll(async () => {
  platform = await testPlatform();
  app = createPublicApp(platform);
});
afterAll(() => platform.close());

const countKeys = async (key: string) => ((await call(app, "GET", "/v1/keys?limit=500", { key })).body.data as unknown[]).length;

describe(`Idempotency-Key [${storeKind}]`, () => {
  test("a retry replays the stored reply, marked, without doing the work again", async () => {
    const t = await seedTenant(platform);
    const headers = { "idempotency-key": "create-key-1" };
    const first = await call(app, "POST", "/v1/keys", { key: t.key, body: { label: "ci" }, headers });
    expect(first.status).toBe(201);
    expect(first.headers.get("idempotency-replayed")).toBeNull();
    const again = await call(app, "POST", "/v1/keys", { key: t.key, body: { label: "ci" }, headers });
    expect(again.status).toBe(201);
    expect(again.headers.get("idempotency-replayed")).toBe("true");
    expect(again.text).toBe(first.text);
    // The replay is the same reply, headers included: the content type with its charset.
    expect(again.headers.get("content-type")).toBe(first.headers.get("content-type"));
    expect(await countKeys(t.key)).toBe(2); // the seed key and exactly one new key
  });

  test("a stored reply is sealed: a minted key's secret is never in the idempotency table", async () => {
    const t = await seedTenant(platform);
    const headers = { "idempotency-key": "sealed-1" };
    const first = await call(app, "POST", "/v1/keys", { key: t.key, body: { label: "sealed" }, headers });
    const secret: string = first.body.data.secret;
    const rows = await rawRows<{ body: string; request_hash: string }>(
      platform.db,
      sql`select body, request_hash from idempotency_key where account_id = ${t.accountId} and key = 'sealed-1'`,
    );
    expect(rows).toHaveLength(1);
    expect(rows[0]!.body).not.toContain(secret);
    expect(rows[0]!.body).not.toContain(secret.slice(3, 20));
    expect(rows[0]!.body).not.toContain("sealed");
    const replay = await call(app, "POST", "/v1/keys", { key: t.key, body: { label: "sealed" }, headers });
    expect(replay.body.data.secret).toBe(secret);
  });

  test("the same key with a different body is refused with 422 and changes nothing", async () => {
    const t = await seedTenant(platform);
    const headers = { "idempotency-key": "k-422" };
    expect((await call(app, "POST", "/v1/keys", { key: t.key, body: { label: "a" }, headers })).status).toBe(201);
    const other = await call(app, "POST", "/v1/keys", { key: t.key, body: { label: "b" }, headers });
    expect(other.status).toBe(422);
    expect(other.body.error).toBe("idempotency_key_reused");
    expect(await countKeys(t.key)).toBe(2);
  });

  test("concurrent duplicates: one runs, the rest get 409 or the replay, never a second key", async () => {
    const t = await seedTenant(platform);
    const headers = { "idempotency-key": "burst-1" };
    const replies = await Promise.all(
      Array.from({ length: 8 }, () => call(app, "POST", "/v1/keys", { key: t.key, body: { label: "burst" }, headers })),
    );
    const created = replies.filter((r) => r.status === 201 && r.headers.get("idempotency-replayed") !== "true");
    expect(created.length).toBe(1);
    for (const r of replies) {
      expect([201, 409]).toContain(r.status);
      if (r.status === 409) expect(r.body.error).toBe("conflict");
      if (r.status === 201) expect(r.body.data.id).toBe(created[0]!.body.data.id);
    }
    expect(await countKeys(t.key)).toBe(2);
  });

  test("a refused request is stored too: its retry gets the same refusal", async () => {
    const t = await seedTenant(platform);
    const headers = { "idempotency-key": "gone-key" };
    const first = await call(app, "DELETE", "/v1/keys/sk_01JZZZZZZZZZZZZZZZZZZZZZZZ", { key: t.key, headers });
    expect(first.status).toBe(404);
    const again = await call(app, "DELETE", "/v1/keys/sk_01JZZZZZZZZZZZZZZZZZZZZZZZ", { key: t.key, headers });
    expect(again.status).toBe(404);
    expect(again.headers.get("idempotency-replayed")).toBe("true");
  });

  test("a request the route finds malformed (400) stores nothing: the corrected request may use the same key", async () => {
    const t = await seedTenant(platform);
    const headers = { "idempotency-key": "bad-scope" };
    const first = await call(app, "POST", "/v1/keys", { key: t.key, body: { label: "k", scopes: ["no_such_scope"] }, headers });
    expect(first.status).toBe(400);
    expect(first.body.error).toBe("validation_failed");
    const again = await call(app, "POST", "/v1/keys", { key: t.key, body: { label: "k", scopes: ["no_such_scope"] }, headers });
    expect(again.status).toBe(400);
    expect(again.headers.get("idempotency-replayed")).toBeNull();
    const corrected = await call(app, "POST", "/v1/keys", { key: t.key, body: { label: "k", scopes: ["cdr"] }, headers });
    expect(corrected.status).toBe(201);
    const replay = await call(app, "POST", "/v1/keys", { key: t.key, body: { label: "k", scopes: ["cdr"] }, headers });
    expect(replay.headers.get("idempotency-replayed")).toBe("true");
    expect(replay.body.data.id).toBe(corrected.body.data.id);
  });

  test("keys are scoped to the account: another account's identical key runs independently", async () => {
    const t1 = await seedTenant(platform);
    const t2 = await seedTenant(platform);
    const headers = { "idempotency-key": "shared-name" };
    const r1 = await call(app, "POST", "/v1/keys", { key: t1.key, body: { label: "x" }, headers });
    const r2 = await call(app, "POST", "/v1/keys", { key: t2.key, body: { label: "x" }, headers });
    expect(r1.status).toBe(201);
    expect(r2.status).toBe(201);
    expect(r2.headers.get("idempotency-replayed")).toBeNull();
    expect(r2.body.data.id).not.toBe(r1.body.data.id);
  });

  test("a stored reply goes back only to the credential that made it: another key of the account gets 422", async () => {
    const t = await seedTenant(platform);
    const other = await call(app, "POST", "/v1/keys", { key: t.key, body: { label: "second" } });
    expect(other.status).toBe(201);
    const secondKey: string = other.body.data.secret;
    const headers = { "idempotency-key": "minted-by-first" };
    const first = await call(app, "POST", "/v1/keys", { key: t.key, body: { label: "minted" }, headers });
    expect(first.status).toBe(201);
    const minted: string = first.body.data.secret;
    // The same key and request from another credential is not a retry of the first: the minted secret stays with it.
    const replay = await call(app, "POST", "/v1/keys", { key: secondKey, body: { label: "minted" }, headers });
    expect(replay.status).toBe(422);
    expect(replay.body.error).toBe("idempotency_key_reused");
    expect(replay.text).not.toContain(minted);
    expect(await countKeys(t.key)).toBe(3);
    // The credential that made it still gets its reply.
    const again = await call(app, "POST", "/v1/keys", { key: t.key, body: { label: "minted" }, headers });
    expect(again.headers.get("idempotency-replayed")).toBe("true");
    expect(again.body.data.secret).toBe(minted);
  });

  test("PATCH and DELETE honour the key as well", async () => {
    const t = await seedTenant(platform);
    const h = { "idempotency-key": "patch-1" };
    const p1 = await call(app, "PATCH", "/v1/account", { key: t.key, body: { name: "One" }, headers: h });
    const p2 = await call(app, "PATCH", "/v1/account", { key: t.key, body: { name: "One" }, headers: h });
    expect(p2.headers.get("idempotency-replayed")).toBe("true");
    expect(p2.text).toBe(p1.text);
    const created = await call(app, "POST", "/v1/keys", { key: t.key, body: {} });
    const d = { "idempotency-key": "delete-1" };
    expect((await call(app, "DELETE", `/v1/keys/${created.body.data.id}`, { key: t.key, headers: d })).status).toBe(200);
    const replay = await call(app, "DELETE", `/v1/keys/${created.body.data.id}`, { key: t.key, headers: d });
    expect(replay.status).toBe(200);
    expect(replay.headers.get("idempotency-replayed")).toBe("true");
    // Without the key, deleting again is an honest 404.
    expect((await call(app, "DELETE", `/v1/keys/${created.body.data.id}`, { key: t.key })).status).toBe(404);
  });

  test("a malformed key is a 400", async () => {
    const t = await seedTenant(platform);
    const r = await call(app, "POST", "/v1/keys", { key: t.key, body: {}, headers: { "idempotency-key": "has space" } });
    expect(r.status).toBe(400);
    expect(r.body.details[0].path).toBe("/headers/idempotency-key");
    for (const bad of ["k".repeat(256), "caf\u00e9", "tab\tkey"]) {
      const refused = await call(app, "POST", "/v1/keys", { key: t.key, body: { label: "x" }, headers: { "idempotency-key": bad } });
      expect(refused.status, bad).toBe(400);
    }
    expect(await countKeys(t.key)).toBe(1);
    // The longest key there is, of every printable character.
    const longest = ("!~" + "a".repeat(253)).slice(0, 255);
    expect((await call(app, "POST", "/v1/keys", { key: t.key, body: { label: "x" }, headers: { "idempotency-key": longest } })).status).toBe(201);
  });
});

describe("every write route supports Idempotency-Key", () => {
  test("each POST, PATCH and DELETE under /v1 with a credential carries the idempotency hooks", () => {
    const writes = app.routes.filter((r) => ["POST", "PATCH", "DELETE", "PUT"].includes(r.method) && r.path.startsWith("/v1"));
    expect(writes.length).toBeGreaterThan(0);
    const missing = writes.filter((r) => !((r.hooks as { afterHandle?: unknown[] }).afterHandle ?? []).some(isIdempotencyHook));
    expect(missing.map((r) => `${r.method} ${r.path}`)).toEqual([]);
    const reads = app.routes.filter((r) => r.method === "GET" && r.path.startsWith("/v1"));
    for (const r of reads) expect(((r.hooks as { afterHandle?: unknown[] }).afterHandle ?? []).some(isIdempotencyHook)).toBe(false);
  });
});
