/** POST /presence/event and GET /presence/users over a real socket (address-gated paths). */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { randomUUID } from "node:crypto";
import type { Platform } from "../../core/platform.ts";
import { seedTenant, storeKind, testPlatform } from "../../../test/support/platform.ts";
import { createUser, updateUser } from "../../core/users/users.service.ts";
import { createDevice, updateDevice } from "../../core/devices/devices.service.ts";
import { createQueue } from "../../core/queues/queues.service.ts";
import { newId } from "../../core/ids/ids.ts";
import { trackDialog, trunkContacts, userCallCount, userContacts } from "../../core/presence/presence.service.ts";
import { applyConfig } from "../../core/config-file/applier.ts";
import { sipTrunks } from "../../core/trunks/trunks.schema.ts";
import { eq } from "drizzle-orm";
import { PresenceModel } from "../../core/presence/presence.model.ts";
import { presenceRoutes } from "./presence.ts";
import { admitCall } from "../../core/calls/admission.ts";
import { findCallBySipId } from "../../core/calls/calls.store.ts";
import { decision, routeRequest } from "../../core/calls/calls.fixture.ts";
import { listenControl, type ControlClient } from "./control-listener.fixture.ts";

let platform: Platform;
let client: ControlClient;

beforeAll(async () => {
  platform = await testPlatform();
  client = listenControl(platform, [presenceRoutes]);
});
afterAll(async () => {
  await client.stop();
  await platform.close();
});

let ext = 100;
async function seedUser(accountId: string, options: { agent?: boolean; webrtc?: boolean } = {}) {
  const user = await createUser(platform.db, accountId, { username: String(++ext), display_name: `User ${ext}`, ...(options.agent ? { is_agent: 1 as const } : {}) });
  const device = await createDevice(platform.db, accountId, { user_id: user.id, password: "s3cret-pass", ...(options.webrtc ? { transport: "wss" as const } : {}) });
  return { userId: user.id, deviceId: device.id };
}

const register = (accountId: string, deviceId: string, extra: Record<string, unknown> = {}) => ({
  type: "register",
  account_id: accountId,
  device_id: deviceId,
  contact: `sip:${deviceId}@192.0.2.7:5060`,
  expires: 300,
  ...extra,
});

/** A call Parley routed (its record written, as /route does): presence tracks dialogs of such calls only. */
async function routed(accountId: string): Promise<string> {
  const callId = randomUUID();
  await admitCall(platform, decision(accountId), routeRequest(callId));
  return callId;
}

async function agentEvents(accountId: string) {
  return (await platform.events.since(accountId, 0, 500, ["agent.state"])).map((e) => e.data as { user_id: string; state: string; previous_state: string; reason: string | null });
}

