/** /v1/scripts: happy paths, errors and security. */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Platform } from "../../core/platform.ts";
import { createPublicApp } from "../app.ts";
import { identityRoutes } from "./identity.ts";
import { scriptRoutes } from "./scripts.ts";
import { keyWithScopes, seedTenant, storeKind, testPlatform, type Tenant } from "../../../test/support/platform.ts";
import { call, type Json } from "../../../test/support/http.ts";

let platform: Platform;
let app: ReturnType<typeof createPublicApp>;

beforeAll(async () => {
  platform = await testPlatform();
  app = createPublicApp(platform, [identityRoutes, scriptRoutes]);
});
afterAll(() => platform.close());

const GREETING = { name: "Greeting", description: "Opening lines", content_type: "text/markdown", body: "# Hello\n\nThank you for calling, {{name}}. ☎" };

async function createScript(t: Tenant, body: Json = GREETING): Promise<Json> {
  const r = await call(app, "POST", "/v1/scripts", { key: t.key, body });
  expect(r.status).toBe(201);
  return r.body.data;
}

const detailPaths = (r: { body: Json }) => (r.body.details as Json[]).map((d) => d.path);

describe(`/v1/scripts happy [${storeKind}]`, () => {
  test("create, get with body, list without, update bumps version, delete", async () => {
    const t = await seedTenant(platform);
    const s = await createScript(t);
    expect(s.id).toMatch(/^scr_[0-9A-Z]{26}$/);
    expect(s).toMatchObject({ ...GREETING, version: 1, body_bytes: Buffer.byteLength(GREETING.body) });
    expect((await call(app, "GET", `/v1/scripts/${s.id}`, { key: t.key })).body.data).toEqual(s);
    const list = await call(app, "GET", "/v1/scripts", { key: t.key });
    const { body: _body, ...summary } = s;
    expect(list.body.data).toEqual([summary]);
    const upd = await call(app, "POST", `/v1/scripts/${s.id}`, { key: t.key, body: { body: "Bye", description: null } });
    expect(upd.status).toBe(200);
    expect(upd.body.data).toMatchObject({ name: "Greeting", description: null, body: "Bye", body_bytes: 3, version: 2 });
    const again = await call(app, "POST", `/v1/scripts/${s.id}`, { key: t.key, body: { name: "Farewell" } });
    expect(again.body.data.version).toBe(3);
    expect((await call(app, "DELETE", `/v1/scripts/${s.id}`, { key: t.key })).body).toEqual({ ok: true });
    expect((await call(app, "GET", `/v1/scripts/${s.id}`, { key: t.key })).status).toBe(404);
    expect((await call(app, "DELETE", `/v1/scripts/${s.id}`, { key: t.key })).status).toBe(404);
  });

  test("render serves the blob raw with its type; HTML is sandboxed", async () => {
    const t = await seedTenant(platform);
    const md = await createScript(t);
    const r = await call(app, "GET", `/v1/scripts/${md.id}/render`, { key: t.key });
    expect(r.status).toBe(200);
    expect(r.text).toBe(GREETING.body);
    expect(r.headers.get("content-type")).toBe("text/markdown; charset=utf-8");
    expect(r.headers.get("x-content-type-options")).toBe("nosniff");
    expect(r.headers.get("etag")).toBe(`"${md.id}.1"`);
    expect(r.headers.get("x-request-id")).toBeString();
    const html = await createScript(t, { name: "Form", content_type: "text/html", body: "<script>alert(1)</script><p>Hi</p>" });
    const h = await call(app, "GET", `/v1/scripts/${html.id}/render`, { key: t.key });
    expect(h.text).toBe("<script>alert(1)</script><p>Hi</p>");
    expect(h.headers.get("content-type")).toBe("text/html; charset=utf-8");
    expect(h.headers.get("content-security-policy")).toBe("sandbox");
    expect(h.headers.get("x-content-type-options")).toBe("nosniff");
    const json = await createScript(t, { name: "Flow", content_type: "application/json", body: '{"steps":[]}' });
    const j = await call(app, "GET", `/v1/scripts/${json.id}/render`, { key: t.key });
    expect(j.body).toEqual({ steps: [] });
    expect(j.headers.get("content-type")).toBe("application/json; charset=utf-8");
  });

  test("list filters by name prefix and content type; pagination with limit=2", async () => {
    const t = await seedTenant(platform);
    const made: string[] = [];
    for (const name of ["Sales open", "Sales close", "Support", "sales_%"]) made.push((await createScript(t, { ...GREETING, name })).id);
    const html = await createScript(t, { name: "Page", content_type: "text/html", body: "<p/>" });
    const ids = async (q: string) => ((await call(app, "GET", `/v1/scripts?${q}`, { key: t.key })).body.data as Json[]).map((s) => s.id);
    expect(await ids("q=sales")).toEqual([made[0], made[1], made[3]]);
    expect(await ids("q=sales_")).toEqual([made[3]]);
    expect(await ids("content_type=text%2Fhtml")).toEqual([html.id]);
    const seen: string[] = [];
    let cursor: string | undefined;
    let pages = 0;
    do {
      const page = await call(app, "GET", `/v1/scripts?limit=2${cursor ? `&cursor=${cursor}` : ""}`, { key: t.key });
      seen.push(...(page.body.data as Json[]).map((s) => s.id as string));
      cursor = page.body.next_cursor;
      pages++;
    } while (cursor);
    expect(pages).toBe(3);
    expect(seen).toEqual([...made, html.id]);
  });

  test("a body of exactly 256 KiB is taken", async () => {
    const t = await seedTenant(platform);
    const s = await createScript(t, { ...GREETING, body: "x".repeat(256 * 1024) });
    expect(s.body_bytes).toBe(262144);
  });

  test("an Idempotency-Key retry of a create replays the reply without a second script", async () => {
    const t = await seedTenant(platform);
    const headers = { "idempotency-key": "script-create-1" };
    const first = await call(app, "POST", "/v1/scripts", { key: t.key, body: GREETING, headers });
    const again = await call(app, "POST", "/v1/scripts", { key: t.key, body: GREETING, headers });
    expect(first.status).toBe(201);
    expect(again.headers.get("idempotency-replayed")).toBe("true");
    expect(again.body.data.id).toBe(first.body.data.id);
    expect(((await call(app, "GET", "/v1/scripts", { key: t.key })).body.data as Json[]).length).toBe(1);
  });
});

