/** /v1/dnc: happy paths, errors and security. */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { sql } from "drizzle-orm";
import type { Platform } from "../../core/platform.ts";
import { createPublicApp } from "../app.ts";
import { identityRoutes } from "./identity.ts";
import { dncRoutes } from "./dnc.ts";
import { keyWithScopes, seedTenant, storeKind, testPlatform, type Tenant } from "../../../test/support/platform.ts";
import { call, type Json } from "../../../test/support/http.ts";
import { nowSeconds } from "../../core/db/columns.ts";

let platform: Platform;
let app: ReturnType<typeof createPublicApp>;

beforeAll(async () => {
  platform = await testPlatform();
  app = createPublicApp(platform, [identityRoutes, dncRoutes]);
});
afterAll(() => platform.close());

const detailPaths = (r: { body: Json }) => (r.body.details as Json[]).map((d) => d.path);

async function listAll(t: Tenant, query = ""): Promise<string[]> {
  return ((await call(app, "GET", `/v1/dnc?limit=500${query}`, { key: t.key })).body.data as Json[]).map((e) => e.e164);
}

async function lookup(t: Tenant, number: string): Promise<Json> {
  const r = await call(app, "GET", `/v1/dnc?number=${encodeURIComponent(number)}`, { key: t.key });
  expect(r.status).toBe(200);
  return r.body.data;
}

/** An entry that expired an hour ago, as the passage of time would leave it. */
async function insertExpired(accountId: string, e164: string): Promise<void> {
  const now = nowSeconds();
  await platform.db.execute(
    sql`insert into dnc_entry (account_id, e164, reason, source, expires_at, created_at) values (${accountId}, ${e164}, 'old', 'import', ${now - 3600}, ${now - 86400})`,
  );
}

