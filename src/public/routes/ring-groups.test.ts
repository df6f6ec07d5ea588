/** /v1/ring-groups: happy paths, errors and security. */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { sql } from "drizzle-orm";
import type { Platform } from "../../core/platform.ts";
import { createPublicApp } from "../app.ts";
import { identityRoutes } from "./identity.ts";
import { ringGroupRoutes } from "./ring-groups.ts";
import { keyWithScopes, seedTenant, storeKind, testPlatform } from "../../../test/support/platform.ts";
import { call, type Json } from "../../../test/support/http.ts";
import { rawRows } from "../../core/db/migrate.ts";
import { newId } from "../../core/ids/ids.ts";
import { createSchedule } from "../../core/schedules/schedules.service.ts";

let platform: Platform;
let app: ReturnType<typeof createPublicApp>;

beforeAll(async () => {
  platform = await testPlatform();
  app = createPublicApp(platform, [identityRoutes, ringGroupRoutes]);
});
afterAll(() => platform.close());

// Users, devices and media belong to other capabilities; rows are inserted directly with only the
// columns those tables require (see users.schema.ts, devices.schema.ts, media.schema.ts).
let fixtureCounter = 0;

async function seedUser(accountId: string): Promise<string> {
  const id = newId("us");
  const n = ++fixtureCounter;
  await rawRows(
    platform.db,
    sql`insert into app_user (account_id, id, username, display_name, created_at, updated_at) values (${accountId}, ${id}, ${`u${n}`}, ${`User ${n}`}, 0, 0)`,
  );
  return id;
}

async function seedDevice(accountId: string, userId: string): Promise<string> {
  const id = newId("dev");
  const n = ++fixtureCounter;
  await rawRows(
    platform.db,
    sql`insert into device (account_id, id, user_id, auth_username, realm, ha1, ha1b, created_at, updated_at)
        values (${accountId}, ${id}, ${userId}, ${`d${n}`}, ${"test.example"}, ${"0".repeat(32)}, ${"0".repeat(32)}, 0, 0)`,
  );
  return id;
}

async function seedMedia(accountId: string): Promise<string> {
  const id = newId("med");
  await rawRows(
    platform.db,
    sql`insert into media_file (account_id, id, name, kind, object_key, format, content_type, size_bytes, duration_ms, created_at)
        values (${accountId}, ${id}, ${"Hold music"}, ${"moh"}, ${`${accountId}/media/${id}.wav`}, ${"wav"}, ${"audio/wav"}, 1000, 5000, 0)`,
  );
  return id;
}

async function memberRowCount(accountId: string, groupId: string): Promise<number> {
  const rows = await rawRows<{ n: number | string }>(
    platform.db,
    sql`select count(*) as n from ring_group_member where account_id = ${accountId} and ring_group_id = ${groupId}`,
  );
  return Number(rows[0]!.n);
}

async function groupRowCount(accountId: string): Promise<number> {
  const rows = await rawRows<{ n: number | string }>(platform.db, sql`select count(*) as n from ring_group where account_id = ${accountId}`);
  return Number(rows[0]!.n);
}

async function create(key: string, body: Json) {
  const r = await call(app, "POST", "/v1/ring-groups", { key, body });
  expect(r.status).toBe(201);
  return r.body.data as Json;
}

const GROUP_KEYS = [
  "closed_dest_id", "closed_dest_kind", "created_at", "exit_dest_id", "exit_dest_kind", "holiday_dest_id", "holiday_dest_kind",
  "id", "moh_media_id", "name", "ring_timeout_sec", "schedule_id", "strategy", "updated_at",
];

