/** The control host: admin token gate, admin endpoints, IP allowlist, the two 501 stubs. */
import { createUser } from "../core/users/users.service.ts";
import { createQueue } from "../core/queues/queues.service.ts";
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Platform } from "../core/platform.ts";
import { createControlApp } from "./app.ts";
import { createPublicApp } from "../public/app.ts";
import { createConsoleApp } from "../console/app.ts";
import { storeKind, TEST_ADMIN_TOKEN, testPlatform } from "../../test/support/platform.ts";
import { call, type Json } from "../../test/support/http.ts";

let platform: Platform;
let app: ReturnType<typeof createControlApp>;
const admin = { "x-admin-token": TEST_ADMIN_TOKEN };

beforeAll(async () => {
  platform = await testPlatform();
  app = createControlApp(platform);
});
afterAll(() => platform.close());

describe(`control host admin [${storeKind}]`, () => {
  test("bootstraps a tenant end to end: account, key, console login", async () => {
    const acc = await call(app, "POST", "/admin/accounts", { headers: admin, body: { name: "Globex", timezone: "Europe/Berlin" } });
    expect(acc.status).toBe(201);
    expect(acc.body.data).toMatchObject({ name: "Globex", timezone: "Europe/Berlin", status: "active", language: "en-US" });
    const accountId = acc.body.data.id as string;
    const key = await call(app, "POST", "/admin/keys", { headers: admin, body: { account_id: accountId, label: "ops", scopes: ["cdr", "keys"] } });
    expect(key.status).toBe(201);
    expect(Object.keys(key.body.data).sort()).toEqual(["id", "label", "scopes", "secret"]);
    const who = await call(createPublicApp(platform), "GET", "/v1/whoami", { key: key.body.data.secret });
    expect(who.body).toEqual({ accountId, scopes: ["cdr", "keys"], via: "key" });
    const email = `ops-${Date.now()}@globex.test`;
    const cu = await call(app, "POST", "/admin/console-users", { headers: admin, body: { account_id: accountId, email, password: "a long enough password" } });
    expect(cu.status).toBe(201);
    expect(cu.body.data).toMatchObject({ account_id: accountId, email, scopes: ["*"] });
    expect(cu.text).not.toContain("password");
    const login = await call(createConsoleApp(platform), "POST", "/login", { body: { email, password: "a long enough password" } });
    expect(login.status).toBe(200);
    expect(cu.body.data.user_id).toBeNull();
    // A login that acts as one of the account's users (an agent).
    const agent = await createUser(platform.db, accountId, { username: "2001", display_name: "Agent" });
    const asAgent = await call(app, "POST", "/admin/console-users", {
      headers: admin,
      body: { account_id: accountId, email: `agent-${Date.now()}@globex.test`, password: "a long enough password", user_id: agent.id },
    });
    expect(asAgent.status).toBe(201);
    expect(asAgent.body.data.user_id).toBe(agent.id);
    const stranger = await call(app, "POST", "/admin/console-users", {
      headers: admin,
      body: { account_id: accountId, email: `nobody-${Date.now()}@globex.test`, password: "a long enough password", user_id: "us_NOPE" },
    });
    expect(stranger.status).toBe(400);
    expect(stranger.body.details).toEqual([{ path: "/user_id", message: "No such user in this account." }]);
  });

  test("the operator suspends, reactivates and closes an account: its API keys stop and start with it; closed is final", async () => {
    const acc = (await call(app, "POST", "/admin/accounts", { headers: admin, body: { name: "Initech" } })).body.data;
    const key = (await call(app, "POST", "/admin/keys", { headers: admin, body: { account_id: acc.id, label: "ops", scopes: ["*"] } })).body.data.secret;
    const pub = createPublicApp(platform);
    expect((await call(pub, "GET", "/v1/whoami", { key })).status).toBe(200);
    const suspend = await call(app, "PATCH", `/admin/accounts/${acc.id}`, { headers: admin, body: { status: "suspended", max_out: 5 } });
    expect(suspend.status).toBe(200);
    expect(suspend.body.data).toMatchObject({ id: acc.id, status: "suspended", max_out: 5 });
    expect((await call(app, "GET", `/admin/accounts/${acc.id}`, { headers: admin })).body.data.status).toBe("suspended");
    expect((await call(pub, "GET", "/v1/whoami", { key })).status).toBe(401);
    expect((await call(app, "PATCH", `/admin/accounts/${acc.id}`, { headers: admin, body: { status: "active" } })).body.data.status).toBe("active");
    expect((await call(pub, "GET", "/v1/whoami", { key })).status).toBe(200);
    expect((await call(app, "PATCH", `/admin/accounts/${acc.id}`, { headers: admin, body: { status: "closed" } })).body.data.status).toBe("closed");
    const reopen = await call(app, "PATCH", `/admin/accounts/${acc.id}`, { headers: admin, body: { status: "active" } });
    expect(reopen.status).toBe(409);
    expect(reopen.body).toMatchObject({ error: "conflict", field: "status" });
    // Bad input changes nothing; an unknown account is a 404; the token is required.
    for (const body of [{}, { status: "paused" }, { parent_id: null }, { max_in: -1 }]) {
      const r = await call(app, "PATCH", `/admin/accounts/${acc.id}`, { headers: admin, body });
      expect(r.status, JSON.stringify(body)).toBe(400);
    }
    expect((await call(app, "PATCH", "/admin/accounts/acc_nope", { headers: admin, body: { status: "suspended" } })).status).toBe(404);
    expect((await call(app, "GET", "/admin/accounts/acc_nope", { headers: admin })).status).toBe(404);
    expect((await call(app, "PATCH", `/admin/accounts/${acc.id}`, { body: { status: "active" } })).status).toBe(401);
  });

  test("the operator sets an account's default caller-ID and DID default destination, checked like any destination", async () => {
    const acc = (await call(app, "POST", "/admin/accounts", { headers: admin, body: { name: "Defaults" } })).body.data;
    const other = (await call(app, "POST", "/admin/accounts", { headers: admin, body: { name: "Other" } })).body.data;
    const mine = await createQueue(platform.db, acc.id, { name: "Front desk" });
    const theirs = await createQueue(platform.db, other.id, { name: "Theirs" });
    const patch = (body: Json) => call(app, "PATCH", `/admin/accounts/${acc.id}`, { headers: admin, body });
    const set = await patch({ default_cid_number: "+1 (415) 555-0123", did_default_dest_kind: "queue", did_default_dest_id: mine.id });
    expect(set.status, JSON.stringify(set.body)).toBe(200);
    expect(set.body.data).toMatchObject({ default_cid_number: "14155550123", did_default_dest_kind: "queue", did_default_dest_id: mine.id });
    // Bad values are a 400 naming the field, and change nothing.
    for (const [body, path] of [
      [{ did_default_dest_kind: "queue", did_default_dest_id: theirs.id }, "/did_default_dest_id"],
      [{ did_default_dest_kind: "user" }, "/did_default_dest_id"],
      [{ did_default_dest_kind: "feature", did_default_dest_id: "voicemail_main" }, "/did_default_dest_kind"],
      [{ default_cid_number: "not a number" }, "/default_cid_number"],
    ] as const) {
      const r = await patch(body);
      expect(r.status, JSON.stringify(body)).toBe(400);
      expect(r.body.details.map((d: Json) => d.path), JSON.stringify(body)).toContain(path);
    }
    expect((await call(app, "GET", `/admin/accounts/${acc.id}`, { headers: admin })).body.data).toMatchObject({ default_cid_number: "14155550123", did_default_dest_id: mine.id });
    // Another kind alone drops the old id; null clears both.
    expect((await patch({ did_default_dest_kind: "hangup" })).body.data).toMatchObject({ did_default_dest_kind: "hangup", did_default_dest_id: null });
    expect((await patch({ did_default_dest_kind: null, default_cid_number: null })).body.data).toMatchObject({ did_default_dest_kind: null, did_default_dest_id: null, default_cid_number: null });
  });

  test("a reseller's child account; a non-reseller cannot be a parent", async () => {
    const parent = await call(app, "POST", "/admin/accounts", { headers: admin, body: { name: "Reseller", is_reseller: 1 } });
    const child = await call(app, "POST", "/admin/accounts", { headers: admin, body: { name: "Child", parent_id: parent.body.data.id } });
    expect(child.status).toBe(201);
    expect(child.body.data.parent_id).toBe(parent.body.data.id);
    const bad = await call(app, "POST", "/admin/accounts", { headers: admin, body: { name: "Grandchild", parent_id: child.body.data.id } });
    expect(bad.status).toBe(400);
    expect(bad.body.details[0].path).toBe("/parent_id");
    const missing = await call(app, "POST", "/admin/accounts", { headers: admin, body: { name: "Orphan", parent_id: "acc_nope" } });
    expect(missing.status).toBe(400);
  });

  test("validation: 400 with the field path for every bad input, 409 for a taken email", async () => {
    const cases: Array<[string, Json, string]> = [
      ["/admin/accounts", {}, "/name"],
      ["/admin/accounts", { name: "x", timezone: "Nowhere/Land" }, "/timezone"],
      ["/admin/accounts", { name: "x", status: "closed" }, "/status"],
      ["/admin/accounts", { name: "x", is_reseller: "1" }, "/is_reseller"],
      ["/admin/keys", { account_id: "acc_nope" }, "/account_id"],
      ["/admin/keys", {}, "/account_id"],
      ["/admin/console-users", { account_id: "acc_nope", email: "a@b.test", password: "long enough pw" }, "/account_id"],
      ["/admin/console-users", { account_id: "acc_x", email: "not-an-email", password: "long enough pw" }, "/email"],
      ["/admin/console-users", { account_id: "acc_x", email: "a@b.test", password: "short" }, "/password"],
    ];
    for (const [path, body, field] of cases) {
      const r = await call(app, "POST", path, { headers: admin, body });
      expect(r.status, `${path} ${JSON.stringify(body)}`).toBe(400);
      expect((r.body.details as Json[]).map((d) => d.path), `${path} ${JSON.stringify(body)}`).toContain(field);
    }
    const acc = (await call(app, "POST", "/admin/accounts", { headers: admin, body: { name: "Dup" } })).body.data.id;
    const email = `dup-${Date.now()}@example.test`;
    expect((await call(app, "POST", "/admin/console-users", { headers: admin, body: { account_id: acc, email, password: "long enough pw" } })).status).toBe(201);
    const again = await call(app, "POST", "/admin/console-users", { headers: admin, body: { account_id: acc, email: email.toUpperCase(), password: "other long pw" } });
    expect(again.status).toBe(409);
    expect(again.body.error).toBe("conflict");
  });

  test("admin endpoints need the exact x-admin-token", async () => {
    for (const headers of [{}, { "x-admin-token": "wrong" }, { "x-admin-token": TEST_ADMIN_TOKEN + "x" }] as Array<Record<string, string>>) {
      const r = await call(app, "POST", "/admin/accounts", { headers, body: { name: "Nope" } });
      expect(r.status).toBe(401);
      expect(r.body.error).toBe("unauthorized");
    }
  });

  test("without ADMIN_TOKEN configured, admin endpoints are closed", async () => {
    const p = await testPlatform({ env: { ADMIN_TOKEN: "" } });
    const r = await call(createControlApp(p), "POST", "/admin/accounts", { headers: { "x-admin-token": "" }, body: { name: "x" } });
    expect(r.status).toBe(401);
    expect(r.body.message).toContain("ADMIN_TOKEN");
    await p.close();
  });

  test("/v1/* and /hooks/carrier are the two 501 stubs", async () => {
    for (const [m, p] of [["GET", "/v1/whoami"], ["POST", "/v1/calls"], ["GET", "/v1"], ["POST", "/hooks/carrier"], ["GET", "/hooks/carrier"]] as const) {
      const r = await call(app, m, p, { headers: admin });
      expect(r.status, `${m} ${p}`).toBe(501);
      expect(r.body).toMatchObject({ ok: false, error: "not_implemented" });
    }
  });
});

