/** /v1/contacts and /v1/directory: happy paths, errors and security. */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { sql } from "drizzle-orm";
import type { Platform } from "../../core/platform.ts";
import { createPublicApp } from "../app.ts";
import { identityRoutes } from "./identity.ts";
import { contactRoutes } from "./contacts.ts";
import { fieldRoutes } from "./fields.ts";
import { keyWithScopes, seedTenant, storeKind, testPlatform, type Tenant } from "../../../test/support/platform.ts";
import { call, type Json } from "../../../test/support/http.ts";
import { rawRows } from "../../core/db/migrate.ts";
import { newId } from "../../core/ids/ids.ts";
import { nowSeconds } from "../../core/db/columns.ts";

let platform: Platform;
let app: ReturnType<typeof createPublicApp>;

beforeAll(async () => {
  platform = await testPlatform();
  app = createPublicApp(platform, [identityRoutes, contactRoutes, fieldRoutes]);
});
afterAll(() => platform.close());

const ADA = { first_name: "Ada", last_name: "Lovelace", phones: [{ label: "mobile", e164: "+1 (415) 555-0123" }] };

async function createContact(t: Tenant, body: Json = ADA): Promise<Json> {
  const r = await call(app, "POST", "/v1/contacts", { key: t.key, body });
  expect(r.status).toBe(201);
  return r.body.data;
}

async function addField(t: Tenant, body: Json): Promise<Json> {
  const r = await call(app, "POST", "/v1/fields", { key: t.key, body: { entity: "contact", label: body.key, ...body } });
  expect(r.status).toBe(201);
  return r.body.data;
}

/** A row in the users capability's table, with just the columns the directory reads. */
async function insertUser(accountId: string, username: string, displayName: string, options: { status?: string; is_agent?: number } = {}): Promise<string> {
  const id = newId("us");
  const now = nowSeconds();
  await platform.db.execute(
    sql`insert into app_user (account_id, id, username, display_name, is_agent, status, created_at, updated_at)
        values (${accountId}, ${id}, ${username}, ${displayName}, ${options.is_agent ?? 0}, ${options.status ?? "active"}, ${now}, ${now})`,
  );
  return id;
}

const detailPaths = (r: { body: Json }) => (r.body.details as Json[]).map((d) => d.path);

