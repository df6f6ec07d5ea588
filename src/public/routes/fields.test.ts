/** /v1/fields: happy paths, errors and security. */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Platform } from "../../core/platform.ts";
import { createPublicApp } from "../app.ts";
import { identityRoutes } from "./identity.ts";
import { contactRoutes } from "./contacts.ts";
import { fieldRoutes } from "./fields.ts";
import { keyWithScopes, seedTenant, storeKind, testPlatform, type Tenant } from "../../../test/support/platform.ts";
import { call, type Json } from "../../../test/support/http.ts";

let platform: Platform;
let app: ReturnType<typeof createPublicApp>;

beforeAll(async () => {
  platform = await testPlatform();
  app = createPublicApp(platform, [identityRoutes, fieldRoutes, contactRoutes]);
});
afterAll(() => platform.close());

const TIER = { entity: "contact", key: "tier", label: "Tier", type: "select", options: ["gold", "silver"] };

async function createField(t: Tenant, body: Json = TIER): Promise<Json> {
  const r = await call(app, "POST", "/v1/fields", { key: t.key, body });
  expect(r.status).toBe(201);
  return r.body.data;
}

const detailPaths = (r: { body: Json }) => (r.body.details as Json[]).map((d) => d.path);

describe(`/v1/fields happy [${storeKind}]`, () => {
  test("create, get, list by entity, update, delete", async () => {
    const t = await seedTenant(platform);
    const f = await createField(t);
    expect(f.id).toMatch(/^fld_[0-9A-Z]{26}$/);
    expect(f).toMatchObject({ entity: "contact", key: "tier", label: "Tier", type: "select", options: ["gold", "silver"], required: 0 });
    const call1 = await createField(t, { entity: "call", key: "tier", label: "Call tier", type: "text", required: 1 });
    expect(call1).toMatchObject({ options: null, required: 1 });
    expect((await call(app, "GET", `/v1/fields/${f.id}`, { key: t.key })).body.data).toEqual(f);
    const contactOnly = await call(app, "GET", "/v1/fields?entity=contact", { key: t.key });
    expect((contactOnly.body.data as Json[]).map((x) => x.id)).toEqual([f.id]);
    expect(((await call(app, "GET", "/v1/fields", { key: t.key })).body.data as Json[]).map((x) => x.id)).toEqual([f.id, call1.id]);
    const upd = await call(app, "POST", `/v1/fields/${f.id}`, { key: t.key, body: { label: "Customer tier", options: ["gold", "silver", "bronze"], required: 1 } });
    expect(upd.status).toBe(200);
    expect(upd.body.data).toMatchObject({ key: "tier", label: "Customer tier", options: ["gold", "silver", "bronze"], required: 1, type: "select" });
    expect((await call(app, "DELETE", `/v1/fields/${f.id}`, { key: t.key })).body).toEqual({ ok: true });
    expect((await call(app, "GET", `/v1/fields/${f.id}`, { key: t.key })).status).toBe(404);
  });

  test("an unused field may change key and type; leaving select drops the options", async () => {
    const t = await seedTenant(platform);
    const f = await createField(t);
    const r = await call(app, "POST", `/v1/fields/${f.id}`, { key: t.key, body: { key: "level", type: "number" } });
    expect(r.status).toBe(200);
    expect(r.body.data).toMatchObject({ key: "level", type: "number", options: null });
    const back = await call(app, "POST", `/v1/fields/${f.id}`, { key: t.key, body: { type: "select", options: ["a"] } });
    expect(back.body.data).toMatchObject({ type: "select", options: ["a"] });
  });

  test("deleting a field removes every contact's value for it", async () => {
    const t = await seedTenant(platform);
    const f = await createField(t);
    await createField(t, { entity: "contact", key: "score", label: "Score", type: "number" });
    const c = (await call(app, "POST", "/v1/contacts", { key: t.key, body: { first_name: "A", custom: { tier: "gold", score: 1 } } })).body.data;
    expect((await call(app, "DELETE", `/v1/fields/${f.id}`, { key: t.key })).status).toBe(200);
    expect((await call(app, "GET", `/v1/contacts/${c.id}`, { key: t.key })).body.data.custom).toEqual({ score: 1 });
    // The key is free again and the contact can be edited without tripping over the old value.
    expect((await call(app, "POST", `/v1/contacts/${c.id}`, { key: t.key, body: { first_name: "B" } })).status).toBe(200);
  });

  test("pagination with limit=2 walks every field once", async () => {
    const t = await seedTenant(platform);
    const made: string[] = [];
    for (let i = 0; i < 5; i++) made.push((await createField(t, { entity: "contact", key: `f${i}`, label: `F${i}`, type: "text" })).id);
    const seen: string[] = [];
    let cursor: string | undefined;
    let pages = 0;
    do {
      const page = await call(app, "GET", `/v1/fields?limit=2${cursor ? `&cursor=${cursor}` : ""}`, { key: t.key });
      seen.push(...(page.body.data as Json[]).map((x) => x.id as string));
      cursor = page.body.next_cursor;
      pages++;
    } while (cursor);
    expect(pages).toBe(3);
    expect(seen).toEqual(made);
  });

  test("an Idempotency-Key retry of a create replays the reply without a second field", async () => {
    const t = await seedTenant(platform);
    const headers = { "idempotency-key": "field-create-1" };
    const first = await call(app, "POST", "/v1/fields", { key: t.key, body: TIER, headers });
    const again = await call(app, "POST", "/v1/fields", { key: t.key, body: TIER, headers });
    expect(first.status).toBe(201);
    expect(again.status).toBe(201);
    expect(again.headers.get("idempotency-replayed")).toBe("true");
    expect(again.body.data.id).toBe(first.body.data.id);
    expect(((await call(app, "GET", "/v1/fields", { key: t.key })).body.data as Json[]).length).toBe(1);
  });
});

