/** POST /route on a real listener (the control host's address gate needs a client IP). */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Platform } from "../../core/platform.ts";
import { storeKind, testPlatform } from "../../../test/support/platform.ts";
import { createControlApp } from "../app.ts";
import { routeRoutes } from "./route.ts";
import { routeFixture } from "../../core/routing/decide.fixture.ts";
import type { Json } from "../../../test/support/http.ts";
import { createHash, randomUUID } from "node:crypto";
import { seedTenant } from "../../../test/support/platform.ts";
import { createUser, updateUser } from "../../core/users/users.service.ts";
import { accounts } from "../../core/accounts/accounts.schema.ts";
import { eq } from "drizzle-orm";
import { createDevice } from "../../core/devices/devices.service.ts";
import { defaultRealm } from "../../core/devices/realm.ts";
import { findCallBySipId } from "../../core/calls/calls.store.ts";
import { authenticateDigestForRoute, digestAuthDeps } from "../../core/sip-auth/sip-auth.service.ts";
import { loadDevice } from "../../core/routing/decide.store.ts";
import { createExtension } from "../../core/extensions/extensions.service.ts";
import type { LiveStore } from "../../core/live/live-store.ts";
import { cacSnapshot } from "../../core/cac/cac.service.ts";
import { listTrace } from "../../core/calls/calls.store.ts";
import { listLogs } from "../../core/logs/logs.service.ts";
import { eventually } from "../../../test/support/eventually.ts";

let platform: Platform;
let server: { server: { port?: number } | null; stop(): Promise<unknown> | unknown };
let base: string;

beforeAll(async () => {
  platform = await testPlatform({ env: { CARRIER_ADDRESSES: "192.0.2.0/24", MEDIA_ENGINES: "sip:10.0.0.5:5080", CARRIER_URI: "sip:carrier.example.net" } });
  server = createControlApp(platform, [routeRoutes]).listen({ hostname: "127.0.0.1", port: 0 });
  base = `http://127.0.0.1:${server.server!.port}`;
});
afterAll(async () => {
  await server.stop();
  await platform.close();
});

const post = async (body: string, contentType: string) => {
  const r = await fetch(`${base}/route`, { method: "POST", headers: { "content-type": contentType }, body });
  return { status: r.status, body: (await r.json()) as Json };
};
const json = (body: unknown) => post(JSON.stringify(body), "application/json");

