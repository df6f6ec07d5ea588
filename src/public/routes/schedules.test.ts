/** /v1/schedules: happy paths, errors and security. */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { sql } from "drizzle-orm";
import type { Platform } from "../../core/platform.ts";
import { createPublicApp } from "../app.ts";
import { identityRoutes } from "./identity.ts";
import { scheduleRoutes } from "./schedules.ts";
import { keyWithScopes, seedTenant, storeKind, testPlatform } from "../../../test/support/platform.ts";
import { call, type Json } from "../../../test/support/http.ts";
import { rawRows } from "../../core/db/migrate.ts";
import { newId } from "../../core/ids/ids.ts";
import { createRingGroup } from "../../core/ring-groups/ring-groups.service.ts";

let platform: Platform;
let app: ReturnType<typeof createPublicApp>;

beforeAll(async () => {
  platform = await testPlatform();
  app = createPublicApp(platform, [identityRoutes, scheduleRoutes]);
});
afterAll(() => platform.close());

const OFFICE_RULES = [
  { kind: "weekly", dow: 1, start_time: "09:00", end_time: "17:00" },
  { kind: "weekly", dow: 5, start_time: "18:00", end_time: "24:00", label: "Late Friday" },
  { kind: "date", start_date: "2025-12-25", is_closed: 1, label: "Christmas" },
  { kind: "date", start_date: "2025-12-24", start_time: "09:00", end_time: "12:00" },
  { kind: "date_range", start_date: "2025-12-30", end_date: "2026-01-02", is_closed: 1 },
];

async function ruleRowCount(accountId: string, scheduleId: string): Promise<number> {
  const rows = await rawRows<{ n: number | string }>(
    platform.db,
    sql`select count(*) as n from time_schedule_rule where account_id = ${accountId} and schedule_id = ${scheduleId}`,
  );
  return Number(rows[0]!.n);
}

async function scheduleRowCount(accountId: string): Promise<number> {
  const rows = await rawRows<{ n: number | string }>(platform.db, sql`select count(*) as n from time_schedule where account_id = ${accountId}`);
  return Number(rows[0]!.n);
}

async function create(key: string, body: Json) {
  const r = await call(app, "POST", "/v1/schedules", { key, body });
  expect(r.status).toBe(201);
  return r.body.data as Json;
}

