/** /v1/devices: happy paths, errors and security. */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createHash } from "node:crypto";
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
import { defaultRealm } from "../../core/devices/realm.ts";
import { applyRegistration, userContacts } from "../../core/presence/presence.service.ts";
import { agentLiveState, applyAgentEvent } from "../../core/presence/agent-state.ts";
import { presenceRoster } from "../../core/presence/presence-events.ts";

let platform: Platform;
let app: ReturnType<typeof createPublicApp>;

beforeAll(async () => {
  platform = await testPlatform();
  app = createPublicApp(platform, [identityRoutes, userRoutes, deviceRoutes]);
});
afterAll(() => platform.close());

const PASSWORD = "Tr0ub4dor&3-long";
const DEVICE_FIELDS = ["auth_username", "created_at", "id", "is_webrtc", "label", "realm", "status", "transport", "updated_at", "user_id"];

const md5 = (text: string) => createHash("md5").update(text).digest("hex");

async function createUser(t: Tenant, username: string): Promise<Json> {
  const r = await call(app, "POST", "/v1/users", { key: t.key, body: { username } });
  expect(r.status, r.text).toBe(201);
  return r.body.data;
}

async function createDevice(t: Tenant, body: Json): Promise<Json> {
  const r = await call(app, "POST", "/v1/devices", { key: t.key, body: { password: PASSWORD, ...body } });
  expect(r.status, r.text).toBe(201);
  return r.body.data;
}

type StoredDevice = Record<string, unknown> & { ha1: string; ha1b: string; auth_username: string; realm: string };

async function storedDevice(accountId: string, id: string): Promise<StoredDevice> {
  const [row] = await rawRows<StoredDevice>(platform.db, sql`select * from device where account_id = ${accountId} and id = ${id}`);
  return row!;
}

async function credentials(accountId: string): Promise<Array<{ realm: string; auth_username: string; device_id: string }>> {
  return rawRows(platform.db, sql`select realm, auth_username, device_id from device_credential where account_id = ${accountId} order by device_id, realm`);
}

async function countDevices(accountId: string): Promise<number> {
  const [row] = await rawRows<{ n: number }>(platform.db, sql`select count(*)::int as n from device where account_id = ${accountId}`);
  return row!.n;
}

let domainCounter = 0;
async function addSipDomain(accountId: string, isPrimary: 0 | 1): Promise<string> {
  const domain = `d${Date.now()}${++domainCounter}${Math.floor(Math.random() * 1e6)}.example.com`;
  await platform.db.execute(sql`insert into sip_domain (domain, account_id, is_primary, created_at) values (${domain}, ${accountId}, ${isPrimary}, ${domainCounter})`);
  return domain;
}

