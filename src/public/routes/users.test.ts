/** /v1/users: happy paths, errors and security. */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { sql } from "drizzle-orm";
import type { Platform } from "../../core/platform.ts";
import { createPublicApp } from "../app.ts";
import { identityRoutes } from "./identity.ts";
import { userRoutes } from "./users.ts";
import { deviceRoutes } from "./devices.ts";
import { keyWithScopes, seedTenant, storeKind, testPlatform, type Tenant } from "../../../test/support/platform.ts";
import { call, type Json } from "../../../test/support/http.ts";
import { rawRows } from "../../core/db/migrate.ts";
import { newId } from "../../core/ids/ids.ts";
import { encodeCursor } from "../../core/pagination/pagination.ts";

let platform: Platform;
let app: ReturnType<typeof createPublicApp>;

beforeAll(async () => {
  platform = await testPlatform();
  app = createPublicApp(platform, [identityRoutes, userRoutes, deviceRoutes]);
});
afterAll(() => platform.close());

const USER_FIELDS = [
  "created_at",
  "display_name",
  "email",
  "id",
  "is_agent",
  "max_simultaneous",
  "out_cid_name",
  "out_cid_number",
  "ring_timeout_sec",
  "status",
  "team_id",
  "updated_at",
  "username",
  "voicemail_id",
];

async function createUser(t: Tenant, body: Json): Promise<Json> {
  const r = await call(app, "POST", "/v1/users", { key: t.key, body });
  expect(r.status, r.text).toBe(201);
  return r.body.data;
}

async function createDevice(t: Tenant, body: Json): Promise<Json> {
  const r = await call(app, "POST", "/v1/devices", { key: t.key, body: { password: "correct-horse-1", ...body } });
  expect(r.status, r.text).toBe(201);
  return r.body.data;
}

async function countUsers(accountId: string): Promise<number> {
  const [row] = await rawRows<{ n: number }>(platform.db, sql`select count(*)::int as n from app_user where account_id = ${accountId}`);
  return row!.n;
}

async function insertVoicemail(accountId: string): Promise<string> {
  const id = newId("vm");
  await platform.db.execute(sql`insert into voicemail (account_id, id, name, created_at, updated_at) values (${accountId}, ${id}, 'Box', 0, 0)`);
  return id;
}

async function insertTeam(accountId: string): Promise<string> {
  const id = newId("team");
  await platform.db.execute(sql`insert into agent_team (account_id, id, name, created_at, updated_at) values (${accountId}, ${id}, ${id}, 0, 0)`);
  return id;
}