describe(`/v1/contacts happy [${storeKind}]`, () => {
  test("create normalizes numbers, derives the display name, and reads back the same", async () => {
    const t = await seedTenant(platform);
    await addField(t, { key: "tier", type: "select", options: ["gold", "silver"] });
    const c = await createContact(t, { ...ADA, tags: ["vip", "vip", "emea"], custom: { tier: "gold" }, external_id: "crm-1", notes: "Met at the expo." });
    expect(c.id).toMatch(/^ct_[0-9A-Z]{26}$/);
    expect(c).toMatchObject({
      first_name: "Ada",
      last_name: "Lovelace",
      display_name: "Ada Lovelace",
      company: null,
      email: null,
      phones: [{ label: "mobile", e164: "14155550123" }],
      tags: ["vip", "emea"],
      external_id: "crm-1",
      notes: "Met at the expo.",
      custom: { tier: "gold" },
    });
    const got = await call(app, "GET", `/v1/contacts/${c.id}`, { key: t.key });
    expect(got.status).toBe(200);
    expect(got.body.data).toEqual(c);
  });

  test("display name falls back to company, email, then number; an explicit one is kept", async () => {
    const t = await seedTenant(platform);
    expect((await createContact(t, { company: "Acme" })).display_name).toBe("Acme");
    expect((await createContact(t, { email: "a@b.example" })).display_name).toBe("a@b.example");
    expect((await createContact(t, { phones: [{ e164: "442079460000" }] })).display_name).toBe("+442079460000");
    const named = await createContact(t, { ...ADA, display_name: "Countess" });
    expect(named.display_name).toBe("Countess");
    expect(named.phones[0].label).toBe("mobile");
    expect((await createContact(t, { phones: [{ e164: "442079460001" }] })).phones[0].label).toBe("other");
  });

  test("reverse lookup by number in any typed form, and q, tag, external_id filters", async () => {
    const t = await seedTenant(platform);
    const ada = await createContact(t, { ...ADA, tags: ["vip"], external_id: "crm-ada", company: "Analytical Engines" });
    const bob = await createContact(t, { first_name: "Bob", phones: [{ e164: "+44 20 7946 0000" }, { label: "work", e164: "14155550123" }] });
    const eve = await createContact(t, { first_name: "Eve", last_name: "Adams", phones: [{ e164: "+49 30 1234567" }] });
    const ids = async (q: string) => ((await call(app, "GET", `/v1/contacts?${q}`, { key: t.key })).body.data as Json[]).map((c) => c.id);
    expect(await ids("phone=%2B1%20415%20555%200123")).toEqual([ada.id, bob.id]);
    expect(await ids("phone=00442079460000")).toEqual([bob.id]);
    expect(await ids("phone=14155550199")).toEqual([]);
    expect(await ids("q=ad")).toEqual([ada.id, eve.id]);
    expect(await ids("q=ANALYT")).toEqual([ada.id]);
    expect(await ids("q=b")).toEqual([bob.id]);
    expect(await ids("q=%25")).toEqual([]);
    expect(await ids("tag=vip")).toEqual([ada.id]);
    expect(await ids("external_id=crm-ada")).toEqual([ada.id]);
    expect(await ids("q=ad&tag=vip")).toEqual([ada.id]);
  });

  test("update changes only sent fields: phones and tags as sets, custom merged, derived name follows", async () => {
    const t = await seedTenant(platform);
    await addField(t, { key: "tier", type: "select", options: ["gold", "silver"] });
    await addField(t, { key: "score", type: "number" });
    const c = await createContact(t, { ...ADA, tags: ["a"], custom: { tier: "gold", score: 3 } });
    const r = await call(app, "POST", `/v1/contacts/${c.id}`, {
      key: t.key,
      body: { last_name: "King", phones: [{ label: "work", e164: "+44 20 7946 0000" }], custom: { tier: null, score: 4.5 } },
    });
    expect(r.status).toBe(200);
    expect(r.body.data).toMatchObject({
      first_name: "Ada",
      last_name: "King",
      display_name: "Ada King",
      phones: [{ label: "work", e164: "442079460000" }],
      tags: ["a"],
      custom: { score: 4.5 },
    });
    // The old number left the reverse lookup; the new one is in it.
    expect((await call(app, "GET", "/v1/contacts?phone=14155550123", { key: t.key })).body.data).toEqual([]);
    expect(((await call(app, "GET", "/v1/contacts?phone=442079460000", { key: t.key })).body.data as Json[]).map((x) => x.id)).toEqual([c.id]);
    // An explicit display name sticks through name changes until reset with null.
    await call(app, "POST", `/v1/contacts/${c.id}`, { key: t.key, body: { display_name: "The Countess" } });
    const renamed = await call(app, "POST", `/v1/contacts/${c.id}`, { key: t.key, body: { first_name: "Augusta", tags: [] } });
    expect(renamed.body.data).toMatchObject({ display_name: "The Countess", tags: [] });
    const reset = await call(app, "POST", `/v1/contacts/${c.id}`, { key: t.key, body: { display_name: null } });
    expect(reset.body.data.display_name).toBe("Augusta King");
    expect(reset.body.data.updated_at).toBeGreaterThanOrEqual(c.updated_at);
  });

  test("delete removes the contact and its numbers from the lookup", async () => {
    const t = await seedTenant(platform);
    const c = await createContact(t);
    expect((await call(app, "DELETE", `/v1/contacts/${c.id}`, { key: t.key })).body).toEqual({ ok: true });
    expect((await call(app, "GET", `/v1/contacts/${c.id}`, { key: t.key })).status).toBe(404);
    const rows = await rawRows<Json>(platform.db, sql`select * from contact_phone where account_id = ${t.accountId}`);
    expect(rows).toEqual([]);
    expect((await call(app, "DELETE", `/v1/contacts/${c.id}`, { key: t.key })).status).toBe(404);
  });

  test("pagination with limit=2 walks every contact once, in creation order", async () => {
    const t = await seedTenant(platform);
    const made: string[] = [];
    for (let i = 0; i < 5; i++) made.push((await createContact(t, { first_name: `P${i}` })).id);
    const seen: string[] = [];
    let cursor: string | undefined;
    let pages = 0;
    do {
      const page = await call(app, "GET", `/v1/contacts?limit=2${cursor ? `&cursor=${cursor}` : ""}`, { key: t.key });
      expect(page.status).toBe(200);
      seen.push(...(page.body.data as Json[]).map((c) => c.id as string));
      cursor = page.body.next_cursor;
      pages++;
    } while (cursor);
    expect(pages).toBe(3);
    expect(seen).toEqual(made);
  });

  test("an Idempotency-Key retry of a create replays the reply without a second contact", async () => {
    const t = await seedTenant(platform);
    const headers = { "idempotency-key": "contact-create-1" };
    const first = await call(app, "POST", "/v1/contacts", { key: t.key, body: ADA, headers });
    const again = await call(app, "POST", "/v1/contacts", { key: t.key, body: ADA, headers });
    expect(first.status).toBe(201);
    expect(again.status).toBe(201);
    expect(again.headers.get("idempotency-replayed")).toBe("true");
    expect(again.body.data.id).toBe(first.body.data.id);
    expect(((await call(app, "GET", "/v1/contacts", { key: t.key })).body.data as Json[]).length).toBe(1);
  });
});