describe(`POST /presence/event register [${storeKind}]`, () => {
  test("register (JSON and form) makes the user reachable; expires 0 removes the binding", async () => {
    const t = await seedTenant(platform);
    const u = await seedUser(t.accountId, { webrtc: true });
    const r = await client.post("/presence/event", register(t.accountId, u.deviceId, { user_id: u.userId, received: "sip:198.51.100.4:61000", socket: "udp:10.0.0.1:5060", transport: "WSS", source_ip: "198.51.100.4", source_port: 61000, user_agent: "JsSIP", path: "", instance: "<urn:uuid:1>", call_id: "abc" }));
    expect(r).toEqual({ status: 200, body: { ok: true } });
    const contacts = await userContacts(platform.live, t.accountId, u.userId);
    expect(contacts).toHaveLength(1);
    expect(contacts[0]).toMatchObject({ device_id: u.deviceId, user_id: u.userId, received: "sip:198.51.100.4:61000", socket: "udp:10.0.0.1:5060", transport: "wss", path: null, webrtc: 1 });
    expect(contacts[0]!.expires_at).toBeGreaterThan(Date.now() + 290_000);
    expect(contacts[0]!.expires_at).toBeLessThanOrEqual(Date.now() + 300_000);

    const form = await client.post("/presence/event", register(t.accountId, u.deviceId, { contact: "sip:second@192.0.2.8", expires: "120" }), "form");
    expect(form.status).toBe(200);
    expect(await userContacts(platform.live, t.accountId, u.userId)).toHaveLength(2);

    expect((await client.post("/presence/event", register(t.accountId, u.deviceId, { expires: 0 }))).status).toBe(200);
    expect((await userContacts(platform.live, t.accountId, u.userId)).map((c) => c.contact)).toEqual(["sip:second@192.0.2.8"]);

    // Contact: * with expires 0 removes every binding of the device (RFC 3261 10.2.2); with expires > 0 it is a 400.
    expect((await client.post("/presence/event", register(t.accountId, u.deviceId, { contact: "sips:third@192.0.2.9;transport=tls" }))).status).toBe(200);
    expect(await userContacts(platform.live, t.accountId, u.userId)).toHaveLength(2);
    const starLive = await client.post("/presence/event", register(t.accountId, u.deviceId, { contact: "*", expires: 60 }));
    expect(starLive.status).toBe(400);
    expect(starLive.body.details).toEqual([{ path: "/contact", message: expect.stringContaining("expires 0") }]);
    expect(await userContacts(platform.live, t.accountId, u.userId)).toHaveLength(2);
    expect((await client.post("/presence/event", register(t.accountId, u.deviceId, { contact: "*", expires: 0 }))).status).toBe(200);
    expect(await userContacts(platform.live, t.accountId, u.userId)).toEqual([]);
  });

  test("a REGISTER with several Contacts binds each, with its own lifetime and NAT source; * goes alone", async () => {
    const t = await seedTenant(platform);
    const u = await seedUser(t.accountId);
    const r = await client.post(
      "/presence/event",
      register(t.accountId, u.deviceId, {
        contact: "sip:a@192.0.2.7:5060",
        expires: 600,
        socket: "udp:10.0.0.1:5060",
        contacts: [
          { contact: "sip:a@10.1.1.5:5070;transport=tcp", expires: 300, received: "sip:198.51.100.9:40000;transport=tcp" },
          { contact: "sip:a@192.0.2.8:5060", expires: 0 },
        ],
      }),
    );
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    const bound = await userContacts(platform.live, t.accountId, u.userId);
    expect(bound.map((b) => [b.contact, b.received, b.socket])).toEqual([
      ["sip:a@10.1.1.5:5070;transport=tcp", "sip:198.51.100.9:40000;transport=tcp", "udp:10.0.0.1:5060"],
      ["sip:a@192.0.2.7:5060", null, "udp:10.0.0.1:5060"],
    ]);
    expect(bound[0]!.expires_at).toBeLessThan(bound[1]!.expires_at);
    // The expires 0 of a further Contact removes that one binding.
    await client.post("/presence/event", register(t.accountId, u.deviceId, { contact: "sip:a@192.0.2.7:5060", expires: 600, contacts: [{ contact: "sip:a@10.1.1.5:5070;transport=tcp", expires: 0 }] }));
    expect((await userContacts(platform.live, t.accountId, u.userId)).map((b) => b.contact)).toEqual(["sip:a@192.0.2.7:5060"]);
    const wildcard = await client.post("/presence/event", register(t.accountId, u.deviceId, { contact: "*", expires: 0, contacts: [{ contact: "sip:a@192.0.2.8", expires: 0 }] }));
    expect(wildcard.status).toBe(400);
    expect(wildcard.body.details).toEqual([{ path: "/contacts", message: "* removes every binding: send it alone." }]);
    const tooMany = await client.post("/presence/event", register(t.accountId, u.deviceId, { contacts: Array.from({ length: 10 }, (_, i) => ({ contact: `sip:a@192.0.2.${i + 10}`, expires: 60 })) }));
    expect(tooMany.status).toBe(400);
  });

  test("a short registration expires on its own (real clock)", async () => {
    const t = await seedTenant(platform);
    const u = await seedUser(t.accountId);
    expect((await client.post("/presence/event", register(t.accountId, u.deviceId, { expires: 1 }))).status).toBe(200);
    expect((await client.get(`/presence/users?accountId=${t.accountId}`)).body.data[0].registered).toBe(1);
    await Bun.sleep(1100);
    expect(await userContacts(platform.live, t.accountId, u.userId)).toEqual([]);
    const roster = await client.get(`/presence/users?accountId=${t.accountId}`);
    expect(roster.body.data[0]).toMatchObject({ registered: 0, contacts: 0, status: "offline" });
  });

  test("unknown or foreign account/device: 404; disabled device: 403; wrong user: 400", async () => {
    const a = await seedTenant(platform);
    const b = await seedTenant(platform);
    const ua = await seedUser(a.accountId);
    const ub = await seedUser(b.accountId);
    for (const body of [register(b.accountId, ua.deviceId), register(newId("acc"), ua.deviceId), register(a.accountId, newId("dev"))]) {
      const r = await client.post("/presence/event", body);
      expect(r.status, JSON.stringify(body)).toBe(404);
      expect(r.body.error).toBe("not_found");
    }
    expect(await userContacts(platform.live, b.accountId, ua.userId)).toEqual([]);
    const wrongUser = await client.post("/presence/event", register(a.accountId, ua.deviceId, { user_id: ub.userId }));
    expect(wrongUser.status).toBe(400);
    expect(wrongUser.body.details[0].path).toBe("/user_id");
    // A disabled user's device may not register either (/auth refuses that user too).
    const uc = await seedUser(a.accountId);
    await updateUser(platform.db, a.accountId, uc.userId, { status: "disabled" });
    expect((await client.post("/presence/event", register(a.accountId, uc.deviceId))).status).toBe(403);
    expect(await userContacts(platform.live, a.accountId, uc.userId)).toEqual([]);
    await updateDevice(platform.db, a.accountId, ua.deviceId, { status: "disabled" });
    expect((await client.post("/presence/event", register(a.accountId, ua.deviceId))).status).toBe(403);
    expect(await userContacts(platform.live, a.accountId, ua.userId)).toEqual([]);
    // Unregistering is always accepted.
    expect((await client.post("/presence/event", register(a.accountId, ua.deviceId, { expires: 0 }))).status).toBe(200);
  });

  test("malformed events: 400 naming the field, nothing stored", async () => {
    const t = await seedTenant(platform);
    const u = await seedUser(t.accountId);
    const cases: Array<[unknown, string, "json" | "form"]> = [
      [register(t.accountId, u.deviceId, { expires: -1 }), "/expires", "json"],
      [register(t.accountId, u.deviceId, { expires: "60" }), "/expires", "json"],
      [register(t.accountId, u.deviceId, { expires: "soon" }), "/expires", "form"],
      [register(t.accountId, u.deviceId, { expires: 86_401 }), "/expires", "json"],
      [register(t.accountId, u.deviceId, { contact: "sip:a b@x" }), "/contact", "json"],
      // Not a SIP URI: /route would hand it to the edge as a target.
      [register(t.accountId, u.deviceId, { contact: "notauri" }), "/contact", "json"],
      [register(t.accountId, u.deviceId, { contact: "<script>alert(1)</script>" }), "/contact", "json"],
      [register(t.accountId, u.deviceId, { contact: "sip:<x>@y" }), "/contact", "form"],
      [register(t.accountId, u.deviceId, { received: "garbage" }), "/received", "json"],
      // Control characters would reach the edge's headers and the logs.
      [register(t.accountId, u.deviceId, { contact: "sip:a\u0001b@192.0.2.1" }), "/contact", "json"],
      [register(t.accountId, u.deviceId, { contact: "sip:a@192.0.2.1\u007f" }), "/contact", "json"],
      [register(t.accountId, u.deviceId, { received: "sip:192.0.2.1:5060\u001b[31m" }), "/received", "json"],
      [register(t.accountId, u.deviceId, { user_agent: "Phone\u0007/1" }), "/user_agent", "json"],
      [register(t.accountId, u.deviceId, { call_id: "abc\u0001@x" }), "/call_id", "json"],
      [register(t.accountId, u.deviceId, { transport: "carrier-pigeon" }), "/transport", "json"],
      [register(t.accountId, u.deviceId, { source_ip: "300.1.1.1" }), "/source_ip", "json"],
      [register(t.accountId, u.deviceId, { surprise: 1 }), "/surprise", "json"],
      // Path and socket go back to the edge as a branch's routing data: no header breaks in them.
      [register(t.accountId, u.deviceId, { path: "<sip:a;lr>\r\nX-Evil: 1" }), "/path", "json"],
      [register(t.accountId, u.deviceId, { socket: "udp:1.2.3.4:5060\r\nX-Evil: 2" }), "/socket", "json"],
      [register(t.accountId, u.deviceId, { socket: "udp 1.2.3.4 5060" }), "/socket", "form"],
      [register(t.accountId, u.deviceId, { instance: "<urn:uuid:1>\n" }), "/instance", "json"],
      [register(t.accountId, "dev_nope"), "/device_id", "json"],
      [{ type: "agent", account_id: t.accountId, user_id: u.userId, event: "dance" }, "/event", "json"],
      [{ type: "dialog", callId: "x", state: "ringing" }, "/state", "json"],
    ];
    for (const [body, path, as] of cases) {
      const r = await client.post("/presence/event", body, as);
      expect(r.status, JSON.stringify(body)).toBe(400);
      expect(r.body.error).toBe("validation_failed");
      expect(r.body.details.map((d: { path: string }) => d.path), JSON.stringify(body)).toContain(path);
    }
    const bogus = await client.post("/presence/event", { type: "dialog", callId: "x", state: "bogus" });
    expect(bogus.body.details).toEqual([{ path: "/state", message: "Expected one of 'early', 'confirmed' or 'terminated'." }]);
    const notUri = await client.post("/presence/event", register(t.accountId, u.deviceId, { contact: "notauri" }));
    expect(notUri.body.details).toEqual([{ path: "/contact", message: "Not a SIP URI (sip: or sips:, without spaces, angle brackets, quotes or control characters), nor *." }]);
    const noType = await client.post("/presence/event", { account_id: t.accountId });
    expect(noType.status).toBe(400);
    expect((await client.post("/presence/event", { type: "presence" })).status).toBe(400);
    expect(await userContacts(platform.live, t.accountId, u.userId)).toEqual([]);
  });
});