describe(`/v1/ring-groups happy [${storeKind}]`, () => {
  test("create with defaults: ring_all, 20 s, no members, nothing set", async () => {
    const t = await seedTenant(platform);
    const data = await create(t.key, { name: "Sales" });
    expect(data.id).toMatch(/^rg_[0-9A-Z]{26}$/);
    expect(Object.keys(data).sort()).toEqual([...GROUP_KEYS, "members"].sort());
    expect(data).toMatchObject({
      name: "Sales",
      strategy: "ring_all",
      ring_timeout_sec: 20,
      moh_media_id: null,
      exit_dest_kind: null,
      exit_dest_id: null,
      schedule_id: null,
      closed_dest_kind: null,
      closed_dest_id: null,
      holiday_dest_kind: null,
      holiday_dest_id: null,
      members: [],
    });
  });

  test("create with every field; GET returns it with its members in order", async () => {
    const t = await seedTenant(platform);
    const alice = await seedUser(t.accountId);
    const bob = await seedUser(t.accountId);
    const deskPhone = await seedDevice(t.accountId, bob);
    const moh = await seedMedia(t.accountId);
    const schedule = await createSchedule(platform.db, t.accountId, { name: "Hours" });
    const overflow = await create(t.key, { name: "Overflow" });
    const data = await create(t.key, {
      name: "Support",
      strategy: "sequential",
      ring_timeout_sec: 45,
      moh_media_id: moh,
      exit_dest_kind: "user",
      exit_dest_id: alice,
      schedule_id: schedule.id,
      closed_dest_kind: "hangup",
      holiday_dest_kind: "ring_group",
      holiday_dest_id: overflow.id,
      members: [{ device_id: deskPhone, delay_sec: 5 }, { user_id: alice, timeout_sec: 30 }, { user_id: bob, device_id: null }],
    });
    expect(data).toMatchObject({
      strategy: "sequential",
      ring_timeout_sec: 45,
      moh_media_id: moh,
      exit_dest_kind: "user",
      exit_dest_id: alice,
      schedule_id: schedule.id,
      closed_dest_kind: "hangup",
      closed_dest_id: null,
      holiday_dest_kind: "ring_group",
      holiday_dest_id: overflow.id,
    });
    expect(data.members).toEqual([
      { position: 0, user_id: null, device_id: deskPhone, delay_sec: 5, timeout_sec: null },
      { position: 1, user_id: alice, device_id: null, delay_sec: 0, timeout_sec: 30 },
      { position: 2, user_id: bob, device_id: null, delay_sec: 0, timeout_sec: null },
    ]);
    const got = await call(app, "GET", `/v1/ring-groups/${data.id}`, { key: t.key });
    expect(got.status).toBe(200);
    expect(got.body.data).toEqual(data);
  });

  test("PATCH changes only what is sent; members, when sent, replace the whole set", async () => {
    const t = await seedTenant(platform);
    const [a, b, c] = [await seedUser(t.accountId), await seedUser(t.accountId), await seedUser(t.accountId)];
    const g = await create(t.key, { name: "Desk", members: [{ user_id: a }, { user_id: b }] });
    const renamed = await call(app, "PATCH", `/v1/ring-groups/${g.id}`, { key: t.key, body: { name: "Front desk", strategy: "round_robin", ring_timeout_sec: 600 } });
    expect(renamed.status).toBe(200);
    expect(renamed.body.data).toMatchObject({ name: "Front desk", strategy: "round_robin", ring_timeout_sec: 600 });
    expect(renamed.body.data.members).toEqual(g.members);

    const replaced = await call(app, "PATCH", `/v1/ring-groups/${g.id}`, { key: t.key, body: { members: [{ user_id: c, delay_sec: 300 }, { user_id: a }] } });
    expect(replaced.body.data.name).toBe("Front desk");
    expect(replaced.body.data.members).toEqual([
      { position: 0, user_id: c, device_id: null, delay_sec: 300, timeout_sec: null },
      { position: 1, user_id: a, device_id: null, delay_sec: 0, timeout_sec: null },
    ]);
    expect(await memberRowCount(t.accountId, g.id)).toBe(2);

    const cleared = await call(app, "PATCH", `/v1/ring-groups/${g.id}`, { key: t.key, body: { members: [] } });
    expect(cleared.body.data.members).toEqual([]);
    expect(await memberRowCount(t.accountId, g.id)).toBe(0);
  });

  test("POST on the item is the same update as PATCH", async () => {
    const t = await seedTenant(platform);
    const u = await seedUser(t.accountId);
    const g = await create(t.key, { name: "Billing" });
    const r = await call(app, "POST", `/v1/ring-groups/${g.id}`, { key: t.key, body: { exit_dest_kind: "user", exit_dest_id: u, members: [{ user_id: u }] } });
    expect(r.status).toBe(200);
    expect(r.body.data).toMatchObject({ name: "Billing", exit_dest_kind: "user", exit_dest_id: u });
    expect((await call(app, "GET", `/v1/ring-groups/${g.id}`, { key: t.key })).body.data.members).toEqual([
      { position: 0, user_id: u, device_id: null, delay_sec: 0, timeout_sec: null },
    ]);
  });

  test("a schedule and its overrides are set and cleared together", async () => {
    const t = await seedTenant(platform);
    const schedule = await createSchedule(platform.db, t.accountId, { name: "Weekdays" });
    const g = await create(t.key, { name: "Hours", schedule_id: schedule.id, closed_dest_kind: "hangup" });
    const r = await call(app, "PATCH", `/v1/ring-groups/${g.id}`, { key: t.key, body: { schedule_id: null, closed_dest_kind: null } });
    expect(r.status).toBe(200);
    expect(r.body.data).toMatchObject({ schedule_id: null, closed_dest_kind: null, closed_dest_id: null });
  });

  test("DELETE removes the group and its members", async () => {
    const t = await seedTenant(platform);
    const u = await seedUser(t.accountId);
    const g = await create(t.key, { name: "Gone", members: [{ user_id: u }] });
    const r = await call(app, "DELETE", `/v1/ring-groups/${g.id}`, { key: t.key });
    expect(r.status).toBe(200);
    expect(r.body).toEqual({ ok: true });
    expect((await call(app, "GET", `/v1/ring-groups/${g.id}`, { key: t.key })).status).toBe(404);
    expect(await memberRowCount(t.accountId, g.id)).toBe(0);
    expect((await call(app, "DELETE", `/v1/ring-groups/${g.id}`, { key: t.key })).status).toBe(404);
  });

  test("list: summaries with member_count; filters q, user_id and device_id", async () => {
    const t = await seedTenant(platform);
    const [a, b] = [await seedUser(t.accountId), await seedUser(t.accountId)];
    const phone = await seedDevice(t.accountId, b);
    const sales = await create(t.key, { name: "Sales east", members: [{ user_id: a }, { device_id: phone }] });
    const west = await create(t.key, { name: "sales west", members: [{ user_id: b }] });
    const support = await create(t.key, { name: "Support", members: [{ user_id: a }] });
    const all = await call(app, "GET", "/v1/ring-groups", { key: t.key });
    expect(all.status).toBe(200);
    const items = all.body.data as Json[];
    expect(items.map((g) => g.id)).toEqual([sales.id, west.id, support.id]);
    expect(Object.keys(items[0]!).sort()).toEqual([...GROUP_KEYS, "member_count"].sort());
    expect(items.map((g) => g.member_count)).toEqual([2, 1, 1]);
    const ids = async (query: string) => ((await call(app, "GET", `/v1/ring-groups?${query}`, { key: t.key })).body.data as Json[]).map((g) => g.id);
    expect(await ids("q=SALES")).toEqual([sales.id, west.id]);
    expect(await ids("q=sales%20w")).toEqual([west.id]);
    expect(await ids(`user_id=${a}`)).toEqual([sales.id, support.id]);
    expect(await ids(`user_id=${b}`)).toEqual([west.id]);
    expect(await ids(`device_id=${phone}`)).toEqual([sales.id]);
    expect(await ids(`user_id=${a}&q=sup`)).toEqual([support.id]);
    expect(await ids(`user_id=${newId("us")}`)).toEqual([]);
  });

  test("pagination walks every group exactly once with limit=2", async () => {
    const t = await seedTenant(platform);
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push((await create(t.key, { name: `Group ${i}` })).id);
    const seen: string[] = [];
    let cursor: string | undefined;
    let pages = 0;
    do {
      const page = await call(app, "GET", `/v1/ring-groups?limit=2${cursor ? `&cursor=${cursor}` : ""}`, { key: t.key });
      expect(page.status).toBe(200);
      expect((page.body.data as Json[]).length).toBeLessThanOrEqual(2);
      seen.push(...(page.body.data as Json[]).map((g) => g.id as string));
      cursor = page.body.next_cursor;
      pages++;
    } while (cursor);
    expect(pages).toBe(3);
    expect(seen).toEqual(ids);
  });

  test("an Idempotency-Key replay of a create returns the first reply and creates nothing more", async () => {
    const t = await seedTenant(platform);
    const u = await seedUser(t.accountId);
    const headers = { "idempotency-key": "create-ring-group-1" };
    const body = { name: "Once", members: [{ user_id: u }] };
    const first = await call(app, "POST", "/v1/ring-groups", { key: t.key, body, headers });
    expect(first.status).toBe(201);
    const again = await call(app, "POST", "/v1/ring-groups", { key: t.key, body, headers });
    expect(again.status).toBe(201);
    expect(again.headers.get("idempotency-replayed")).toBe("true");
    expect(again.body).toEqual(first.body);
    expect(await groupRowCount(t.accountId)).toBe(1);
  });
});