describe(`/v1/contacts errors [${storeKind}]`, () => {
  test("400 for every bad field, with its path, and nothing is written", async () => {
    const t = await seedTenant(platform);
    const cases: Array<[Json, string]> = [
      [{}, "/display_name"],
      [{ first_name: "" }, "/first_name"],
      [{ first_name: 5 }, "/first_name"],
      [{ last_name: "x".repeat(101) }, "/last_name"],
      [{ display_name: "" }, "/display_name"],
      [{ company: "x".repeat(201) }, "/company"],
      [{ email: "not-an-email" }, "/email"],
      [{ phones: [{ e164: "12" }] }, "/phones/0/e164"],
      [{ phones: [{ e164: "abc" }] }, "/phones/0/e164"],
      [{ phones: [{ e164: "+1 415 555 0123" }, { e164: "14155550123" }] }, "/phones/1/e164"],
      [{ phones: [{ label: "pager", e164: "14155550123" }] }, "/phones/0/label"],
      [{ phones: Array.from({ length: 11 }, (_, i) => ({ e164: `1415555${String(i).padStart(4, "0")}` })) }, "/phones"],
      [{ first_name: "x", tags: [""] }, "/tags/0"],
      [{ first_name: "x", tags: Array.from({ length: 51 }, (_, i) => `t${i}`) }, "/tags"],
      [{ first_name: "x", external_id: "" }, "/external_id"],
      [{ first_name: "x", notes: "x".repeat(4001) }, "/notes"],
      [{ first_name: "x", custom: { nope: "1" } }, "/custom/nope"],
      [{ first_name: "x", custom: [] }, "/custom"],
      [{ first_name: "x", id: "ct_mine" }, "/id"],
    ];
    for (const [body, path] of cases) {
      const r = await call(app, "POST", "/v1/contacts", { key: t.key, body });
      expect(r.status, JSON.stringify(body)).toBe(400);
      expect(r.body.error).toBe("validation_failed");
      expect(detailPaths(r), JSON.stringify(body)).toContain(path);
    }
    expect(((await call(app, "GET", "/v1/contacts", { key: t.key })).body.data as Json[]).length).toBe(0);
  });

  test("custom values are checked against the account's contact fields", async () => {
    const t = await seedTenant(platform);
    await addField(t, { key: "tier", type: "select", options: ["gold"] });
    await addField(t, { key: "score", type: "number" });
    await addField(t, { key: "vip", type: "boolean" });
    await addField(t, { key: "since", type: "date" });
    await addField(t, { key: "account_no", type: "text", required: 1 });
    await call(app, "POST", "/v1/fields", { key: t.key, body: { entity: "call", key: "outcome", label: "Outcome", type: "text" } });
    const r = await call(app, "POST", "/v1/contacts", {
      key: t.key,
      body: { first_name: "x", custom: { tier: "bronze", score: "3", vip: 2, since: "2025-02-30", outcome: "sale" } },
    });
    expect(r.status).toBe(400);
    expect(detailPaths(r).sort()).toEqual(["/custom/account_no", "/custom/outcome", "/custom/score", "/custom/since", "/custom/tier", "/custom/vip"]);
    const ok = await call(app, "POST", "/v1/contacts", {
      key: t.key,
      body: { first_name: "x", custom: { tier: "gold", score: 3, vip: 1, since: "2024-02-29", account_no: "A-1" } },
    });
    expect(ok.status).toBe(201);
    // A required value cannot be removed; other values can.
    const removeRequired = await call(app, "POST", `/v1/contacts/${ok.body.data.id}`, { key: t.key, body: { custom: { account_no: null } } });
    expect(removeRequired.status).toBe(400);
    expect(detailPaths(removeRequired)).toEqual(["/custom/account_no"]);
    const wrongType = await call(app, "POST", `/v1/contacts/${ok.body.data.id}`, { key: t.key, body: { custom: { vip: 3, tier: null } } });
    expect(detailPaths(wrongType)).toEqual(["/custom/vip"]);
    expect((await call(app, "GET", `/v1/contacts/${ok.body.data.id}`, { key: t.key })).body.data.custom.tier).toBe("gold");
  });

  test("update: 400 for bad values and an empty body, and nothing changes", async () => {
    const t = await seedTenant(platform);
    const c = await createContact(t);
    const cases: Array<[Json, string]> = [
      [{}, ""],
      [{ phones: [{ e164: "123" }] }, "/phones/0/e164"],
      [{ first_name: null, last_name: null, phones: [] }, "/display_name"],
      [{ email: "nope" }, "/email"],
      [{ created_at: 1 }, "/created_at"],
    ];
    for (const [body, path] of cases) {
      const r = await call(app, "POST", `/v1/contacts/${c.id}`, { key: t.key, body });
      expect(r.status, JSON.stringify(body)).toBe(400);
      expect(detailPaths(r), JSON.stringify(body)).toContain(path);
    }
    expect((await call(app, "GET", `/v1/contacts/${c.id}`, { key: t.key })).body.data).toEqual(c);
  });

  test("400 for a bad reverse-lookup number, cursor or limit", async () => {
    const t = await seedTenant(platform);
    const r = await call(app, "GET", "/v1/contacts?phone=12", { key: t.key });
    expect(r.status).toBe(400);
    expect(detailPaths(r)).toEqual(["/query/phone"]);
    expect((await call(app, "GET", "/v1/contacts?cursor=garbage", { key: t.key })).status).toBe(400);
    expect((await call(app, "GET", "/v1/contacts?limit=0", { key: t.key })).status).toBe(400);
    expect(detailPaths(await call(app, "GET", "/v1/contacts?color=red", { key: t.key }))).toContain("/query/color");
  });

  test("409 for a taken external_id, on create and on update", async () => {
    const t = await seedTenant(platform);
    await createContact(t, { ...ADA, external_id: "crm-1" });
    const dup = await call(app, "POST", "/v1/contacts", { key: t.key, body: { first_name: "B", external_id: "crm-1" } });
    expect(dup.status).toBe(409);
    expect(dup.body).toMatchObject({ error: "conflict", field: "external_id" });
    const other = await createContact(t, { first_name: "C", external_id: "crm-2" });
    const upd = await call(app, "POST", `/v1/contacts/${other.id}`, { key: t.key, body: { external_id: "crm-1" } });
    expect(upd.status).toBe(409);
    expect(upd.body.field).toBe("external_id");
    // Another account may use the same external id.
    const t2 = await seedTenant(platform);
    await createContact(t2, { first_name: "D", external_id: "crm-1" });
  });
});