describe(`POST /route [${storeKind}]`, () => {
  test("JSON and form bodies get the same decision: rtjson for the media engine", async () => {
    const f = await routeFixture(platform);
    const flow = await f.flow();
    const did = await f.number({ dest_kind: "flow", dest_id: flow });
    const a = await json({ callId: `r-${Date.now()}-a`, from: "14155550000", fromDomain: "carrier", to: did.e164, source_ip: "192.0.2.1" });
    expect(a.status).toBe(200);
    expect(a.body).toEqual({
      rtjson: expect.objectContaining({ action: "flow", account_id: f.accountId, flow_id: flow, version: "1.0", routing: "serial" }),
    });
    expect(a.body.rtjson.routes[0]).toMatchObject({ uri: `sip:${did.e164}@10.0.0.5:5080`, dst_uri: "sip:10.0.0.5:5080" });
    expect(a.body.rtjson.routes[0].headers.extra).toBe(`X-Account-Id: ${f.accountId}\r\nX-Flow-Id: ${flow}\r\nX-Dest: flow:${flow}\r\nX-Call-Direction: inbound\r\nX-Number-Id: ${did.id}\r\n`);
    const form = new URLSearchParams({ callId: `r-${Date.now()}-b`, from: "14155550000", fromDomain: "carrier", to: `+${did.e164}`, source_ip: "192.0.2.1" });
    const b = await post(form.toString(), "application/x-www-form-urlencoded");
    expect(b.status).toBe(200);
    expect(b.body.rtjson).toMatchObject({ action: "flow", flow_id: flow });
    // Optional fields an edge config fills with empty strings count as absent, in both encodings.
    const blanks = { source_country: "", trunk_id: "", account_id: "" };
    const c = await json({ callId: `r-${Date.now()}-c`, from: "14155550000", fromDomain: "carrier", to: did.e164, source_ip: "192.0.2.1", ...blanks });
    expect(c.status).toBe(200);
    expect(c.body.rtjson).toMatchObject({ action: "flow", flow_id: flow });
    const formBlanks = new URLSearchParams({ callId: `r-${Date.now()}-d`, from: "14155550000", fromDomain: "carrier", to: did.e164, source_ip: "192.0.2.1", ...blanks });
    expect((await post(formBlanks.toString(), "application/x-www-form-urlencoded")).body.rtjson).toMatchObject({ action: "flow", flow_id: flow });
    // Without a source address the call is not the carrier's: challenged like any unknown caller.
    const noSource = await json({ callId: `r-${Date.now()}-e`, from: "14155550000", fromDomain: "carrier", to: did.e164, source_ip: "" });
    expect(noSource.status).toBe(200);
    expect(noSource.body.rtjson).toMatchObject({ action: "reject", code: 407 });
  });

  test("a refusal is a 200 carrying a reject action with the SIP code", async () => {
    const r = await json({ callId: `r-${Date.now()}-c`, from: "x", fromDomain: "y", to: "14155550100", source_ip: "198.51.100.1" });
    expect(r.status).toBe(200);
    expect(r.body.rtjson).toMatchObject({ action: "reject", code: 407, reason: "Proxy Authentication Required", account_id: null });
  });

  test("refusals by the account's rules and soft limits exceeded leave a warn line in the account log, one a minute per kind", async () => {
    const f = await routeFixture(platform, { max_out: 10 });
    const user = await f.user({ max_simultaneous: 10 });
    const device = await f.device(user);
    await f.route({ via: "carrier", priority: 1000 });
    await f.phoneList("dnc_out", ["447700900999"]);
    await f.callLimit({ name: "burst", direction: "out", period_sec: 3600, max_count: 1, hard: 0 });
    const did = await f.number({ dest_kind: "flow", dest_id: await f.flow(), max_channels: 1 });
    const fromDevice = (to: string) => json({ callId: `n-${randomUUID()}`, from: "1001", fromDomain: "x", to, account_id: f.accountId, user_id: user, device_id: device, source_ip: "10.0.0.9" });
    const warnings = async () => (await listLogs(platform.db, f.accountId, { level: "warn" })).data;

    // Ordinary outcomes are not noted: a short number that is no extension.
    expect((await fromDevice("999")).body.rtjson).toMatchObject({ action: "reject", code: 484 });
    expect(await warnings()).toEqual([]);
    // Do-not-call, twice: one line.
    for (let i = 0; i < 2; i++) expect((await fromDevice("447700900999")).body.rtjson).toMatchObject({ action: "reject", code: 603 });
    let lines = await warnings();
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({ source: "platform", data: { code: 603, direction: "outbound", to: "447700900999" } });
    expect(lines[0]!.message).toStartWith("Call from 1001 to 447700900999 refused (603 Decline): do not call");
    // The soft limit (1 an hour) is exceeded by the second call out, which goes on: noted once.
    for (let i = 0; i < 3; i++) { const r = (await fromDevice("14155550123")).body.rtjson; expect(r.action, JSON.stringify(r)).toBe("outbound"); }
    lines = await warnings();
    expect(lines).toHaveLength(2);
    expect(lines[0]!.message).toContain("burst soft limit exceeded");
    // A capacity ceiling: the DID's one channel is held, the next inbound call is refused 503.
    const inbound = () => json({ callId: `n-${randomUUID()}`, from: "14155550000", fromDomain: "carrier", to: did.e164, source_ip: "192.0.2.1" });
    expect((await inbound()).body.rtjson.action).toBe("flow");
    expect((await inbound()).body.rtjson).toMatchObject({ action: "reject", code: 503 });
    lines = await warnings();
    expect(lines).toHaveLength(3);
    expect(lines[0]!.message).toContain(`refused (503 Service Unavailable): number ${did.id} at its limit of 1`);
    expect(lines[0]!.call_id).toMatch(/^call_/);
  });

  test("a soft concurrent call limit counts the calls and refuses none: a call that finds it full goes on with a warning in its trace and the account log", async () => {
    const f = await routeFixture(platform, { max_in: 10 });
    const limit = await f.callLimit({ name: "lines", direction: "in", max_count: 1, hard: 0 });
    const did = await f.number({ dest_kind: "flow", dest_id: await f.flow() });
    const inbound = async () => {
      const callId = `soft-${randomUUID()}`;
      const r = await json({ callId, from: "14155550000", fromDomain: "carrier", to: did.e164, source_ip: "192.0.2.1" });
      const row = (await findCallBySipId(platform.db, f.accountId, callId))!;
      return { rtjson: r.body.rtjson, trace: (await listTrace(platform.db, f.accountId, row.id)).map((t) => t.result) };
    };
    const first = await inbound();
    expect(first.rtjson.action).toBe("flow");
    expect(first.trace).toContain("lines: soft, 0 of 1 concurrent (counted, not refused)");
    // The first call still up: the second finds the limit full and goes on.
    const second = await inbound();
    expect(second.rtjson.action).toBe("flow");
    expect(second.trace).toContain("warning: lines soft limit exceeded (1 concurrent call, limit 1), call allowed");
    const counter = (await cacSnapshot(platform.live, f.accountId)).find((c) => c.level === "call_limit" && c.id === limit)!;
    expect(counter).toMatchObject({ limit: 1, soft: true, active: 2 });
    // Neither it nor a third lowers the account's own ceiling for inbound calls (max_in 10).
    expect((await inbound()).rtjson.action).toBe("flow");
    const lines = (await listLogs(platform.db, f.accountId, { level: "warn" })).data;
    expect(lines).toHaveLength(1);
    expect(lines[0]!.message).toContain("lines soft limit exceeded (1 concurrent call, limit 1)");
  });

  test("every emergency call is a line of its own in the account log, placed or refused", async () => {
    const f = await routeFixture(platform, { max_out: 0 });
    const user = await f.user();
    const device = await f.device(user);
    const dial = () => json({ callId: `e-${randomUUID()}`, from: "1001", fromDomain: "x", to: "911", account_id: f.accountId, user_id: user, device_id: device, source_ip: "10.0.0.9" });
    for (let i = 0; i < 2; i++) expect((await dial()).body.rtjson).toMatchObject({ action: "outbound", vars: { emergency: 1 } });
    const lines = (await listLogs(platform.db, f.accountId, { level: "warn" })).data;
    expect(lines.map((l) => l.message)).toEqual(["Emergency call from 1001 to 911 placed.", "Emergency call from 1001 to 911 placed."]);
    expect(lines[0]).toMatchObject({ source: "platform", call_id: expect.stringMatching(/^call_/), data: { emergency: true, placed: true } });
    // Refused before it is routed (the account's devices may call only from its office): a line of its own too.
    await f.aclRule({ rule_type: "ip_allow", value: "10.99.0.0/16" });
    for (let i = 0; i < 2; i++) expect((await dial()).body.rtjson).toMatchObject({ action: "reject", code: 403 });
    const refused = (await listLogs(platform.db, f.accountId, { level: "warn" })).data.filter((l) => l.message.startsWith("Emergency call from 1001 to 911 refused (403 Forbidden)"));
    expect(refused).toHaveLength(2);
    expect(refused[0]).toMatchObject({ data: { emergency: true, placed: false } });
    expect(refused[0]!.message).toBe("Emergency call from 1001 to 911 refused (403 Forbidden): source address not allowed.");
  });

  test("malformed input is 400 validation_failed", async () => {
    for (const body of [{}, { callId: "", from: "", fromDomain: "", to: "1" }, { callId: "x", from: "", fromDomain: "", to: "1", source_country: "USA" }, { callId: 5, from: "", fromDomain: "", to: "1" }]) {
      const r = await json(body);
      expect(r.status, JSON.stringify(body)).toBe(400);
      expect(r.body).toMatchObject({ ok: false, error: "validation_failed" });
    }
    const bad = await post("{not json", "application/json");
    expect(bad.status).toBe(400);
    // A source address that is not one (with a port, out of range) is said, not taken for "none".
    for (const source_ip of ["192.0.2.1:5060", "999.1.1.1", "carrier.example", "1::2:3:4:5:6:7:8", "1:2:3:4::5:6:7:8"]) {
      const r = await json({ callId: `r-${Date.now()}-ip`, from: "14155550000", fromDomain: "carrier", to: "14155550100", source_ip });
      expect(r.status, source_ip).toBe(400);
      expect(r.body.details).toEqual([{ path: "/source_ip", message: expect.stringContaining("Not an IP address") }]);
    }
  });

  describe("with auth (the INVITE's digest verified in the same request)", () => {
    const md5 = (text: string) => createHash("md5").update(text).digest("hex");
    /** The digest a phone computes from its password, independently of the code under test. */
    const digest = (realm: string, password: string, nonce = randomUUID()) => {
      const uri = `sip:1002@${realm}`;
      const cnonce = randomUUID().slice(0, 8);
      const ha1 = md5(`1001:${realm}:${password}`);
      const response = md5(`${ha1}:${nonce}:00000001:${cnonce}:auth:${md5(`INVITE:${uri}`)}`);
      return { username: "1001", realm, nonce, uri, response, method: "INVITE", qop: "auth" as const, nc: "00000001", cnonce, opaque: "", source_ip: "203.0.113.7" };
    };
    const seed = async () => {
      const t = await seedTenant(platform);
      const caller = await createUser(platform.db, t.accountId, { username: "1001" });
      const device = await createDevice(platform.db, t.accountId, { user_id: caller.id, password: "pw-1001-long" });
      await createUser(platform.db, t.accountId, { username: "1002" });
      return { accountId: t.accountId, userId: caller.id, deviceId: device.id, realm: defaultRealm(t.accountId) };
    };
    const call = (auth: unknown, extra: Record<string, unknown> = {}) =>
      json({ callId: `ra-${randomUUID()}`, from: "1001", fromDomain: "x", to: "1002", source_ip: "203.0.113.7", account_id: "", user_id: "", device_id: "", ...extra, auth });

    test("a right digest routes the call as the device's and the reply says who authenticated", async () => {
      const s = await seed();
      const callId = `ra-${randomUUID()}`;
      const r = await call(digest(s.realm, "pw-1001-long"), { callId });
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      expect(r.body.auth).toEqual({ ok: true, account_id: s.accountId, user_id: s.userId, device_id: s.deviceId, webrtc: 0 });
      // 1002 has no registered phone: an internal call the router refuses, recorded as the device's.
      expect(r.body.rtjson).toMatchObject({ action: "reject", account_id: s.accountId });
      const record = await findCallBySipId(platform.db, s.accountId, callId);
      expect(record?.reply.rtjson.account_id).toBe(s.accountId);
    });

    test("the device context read with the credential is the one the router reads by itself", async () => {
      const s = await seed();
      await createExtension(platform.db, s.accountId, { digits: "300", dest_kind: "hangup" });
      for (const to of ["300", "1002", "1001", "999"]) {
        const { result, device } = await authenticateDigestForRoute(digestAuthDeps(platform), digest(s.realm, "pw-1001-long"), to);
        expect(result.device_id).toBe(s.deviceId);
        expect(device, to).toEqual(await loadDevice(platform.db, s.accountId, s.deviceId, to));
      }
      const { device } = await authenticateDigestForRoute(digestAuthDeps(platform), digest(s.realm, "pw-1001-long"), "300");
      expect(device!.extension?.digits).toBe("300");
      expect(device!.caller?.id).toBe(s.userId);
      // The statuses come from the context here: a disabled user or a suspended account is refused.
      // Written straight to the database: wait until the route cache is told (the API does this itself).
      const settled = () => platform.configCache.settle();
      await updateUser(platform.db, s.accountId, s.userId, { status: "disabled" }); await settled();
      expect((await call(digest(s.realm, "pw-1001-long"))).status).toBe(403);
      await updateUser(platform.db, s.accountId, s.userId, { status: "active" }); await settled();
      expect((await call(digest(s.realm, "pw-1001-long"))).status).toBe(200);
      await platform.db.update(accounts).set({ status: "suspended" }).where(eq(accounts.id, s.accountId)); await settled();
      const suspended = await call(digest(s.realm, "pw-1001-long"));
      expect(suspended.status).toBe(403);
      expect(suspended.body).toMatchObject({ ok: false, error: "forbidden" });
      await platform.db.update(accounts).set({ status: "active" }).where(eq(accounts.id, s.accountId)); await settled();
      // Not verified, not handed out.
      await expect(authenticateDigestForRoute(digestAuthDeps(platform), digest(s.realm, "wrong-password"), "300")).rejects.toMatchObject({ code: "unauthorized" });
    });

    test("a wrong digest or a replay is 401 and nothing is recorded; a non-JSON or contradictory body is 400", async () => {
      const s = await seed();
      const wrong = `ra-${randomUUID()}`;
      const bad = await call(digest(s.realm, "not-the-password"), { callId: wrong });
      expect(bad.status).toBe(401);
      expect(bad.body).toMatchObject({ ok: false, error: "unauthorized" });
      expect(await findCallBySipId(platform.db, s.accountId, wrong)).toBeNull();

      const once = digest(s.realm, "pw-1001-long");
      expect((await call(once)).status).toBe(200);
      const replayId = `ra-${randomUUID()}`;
      const replayed = await call(once, { callId: replayId });
      expect(replayed.status).toBe(401);
      expect(await findCallBySipId(platform.db, s.accountId, replayId)).toBeNull();

      const both = await call(digest(s.realm, "pw-1001-long"), { account_id: s.accountId, device_id: s.deviceId });
      expect(both.status).toBe(400);
      expect(JSON.stringify(both.body)).toContain("/account_id");
      const missing = await call({ ...digest(s.realm, "pw-1001-long"), response: "zz" });
      expect(missing.status).toBe(400);
      const form = new URLSearchParams({ callId: "f", from: "1001", fromDomain: "x", to: "1002", auth: JSON.stringify(digest(s.realm, "pw-1001-long")) });
      const f = await post(form.toString(), "application/x-www-form-urlencoded");
      expect(f.status).toBe(400);
      expect(JSON.stringify(f.body)).toContain("/auth");
    });
  });
});