describe(`/v1/users happy [${storeKind}]`, () => {
  test("create applies the documented defaults and returns every field with an empty device list", async () => {
    const t = await seedTenant(platform);
    const r = await call(app, "POST", "/v1/users", { key: t.key, body: { username: "1001" } });
    expect(r.status).toBe(201);
    const user = r.body.data;
    expect(user.id).toMatch(/^us_[0-9A-Z]{26}$/);
    expect(Object.keys(user).sort()).toEqual([...USER_FIELDS, "devices"].sort());
    expect(user).toMatchObject({
      username: "1001",
      display_name: "1001",
      email: null,
      is_agent: 0,
      out_cid_number: null,
      out_cid_name: null,
      max_simultaneous: 2,
      ring_timeout_sec: 25,
      voicemail_id: null,
      team_id: null,
      status: "active",
      devices: [],
    });
    expect(user.created_at).toBeGreaterThan(1_700_000_000);
    expect(user.updated_at).toBe(user.created_at);
  });

  test("create stores every field given; the caller-ID number is normalized to E.164", async () => {
    const t = await seedTenant(platform);
    const user = await createUser(t, {
      username: "ada.lovelace_1-x",
      display_name: "Ada Lovelace",
      email: "ada@example.com",
      is_agent: 1,
      out_cid_number: "+1 (415) 555-0123",
      out_cid_name: "Acme Support",
      max_simultaneous: 5,
      ring_timeout_sec: 300,
      status: "disabled",
    });
    expect(user).toMatchObject({
      username: "ada.lovelace_1-x",
      display_name: "Ada Lovelace",
      email: "ada@example.com",
      is_agent: 1,
      out_cid_number: "14155550123",
      out_cid_name: "Acme Support",
      max_simultaneous: 5,
      ring_timeout_sec: 300,
      status: "disabled",
    });
    const got = await call(app, "GET", `/v1/users/${user.id}`, { key: t.key });
    expect(got.body.data).toEqual(user);
  });

  test("an emergency number (EMERGENCY_NUMBERS) is no username: 400 on create and on a change to it; a user made before keeps theirs", async () => {
    const t = await seedTenant(platform);
    const refused = await call(app, "POST", "/v1/users", { key: t.key, body: { username: "911" } });
    expect(refused.status).toBe(400);
    expect(refused.body).toMatchObject({ error: "validation_failed", details: [{ path: "/username", message: expect.stringContaining("emergency number") }] });
    const user = await call(app, "POST", "/v1/users", { key: t.key, body: { username: "9110" } });
    expect((await call(app, "PATCH", `/v1/users/${user.body.data.id}`, { key: t.key, body: { username: "112" } })).status).toBe(400);
    await rawRows(platform.db, sql`update app_user set username = '112' where account_id = ${t.accountId} and id = ${user.body.data.id}`);
    const kept = await call(app, "PATCH", `/v1/users/${user.body.data.id}`, { key: t.key, body: { username: "112", display_name: "Old" } });
    expect(kept.status, JSON.stringify(kept.body)).toBe(200);
  });

  test("voicemail_id names a mailbox of the account", async () => {
    const t = await seedTenant(platform);
    const vm = await insertVoicemail(t.accountId);
    const user = await createUser(t, { username: "1001", voicemail_id: vm });
    expect(user.voicemail_id).toBe(vm);
    const cleared = await call(app, "PATCH", `/v1/users/${user.id}`, { key: t.key, body: { voicemail_id: null } });
    expect(cleared.body.data.voicemail_id).toBeNull();
  });

  test("team_id names an agent team of the account, and the list filters on it", async () => {
    const t = await seedTenant(platform);
    const team = await insertTeam(t.accountId);
    const member = await createUser(t, { username: "1001", team_id: team, is_agent: 1 });
    await createUser(t, { username: "1002", is_agent: 1 });
    expect(member.team_id).toBe(team);
    const list = await call(app, "GET", `/v1/users?team_id=${team}`, { key: t.key });
    expect((list.body.data as Json[]).map((u) => u.id)).toEqual([member.id]);
  });

  test("GET one includes its devices, without credentials; GET /devices lists them", async () => {
    const t = await seedTenant(platform);
    const user = await createUser(t, { username: "1001" });
    const other = await createUser(t, { username: "1002" });
    const d1 = await createDevice(t, { user_id: user.id, label: "desk" });
    const d2 = await createDevice(t, { user_id: user.id, auth_username: "1001-web", transport: "wss" });
    await createDevice(t, { user_id: other.id });
    const got = await call(app, "GET", `/v1/users/${user.id}`, { key: t.key });
    expect(got.status).toBe(200);
    expect((got.body.data.devices as Json[]).map((d) => d.id)).toEqual([d1.id, d2.id]);
    expect(got.body.data.devices[0]).toEqual(d1);
    expect(got.text).not.toContain("ha1");
    expect(got.text).not.toContain("correct-horse-1");
    const list = await call(app, "GET", `/v1/users/${user.id}/devices`, { key: t.key });
    expect(list.status).toBe(200);
    expect(list.body.data).toEqual([d1, d2]);
    const paged = await call(app, "GET", `/v1/users/${user.id}/devices?limit=1`, { key: t.key });
    expect(paged.body.data).toEqual([d1]);
    const rest = await call(app, "GET", `/v1/users/${user.id}/devices?limit=1&cursor=${paged.body.next_cursor}`, { key: t.key });
    expect(rest.body.data).toEqual([d2]);
    // A full page carries next_cursor (SPEC.md); the page after the last full one is empty, without one.
    const end = await call(app, "GET", `/v1/users/${user.id}/devices?limit=1&cursor=${rest.body.next_cursor}`, { key: t.key });
    expect(end.body).toEqual({ ok: true, data: [] });
  });

  test("PATCH changes only the fields sent; POST on the id does the same", async () => {
    const t = await seedTenant(platform);
    const user = await createUser(t, { username: "1001", display_name: "Ada", email: "ada@example.com", out_cid_number: "14155550123" });
    const r = await call(app, "PATCH", `/v1/users/${user.id}`, { key: t.key, body: { display_name: "Ada L.", is_agent: 1, ring_timeout_sec: 5 } });
    expect(r.status).toBe(200);
    expect(r.body.data).toMatchObject({ username: "1001", display_name: "Ada L.", email: "ada@example.com", out_cid_number: "14155550123", is_agent: 1, ring_timeout_sec: 5, max_simultaneous: 2 });
    const r2 = await call(app, "POST", `/v1/users/${user.id}`, { key: t.key, body: { email: null, out_cid_number: "0044 20 7946 0000", username: "2001" } });
    expect(r2.status).toBe(200);
    expect(r2.body.data).toMatchObject({ username: "2001", display_name: "Ada L.", email: null, out_cid_number: "442079460000", is_agent: 1 });
    expect((await call(app, "GET", `/v1/users/${user.id}`, { key: t.key })).body.data).toEqual(r2.body.data);
  });

  test("a username change leaves the devices' digest usernames alone; a patch reply lists the devices", async () => {
    const t = await seedTenant(platform);
    const user = await createUser(t, { username: "1001" });
    const device = await createDevice(t, { user_id: user.id });
    const r = await call(app, "PATCH", `/v1/users/${user.id}`, { key: t.key, body: { username: "1002" } });
    expect(r.body.data.devices).toEqual([device]);
    expect(device.auth_username).toBe("1001");
  });

  test("a disabled user keeps its devices", async () => {
    const t = await seedTenant(platform);
    const user = await createUser(t, { username: "1001" });
    const device = await createDevice(t, { user_id: user.id });
    const r = await call(app, "PATCH", `/v1/users/${user.id}`, { key: t.key, body: { status: "disabled" } });
    expect(r.body.data.status).toBe("disabled");
    expect(r.body.data.devices).toEqual([device]);
  });

  test("list filters by status, is_agent and a case-insensitive prefix of username or display name", async () => {
    const t = await seedTenant(platform);
    const alice = await createUser(t, { username: "alice", display_name: "Alice Smith", is_agent: 1 });
    const bob = await createUser(t, { username: "1002", display_name: "bob Jones", status: "disabled" });
    const al = await createUser(t, { username: "ALBERT", display_name: "Al" });
    const pct = await createUser(t, { username: "x_1", display_name: "100% Sure" });
    const ids = async (query: string) => ((await call(app, "GET", `/v1/users${query}`, { key: t.key })).body.data as Json[]).map((u) => u.id);
    expect(await ids("")).toEqual([alice.id, bob.id, al.id, pct.id]);
    expect(await ids("?status=disabled")).toEqual([bob.id]);
    expect(await ids("?status=active")).toEqual([alice.id, al.id, pct.id]);
    expect(await ids("?is_agent=1")).toEqual([alice.id]);
    expect(await ids("?is_agent=0")).toEqual([bob.id, al.id, pct.id]);
    expect(await ids("?q=al")).toEqual([alice.id, al.id]);
    expect(await ids("?q=BOB")).toEqual([bob.id]);
    expect(await ids("?q=100")).toEqual([bob.id, pct.id]);
    expect(await ids("?q=smith")).toEqual([]);
    expect(await ids("?q=100%25")).toEqual([pct.id]);
    expect(await ids("?q=x_")).toEqual([pct.id]);
    expect(await ids("?q=_")).toEqual([]);
    expect(await ids("?q=al&is_agent=0")).toEqual([al.id]);
  });

  test("a filtered list's next_cursor sent back alone pages the same listing; other filters with it are a 400", async () => {
    const t = await seedTenant(platform);
    const a = await createUser(t, { username: "agent-a", is_agent: 1 });
    await createUser(t, { username: "other-1" });
    const b = await createUser(t, { username: "agent-b", is_agent: 1 });
    await createUser(t, { username: "other-2" });
    const first = await call(app, "GET", "/v1/users?q=agent&is_agent=1&limit=1", { key: t.key });
    expect((first.body.data as Json[]).map((u) => u.id)).toEqual([a.id]);
    const next = await call(app, "GET", `/v1/users?cursor=${first.body.next_cursor}&limit=1`, { key: t.key });
    expect((next.body.data as Json[]).map((u) => u.id)).toEqual([b.id]);
    const end = await call(app, "GET", `/v1/users?cursor=${next.body.next_cursor}&limit=1`, { key: t.key });
    expect(end.body.data).toEqual([]);
    // The same filters again are fine; another value, or a filter the listing did not have, is not.
    const same = await call(app, "GET", `/v1/users?q=agent&is_agent=1&cursor=${first.body.next_cursor}&limit=1`, { key: t.key });
    expect((same.body.data as Json[]).map((u) => u.id)).toEqual([b.id]);
    for (const query of [`q=other&cursor=${first.body.next_cursor}`, `status=active&cursor=${first.body.next_cursor}`]) {
      const r = await call(app, "GET", `/v1/users?${query}&limit=1`, { key: t.key });
      expect(r.status, query).toBe(400);
      expect(r.body.details.map((d: { path: string }) => d.path)).toEqual(["/query/cursor"]);
    }
    // A listing without filters: its cursor takes none later either.
    const all = await call(app, "GET", "/v1/users?limit=1", { key: t.key });
    expect((await call(app, "GET", `/v1/users?is_agent=1&cursor=${all.body.next_cursor}&limit=1`, { key: t.key })).status).toBe(400);
    // Filters a made-up cursor carries are checked like the query's.
    const forged = Buffer.from(`f1:${JSON.stringify({ c: "", q: { is_agent: "7" } })}`).toString("base64url");
    const bad = await call(app, "GET", `/v1/users?cursor=${forged}`, { key: t.key });
    expect(bad.status).toBe(400);
    expect(bad.body.error).toBe("validation_failed");
    expect(bad.body.details.map((d: { path: string }) => d.path)).toEqual(["/query/is_agent"]);
    // A NUL a made-up cursor carries is refused as one in the URL is (PostgreSQL cannot compare it: a 500 before).
    for (const q of [{ q: "a\u0000" }, { q: "\ud800" }]) {
      const nul = Buffer.from(`f1:${JSON.stringify({ c: "", q })}`).toString("base64url");
      const r = await call(app, "GET", `/v1/users?cursor=${nul}`, { key: t.key });
      expect(r.status, JSON.stringify(r.body)).toBe(400);
      expect(r.body.details.map((d: { path: string }) => d.path)).toEqual(["/query/cursor"]);
    }
    // A refused cursor longer than a list's own (a wrapped one) gets its reason, not a length error.
    const long = Buffer.from(`f1:${JSON.stringify({ c: "", q: { q: "x".repeat(150) } })}`).toString("base64url");
    const other = await call(app, "GET", `/v1/users?q=y&cursor=${long}`, { key: t.key });
    expect(other.status).toBe(400);
    expect(other.body.details[0].message).toMatch(/another q/);
    // A cursor that does not unwrap is refused after the credential: without one, 401 all the same.
    const broken = Buffer.from("f1:{not json").toString("base64url");
    expect((await call(app, "GET", `/v1/users?cursor=${broken}`, { key: t.key })).status).toBe(400);
    expect((await call(app, "GET", `/v1/users?cursor=${broken}`)).status).toBe(401);
    expect((await call(app, "GET", `/v1/users?cursor=${broken}`, { key: "sk_not_a_key" })).status).toBe(401);
  });

  test("team_id filter matches users tagged with the team", async () => {
    const t = await seedTenant(platform);
    const tagged = await createUser(t, { username: "1001" });
    await createUser(t, { username: "1002" });
    const team = newId("team");
    await platform.db.execute(sql`update app_user set team_id = ${team} where account_id = ${t.accountId} and id = ${tagged.id}`);
    const list = await call(app, "GET", `/v1/users?team_id=${team}`, { key: t.key });
    expect((list.body.data as Json[]).map((u) => u.id)).toEqual([tagged.id]);
  });

  test("pagination walks every user exactly once with limit=2", async () => {
    const t = await seedTenant(platform);
    const created: string[] = [];
    for (let i = 0; i < 5; i++) created.push((await createUser(t, { username: `u${i}` })).id);
    const seen: string[] = [];
    let cursor: string | undefined;
    let pages = 0;
    do {
      const page = await call(app, "GET", `/v1/users?limit=2${cursor ? `&cursor=${cursor}` : ""}`, { key: t.key });
      expect(page.status).toBe(200);
      expect((page.body.data as Json[]).length).toBeLessThanOrEqual(2);
      seen.push(...(page.body.data as Json[]).map((u) => u.id as string));
      cursor = page.body.next_cursor;
      pages++;
    } while (cursor);
    expect(pages).toBe(3);
    expect(seen).toEqual(created);
  });

  test("delete removes the user, its devices and their SIP credentials", async () => {
    const t = await seedTenant(platform);
    const user = await createUser(t, { username: "1001" });
    const keep = await createUser(t, { username: "1002" });
    const d1 = await createDevice(t, { user_id: user.id });
    const d2 = await createDevice(t, { user_id: user.id, auth_username: "1001b" });
    const kept = await createDevice(t, { user_id: keep.id });
    const r = await call(app, "DELETE", `/v1/users/${user.id}`, { key: t.key });
    expect(r.status).toBe(200);
    expect(r.body).toEqual({ ok: true });
    expect((await call(app, "GET", `/v1/users/${user.id}`, { key: t.key })).status).toBe(404);
    const devices = await rawRows<{ id: string }>(platform.db, sql`select id from device where account_id = ${t.accountId} order by id`);
    expect(devices.map((d) => d.id)).toEqual([kept.id]);
    const creds = await rawRows<{ device_id: string }>(platform.db, sql`select device_id from device_credential where account_id = ${t.accountId}`);
    expect(creds.map((c) => c.device_id)).toEqual([kept.id]);
    expect([d1.id, d2.id]).not.toContain(kept.id);
    // The username is free again.
    await createUser(t, { username: "1001" });
  });

  test("an Idempotency-Key replay of a create returns the first reply and creates nothing more", async () => {
    const t = await seedTenant(platform);
    const headers = { "idempotency-key": "create-user-1" };
    const first = await call(app, "POST", "/v1/users", { key: t.key, body: { username: "1001" }, headers });
    expect(first.status).toBe(201);
    const again = await call(app, "POST", "/v1/users", { key: t.key, body: { username: "1001" }, headers });
    expect(again.status).toBe(201);
    expect(again.headers.get("idempotency-replayed")).toBe("true");
    expect(again.body).toEqual(first.body);
    expect(await countUsers(t.accountId)).toBe(1);
  });
});