describe(`/v1/fields errors [${storeKind}]`, () => {
  test("400 for every bad field on create, and nothing is written", async () => {
    const t = await seedTenant(platform);
    const base = { entity: "contact", key: "k", label: "K", type: "text" };
    const cases: Array<[Json, string]> = [
      [{ ...base, entity: "deal" }, "/entity"],
      [{ ...base, key: "Tier" }, "/key"],
      [{ ...base, key: "1tier" }, "/key"],
      [{ ...base, key: "a".repeat(41) }, "/key"],
      [{ ...base, label: "" }, "/label"],
      [{ ...base, type: "json" }, "/type"],
      [{ ...base, required: 2 }, "/required"],
      [{ ...base, required: true }, "/required"],
      [{ ...base, type: "select" }, "/options"],
      [{ ...base, type: "select", options: [] }, "/options"],
      [{ ...base, type: "select", options: ["a", "a"] }, "/options"],
      [{ ...base, type: "select", options: [""] }, "/options"],
      [{ ...base, type: "select", options: Array.from({ length: 101 }, (_, i) => `o${i}`) }, "/options"],
      [{ ...base, options: ["a"] }, "/options"],
      [{ label: "K", type: "text" }, "/entity"],
      [{ ...base, id: "fld_x" }, "/id"],
    ];
    for (const [body, path] of cases) {
      const r = await call(app, "POST", "/v1/fields", { key: t.key, body });
      expect(r.status, JSON.stringify(body)).toBe(400);
      expect(r.body.error).toBe("validation_failed");
      expect(detailPaths(r), JSON.stringify(body)).toContain(path);
    }
    expect(((await call(app, "GET", "/v1/fields", { key: t.key })).body.data as Json[]).length).toBe(0);
    expect(detailPaths(await call(app, "GET", "/v1/fields?entity=deal", { key: t.key }))).toEqual(["/query/entity"]);
  });

  test("400 for bad updates: empty body, entity, options rules", async () => {
    const t = await seedTenant(platform);
    const f = await createField(t);
    const text = await createField(t, { entity: "contact", key: "note", label: "Note", type: "text" });
    const cases: Array<[string, Json, string]> = [
      [f.id, {}, ""],
      [f.id, { entity: "call" }, "/entity"],
      [f.id, { options: null }, "/options"],
      [f.id, { type: "text", options: ["a"] }, "/options"],
      [text.id, { type: "select" }, "/options"],
      [text.id, { key: "Bad Key" }, "/key"],
    ];
    for (const [id, body, path] of cases) {
      const r = await call(app, "POST", `/v1/fields/${id}`, { key: t.key, body });
      expect(r.status, JSON.stringify(body)).toBe(400);
      expect(detailPaths(r), JSON.stringify(body)).toContain(path);
    }
    expect((await call(app, "GET", `/v1/fields/${f.id}`, { key: t.key })).body.data).toEqual(f);
  });

  test("409 for a taken key in the same entity, on create and update; other entities are separate", async () => {
    const t = await seedTenant(platform);
    await createField(t);
    const dup = await call(app, "POST", "/v1/fields", { key: t.key, body: { ...TIER, label: "Again" } });
    expect(dup.status).toBe(409);
    expect(dup.body).toMatchObject({ error: "conflict", field: "key" });
    await createField(t, { ...TIER, entity: "call" });
    const other = await createField(t, { entity: "contact", key: "level", label: "Level", type: "text" });
    const upd = await call(app, "POST", `/v1/fields/${other.id}`, { key: t.key, body: { key: "tier" } });
    expect(upd.status).toBe(409);
    expect(upd.body.field).toBe("key");
  });

  test("409 when changing the key or type of a field contacts hold values for", async () => {
    const t = await seedTenant(platform);
    const f = await createField(t);
    await call(app, "POST", "/v1/contacts", { key: t.key, body: { first_name: "A", custom: { tier: "gold" } } });
    const key = await call(app, "POST", `/v1/fields/${f.id}`, { key: t.key, body: { key: "level" } });
    expect(key.status).toBe(409);
    expect(key.body).toMatchObject({ error: "conflict", field: "key" });
    const type = await call(app, "POST", `/v1/fields/${f.id}`, { key: t.key, body: { type: "text" } });
    expect(type.status).toBe(409);
    expect(type.body.field).toBe("type");
    // Label, options and required still change; the same key or type sent again is no change.
    expect((await call(app, "POST", `/v1/fields/${f.id}`, { key: t.key, body: { label: "Level", key: "tier", type: "select" } })).status).toBe(200);
    expect((await call(app, "GET", `/v1/fields/${f.id}`, { key: t.key })).body.data).toMatchObject({ key: "tier", type: "select", label: "Level" });
  });
});