describe(`/v1/scripts errors [${storeKind}]`, () => {
  test("400 for every bad field on create, and nothing is written", async () => {
    const t = await seedTenant(platform);
    const cases: Array<[Json, string]> = [
      [{ ...GREETING, name: "" }, "/name"],
      [{ ...GREETING, name: "x".repeat(201) }, "/name"],
      [{ ...GREETING, description: "x".repeat(1001) }, "/description"],
      [{ ...GREETING, content_type: "text/plain" }, "/content_type"],
      [{ ...GREETING, body: 5 }, "/body"],
      [{ name: "x", content_type: "text/markdown" }, "/body"],
      [{ ...GREETING, body: "x".repeat(256 * 1024 + 1) }, "/body"],
      // Fewer characters than the limit but more bytes: the limit is bytes of UTF-8.
      [{ ...GREETING, body: "é".repeat(140_000) }, "/body"],
      [{ ...GREETING, content_type: "application/json", body: "{not json" }, "/body"],
      [{ ...GREETING, version: 7 }, "/version"],
    ];
    for (const [body, path] of cases) {
      const r = await call(app, "POST", "/v1/scripts", { key: t.key, body });
      expect(r.status, JSON.stringify(body).slice(0, 80)).toBe(400);
      expect(r.body.error).toBe("validation_failed");
      expect(detailPaths(r), JSON.stringify(body).slice(0, 80)).toContain(path);
    }
    expect(((await call(app, "GET", "/v1/scripts", { key: t.key })).body.data as Json[]).length).toBe(0);
    expect(detailPaths(await call(app, "GET", "/v1/scripts?content_type=text%2Fplain", { key: t.key }))).toEqual(["/query/content_type"]);
  });

  test("400 for bad updates, including switching a non-JSON body to application/json; nothing changes", async () => {
    const t = await seedTenant(platform);
    const s = await createScript(t);
    const cases: Array<[Json, string]> = [
      [{}, ""],
      [{ content_type: "application/json" }, "/content_type"],
      [{ content_type: "application/json", body: "[1," }, "/body"],
      [{ name: null }, "/name"],
      [{ version: 9 }, "/version"],
    ];
    for (const [body, path] of cases) {
      const r = await call(app, "POST", `/v1/scripts/${s.id}`, { key: t.key, body });
      expect(r.status, JSON.stringify(body)).toBe(400);
      expect(detailPaths(r), JSON.stringify(body)).toContain(path);
    }
    expect((await call(app, "GET", `/v1/scripts/${s.id}`, { key: t.key })).body.data).toEqual(s);
  });
});

describe(`/v1/scripts security [${storeKind}]`, () => {
  test("401 without a credential; 403 without the scripts scope", async () => {
    const t = await seedTenant(platform);
    const s = await createScript(t);
    expect((await call(app, "GET", "/v1/scripts")).status).toBe(401);
    expect((await call(app, "GET", `/v1/scripts/${s.id}/render`)).status).toBe(401);
    const other = await keyWithScopes(platform, t.accountId, ["contacts"]);
    const attempts: Array<[string, string, unknown]> = [
      ["GET", "/v1/scripts", undefined],
      ["POST", "/v1/scripts", GREETING],
      ["GET", `/v1/scripts/${s.id}`, undefined],
      ["POST", `/v1/scripts/${s.id}`, { name: "X" }],
      ["DELETE", `/v1/scripts/${s.id}`, undefined],
      ["GET", `/v1/scripts/${s.id}/render`, undefined],
    ];
    for (const [m, p, body] of attempts) {
      const r = await call(app, m, p, { key: other, body });
      expect(r.status, `${m} ${p}`).toBe(403);
      expect(r.body.need).toBe("scripts");
    }
  });

  test("another account's script is a 404 to read, render, update and delete", async () => {
    const mine = await seedTenant(platform);
    const theirs = await seedTenant(platform);
    const s = await createScript(theirs);
    expect((await call(app, "GET", `/v1/scripts/${s.id}`, { key: mine.key })).status).toBe(404);
    const render = await call(app, "GET", `/v1/scripts/${s.id}/render`, { key: mine.key });
    expect(render.status).toBe(404);
    expect(render.text).not.toContain("Hello");
    expect((await call(app, "POST", `/v1/scripts/${s.id}`, { key: mine.key, body: { name: "Mine" } })).status).toBe(404);
    expect((await call(app, "DELETE", `/v1/scripts/${s.id}`, { key: mine.key })).status).toBe(404);
    expect((await call(app, "GET", "/v1/scripts", { key: mine.key })).body.data).toEqual([]);
    expect((await call(app, "GET", `/v1/scripts/${s.id}`, { key: theirs.key })).body.data).toEqual(s);
  });
});