describe(`POST /presence/event register of a trunk [${storeKind}]`, () => {
  /** A register trunk (a customer PBX) and a digest one, through the config file. */
  async function seedTrunks(accountId: string, status = "active") {
    const tag = randomUUID().slice(0, 8);
    await applyConfig(platform.db, platform.secrets, accountId, {
      version: 1,
      trunks: [
        { name: "office", role: "pbx", direction: "both", inbound_auth: "register", inbound_username: `pbx-${tag}`, inbound_password: "pbx-password", status },
        { name: "carrier-dg", direction: "inbound", inbound_auth: "digest", inbound_username: `dg-${tag}`, inbound_password: "dg-password" },
      ],
    });
    const rows = await platform.db.select().from(sipTrunks).where(eq(sipTrunks.account_id, accountId));
    return Object.fromEntries(rows.map((r) => [r.name, r.id])) as Record<"office" | "carrier-dg", string>;
  }
  const trunkRegister = (accountId: string, trunkId: string, extra: Record<string, unknown> = {}) => ({
    type: "register",
    account_id: accountId,
    trunk_id: trunkId,
    contact: "sip:pbx@203.0.113.50:5060",
    expires: 300,
    ...extra,
  });

  test("a register trunk's binding is kept with what reaches it, expires on its own terms and goes with expires 0 or *", async () => {
    const t = await seedTenant(platform);
    const ids = await seedTrunks(t.accountId);
    const r = await client.post("/presence/event", trunkRegister(t.accountId, ids.office, { received: "sip:198.51.100.4:61000", socket: "udp:10.0.0.1:5060", transport: "UDP", source_ip: "198.51.100.4" }));
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    const [bound] = await trunkContacts(platform.live, t.accountId, ids.office);
    expect(bound).toMatchObject({ trunk_id: ids.office, contact: "sip:pbx@203.0.113.50:5060", received: "sip:198.51.100.4:61000", socket: "udp:10.0.0.1:5060", transport: "udp" });
    expect(bound!.expires_at).toBeGreaterThan(Date.now() + 290_000);
    // Not a user: the roster does not count it.
    const roster = await client.get(`/presence/users?accountId=${t.accountId}`);
    expect(roster.body.data).toEqual([]);
    await client.post("/presence/event", trunkRegister(t.accountId, ids.office, { contact: "sip:pbx@203.0.113.51:5060" }));
    expect(await trunkContacts(platform.live, t.accountId, ids.office)).toHaveLength(2);
    expect((await client.post("/presence/event", trunkRegister(t.accountId, ids.office, { expires: 0 }))).status).toBe(200);
    expect((await trunkContacts(platform.live, t.accountId, ids.office)).map((c) => c.contact)).toEqual(["sip:pbx@203.0.113.51:5060"]);
    expect((await client.post("/presence/event", trunkRegister(t.accountId, ids.office, { contact: "*", expires: 0 }))).status).toBe(200);
    expect(await trunkContacts(platform.live, t.accountId, ids.office)).toEqual([]);
  });

  test("another account's or an unknown trunk: 404; a digest or disabled trunk registering: 403; a device and a trunk at once, or neither, or a trunk with a user: 400", async () => {
    const t = await seedTenant(platform);
    const other = await seedTenant(platform);
    const ids = await seedTrunks(t.accountId);
    expect((await client.post("/presence/event", trunkRegister(other.accountId, ids.office))).status).toBe(404);
    expect((await client.post("/presence/event", trunkRegister(t.accountId, newId("trk")))).status).toBe(404);
    expect((await client.post("/presence/event", trunkRegister(t.accountId, ids["carrier-dg"]))).status).toBe(403);
    const off = await seedTenant(platform);
    const offIds = await seedTrunks(off.accountId, "disabled");
    expect((await client.post("/presence/event", trunkRegister(off.accountId, offIds.office))).status).toBe(403);
    // Unregistering always passes.
    expect((await client.post("/presence/event", trunkRegister(off.accountId, offIds.office, { expires: 0 }))).status).toBe(200);
    const u = await seedUser(t.accountId);
    for (const [body, path] of [
      [trunkRegister(t.accountId, ids.office, { device_id: u.deviceId }), "/trunk_id"],
      [{ type: "register", account_id: t.accountId, contact: "sip:x@192.0.2.1", expires: 60 }, "/device_id"],
      [trunkRegister(t.accountId, ids.office, { user_id: u.userId }), "/user_id"],
    ] as const) {
      const r = await client.post("/presence/event", body);
      expect(r.status, JSON.stringify(body)).toBe(400);
      expect(r.body.details.map((d: { path: string }) => d.path)).toContain(path);
    }
    expect(await trunkContacts(platform.live, t.accountId, ids.office)).toEqual([]);
  });
});