describe(`/v1/users errors [${storeKind}]`, () => {
  test("create: 400 naming each bad field, and nothing is created", async () => {
    const t = await seedTenant(platform);
    const cases: Array<[Json, string]> = [
      [{}, "/username"],
      [{ username: "" }, "/username"],
      [{ username: "has space" }, "/username"],
      [{ username: "a@b" }, "/username"],
      [{ username: "x".repeat(65) }, "/username"],
      [{ username: 1001 }, "/username"],
      [{ username: "1001", display_name: "" }, "/display_name"],
      [{ username: "1001", display_name: "x".repeat(101) }, "/display_name"],
      [{ username: "1001", email: "not-an-email" }, "/email"],
      [{ username: "1001", is_agent: 2 }, "/is_agent"],
      [{ username: "1001", is_agent: true }, "/is_agent"],
      [{ username: "1001", out_cid_number: "call me" }, "/out_cid_number"],
      [{ username: "1001", out_cid_number: "123" }, "/out_cid_number"],
      [{ username: "1001", out_cid_number: "+0 415 555 0123" }, "/out_cid_number"],
      [{ username: "1001", out_cid_name: "x".repeat(41) }, "/out_cid_name"],
      // A line break would end the From header it goes into and start another (P-Asserted-Identity…).
      [{ username: "1001", out_cid_name: "Acme\r\nP-Asserted-Identity: <sip:911@x>" }, "/out_cid_name"],
      [{ username: "1001", out_cid_name: "Acme\u0007" }, "/out_cid_name"],
      [{ username: "1001", max_simultaneous: 0 }, "/max_simultaneous"],
      [{ username: "1001", max_simultaneous: "2" }, "/max_simultaneous"],
      [{ username: "1001", max_simultaneous: 1.5 }, "/max_simultaneous"],
      [{ username: "1001", ring_timeout_sec: 4 }, "/ring_timeout_sec"],
      [{ username: "1001", ring_timeout_sec: 301 }, "/ring_timeout_sec"],
      [{ username: "1001", voicemail_id: "vm_nope" }, "/voicemail_id"],
      [{ username: "1001", voicemail_id: newId("vm") }, "/voicemail_id"],
      [{ username: "1001", team_id: newId("team") }, "/team_id"],
      [{ username: "1001", team_id: newId("vm") }, "/team_id"],
      [{ username: "1001", status: "deleted" }, "/status"],
      [{ username: "1001", id: newId("us") }, "/id"],
      [{ username: "1001", devices: [] }, "/devices"],
    ];
    for (const [body, path] of cases) {
      const r = await call(app, "POST", "/v1/users", { key: t.key, body });
      expect(r.status, JSON.stringify(body)).toBe(400);
      expect(r.body.error).toBe("validation_failed");
      expect((r.body.details as Json[]).map((d) => d.path), JSON.stringify(body)).toContain(path);
    }
    expect(await countUsers(t.accountId)).toBe(0);
  });

  test("another account's mailbox or team is refused like a missing one", async () => {
    const t = await seedTenant(platform);
    const other = await seedTenant(platform);
    const vm = await insertVoicemail(other.accountId);
    const team = await insertTeam(other.accountId);
    const r = await call(app, "POST", "/v1/users", { key: t.key, body: { username: "1001", voicemail_id: vm, team_id: team } });
    expect(r.status).toBe(400);
    expect((r.body.details as Json[]).map((d) => d.path)).toEqual(["/voicemail_id", "/team_id"]);
  });

  test("PATCH: 400 for an empty body or a bad field, and the user is unchanged", async () => {
    const t = await seedTenant(platform);
    const user = await createUser(t, { username: "1001" });
    const before = (await call(app, "GET", `/v1/users/${user.id}`, { key: t.key })).body;
    const cases: Array<[Json, string]> = [
      [{ username: "no/slash" }, "/username"],
      [{ ring_timeout_sec: 1000 }, "/ring_timeout_sec"],
      [{ max_simultaneous: -1 }, "/max_simultaneous"],
      [{ out_cid_number: "12" }, "/out_cid_number"],
      [{ voicemail_id: newId("vm") }, "/voicemail_id"],
      [{ display_name: "ok", status: "gone" }, "/status"],
      [{ created_at: 1 }, "/created_at"],
      [{ display_name: null }, "/display_name"],
    ];
    for (const [body, path] of cases) {
      const r = await call(app, "PATCH", `/v1/users/${user.id}`, { key: t.key, body });
      expect(r.status, JSON.stringify(body)).toBe(400);
      expect((r.body.details as Json[]).map((d) => d.path), JSON.stringify(body)).toContain(path);
    }
    const empty = await call(app, "PATCH", `/v1/users/${user.id}`, { key: t.key, body: {} });
    expect(empty.status).toBe(400);
    expect((await call(app, "GET", `/v1/users/${user.id}`, { key: t.key })).body).toEqual(before);
  });

  test("list: 400 for bad filters, limits and cursors", async () => {
    const t = await seedTenant(platform);
    for (const [query, path] of [
      ["?status=gone", "/query/status"],
      ["?is_agent=2", "/query/is_agent"],
      ["?is_agent=yes", "/query/is_agent"],
      ["?limit=0", null],
      ["?limit=501", null],
      ["?cursor=garbage", "/query/cursor"],
      ["?q=", "/query/q"],
      ["?other=1", "/query/other"],
    ] as const) {
      const r = await call(app, "GET", `/v1/users${query}`, { key: t.key });
      expect(r.status, query).toBe(400);
      // The shared page query reports a bound error of limit without its path (an Elysia quirk).
      if (path) expect((r.body.details as Json[]).map((d) => d.path), query).toContain(path);
    }
    // A cursor of another list (as GET /v1/devices writes one) is refused, not read as a place in this one.
    const foreign = await call(app, "GET", `/v1/users?cursor=${encodeCursor(newId("dev"))}`, { key: t.key });
    expect(foreign.status).toBe(400);
    expect(foreign.body.details).toEqual([{ path: "/query/cursor", message: expect.stringContaining("another list") }]);
  });

  test("409 for a username already taken in the account, on create and on patch; other accounts may reuse it", async () => {
    const t = await seedTenant(platform);
    const first = await createUser(t, { username: "1001" });
    const dup = await call(app, "POST", "/v1/users", { key: t.key, body: { username: "1001", display_name: "Other" } });
    expect(dup.status).toBe(409);
    expect(dup.body).toMatchObject({ ok: false, error: "conflict", field: "username" });
    const second = await createUser(t, { username: "1002" });
    const clash = await call(app, "PATCH", `/v1/users/${second.id}`, { key: t.key, body: { username: "1001", display_name: "Changed" } });
    expect(clash.status).toBe(409);
    expect(clash.body.field).toBe("username");
    expect((await call(app, "GET", `/v1/users/${second.id}`, { key: t.key })).body.data.display_name).toBe("1002");
    // Patching a user to its own username is no conflict.
    expect((await call(app, "PATCH", `/v1/users/${first.id}`, { key: t.key, body: { username: "1001" } })).status).toBe(200);
    const elsewhere = await seedTenant(platform);
    await createUser(elsewhere, { username: "1001" });
  });

  test("409 deleting a user a route target refers to; user and devices stay", async () => {
    const t = await seedTenant(platform);
    const user = await createUser(t, { username: "1001" });
    const device = await createDevice(t, { user_id: user.id });
    await platform.db.execute(sql`update account set did_default_dest_kind = 'user', did_default_dest_id = ${user.id} where id = ${t.accountId}`);
    const r = await call(app, "DELETE", `/v1/users/${user.id}`, { key: t.key });
    expect(r.status).toBe(409);
    expect(r.body).toMatchObject({ error: "conflict", used_by: [{ kind: "account", id: t.accountId }] });
    expect((await call(app, "GET", `/v1/users/${user.id}`, { key: t.key })).body.data.devices).toEqual([device]);
    await platform.db.execute(sql`update account set did_default_dest_kind = null, did_default_dest_id = null where id = ${t.accountId}`);
    expect((await call(app, "DELETE", `/v1/users/${user.id}`, { key: t.key })).status).toBe(200);
  });

  test("409 deleting a user whose device a ring group rings; nothing is deleted", async () => {
    const t = await seedTenant(platform);
    const user = await createUser(t, { username: "1001" });
    const device = await createDevice(t, { user_id: user.id });
    const rg = newId("rg");
    await platform.db.execute(sql`insert into ring_group_member (account_id, ring_group_id, position, device_id) values (${t.accountId}, ${rg}, 1, ${device.id})`);
    const r = await call(app, "DELETE", `/v1/users/${user.id}`, { key: t.key });
    expect(r.status).toBe(409);
    expect(r.body.used_by).toEqual([{ kind: "ring_group", id: rg }]);
    expect((await call(app, "GET", `/v1/users/${user.id}`, { key: t.key })).body.data.devices).toEqual([device]);
    const creds = await rawRows<{ n: number }>(platform.db, sql`select count(*)::int as n from device_credential where account_id = ${t.accountId}`);
    expect(creds[0]!.n).toBe(1);
  });

  test("404 for an unknown user on every route", async () => {
    const t = await seedTenant(platform);
    const id = newId("us");
    for (const [method, path, body] of [
      ["GET", `/v1/users/${id}`, undefined],
      ["GET", `/v1/users/${id}/devices`, undefined],
      ["PATCH", `/v1/users/${id}`, { display_name: "x" }],
      ["POST", `/v1/users/${id}`, { display_name: "x" }],
      ["DELETE", `/v1/users/${id}`, undefined],
    ] as const) {
      const r = await call(app, method, path, { key: t.key, body });
      expect(r.status, `${method} ${path}`).toBe(404);
      expect(r.body.error).toBe("not_found");
    }
  });
});