describe(`POST /route with auth: the call's admission claim is taken with the nonce [${storeKind}]`, () => {
  let own: Platform;
  let ownServer: { server: { port?: number } | null; stop(): Promise<unknown> | unknown };
  let ownBase: string;
  /** Live-store calls made so far: method and first argument. */
  const calls: Array<{ method: string; arg: unknown }> = [];
  /** A live-store method that throws while set (to fail the decision). */
  let failing: string | null = null;

  beforeAll(async () => {
    const inner = (await testPlatform()).live;
    const live = new Proxy(inner, {
      get(target, prop) {
        const value = Reflect.get(target, prop, target) as unknown;
        if (typeof value !== "function") return value;
        return (...args: unknown[]) => {
          calls.push({ method: String(prop), arg: args[0] });
          if (prop === failing) return Promise.reject(new Error("live store down"));
          return (value as (...a: unknown[]) => unknown).apply(target, args);
        };
      },
    });
    own = await testPlatform({ live });
    ownServer = createControlApp(own, [routeRoutes]).listen({ hostname: "127.0.0.1", port: 0 });
    ownBase = `http://127.0.0.1:${ownServer.server!.port}`;
  });
  afterAll(async () => {
    await ownServer.stop();
    await own.close();
  });

  const md5 = (text: string) => createHash("md5").update(text).digest("hex");
  const digest = (realm: string, password: string) => {
    const uri = `sip:1002@${realm}`;
    const nonce = randomUUID();
    const cnonce = randomUUID().slice(0, 8);
    const response = md5(`${md5(`1001:${realm}:${password}`)}:${nonce}:00000001:${cnonce}:auth:${md5(`INVITE:${uri}`)}`);
    return { username: "1001", realm, nonce, uri, response, method: "INVITE", qop: "auth" as const, nc: "00000001", cnonce, opaque: "", source_ip: "203.0.113.7" };
  };
  const seed = async () => {
    const t = await seedTenant(own);
    const caller = await createUser(own.db, t.accountId, { username: "1001" });
    await createDevice(own.db, t.accountId, { user_id: caller.id, password: "pw-1001-long" });
    await createExtension(own.db, t.accountId, { digits: "1002", dest_kind: "hangup" });
    return { accountId: t.accountId, userId: caller.id, realm: defaultRealm(t.accountId) };
  };
  const ask = async (callId: string, auth: unknown, to = "1002") => {
    const r = await fetch(`${ownBase}/route`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ callId, from: "1001", fromDomain: "x", to, source_ip: "203.0.113.7", auth }),
    });
    return { status: r.status, body: (await r.json()) as Json };
  };
  const claimKey = (accountId: string, callId: string) => `{${accountId}}:admit:${callId}`;
  const claimCalls = (accountId: string, callId: string) =>
    calls.filter((c) => (Array.isArray(c.arg) ? c.arg.some((e: { key: string }) => e.key === claimKey(accountId, callId)) : c.arg === claimKey(accountId, callId)));

  test("one live-store step remembers the nonce and takes the claim; the claim is given back after the admission", async () => {
    const s = await seed();
    const callId = `claim-${randomUUID()}`;
    const r = await ask(callId, digest(s.realm, "pw-1001-long"));
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body.rtjson.vars.call_id).toBe((await findCallBySipId(own.db, s.accountId, callId))!.id);
    const steps = claimCalls(s.accountId, callId);
    expect(steps[0]!.method).toBe("setEachIfAbsent");
    expect((steps[0]!.arg as Array<{ key: string }>).map((e) => e.key)).toEqual([expect.stringMatching(new RegExp(`^\\{${s.accountId}\\}:digest:`)), claimKey(s.accountId, callId)]);
    expect(steps.map((c) => c.method)).toEqual(["setEachIfAbsent", "compareAndDelete"]);
    await eventually(async () => expect(await own.live.get(claimKey(s.accountId, callId))).toBeNull());
  });

  test("a replayed digest takes no claim; an inactive device's verified digest neither", async () => {
    const s = await seed();
    const once = digest(s.realm, "pw-1001-long");
    expect((await ask(`claim-${randomUUID()}`, once)).status).toBe(200);
    const replayId = `claim-${randomUUID()}`;
    expect((await ask(replayId, once)).status).toBe(401);
    expect(await own.live.get(claimKey(s.accountId, replayId))).toBeNull();
    expect(await findCallBySipId(own.db, s.accountId, replayId)).toBeNull();

    await updateUser(own.db, s.accountId, s.userId, { status: "disabled" });
    await own.configCache.settle();
    const inactiveId = `claim-${randomUUID()}`;
    expect((await ask(inactiveId, digest(s.realm, "pw-1001-long"))).status).toBe(403);
    expect(claimCalls(s.accountId, inactiveId)).toEqual([]);
    expect(await findCallBySipId(own.db, s.accountId, inactiveId)).toBeNull();
  });

  test("a device configured for TLS calling over UDP is refused (403) and takes no claim; over TLS it calls", async () => {
    const t = await seedTenant(own);
    const caller = await createUser(own.db, t.accountId, { username: "1001" });
    await createDevice(own.db, t.accountId, { user_id: caller.id, password: "pw-1001-long", transport: "tls" });
    await createExtension(own.db, t.accountId, { digits: "1002", dest_kind: "hangup" });
    const realm = defaultRealm(t.accountId);
    const clearId = `claim-${randomUUID()}`;
    expect((await ask(clearId, { ...digest(realm, "pw-1001-long"), transport: "udp" })).status).toBe(403);
    expect(claimCalls(t.accountId, clearId)).toEqual([]);
    expect(await findCallBySipId(own.db, t.accountId, clearId)).toBeNull();
    const tlsId = `claim-${randomUUID()}`;
    const ok = await ask(tlsId, { ...digest(realm, "pw-1001-long"), transport: "tls" });
    expect(ok.status, JSON.stringify(ok.body)).toBe(200);
    expect(ok.body.rtjson.action).toBe("reject"); // the extension hangs up: routed, as the device's call
    expect(await findCallBySipId(own.db, t.accountId, tlsId)).not.toBeNull();
  });

  test("a Call-ID another admission holds waits for that admission's record and answers with its reply", async () => {
    const s = await seed();
    const callId = `claim-${randomUUID()}`;
    const first = await ask(callId, digest(s.realm, "pw-1001-long"));
    expect(first.status).toBe(200);
    // Another instance is admitting this Call-ID (its claim is there): the request takes nothing and
    // answers with the recorded call's reply.
    await own.live.set(claimKey(s.accountId, callId), "req_other", 10_000);
    const again = await ask(callId, digest(s.realm, "pw-1001-long"));
    expect(again.status).toBe(200);
    expect(again.body.rtjson.vars.call_id).toBe(first.body.rtjson.vars.call_id);
    expect(await own.live.get(claimKey(s.accountId, callId))).toBe("req_other");
    await own.live.del(claimKey(s.accountId, callId));
  });

  test("a decision that fails gives the claim back at once", async () => {
    const s = await seed();
    // A call to a user: the decision reads the user's registrations from the live store. Learn the
    // first read it makes, then fail it.
    await createUser(own.db, s.accountId, { username: "1003" });
    const probeId = `claim-${randomUUID()}`;
    const from = calls.length;
    expect((await ask(probeId, digest(s.realm, "pw-1001-long"), "1003")).status).toBe(200);
    const seen = calls.slice(from).map((c) => c.method);
    const read = seen[seen.indexOf("setEachIfAbsent") + 1]!;
    expect(["setIfAbsent", "compareAndDelete", "zaddExpiringWithin"]).not.toContain(read);
    const callId = `claim-${randomUUID()}`;
    failing = read;
    try {
      expect((await ask(callId, digest(s.realm, "pw-1001-long"), "1003")).status).toBe(500);
    } finally {
      failing = null;
    }
    expect(claimCalls(s.accountId, callId).map((c) => c.method)).toEqual(["setEachIfAbsent", "compareAndDelete"]);
    await eventually(async () => expect(await own.live.get(claimKey(s.accountId, callId))).toBeNull());
    expect(await findCallBySipId(own.db, s.accountId, callId)).toBeNull();
  });
});