describe(`/v1/schedules happy [${storeKind}]`, () => {
  test("create with every kind of rule; GET returns the rules in order with every field", async () => {
    const t = await seedTenant(platform);
    const data = await create(t.key, { name: "Office hours", timezone: "Europe/Paris", rules: OFFICE_RULES });
    expect(data.id).toMatch(/^sch_[0-9A-Z]{26}$/);
    expect(data).toMatchObject({ name: "Office hours", timezone: "Europe/Paris" });
    expect(Object.keys(data).sort()).toEqual(["created_at", "id", "name", "rules", "timezone", "updated_at"]);
    expect(data.rules).toEqual([
      { position: 0, kind: "weekly", dow: 1, start_time: "09:00", end_time: "17:00", start_date: null, end_date: null, is_closed: 0, label: null },
      { position: 1, kind: "weekly", dow: 5, start_time: "18:00", end_time: "24:00", start_date: null, end_date: null, is_closed: 0, label: "Late Friday" },
      { position: 2, kind: "date", dow: null, start_time: null, end_time: null, start_date: "2025-12-25", end_date: null, is_closed: 1, label: "Christmas" },
      { position: 3, kind: "date", dow: null, start_time: "09:00", end_time: "12:00", start_date: "2025-12-24", end_date: null, is_closed: 0, label: null },
      { position: 4, kind: "date_range", dow: null, start_time: null, end_time: null, start_date: "2025-12-30", end_date: "2026-01-02", is_closed: 1, label: null },
    ]);
    const got = await call(app, "GET", `/v1/schedules/${data.id}`, { key: t.key });
    expect(got.status).toBe(200);
    expect(got.body.data).toEqual(data);
  });

  test("a schedule without a time zone or rules inherits the account's zone and is empty", async () => {
    const t = await seedTenant(platform);
    const data = await create(t.key, { name: "Never open" });
    expect(data).toMatchObject({ timezone: null, rules: [] });
  });

  test("PATCH changes only what is sent; rules, when sent, replace the whole set", async () => {
    const t = await seedTenant(platform);
    const s = await create(t.key, { name: "Support", rules: OFFICE_RULES });
    const renamed = await call(app, "PATCH", `/v1/schedules/${s.id}`, { key: t.key, body: { name: "Support desk", timezone: "America/New_York" } });
    expect(renamed.status).toBe(200);
    expect(renamed.body.data).toMatchObject({ name: "Support desk", timezone: "America/New_York" });
    expect(renamed.body.data.rules).toEqual(s.rules);

    const replaced = await call(app, "PATCH", `/v1/schedules/${s.id}`, {
      key: t.key,
      body: { rules: [{ kind: "weekly", dow: 2, start_time: "08:00", end_time: "12:00" }] },
    });
    expect(replaced.body.data.name).toBe("Support desk");
    expect(replaced.body.data.rules).toEqual([
      { position: 0, kind: "weekly", dow: 2, start_time: "08:00", end_time: "12:00", start_date: null, end_date: null, is_closed: 0, label: null },
    ]);
    expect(await ruleRowCount(t.accountId, s.id)).toBe(1);

    const cleared = await call(app, "PATCH", `/v1/schedules/${s.id}`, { key: t.key, body: { rules: [], timezone: null } });
    expect(cleared.body.data).toMatchObject({ rules: [], timezone: null });
    expect(await ruleRowCount(t.accountId, s.id)).toBe(0);
  });

  test("POST on the item is the same update as PATCH", async () => {
    const t = await seedTenant(platform);
    const s = await create(t.key, { name: "Weekend", rules: OFFICE_RULES });
    const r = await call(app, "POST", `/v1/schedules/${s.id}`, { key: t.key, body: { name: "Weekend desk", rules: OFFICE_RULES.slice(0, 2) } });
    expect(r.status).toBe(200);
    expect(r.body.data.name).toBe("Weekend desk");
    expect((r.body.data.rules as Json[]).length).toBe(2);
    expect((await call(app, "GET", `/v1/schedules/${s.id}`, { key: t.key })).body.data.name).toBe("Weekend desk");
  });

  test("rules read back from GET (nulls included) can be written again unchanged", async () => {
    const t = await seedTenant(platform);
    const s = await create(t.key, { name: "Round trip", rules: OFFICE_RULES });
    const rules = (s.rules as Json[]).map(({ position: _position, ...rule }) => rule);
    const r = await call(app, "PATCH", `/v1/schedules/${s.id}`, { key: t.key, body: { rules } });
    expect(r.status).toBe(200);
    expect(r.body.data.rules).toEqual(s.rules);
  });

  test("up to 500 rules", async () => {
    const t = await seedTenant(platform);
    const rules = Array.from({ length: 500 }, (_, i) => ({ kind: "date", start_date: `20${String(30 + Math.floor(i / 12)).padStart(2, "0")}-${String((i % 12) + 1).padStart(2, "0")}-01`, is_closed: 1 }));
    const s = await create(t.key, { name: "Many", rules });
    expect((s.rules as Json[]).length).toBe(500);
    expect((s.rules as Json[])[499]!.position).toBe(499);
  });

  test("DELETE removes the schedule and its rules", async () => {
    const t = await seedTenant(platform);
    const s = await create(t.key, { name: "Temporary", rules: OFFICE_RULES });
    expect(await ruleRowCount(t.accountId, s.id)).toBe(5);
    const r = await call(app, "DELETE", `/v1/schedules/${s.id}`, { key: t.key });
    expect(r.status).toBe(200);
    expect(r.body).toEqual({ ok: true });
    expect((await call(app, "GET", `/v1/schedules/${s.id}`, { key: t.key })).status).toBe(404);
    expect(await ruleRowCount(t.accountId, s.id)).toBe(0);
    expect((await call(app, "DELETE", `/v1/schedules/${s.id}`, { key: t.key })).status).toBe(404);
  });

  test("list: summaries with rule_count, filter q by name prefix (any case, wildcards literal)", async () => {
    const t = await seedTenant(platform);
    const a = await create(t.key, { name: "Sales hours", rules: OFFICE_RULES });
    const b = await create(t.key, { name: "sales_weekend" });
    await create(t.key, { name: "Support" });
    await create(t.key, { name: "salesXweekend" });
    const all = await call(app, "GET", "/v1/schedules", { key: t.key });
    expect(all.status).toBe(200);
    expect((all.body.data as Json[]).length).toBe(4);
    expect(all.body.next_cursor).toBeUndefined();
    const first = (all.body.data as Json[])[0]!;
    expect(Object.keys(first).sort()).toEqual(["created_at", "id", "name", "rule_count", "timezone", "updated_at"]);
    expect(first).toMatchObject({ id: a.id, rule_count: 5 });
    const sales = await call(app, "GET", "/v1/schedules?q=SALES", { key: t.key });
    expect((sales.body.data as Json[]).map((s) => s.name)).toEqual(["Sales hours", "sales_weekend", "salesXweekend"]);
    const underscore = await call(app, "GET", "/v1/schedules?q=sales_", { key: t.key });
    expect((underscore.body.data as Json[]).map((s) => s.id)).toEqual([b.id]);
  });

  test("pagination walks every schedule exactly once with limit=2", async () => {
    const t = await seedTenant(platform);
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push((await create(t.key, { name: `Page ${i}` })).id);
    const seen: string[] = [];
    let cursor: string | undefined;
    let pages = 0;
    do {
      const page = await call(app, "GET", `/v1/schedules?limit=2${cursor ? `&cursor=${cursor}` : ""}`, { key: t.key });
      expect(page.status).toBe(200);
      expect((page.body.data as Json[]).length).toBeLessThanOrEqual(2);
      seen.push(...(page.body.data as Json[]).map((s) => s.id as string));
      cursor = page.body.next_cursor;
      pages++;
    } while (cursor);
    expect(pages).toBe(3);
    expect(seen).toEqual(ids);
  });

  test("an Idempotency-Key replay of a create returns the first reply and creates nothing more", async () => {
    const t = await seedTenant(platform);
    const headers = { "idempotency-key": "create-schedule-1" };
    const body = { name: "Once", rules: OFFICE_RULES };
    const first = await call(app, "POST", "/v1/schedules", { key: t.key, body, headers });
    expect(first.status).toBe(201);
    const again = await call(app, "POST", "/v1/schedules", { key: t.key, body, headers });
    expect(again.status).toBe(201);
    expect(again.headers.get("idempotency-replayed")).toBe("true");
    expect(again.body).toEqual(first.body);
    expect(await scheduleRowCount(t.accountId)).toBe(1);
  });
});