describe(`/v1/users security [${storeKind}]`, () => {
  test("401 without a credential", async () => {
    for (const [method, path] of [["GET", "/v1/users"], ["POST", "/v1/users"], ["GET", `/v1/users/${newId("us")}`], ["DELETE", `/v1/users/${newId("us")}`]] as const) {
      const r = await call(app, method, path, { body: method === "POST" ? { username: "1001" } : undefined });
      expect(r.status, `${method} ${path}`).toBe(401);
    }
  });

  test("403 naming the users scope for every route", async () => {
    const t = await seedTenant(platform);
    const user = await createUser(t, { username: "1001" });
    const cdr = await keyWithScopes(platform, t.accountId, ["cdr", "numbers"]);
    for (const [method, path, body] of [
      ["GET", "/v1/users", undefined],
      ["POST", "/v1/users", { username: "1002" }],
      ["GET", `/v1/users/${user.id}`, undefined],
      ["POST", `/v1/users/${user.id}`, { display_name: "x" }],
      ["PATCH", `/v1/users/${user.id}`, { display_name: "x" }],
      ["DELETE", `/v1/users/${user.id}`, undefined],
      ["GET", `/v1/users/${user.id}/devices`, undefined],
    ] as const) {
      const r = await call(app, method, path, { key: cdr, body });
      expect(r.status, `${method} ${path}`).toBe(403);
      expect(r.body.need).toBe("users");
    }
    expect(await countUsers(t.accountId)).toBe(1);
    const scoped = await keyWithScopes(platform, t.accountId, ["users"]);
    expect((await call(app, "GET", `/v1/users/${user.id}`, { key: scoped })).status).toBe(200);
  });

  test("another account's user is a 404 everywhere and absent from the list; it stays untouched", async () => {
    const mine = await seedTenant(platform);
    const theirs = await seedTenant(platform);
    const their = await createUser(theirs, { username: "1001" });
    await createDevice(theirs, { user_id: their.id });
    for (const [method, path, body] of [
      ["GET", `/v1/users/${their.id}`, undefined],
      ["GET", `/v1/users/${their.id}/devices`, undefined],
      ["PATCH", `/v1/users/${their.id}`, { display_name: "Mine now" }],
      ["POST", `/v1/users/${their.id}`, { display_name: "Mine now" }],
      ["DELETE", `/v1/users/${their.id}`, undefined],
    ] as const) {
      const r = await call(app, method, path, { key: mine.key, body });
      expect(r.status, `${method} ${path}`).toBe(404);
    }
    expect(((await call(app, "GET", "/v1/users", { key: mine.key })).body.data as Json[]).length).toBe(0);
    const still = await call(app, "GET", `/v1/users/${their.id}`, { key: theirs.key });
    expect(still.body.data.display_name).toBe("1001");
    expect(still.body.data.devices.length).toBe(1);
  });
});