describe(`/v1/ring-groups errors [${storeKind}]`, () => {
  test("400 for every bad value, naming the field, and nothing is created", async () => {
    const t = await seedTenant(platform);
    const other = await seedTenant(platform);
    const user = await seedUser(t.accountId);
    const device = await seedDevice(t.accountId, user);
    const theirUser = await seedUser(other.accountId);
    const theirMedia = await seedMedia(other.accountId);
    const theirSchedule = await createSchedule(platform.db, other.accountId, { name: "Theirs" });
    const cases: Array<[string, Json, string]> = [
      ["no name", {}, "/name"],
      ["empty name", { name: "" }, "/name"],
      ["unknown field", { name: "x", color: "red" }, "/color"],
      ["unknown strategy", { name: "x", strategy: "random" }, "/strategy"],
      ["timeout too short", { name: "x", ring_timeout_sec: 4 }, "/ring_timeout_sec"],
      ["timeout too long", { name: "x", ring_timeout_sec: 601 }, "/ring_timeout_sec"],
      ["timeout as a string", { name: "x", ring_timeout_sec: "20" }, "/ring_timeout_sec"],
      ["timeout not whole", { name: "x", ring_timeout_sec: 20.5 }, "/ring_timeout_sec"],
      ["malformed media id", { name: "x", moh_media_id: "med_nope" }, "/moh_media_id"],
      ["missing media", { name: "x", moh_media_id: newId("med") }, "/moh_media_id"],
      ["another account's media", { name: "x", moh_media_id: theirMedia }, "/moh_media_id"],
      ["malformed schedule id", { name: "x", schedule_id: "sch_1" }, "/schedule_id"],
      ["missing schedule", { name: "x", schedule_id: newId("sch") }, "/schedule_id"],
      ["another account's schedule", { name: "x", schedule_id: theirSchedule.id }, "/schedule_id"],
      ["unknown exit kind", { name: "x", exit_dest_kind: "pstn" }, "/exit_dest_kind"],
      ["feature exit", { name: "x", exit_dest_kind: "feature", exit_dest_id: "park" }, "/exit_dest_kind"],
      ["exit id without kind", { name: "x", exit_dest_id: user }, "/exit_dest_kind"],
      ["exit kind without id", { name: "x", exit_dest_kind: "user" }, "/exit_dest_id"],
      ["exit to a missing user", { name: "x", exit_dest_kind: "user", exit_dest_id: newId("us") }, "/exit_dest_id"],
      ["exit to another account's user", { name: "x", exit_dest_kind: "user", exit_dest_id: theirUser }, "/exit_dest_id"],
      ["exit id of the wrong kind", { name: "x", exit_dest_kind: "ring_group", exit_dest_id: user }, "/exit_dest_id"],
      ["hangup with an id", { name: "x", exit_dest_kind: "hangup", exit_dest_id: user }, "/exit_dest_id"],
      ["closed_dest without a schedule", { name: "x", closed_dest_kind: "hangup" }, "/closed_dest_kind"],
      ["holiday_dest without a schedule", { name: "x", holiday_dest_kind: "user", holiday_dest_id: user }, "/holiday_dest_kind"],
      ["member with neither", { name: "x", members: [{ user_id: user }, { delay_sec: 3 }] }, "/members/1/user_id"],
      ["member with both", { name: "x", members: [{ user_id: user, device_id: device }] }, "/members/0/user_id"],
      ["same user twice", { name: "x", members: [{ user_id: user }, { device_id: device }, { user_id: user }] }, "/members/2/user_id"],
      ["same device twice", { name: "x", members: [{ device_id: device }, { device_id: device, delay_sec: 10 }] }, "/members/1/device_id"],
      ["missing user", { name: "x", members: [{ user_id: newId("us") }] }, "/members/0/user_id"],
      ["another account's user", { name: "x", members: [{ user_id: user }, { user_id: theirUser }] }, "/members/1/user_id"],
      ["missing device", { name: "x", members: [{ device_id: newId("dev") }] }, "/members/0/device_id"],
      ["malformed user id", { name: "x", members: [{ user_id: "bob" }] }, "/members/0/user_id"],
      ["delay too long", { name: "x", members: [{ user_id: user, delay_sec: 301 }] }, "/members/0/delay_sec"],
      ["negative delay", { name: "x", members: [{ user_id: user, delay_sec: -1 }] }, "/members/0/delay_sec"],
      ["member timeout too short", { name: "x", members: [{ user_id: user, timeout_sec: 4 }] }, "/members/0/timeout_sec"],
      ["member timeout too long", { name: "x", members: [{ user_id: user, timeout_sec: 601 }] }, "/members/0/timeout_sec"],
      ["position is not settable", { name: "x", members: [{ user_id: user, position: 3 }] }, "/members/0/position"],
      ["201 members", { name: "x", members: Array.from({ length: 201 }, () => ({ user_id: user })) }, "/members"],
    ];
    for (const [name, body, path] of cases) {
      const r = await call(app, "POST", "/v1/ring-groups", { key: t.key, body });
      expect(`${name}: ${r.status}`).toBe(`${name}: 400`);
      expect(r.body.error).toBe("validation_failed");
      expect({ name, paths: (r.body.details as Json[]).map((d) => d.path) }).toEqual({ name, paths: expect.arrayContaining([path]) });
    }
    expect(await groupRowCount(t.accountId)).toBe(0);
  });

  test("every problem of one request is reported together", async () => {
    const t = await seedTenant(platform);
    const r = await call(app, "POST", "/v1/ring-groups", {
      key: t.key,
      body: { name: "x", exit_dest_kind: "queue", exit_dest_id: newId("q"), closed_dest_kind: "hangup", members: [{}, { user_id: newId("us") }] },
    });
    expect(r.status).toBe(400);
    expect((r.body.details as Json[]).map((d) => d.path).sort()).toEqual(["/closed_dest_kind", "/exit_dest_id", "/members/0/user_id", "/members/1/user_id"]);
  });

  test("a group cannot route to itself", async () => {
    const t = await seedTenant(platform);
    const schedule = await createSchedule(platform.db, t.accountId, { name: "Hours" });
    const g = await create(t.key, { name: "Loop", schedule_id: schedule.id });
    for (const prefix of ["exit_dest", "closed_dest", "holiday_dest"]) {
      const r = await call(app, "PATCH", `/v1/ring-groups/${g.id}`, { key: t.key, body: { [`${prefix}_kind`]: "ring_group", [`${prefix}_id`]: g.id } });
      expect(r.status).toBe(400);
      expect(r.body.details).toEqual([{ path: `/${prefix}_id`, message: "A ring group cannot route to itself." }]);
    }
    // Another group is fine.
    const next = await create(t.key, { name: "Next" });
    expect((await call(app, "PATCH", `/v1/ring-groups/${g.id}`, { key: t.key, body: { exit_dest_kind: "ring_group", exit_dest_id: next.id } })).status).toBe(200);
  });

  test("a PATCH is checked merged onto the stored group, and a refused one changes nothing", async () => {
    const t = await seedTenant(platform);
    const [a, b] = [await seedUser(t.accountId), await seedUser(t.accountId)];
    const schedule = await createSchedule(platform.db, t.accountId, { name: "Hours" });
    const g = await create(t.key, { name: "Merge", schedule_id: schedule.id, holiday_dest_kind: "user", holiday_dest_id: a, members: [{ user_id: a }] });
    // Dropping the schedule while the holiday override stays is refused.
    const r = await call(app, "PATCH", `/v1/ring-groups/${g.id}`, { key: t.key, body: { schedule_id: null, name: "Renamed", members: [{ user_id: b }] } });
    expect(r.status).toBe(400);
    expect(r.body.details.map((d: Json) => d.path)).toEqual(["/holiday_dest_kind"]);
    // Only the id half of a slot: the stored kind makes it whole.
    const idOnly = await call(app, "PATCH", `/v1/ring-groups/${g.id}`, { key: t.key, body: { holiday_dest_id: b } });
    expect(idOnly.status).toBe(200);
    expect(idOnly.body.data).toMatchObject({ holiday_dest_kind: "user", holiday_dest_id: b });
    const kindOnly = await call(app, "PATCH", `/v1/ring-groups/${g.id}`, { key: t.key, body: { holiday_dest_kind: "hangup" } });
    expect(kindOnly.status).toBe(400);
    expect(kindOnly.body.details[0].path).toBe("/holiday_dest_id");
    // A bad member list leaves the old one.
    const bad = await call(app, "PATCH", `/v1/ring-groups/${g.id}`, { key: t.key, body: { members: [{ user_id: b }, { user_id: b }] } });
    expect(bad.status).toBe(400);
    const after = (await call(app, "GET", `/v1/ring-groups/${g.id}`, { key: t.key })).body.data;
    expect(after).toMatchObject({ name: "Merge", schedule_id: schedule.id, holiday_dest_id: b });
    expect(after.members).toEqual(g.members);
    expect((await call(app, "PATCH", `/v1/ring-groups/${g.id}`, { key: t.key, body: {} })).status).toBe(400);
  });

  test("400 for bad list queries", async () => {
    const t = await seedTenant(platform);
    expect((await call(app, "GET", "/v1/ring-groups?user_id=bob", { key: t.key })).body.details[0].path).toBe("/query/user_id");
    expect((await call(app, "GET", "/v1/ring-groups?limit=501", { key: t.key })).status).toBe(400);
    expect((await call(app, "GET", "/v1/ring-groups?cursor=zzz", { key: t.key })).status).toBe(400);
    expect((await call(app, "GET", "/v1/ring-groups?team=1", { key: t.key })).status).toBe(400);
  });

  test("409 for a name already taken (any case), on create and on rename", async () => {
    const t = await seedTenant(platform);
    await create(t.key, { name: "Sales" });
    const other = await create(t.key, { name: "Support" });
    const dup = await call(app, "POST", "/v1/ring-groups", { key: t.key, body: { name: "sales" } });
    expect(dup.status).toBe(409);
    expect(dup.body).toMatchObject({ error: "conflict", field: "name" });
    const rename = await call(app, "PATCH", `/v1/ring-groups/${other.id}`, { key: t.key, body: { name: "SALES", ring_timeout_sec: 99 } });
    expect(rename.status).toBe(409);
    expect(rename.body.field).toBe("name");
    expect((await call(app, "GET", `/v1/ring-groups/${other.id}`, { key: t.key })).body.data).toMatchObject({ name: "Support", ring_timeout_sec: 20 });
    expect(await groupRowCount(t.accountId)).toBe(2);
  });

  test("409 when deleting a group another group exits to; deletable once released", async () => {
    const t = await seedTenant(platform);
    const target = await create(t.key, { name: "Target" });
    const referrer = await create(t.key, { name: "Referrer", exit_dest_kind: "ring_group", exit_dest_id: target.id });
    const r = await call(app, "DELETE", `/v1/ring-groups/${target.id}`, { key: t.key });
    expect(r.status).toBe(409);
    expect(r.body).toMatchObject({ error: "conflict", used_by: [{ kind: "ring_group", id: referrer.id }] });
    expect((await call(app, "GET", `/v1/ring-groups/${target.id}`, { key: t.key })).status).toBe(200);
    expect((await call(app, "PATCH", `/v1/ring-groups/${referrer.id}`, { key: t.key, body: { exit_dest_kind: "hangup", exit_dest_id: null } })).status).toBe(200);
    expect((await call(app, "DELETE", `/v1/ring-groups/${target.id}`, { key: t.key })).status).toBe(200);
  });

  test("404 for an unknown id on every item route", async () => {
    const t = await seedTenant(platform);
    const id = newId("rg");
    expect((await call(app, "GET", `/v1/ring-groups/${id}`, { key: t.key })).body.error).toBe("not_found");
    expect((await call(app, "PATCH", `/v1/ring-groups/${id}`, { key: t.key, body: { name: "x" } })).status).toBe(404);
    expect((await call(app, "POST", `/v1/ring-groups/${id}`, { key: t.key, body: { name: "x" } })).status).toBe(404);
    expect((await call(app, "DELETE", `/v1/ring-groups/${id}`, { key: t.key })).status).toBe(404);
  });
});