describe(`/v1/devices happy [${storeKind}]`, () => {
  test("create: defaults to the user's username, the default realm, udp; the reply has no credential", async () => {
    const t = await seedTenant(platform);
    const user = await createUser(t, "1001");
    const r = await call(app, "POST", "/v1/devices", { key: t.key, body: { user_id: user.id, password: PASSWORD } });
    expect(r.status).toBe(201);
    const device = r.body.data;
    expect(device.id).toMatch(/^dev_[0-9A-Z]{26}$/);
    expect(Object.keys(device).sort()).toEqual(DEVICE_FIELDS);
    expect(device).toMatchObject({
      user_id: user.id,
      auth_username: "1001",
      realm: `${t.accountId.toLowerCase()}.sip.parley.local`,
      transport: "udp",
      is_webrtc: 0,
      status: "active",
      label: null,
    });
    expect(r.text).not.toContain(PASSWORD);
    expect(r.text).not.toContain("ha1");
    expect((await call(app, "GET", `/v1/devices/${device.id}`, { key: t.key })).body.data).toEqual(device);
  });

  test("only the two digest hashes are stored, and they are MD5 of the documented strings", async () => {
    const t = await seedTenant(platform);
    const user = await createUser(t, "1001");
    const device = await createDevice(t, { user_id: user.id, auth_username: "alice.desk" });
    const row = await storedDevice(t.accountId, device.id);
    expect(Object.keys(row).sort()).toEqual([...DEVICE_FIELDS, "account_id", "ha1", "ha1b"].sort());
    const realm = defaultRealm(t.accountId);
    expect(row.ha1).toBe(md5(`alice.desk:${realm}:${PASSWORD}`));
    expect(row.ha1b).toBe(md5(`alice.desk@${realm}:${realm}:${PASSWORD}`));
    expect(JSON.stringify(row)).not.toContain(PASSWORD);
    expect(await credentials(t.accountId)).toEqual([{ realm, auth_username: "alice.desk", device_id: device.id }]);
  });

  test("the password never reaches the logs", async () => {
    const lines: string[] = [];
    const logged = await testPlatform({ logLines: lines, logLevel: "debug" });
    try {
      const loggedApp = createPublicApp(logged, [identityRoutes, userRoutes, deviceRoutes]);
      const t = await seedTenant(logged);
      const user = (await call(loggedApp, "POST", "/v1/users", { key: t.key, body: { username: "1001" } })).body.data;
      const secret = "never-log-me-42";
      expect((await call(loggedApp, "POST", "/v1/devices", { key: t.key, body: { user_id: user.id, password: secret } })).status).toBe(201);
      expect((await call(loggedApp, "POST", "/v1/devices", { key: t.key, body: { user_id: user.id, password: secret } })).status).toBe(409);
      expect((await call(loggedApp, "POST", "/v1/devices", { key: t.key, body: { user_id: user.id, password: secret, nope: 1 } })).status).toBe(400);
      await Bun.sleep(50); // access-log lines are written after the response
      expect(lines.length).toBeGreaterThan(0);
      expect(lines.join("\n")).not.toContain(secret);
    } finally {
      await logged.close();
    }
  });

  test("realm: the primary SIP domain by default; any own domain or the default realm on request", async () => {
    const t = await seedTenant(platform);
    const user = await createUser(t, "1001");
    const secondary = await addSipDomain(t.accountId, 0);
    const primary = await addSipDomain(t.accountId, 1);
    const d1 = await createDevice(t, { user_id: user.id });
    expect(d1.realm).toBe(primary);
    const d2 = await createDevice(t, { user_id: user.id, realm: secondary });
    expect(d2.realm).toBe(secondary);
    const d3 = await createDevice(t, { user_id: user.id, realm: defaultRealm(t.accountId) });
    expect(d3.realm).toBe(defaultRealm(t.accountId));
    const row = await storedDevice(t.accountId, d2.id);
    expect(row.ha1).toBe(md5(`1001:${secondary}:${PASSWORD}`));
  });

  test("realm: without a primary, the account's oldest SIP domain", async () => {
    const t = await seedTenant(platform);
    const user = await createUser(t, "1001");
    const oldest = await addSipDomain(t.accountId, 0);
    await addSipDomain(t.accountId, 0);
    expect((await createDevice(t, { user_id: user.id })).realm).toBe(oldest);
  });

  test("transport wss makes a WebRTC device by default; is_webrtc can be 0 for a non-browser wss client", async () => {
    const t = await seedTenant(platform);
    const user = await createUser(t, "1001");
    const web = await createDevice(t, { user_id: user.id, transport: "wss", label: "browser" });
    expect(web).toMatchObject({ transport: "wss", is_webrtc: 1, label: "browser" });
    const native = await createDevice(t, { user_id: user.id, auth_username: "1001-ws", transport: "wss", is_webrtc: 0, status: "disabled" });
    expect(native).toMatchObject({ transport: "wss", is_webrtc: 0, status: "disabled" });
    const tls = await createDevice(t, { user_id: user.id, auth_username: "1001-tls", transport: "tls" });
    expect(tls).toMatchObject({ transport: "tls", is_webrtc: 0 });
  });

  test("list filters by user_id, status, transport and is_webrtc", async () => {
    const t = await seedTenant(platform);
    const a = await createUser(t, "1001");
    const b = await createUser(t, "1002");
    const a1 = await createDevice(t, { user_id: a.id });
    const a2 = await createDevice(t, { user_id: a.id, auth_username: "1001-web", transport: "wss", status: "disabled" });
    const b1 = await createDevice(t, { user_id: b.id, transport: "tcp" });
    const ids = async (query: string) => ((await call(app, "GET", `/v1/devices${query}`, { key: t.key })).body.data as Json[]).map((d) => d.id);
    expect(await ids("")).toEqual([a1.id, a2.id, b1.id]);
    expect(await ids(`?user_id=${a.id}`)).toEqual([a1.id, a2.id]);
    expect(await ids(`?user_id=${b.id}&transport=tcp`)).toEqual([b1.id]);
    expect(await ids("?status=disabled")).toEqual([a2.id]);
    expect(await ids("?status=active")).toEqual([a1.id, b1.id]);
    expect(await ids("?is_webrtc=1")).toEqual([a2.id]);
    expect(await ids("?is_webrtc=0")).toEqual([a1.id, b1.id]);
    expect(await ids(`?user_id=${newId("us")}`)).toEqual([]);
    const list = await call(app, "GET", "/v1/devices", { key: t.key });
    expect(list.text).not.toContain("ha1");
  });

  test("pagination walks every device exactly once with limit=2", async () => {
    const t = await seedTenant(platform);
    const user = await createUser(t, "1001");
    const created: string[] = [];
    for (let i = 0; i < 5; i++) created.push((await createDevice(t, { user_id: user.id, auth_username: `1001-${i}` })).id);
    const seen: string[] = [];
    let cursor: string | undefined;
    let pages = 0;
    do {
      const page = await call(app, "GET", `/v1/devices?limit=2${cursor ? `&cursor=${cursor}` : ""}`, { key: t.key });
      expect(page.status).toBe(200);
      seen.push(...(page.body.data as Json[]).map((d) => d.id as string));
      cursor = page.body.next_cursor;
      pages++;
    } while (cursor);
    expect(pages).toBe(3);
    expect(seen).toEqual(created);
  });

  test("PATCH changes only the fields sent; a new password rehashes", async () => {
    const t = await seedTenant(platform);
    const user = await createUser(t, "1001");
    const device = await createDevice(t, { user_id: user.id, label: "desk" });
    const before = await storedDevice(t.accountId, device.id);
    const r = await call(app, "PATCH", `/v1/devices/${device.id}`, { key: t.key, body: { status: "disabled", label: null } });
    expect(r.status).toBe(200);
    expect(r.body.data).toMatchObject({ ...device, status: "disabled", label: null, updated_at: r.body.data.updated_at });
    expect((await storedDevice(t.accountId, device.id)).ha1).toBe(before.ha1);
    const r2 = await call(app, "PATCH", `/v1/devices/${device.id}`, { key: t.key, body: { password: "a-brand-new-pass" } });
    expect(r2.status).toBe(200);
    expect(r2.text).not.toContain("a-brand-new-pass");
    const after = await storedDevice(t.accountId, device.id);
    expect(after.ha1).toBe(md5(`1001:${device.realm}:a-brand-new-pass`));
    expect(after.ha1b).toBe(md5(`1001@${device.realm}:${device.realm}:a-brand-new-pass`));
  });

  test("PATCH of auth_username and realm with the password moves the digest identity", async () => {
    const t = await seedTenant(platform);
    const user = await createUser(t, "1001");
    const domain = await addSipDomain(t.accountId, 0);
    const device = await createDevice(t, { user_id: user.id });
    const r = await call(app, "PATCH", `/v1/devices/${device.id}`, { key: t.key, body: { auth_username: "renamed", realm: domain, password: "another-pass-1" } });
    expect(r.status).toBe(200);
    expect(r.body.data).toMatchObject({ auth_username: "renamed", realm: domain });
    expect(await credentials(t.accountId)).toEqual([{ realm: domain, auth_username: "renamed", device_id: device.id }]);
    expect((await storedDevice(t.accountId, device.id)).ha1).toBe(md5(`renamed:${domain}:another-pass-1`));
    // The old identity is free again.
    await createDevice(t, { user_id: user.id });
  });

  test("PATCH user_id moves the device to another user of the account", async () => {
    const t = await seedTenant(platform);
    const a = await createUser(t, "1001");
    const b = await createUser(t, "1002");
    const device = await createDevice(t, { user_id: a.id });
    const r = await call(app, "PATCH", `/v1/devices/${device.id}`, { key: t.key, body: { user_id: b.id } });
    expect(r.body.data.user_id).toBe(b.id);
    expect((await call(app, "GET", `/v1/users/${b.id}`, { key: t.key })).body.data.devices.map((d: Json) => d.id)).toEqual([device.id]);
    expect((await call(app, "GET", `/v1/users/${a.id}`, { key: t.key })).body.data.devices).toEqual([]);
  });

  test("a device disabled, given a new password, moved or deleted, and a user deleted, leave no registration behind", async () => {
    const t = await seedTenant(platform);
    const user = await createUser(t, "reg-1001");
    const other = await createUser(t, "reg-1002");
    const register = async (device: Json, contact: string) => {
      await applyRegistration(platform.live, { account_id: t.accountId, user_id: device.user_id, device_id: device.id, contact, expires: 3600, webrtc: 0 });
    };
    const bound = async (userId: string) => (await userContacts(platform.live, t.accountId, userId)).map((c) => c.contact).sort();
    const [a, b, c, d] = [
      await createDevice(t, { user_id: user.id, auth_username: "reg-a" }),
      await createDevice(t, { user_id: user.id, auth_username: "reg-b" }),
      await createDevice(t, { user_id: user.id, auth_username: "reg-c" }),
      await createDevice(t, { user_id: user.id, auth_username: "reg-d" }),
    ];
    for (const [device, host] of [[a, "a"], [b, "b"], [c, "c"], [d, "d"]] as const) await register(device, `sip:1001@${host}.example`);
    expect(await bound(user.id)).toHaveLength(4);
    // A label change keeps the registration.
    expect((await call(app, "PATCH", `/v1/devices/${a.id}`, { key: t.key, body: { label: "desk" } })).status).toBe(200);
    expect(await bound(user.id)).toHaveLength(4);
    expect((await call(app, "PATCH", `/v1/devices/${a.id}`, { key: t.key, body: { status: "disabled" } })).status).toBe(200);
    expect((await call(app, "PATCH", `/v1/devices/${b.id}`, { key: t.key, body: { password: `${PASSWORD}-2` } })).status).toBe(200);
    expect((await call(app, "PATCH", `/v1/devices/${c.id}`, { key: t.key, body: { user_id: other.id } })).status).toBe(200);
    expect(await bound(user.id)).toEqual(["sip:1001@d.example"]);
    expect(await bound(other.id)).toEqual([]);
    expect((await call(app, "DELETE", `/v1/devices/${d.id}`, { key: t.key })).status).toBe(200);
    expect(await bound(user.id)).toEqual([]);
    // A user deleted takes its devices' registrations along.
    const e = await createDevice(t, { user_id: other.id, auth_username: "reg-e" });
    await register(e, "sip:1002@e.example");
    expect(await bound(other.id)).toHaveLength(1);
    expect((await call(app, "DELETE", `/v1/users/${other.id}`, { key: t.key })).status).toBe(200);
    expect(await bound(other.id)).toEqual([]);
  });

  test("a user disabled leaves no registration; an agent disabled, made a non-agent or deleted is logged out; the roster counts none of it", async () => {
    const t = await seedTenant(platform);
    const register = async (device: Json, contact: string) => {
      await applyRegistration(platform.live, { account_id: t.accountId, user_id: device.user_id, device_id: device.id, contact, expires: 3600, webrtc: 0 });
    };
    const agents = await Promise.all(["ag-1", "ag-2", "ag-3"].map((username) => createUser(t, username)));
    for (const [i, agent] of agents.entries()) {
      expect((await call(app, "PATCH", `/v1/users/${agent.id}`, { key: t.key, body: { is_agent: 1 } })).status).toBe(200);
      await register(await createDevice(t, { user_id: agent.id, auth_username: `ag-dev-${i}` }), `sip:ag${i}@host.example`);
      await applyAgentEvent(platform, t.accountId, agent.id, "login");
    }
    const [disabled, demoted, deleted] = agents;
    expect((await presenceRoster(platform, t.accountId)).tiles).toMatchObject({ total: 3, registered: 3, ready: 3 });
    expect((await call(app, "PATCH", `/v1/users/${disabled!.id}`, { key: t.key, body: { status: "disabled" } })).status).toBe(200);
    expect((await call(app, "PATCH", `/v1/users/${demoted!.id}`, { key: t.key, body: { is_agent: 0 } })).status).toBe(200);
    expect((await call(app, "DELETE", `/v1/users/${deleted!.id}`, { key: t.key })).status).toBe(200);
    expect(await userContacts(platform.live, t.accountId, disabled!.id)).toEqual([]);
    // The demoted user stays registered (only the agent part ended).
    expect(await userContacts(platform.live, t.accountId, demoted!.id)).toHaveLength(1);
    for (const agent of agents) expect((await agentLiveState(platform.live, t.accountId, agent.id))?.state).toBe("logged_out");
    const roster = await presenceRoster(platform, t.accountId);
    expect(roster.tiles).toMatchObject({ total: 2, registered: 1, ready: 0 });
    expect(roster.data.find((u) => u.id === disabled!.id)).toMatchObject({ status: "offline", registered: 0, agent_state: "logged_out", user_status: "disabled" });
    // Each left with an agent.state event saying so.
    const changes = (await platform.events.since(t.accountId, 0, 100, ["agent.state"])).map((e) => e.data as { user_id: string; state: string });
    for (const agent of agents) expect(changes.filter((c) => c.user_id === agent.id).map((c) => c.state)).toEqual(["ready", "logged_out"]);
    // A user never logged in is left alone: no state stored, no event.
    const plain = await createUser(t, "plain-1");
    expect((await call(app, "PATCH", `/v1/users/${plain.id}`, { key: t.key, body: { status: "disabled" } })).status).toBe(200);
    expect(await agentLiveState(platform.live, t.accountId, plain.id)).toBeNull();
    expect(await platform.events.since(t.accountId, 0, 100, ["agent.state"])).toHaveLength(6);
  });

  test("delete removes the device and its digest identity", async () => {
    const t = await seedTenant(platform);
    const user = await createUser(t, "1001");
    const device = await createDevice(t, { user_id: user.id });
    const r = await call(app, "DELETE", `/v1/devices/${device.id}`, { key: t.key });
    expect(r.status).toBe(200);
    expect(r.body).toEqual({ ok: true });
    expect(await countDevices(t.accountId)).toBe(0);
    expect(await credentials(t.accountId)).toEqual([]);
    expect((await call(app, "GET", `/v1/devices/${device.id}`, { key: t.key })).status).toBe(404);
    await createDevice(t, { user_id: user.id });
  });

  test("an Idempotency-Key replay of a create returns the first reply and creates nothing more", async () => {
    const t = await seedTenant(platform);
    const user = await createUser(t, "1001");
    const headers = { "idempotency-key": "create-device-1" };
    const body = { user_id: user.id, password: PASSWORD };
    const first = await call(app, "POST", "/v1/devices", { key: t.key, body, headers });
    expect(first.status).toBe(201);
    const again = await call(app, "POST", "/v1/devices", { key: t.key, body, headers });
    expect(again.status).toBe(201);
    expect(again.headers.get("idempotency-replayed")).toBe("true");
    expect(again.body).toEqual(first.body);
    expect(await countDevices(t.accountId)).toBe(1);
  });
});