describe(`/v1/fields security [${storeKind}]`, () => {
  test("401 without a credential; 403 without the fields scope", async () => {
    const t = await seedTenant(platform);
    const f = await createField(t);
    expect((await call(app, "GET", "/v1/fields")).status).toBe(401);
    expect((await call(app, "POST", "/v1/fields", { body: TIER })).status).toBe(401);
    const other = await keyWithScopes(platform, t.accountId, ["contacts"]);
    const attempts: Array<[string, string, unknown]> = [
      ["GET", "/v1/fields", undefined],
      ["POST", "/v1/fields", TIER],
      ["GET", `/v1/fields/${f.id}`, undefined],
      ["POST", `/v1/fields/${f.id}`, { label: "X" }],
      ["DELETE", `/v1/fields/${f.id}`, undefined],
    ];
    for (const [m, p, body] of attempts) {
      const r = await call(app, m, p, { key: other, body });
      expect(r.status, `${m} ${p}`).toBe(403);
      expect(r.body.need).toBe("fields");
    }
  });

  test("another account's field is a 404 to read, update and delete, and does not validate my contacts", async () => {
    const mine = await seedTenant(platform);
    const theirs = await seedTenant(platform);
    const f = await createField(theirs, { ...TIER, required: 1 });
    expect((await call(app, "GET", `/v1/fields/${f.id}`, { key: mine.key })).status).toBe(404);
    expect((await call(app, "POST", `/v1/fields/${f.id}`, { key: mine.key, body: { label: "X" } })).status).toBe(404);
    expect((await call(app, "DELETE", `/v1/fields/${f.id}`, { key: mine.key })).status).toBe(404);
    expect((await call(app, "GET", "/v1/fields", { key: mine.key })).body.data).toEqual([]);
    // Their required field does not apply to my contacts; their key is unknown to me.
    expect((await call(app, "POST", "/v1/contacts", { key: mine.key, body: { first_name: "A" } })).status).toBe(201);
    expect((await call(app, "POST", "/v1/contacts", { key: mine.key, body: { first_name: "A", custom: { tier: "gold" } } })).status).toBe(400);
    expect((await call(app, "GET", `/v1/fields/${f.id}`, { key: theirs.key })).body.data).toEqual(f);
  });
});