describe(`agents and dialogs [${storeKind}]`, () => {
  test("agent state machine emits agent.state on each change, on_call follows confirmed dialogs", async () => {
    const t = await seedTenant(platform);
    const agent = await seedUser(t.accountId, { agent: true });
    const q = await createQueue(platform.db, t.accountId, { name: "Support" });
    const ev = (event: string, extra: Record<string, unknown> = {}, as: "json" | "form" = "json") =>
      client.post("/presence/event", { type: "agent", account_id: t.accountId, user_id: agent.userId, event, ...extra }, as);

    expect((await ev("pause")).status).toBe(409); // logged out: log in first
    expect((await ev("login", { queues: q.id }, "form")).status).toBe(200);
    expect((await ev("login")).status).toBe(200); // no change, no event
    expect((await ev("pause", { reason: "lunch" })).status).toBe(200);
    const callId = await routed(t.accountId);
    const dialog = (state: string) => client.post("/presence/event", { type: "dialog", callId, state, account_id: t.accountId, legs: [{ role: "callee", user_id: agent.userId }] });
    expect((await dialog("early")).status).toBe(200);
    expect((await dialog("confirmed")).status).toBe(200);
    expect(await userCallCount(platform.live, t.accountId, agent.userId)).toBe(1);
    const during = await client.get(`/presence/users?accountId=${t.accountId}`);
    expect(during.body.data[0]).toMatchObject({ status: "on_call", on_call: 1, agent_state: "on_call" });
    // A terminated event without legs still ends the call for the agent.
    expect((await client.post("/presence/event", { type: "dialog", callId, state: "terminated", account_id: t.accountId, sip_code: 200, hangup_cause: "NORMAL_CLEARING" })).status).toBe(200);
    expect(await userCallCount(platform.live, t.accountId, agent.userId)).toBe(0);
    expect((await ev("unpause")).status).toBe(200);
    expect((await ev("logout")).status).toBe(200);

    expect((await agentEvents(t.accountId)).map((e) => [e.previous_state, e.state, e.reason])).toEqual([
      ["logged_out", "ready", null],
      ["ready", "paused", "lunch"],
      ["paused", "on_call", null],
      ["on_call", "paused", "lunch"],
      ["paused", "ready", null],
      ["ready", "logged_out", null],
    ]);
    expect((await agentEvents(t.accountId)).every((e) => e.user_id === agent.userId)).toBe(true);
  });

  test("after the edge's failover the user it rang is out of the call (the voicemail answered): not busy for their next calls", async () => {
    const t = await seedTenant(platform);
    const caller = await seedUser(t.accountId);
    const rung = await seedUser(t.accountId);
    const callId = await routed(t.accountId);
    const dialog = (state: string, legs: unknown[], extra: Record<string, unknown> = {}) =>
      client.post("/presence/event", { type: "dialog", callId, state, account_id: t.accountId, legs, ...extra });
    expect((await dialog("early", [{ role: "caller", user_id: caller.userId }, { role: "callee", user_id: rung.userId }])).status).toBe(200);
    expect(await userCallCount(platform.live, t.accountId, rung.userId)).toBe(1);
    // The phone said busy; the media engine's voicemail answers: the events name the caller only.
    expect((await dialog("confirmed", [{ role: "caller", user_id: caller.userId }, { role: "callee", uri: "sip:vm@10.0.0.5" }], { failover: "voicemail:vm_1" })).status).toBe(200);
    expect(await userCallCount(platform.live, t.accountId, rung.userId)).toBe(0);
    expect(await userCallCount(platform.live, t.accountId, caller.userId)).toBe(1);
    expect((await dialog("terminated", [{ role: "caller", user_id: caller.userId }], { failover: "voicemail:vm_1", sip_code: 200 })).status).toBe(200);
    expect(await userCallCount(platform.live, t.accountId, caller.userId)).toBe(0);
  });

  test("a dialog is its call record's: a new INVITE under a Call-ID whose first call ended (a retry after 422) puts its users on the call again", async () => {
    const t = await seedTenant(platform);
    const callee = await seedUser(t.accountId);
    const callId = randomUUID();
    const record = async (cseq: number) => String((await admitCall(platform, decision(t.accountId), routeRequest(callId, { cseq }))).rtjson.vars.call_id);
    const first = await record(1);
    const dialog = (record_id: string, state: string) =>
      client.post("/presence/event", { type: "dialog", callId, record_id, state, account_id: t.accountId, legs: [{ role: "callee", user_id: callee.userId }], ...(state === "terminated" ? { sip_code: 422 } : {}) });
    expect((await dialog(first, "early")).status).toBe(200);
    expect((await dialog(first, "terminated")).status).toBe(200);
    expect(await userCallCount(platform.live, t.accountId, callee.userId)).toBe(0);
    // The retry: same Call-ID, the next CSeq, a record of its own.
    const second = await record(2);
    expect(second).not.toBe(first);
    expect((await dialog(second, "early")).status).toBe(200);
    expect((await dialog(second, "confirmed")).status).toBe(200);
    expect(await userCallCount(platform.live, t.accountId, callee.userId)).toBe(1);
    // A late event of the first call does not bring it back; the second's end ends it.
    expect((await dialog(first, "confirmed")).status).toBe(200);
    expect(await userCallCount(platform.live, t.accountId, callee.userId)).toBe(1);
    expect((await dialog(second, "terminated")).status).toBe(200);
    expect(await userCallCount(platform.live, t.accountId, callee.userId)).toBe(0);
    // An instance of the version before tracked dialogs by Call-ID: an end naming the record ends that too.
    const before = randomUUID();
    await trackDialog(platform.live, t.accountId, before, "confirmed", [callee.userId]);
    expect(await userCallCount(platform.live, t.accountId, callee.userId)).toBe(1);
    const third = String((await admitCall(platform, decision(t.accountId), routeRequest(before, { cseq: 1 }))).rtjson.vars.call_id);
    const end = { type: "dialog", callId: before, record_id: third, state: "terminated", account_id: t.accountId, sip_code: 200 };
    expect((await client.post("/presence/event", end)).status).toBe(200);
    expect(await userCallCount(platform.live, t.accountId, callee.userId)).toBe(0);
  });

  test("an agent reached through its device goes on_call; the calls of a user who is no agent read no agent state", async () => {
    const t = await seedTenant(platform);
    const agent = await seedUser(t.accountId, { agent: true });
    const plain = await seedUser(t.accountId);
    expect((await client.post("/presence/event", { type: "agent", account_id: t.accountId, user_id: agent.userId, event: "login" })).status).toBe(200);
    const live = platform.live;
    const original = live.get;
    const agentReads: string[] = [];
    live.get = (k: string) => {
      if (k.includes(":agent:")) agentReads.push(k);
      return original.call(live, k);
    };
    try {
      const dialog = (callId: string, state: string, legs: unknown[]) => client.post("/presence/event", { type: "dialog", callId, state, account_id: t.accountId, legs });
      const toAgent = await routed(t.accountId);
      const toPlain = await routed(t.accountId);
      for (const state of ["early", "confirmed"]) {
        expect((await dialog(toAgent, state, [{ role: "callee", device_id: agent.deviceId }])).status).toBe(200);
        expect((await dialog(toPlain, state, [{ role: "caller", user_id: plain.userId }, { role: "callee", device_id: plain.deviceId }])).status).toBe(200);
      }
      const during = await client.get(`/presence/users?accountId=${t.accountId}`);
      expect(during.body.data.find((u: { id: string }) => u.id === agent.userId)).toMatchObject({ on_call: 1, agent_state: "on_call" });
      expect(during.body.data.find((u: { id: string }) => u.id === plain.userId)).toMatchObject({ on_call: 1, agent_state: null });
      expect((await dialog(toAgent, "terminated", [{ role: "callee", device_id: agent.deviceId }])).status).toBe(200);
      expect((await dialog(toPlain, "terminated", [{ role: "caller", user_id: plain.userId }, { role: "callee", device_id: plain.deviceId }])).status).toBe(200);
      expect(await userCallCount(platform.live, t.accountId, plain.userId)).toBe(0);
      expect(agentReads.some((k) => k.endsWith(agent.userId))).toBe(true);
      expect(agentReads.filter((k) => k.endsWith(plain.userId))).toEqual([]);
    } finally {
      live.get = original;
    }
    expect((await agentEvents(t.accountId)).map((e) => [e.previous_state, e.state])).toEqual([
      ["logged_out", "ready"],
      ["ready", "on_call"],
      ["on_call", "ready"],
    ]);
  });

  test("dialog events without legs or account take the call's users and account from its record", async () => {
    const t = await seedTenant(platform);
    const caller = await seedUser(t.accountId);
    const agent = await seedUser(t.accountId, { agent: true });
    expect((await client.post("/presence/event", { type: "agent", account_id: t.accountId, user_id: agent.userId, event: "login" })).status).toBe(200);
    const callId = randomUUID();
    const routed = decision(t.accountId, { direction: "internal", userId: caller.userId, deviceId: caller.deviceId });
    routed.reply.rtjson.vars = { ...routed.reply.rtjson.vars, dest_kind: "user", dest_id: agent.userId };
    await admitCall(platform, routed, routeRequest(callId));
    const onCall = async () => [await userCallCount(platform.live, t.accountId, caller.userId), await userCallCount(platform.live, t.accountId, agent.userId)];

    // No legs: the caller and the user it rings are on the call from its record.
    expect((await client.post("/presence/event", { type: "dialog", callId, state: "early", account_id: t.accountId })).status).toBe(200);
    expect(await onCall()).toEqual([1, 1]);
    expect((await client.post("/presence/event", { type: "dialog", callId, state: "confirmed", account_id: t.accountId })).status).toBe(200);
    const roster = await client.get(`/presence/users?accountId=${t.accountId}`);
    const agentRow = roster.body.data.find((u: { id: string }) => u.id === agent.userId);
    expect(agentRow).toMatchObject({ on_call: 1, agent_state: "on_call" });
    // No account: the end still releases both users (they were refused 486 after, as busy).
    expect((await client.post("/presence/event", { type: "dialog", callId, state: "terminated", sip_code: 200, hangup_cause: "NORMAL_CLEARING" })).status).toBe(200);
    expect(await onCall()).toEqual([0, 0]);
    expect((await agentEvents(t.accountId)).map((e) => e.state)).toEqual(["ready", "on_call", "ready"]);
  });

  test("a dialog event for a Call-ID with no record changes no one's presence, with or without an account", async () => {
    const t = await seedTenant(platform);
    const u = await seedUser(t.accountId);
    expect((await client.post("/presence/event", { type: "dialog", callId: randomUUID(), state: "confirmed", legs: [{ role: "caller", user_id: u.userId }] })).status).toBe(200);
    expect(await userCallCount(platform.live, t.accountId, u.userId)).toBe(0);
    // Named account and legs, one at a time and in a batch beside a routed call: only the routed one counts.
    const never = (state: string) => ({ type: "dialog", callId: "never-routed@x", state, account_id: t.accountId, legs: [{ role: "callee", user_id: u.userId }] });
    expect((await client.post("/presence/event", never("early"))).status).toBe(200);
    expect((await client.post("/presence/event", never("confirmed"))).status).toBe(200);
    expect(await userCallCount(platform.live, t.accountId, u.userId)).toBe(0);
    const real = await routed(t.accountId);
    const batch = await client.post("/presence/events", { events: [never("confirmed"), { ...never("confirmed"), callId: real }] });
    expect(batch.body).toMatchObject({ ok: true, handled: 2, refused: [] });
    expect(await userCallCount(platform.live, t.accountId, u.userId)).toBe(1);
    const roster = await client.get(`/presence/users?accountId=${t.accountId}`);
    expect(roster.body.data.find((r: { id: string }) => r.id === u.userId)).toMatchObject({ on_call: 1 });
    expect((await client.post("/presence/event", { ...never("terminated"), callId: real, sip_code: 200 })).status).toBe(200);
    expect(await userCallCount(platform.live, t.accountId, u.userId)).toBe(0);
  });

  test("agent events: 404 unknown user or queue, 400 for a non-agent or a misplaced field", async () => {
    const t = await seedTenant(platform);
    const other = await seedTenant(platform);
    const agent = await seedUser(t.accountId, { agent: true });
    const plain = await seedUser(t.accountId);
    const foreignQueue = await createQueue(platform.db, other.accountId, { name: "Theirs" });
    const post = (body: Record<string, unknown>) => client.post("/presence/event", { type: "agent", account_id: t.accountId, user_id: agent.userId, event: "login", ...body });
    expect((await post({ user_id: newId("us") })).status).toBe(404);
    expect((await post({ account_id: other.accountId })).status).toBe(404);
    expect((await post({ queues: [foreignQueue.id] })).status).toBe(404);
    const nonAgent = await post({ user_id: plain.userId });
    expect(nonAgent.status).toBe(400);
    expect(nonAgent.body.details[0].path).toBe("/user_id");
    expect((await post({ reason: "why" })).body.details[0].path).toBe("/reason");
    expect(await agentEvents(t.accountId)).toEqual([]);
  });

  test("dialog for an unknown account is 404; legs naming unknown users are skipped", async () => {
    const t = await seedTenant(platform);
    const u = await seedUser(t.accountId);
    expect((await client.post("/presence/event", { type: "dialog", callId: "c1", state: "confirmed", account_id: newId("acc") })).status).toBe(404);
    const ghost = newId("us");
    const r = await client.post("/presence/event", { type: "dialog", callId: await routed(t.accountId), state: "confirmed", account_id: t.accountId, legs: [{ user_id: ghost }, { device_id: u.deviceId }] });
    expect(r.status).toBe(200);
    // The leg with only a device id counts for the device's user; the unknown user is not tracked.
    expect(await userCallCount(platform.live, t.accountId, u.userId)).toBe(1);
    expect(await userCallCount(platform.live, t.accountId, ghost)).toBe(0);
  });
});