describe(`/v1/devices errors [${storeKind}]`, () => {
  test("create: 400 naming each bad field, and nothing is created", async () => {
    const t = await seedTenant(platform);
    const user = await createUser(t, "1001");
    const other = await seedTenant(platform);
    const theirUser = await createUser(other, "1001");
    const theirDomain = await addSipDomain(other.accountId, 1);
    const ok = { user_id: user.id, password: PASSWORD };
    const cases: Array<[Json, string]> = [
      [{ user_id: user.id }, "/password"],
      [{ ...ok, password: "short7c" }, "/password"],
      [{ ...ok, password: "x".repeat(129) }, "/password"],
      [{ ...ok, password: 12345678 }, "/password"],
      [{ password: PASSWORD }, "/user_id"],
      [{ ...ok, user_id: "us_nope" }, "/user_id"],
      [{ ...ok, user_id: newId("us") }, "/user_id"],
      [{ ...ok, user_id: theirUser.id }, "/user_id"],
      [{ ...ok, auth_username: "has space" }, "/auth_username"],
      [{ ...ok, auth_username: "" }, "/auth_username"],
      [{ ...ok, auth_username: "a".repeat(65) }, "/auth_username"],
      [{ ...ok, auth_username: "a:b" }, "/auth_username"],
      [{ ...ok, realm: "Upper.Example.com" }, "/realm"],
      [{ ...ok, realm: "bad realm" }, "/realm"],
      [{ ...ok, realm: "unknown.example.com" }, "/realm"],
      [{ ...ok, realm: theirDomain }, "/realm"],
      [{ ...ok, realm: defaultRealm(other.accountId) }, "/realm"],
      [{ ...ok, transport: "sctp" }, "/transport"],
      [{ ...ok, is_webrtc: 1 }, "/is_webrtc"],
      [{ ...ok, transport: "tcp", is_webrtc: 1 }, "/is_webrtc"],
      [{ ...ok, is_webrtc: "1" }, "/is_webrtc"],
      [{ ...ok, status: "gone" }, "/status"],
      [{ ...ok, label: "" }, "/label"],
      [{ ...ok, label: "x".repeat(101) }, "/label"],
      [{ ...ok, ha1: "0".repeat(32) }, "/ha1"],
      [{ ...ok, ha1b: "0".repeat(32) }, "/ha1b"],
    ];
    for (const [body, path] of cases) {
      const r = await call(app, "POST", "/v1/devices", { key: t.key, body });
      expect(r.status, JSON.stringify(body)).toBe(400);
      expect(r.body.error).toBe("validation_failed");
      expect((r.body.details as Json[]).map((d) => d.path), JSON.stringify(body)).toContain(path);
    }
    expect(await countDevices(t.accountId)).toBe(0);
    expect(await credentials(t.accountId)).toEqual([]);
  });

  test("PATCH: auth_username or realm without the password is a 400 on /password, and nothing changes", async () => {
    const t = await seedTenant(platform);
    const user = await createUser(t, "1001");
    const device = await createDevice(t, { user_id: user.id });
    const domain = await addSipDomain(t.accountId, 0);
    const before = await storedDevice(t.accountId, device.id);
    for (const body of [{ auth_username: "renamed" }, { realm: domain }, { auth_username: "renamed", label: "x" }]) {
      const r = await call(app, "PATCH", `/v1/devices/${device.id}`, { key: t.key, body });
      expect(r.status, JSON.stringify(body)).toBe(400);
      expect(r.body.details[0].path).toBe("/password");
      expect(r.body.details[0].message).toContain("password");
    }
    // Sending the current values is no change and needs no password.
    expect((await call(app, "PATCH", `/v1/devices/${device.id}`, { key: t.key, body: { auth_username: "1001", realm: device.realm } })).status).toBe(200);
    expect(await storedDevice(t.accountId, device.id)).toEqual({ ...before, updated_at: expect.anything() }); // raw bigint: a string on postgres.js
    expect(await credentials(t.accountId)).toEqual([{ realm: device.realm, auth_username: "1001", device_id: device.id }]);
  });

  test("PATCH: 400 for bad fields, and nothing changes", async () => {
    const t = await seedTenant(platform);
    const user = await createUser(t, "1001");
    const device = await createDevice(t, { user_id: user.id, transport: "wss" });
    const before = await storedDevice(t.accountId, device.id);
    const cases: Array<[Json, string]> = [
      [{}, ""],
      [{ password: "short" }, "/password"],
      [{ user_id: newId("us") }, "/user_id"],
      [{ realm: "unknown.example.com", password: PASSWORD }, "/realm"],
      [{ transport: "udp" }, "/transport"],
      [{ is_webrtc: 2 }, "/is_webrtc"],
      [{ ha1: "x" }, "/ha1"],
      [{ account_id: "acc_x" }, "/account_id"],
    ];
    for (const [body, path] of cases) {
      const r = await call(app, "PATCH", `/v1/devices/${device.id}`, { key: t.key, body });
      expect(r.status, JSON.stringify(body)).toBe(400);
      if (path) expect((r.body.details as Json[]).map((d) => d.path), JSON.stringify(body)).toContain(path);
    }
    expect(await storedDevice(t.accountId, device.id)).toEqual(before);
    // Leaving wss works when is_webrtc goes too.
    const moved = await call(app, "PATCH", `/v1/devices/${device.id}`, { key: t.key, body: { transport: "udp", is_webrtc: 0 } });
    expect(moved.body.data).toMatchObject({ transport: "udp", is_webrtc: 0 });
  });

  test("409 for a digest identity already taken, on create and on patch", async () => {
    const t = await seedTenant(platform);
    const user = await createUser(t, "1001");
    const other = await createUser(t, "1002");
    await createDevice(t, { user_id: user.id });
    const dup = await call(app, "POST", "/v1/devices", { key: t.key, body: { user_id: other.id, auth_username: "1001", password: PASSWORD } });
    expect(dup.status).toBe(409);
    expect(dup.body).toMatchObject({ ok: false, error: "conflict", field: "auth_username" });
    expect(await countDevices(t.accountId)).toBe(1);
    const second = await createDevice(t, { user_id: other.id });
    const clash = await call(app, "PATCH", `/v1/devices/${second.id}`, { key: t.key, body: { auth_username: "1001", password: PASSWORD, label: "x" } });
    expect(clash.status).toBe(409);
    expect(clash.body.field).toBe("auth_username");
    expect((await storedDevice(t.accountId, second.id)).label).toBeNull();
    expect((await credentials(t.accountId)).map((c) => c.auth_username).sort()).toEqual(["1001", "1002"]);
    // The same auth_username in another account is another digest identity (its own realm).
    const elsewhere = await seedTenant(platform);
    await createDevice(elsewhere, { user_id: (await createUser(elsewhere, "1001")).id });
  });

  test("409 deleting a device a ring group rings; it stays", async () => {
    const t = await seedTenant(platform);
    const user = await createUser(t, "1001");
    const device = await createDevice(t, { user_id: user.id });
    const rg = newId("rg");
    await platform.db.execute(sql`insert into ring_group_member (account_id, ring_group_id, position, device_id) values (${t.accountId}, ${rg}, 1, ${device.id})`);
    const r = await call(app, "DELETE", `/v1/devices/${device.id}`, { key: t.key });
    expect(r.status).toBe(409);
    expect(r.body).toMatchObject({ error: "conflict", used_by: [{ kind: "ring_group", id: rg }] });
    expect(await countDevices(t.accountId)).toBe(1);
    expect((await credentials(t.accountId)).length).toBe(1);
  });

  test("404 for an unknown device; 400 for bad list queries", async () => {
    const t = await seedTenant(platform);
    const id = newId("dev");
    for (const [method, body] of [["GET", undefined], ["PATCH", { label: "x" }], ["DELETE", undefined]] as const) {
      const r = await call(app, method, `/v1/devices/${id}`, { key: t.key, body });
      expect(r.status, method).toBe(404);
      expect(r.body.error).toBe("not_found");
    }
    for (const [query, path] of [
      ["?transport=sctp", "/query/transport"],
      ["?status=gone", "/query/status"],
      ["?is_webrtc=2", "/query/is_webrtc"],
      ["?cursor=garbage", "/query/cursor"],
      ["?user=1", "/query/user"],
    ] as const) {
      const r = await call(app, "GET", `/v1/devices${query}`, { key: t.key });
      expect(r.status, query).toBe(400);
      expect((r.body.details as Json[]).map((d) => d.path), query).toContain(path);
    }
  });
});

