/** /v1/extensions: happy paths, errors and security. */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { sql } from "drizzle-orm";
import type { Platform } from "../../core/platform.ts";
import { newId } from "../../core/ids/ids.ts";
import { rawRows } from "../../core/db/migrate.ts";
import { createPublicApp } from "../app.ts";
import { identityRoutes } from "./identity.ts";
import { numberRoutes } from "./numbers.ts";
import { extensionRoutes } from "./extensions.ts";
import { keyWithScopes, seedTenant, storeKind, testPlatform, type Tenant } from "../../../test/support/platform.ts";
import { call, type Json } from "../../../test/support/http.ts";
import { createExtension as createExtensionRow } from "../../core/extensions/extensions.service.ts";

let platform: Platform;
let app: ReturnType<typeof createPublicApp>;

beforeAll(async () => {
  platform = await testPlatform();
  app = createPublicApp(platform, [identityRoutes, numberRoutes, extensionRoutes]);
});
afterAll(() => platform.close());

async function insertFlow(accountId: string): Promise<string> {
  const id = newId("flow");
  await platform.db.execute(sql`insert into flow (account_id, id, name, created_at, updated_at) values (${accountId}, ${id}, ${`Flow ${id}`}, 0, 0)`);
  return id;
}

async function insertSchedule(accountId: string): Promise<string> {
  const id = newId("sch");
  await platform.db.execute(sql`insert into time_schedule (account_id, id, name, created_at, updated_at) values (${accountId}, ${id}, ${`Hours ${id}`}, 0, 0)`);
  return id;
}

let digitsCounter = 200;

async function createExtension(t: Tenant, body: Json = {}): Promise<Json> {
  const r = await call(app, "POST", "/v1/extensions", { key: t.key, body: { digits: String(digitsCounter++), dest_kind: "hangup", ...body } });
  expect(r.status).toBe(201);
  return r.body.data;
}

async function createNumber(t: Tenant, body: Json): Promise<Json> {
  const e164 = `44${1 + Math.floor(Math.random() * 9)}${String(Math.floor(Math.random() * 1e10)).padStart(10, "0")}`;
  const r = await call(app, "POST", "/v1/numbers", { key: t.key, body: { e164, ...body } });
  expect(r.status).toBe(201);
  return r.body.data;
}

async function countExtensions(accountId: string): Promise<number> {
  const rows = await rawRows<{ n: number | string }>(platform.db, sql`select count(*) as n from extension where account_id = ${accountId}`);
  return Number(rows[0]?.n);
}

function paths(body: Json): string[] {
  return (body.details as Json[]).map((d) => d.path as string);
}

const EXTENSION_FIELDS = [
  "closed_dest_id", "closed_dest_kind", "created_at", "dest_id", "dest_kind", "dest_xform", "digits",
  "holiday_dest_id", "holiday_dest_kind", "id", "label", "schedule_id", "updated_at",
];