describe(`/v1/dnc happy [${storeKind}]`, () => {
  test("bulk add normalizes, counts duplicates once, and a lookup finds the number in any typed form", async () => {
    const t = await seedTenant(platform);
    const expires = nowSeconds() + 86400;
    const r = await call(app, "POST", "/v1/dnc", {
      key: t.key,
      body: { numbers: ["+1 (415) 555-0100", "14155550100", "0044 20 7946 0000"], reason: "Asked on call", expires_at: expires, source: "agent" },
    });
    expect(r.status).toBe(200);
    expect(r.body).toEqual({ ok: true, data: { added: 2, already_listed: 0 } });
    expect(await listAll(t)).toEqual(["14155550100", "442079460000"]);
    const hit = await lookup(t, "+1 415.555.0100");
    expect(hit).toEqual({
      e164: "14155550100",
      listed: 1,
      entry: { e164: "14155550100", reason: "Asked on call", source: "agent", expires_at: expires, created_at: expect.any(Number) },
    });
    expect(await lookup(t, "+14155550101")).toEqual({ e164: "14155550101", listed: 0 });
  });

  test("adding a listed number leaves its entry; an expired one is listed again", async () => {
    const t = await seedTenant(platform);
    await call(app, "POST", "/v1/dnc", { key: t.key, body: { numbers: ["14155550100"], reason: "first" } });
    await insertExpired(t.accountId, "14155550101");
    expect((await lookup(t, "14155550101")).listed).toBe(0);
    expect(await listAll(t)).toEqual(["14155550100"]);
    expect(await listAll(t, "&include_expired=1")).toEqual(["14155550100", "14155550101"]);
    const r = await call(app, "POST", "/v1/dnc", { key: t.key, body: { numbers: ["14155550100", "14155550101", "14155550102"], reason: "second" } });
    expect(r.body.data).toEqual({ added: 2, already_listed: 1 });
    expect((await lookup(t, "14155550100")).entry.reason).toBe("first");
    expect((await lookup(t, "14155550101")).entry).toMatchObject({ reason: "second", source: "api", expires_at: null });
  });

  test("remove counts numbers that were listed; unknown numbers are fine", async () => {
    const t = await seedTenant(platform);
    await call(app, "POST", "/v1/dnc", { key: t.key, body: { numbers: ["14155550100", "14155550101"] } });
    await insertExpired(t.accountId, "14155550102");
    const r = await call(app, "DELETE", "/v1/dnc", { key: t.key, body: { numbers: ["+1 415 555 0100", "14155550102", "14155550199", "14155550100"] } });
    expect(r.status).toBe(200);
    expect(r.body).toEqual({ ok: true, data: { removed: 1 } });
    expect(await listAll(t, "&include_expired=1")).toEqual(["14155550101"]);
  });

  test("10,000 numbers in one request", async () => {
    const t = await seedTenant(platform);
    const numbers = Array.from({ length: 10_000 }, (_, i) => `+1 212 ${String(1_000_000 + i).slice(1, 4)} ${String(1_000_000 + i).slice(3)}`);
    const unique = new Set(numbers.map((n) => n.replace(/\D/g, ""))).size;
    const r = await call(app, "POST", "/v1/dnc", { key: t.key, body: { numbers } });
    expect(r.status).toBe(200);
    expect(r.body.data).toEqual({ added: unique, already_listed: 0 });
    const again = await call(app, "POST", "/v1/dnc", { key: t.key, body: { numbers } });
    expect(again.body.data).toEqual({ added: 0, already_listed: unique });
    const removed = await call(app, "DELETE", "/v1/dnc", { key: t.key, body: { numbers } });
    expect(removed.body.data).toEqual({ removed: unique });
  }, 120_000);

  test("filters and pagination with limit=2 in number order", async () => {
    const t = await seedTenant(platform);
    await call(app, "POST", "/v1/dnc", { key: t.key, body: { numbers: ["14155550103", "14155550101", "442079460000", "14155550102"] } });
    await call(app, "POST", "/v1/dnc", { key: t.key, body: { numbers: ["14155550104"], source: "import" } });
    expect(await listAll(t, "&q=%2B44")).toEqual(["442079460000"]);
    expect(await listAll(t, "&q=1415")).toEqual(["14155550101", "14155550102", "14155550103", "14155550104"]);
    expect(await listAll(t, "&source=import")).toEqual(["14155550104"]);
    const seen: string[] = [];
    let cursor: string | undefined;
    let pages = 0;
    do {
      const page = await call(app, "GET", `/v1/dnc?limit=2${cursor ? `&cursor=${cursor}` : ""}`, { key: t.key });
      expect(page.status).toBe(200);
      seen.push(...(page.body.data as Json[]).map((e) => e.e164 as string));
      cursor = page.body.next_cursor;
      pages++;
    } while (cursor);
    expect(pages).toBe(3);
    expect(seen).toEqual(["14155550101", "14155550102", "14155550103", "14155550104", "442079460000"]);
  });

  test("an Idempotency-Key retry of an add replays the reply", async () => {
    const t = await seedTenant(platform);
    const headers = { "idempotency-key": "dnc-add-1" };
    const body = { numbers: ["14155550100"] };
    const first = await call(app, "POST", "/v1/dnc", { key: t.key, body, headers });
    const again = await call(app, "POST", "/v1/dnc", { key: t.key, body, headers });
    expect(first.body.data).toEqual({ added: 1, already_listed: 0 });
    expect(again.headers.get("idempotency-replayed")).toBe("true");
    expect(again.body.data).toEqual({ added: 1, already_listed: 0 });
    expect(await listAll(t)).toEqual(["14155550100"]);
  });
});