describe(`/v1/devices security [${storeKind}]`, () => {
  test("401 without a credential", async () => {
    for (const [method, path] of [["GET", "/v1/devices"], ["POST", "/v1/devices"], ["PATCH", `/v1/devices/${newId("dev")}`], ["DELETE", `/v1/devices/${newId("dev")}`]] as const) {
      const r = await call(app, method, path, { body: method === "GET" || method === "DELETE" ? undefined : { label: "x" } });
      expect(r.status, `${method} ${path}`).toBe(401);
    }
  });

  test("403 naming the users scope for every route", async () => {
    const t = await seedTenant(platform);
    const user = await createUser(t, "1001");
    const device = await createDevice(t, { user_id: user.id });
    const limited = await keyWithScopes(platform, t.accountId, ["agents", "numbers"]);
    for (const [method, path, body] of [
      ["GET", "/v1/devices", undefined],
      ["POST", "/v1/devices", { user_id: user.id, password: PASSWORD, auth_username: "x1" }],
      ["GET", `/v1/devices/${device.id}`, undefined],
      ["PATCH", `/v1/devices/${device.id}`, { label: "x" }],
      ["DELETE", `/v1/devices/${device.id}`, undefined],
    ] as const) {
      const r = await call(app, method, path, { key: limited, body });
      expect(r.status, `${method} ${path}`).toBe(403);
      expect(r.body.need).toBe("users");
    }
    expect(await countDevices(t.accountId)).toBe(1);
  });

  test("another account's device is a 404 to read, change or delete, and absent from the list", async () => {
    const mine = await seedTenant(platform);
    const theirs = await seedTenant(platform);
    const theirDevice = await createDevice(theirs, { user_id: (await createUser(theirs, "1001")).id });
    const before = await storedDevice(theirs.accountId, theirDevice.id);
    for (const [method, body] of [["GET", undefined], ["PATCH", { label: "mine", password: "hijacked-pass" }], ["DELETE", undefined]] as const) {
      const r = await call(app, method, `/v1/devices/${theirDevice.id}`, { key: mine.key, body });
      expect(r.status, method).toBe(404);
    }
    expect(await storedDevice(theirs.accountId, theirDevice.id)).toEqual(before);
    expect(((await call(app, "GET", "/v1/devices", { key: mine.key })).body.data as Json[]).length).toBe(0);
    expect(((await call(app, "GET", `/v1/devices?user_id=${theirDevice.user_id}`, { key: mine.key })).body.data as Json[]).length).toBe(0);
  });

  test("a device cannot be moved to another account's user", async () => {
    const mine = await seedTenant(platform);
    const theirs = await seedTenant(platform);
    const device = await createDevice(mine, { user_id: (await createUser(mine, "1001")).id });
    const theirUser = await createUser(theirs, "1001");
    const r = await call(app, "PATCH", `/v1/devices/${device.id}`, { key: mine.key, body: { user_id: theirUser.id } });
    expect(r.status).toBe(400);
    expect(r.body.details[0].path).toBe("/user_id");
  });
});