describe(`/v1/schedules errors [${storeKind}]`, () => {
  const weekly = { kind: "weekly", dow: 1, start_time: "09:00", end_time: "17:00" };
  const cases: Array<[string, Json, string[]]> = [
    ["no name", {}, ["/name"]],
    ["empty name", { name: "" }, ["/name"]],
    ["unknown zone", { name: "x", timezone: "Mars/Base" }, ["/timezone"]],
    ["offset instead of zone", { name: "x", timezone: "+01:00" }, ["/timezone"]],
    ["unknown field", { name: "x", color: "red" }, ["/color"]],
    ["unknown rule kind", { name: "x", rules: [{ kind: "monthly" }] }, ["/rules/0/kind"]],
    ["unknown rule field", { name: "x", rules: [{ ...weekly, note: "x" }] }, ["/rules/0/note"]],
    ["dow out of range", { name: "x", rules: [{ ...weekly, dow: 7 }] }, ["/rules/0/dow"]],
    ["dow as string", { name: "x", rules: [{ ...weekly, dow: "1" }] }, ["/rules/0/dow"]],
    ["bad time shape", { name: "x", rules: [weekly, { ...weekly, end_time: "17:60" }] }, ["/rules/1/end_time"]],
    ["25:00", { name: "x", rules: [{ ...weekly, start_time: "25:00" }] }, ["/rules/0/start_time"]],
    ["bad date shape", { name: "x", rules: [{ kind: "date", start_date: "2025-13-01" }] }, ["/rules/0/start_date"]],
    ["is_closed 2", { name: "x", rules: [{ ...weekly, is_closed: 2 }] }, ["/rules/0/is_closed"]],
    ["is_closed true", { name: "x", rules: [{ ...weekly, is_closed: true }] }, ["/rules/0/is_closed"]],
    ["weekly without dow", { name: "x", rules: [{ kind: "weekly", start_time: "09:00", end_time: "17:00" }] }, ["/rules/0/dow"]],
    ["weekly without times", { name: "x", rules: [weekly, weekly, weekly, { kind: "weekly", dow: 2 }] }, ["/rules/3/start_time", "/rules/3/end_time"]],
    ["weekly with a date", { name: "x", rules: [{ ...weekly, start_date: "2025-01-01" }] }, ["/rules/0/start_date"]],
    ["end before start", { name: "x", rules: [weekly, weekly, weekly, { ...weekly, start_time: "17:00", end_time: "09:00" }] }, ["/rules/3/end_time"]],
    ["empty window", { name: "x", rules: [{ ...weekly, start_time: "09:00", end_time: "09:00" }] }, ["/rules/0/end_time"]],
    ["start at 24:00", { name: "x", rules: [{ ...weekly, start_time: "24:00", end_time: "24:00" }] }, ["/rules/0/start_time"]],
    ["date without a day", { name: "x", rules: [{ kind: "date", is_closed: 1 }] }, ["/rules/0/start_date"]],
    ["dow on a date rule", { name: "x", rules: [{ kind: "date", start_date: "2025-12-25", dow: 4 }] }, ["/rules/0/dow"]],
    ["end_date on a date rule", { name: "x", rules: [{ kind: "date", start_date: "2025-12-25", end_date: "2025-12-26" }] }, ["/rules/0/end_date"]],
    ["impossible day", { name: "x", rules: [{ kind: "date", start_date: "2025-02-29" }] }, ["/rules/0/start_date"]],
    ["date with only a start time", { name: "x", rules: [{ kind: "date", start_date: "2025-12-24", start_time: "14:00" }] }, ["/rules/0/end_time"]],
    ["date with only an end time", { name: "x", rules: [{ kind: "date", start_date: "2025-12-24", end_time: "14:00" }] }, ["/rules/0/start_time"]],
    ["range without its end", { name: "x", rules: [{ kind: "date_range", start_date: "2025-12-24" }] }, ["/rules/0/end_date"]],
    ["range backwards", { name: "x", rules: [{ kind: "date_range", start_date: "2025-12-24", end_date: "2025-12-23" }] }, ["/rules/0/end_date"]],
    ["range with an impossible end", { name: "x", rules: [{ kind: "date_range", start_date: "2025-04-01", end_date: "2025-04-31" }] }, ["/rules/0/end_date"]],
    ["dow on a range", { name: "x", rules: [{ kind: "date_range", start_date: "2025-12-24", end_date: "2025-12-26", dow: 3 }] }, ["/rules/0/dow"]],
    ["label too long", { name: "x", rules: [{ ...weekly, label: "x".repeat(101) }] }, ["/rules/0/label"]],
    ["501 rules", { name: "x", rules: Array.from({ length: 501 }, () => weekly) }, ["/rules"]],
  ];

  test.each(cases)("400 on create: %s", async (_name, body, paths) => {
    const t = await seedTenant(platform);
    const r = await call(app, "POST", "/v1/schedules", { key: t.key, body });
    expect(r.status).toBe(400);
    expect(r.body.error).toBe("validation_failed");
    const got = (r.body.details as Json[]).map((d) => d.path);
    for (const path of paths) expect(got).toContain(path);
    expect(await scheduleRowCount(t.accountId)).toBe(0);
  });

  test("400 on update names the rule, and changes nothing", async () => {
    const t = await seedTenant(platform);
    const s = await create(t.key, { name: "Keep me", rules: OFFICE_RULES });
    const bad = [...OFFICE_RULES, { kind: "date", start_date: "2025-12-31", dow: 3 }];
    for (const method of ["PATCH", "POST"]) {
      const r = await call(app, method, `/v1/schedules/${s.id}`, { key: t.key, body: { name: "Changed", rules: bad } });
      expect(r.status).toBe(400);
      expect(r.body.details).toEqual([{ path: "/rules/5/dow", message: "dow does not apply to a date rule." }]);
    }
    const after = await call(app, "GET", `/v1/schedules/${s.id}`, { key: t.key });
    expect(after.body.data).toEqual(s);
    expect((await call(app, "PATCH", `/v1/schedules/${s.id}`, { key: t.key, body: {} })).status).toBe(400);
    expect((await call(app, "PATCH", `/v1/schedules/${s.id}`, { key: t.key, body: { timezone: "Nowhere/Town" } })).body.details[0].path).toBe("/timezone");
  });

  test("400 for bad list queries", async () => {
    const t = await seedTenant(platform);
    expect((await call(app, "GET", "/v1/schedules?limit=0", { key: t.key })).status).toBe(400);
    expect((await call(app, "GET", "/v1/schedules?cursor=nope", { key: t.key })).status).toBe(400);
    const unknown = await call(app, "GET", "/v1/schedules?color=red", { key: t.key });
    expect(unknown.status).toBe(400);
  });

  test("409 for a name already taken (any case), on create and on rename", async () => {
    const t = await seedTenant(platform);
    await create(t.key, { name: "Office" });
    const other = await create(t.key, { name: "Other" });
    const dup = await call(app, "POST", "/v1/schedules", { key: t.key, body: { name: "OFFICE", rules: OFFICE_RULES } });
    expect(dup.status).toBe(409);
    expect(dup.body).toMatchObject({ error: "conflict", field: "name" });
    const rename = await call(app, "PATCH", `/v1/schedules/${other.id}`, { key: t.key, body: { name: "office", rules: [] } });
    expect(rename.status).toBe(409);
    expect(rename.body.field).toBe("name");
    expect(await scheduleRowCount(t.accountId)).toBe(2);
    // The failed rename left its rules alone (there were none) and its name.
    expect((await call(app, "GET", `/v1/schedules/${other.id}`, { key: t.key })).body.data.name).toBe("Other");
    // Another account may use the same name.
    const u = await seedTenant(platform);
    expect((await call(app, "POST", "/v1/schedules", { key: u.key, body: { name: "Office" } })).status).toBe(201);
  });

  test("409 when deleting a schedule a ring group uses; deletable once it is released", async () => {
    const t = await seedTenant(platform);
    const s = await create(t.key, { name: "Used", rules: OFFICE_RULES });
    const group = await createRingGroup(platform.db, t.accountId, { name: "Front desk", schedule_id: s.id });
    const r = await call(app, "DELETE", `/v1/schedules/${s.id}`, { key: t.key });
    expect(r.status).toBe(409);
    expect(r.body).toMatchObject({ error: "conflict", used_by: [{ kind: "ring_group", id: group.id }] });
    expect(await ruleRowCount(t.accountId, s.id)).toBe(5);
    await rawRows(platform.db, sql`update ring_group set schedule_id = null where account_id = ${t.accountId} and id = ${group.id}`);
    expect((await call(app, "DELETE", `/v1/schedules/${s.id}`, { key: t.key })).status).toBe(200);
  });

  test("404 for an unknown id on every item route", async () => {
    const t = await seedTenant(platform);
    const id = newId("sch");
    expect((await call(app, "GET", `/v1/schedules/${id}`, { key: t.key })).body.error).toBe("not_found");
    expect((await call(app, "PATCH", `/v1/schedules/${id}`, { key: t.key, body: { name: "x" } })).status).toBe(404);
    expect((await call(app, "POST", `/v1/schedules/${id}`, { key: t.key, body: { name: "x" } })).status).toBe(404);
    expect((await call(app, "DELETE", `/v1/schedules/${id}`, { key: t.key })).status).toBe(404);
  });
});