describe(`/v1/extensions happy [${storeKind}]`, () => {
  test("create, get: every field shown, null when unset", async () => {
    const t = await seedTenant(platform);
    const r = await call(app, "POST", "/v1/extensions", { key: t.key, body: { digits: "100", dest_kind: "hangup" } });
    expect(r.status).toBe(201);
    const data = r.body.data;
    expect(data.id).toMatch(/^ext_[0-9A-Z]{26}$/);
    expect(Object.keys(data).sort()).toEqual(EXTENSION_FIELDS);
    expect(data).toMatchObject({
      digits: "100",
      dest_kind: "hangup",
      dest_id: null,
      dest_xform: null,
      schedule_id: null,
      closed_dest_kind: null,
      closed_dest_id: null,
      holiday_dest_kind: null,
      holiday_dest_id: null,
      label: null,
    });
    expect((await call(app, "GET", `/v1/extensions/${data.id}`, { key: t.key })).body.data).toEqual(data);
  });

  test("routes to a flow, another extension or a feature code, with a schedule and its closed and holiday slots", async () => {
    const t = await seedTenant(platform);
    const flowId = await insertFlow(t.accountId);
    const scheduleId = await insertSchedule(t.accountId);
    const operator = await createExtension(t, { digits: "0", label: "Operator" });
    const body = {
      digits: "*97",
      dest_kind: "flow",
      dest_id: flowId,
      dest_xform: { vars: { lang: "fr" } },
      schedule_id: scheduleId,
      closed_dest_kind: "extension",
      closed_dest_id: operator.id,
      holiday_dest_kind: "hangup",
      label: "Sales",
    };
    const r = await call(app, "POST", "/v1/extensions", { key: t.key, body });
    expect(r.status).toBe(201);
    expect(r.body.data).toMatchObject({ ...body, holiday_dest_id: null });
    const vm = await createExtension(t, { digits: "*98", dest_kind: "feature", dest_id: "voicemail_main" });
    expect(vm).toMatchObject({ dest_kind: "feature", dest_id: "voicemail_main" });
    const chained = await createExtension(t, { digits: "#1", dest_kind: "extension", dest_id: operator.id });
    expect(chained).toMatchObject({ dest_kind: "extension", dest_id: operator.id });
  });

  test("an emergency number (EMERGENCY_NUMBERS) is no extension's digits: 400 on create and update, nothing changed", async () => {
    const t = await seedTenant(platform);
    for (const digits of ["911", "112"]) {
      const r = await call(app, "POST", "/v1/extensions", { key: t.key, body: { digits, dest_kind: "hangup" } });
      expect(r.status, digits).toBe(400);
      expect(r.body).toMatchObject({ ok: false, error: "validation_failed", details: [{ path: "/digits", message: expect.stringContaining("emergency number") }] });
    }
    const ext = await createExtension(t, { digits: "912" });
    const moved = await call(app, "PATCH", `/v1/extensions/${ext.id}`, { key: t.key, body: { digits: "911" } });
    expect(moved.status).toBe(400);
    expect((await call(app, "GET", `/v1/extensions/${ext.id}`, { key: t.key })).body.data.digits).toBe("912");
    // One made before (no rule then) keeps its digits when a client sends them back with a change.
    const legacy = await createExtensionRow(platform.db, t.accountId, { digits: "112", dest_kind: "hangup" });
    const edited = await call(app, "PATCH", `/v1/extensions/${legacy.id}`, { key: t.key, body: { digits: "112", label: "old" } });
    expect(edited.status, JSON.stringify(edited.body)).toBe(200);
    expect(edited.body.data).toMatchObject({ digits: "112", label: "old" });
  });

  test("the same digits may exist in two accounts", async () => {
    const a = await seedTenant(platform);
    const b = await seedTenant(platform);
    await createExtension(a, { digits: "555" });
    await createExtension(b, { digits: "555" });
  });

  test("the list filters by digits prefix, destination and schedule", async () => {
    const t = await seedTenant(platform);
    const flowId = await insertFlow(t.accountId);
    const scheduleId = await insertSchedule(t.accountId);
    const a = await createExtension(t, { digits: "100" });
    const b = await createExtension(t, { digits: "101", dest_kind: "flow", dest_id: flowId, schedule_id: scheduleId });
    const c = await createExtension(t, { digits: "200", dest_kind: "extension", dest_id: a.id });
    const d = await createExtension(t, { digits: "*72", dest_kind: "feature", dest_id: "forward_on" });
    const e = await createExtension(t, { digits: "#9", dest_kind: "feature", dest_id: "echo_test" });
    const ids = async (query: string) => {
      const r = await call(app, "GET", `/v1/extensions${query}`, { key: t.key });
      expect(r.status, query).toBe(200);
      return (r.body.data as Json[]).map((x) => x.id);
    };
    expect(await ids("")).toEqual([a.id, b.id, c.id, d.id, e.id]);
    expect(await ids("?q=10")).toEqual([a.id, b.id]);
    expect(await ids("?q=101")).toEqual([b.id]);
    expect(await ids("?q=*")).toEqual([d.id]);
    expect(await ids("?q=%239")).toEqual([e.id]);
    expect(await ids("?dest_kind=feature")).toEqual([d.id, e.id]);
    expect(await ids("?dest_kind=feature&dest_id=echo_test")).toEqual([e.id]);
    expect(await ids(`?dest_id=${a.id}`)).toEqual([c.id]);
    expect(await ids(`?dest_kind=flow&dest_id=${flowId}`)).toEqual([b.id]);
    expect(await ids(`?schedule_id=${scheduleId}`)).toEqual([b.id]);
    expect(await ids("?q=1&dest_kind=hangup")).toEqual([a.id]);
  });

  test("pagination walks every extension exactly once with limit=2", async () => {
    const t = await seedTenant(platform);
    const created: string[] = [];
    for (let i = 0; i < 5; i++) created.push((await createExtension(t)).id);
    const seen: string[] = [];
    let cursor: string | undefined;
    let pages = 0;
    do {
      const page = await call(app, "GET", `/v1/extensions?limit=2${cursor ? `&cursor=${cursor}` : ""}`, { key: t.key });
      expect(page.status).toBe(200);
      seen.push(...(page.body.data as Json[]).map((x) => x.id as string));
      cursor = page.body.next_cursor;
      pages++;
    } while (cursor);
    expect(pages).toBe(3);
    expect(seen).toEqual(created);
  });

  test("PATCH changes only the fields sent; POST on the item does the same", async () => {
    const t = await seedTenant(platform);
    const flowId = await insertFlow(t.accountId);
    const x = await createExtension(t, { label: "Old", dest_xform: { prepend: "9" } });
    const r = await call(app, "PATCH", `/v1/extensions/${x.id}`, { key: t.key, body: { digits: "4242", label: null } });
    expect(r.status).toBe(200);
    expect(r.body.data).toEqual({ ...x, digits: "4242", label: null, updated_at: r.body.data.updated_at });
    const p = await call(app, "POST", `/v1/extensions/${x.id}`, { key: t.key, body: { dest_kind: "flow", dest_id: flowId } });
    expect(p.status).toBe(200);
    expect(p.body.data).toMatchObject({ digits: "4242", dest_kind: "flow", dest_id: flowId, dest_xform: { prepend: "9" } });
    const feature = await call(app, "PATCH", `/v1/extensions/${x.id}`, { key: t.key, body: { dest_kind: "feature", dest_id: "dnd_on", dest_xform: null } });
    expect(feature.body.data).toMatchObject({ dest_kind: "feature", dest_id: "dnd_on", dest_xform: null });
    expect((await call(app, "GET", `/v1/extensions/${x.id}`, { key: t.key })).body.data).toEqual(feature.body.data);
  });

  test("DELETE removes an unused extension; its digits are free again", async () => {
    const t = await seedTenant(platform);
    const x = await createExtension(t, { digits: "777" });
    expect((await call(app, "DELETE", `/v1/extensions/${x.id}`, { key: t.key })).body).toEqual({ ok: true });
    expect((await call(app, "GET", `/v1/extensions/${x.id}`, { key: t.key })).status).toBe(404);
    expect((await call(app, "DELETE", `/v1/extensions/${x.id}`, { key: t.key })).status).toBe(404);
    await createExtension(t, { digits: "777" });
  });

  test("an Idempotency-Key retry of a create replays the reply without a second extension", async () => {
    const t = await seedTenant(platform);
    const body = { digits: "300", dest_kind: "hangup" };
    const headers = { "idempotency-key": `ext-${Date.now()}-${Math.random()}` };
    const first = await call(app, "POST", "/v1/extensions", { key: t.key, body, headers });
    expect(first.status).toBe(201);
    const again = await call(app, "POST", "/v1/extensions", { key: t.key, body, headers });
    expect(again.status).toBe(201);
    expect(again.headers.get("idempotency-replayed")).toBe("true");
    expect(again.body).toEqual(first.body);
    expect(await countExtensions(t.accountId)).toBe(1);
  });
});

