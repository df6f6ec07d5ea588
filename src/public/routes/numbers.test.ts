/** /v1/numbers: happy paths, errors and security. */
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

let platform: Platform;
let app: ReturnType<typeof createPublicApp>;

beforeAll(async () => {
  platform = await testPlatform();
  app = createPublicApp(platform, [identityRoutes, numberRoutes, extensionRoutes]);
});
afterAll(() => platform.close());

/** A random 13-digit E.164 (country 44, no trunk 0 after it: that would be read away), so runs on a reused database never collide. */
function randomE164(): string {
  return `44${1 + Math.floor(Math.random() * 9)}${String(Math.floor(Math.random() * 1e10)).padStart(10, "0")}`;
}

/** The same number as a person would type it. */
function typed(e164: string): string {
  return `+${e164.slice(0, 2)} (${e164.slice(2, 5)}) ${e164.slice(5, 8)}-${e164.slice(8)}`;
}

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

let digitsCounter = 100;

async function createExtension(t: Tenant, body: Json = {}): Promise<string> {
  const r = await call(app, "POST", "/v1/extensions", { key: t.key, body: { digits: String(digitsCounter++), dest_kind: "hangup", ...body } });
  expect(r.status).toBe(201);
  return r.body.data.id;
}

async function createNumber(t: Tenant, body: Json = {}): Promise<Json> {
  const r = await call(app, "POST", "/v1/numbers", { key: t.key, body: { e164: randomE164(), dest_kind: "hangup", ...body } });
  expect(r.status).toBe(201);
  return r.body.data;
}

async function lookupRows(e164: string) {
  return rawRows<{ e164: string; account_id: string; number_id: string }>(platform.db, sql`select e164, account_id, number_id from did_lookup where e164 = ${e164}`);
}

async function countNumbers(accountId: string): Promise<number> {
  const rows = await rawRows<{ n: number | string }>(platform.db, sql`select count(*) as n from number where account_id = ${accountId}`);
  return Number(rows[0]?.n);
}

function paths(body: Json): string[] {
  return (body.details as Json[]).map((d) => d.path as string);
}

const NUMBER_FIELDS = [
  "allow_anonymous", "closed_dest_id", "closed_dest_kind", "created_at", "dest_id", "dest_kind", "dest_xform", "e164", "fax_mode",
  "holiday_dest_id", "holiday_dest_kind", "id", "label", "max_channels", "schedule_id", "status", "updated_at",
];