/**
 * A live store whose CAC take waits while held: an admission can be caught in the middle, so the edge's
 * side of the connection can go away before the reply.
 */
function holdableLive(inner: LiveStore) {
  let gate: Promise<void> | null = null;
  let open = () => {};
  let arrived = () => {};
  const live = new Proxy(inner, {
    get(target, prop) {
      const value = Reflect.get(target, prop, target) as unknown;
      if (typeof value !== "function") return value;
      if (prop !== "zaddExpiringWithin") return value.bind(target);
      return async (...args: unknown[]) => {
        if (gate) {
          arrived();
          await gate;
        }
        return (value as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  });
  return {
    live,
    /** Holds the next CAC takes; `reached` resolves when one waits, `release` lets them all go. */
    hold() {
      const reached = new Promise<void>((resolve) => (arrived = resolve));
      gate = new Promise<void>((resolve) => (open = resolve));
      return {
        reached,
        release: () => {
          gate = null;
          open();
        },
      };
    },
  };
}

describe(`POST /route: a reply the edge stopped waiting for [${storeKind}]`, () => {
  let own: Platform;
  let holdable: ReturnType<typeof holdableLive>;
  let ownServer: { server: { port?: number } | null; stop(): Promise<unknown> | unknown };
  let port: number;
  const lines: string[] = [];

  beforeAll(async () => {
    holdable = holdableLive(platform.live);
    own = await testPlatform({ live: holdable.live, logLines: lines, logLevel: "info", env: { CARRIER_ADDRESSES: "192.0.2.0/24", MEDIA_ENGINES: "sip:10.0.0.5:5080" } });
    ownServer = createControlApp(own, [(p) => routeRoutes(p, { undeliveredGraceMs: 200 })]).listen({ hostname: "127.0.0.1", port: 0 });
    port = ownServer.server!.port!;
  });
  afterAll(async () => {
    await ownServer.stop();
    await own.close();
  });

  /** An inbound call to a DID with a channel limit (so admission takes CAC slots). */
  async function inbound() {
    const f = await routeFixture(own, { max_in: 10 });
    const did = await f.number({ dest_kind: "flow", dest_id: await f.flow(), max_channels: 5 });
    const callId = `gone-${randomUUID()}`;
    return { f, callId, body: JSON.stringify({ callId, from: "14155550000", fromDomain: "carrier", to: did.e164, source_ip: "192.0.2.1" }) };
  }

  /**
   * Sends /route over a raw connection and closes it while the admission is held, as an edge timing
   * out does; `meanwhile` runs before the admission goes on.
   */
  async function askAndHangUp(body: string, meanwhile: () => Promise<void> = async () => {}): Promise<void> {
    const held = holdable.hold();
    const socket = await Bun.connect({ hostname: "127.0.0.1", port, socket: { data() {} } });
    socket.write(`POST /route HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`);
    await held.reached;
    socket.end();
    // The server notices the closed connection on its next turns of the event loop.
    await Bun.sleep(100);
    await meanwhile();
    held.release();
  }

  const settled = (outcome: string) => lines.filter((l) => l.includes("undelivered /route reply settled") && l.includes(`"outcome":"${outcome}"`));

  test("a call admitted for a reply nobody got is ended as not placed (503, failed) and gives its CAC slots back", async () => {
    const { f, callId, body } = await inbound();
    // Answered normally: nothing to settle.
    const normal = await fetch(`http://127.0.0.1:${port}/route`, { method: "POST", headers: { "content-type": "application/json" }, body: body.replace(callId, `${callId}-ok`) });
    expect(normal.status).toBe(200);
    const before = settled("ended").length;
    await askAndHangUp(body);
    await eventually(() => expect(settled("ended")).toHaveLength(before + 1));
    const row = (await findCallBySipId(own.db, f.accountId, callId))!;
    expect(row).toMatchObject({ status: "failed", sip_code: 503, hangup_cause: "NORMAL_TEMPORARY_FAILURE", billsec: 0 });
    expect((await listTrace(own.db, f.accountId, row.id)).map((t) => t.step)).toContain("edge");
    const logged = (await listLogs(own.db, f.accountId, { level: "warn" })).data;
    expect(logged).toMatchObject([{ source: "edge", call_id: row.id, data: { sip_call_id: callId } }]);
    expect(logged[0]!.message).toContain("ended as not placed");
    // Only the call answered normally still holds slots (the number's and the account's).
    const held = await cacSnapshot(own.live, f.accountId);
    expect(held.length).toBeGreaterThan(0);
    for (const counter of held) expect(counter.call_ids).toEqual([(await findCallBySipId(own.db, f.accountId, `${callId}-ok`))!.id]);
    expect((await findCallBySipId(own.db, f.accountId, `${callId}-ok`))!.status).toBe("routed");
  });

  test("when the edge asks again (its retry on another instance) and gets the stored reply, the call goes on", async () => {
    const { f, callId, body } = await inbound();
    const before = settled("answered by a retry").length;
    // The retry waits for the first admission's record, then gets its reply.
    let retry: Promise<Response> | undefined;
    await askAndHangUp(body, async () => {
      retry = fetch(`http://127.0.0.1:${port}/route`, { method: "POST", headers: { "content-type": "application/json" }, body });
      await Bun.sleep(100);
    });
    const again = await retry!;
    expect(again.status).toBe(200);
    const reply = (await again.json()) as Json;
    const row = (await findCallBySipId(own.db, f.accountId, callId))!;
    expect(reply.rtjson.vars.call_id).toBe(row.id);
    await eventually(() => expect(settled("answered by a retry")).toHaveLength(before + 1));
    expect((await listLogs(own.db, f.accountId, { level: "warn" })).data).toEqual([]);
    expect((await findCallBySipId(own.db, f.accountId, callId))!.status).toBe("routed");
    // The call keeps the slots it took: every counter holds it, and only it.
    const held = await cacSnapshot(own.live, f.accountId);
    expect(held.length).toBeGreaterThan(0);
    for (const counter of held) expect(counter.call_ids).toEqual([row.id]);
  });
});