describe(`/v1/ring-groups security [${storeKind}]`, () => {
  test("401 without a credential", async () => {
    expect((await call(app, "GET", "/v1/ring-groups")).status).toBe(401);
    const r = await call(app, "POST", "/v1/ring-groups", { body: { name: "x" } });
    expect(r.status).toBe(401);
    expect(r.body.error).toBe("unauthorized");
  });

  test("403 naming the scope without ringgroups", async () => {
    const t = await seedTenant(platform);
    const g = await create(t.key, { name: "Guarded" });
    const key = await keyWithScopes(platform, t.accountId, ["schedules", "users"]);
    const attempts: Array<[string, string, Json | undefined]> = [
      ["GET", "/v1/ring-groups", undefined],
      ["POST", "/v1/ring-groups", { name: "y" }],
      ["GET", `/v1/ring-groups/${g.id}`, undefined],
      ["PATCH", `/v1/ring-groups/${g.id}`, { name: "z" }],
      ["POST", `/v1/ring-groups/${g.id}`, { name: "z" }],
      ["DELETE", `/v1/ring-groups/${g.id}`, undefined],
    ];
    for (const [method, path, body] of attempts) {
      const r = await call(app, method, path, { key, body });
      expect(r.status).toBe(403);
      expect(r.body.need).toBe("ringgroups");
    }
    expect((await call(app, "GET", `/v1/ring-groups/${g.id}`, { key: t.key })).body.data.name).toBe("Guarded");
    const scoped = await keyWithScopes(platform, t.accountId, ["ringgroups"]);
    expect((await call(app, "GET", `/v1/ring-groups/${g.id}`, { key: scoped })).status).toBe(200);
  });

  test("another account's group is a 404 to GET, PATCH, POST and DELETE, and absent from lists", async () => {
    const mine = await seedTenant(platform);
    const theirs = await seedTenant(platform);
    const u = await seedUser(theirs.accountId);
    const g = await create(theirs.key, { name: "Theirs", members: [{ user_id: u }] });
    expect((await call(app, "GET", `/v1/ring-groups/${g.id}`, { key: mine.key })).status).toBe(404);
    expect((await call(app, "PATCH", `/v1/ring-groups/${g.id}`, { key: mine.key, body: { name: "Mine now", members: [] } })).status).toBe(404);
    expect((await call(app, "POST", `/v1/ring-groups/${g.id}`, { key: mine.key, body: { name: "Mine now" } })).status).toBe(404);
    expect((await call(app, "DELETE", `/v1/ring-groups/${g.id}`, { key: mine.key })).status).toBe(404);
    expect((await call(app, "GET", "/v1/ring-groups", { key: mine.key })).body.data).toEqual([]);
    expect((await call(app, "GET", `/v1/ring-groups?user_id=${u}`, { key: mine.key })).body.data).toEqual([]);
    expect((await call(app, "GET", `/v1/ring-groups/${g.id}`, { key: theirs.key })).body.data).toEqual(g);
  });

  test("another account's group cannot be a target", async () => {
    const mine = await seedTenant(platform);
    const theirs = await seedTenant(platform);
    const g = await create(theirs.key, { name: "Theirs" });
    const r = await call(app, "POST", "/v1/ring-groups", { key: mine.key, body: { name: "Mine", exit_dest_kind: "ring_group", exit_dest_id: g.id } });
    expect(r.status).toBe(400);
    expect(r.body.details[0].path).toBe("/exit_dest_id");
  });
});