describe(`/v1/numbers happy [${storeKind}]`, () => {
  test("create normalizes what people type, applies the defaults and registers the DID lookup", async () => {
    const t = await seedTenant(platform);
    const flowId = await insertFlow(t.accountId);
    const e164 = randomE164();
    const r = await call(app, "POST", "/v1/numbers", { key: t.key, body: { e164: typed(e164), dest_kind: "flow", dest_id: flowId } });
    expect(r.status).toBe(201);
    const data = r.body.data;
    expect(data.id).toMatch(/^num_[0-9A-Z]{26}$/);
    expect(Object.keys(data).sort()).toEqual(NUMBER_FIELDS);
    expect(data).toMatchObject({
      e164,
      status: "active",
      dest_kind: "flow",
      dest_id: flowId,
      dest_xform: null,
      max_channels: null,
      fax_mode: "voice",
      allow_anonymous: 1,
      schedule_id: null,
      closed_dest_kind: null,
      closed_dest_id: null,
      holiday_dest_kind: null,
      holiday_dest_id: null,
      label: null,
    });
    expect(await lookupRows(e164)).toEqual([{ e164, account_id: t.accountId, number_id: data.id }]);
    const got = await call(app, "GET", `/v1/numbers/${data.id}`, { key: t.key });
    expect(got.status).toBe(200);
    expect(got.body.data).toEqual(data);
  });

  test("every field can be set: an extension target, a transform, a schedule with closed and holiday destinations", async () => {
    const t = await seedTenant(platform);
    const ext = await createExtension(t);
    const flowId = await insertFlow(t.accountId);
    const scheduleId = await insertSchedule(t.accountId);
    const body = {
      e164: randomE164(),
      status: "virtual",
      dest_kind: "extension",
      dest_id: ext,
      dest_xform: { strip_digits: 2, prepend: "9", cid_name_prefix: "Sales: ", vars: { campaign: "spring" } },
      max_channels: 0,
      fax_mode: "t38",
      allow_anonymous: 0,
      schedule_id: scheduleId,
      closed_dest_kind: "flow",
      closed_dest_id: flowId,
      holiday_dest_kind: "hangup",
      label: "Main line",
    };
    const r = await call(app, "POST", "/v1/numbers", { key: t.key, body });
    expect(r.status).toBe(201);
    expect(r.body.data).toMatchObject({ ...body, holiday_dest_id: null });
    expect((await call(app, "GET", `/v1/numbers/${r.body.data.id}`, { key: t.key })).body.data).toEqual(r.body.data);
  });

  test("the list filters by status, destination, e164 prefix and schedule", async () => {
    const t = await seedTenant(platform);
    const ext = await createExtension(t);
    const scheduleId = await insertSchedule(t.accountId);
    const prefix = `4479${String(Math.floor(Math.random() * 1e6)).padStart(6, "0")}`;
    const a = await createNumber(t, { e164: `${prefix}001`, dest_kind: "extension", dest_id: ext });
    const b = await createNumber(t, { e164: `${prefix}002`, status: "disabled", schedule_id: scheduleId });
    const c = await createNumber(t, { e164: randomE164() });
    const ids = async (query: string) => {
      const r = await call(app, "GET", `/v1/numbers${query}`, { key: t.key });
      expect(r.status).toBe(200);
      return (r.body.data as Json[]).map((n) => n.id);
    };
    expect(await ids("")).toEqual([a.id, b.id, c.id]);
    expect(await ids("?status=disabled")).toEqual([b.id]);
    expect(await ids("?status=active")).toEqual([a.id, c.id]);
    expect(await ids("?dest_kind=hangup")).toEqual([b.id, c.id]);
    expect(await ids(`?dest_kind=extension&dest_id=${ext}`)).toEqual([a.id]);
    expect(await ids(`?dest_id=${ext}`)).toEqual([a.id]);
    expect(await ids(`?q=${prefix}`)).toEqual([a.id, b.id]);
    expect(await ids(`?q=%2B${prefix}00`)).toEqual([a.id, b.id]);
    expect(await ids(`?q=+${prefix}00`)).toEqual([a.id, b.id]);
    expect(await ids(`?q=${prefix}002`)).toEqual([b.id]);
    expect(await ids(`?schedule_id=${scheduleId}`)).toEqual([b.id]);
    expect(await ids(`?q=${prefix}&status=active`)).toEqual([a.id]);
  });

  test("pagination walks every number exactly once with limit=2", async () => {
    const t = await seedTenant(platform);
    const created: string[] = [];
    for (let i = 0; i < 5; i++) created.push((await createNumber(t)).id);
    const seen: string[] = [];
    let cursor: string | undefined;
    let pages = 0;
    do {
      const page = await call(app, "GET", `/v1/numbers?limit=2${cursor ? `&cursor=${cursor}` : ""}`, { key: t.key });
      expect(page.status).toBe(200);
      expect((page.body.data as Json[]).length).toBeLessThanOrEqual(2);
      seen.push(...(page.body.data as Json[]).map((n) => n.id as string));
      cursor = page.body.next_cursor;
      pages++;
    } while (cursor);
    expect(pages).toBe(3);
    expect(seen).toEqual(created);
  });

  test("PATCH changes only the fields sent; POST on the item does the same", async () => {
    const t = await seedTenant(platform);
    const flowId = await insertFlow(t.accountId);
    const n = await createNumber(t, { label: "Old", max_channels: 5, dest_xform: { prepend: "1" } });
    const r = await call(app, "PATCH", `/v1/numbers/${n.id}`, { key: t.key, body: { label: "New", status: "disabled", max_channels: null } });
    expect(r.status).toBe(200);
    expect(r.body.data).toEqual({ ...n, label: "New", status: "disabled", max_channels: null, updated_at: r.body.data.updated_at });
    const p = await call(app, "POST", `/v1/numbers/${n.id}`, { key: t.key, body: { dest_kind: "flow", dest_id: flowId, fax_mode: "passthrough" } });
    expect(p.status).toBe(200);
    expect(p.body.data).toMatchObject({ label: "New", status: "disabled", dest_kind: "flow", dest_id: flowId, dest_xform: { prepend: "1" }, fax_mode: "passthrough" });
    expect((await call(app, "GET", `/v1/numbers/${n.id}`, { key: t.key })).body.data).toEqual(p.body.data);
  });

  test("PATCH: a kind sent without its id clears the id; closed_dest_kind null clears that slot", async () => {
    const t = await seedTenant(platform);
    const flowId = await insertFlow(t.accountId);
    const scheduleId = await insertSchedule(t.accountId);
    const n = await createNumber(t, { dest_kind: "flow", dest_id: flowId, schedule_id: scheduleId, closed_dest_kind: "flow", closed_dest_id: flowId });
    const r = await call(app, "PATCH", `/v1/numbers/${n.id}`, { key: t.key, body: { dest_kind: "hangup", closed_dest_kind: null } });
    expect(r.status).toBe(200);
    expect(r.body.data).toMatchObject({ dest_kind: "hangup", dest_id: null, closed_dest_kind: null, closed_dest_id: null, schedule_id: scheduleId });
    const cleared = await call(app, "PATCH", `/v1/numbers/${n.id}`, { key: t.key, body: { schedule_id: null } });
    expect(cleared.status).toBe(200);
    expect(cleared.body.data.schedule_id).toBeNull();
  });

  test("a new e164 moves the DID lookup and frees the old number for any account", async () => {
    const t = await seedTenant(platform);
    const other = await seedTenant(platform);
    const n = await createNumber(t);
    const next = randomE164();
    const r = await call(app, "PATCH", `/v1/numbers/${n.id}`, { key: t.key, body: { e164: typed(next) } });
    expect(r.status).toBe(200);
    expect(r.body.data.e164).toBe(next);
    expect(await lookupRows(n.e164)).toEqual([]);
    expect(await lookupRows(next)).toEqual([{ e164: next, account_id: t.accountId, number_id: n.id }]);
    const reused = await createNumber(other, { e164: n.e164 });
    expect(await lookupRows(n.e164)).toEqual([{ e164: n.e164, account_id: other.accountId, number_id: reused.id }]);
  });

  test("DELETE removes the number and its lookup; the e164 can be added again", async () => {
    const t = await seedTenant(platform);
    const n = await createNumber(t);
    expect((await call(app, "DELETE", `/v1/numbers/${n.id}`, { key: t.key })).body).toEqual({ ok: true });
    expect((await call(app, "GET", `/v1/numbers/${n.id}`, { key: t.key })).status).toBe(404);
    expect(await lookupRows(n.e164)).toEqual([]);
    expect((await call(app, "DELETE", `/v1/numbers/${n.id}`, { key: t.key })).status).toBe(404);
    await createNumber(t, { e164: n.e164 });
  });

  test("an Idempotency-Key retry of a create replays the reply without a second number", async () => {
    const t = await seedTenant(platform);
    const body = { e164: randomE164(), dest_kind: "hangup" };
    const headers = { "idempotency-key": `num-${Date.now()}-${Math.random()}` };
    const first = await call(app, "POST", "/v1/numbers", { key: t.key, body, headers });
    expect(first.status).toBe(201);
    const again = await call(app, "POST", "/v1/numbers", { key: t.key, body, headers });
    expect(again.status).toBe(201);
    expect(again.headers.get("idempotency-replayed")).toBe("true");
    expect(again.body).toEqual(first.body);
    expect(await countNumbers(t.accountId)).toBe(1);
  });
});