describe(`/v1/dnc errors [${storeKind}]`, () => {
  test("one invalid number refuses the whole request, listing every bad index", async () => {
    const t = await seedTenant(platform);
    const r = await call(app, "POST", "/v1/dnc", { key: t.key, body: { numbers: ["14155550100", "12", "+1 415 555 0101", "call me", "0123456789"] } });
    expect(r.status).toBe(400);
    expect(r.body.error).toBe("validation_failed");
    expect(detailPaths(r)).toEqual(["/numbers/1", "/numbers/3", "/numbers/4"]);
    expect(await listAll(t, "&include_expired=1")).toEqual([]);
    await call(app, "POST", "/v1/dnc", { key: t.key, body: { numbers: ["14155550100"] } });
    const del = await call(app, "DELETE", "/v1/dnc", { key: t.key, body: { numbers: ["14155550100", "x"] } });
    expect(detailPaths(del)).toEqual(["/numbers/1"]);
    expect(await listAll(t)).toEqual(["14155550100"]);
  });

  test("400 for every other bad field", async () => {
    const t = await seedTenant(platform);
    const cases: Array<[string, Json, string]> = [
      ["POST", {}, "/numbers"],
      ["POST", { numbers: [] }, "/numbers"],
      ["POST", { numbers: [14155550100] }, "/numbers/0"],
      ["POST", { numbers: Array.from({ length: 10_001 }, () => "14155550100") }, "/numbers"],
      ["POST", { numbers: ["14155550100"], reason: "" }, "/reason"],
      ["POST", { numbers: ["14155550100"], reason: "x".repeat(201) }, "/reason"],
      ["POST", { numbers: ["14155550100"], expires_at: nowSeconds() - 10 }, "/expires_at"],
      ["POST", { numbers: ["14155550100"], expires_at: "2030-01-01" }, "/expires_at"],
      ["POST", { numbers: ["14155550100"], source: "robot" }, "/source"],
      ["POST", { numbers: ["14155550100"], listed: 1 }, "/listed"],
      ["DELETE", {}, "/numbers"],
      ["DELETE", { numbers: ["14155550100"], reason: "x" }, "/reason"],
    ];
    for (const [method, body, path] of cases) {
      const r = await call(app, method, "/v1/dnc", { key: t.key, body });
      expect(r.status, `${method} ${JSON.stringify(body).slice(0, 80)}`).toBe(400);
      expect(detailPaths(r), `${method} ${JSON.stringify(body).slice(0, 80)}`).toContain(path);
    }
    expect(await listAll(t)).toEqual([]);
    for (const [query, path] of [
      ["number=12", "/query/number"],
      ["q=abc", "/query/q"],
      ["include_expired=yes", "/query/include_expired"],
      ["source=robot", "/query/source"],
      ["cursor=garbage", "/query/cursor"],
    ]) {
      const r = await call(app, "GET", `/v1/dnc?${query}`, { key: t.key });
      expect(r.status, query).toBe(400);
      expect(detailPaths(r), query).toEqual([path]);
    }
    // Out of range: refused too (the path of a range error on a coerced query integer is the host's to fix).
    expect((await call(app, "GET", "/v1/dnc?include_expired=2", { key: t.key })).status).toBe(400);
  });
});

describe(`/v1/dnc security [${storeKind}]`, () => {
  test("401 without a credential; 403 without the dnc scope", async () => {
    const t = await seedTenant(platform);
    expect((await call(app, "GET", "/v1/dnc")).status).toBe(401);
    expect((await call(app, "POST", "/v1/dnc", { body: { numbers: ["14155550100"] } })).status).toBe(401);
    const other = await keyWithScopes(platform, t.accountId, ["campaign"]);
    for (const [m, body] of [["GET", undefined], ["POST", { numbers: ["14155550100"] }], ["DELETE", { numbers: ["14155550100"] }]] as const) {
      const r = await call(app, m, "/v1/dnc", { key: other, body });
      expect(r.status, m).toBe(403);
      expect(r.body.need).toBe("dnc");
    }
  });

  test("each account has its own list: another account's entries are not listed, looked up or removed", async () => {
    const mine = await seedTenant(platform);
    const theirs = await seedTenant(platform);
    await call(app, "POST", "/v1/dnc", { key: theirs.key, body: { numbers: ["14155550100"] } });
    expect(await listAll(mine)).toEqual([]);
    expect((await lookup(mine, "14155550100")).listed).toBe(0);
    expect((await call(app, "DELETE", "/v1/dnc", { key: mine.key, body: { numbers: ["14155550100"] } })).body.data).toEqual({ removed: 0 });
    expect((await lookup(theirs, "14155550100")).listed).toBe(1);
  });
});