describe(`/v1/extensions errors [${storeKind}]`, () => {
  test("400 naming the field for every bad value; nothing is created", async () => {
    const t = await seedTenant(platform);
    const ok = { digits: "100", dest_kind: "hangup" };
    const cases: Array<[Json, string]> = [
      [{ dest_kind: "hangup" }, "/digits"],
      [{ ...ok, digits: "" }, "/digits"],
      [{ ...ok, digits: "12a" }, "/digits"],
      [{ ...ok, digits: "1".repeat(17) }, "/digits"],
      [{ ...ok, digits: 100 }, "/digits"],
      [{ ...ok, dest_kind: "teleport" }, "/dest_kind"],
      [{ ...ok, dest_kind: "feature", dest_id: "self_destruct" }, "/dest_id"],
      [{ ...ok, dest_kind: "feature" }, "/dest_id"],
      [{ ...ok, schedule_id: newId("sch"), closed_dest_kind: "feature", closed_dest_id: "dnd_on" }, "/closed_dest_kind"],
      [{ ...ok, schedule_id: "sch_bad" }, "/schedule_id"],
      [{ ...ok, label: "x".repeat(101) }, "/label"],
      [{ ...ok, dest_xform: { strip_digits: -1 } }, "/dest_xform"],
      [{ ...ok, e164: "14155550123" }, "/e164"],
    ];
    for (const [body, path] of cases) {
      const r = await call(app, "POST", "/v1/extensions", { key: t.key, body });
      expect(r.status, JSON.stringify(body)).toBe(400);
      expect(r.body.error).toBe("validation_failed");
      expect(paths(r.body), JSON.stringify(body)).toContain(path);
    }
    expect(await countExtensions(t.accountId)).toBe(0);
  });

  test("400 for a missing, mismatched or foreign destination; another account's reads like a missing one", async () => {
    const t = await seedTenant(platform);
    const other = await seedTenant(platform);
    const theirs = await createExtension(other);
    const theirFlow = await insertFlow(other.accountId);
    const flowId = await insertFlow(t.accountId);
    const post = (body: Json) => call(app, "POST", "/v1/extensions", { key: t.key, body: { digits: "100", ...body } });
    expect((await post({})).body.details).toEqual([{ path: "/dest_kind", message: "A destination is required." }]);
    expect(paths((await post({ dest_kind: "extension", dest_id: flowId })).body)).toEqual(["/dest_id"]);
    expect(paths((await post({ dest_kind: "user", dest_id: flowId })).body)).toEqual(["/dest_id"]);
    const missing = (await post({ dest_kind: "extension", dest_id: newId("ext") })).body.details;
    expect(missing).toEqual([{ path: "/dest_id", message: "No such extension in this account." }]);
    expect((await post({ dest_kind: "extension", dest_id: theirs.id })).body.details).toEqual(missing);
    const missingFlow = (await post({ dest_kind: "flow", dest_id: newId("flow") })).body.details;
    expect((await post({ dest_kind: "flow", dest_id: theirFlow })).body.details).toEqual(missingFlow);
    // A feature code is one of ours, not any name an object happens to have.
    for (const code of ["constructor", "toString", "__proto__", "hasOwnProperty"]) {
      const bad = await post({ dest_kind: "feature", dest_id: code });
      expect(bad.status, code).toBe(400);
      expect(paths(bad.body), code).toEqual(["/dest_id"]);
    }
    expect(await countExtensions(t.accountId)).toBe(0);
  });

  test("an extension cannot route to itself, in any slot", async () => {
    const t = await seedTenant(platform);
    const scheduleId = await insertSchedule(t.accountId);
    const x = await createExtension(t);
    const self = await call(app, "PATCH", `/v1/extensions/${x.id}`, { key: t.key, body: { dest_kind: "extension", dest_id: x.id } });
    expect(self.status).toBe(400);
    expect(self.body.details).toEqual([{ path: "/dest_id", message: "An extension cannot route to itself." }]);
    const closed = await call(app, "PATCH", `/v1/extensions/${x.id}`, {
      key: t.key,
      body: { schedule_id: scheduleId, closed_dest_kind: "extension", closed_dest_id: x.id },
    });
    expect(paths(closed.body)).toEqual(["/closed_dest_id"]);
    expect((await call(app, "GET", `/v1/extensions/${x.id}`, { key: t.key })).body.data).toEqual(x);
  });

  test("closed and holiday destinations need a schedule", async () => {
    const t = await seedTenant(platform);
    const scheduleId = await insertSchedule(t.accountId);
    const r = await call(app, "POST", "/v1/extensions", { key: t.key, body: { digits: "100", dest_kind: "hangup", holiday_dest_kind: "hangup" } });
    expect(r.status).toBe(400);
    expect(paths(r.body)).toEqual(["/holiday_dest_kind"]);
    const x = await createExtension(t, { schedule_id: scheduleId, holiday_dest_kind: "hangup" });
    const unschedule = await call(app, "PATCH", `/v1/extensions/${x.id}`, { key: t.key, body: { schedule_id: null } });
    expect(paths(unschedule.body)).toEqual(["/schedule_id"]);
    expect((await call(app, "GET", `/v1/extensions/${x.id}`, { key: t.key })).body.data).toEqual(x);
  });

  test("409 for digits taken in the account, on create and on PATCH", async () => {
    const t = await seedTenant(platform);
    const a = await createExtension(t, { digits: "500" });
    const b = await createExtension(t, { digits: "501" });
    const dup = await call(app, "POST", "/v1/extensions", { key: t.key, body: { digits: "500", dest_kind: "hangup" } });
    expect(dup.status).toBe(409);
    expect(dup.body).toMatchObject({ ok: false, error: "conflict", field: "digits" });
    const patch = await call(app, "PATCH", `/v1/extensions/${b.id}`, { key: t.key, body: { digits: "500", label: "x" } });
    expect(patch.status).toBe(409);
    expect(patch.body.field).toBe("digits");
    expect((await call(app, "GET", `/v1/extensions/${b.id}`, { key: t.key })).body.data).toEqual(b);
    expect((await call(app, "GET", `/v1/extensions/${a.id}`, { key: t.key })).body.data).toEqual(a);
    expect(await countExtensions(t.accountId)).toBe(2);
  });

  test("409 naming the users when deleting an extension numbers or extensions route to", async () => {
    const t = await seedTenant(platform);
    const scheduleId = await insertSchedule(t.accountId);
    const target = await createExtension(t);
    const n = await createNumber(t, { dest_kind: "extension", dest_id: target.id });
    const r = await call(app, "DELETE", `/v1/extensions/${target.id}`, { key: t.key });
    expect(r.status).toBe(409);
    expect(r.body).toMatchObject({ ok: false, error: "conflict", used_by: [{ kind: "number", id: n.id }] });
    const other = await createExtension(t, { schedule_id: scheduleId, holiday_dest_kind: "extension", holiday_dest_id: target.id });
    const again = await call(app, "DELETE", `/v1/extensions/${target.id}`, { key: t.key });
    expect(again.body.used_by).toEqual([{ kind: "extension", id: other.id }, { kind: "number", id: n.id }]);
    expect((await call(app, "GET", `/v1/extensions/${target.id}`, { key: t.key })).status).toBe(200);
    // Point both elsewhere; then the delete goes through.
    expect((await call(app, "PATCH", `/v1/numbers/${n.id}`, { key: t.key, body: { dest_kind: "hangup" } })).status).toBe(200);
    expect((await call(app, "PATCH", `/v1/extensions/${other.id}`, { key: t.key, body: { holiday_dest_kind: null } })).status).toBe(200);
    expect((await call(app, "DELETE", `/v1/extensions/${target.id}`, { key: t.key })).status).toBe(200);
  });

  test("400 for bad list queries", async () => {
    const t = await seedTenant(platform);
    for (const query of ["q=12a", `q=${"1".repeat(17)}`, "dest_kind=teleport", "limit=501", "cursor=garbage", "status=active"]) {
      const r = await call(app, "GET", `/v1/extensions?${query}`, { key: t.key });
      expect(r.status, query).toBe(400);
      expect(r.body.error).toBe("validation_failed");
    }
  });

  test("404 for an unknown extension", async () => {
    const t = await seedTenant(platform);
    const id = newId("ext");
    expect((await call(app, "GET", `/v1/extensions/${id}`, { key: t.key })).body.error).toBe("not_found");
    expect((await call(app, "PATCH", `/v1/extensions/${id}`, { key: t.key, body: { label: "x" } })).status).toBe(404);
    expect((await call(app, "DELETE", `/v1/extensions/${id}`, { key: t.key })).status).toBe(404);
  });
});