describe(`/v1/numbers errors [${storeKind}]`, () => {
  test("400 naming the field for every bad value; nothing is created", async () => {
    const t = await seedTenant(platform);
    const ok = { e164: randomE164(), dest_kind: "hangup" };
    const cases: Array<[Json, string]> = [
      [{ dest_kind: "hangup" }, "/e164"],
      [{ ...ok, e164: "12345" }, "/e164"],
      [{ ...ok, e164: "+0123456789" }, "/e164"],
      [{ ...ok, e164: "call me" }, "/e164"],
      [{ ...ok, e164: 14155550123 }, "/e164"],
      [{ ...ok, status: "gone" }, "/status"],
      [{ ...ok, fax_mode: "fax" }, "/fax_mode"],
      [{ ...ok, allow_anonymous: 2 }, "/allow_anonymous"],
      [{ ...ok, allow_anonymous: true }, "/allow_anonymous"],
      [{ ...ok, max_channels: -1 }, "/max_channels"],
      [{ ...ok, max_channels: "5" }, "/max_channels"],
      [{ ...ok, max_channels: 1.5 }, "/max_channels"],
      [{ ...ok, label: "" }, "/label"],
      [{ ...ok, label: "x".repeat(101) }, "/label"],
      [{ ...ok, schedule_id: "sch_nope" }, "/schedule_id"],
      [{ ...ok, dest_kind: "feature", dest_id: "voicemail_main" }, "/dest_kind"],
      [{ ...ok, dest_kind: "teleport" }, "/dest_kind"],
      // A nullable object: the validator names the field, not the member inside it.
      [{ ...ok, dest_xform: { strip_digits: 99 } }, "/dest_xform"],
      [{ ...ok, dest_xform: { shout: 1 } }, "/dest_xform"],
      [{ ...ok, account_id: "acc_x" }, "/account_id"],
      [{ ...ok, id: "num_x" }, "/id"],
    ];
    for (const [body, path] of cases) {
      const r = await call(app, "POST", "/v1/numbers", { key: t.key, body });
      expect(r.status, JSON.stringify(body)).toBe(400);
      expect(r.body.error).toBe("validation_failed");
      expect(paths(r.body), JSON.stringify(body)).toContain(path);
    }
    expect(await countNumbers(t.accountId)).toBe(0);
  });

  test("400 for a missing, incomplete or mismatched destination", async () => {
    const t = await seedTenant(platform);
    const flowId = await insertFlow(t.accountId);
    const ext = await createExtension(t);
    const cases: Array<[Json, string, RegExp]> = [
      [{}, "/dest_kind", /destination is required/],
      [{ dest_kind: null }, "/dest_kind", /destination is required/],
      [{ dest_id: flowId }, "/dest_kind", /required with dest_id/],
      [{ dest_kind: "flow" }, "/dest_id", /flow id is required/],
      [{ dest_kind: "hangup", dest_id: flowId }, "/dest_id", /hangup takes no/],
      [{ dest_kind: "flow", dest_id: ext }, "/dest_id", /Not a flow id/],
      [{ dest_kind: "extension", dest_id: flowId }, "/dest_id", /Not an extension id/],
      [{ dest_kind: "queue", dest_id: newId("q") }, "/dest_id", /No such queue in this account/],
      [{ dest_kind: "flow", dest_id: newId("flow") }, "/dest_id", /No such flow in this account/],
    ];
    for (const [extra, path, message] of cases) {
      const r = await call(app, "POST", "/v1/numbers", { key: t.key, body: { e164: randomE164(), ...extra } });
      expect(r.status, JSON.stringify(extra)).toBe(400);
      const detail = (r.body.details as Json[]).find((d) => d.path === path);
      expect(detail?.message, JSON.stringify(extra)).toMatch(message);
    }
    expect(await countNumbers(t.accountId)).toBe(0);
  });

  test("another account's flow, extension or schedule reads exactly like a missing one", async () => {
    const t = await seedTenant(platform);
    const other = await seedTenant(platform);
    const theirFlow = await insertFlow(other.accountId);
    const theirExt = await createExtension(other);
    const theirSchedule = await insertSchedule(other.accountId);
    const detailsFor = async (body: Json) => {
      const r = await call(app, "POST", "/v1/numbers", { key: t.key, body: { e164: randomE164(), ...body } });
      expect(r.status).toBe(400);
      return r.body.details;
    };
    const missingFlow = await detailsFor({ dest_kind: "flow", dest_id: newId("flow") });
    expect(missingFlow).toEqual([{ path: "/dest_id", message: "No such flow in this account." }]);
    expect(await detailsFor({ dest_kind: "flow", dest_id: theirFlow })).toEqual(missingFlow);
    const missingExt = await detailsFor({ dest_kind: "extension", dest_id: newId("ext") });
    expect(missingExt).toEqual([{ path: "/dest_id", message: "No such extension in this account." }]);
    expect(await detailsFor({ dest_kind: "extension", dest_id: theirExt })).toEqual(missingExt);
    const missingSchedule = await detailsFor({ dest_kind: "hangup", schedule_id: newId("sch") });
    expect(missingSchedule).toEqual([{ path: "/schedule_id", message: "No such schedule in this account." }]);
    expect(await detailsFor({ dest_kind: "hangup", schedule_id: theirSchedule })).toEqual(missingSchedule);
    expect(await detailsFor({ dest_kind: "hangup", schedule_id: newId("sch"), holiday_dest_kind: "flow", holiday_dest_id: theirFlow })).toEqual([
      { path: "/schedule_id", message: "No such schedule in this account." },
      { path: "/holiday_dest_id", message: "No such flow in this account." },
    ]);
    expect(await countNumbers(t.accountId)).toBe(0);
  });

  test("closed and holiday destinations need a schedule", async () => {
    const t = await seedTenant(platform);
    const flowId = await insertFlow(t.accountId);
    const scheduleId = await insertSchedule(t.accountId);
    const closed = await call(app, "POST", "/v1/numbers", { key: t.key, body: { e164: randomE164(), dest_kind: "hangup", closed_dest_kind: "flow", closed_dest_id: flowId } });
    expect(closed.status).toBe(400);
    expect(paths(closed.body)).toEqual(["/closed_dest_kind"]);
    const holiday = await call(app, "POST", "/v1/numbers", { key: t.key, body: { e164: randomE164(), dest_kind: "hangup", holiday_dest_kind: "hangup" } });
    expect(paths(holiday.body)).toEqual(["/holiday_dest_kind"]);
    const n = await createNumber(t, { schedule_id: scheduleId, closed_dest_kind: "flow", closed_dest_id: flowId });
    const unschedule = await call(app, "PATCH", `/v1/numbers/${n.id}`, { key: t.key, body: { schedule_id: null } });
    expect(unschedule.status).toBe(400);
    expect(paths(unschedule.body)).toEqual(["/schedule_id"]);
    expect((await call(app, "GET", `/v1/numbers/${n.id}`, { key: t.key })).body.data).toEqual(n);
    const both = await call(app, "PATCH", `/v1/numbers/${n.id}`, { key: t.key, body: { schedule_id: null, closed_dest_kind: null } });
    expect(both.status).toBe(200);
    expect(both.body.data).toMatchObject({ schedule_id: null, closed_dest_kind: null, closed_dest_id: null });
  });

  test("409 for an e164 another account already has, however it is typed; nothing is created", async () => {
    const a = await seedTenant(platform);
    const b = await seedTenant(platform);
    const n = await createNumber(a);
    for (const [t, e164] of [[b, typed(n.e164)], [b, `00${n.e164}`], [a, n.e164]] as const) {
      const r = await call(app, "POST", "/v1/numbers", { key: t.key, body: { e164, dest_kind: "hangup" } });
      expect(r.status).toBe(409);
      expect(r.body).toMatchObject({ ok: false, error: "conflict", field: "e164" });
    }
    expect(await countNumbers(b.accountId)).toBe(0);
    expect(await lookupRows(n.e164)).toEqual([{ e164: n.e164, account_id: a.accountId, number_id: n.id }]);
  });

  test("409 for a PATCH to a taken e164; the number keeps its own", async () => {
    const a = await seedTenant(platform);
    const b = await seedTenant(platform);
    const mine = await createNumber(a);
    const theirs = await createNumber(b);
    const r = await call(app, "PATCH", `/v1/numbers/${mine.id}`, { key: a.key, body: { e164: theirs.e164, label: "changed" } });
    expect(r.status).toBe(409);
    expect(r.body.field).toBe("e164");
    expect((await call(app, "GET", `/v1/numbers/${mine.id}`, { key: a.key })).body.data).toEqual(mine);
    expect(await lookupRows(mine.e164)).toEqual([{ e164: mine.e164, account_id: a.accountId, number_id: mine.id }]);
  });

  test("a refused PATCH changes nothing", async () => {
    const t = await seedTenant(platform);
    const other = await seedTenant(platform);
    const n = await createNumber(t);
    const theirFlow = await insertFlow(other.accountId);
    for (const body of [
      { label: "x", dest_kind: "flow", dest_id: theirFlow },
      { label: "x", e164: "123" },
      { label: "x", dest_kind: null },
      {},
    ]) {
      const r = await call(app, "PATCH", `/v1/numbers/${n.id}`, { key: t.key, body });
      expect(r.status, JSON.stringify(body)).toBe(400);
    }
    expect((await call(app, "GET", `/v1/numbers/${n.id}`, { key: t.key })).body.data).toEqual(n);
  });

  test("400 for bad list queries", async () => {
    const t = await seedTenant(platform);
    for (const query of ["q=abc", "q=1-415", "status=gone", "dest_kind=feature", "limit=0", "cursor=garbage", "colour=red"]) {
      const r = await call(app, "GET", `/v1/numbers?${query}`, { key: t.key });
      expect(r.status, query).toBe(400);
      expect(r.body.error).toBe("validation_failed");
    }
  });

  test("404 for an unknown number", async () => {
    const t = await seedTenant(platform);
    const id = newId("num");
    expect((await call(app, "GET", `/v1/numbers/${id}`, { key: t.key })).body.error).toBe("not_found");
    expect((await call(app, "PATCH", `/v1/numbers/${id}`, { key: t.key, body: { label: "x" } })).status).toBe(404);
    expect((await call(app, "DELETE", `/v1/numbers/${id}`, { key: t.key })).status).toBe(404);
  });

  test("409 when deleting a number a call forward belongs to", async () => {
    const t = await seedTenant(platform);
    const n = await createNumber(t);
    const fwd = newId("fwd");
    await platform.db.execute(
      sql`insert into forward (account_id, id, number_id, number, trigger, created_at, updated_at) values (${t.accountId}, ${fwd}, ${n.id}, '14155550123', 'always', 0, 0)`,
    );
    const r = await call(app, "DELETE", `/v1/numbers/${n.id}`, { key: t.key });
    expect(r.status).toBe(409);
    expect(r.body.used_by).toEqual([{ kind: "forward", id: fwd }]);
    expect(await lookupRows(n.e164)).toHaveLength(1);
  });
});