describe(`/v1/contacts security [${storeKind}]`, () => {
  test("401 without a credential; 403 without the contacts scope", async () => {
    const t = await seedTenant(platform);
    const c = await createContact(t);
    expect((await call(app, "GET", "/v1/contacts")).status).toBe(401);
    expect((await call(app, "POST", "/v1/contacts", { body: ADA })).status).toBe(401);
    expect((await call(app, "GET", "/v1/directory")).status).toBe(401);
    const other = await keyWithScopes(platform, t.accountId, ["cdr"]);
    const attempts: Array<[string, string, unknown]> = [
      ["GET", "/v1/contacts", undefined],
      ["POST", "/v1/contacts", ADA],
      ["GET", `/v1/contacts/${c.id}`, undefined],
      ["POST", `/v1/contacts/${c.id}`, { first_name: "X" }],
      ["DELETE", `/v1/contacts/${c.id}`, undefined],
      ["GET", "/v1/directory", undefined],
    ];
    for (const [m, p, body] of attempts) {
      const r = await call(app, m, p, { key: other, body });
      expect(r.status, `${m} ${p}`).toBe(403);
      expect(r.body.need).toBe("contacts");
    }
    const scoped = await keyWithScopes(platform, t.accountId, ["contacts"]);
    expect((await call(app, "GET", `/v1/contacts/${c.id}`, { key: scoped })).status).toBe(200);
  });

  test("another account's contact is a 404 to read, update and delete, and invisible to lists and lookups", async () => {
    const mine = await seedTenant(platform);
    const theirs = await seedTenant(platform);
    const c = await createContact(theirs, { ...ADA, external_id: "x-1" });
    expect((await call(app, "GET", `/v1/contacts/${c.id}`, { key: mine.key })).status).toBe(404);
    expect((await call(app, "POST", `/v1/contacts/${c.id}`, { key: mine.key, body: { first_name: "Hacked" } })).status).toBe(404);
    expect((await call(app, "DELETE", `/v1/contacts/${c.id}`, { key: mine.key })).status).toBe(404);
    expect((await call(app, "GET", "/v1/contacts?phone=14155550123", { key: mine.key })).body.data).toEqual([]);
    expect((await call(app, "GET", "/v1/contacts?external_id=x-1", { key: mine.key })).body.data).toEqual([]);
    expect((await call(app, "GET", `/v1/contacts/${c.id}`, { key: theirs.key })).body.data).toEqual(c);
  });
});