describe(`POST /presence/events (the edge's batches) [${storeKind}]`, () => {
  test("each call's events are handled in order while calls interleave; register events too", async () => {
    const t = await seedTenant(platform);
    const users = await Promise.all([seedUser(t.accountId), seedUser(t.accountId), seedUser(t.accountId)]);
    const calls = await Promise.all(users.map(() => routed(t.accountId)));
    const dialog = (i: number, state: string) => ({ type: "dialog", callId: calls[i], state, account_id: t.accountId, legs: [{ role: "callee", user_id: users[i]!.userId }] });
    // Interleaved as the edge queues them: call 0 ends, call 1 stays up, call 2 ends.
    const events = [
      register(t.accountId, users[0]!.deviceId),
      dialog(0, "early"), dialog(1, "early"), dialog(0, "confirmed"), dialog(2, "early"),
      dialog(1, "confirmed"), dialog(0, "terminated"), dialog(2, "confirmed"), dialog(2, "terminated"),
    ];
    const r = await client.post("/presence/events", { events });
    expect(r).toEqual({ status: 200, body: { ok: true, handled: events.length, refused: [] } });
    expect(await userCallCount(platform.live, t.accountId, users[0]!.userId)).toBe(0);
    expect(await userCallCount(platform.live, t.accountId, users[1]!.userId)).toBe(1);
    expect(await userCallCount(platform.live, t.accountId, users[2]!.userId)).toBe(0);
    expect(await userContacts(platform.live, t.accountId, users[0]!.userId)).toHaveLength(1);
    // Handled in order per call: a terminated after confirmed, so nothing is left on call.
    const roster = await client.get(`/presence/users?accountId=${t.accountId}`);
    expect(roster.body.data.filter((u: { on_call: number }) => u.on_call === 1).map((u: { id: string }) => u.id)).toEqual([users[1]!.userId]);

    // The edge sends a batch again when it got no answer: dialog events already handled change nothing.
    expect((await client.post("/presence/events", { events })).status).toBe(200);
    expect(await userCallCount(platform.live, t.accountId, users[1]!.userId)).toBe(1);
    expect(await userCallCount(platform.live, t.accountId, users[0]!.userId)).toBe(0);
  });

  test("a batch's events drop optional fields sent empty, as a single event's body does", async () => {
    const t = await seedTenant(platform);
    const [inBatch, alone] = [await routed(t.accountId), await routed(t.accountId)];
    const end = (callId: string) => ({ type: "dialog", callId, state: "terminated", account_id: t.accountId, sip_code: 486, hangup_cause: "", record_id: "" });
    expect((await client.post("/presence/events", { events: [end(inBatch)] })).body).toMatchObject({ handled: 1, refused: [] });
    expect((await client.post("/presence/event", end(alone))).status).toBe(200);
    for (const callId of [inBatch, alone]) {
      expect(await findCallBySipId(platform.db, t.accountId, callId)).toMatchObject({ status: "busy", hangup_cause: "USER_BUSY" });
    }
  });

  test("a malformed event is refused alone, named by position with its problems; the others are handled", async () => {
    const t = await seedTenant(platform);
    const u = await seedUser(t.accountId);
    const callId = await routed(t.accountId);
    const good = { type: "dialog", callId, state: "confirmed", account_id: t.accountId, legs: [{ role: "callee", user_id: u.userId }] };
    // An unknown type (a newer edge's event) or something that is not an object is refused alone: a
    // 400 would have the edge send the whole batch again, the good events with it, for ever.
    const unknownType = await client.post("/presence/events", { events: [{ type: "fax" }, null, "x", [], { ...good, callId: randomUUID() }] });
    expect(unknownType.status, JSON.stringify(unknownType.body)).toBe(200);
    expect(unknownType.body.handled).toBe(1);
    expect(unknownType.body.refused.map((x: { index: number; message: string }) => [x.index, x.message])).toEqual([
      [0, "Not an event: /events/0/type must be register, dialog or agent"],
      [1, "Not an event: /events/1 is not an object"],
      [2, "Not an event: /events/2 is not an object"],
      [3, "Not an event: /events/3 is not an object"],
    ]);
    const malformed = [
      { type: "dialog", callId: randomUUID(), state: "ringing", account_id: t.accountId },
      { type: "dialog", callId: randomUUID(), state: "early", account_id: t.accountId, ts: 1e20 },
      { type: "register", account_id: t.accountId, device_id: "dev_x", contact: "sip:a b@c", expires: 60 },
    ];
    const r = await client.post("/presence/events", { events: [malformed[0], good, malformed[1], malformed[2]] });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body.handled).toBe(1);
    expect(r.body.refused.map((x: { index: number; error: string }) => [x.index, x.error])).toEqual([
      [0, "validation_failed"],
      [2, "validation_failed"],
      [3, "validation_failed"],
    ]);
    expect(r.body.refused[0].message).toContain("/events/0/state");
    expect(r.body.refused[1].message).toContain("/events/2/ts");
    expect(r.body.refused[2].message).toContain("/events/3/contact");
    expect(await userCallCount(platform.live, t.accountId, u.userId)).toBe(1);
    // Unstorable text (NUL, a lone surrogate), a field the protocol does not name (at the top or in a
    // leg), a leg id too long: that event alone is refused, the others are handled.
    const agent = await seedUser(t.accountId, { agent: true });
    await client.post("/presence/event", { type: "agent", account_id: t.accountId, user_id: agent.userId, event: "login" });
    const mixed = await client.post("/presence/events", {
      events: [
        { type: "dialog", callId: "x\u0000", state: "early", account_id: t.accountId },
        { type: "agent", account_id: t.accountId, user_id: agent.userId, event: "pause", reason: "lunch" },
        { type: "dialog", callId: "y\ud800", state: "early", account_id: t.accountId },
        { type: "dialog", callId: randomUUID(), state: "early", account_id: t.accountId, zz: 1 },
        { type: "dialog", callId: randomUUID(), state: "confirmed", account_id: t.accountId, legs: [{ role: "callee", user_id: u.userId, zz: "injected" }] },
        { type: "dialog", callId: randomUUID(), state: "confirmed", account_id: t.accountId, legs: [{ role: "callee", user_id: "u".repeat(65) }] },
      ],
    });
    expect(mixed.status, JSON.stringify(mixed.body)).toBe(200);
    expect(mixed.body.handled).toBe(1);
    expect(mixed.body.refused.map((x: { index: number; message: string }) => [x.index, x.message.split(" ").slice(0, 6).join(" ")])).toEqual([
      [0, "Not a valid dialog event: /events/0/callId"],
      [2, "Not a valid dialog event: /events/2/callId"],
      [3, "Not a valid dialog event: /events/3/zz"],
      [4, "Not a valid dialog event: /events/4/legs/0/zz"],
      [5, "Not a valid dialog event: /events/5/legs/0/user_id"],
    ]);
    expect((await agentEvents(t.accountId)).at(-1)).toMatchObject({ user_id: agent.userId, state: "paused", reason: "lunch" });
    for (const body of [{ events: [] }, {}, { events: good }, { events: Array.from({ length: PresenceModel.MAX_BATCH + 1 }, () => good) }, { events: [good], extra: 1 }]) {
      expect((await client.post("/presence/events", body)).status).toBe(400);
    }
    // A form cannot carry a batch: 415, saying to send JSON.
    const form = await client.post("/presence/events", { type: "dialog", callId: randomUUID(), state: "confirmed", account_id: t.accountId }, "form");
    expect(form.status).toBe(415);
    expect(form.body).toMatchObject({ ok: false, error: "unsupported_media_type", message: expect.stringContaining("application/json") });
    // Still the one call: none of the refused bodies handled anything.
    expect(await userCallCount(platform.live, t.accountId, u.userId)).toBe(1);
  });

  test("an event refused on its own (unknown account, agent event out of turn) is listed; the others are handled", async () => {
    const t = await seedTenant(platform);
    const u = await seedUser(t.accountId);
    const agent = await seedUser(t.accountId, { agent: true });
    const callId = await routed(t.accountId);
    const r = await client.post("/presence/events", {
      events: [
        { type: "dialog", callId: randomUUID(), state: "confirmed", account_id: newId("acc") },
        { type: "agent", account_id: t.accountId, user_id: agent.userId, event: "pause" },
        { type: "dialog", callId, state: "confirmed", account_id: t.accountId, legs: [{ role: "callee", user_id: u.userId }] },
      ],
    });
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ ok: true, handled: 1 });
    expect(r.body.refused.map((x: { index: number; error: string }) => [x.index, x.error])).toEqual([[0, "not_found"], [1, "conflict"]]);
    expect(await userCallCount(platform.live, t.accountId, u.userId)).toBe(1);
  });
});