describe(`/v1/schedules security [${storeKind}]`, () => {
  test("401 without a credential", async () => {
    expect((await call(app, "GET", "/v1/schedules")).status).toBe(401);
    const r = await call(app, "POST", "/v1/schedules", { body: { name: "x" } });
    expect(r.status).toBe(401);
    expect(r.body.error).toBe("unauthorized");
  });

  test("403 naming the scope without schedules", async () => {
    const t = await seedTenant(platform);
    const s = await create(t.key, { name: "Guarded" });
    const key = await keyWithScopes(platform, t.accountId, ["ringgroups", "numbers"]);
    const attempts: Array<[string, string, Json | undefined]> = [
      ["GET", "/v1/schedules", undefined],
      ["POST", "/v1/schedules", { name: "y" }],
      ["GET", `/v1/schedules/${s.id}`, undefined],
      ["PATCH", `/v1/schedules/${s.id}`, { name: "z" }],
      ["POST", `/v1/schedules/${s.id}`, { name: "z" }],
      ["DELETE", `/v1/schedules/${s.id}`, undefined],
    ];
    for (const [method, path, body] of attempts) {
      const r = await call(app, method, path, { key, body });
      expect(r.status).toBe(403);
      expect(r.body.need).toBe("schedules");
    }
    expect((await call(app, "GET", `/v1/schedules/${s.id}`, { key: t.key })).body.data.name).toBe("Guarded");
    const scoped = await keyWithScopes(platform, t.accountId, ["schedules"]);
    expect((await call(app, "GET", `/v1/schedules/${s.id}`, { key: scoped })).status).toBe(200);
  });

  test("another account's schedule is a 404 to GET, PATCH, POST and DELETE, and absent from lists", async () => {
    const mine = await seedTenant(platform);
    const theirs = await seedTenant(platform);
    const s = await create(theirs.key, { name: "Theirs", rules: OFFICE_RULES });
    expect((await call(app, "GET", `/v1/schedules/${s.id}`, { key: mine.key })).status).toBe(404);
    expect((await call(app, "PATCH", `/v1/schedules/${s.id}`, { key: mine.key, body: { name: "Mine now", rules: [] } })).status).toBe(404);
    expect((await call(app, "POST", `/v1/schedules/${s.id}`, { key: mine.key, body: { name: "Mine now" } })).status).toBe(404);
    expect((await call(app, "DELETE", `/v1/schedules/${s.id}`, { key: mine.key })).status).toBe(404);
    expect((await call(app, "GET", "/v1/schedules", { key: mine.key })).body.data).toEqual([]);
    expect((await call(app, "GET", `/v1/schedules/${s.id}`, { key: theirs.key })).body.data).toEqual(s);
  });
});
