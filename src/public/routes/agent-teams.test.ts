/** /v1/agent-teams: happy paths, errors and security. */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { sql } from "drizzle-orm";
import type { Platform } from "../../core/platform.ts";
import { createPublicApp } from "../app.ts";
import { identityRoutes } from "./identity.ts";
import { agentTeamRoutes } from "./agent-teams.ts";
import { keyWithScopes, seedTenant, storeKind, testPlatform, type Tenant } from "../../../test/support/platform.ts";
import { call, type Json } from "../../../test/support/http.ts";
import { newId } from "../../core/ids/ids.ts";
import { nowSeconds } from "../../core/db/columns.ts";

let platform: Platform;
let app: ReturnType<typeof createPublicApp>;

beforeAll(async () => {
  platform = await testPlatform();
  app = createPublicApp(platform, [identityRoutes, agentTeamRoutes]);
});
afterAll(() => platform.close());

async function createTeam(t: Tenant, name: string): Promise<Json> {
  const r = await call(app, "POST", "/v1/agent-teams", { key: t.key, body: { name } });
  expect(r.status).toBe(201);
  return r.body.data;
}

/** A row in the users capability's table, in `teamId`. */
async function insertUser(accountId: string, username: string, displayName: string, teamId: string | null): Promise<string> {
  const id = newId("us");
  const now = nowSeconds();
  await platform.db.execute(
    sql`insert into app_user (account_id, id, username, display_name, team_id, created_at, updated_at)
        values (${accountId}, ${id}, ${username}, ${displayName}, ${teamId}, ${now}, ${now})`,
  );
  return id;
}

const detailPaths = (r: { body: Json }) => (r.body.details as Json[]).map((d) => d.path);

describe(`/v1/agent-teams happy [${storeKind}]`, () => {
  test("create, get with members, list, rename, delete", async () => {
    const t = await seedTenant(platform);
    const team = await createTeam(t, "Sales");
    expect(team.id).toMatch(/^team_[0-9A-Z]{26}$/);
    expect(team).toMatchObject({ name: "Sales", members: [] });
    const zoe = await insertUser(t.accountId, "1002", "Zoe Quinn", team.id);
    const amy = await insertUser(t.accountId, "1001", "amy Pond", team.id);
    await insertUser(t.accountId, "1003", "Not In It", null);
    const got = await call(app, "GET", `/v1/agent-teams/${team.id}`, { key: t.key });
    expect(got.status).toBe(200);
    expect(got.body.data.members).toEqual([
      { id: amy, username: "1001", display_name: "amy Pond" },
      { id: zoe, username: "1002", display_name: "Zoe Quinn" },
    ]);
    const list = await call(app, "GET", "/v1/agent-teams", { key: t.key });
    expect(list.body.data).toEqual([{ id: team.id, name: "Sales", created_at: team.created_at, updated_at: team.updated_at }]);
    const renamed = await call(app, "PATCH", `/v1/agent-teams/${team.id}`, { key: t.key, body: { name: "Inside sales" } });
    expect(renamed.status).toBe(200);
    expect(renamed.body.data).toMatchObject({ name: "Inside sales" });
    expect(renamed.body.data.members.length).toBe(2);
    const empty = await createTeam(t, "Support");
    expect((await call(app, "DELETE", `/v1/agent-teams/${empty.id}`, { key: t.key })).body).toEqual({ ok: true });
    expect((await call(app, "GET", `/v1/agent-teams/${empty.id}`, { key: t.key })).status).toBe(404);
  });

  test("q filters by name prefix; pagination with limit=2", async () => {
    const t = await seedTenant(platform);
    const made: string[] = [];
    for (const name of ["Sales East", "Sales West", "Support", "Billing", "sales_%"]) made.push((await createTeam(t, name)).id);
    const ids = async (q: string) => ((await call(app, "GET", `/v1/agent-teams?${q}`, { key: t.key })).body.data as Json[]).map((x) => x.id);
    expect(await ids("q=SALES")).toEqual([made[0], made[1], made[4]]);
    expect(await ids("q=sales_")).toEqual([made[4]]);
    const seen: string[] = [];
    let cursor: string | undefined;
    let pages = 0;
    do {
      const page = await call(app, "GET", `/v1/agent-teams?limit=2${cursor ? `&cursor=${cursor}` : ""}`, { key: t.key });
      seen.push(...(page.body.data as Json[]).map((x) => x.id as string));
      cursor = page.body.next_cursor;
      pages++;
    } while (cursor);
    expect(pages).toBe(3);
    expect(seen).toEqual(made);
  });

  test("an Idempotency-Key retry of a create replays the reply without a second team", async () => {
    const t = await seedTenant(platform);
    const headers = { "idempotency-key": "team-create-1" };
    const first = await call(app, "POST", "/v1/agent-teams", { key: t.key, body: { name: "Sales" }, headers });
    const again = await call(app, "POST", "/v1/agent-teams", { key: t.key, body: { name: "Sales" }, headers });
    expect(first.status).toBe(201);
    expect(again.status).toBe(201);
    expect(again.headers.get("idempotency-replayed")).toBe("true");
    expect(again.body.data.id).toBe(first.body.data.id);
    expect(((await call(app, "GET", "/v1/agent-teams", { key: t.key })).body.data as Json[]).length).toBe(1);
  });
});