describe(`late dialog events [${storeKind}]`, () => {
  test("events taken long after they happened at the edge (their ts) are logged, once a minute at most", async () => {
    const lines: string[] = [];
    const own = await testPlatform({ logLines: lines, logLevel: "warn" });
    const ownClient = listenControl(own, [presenceRoutes]);
    const otherClient = listenControl(own, [presenceRoutes]);
    try {
      const t = await seedTenant(own);
      const dialog = (ts: number) => ({ type: "dialog", callId: randomUUID(), state: "terminated", account_id: t.accountId, sip_code: 200, ts });
      const late = () => lines.filter((l) => l.includes("dialog events arrive late"));
      // On time (the usual few milliseconds of queueing), one at a time or in a batch: nothing said.
      expect((await ownClient.post("/presence/events", { events: [dialog(Date.now() - 200), dialog(Date.now())] })).status).toBe(200);
      expect((await ownClient.post("/presence/event", dialog(Date.now() - 1000))).status).toBe(200);
      expect(late()).toEqual([]);
      // A backlog: the worst delay of the batch is reported.
      expect((await ownClient.post("/presence/events", { events: [dialog(Date.now() - 90_000), dialog(Date.now() - 60_000)] })).status).toBe(200);
      expect(late()).toHaveLength(1);
      expect(JSON.parse(late()[0]!).late_ms).toBeGreaterThanOrEqual(90_000);
      // Still behind a moment later: not said again within the minute.
      expect((await ownClient.post("/presence/event", dialog(Date.now() - 30_000))).status).toBe(200);
      expect(late()).toHaveLength(1);
      // One event at a time is watched too (another instance of the routes has its own minute).
      expect((await otherClient.post("/presence/event", dialog(Date.now() - 20_000))).status).toBe(200);
      expect(late()).toHaveLength(2);
      expect(JSON.parse(late()[1]!).late_ms).toBeGreaterThanOrEqual(20_000);
    } finally {
      await otherClient.stop();
      await ownClient.stop();
      await own.close();
    }
  });
});