describe(`/v1/directory [${storeKind}]`, () => {
  test("dial-by-name matches first or last name on the keypad; only active users; q prefixes", async () => {
    const t = await seedTenant(platform);
    const smith = await insertUser(t.accountId, "1001", "Jane Smith", { is_agent: 1 });
    const oBrien = await insertUser(t.accountId, "1002", "Sean O'Brien");
    const lars = await insertUser(t.accountId, "2001", "Lars von Trier");
    await insertUser(t.accountId, "1003", "Jane Doe", { status: "disabled" });
    const other = await seedTenant(platform);
    await insertUser(other.accountId, "1001", "Jane Smith");
    const ids = async (q: string) => ((await call(app, "GET", `/v1/directory?${q}`, { key: t.key })).body.data as Json[]).map((e) => e.id);
    expect(await ids("digits=5263")).toEqual([smith]); // JANE
    expect(await ids("digits=76484")).toEqual([smith]); // SMITH
    expect(await ids("digits=62")).toEqual([oBrien]); // OBRIEN, apostrophe dropped
    expect(await ids("digits=527")).toEqual([lars]); // LARS
    expect(await ids("digits=874")).toEqual([lars]); // TRIER (the last word)
    expect(await ids("digits=867")).toEqual([]); // VON is a middle word
    expect(await ids("digits=99")).toEqual([]);
    expect(await ids("q=jan")).toEqual([smith]);
    expect(await ids("q=smi")).toEqual([smith]);
    expect(await ids("q=200")).toEqual([lars]);
    expect(await ids("")).toEqual([smith, oBrien, lars]);
    const page = await call(app, "GET", "/v1/directory?digits=5263", { key: t.key });
    expect(page.body.data).toEqual([{ id: smith, username: "1001", display_name: "Jane Smith", is_agent: 1 }]);
  });

  test("400 for digits outside 2–9 or of the wrong length; pagination with limit=2", async () => {
    const t = await seedTenant(platform);
    for (const digits of ["1", "2", "21", "2".repeat(11), "abc"]) {
      const r = await call(app, "GET", `/v1/directory?digits=${digits}`, { key: t.key });
      expect(r.status, digits).toBe(400);
      expect(detailPaths(r)).toEqual(["/query/digits"]);
    }
    const made: string[] = [];
    for (let i = 0; i < 3; i++) made.push(await insertUser(t.accountId, `30${i}`, `User ${i}`));
    const first = await call(app, "GET", "/v1/directory?limit=2", { key: t.key });
    expect(first.body.next_cursor).toBeString();
    const second = await call(app, "GET", `/v1/directory?limit=2&cursor=${first.body.next_cursor}`, { key: t.key });
    expect(second.body.next_cursor).toBeUndefined();
    expect([...(first.body.data as Json[]), ...(second.body.data as Json[])].map((e) => e.id)).toEqual(made);
  });
});