describe(`/v1/numbers security [${storeKind}]`, () => {
  test("401 without a credential, whatever the body", async () => {
    expect((await call(app, "GET", "/v1/numbers")).status).toBe(401);
    const r = await call(app, "POST", "/v1/numbers", { body: { nonsense: true } });
    expect(r.status).toBe(401);
    expect(r.body.error).toBe("unauthorized");
  });

  test("403 naming the numbers scope", async () => {
    const t = await seedTenant(platform);
    const n = await createNumber(t);
    const key = await keyWithScopes(platform, t.accountId, ["extensions", "cdr"]);
    for (const [method, path, body] of [
      ["GET", "/v1/numbers", undefined],
      ["POST", "/v1/numbers", { e164: randomE164(), dest_kind: "hangup" }],
      ["GET", `/v1/numbers/${n.id}`, undefined],
      ["PATCH", `/v1/numbers/${n.id}`, { label: "x" }],
      ["POST", `/v1/numbers/${n.id}`, { label: "x" }],
      ["DELETE", `/v1/numbers/${n.id}`, undefined],
    ] as const) {
      const r = await call(app, method, path, { key, body });
      expect(r.status, `${method} ${path}`).toBe(403);
      expect(r.body.need).toBe("numbers");
    }
    expect((await call(app, "GET", `/v1/numbers/${n.id}`, { key: t.key })).body.data).toEqual(n);
  });

  test("another account's number is a 404 to read, change or delete, and absent from the list", async () => {
    const mine = await seedTenant(platform);
    const theirs = await seedTenant(platform);
    const n = await createNumber(theirs);
    expect((await call(app, "GET", `/v1/numbers/${n.id}`, { key: mine.key })).status).toBe(404);
    expect((await call(app, "PATCH", `/v1/numbers/${n.id}`, { key: mine.key, body: { label: "pwned" } })).status).toBe(404);
    expect((await call(app, "POST", `/v1/numbers/${n.id}`, { key: mine.key, body: { label: "pwned" } })).status).toBe(404);
    expect((await call(app, "DELETE", `/v1/numbers/${n.id}`, { key: mine.key })).status).toBe(404);
    expect((await call(app, "GET", "/v1/numbers", { key: mine.key })).body.data).toEqual([]);
    expect((await call(app, "GET", `/v1/numbers/${n.id}`, { key: theirs.key })).body.data).toEqual(n);
    expect(await lookupRows(n.e164)).toHaveLength(1);
  });
});