describe(`dialog events from the future [${storeKind}]`, () => {
  test("an edge clock ahead of ours is logged, once a minute at most", async () => {
    const lines: string[] = [];
    const own = await testPlatform({ logLines: lines, logLevel: "warn" });
    const ownClient = listenControl(own, [presenceRoutes]);
    try {
      const t = await seedTenant(own);
      const dialog = (ts: number) => ({ type: "dialog", callId: randomUUID(), state: "terminated", account_id: t.accountId, sip_code: 200, ts });
      const ahead = () => lines.filter((l) => l.includes("dialog events from the future"));
      // A clock a little ahead (under AHEAD_EVENT_MS): nothing said.
      expect((await ownClient.post("/presence/event", dialog(Date.now() + 500))).status).toBe(200);
      expect(ahead()).toEqual([]);
      // An event refused as malformed (a ts past the year 9999) says nothing about the edge's clock.
      const refusedOnly = await ownClient.post("/presence/events", { events: [dialog(999_999_999_999_999_999)] });
      expect(refusedOnly.body).toMatchObject({ handled: 0, refused: [{ index: 0, error: "validation_failed" }] });
      expect(ahead()).toEqual([]);
      expect((await ownClient.post("/presence/events", { events: [dialog(Date.now() + 30_000), dialog(Date.now() + 90_000)] })).status).toBe(200);
      expect(ahead()).toHaveLength(1);
      expect(JSON.parse(ahead()[0]!).ahead_ms).toBeGreaterThan(80_000);
      expect((await ownClient.post("/presence/event", dialog(Date.now() + 60_000))).status).toBe(200);
      expect(ahead()).toHaveLength(1);
      expect(lines.filter((l) => l.includes("arrive late"))).toEqual([]);
    } finally {
      await ownClient.stop();
      await own.close();
    }
  });
});

