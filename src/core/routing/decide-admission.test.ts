/**
 * decideRoute and admitCall together, where what the router decides and what CAC admits meet:
 * call-limit windows given back for refused calls, a busy user's failover without the user's slot,
 * a full trunk failing over to the next, and forwards held to the outbound policies and limits.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Platform } from "../platform.ts";
import { storeKind, testPlatform } from "../../../test/support/platform.ts";
import { decideRoute } from "./decide.ts";
import { admitCall } from "../calls/admission.ts";
import { handleDialogEvent } from "../calls/dialog.ts";
import { contact, routeFixture, testDeps } from "./decide.fixture.ts";
import type { RouteRequest } from "./route-types.ts";
import { cacSnapshot } from "../cac/cac.service.ts";
import { findCallBySipId } from "../calls/calls.store.ts";

let platform: Platform;
beforeAll(async () => {
  platform = await testPlatform();
});
afterAll(() => platform.close());

let n = 0;
const callId = () => `adm${++n}-${Date.now()}`;

/** Decides and admits one call; the reply CAC gave. */
async function route(req: RouteRequest, deps = testDeps(platform)) {
  const decision = await decideRoute(deps, req);
  return { decision, reply: await admitCall(platform, decision, req) };
}

describe(`routing meets admission [${storeKind}]`, () => {
  test("a call refused after a per-period limit counted it (by a later hard limit, or by CAC) is not counted by it", async () => {
    const f = await routeFixture(platform, { max_out: 1 });
    const a = await f.user({ username: "1001" });
    const da = await f.device(a);
    const b = await f.user({ username: "1002" });
    const db = await f.device(b);
    await f.callLimit({ name: "account-2-per-hour", direction: "out", period_sec: 3600, max_count: 2, hard: 1 });
    await f.callLimit({ name: "a-1-per-hour", scope_kind: "user", scope_id: a, direction: "out", period_sec: 3600, max_count: 1, hard: 1 });
    const dial = (user: string, device: string): RouteRequest => ({ callId: callId(), from: "1001", fromDomain: "r.example", to: "+447700900100", account_id: f.accountId, user_id: user, device_id: device, source_ip: "198.51.100.1" });
    // a's first call goes out and stays up; a's second is refused by a's own limit (after the account's counted it).
    const first = dial(a, da);
    expect((await route(first)).reply.rtjson.action).toBe("outbound");
    expect((await route(dial(a, da))).reply.rtjson).toMatchObject({ action: "reject", code: 403 });
    // b's call is refused by CAC (max_out 1, a's call is up) after the account's window counted it.
    expect((await route(dial(b, db))).reply.rtjson).toMatchObject({ action: "reject", code: 503 });
    await handleDialogEvent(platform, { type: "dialog", callId: first.callId, account_id: f.accountId, state: "terminated", sip_code: 200, hangup_cause: "NORMAL_CLEARING" });
    // One call went out this hour: b may place the second the account allows.
    const { reply, decision } = await route(dial(b, db));
    expect(reply.rtjson.action, decision.trace.map((s) => `${s.step}: ${s.result}`).join("\n")).toBe("outbound");
  });

  test("a retransmission of a refused call (answered from its record) does not count it in the windows again", async () => {
    const f = await routeFixture(platform, { max_out: 1 });
    const u = await f.user({ username: "1001", max_simultaneous: 5 });
    const dv = await f.device(u);
    await f.callLimit({ name: "account-2-per-hour", direction: "out", period_sec: 3600, max_count: 2, hard: 1 });
    const dial = (): RouteRequest => ({ callId: callId(), from: "1001", fromDomain: "r.example", to: "+447700900100", account_id: f.accountId, user_id: u, device_id: dv, source_ip: "198.51.100.1" });
    const first = dial();
    expect((await route(first)).reply.rtjson.action).toBe("outbound");
    const refused = dial();
    expect((await route(refused)).reply.rtjson).toMatchObject({ action: "reject", code: 503 });
    // The INVITE again (same Call-ID): the stored refusal is the answer, and the window stays as it was.
    expect((await route(refused)).reply.rtjson).toMatchObject({ action: "reject", code: 503 });
    await handleDialogEvent(platform, { type: "dialog", callId: first.callId, account_id: f.accountId, state: "terminated", sip_code: 200, hangup_cause: "NORMAL_CLEARING" });
    const { reply, decision } = await route(dial());
    expect(reply.rtjson.action, decision.trace.map((s) => `${s.step}: ${s.result}`).join("\n")).toBe("outbound");
  });

  test("a user's concurrent limit of one direction counts only its calls in that direction: a call received does not fill its out limit, nor a call placed its in limit", async () => {
    const f = await routeFixture(platform);
    const alice = await f.user({ username: "1001", max_simultaneous: 5 });
    const aliceDev = await f.device(alice);
    const bob = await f.user({ username: "1002", max_simultaneous: 5 });
    const bobDev = await f.device(bob);
    const outLimit = await f.callLimit({ name: "one-out", scope_kind: "user", scope_id: alice, direction: "out", max_count: 1, hard: 1 });
    const inLimit = await f.callLimit({ name: "one-in", scope_kind: "user", scope_id: alice, direction: "in", max_count: 1, hard: 1 });
    const did = await f.number({ dest_kind: "user", dest_id: alice });
    // Presence's count of the calls Alice is in, as the calls below add up.
    const deps = (calls: number) => testDeps(platform, { contacts: { [alice]: [contact(alice, aliceDev, "sip:1001@10.0.0.9")] }, calls: { [alice]: calls } });
    const fromDevice = (user: string, device: string, to: string): RouteRequest => ({ callId: callId(), from: "x", fromDomain: "r.example", to, account_id: f.accountId, user_id: user, device_id: device, source_ip: "198.51.100.1" });
    const fromCarrier = (): RouteRequest => ({ callId: callId(), from: "14155550000", fromDomain: "carrier", to: did.e164, source_ip: "192.0.2.1" });
    const why = (r: Awaited<ReturnType<typeof route>>) => r.decision.trace.map((s) => `${s.step}: ${s.result}`).join("\n");
    // Bob calls Alice: a call Alice is in, of neither of her limits' directions (internal).
    const internal = await route(fromDevice(bob, bobDev, "1001"), deps(0));
    expect(internal.reply.rtjson.action).toBe("proxy");
    expect(internal.decision.slots.filter((s) => s.level === "call_limit")).toEqual([]);
    // A call from outside reaches her: it takes her in limit's own counter, her user slot at its own ceiling.
    const receivedReq = fromCarrier();
    const received = await route(receivedReq, deps(1));
    expect(received.reply.rtjson.action, why(received)).toBe("proxy");
    expect(received.decision.slots).toContainEqual({ level: "user", id: alice, limit: 5 });
    expect(received.decision.slots).toContainEqual({ level: "call_limit", id: inLimit, limit: 1, busy: true });
    // On two calls, neither placed by her: she may place one.
    const placedReq = fromDevice(alice, aliceDev, "447700900123");
    const placed = await route(placedReq, deps(2));
    expect(placed.reply.rtjson.action, why(placed)).toBe("outbound");
    expect(placed.decision.slots).toContainEqual({ level: "user", id: alice, limit: 5 });
    expect(placed.decision.slots).toContainEqual({ level: "call_limit", id: outLimit, limit: 1, busy: true });
    // Not two: her out limit is full (486: she is busy, as at her max_simultaneous).
    expect((await route(fromDevice(alice, aliceDev, "447700900124"), deps(3))).reply.rtjson).toMatchObject({ action: "reject", code: 486, vars: { cac_level: "call_limit", cac_id: outLimit } });
    // Her in limit is full too: the next call from outside finds her busy, below her max_simultaneous.
    const busy = await route(fromCarrier(), deps(3));
    expect(busy.reply.rtjson, why(busy)).toMatchObject({ action: "reject", code: 486 });
    expect(why(busy)).toContain("one-in");
    // GET /cac lists each counter with the call holding it; the calls' ends give them back.
    const counters = await cacSnapshot(platform.live, f.accountId);
    expect(counters.find((c) => c.level === "call_limit" && c.id === outLimit)).toMatchObject({ active: 1, limit: 1, call_ids: [String(placed.reply.rtjson.vars.call_id)] });
    expect(counters.find((c) => c.level === "call_limit" && c.id === inLimit)).toMatchObject({ active: 1, limit: 1, call_ids: [String(received.reply.rtjson.vars.call_id)] });
    expect(counters.find((c) => c.level === "user" && c.id === alice)?.active).toBe(3);
    for (const r of [placedReq, receivedReq]) {
      await handleDialogEvent(platform, { type: "dialog", callId: r.callId, account_id: f.accountId, state: "terminated", sip_code: 200, hangup_cause: "NORMAL_CLEARING" });
    }
    expect((await cacSnapshot(platform.live, f.accountId)).filter((c) => c.level === "call_limit")).toEqual([]);
    expect((await route(fromCarrier(), deps(1))).reply.rtjson.action).toBe("proxy");
  });

  test("a user busy at its own concurrent in-limit goes to its busy forward; the forward does not take the user's slot", async () => {
    const f = await routeFixture(platform);
    const u = await f.user({ username: "1001", max_simultaneous: 5 });
    const dv = await f.device(u);
    await f.forward({ user_id: u, number: "447700900555", trigger: "busy" });
    await f.callLimit({ name: "one-at-a-time", scope_kind: "user", scope_id: u, direction: "in", period_sec: null, max_count: 1, hard: 1 });
    const did = await f.number({ dest_kind: "user", dest_id: u });
    const inbound = (): RouteRequest => ({ callId: callId(), from: "14155550000", fromDomain: "carrier", to: did.e164, source_ip: "192.0.2.1" });
    const contacts = { [u]: [contact(u, dv, "sip:1001@10.1.1.1")] };
    expect((await route(inbound(), testDeps(platform, { contacts }))).reply.rtjson.action).toBe("proxy");
    const second = await route(inbound(), testDeps(platform, { contacts, calls: { [u]: 1 } }));
    expect(second.decision.slots.some((s) => s.level === "user" && s.id === u)).toBe(false);
    expect(second.reply.rtjson.action).toBe("outbound");
    expect(second.reply.rtjson.routes?.[0]?.uri).toContain("447700900555");
  });

  test("a user at its own concurrent in-limit with an always forward: the forwarded call goes out, without the user's slot", async () => {
    const f = await routeFixture(platform);
    const u = await f.user({ username: "1001", max_simultaneous: 5 });
    const dv = await f.device(u);
    await f.callLimit({ name: "one-at-a-time", scope_kind: "user", scope_id: u, direction: "in", period_sec: null, max_count: 1, hard: 1 });
    const did = await f.number({ dest_kind: "user", dest_id: u });
    const inbound = (): RouteRequest => ({ callId: callId(), from: "14155550000", fromDomain: "carrier", to: did.e164, source_ip: "192.0.2.1" });
    const contacts = { [u]: [contact(u, dv, "sip:1001@10.1.1.1")] };
    expect((await route(inbound(), testDeps(platform, { contacts }))).reply.rtjson.action).toBe("proxy");
    await f.forward({ user_id: u, number: "447700900556", trigger: "always" });
    const second = await route(inbound(), testDeps(platform, { contacts, calls: { [u]: 1 } }));
    expect(second.decision.slots.some((s) => s.level === "user" && s.id === u)).toBe(false);
    expect(second.reply.rtjson.action, second.decision.trace.map((s) => `${s.step}: ${s.result}`).join("\n")).toBe("outbound");
    expect(second.reply.rtjson.routes?.[0]?.uri).toContain("447700900556");
  });

  test("a call forwarded out is recorded as outbound, whoever placed it, and counts against max_out", async () => {
    const f = await routeFixture(platform, { max_out: 1 });
    const a = await f.user({ username: "1001" });
    const da = await f.device(a);
    const b = await f.user({ username: "1002" });
    await f.forward({ user_id: b, number: "447700900321", trigger: "always" });
    const internal = (): RouteRequest => ({ callId: callId(), from: "1001", fromDomain: "r.example", to: "1002", account_id: f.accountId, user_id: a, device_id: da, source_ip: "198.51.100.1" });
    const first = internal();
    const { reply } = await route(first);
    expect(reply.rtjson).toMatchObject({ action: "outbound", vars: { direction: "outbound" } });
    expect(await findCallBySipId(platform.db, f.accountId, first.callId)).toMatchObject({ direction: "outbound", to: "447700900321" });
    // The account's one outbound channel is the forwarded call's: the next call out is refused.
    expect((await route(internal())).reply.rtjson).toMatchObject({ action: "reject", code: 503, vars: { cac_level: "account_out" } });
  });

  test("a call in through a trunk and out through the same trunk holds two of its channels, listed by GET /cac and given back at the end", async () => {
    const f = await routeFixture(platform);
    const net = `100.66.${Math.floor(Math.random() * 250)}`;
    const t = await f.trunk({ name: "both-ways", proxy: "both.example.net", max_channels: 2, inbound_auth: "ip", direction: "both" }, [`${net}.0/29`]);
    await f.route({ via: "trunk", trunk_id: t, match_prefix: "44", priority: 10 });
    const flow = await f.flow();
    const did = await f.number({ dest_kind: "flow", dest_id: flow });
    await f.forward({ number_id: did.id, number: "447700900324", trigger: "always" });
    const inbound = (): RouteRequest => ({ callId: callId(), from: "14155550000", fromDomain: "carrier", to: did.e164, source_ip: `${net}.2` });
    const deps = testDeps(platform, { settings: { carrierUri: null } });
    const first = inbound();
    const admitted = await route(first, deps);
    expect(admitted.reply.rtjson.action, admitted.decision.trace.map((s) => `${s.step}: ${s.result}`).join("\n")).toBe("outbound");
    expect(admitted.decision.slots.filter((s) => s.level === "trunk" && s.id === t)).toHaveLength(2);
    const callOf = String(admitted.reply.rtjson.vars.call_id);
    expect((await cacSnapshot(platform.live, f.accountId)).find((c) => c.level === "trunk" && c.id === t)).toEqual({ level: "trunk", id: t, limit: 2, active: 2, call_ids: [callOf, callOf] });
    // Both channels are the first call's: the next call in is refused.
    expect((await route(inbound(), deps)).reply.rtjson).toMatchObject({ action: "reject", code: 503, vars: { cac_level: "trunk", cac_id: t } });
    // Its end gives both back.
    await handleDialogEvent(platform, { type: "dialog", callId: first.callId, account_id: f.accountId, state: "terminated", sip_code: 200, hangup_cause: "NORMAL_CLEARING" });
    expect((await cacSnapshot(platform.live, f.accountId)).find((c) => c.level === "trunk" && c.id === t)).toBeUndefined();
    expect((await route(inbound(), deps)).reply.rtjson.action).toBe("outbound");
  });

  test("a full trunk a call came in through refuses it: a tied route through another trunk is no way around it", async () => {
    const f = await routeFixture(platform);
    const net = `100.67.${Math.floor(Math.random() * 250)}`;
    const t = await f.trunk({ name: "in-and-out", proxy: "in.example.net", max_channels: 1, inbound_auth: "ip", direction: "both" }, [`${net}.0/29`]);
    const u = await f.trunk({ name: "other", proxy: "other.example.net", max_channels: 5, direction: "both" });
    await f.route({ via: "trunk", trunk_id: t, match_prefix: "44", priority: 10 });
    await f.route({ via: "trunk", trunk_id: u, match_prefix: "44", priority: 20 });
    const flow = await f.flow();
    const did = await f.number({ dest_kind: "flow", dest_id: flow });
    await f.forward({ number_id: did.id, number: "447700900325", trigger: "always" });
    const inbound = (): RouteRequest => ({ callId: callId(), from: "14155550000", fromDomain: "carrier", to: did.e164, source_ip: `${net}.2` });
    const deps = testDeps(platform, { settings: { carrierUri: null } });
    // The first call takes the trunk's one channel coming in: its leg out cannot have a second, and goes through the other trunk.
    const first = await route(inbound(), deps);
    expect(first.reply.rtjson.action, first.decision.trace.map((s) => `${s.step}: ${s.result}`).join("\n")).toBe("outbound");
    expect(first.reply.rtjson.routes?.map((r) => r.uri)).toEqual(["sip:447700900325@other.example.net"]);
    expect(first.reply.rtjson.vars.trunk_id).toBe(u);
    // The trunk is full: a second call through it is refused, not sent out through the other trunk.
    expect((await route(inbound(), deps)).reply.rtjson).toMatchObject({ action: "reject", code: 503, vars: { cac_level: "trunk", cac_id: t } });
  });

  test("a trunk at its max_channels fails over to the next tied route's trunk; with no leg left, 503", async () => {
    const f = await routeFixture(platform);
    const u = await f.user({ username: "1001", max_simultaneous: 10 });
    const dv = await f.device(u);
    const t1 = await f.trunk({ name: "T1", proxy: "t1.example.net", max_channels: 1, direction: "both" });
    const t2 = await f.trunk({ name: "T2", proxy: "t2.example.net", max_channels: 1, direction: "both" });
    await f.route({ via: "trunk", trunk_id: t1, match_prefix: "44", priority: 10 });
    await f.route({ via: "trunk", trunk_id: t2, match_prefix: "44", priority: 20 });
    const dial = (): RouteRequest => ({ callId: callId(), from: "1001", fromDomain: "r.example", to: "+447700900100", account_id: f.accountId, user_id: u, device_id: dv, source_ip: "198.51.100.1" });
    const deps = testDeps(platform, { settings: { carrierUri: null } });
    const first = await route(dial(), deps);
    expect(first.reply.rtjson.routes?.map((r) => r.uri)).toEqual(["sip:447700900100@t1.example.net", "sip:447700900100@t2.example.net"]);
    expect(first.reply.rtjson.vars.trunk_id).toBe(t1);
    // T1 is full: the call goes out through T2 alone, counted on T2, recorded with T2.
    const second = await route(dial(), deps);
    expect(second.reply.rtjson.action).toBe("outbound");
    expect(second.reply.rtjson.routes?.map((r) => r.uri)).toEqual(["sip:447700900100@t2.example.net"]);
    expect(second.reply.rtjson.vars.trunk_id).toBe(t2);
    // Both full (the second call holds T2's one channel): refused, as before, on T2.
    expect((await route(dial(), deps)).reply.rtjson).toMatchObject({ action: "reject", code: 503, vars: { cac_level: "trunk", cac_id: t2 } });
  });

  test("forwards pass the destination's do-not-call and geo policies: an always forward with confirm=1, and failover forwards", async () => {
    const f = await routeFixture(platform, { max_out: 10 });
    const bad = "447700900999";
    await f.phoneList("dnc_out", [bad]);
    const inbound = (to: string): RouteRequest => ({ callId: callId(), from: "14155550000", fromDomain: "carrier", to, source_ip: "192.0.2.1" });
    const screened = await f.user({ username: "3002" });
    await f.forward({ user_id: screened, number: bad, trigger: "always", confirm: 1 });
    const n1 = await f.number({ dest_kind: "user", dest_id: screened });
    expect((await decideRoute(testDeps(platform), inbound(n1.e164))).reply.rtjson).toMatchObject({ action: "reject", code: 603 });
    // Allowed, it goes to the media engine that screens it, recorded as the outbound call it is.
    const fine = await f.user({ username: "3004" });
    await f.forward({ user_id: fine, number: "447700900124", trigger: "always", confirm: 1 });
    const n3 = await f.number({ dest_kind: "user", dest_id: fine });
    const toEngine = await decideRoute(testDeps(platform), inbound(n3.e164));
    expect(toEngine.reply.rtjson).toMatchObject({ action: "flow", vars: { dest_kind: "forward", direction: "outbound" } });
    expect(toEngine.reply.rtjson.routes![0]!.uri).toStartWith(`sip:${n3.e164}@`);
    expect(toEngine).toMatchObject({ direction: "outbound", to: "447700900124" });
    expect(toEngine.slots).toContainEqual({ level: "account_out", id: f.accountId, limit: 10 });
    const ringing = await f.user({ username: "3003" });
    const dv = await f.device(ringing);
    await f.forward({ user_id: ringing, number: bad, trigger: "no_answer", timeout_sec: 10 });
    await f.forward({ user_id: ringing, number: "447700900123", trigger: "busy" });
    const n2 = await f.number({ dest_kind: "user", dest_id: ringing });
    const d = await decideRoute(testDeps(platform, { contacts: { [ringing]: [contact(ringing, dv, "sip:3003@10.0.0.9")] } }), inbound(n2.e164));
    expect(d.reply.rtjson.action).toBe("proxy");
    // The refused number is no failover; the allowed one is.
    expect(d.reply.rtjson.vars.failover_no_answer).toBeUndefined();
    expect(d.reply.rtjson.vars.failover_busy_number).toBe("447700900123");
    expect(d.trace.map((s) => s.result).join("\n")).toContain(`no_answer → ${bad}`);
  });

  test("a forward out counts against the account's outbound call limits", async () => {
    const f = await routeFixture(platform);
    const u = await f.user({ username: "1001" });
    const dv = await f.device(u);
    await f.callLimit({ name: "out-1-per-hour", direction: "out", period_sec: 3600, max_count: 1, hard: 1 });
    const forwarded = await f.user({ username: "4001" });
    await f.forward({ user_id: forwarded, number: "882345678901", trigger: "always" });
    const did = await f.number({ dest_kind: "user", dest_id: forwarded });
    const inbound = (): RouteRequest => ({ callId: callId(), from: "14155550000", fromDomain: "carrier", to: did.e164, source_ip: "192.0.2.1" });
    expect((await route(inbound())).reply.rtjson.action).toBe("outbound");
    expect((await route(inbound())).reply.rtjson).toMatchObject({ action: "reject", code: 403 });
    // The limit is the account's, whoever's call it is: a dialled call is refused too.
    const dial: RouteRequest = { callId: callId(), from: "1001", fromDomain: "r.example", to: "+447700900100", account_id: f.accountId, user_id: u, device_id: dv, source_ip: "198.51.100.1" };
    expect((await route(dial)).reply.rtjson).toMatchObject({ action: "reject", code: 403 });
  });
});