describe(`/v1/agent-teams errors [${storeKind}]`, () => {
  test("400 for bad names, empty patches and unknown fields; nothing is written", async () => {
    const t = await seedTenant(platform);
    for (const [body, path] of [
      [{}, "/name"],
      [{ name: "" }, "/name"],
      [{ name: "x".repeat(101) }, "/name"],
      [{ name: 5 }, "/name"],
      [{ name: "A", members: [] }, "/members"],
    ] as Array<[Json, string]>) {
      const r = await call(app, "POST", "/v1/agent-teams", { key: t.key, body });
      expect(r.status, JSON.stringify(body)).toBe(400);
      expect(detailPaths(r), JSON.stringify(body)).toContain(path);
    }
    expect(((await call(app, "GET", "/v1/agent-teams", { key: t.key })).body.data as Json[]).length).toBe(0);
    const team = await createTeam(t, "Sales");
    for (const [body, path] of [
      [{}, ""],
      [{ name: "" }, "/name"],
      [{ id: "team_x" }, "/id"],
    ] as Array<[Json, string]>) {
      const r = await call(app, "PATCH", `/v1/agent-teams/${team.id}`, { key: t.key, body });
      expect(r.status, JSON.stringify(body)).toBe(400);
      expect(detailPaths(r), JSON.stringify(body)).toContain(path);
    }
    expect((await call(app, "GET", "/v1/agent-teams?cursor=nope", { key: t.key })).status).toBe(400);
  });

  test("409 for a taken name, ignoring case, on create and rename", async () => {
    const t = await seedTenant(platform);
    await createTeam(t, "Sales");
    const dup = await call(app, "POST", "/v1/agent-teams", { key: t.key, body: { name: "SALES" } });
    expect(dup.status).toBe(409);
    expect(dup.body).toMatchObject({ error: "conflict", field: "name" });
    const other = await createTeam(t, "Support");
    const ren = await call(app, "PATCH", `/v1/agent-teams/${other.id}`, { key: t.key, body: { name: "sales" } });
    expect(ren.status).toBe(409);
    expect(ren.body.field).toBe("name");
    // Renaming to its own name in another case is fine; another account may use the name.
    expect((await call(app, "PATCH", `/v1/agent-teams/${other.id}`, { key: t.key, body: { name: "SUPPORT" } })).status).toBe(200);
    await createTeam(await seedTenant(platform), "Sales");
  });

  test("409 naming the users when deleting a team that has members", async () => {
    const t = await seedTenant(platform);
    const team = await createTeam(t, "Sales");
    const user = await insertUser(t.accountId, "1001", "Amy Pond", team.id);
    const r = await call(app, "DELETE", `/v1/agent-teams/${team.id}`, { key: t.key });
    expect(r.status).toBe(409);
    expect(r.body).toMatchObject({ error: "conflict", used_by: [{ kind: "user", id: user }] });
    expect((await call(app, "GET", `/v1/agent-teams/${team.id}`, { key: t.key })).status).toBe(200);
    await platform.db.execute(sql`update app_user set team_id = null where account_id = ${t.accountId} and id = ${user}`);
    expect((await call(app, "DELETE", `/v1/agent-teams/${team.id}`, { key: t.key })).status).toBe(200);
  });
});

describe(`/v1/agent-teams security [${storeKind}]`, () => {
  test("401 without a credential; 403 without the reports scope", async () => {
    const t = await seedTenant(platform);
    const team = await createTeam(t, "Sales");
    expect((await call(app, "GET", "/v1/agent-teams")).status).toBe(401);
    expect((await call(app, "POST", "/v1/agent-teams", { body: { name: "X" } })).status).toBe(401);
    const other = await keyWithScopes(platform, t.accountId, ["users"]);
    const attempts: Array<[string, string, unknown]> = [
      ["GET", "/v1/agent-teams", undefined],
      ["POST", "/v1/agent-teams", { name: "X" }],
      ["GET", `/v1/agent-teams/${team.id}`, undefined],
      ["PATCH", `/v1/agent-teams/${team.id}`, { name: "X" }],
      ["DELETE", `/v1/agent-teams/${team.id}`, undefined],
    ];
    for (const [m, p, body] of attempts) {
      const r = await call(app, m, p, { key: other, body });
      expect(r.status, `${m} ${p}`).toBe(403);
      expect(r.body.need).toBe("reports");
    }
  });

  test("another account's team is a 404 to read, rename and delete; members never cross accounts", async () => {
    const mine = await seedTenant(platform);
    const theirs = await seedTenant(platform);
    const team = await createTeam(theirs, "Sales");
    await insertUser(theirs.accountId, "1001", "Their Agent", team.id);
    expect((await call(app, "GET", `/v1/agent-teams/${team.id}`, { key: mine.key })).status).toBe(404);
    expect((await call(app, "PATCH", `/v1/agent-teams/${team.id}`, { key: mine.key, body: { name: "Mine" } })).status).toBe(404);
    expect((await call(app, "DELETE", `/v1/agent-teams/${team.id}`, { key: mine.key })).status).toBe(404);
    expect((await call(app, "GET", "/v1/agent-teams", { key: mine.key })).body.data).toEqual([]);
    // A user of my account pointing at their team id does not make it my member.
    const myTeam = await createTeam(mine, "Sales");
    await insertUser(mine.accountId, "1001", "My Agent", team.id);
    expect((await call(app, "GET", `/v1/agent-teams/${myTeam.id}`, { key: mine.key })).body.data.members).toEqual([]);
    expect((await call(app, "GET", `/v1/agent-teams/${team.id}`, { key: theirs.key })).body.data.members.map((m: Json) => m.display_name)).toEqual(["Their Agent"]);
  });
});