describe(`GET /presence/users [${storeKind}]`, () => {
  test("roster rows and tiles; another account's users never appear", async () => {
    const t = await seedTenant(platform);
    const other = await seedTenant(platform);
    const ready = await seedUser(t.accountId, { agent: true });
    const paused = await seedUser(t.accountId, { agent: true });
    const out = await seedUser(t.accountId, { agent: true });
    const plainOnCall = await seedUser(t.accountId);
    const offline = await seedUser(t.accountId);
    const foreign = await seedUser(other.accountId);
    const agentEvent = (userId: string, event: string, extra = {}) => client.post("/presence/event", { type: "agent", account_id: t.accountId, user_id: userId, event, ...extra });
    await client.post("/presence/event", register(t.accountId, ready.deviceId));
    await client.post("/presence/event", register(t.accountId, ready.deviceId, { contact: "sip:other@192.0.2.9" }));
    await client.post("/presence/event", register(t.accountId, paused.deviceId));
    await client.post("/presence/event", register(t.accountId, plainOnCall.deviceId));
    await client.post("/presence/event", register(other.accountId, foreign.deviceId));
    await agentEvent(ready.userId, "login");
    await agentEvent(paused.userId, "login");
    await agentEvent(paused.userId, "pause", { reason: "training" });
    await client.post("/presence/event", { type: "dialog", callId: await routed(t.accountId), state: "confirmed", account_id: t.accountId, legs: [{ user_id: plainOnCall.userId }] });
    // Not registered, but on a call (a forwarded leg, say): on_call, so not offline.
    const unregisteredOnCall = await seedUser(t.accountId);
    await client.post("/presence/event", { type: "dialog", callId: await routed(t.accountId), state: "confirmed", account_id: t.accountId, legs: [{ user_id: unregisteredOnCall.userId }] });

    const r = await client.get(`/presence/users?accountId=${t.accountId}`);
    expect(r.status).toBe(200);
    expect(r.body.tiles).toEqual({ total: 6, registered: 3, offline: 2, on_call: 2, ready: 1, paused: 1, logged_out: 1 });
    const rows = r.body.data as Array<{ status: string }>;
    expect(r.body.tiles.offline).toBe(rows.filter((u) => u.status === "offline").length);
    const byId = new Map((r.body.data as Array<{ id: string; since: number | null }>).map((u) => [u.id, u]));
    expect(byId.has(foreign.userId)).toBe(false);
    expect(byId.get(ready.userId)).toMatchObject({ registered: 1, contacts: 2, devices_registered: 1, status: "available", agent_state: "ready", on_call: 0, is_agent: 1 });
    expect(byId.get(ready.userId)!.since).toBeGreaterThan(Date.now() - 60_000);
    expect(byId.get(paused.userId)).toMatchObject({ agent_state: "paused", reason: "training" });
    expect(byId.get(out.userId)).toMatchObject({ agent_state: "logged_out", registered: 0, status: "offline", since: null });
    expect(byId.get(plainOnCall.userId)).toMatchObject({ status: "on_call", on_call: 1, calls: 1, agent_state: null, since: null });
    expect(byId.get(offline.userId)).toMatchObject({ status: "offline", registered: 0, contacts: 0, devices_registered: 0, extension: expect.any(String), name: expect.stringContaining("User") });

    const theirs = await client.get(`/presence/users?accountId=${other.accountId}`);
    expect(theirs.body.data.map((u: { id: string }) => u.id)).toEqual([foreign.userId]);
    expect(theirs.body.tiles).toMatchObject({ total: 1, registered: 1, on_call: 0 });
  });

  test("400 without a valid accountId, 404 for an unknown account", async () => {
    expect((await client.get("/presence/users")).status).toBe(400);
    expect((await client.get("/presence/users?accountId=nope")).status).toBe(400);
    const unknown = await client.get(`/presence/users?accountId=${newId("acc")}`);
    expect(unknown.status).toBe(404);
  });

  test("the gate: 403 from an address outside CONTROL_ALLOW", async () => {
    const t = await seedTenant(platform);
    const u = await seedUser(t.accountId);
    const closed = await testPlatform({ env: { CONTROL_ALLOW: "10.255.0.0/16" } });
    const gated = listenControl(closed, [presenceRoutes]);
    try {
      expect((await gated.post("/presence/event", register(t.accountId, u.deviceId))).status).toBe(403);
      expect((await gated.post("/presence/events", { events: [register(t.accountId, u.deviceId)] })).status).toBe(403);
      expect((await gated.get(`/presence/users?accountId=${t.accountId}`)).status).toBe(403);
      expect(await userContacts(platform.live, t.accountId, u.userId)).toEqual([]);
    } finally {
      await gated.stop();
      await closed.close();
    }
  });
});