describe(`/v1/extensions security [${storeKind}]`, () => {
  test("401 without a credential, whatever the body", async () => {
    expect((await call(app, "GET", "/v1/extensions")).status).toBe(401);
    const r = await call(app, "PATCH", `/v1/extensions/${newId("ext")}`, { body: { digits: "not digits" } });
    expect(r.status).toBe(401);
  });

  test("403 naming the extensions scope", async () => {
    const t = await seedTenant(platform);
    const x = await createExtension(t);
    const key = await keyWithScopes(platform, t.accountId, ["numbers"]);
    for (const [method, path, body] of [
      ["GET", "/v1/extensions", undefined],
      ["POST", "/v1/extensions", { digits: "999", dest_kind: "hangup" }],
      ["GET", `/v1/extensions/${x.id}`, undefined],
      ["PATCH", `/v1/extensions/${x.id}`, { label: "x" }],
      ["POST", `/v1/extensions/${x.id}`, { label: "x" }],
      ["DELETE", `/v1/extensions/${x.id}`, undefined],
    ] as const) {
      const r = await call(app, method, path, { key, body });
      expect(r.status, `${method} ${path}`).toBe(403);
      expect(r.body.need).toBe("extensions");
    }
    expect((await call(app, "GET", `/v1/extensions/${x.id}`, { key: t.key })).body.data).toEqual(x);
  });

  test("another account's extension is a 404 to read, change or delete, and absent from the list", async () => {
    const mine = await seedTenant(platform);
    const theirs = await seedTenant(platform);
    const x = await createExtension(theirs);
    expect((await call(app, "GET", `/v1/extensions/${x.id}`, { key: mine.key })).status).toBe(404);
    expect((await call(app, "PATCH", `/v1/extensions/${x.id}`, { key: mine.key, body: { label: "pwned" } })).status).toBe(404);
    expect((await call(app, "POST", `/v1/extensions/${x.id}`, { key: mine.key, body: { label: "pwned" } })).status).toBe(404);
    expect((await call(app, "DELETE", `/v1/extensions/${x.id}`, { key: mine.key })).status).toBe(404);
    expect((await call(app, "GET", "/v1/extensions", { key: mine.key })).body.data).toEqual([]);
    expect((await call(app, "GET", `/v1/extensions/${x.id}`, { key: theirs.key })).body.data).toEqual(x);
  });
});