describe("control host IP allowlist (real sockets)", () => {
  test("a gated path from a non-allowed address is 403; from an allowed one it passes the gate", async () => {
    const closed = await testPlatform({ env: { CONTROL_ALLOW: "10.255.0.0/16" } });
    const open = await testPlatform();
    const s1 = createControlApp(closed).listen({ hostname: "127.0.0.1", port: 0 });
    const s2 = createControlApp(open).listen({ hostname: "127.0.0.1", port: 0 });
    try {
      for (const path of ["/route", "/auth", "/presence/event", "/cac", "/security/bans", "/media/x"]) {
        const refused = await fetch(`http://127.0.0.1:${s1.server!.port}${path}`, { method: "POST" });
        expect(refused.status, path).toBe(403);
        expect(await refused.json()).toEqual({ ok: false, error: "forbidden", message: "This address may not reach the control plane.", hint: "Add the edge node's address to CONTROL_ALLOW." });
        const allowed = await fetch(`http://127.0.0.1:${s2.server!.port}${path}`, { method: "POST" });
        expect(allowed.status, path).not.toBe(403);
      }
      // Probes and admin are not behind the address gate.
      expect((await fetch(`http://127.0.0.1:${s1.server!.port}/healthz`)).status).toBe(200);
    } finally {
      await s1.stop();
      await s2.stop();
      await closed.close();
      await open.close();
    }
  });
});
