/** decideRoute: outbound calls from devices (toll-fraud gate, transforms, DNC, geo, ACL, limits, caller-ID, routes). */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Platform } from "../platform.ts";
import { storeKind, testPlatform } from "../../../test/support/platform.ts";
import { addToDnc } from "../dnc/dnc.service.ts";
import { decideRoute } from "./decide.ts";
import { admitCall } from "../calls/admission.ts";
import { routeFixture, testDeps } from "./decide.fixture.ts";
import type { RouteRequest } from "./route-types.ts";
import { applyTrunkRegistration } from "../presence/presence.service.ts";
import { recordTrunkProbes } from "../trunks/trunk-health.ts";
import { sipTrunks } from "../trunks/trunks.schema.ts";
import { eq } from "drizzle-orm";

let platform: Platform;
beforeAll(async () => {
  platform = await testPlatform();
});
afterAll(() => platform.close());

let n = 0;
const steps = (d: { trace: Array<{ step: string; result: string }> }) => d.trace.map((s) => `${s.step}: ${s.result}`).join("\n");

async function caller(accountPatch: Parameters<typeof routeFixture>[1] = {}, userPatch: Record<string, unknown> = {}) {
  const f = await routeFixture(platform, accountPatch);
  const user = await f.user({ username: "1001", ...userPatch });
  const device = await f.device(user);
  const dial = (to: string, extra: Partial<RouteRequest> & Record<string, unknown> = {}): RouteRequest => ({
    callId: `o${++n}-${Date.now()}`,
    from: "1001",
    fromDomain: "r.example",
    to,
    account_id: f.accountId,
    user_id: user,
    device_id: device,
    source_ip: "198.51.100.10",
    ...extra,
  });
  return { f, user, device, dial };
}

describe(`decideRoute outbound [${storeKind}]`, () => {
  test("toll-fraud gate: only an active device of an active account, owned by the user, may call out", async () => {
    const c = await caller();
    const ok = await decideRoute(testDeps(platform), c.dial("+447700900100"));
    expect(ok.reply.rtjson).toMatchObject({ action: "outbound", account_id: c.f.accountId });
    expect(ok.direction).toBe("outbound");
    const other = await caller();
    const cases: Array<[string, RouteRequest]> = [
      ["another account's device", c.dial("447700900100", { device_id: other.device })],
      ["a device of another user", c.dial("447700900100", { user_id: await c.f.user() })],
      ["an unknown account", c.dial("447700900100", { account_id: "acc_nope" })],
    ];
    const disabledDev = await c.f.device(c.user, { status: "disabled" });
    cases.push(["a disabled device", c.dial("447700900100", { device_id: disabledDev })]);
    const offUser = await c.f.user({ status: "disabled" });
    cases.push(["a disabled user", c.dial("447700900100", { user_id: offUser, device_id: await c.f.device(offUser) })]);
    const suspended = await caller({ status: "suspended" });
    cases.push(["a suspended account", suspended.dial("447700900100")]);
    for (const [why, r] of cases) {
      const d = await decideRoute(testDeps(platform), r);
      expect(d.reply.rtjson, why).toMatchObject({ action: "reject", code: 403 });
      expect(d.slots, why).toEqual([]);
    }
  });

  test("number transforms by scope in order, stop_on_match; a non-E.164 result is 484", async () => {
    const c = await caller();
    await c.f.transform({ direction: "outbound_dst", match_regex: "^00(\\d+)$", replacement: "$1", ordering: 5, stop_on_match: 1 });
    await c.f.transform({ direction: "outbound_dst", match_regex: "^0(\\d{10})$", replacement: "44$1", ordering: 10 });
    await c.f.transform({ direction: "outbound_dst", match_regex: "^44(\\d+)$", replacement: "44$1", ordering: 20 }); // runs after the 0 rule
    const national = await decideRoute(testDeps(platform), c.dial("07700900200"));
    expect(national.to).toBe("447700900200");
    expect(national.reply.rtjson.routes![0]!.uri).toBe("sip:447700900200@carrier.example.net:5060");
    expect(steps(national)).toContain("07700900200 → 447700900200");
    const intl = await decideRoute(testDeps(platform), c.dial("0033612345678"));
    expect(intl.to).toBe("33612345678");
    expect(intl.trace.filter((s) => s.step === "transform")).toHaveLength(1); // stop_on_match
    expect((await decideRoute(testDeps(platform), c.dial("12"))).reply.rtjson.code).toBe(484);
  });

  test("an outbound_dst transform that writes the number with its + (^0(\\d{10})$ → +44$1) gives that number, not a 484", async () => {
    const c = await caller();
    await c.f.transform({ direction: "outbound_dst", match_regex: "^0(\\d{10})$", replacement: "+44$1" });
    await c.f.phoneList("dnc_out", ["447700900299"]);
    const d = await decideRoute(testDeps(platform), c.dial("07700900298"));
    expect(d.reply.rtjson.action, steps(d)).toBe("outbound");
    expect(d.to).toBe("447700900298");
    expect(d.reply.rtjson.routes![0]!.uri).toBe("sip:447700900298@carrier.example.net:5060");
    expect(d.reply.rtjson.vars.country).toBe("GB");
    // The number is compared with the lists without its +.
    expect((await decideRoute(testDeps(platform), c.dial("07700900299"))).reply.rtjson.code).toBe(603);
  });

  test("a number dialled with its + is international already: national-format transforms leave it alone", async () => {
    const c = await caller();
    // The usual North American rule: ten digits get the country code.
    await c.f.transform({ direction: "outbound_dst", match_regex: "^(\\d{10})$", replacement: "1$1" });
    expect((await decideRoute(testDeps(platform), c.dial("2125550123"))).to).toBe("12125550123");
    const berlin = await decideRoute(testDeps(platform), c.dial("+4930123456"));
    expect(berlin.to).toBe("4930123456");
    expect(berlin.reply.rtjson.vars.country).toBe("DE");
    expect(steps(berlin)).toContain("international form");
    expect((await decideRoute(testDeps(platform), c.dial("sip:+4930123456"))).to).toBe("4930123456");
  });

  test("DNC: a dnc_out phone list (account or user scope) and the /v1 dnc list refuse 603; an allow list wins", async () => {
    const c = await caller();
    await c.f.phoneList("dnc_out", ["447700900301"]);
    await c.f.phoneList("dnc_out", ["447700900302"], { scope_kind: "user", scope_id: c.user });
    const otherUser = await c.f.user();
    await c.f.phoneList("dnc_out", ["447700900303"], { scope_kind: "user", scope_id: otherUser });
    await addToDnc(platform.db, c.f.accountId, { numbers: ["+447700900304"] });
    for (const to of ["447700900301", "447700900302", "447700900304"]) {
      const d = await decideRoute(testDeps(platform), c.dial(to));
      expect(d.reply.rtjson, to).toMatchObject({ action: "reject", code: 603 });
      expect(d.reply.rtjson.reason).toBe("Decline");
      expect(steps(d)).toContain("dnc:");
    }
    expect((await decideRoute(testDeps(platform), c.dial("447700900303"))).reply.rtjson.action).toBe("outbound");
    await c.f.phoneList("allow", ["447700900304"]);
    expect((await decideRoute(testDeps(platform), c.dial("447700900304"))).reply.rtjson.action).toBe("outbound");
    const other = await caller();
    expect((await decideRoute(testDeps(platform), other.dial("447700900301"))).reply.rtjson.action).toBe("outbound");
  });

  test("DNC: a number dialled with the trunk 0 after its country code ((0), or a bare 0 where no number begins with 0) is the listed number", async () => {
    const c = await caller();
    await c.f.transform({ direction: "outbound_dst", match_regex: "^00(\\d+)$", replacement: "$1" });
    await c.f.phoneList("dnc_out", ["442071230000"]);
    await addToDnc(platform.db, c.f.accountId, { numbers: ["+44 (0)20 7946 0000"] });
    for (const to of ["+44 (0)20 7123 0000", "+4402071230000", "tel:+44-(0)20-7123-0000", "004402071230000", "+44 (0)20 7946 0000", "+4402079460000"]) {
      const d = await decideRoute(testDeps(platform), c.dial(to));
      expect(d.reply.rtjson, `${to}\n${steps(d)}`).toMatchObject({ action: "reject", code: 603 });
      expect(d.to, to).toMatch(/^44207(123|946)0000$/);
    }
    // Italy keeps its 0 after +39: it is part of the number.
    const rome = await decideRoute(testDeps(platform), c.dial("+39 06 6981 2345"));
    expect(rome.to).toBe("390669812345");
  });

  test("geo policies: an allowlist refuses other countries, a denylist its own", async () => {
    const c = await caller();
    await c.f.geo("allowlist", ["GB", "US"]);
    expect((await decideRoute(testDeps(platform), c.dial("447700900400"))).reply.rtjson.action).toBe("outbound");
    const fr = await decideRoute(testDeps(platform), c.dial("33612345678"));
    expect(fr.reply.rtjson).toMatchObject({ action: "reject", code: 403 });
    expect(steps(fr)).toContain("refuses FR");
    const d = await caller();
    await d.f.geo("denylist", ["CA"], { scope_kind: "user", scope_id: d.user });
    expect((await decideRoute(testDeps(platform), d.dial("14165550100"))).reply.rtjson.code).toBe(403);
    expect((await decideRoute(testDeps(platform), d.dial("14155550100"))).reply.rtjson.action).toBe("outbound");
  });

  test("geo policies tell apart territories that share a calling code (Jersey, Guernsey, Isle of Man in +44); ZZ names numbers of no country", async () => {
    const c = await caller();
    await c.f.geo("denylist", ["JE", "GG", "IM"]);
    for (const to of ["447797712345", "441534123456", "447781123456", "441481256789", "447624123456", "441624756789"]) {
      const d = await decideRoute(testDeps(platform), c.dial(to));
      expect(d.reply.rtjson, `${to}\n${steps(d)}`).toMatchObject({ action: "reject", code: 403 });
    }
    expect((await decideRoute(testDeps(platform), c.dial("447700900400"))).reply.rtjson.action).toBe("outbound");
    // A denylist without ZZ lets numbers of no country through (satellite networks, international premium rate); with it, not.
    expect((await decideRoute(testDeps(platform), c.dial("881612345678"))).reply.rtjson.action).toBe("outbound");
    const z = await caller();
    await z.f.geo("denylist", ["ZZ"]);
    for (const to of ["881612345678", "882345678901", "979123456789", "870772001234"]) {
      const d = await decideRoute(testDeps(platform), z.dial(to));
      expect(d.reply.rtjson, to).toMatchObject({ action: "reject", code: 403 });
      expect(steps(d), to).toContain("refuses ZZ (no country)");
    }
    expect((await decideRoute(testDeps(platform), z.dial("447700900400"))).reply.rtjson.action).toBe("outbound");
    // An allowlist of JE reaches Jersey, not the rest of +44.
    const j = await caller();
    await j.f.geo("allowlist", ["JE"]);
    expect((await decideRoute(testDeps(platform), j.dial("441534123456"))).reply.rtjson.action).toBe("outbound");
    expect((await decideRoute(testDeps(platform), j.dial("442071230000"))).reply.rtjson.code).toBe(403);
  });

  test("routes and caller-ID rules for GB still serve Jersey, Guernsey and the Isle of Man (in +44); a JE one is preferred for Jersey", async () => {
    const c = await caller();
    const uk = await c.f.trunk({ name: "uk", proxy: "uk.example.net" });
    await c.f.route({ via: "trunk", trunk_id: uk, match_country: "GB", priority: 1 });
    await c.f.cidRule({ cid_number: "442071230000", match_country: "GB" });
    for (const to of ["441534123456", "447797712345", "441624756789", "442071239999"]) {
      const d = await decideRoute(testDeps(platform), c.dial(to));
      expect(d.trunkId, `${to}\n${steps(d)}`).toBe(uk);
      expect(d.from, to).toBe("442071230000");
    }
    const jersey = await c.f.trunk({ name: "jersey", proxy: "je.example.net" });
    await c.f.route({ via: "trunk", trunk_id: jersey, match_country: "JE", priority: 9 });
    await c.f.cidRule({ cid_number: "441534000000", match_country: "JE", priority: 9 });
    const d = await decideRoute(testDeps(platform), c.dial("441534123456"));
    expect(d.trunkId).toBe(jersey);
    expect(d.from).toBe("441534000000");
    expect((await decideRoute(testDeps(platform), c.dial("442071239999"))).trunkId).toBe(uk);
  });

  test("ACL rules: ip_deny refuses, ip_allow must match, geo rules use source_country when the edge sends it", async () => {
    const c = await caller();
    await c.f.aclRule({ rule_type: "ip_allow", value: "198.51.100.0/24" });
    await c.f.aclRule({ rule_type: "ip_deny", value: "198.51.100.66/32" });
    expect((await decideRoute(testDeps(platform), c.dial("447700900500"))).reply.rtjson.action).toBe("outbound");
    expect((await decideRoute(testDeps(platform), c.dial("447700900500", { source_ip: "198.51.100.66" }))).reply.rtjson.code).toBe(403);
    expect((await decideRoute(testDeps(platform), c.dial("447700900500", { source_ip: "203.0.113.1" }))).reply.rtjson.code).toBe(403);
    await c.f.aclRule({ rule_type: "geo_deny", value: "KP" });
    expect((await decideRoute(testDeps(platform), c.dial("447700900500", { source_country: "kp" }))).reply.rtjson.code).toBe(403);
    const noCountry = await decideRoute(testDeps(platform), c.dial("447700900500"));
    expect(noCountry.reply.rtjson.action).toBe("outbound");
    expect(steps(noCountry)).toContain("geo rules skipped");
  });

  test("ACL rules hold for every call a device places: an extension, a user, a feature code, not only a number outside", async () => {
    const c = await caller();
    const bob = await c.f.user({ username: "1002" });
    await c.f.device(bob);
    await c.f.extension({ digits: "200", dest_kind: "user", dest_id: bob });
    await c.f.extension({ digits: "*97", dest_kind: "feature", dest_id: "voicemail_main" });
    await c.f.aclRule({ scope_kind: "user", scope_id: c.user, rule_type: "ip_allow", value: "10.0.0.0/8" });
    for (const to of ["200", "1002", "*97", "447700900500"]) {
      const d = await decideRoute(testDeps(platform), c.dial(to, { source_ip: "192.0.2.1" }));
      expect(d.reply.rtjson, to).toMatchObject({ action: "reject", code: 403 });
      expect(steps(d), to).toContain("192.0.2.1 not in any ip_allow rule");
      expect(d.direction, to).toBe(to === "447700900500" ? "outbound" : "internal");
    }
    // From inside the range: through the ACL to the usual decision.
    expect((await decideRoute(testDeps(platform), c.dial("200", { source_ip: "10.1.2.3" }))).reply.rtjson.code).not.toBe(403);
    // Another user's rule is not this caller's.
    const other = await caller();
    await other.f.aclRule({ scope_kind: "user", scope_id: "us_someone_else", rule_type: "ip_deny", value: "0.0.0.0/0" });
    expect((await decideRoute(testDeps(platform), other.dial("447700900500"))).reply.rtjson.action).toBe("outbound");
  });

  test("call limits: hard per-period refuses past max_count; soft lets through with a warning; concurrent → CAC ceiling", async () => {
    const c = await caller({ max_out: 20 }, { max_simultaneous: 3 });
    // The soft one first: the order they are stored in does not decide which counts a refused call.
    await c.f.callLimit({ direction: "any", period_sec: 60, max_count: 2, hard: 0 });
    await c.f.callLimit({ direction: "out", period_sec: 60, max_count: 1, hard: 1, scope_kind: "user", scope_id: c.user });
    await c.f.callLimit({ direction: "out", max_count: 5, hard: 1 });
    const warned = (d: Awaited<ReturnType<typeof decideRoute>>) => d.trace.find((s) => s.step === "call_limit" && s.result.startsWith("warning"))?.result;
    const first = await decideRoute(testDeps(platform), c.dial("447700900600"));
    expect(first.reply.rtjson.action).toBe("outbound");
    expect(warned(first)).toBeUndefined();
    expect(first.slots).toContainEqual({ level: "account_out", id: c.f.accountId, limit: 5 });
    expect(first.slots).toContainEqual({ level: "user", id: c.user, limit: 3 });
    const second = await decideRoute(testDeps(platform), c.dial("447700900601"));
    expect(second.reply.rtjson).toMatchObject({ action: "reject", code: 403 });
    // Another user of the account is not limited by the first user's policy. The soft limit counted the
    // first call and this one, not the one the hard limit refused: the next is its first over the limit.
    const u2 = await c.f.user();
    const d2 = await c.f.device(u2);
    const third = await decideRoute(testDeps(platform), c.dial("447700900602", { user_id: u2, device_id: d2 }));
    expect(third.reply.rtjson.action).toBe("outbound");
    expect(warned(third)).toBeUndefined();
    const fourth = await decideRoute(testDeps(platform), c.dial("447700900603", { user_id: u2, device_id: d2 }));
    expect(fourth.reply.rtjson.action).toBe("outbound");
    expect(warned(fourth)).toContain("(2 calls in the last 60s, limit 2)");
    // A call over the limit is not added: the set holds at most max_count calls.
    const fifth = await decideRoute(testDeps(platform), c.dial("447700900604", { user_id: u2, device_id: d2 }));
    expect(warned(fifth)).toContain("(2 calls in the last 60s, limit 2)");
  });

  test("caller-ID: user rule > account rule for the country > user out_cid > account rule for any > default", async () => {
    const c = await caller({ default_cid_number: "14155550000" }, { out_cid_number: "14155550001", out_cid_name: "Alice" });
    const from = async (to: string) => (await decideRoute(testDeps(platform), c.dial(to))).reply.rtjson.routes![0]!.headers!.from;
    expect(await from("447700900700")).toEqual({ uri: "sip:14155550001@carrier.example.net", display: "\"Alice\"" });
    await c.f.cidRule({ cid_number: "14155550002", priority: 1 });
    expect((await from("447700900700"))!.uri).toBe("sip:14155550001@carrier.example.net"); // out_cid beats an any-country account rule
    await c.f.cidRule({ cid_number: "442071230000", cid_name: "Acme UK", match_country: "GB" });
    expect(await from("447700900700")).toEqual({ uri: "sip:442071230000@carrier.example.net", display: "\"Acme UK\"" });
    // A name with a comma or a quote stays one quoted display name (unquoted, the From would not parse).
    await c.f.cidRule({ cid_number: "442071230001", cid_name: 'Acme, "UK" \\ Ltd', match_country: "GB", priority: 0 });
    expect((await from("447700900700"))!.display).toBe('"Acme, \\"UK\\" \\\\ Ltd"');
    expect((await from("14155550100"))!.uri).toBe("sip:14155550001@carrier.example.net");
    await c.f.cidRule({ cid_number: "14155550003", scope_kind: "user", scope_id: c.user });
    expect((await from("447700900700"))!.uri).toBe("sip:14155550003@carrier.example.net");
    const bare = await caller({ default_cid_number: "14155550000" });
    expect((await decideRoute(testDeps(platform), bare.dial("447700900700"))).reply.rtjson.routes![0]!.headers!.from!.uri).toBe("sip:14155550000@carrier.example.net");
  });

  test("the account's outbound_cid transforms apply to the caller-ID a leg falls back to (the trunk's cid_number, the From)", async () => {
    const c = await caller();
    const uk = await c.f.trunk({ name: "uk", proxy: "uk.example.net", cid_number: "02071230000" });
    await c.f.route({ via: "trunk", trunk_id: uk, match_prefix: "44", priority: 1 });
    await c.f.transform({ direction: "outbound_cid", match_regex: "^0", replacement: "44" });
    const viaTrunk = await decideRoute(testDeps(platform), c.dial("442071239999"));
    expect(viaTrunk.reply.rtjson.routes![0]!.headers!.from!.uri).toBe("sip:442071230000@uk.example.net");
    const viaCarrier = await decideRoute(testDeps(platform), c.dial("14155550100", { from: "02079460000" }));
    expect(viaCarrier.reply.rtjson.routes![0]!.headers!.from!.uri).toBe("sip:442079460000@carrier.example.net");
  });

  test("a concurrent call limit of direction any is one counter for both directions", async () => {
    const c = await caller();
    const any = await c.f.callLimit({ direction: "any", max_count: 1, hard: 1 });
    const out = await decideRoute(testDeps(platform), c.dial("447700900100"));
    expect(out.slots).toContainEqual({ level: "call_limit", id: any, limit: 1 });
    const flow = await c.f.flow();
    const did = await c.f.number({ dest_kind: "flow", dest_id: flow });
    const inboundReq: RouteRequest = { callId: `i${++n}`, from: "14155550000", fromDomain: "carrier.example", to: did.e164, source_ip: "192.0.2.10" };
    const inbound = await decideRoute(testDeps(platform), inboundReq);
    expect(inbound.slots).toContainEqual({ level: "call_limit", id: any, limit: 1 });
    // Admitted: the outbound call holds the one place; the inbound call finds it taken.
    expect((await admitCall(platform, out, c.dial("447700900100", { callId: `held-${n}` }))).rtjson.action).toBe("outbound");
    const refused = await admitCall(platform, inbound, inboundReq);
    expect(refused.rtjson).toMatchObject({ action: "reject", code: 503, vars: { cac_level: "call_limit", cac_id: any } });
  });

  test("routes: longest prefix wins; equal prefixes fail over serially by priority; unusable trunks are skipped", async () => {
    const c = await caller({ max_out: 9 });
    const uk = await c.f.trunk({ name: "uk", proxy: "uk.example.net:5070", transport: "tcp", max_channels: 4, from_domain: "acme.uk", cid_number: "442000000000" });
    const uk2 = await c.f.trunk({ name: "uk2", proxy: "10.9.9.9" });
    const dead = await c.f.trunk({ name: "dead", proxy: "dead.example", status: "disabled" });
    const mobile = await c.f.trunk({ name: "mobile", proxy: "mobile.example" });
    await c.f.route({ via: "trunk", trunk_id: uk2, match_prefix: "44", priority: 20 });
    await c.f.route({ via: "trunk", trunk_id: uk, match_prefix: "44", priority: 10 });
    await c.f.route({ via: "trunk", trunk_id: dead, match_prefix: "44", priority: 5 });
    await c.f.route({ via: "trunk", trunk_id: mobile, match_prefix: "447", priority: 50 });
    await c.f.route({ via: "carrier", match_country: "DE", priority: 1 });
    await c.f.transform({ scope_kind: "trunk", scope_id: uk, direction: "outbound_dst", match_regex: "^44", replacement: "0" });
    const land = await decideRoute(testDeps(platform), c.dial("442071230000"));
    expect(land.reply.rtjson.routing).toBe("serial");
    expect(land.reply.rtjson.routes!.map((r) => r.uri)).toEqual(["sip:02071230000@uk.example.net:5070;transport=tcp", "sip:442071230000@10.9.9.9"]);
    expect(land.reply.rtjson.routes![0]!.headers!.from!.uri).toBe("sip:442000000000@acme.uk"); // trunk cid_number, no better one
    expect(land.trunkId).toBe(uk);
    expect(land.slots).toEqual([
      { level: "account_out", id: c.f.accountId, limit: 9 },
      { level: "user", id: c.user, limit: 2 },
      { level: "trunk", id: uk, limit: 4 },
    ]);
    expect(steps(land)).toContain("unusable (disabled)");
    const mob = await decideRoute(testDeps(platform), c.dial("447700900800"));
    expect(mob.reply.rtjson.routes!.map((r) => r.uri)).toEqual(["sip:447700900800@mobile.example"]);
    const de = await decideRoute(testDeps(platform), c.dial("4930123456"));
    expect(de.reply.rtjson.routes!.map((r) => r.uri)).toEqual(["sip:4930123456@carrier.example.net:5060"]);
    // No matching route: the carrier default, or 503 without one.
    const us = await decideRoute(testDeps(platform), c.dial("14155550100"));
    expect(us.reply.rtjson.routes!.map((r) => r.uri)).toEqual(["sip:14155550100@carrier.example.net:5060"]);
    const noCarrier = await decideRoute(testDeps(platform, { settings: { carrierUri: null } }), c.dial("14155550100"));
    expect(noCarrier.reply.rtjson).toMatchObject({ action: "reject", code: 503 });
    expect(noCarrier.slots).toEqual([]);
  });

  test("a trunk with credentials marks its route for the edge's answer to its challenge; its from_user is the From, the caller-ID goes in P-Asserted-Identity", async () => {
    const c = await caller();
    const signed = await c.f.trunk({ name: "signed", proxy: "sip.carrier.example", auth_username: "acct-77", auth_secret_ref: "sec_placeholder", from_user: "acct-77", cid_number: "442000000000" });
    const userOnly = await c.f.trunk({ name: "user-only", proxy: "other.example", auth_username: "acct-78" });
    await c.f.route({ via: "trunk", trunk_id: signed, match_prefix: "44", priority: 10 });
    await c.f.route({ via: "trunk", trunk_id: userOnly, match_prefix: "44", priority: 20 });
    const d = await decideRoute(testDeps(platform), c.dial("442071230000"));
    const [first, second] = d.reply.rtjson.routes!;
    expect(first!.auth_trunk).toBe(signed);
    expect(first!.headers!.from!.uri).toBe("sip:acct-77@sip.carrier.example");
    expect(first!.headers!.extra).toContain("P-Asserted-Identity: <sip:442000000000@sip.carrier.example>\r\n");
    // A username without a password cannot answer a challenge; without from_user the caller-ID is the From.
    expect(second!.auth_trunk).toBeUndefined();
    expect(second!.headers!.from!.uri).toMatch(/^sip:\d+@other\.example$/);
    expect(second!.headers!.extra).not.toContain("P-Asserted-Identity");
  });

  test("routes: when every trunk of the most specific routes is unusable, a less specific route takes the call, then the carrier default", async () => {
    const c = await caller();
    const uk = await c.f.trunk({ name: "uk", proxy: "uk.example.net" });
    const london = await c.f.trunk({ name: "london", proxy: "london.example.net", status: "disabled" });
    await c.f.route({ via: "trunk", trunk_id: uk, match_prefix: "44", priority: 10 });
    await c.f.route({ via: "trunk", trunk_id: london, match_prefix: "4420", priority: 5 });
    const d = await decideRoute(testDeps(platform), c.dial("442071234567"));
    expect(d.reply.rtjson.routes!.map((r) => r.uri)).toEqual(["sip:442071234567@uk.example.net"]);
    expect(d.trunkId).toBe(uk);
    expect(steps(d)).toContain("trunk london unusable (disabled)");
    // Both unusable: the carrier default, or 503 without one.
    const e = await caller();
    const off = await e.f.trunk({ name: "off", proxy: "off.example.net", status: "disabled" });
    await e.f.route({ via: "trunk", trunk_id: off, match_prefix: "44", priority: 1 });
    const carrier = await decideRoute(testDeps(platform), e.dial("442071234567"));
    expect(carrier.reply.rtjson.routes!.map((r) => r.uri)).toEqual(["sip:442071234567@carrier.example.net:5060"]);
    expect(steps(carrier)).toContain("no usable route → carrier default");
    const none = await decideRoute(testDeps(platform, { settings: { carrierUri: null } }), e.dial("442071234567"));
    expect(none.reply.rtjson).toMatchObject({ action: "reject", code: 503 });
  });
});

describe(`decideRoute outbound through trunks' live state [${storeKind}]`, () => {
  test("a trunk that registers to us (inbound_auth register) is reached at its live registrations, the latest to expire first, with what reaches them; not registered, its proxy, else the next route", async () => {
    const c = await caller();
    const pbx = await c.f.trunk({ name: "pbx", inbound_auth: "register", inbound_username: `pbx-${c.f.accountId}`, max_channels: 3 });
    const backup = await c.f.trunk({ name: "backup", proxy: "backup.example" });
    await c.f.route({ via: "trunk", trunk_id: pbx, match_prefix: "1555", priority: 1 });
    await c.f.route({ via: "trunk", trunk_id: backup, match_prefix: "1555", priority: 2 });
    const unregistered = await decideRoute(testDeps(platform), c.dial("15550001111"));
    expect(unregistered.reply.rtjson.routes!.map((r) => r.uri)).toEqual(["sip:15550001111@backup.example"]);
    expect(steps(unregistered)).toContain("trunk pbx unusable (not registered)");

    const now = Date.now();
    await applyTrunkRegistration(platform.live, { account_id: c.f.accountId, trunk_id: pbx, contact: "sip:pbx@10.1.1.1:5060", expires: 600, received: "sip:203.0.113.8:40000", socket: "udp:10.0.0.1:5060" }, now - 1000);
    await applyTrunkRegistration(platform.live, { account_id: c.f.accountId, trunk_id: pbx, contact: "sip:pbx@10.1.1.2:5060;transport=tcp", expires: 900 }, now);
    const d = await decideRoute(testDeps(platform), c.dial("15550001112"));
    expect(d.reply.rtjson.routes!.map((r) => [r.uri, r.dst_uri, r.socket])).toEqual([
      ["sip:15550001112@10.1.1.2:5060;transport=tcp", undefined, undefined],
      ["sip:15550001112@10.1.1.1:5060", "sip:203.0.113.8:40000", "udp:10.0.0.1:5060"],
      ["sip:15550001112@backup.example", undefined, undefined],
    ]);
    // Each registration is a leg of the same trunk: its ceiling counts once, and a full trunk fails over past all of them.
    expect(d.slots).toContainEqual({ level: "trunk", id: pbx, limit: 3 });
    expect(d.legs?.map((l) => l.trunk?.id)).toEqual([pbx, pbx, backup]);
    expect(steps(d)).toContain("→ trunk pbx (2 registrations)");
  });

  test("a probed trunk (ping_sec) that stopped answering OPTIONS is tried after those that answer; its group only when no group answers; a stale record or an unprobed trunk is never down", async () => {
    const c = await caller();
    const a = await c.f.trunk({ name: "a", proxy: "a.example", ping_sec: 10 });
    const b = await c.f.trunk({ name: "b", proxy: "b.example", ping_sec: 10 });
    const wide = await c.f.trunk({ name: "wide", proxy: "wide.example" });
    await c.f.route({ via: "trunk", trunk_id: a, match_prefix: "4420", priority: 1 });
    await c.f.route({ via: "trunk", trunk_id: b, match_prefix: "4420", priority: 2 });
    await c.f.route({ via: "trunk", trunk_id: wide, match_prefix: "44", priority: 1 });
    const uris = async (to: string) => (await decideRoute(testDeps(platform), c.dial(to))).reply.rtjson.routes!.map((r) => r.uri.replace(/^sip:\d+@/, ""));
    expect(await uris("442071230001")).toEqual(["a.example", "b.example"]);
    const now = Date.now();
    // One unanswered probe is not an outage; two are.
    await recordTrunkProbes(platform.live, c.f.accountId, [{ trunk_id: a, code: 408, node: "edge-1", at: now }]);
    expect(await uris("442071230002")).toEqual(["a.example", "b.example"]);
    await recordTrunkProbes(platform.live, c.f.accountId, [{ trunk_id: a, code: 408, node: "edge-1", at: now }]);
    const d = await decideRoute(testDeps(platform), c.dial("442071230003"));
    expect(d.reply.rtjson.routes!.map((r) => r.uri.replace(/^sip:\d+@/, ""))).toEqual(["b.example", "a.example"]);
    expect(d.trunkId).toBe(b);
    expect(steps(d)).toMatch(/trunk a \(proxy\): not answering OPTIONS since/);
    // Both down: the less specific group that answers is taken.
    await recordTrunkProbes(platform.live, c.f.accountId, [0, 1].map(() => ({ trunk_id: b, code: 503, node: "edge-1", at: now })));
    expect(await uris("442071230004")).toEqual(["wide.example"]);
    // Nothing answers (wide is disabled): the down trunks are tried anyway.
    await platform.db.update(sipTrunks).set({ status: "disabled" }).where(eq(sipTrunks.id, wide));
    const anyway = await decideRoute(testDeps(platform), c.dial("442071230005"));
    expect(anyway.reply.rtjson.routes!.map((r) => r.uri.replace(/^sip:\d+@/, ""))).toEqual(["a.example", "b.example"]);
    expect(steps(anyway)).toContain("every usable trunk stopped answering OPTIONS: tried anyway");
    // An answer brings a back; a record the pings stopped refreshing says nothing.
    await recordTrunkProbes(platform.live, c.f.accountId, [{ trunk_id: a, code: 200, node: "edge-1", at: now }]);
    expect(await uris("442071230006")).toEqual(["a.example", "b.example"]);
    const later = await decideRoute(testDeps(platform, { now: new Date(now + 60_000) }), c.dial("442071230007"));
    expect(later.reply.rtjson.routes!.map((r) => r.uri.replace(/^sip:\d+@/, ""))).toEqual(["a.example", "b.example"]);
  });
});

describe(`decideRoute emergency numbers [${storeKind}]`, () => {
  test("an emergency number goes out as dialled, past an extension of its digits, DNC, geo, call limits and capacity ceilings, with the callback number", async () => {
    const c = await caller({ max_out: 0, default_cid_number: "14155560100" }, { max_simultaneous: 1, out_cid_number: "14155560142" });
    await c.f.extension({ digits: "911", dest_kind: "hangup" });
    await c.f.phoneList("dnc_out", ["911"]);
    await c.f.geo("allowlist", ["GB"]);
    await c.f.callLimit({ direction: "out", period_sec: 3600, max_count: 0, hard: 1 });
    await c.f.callLimit({ direction: "any", max_count: 0, hard: 1 });
    // A rule for a destination country does not take 911 for India's +91.
    await c.f.cidRule({ cid_number: "919800000001", match_country: "IN", priority: 1 });
    await c.f.route({ via: "carrier", match_country: "IN", priority: 1 });
    // Nor does a route for India's prefix 91 take it.
    const india = await c.f.trunk({ name: "india", proxy: "10.9.1.1:5060" });
    await c.f.route({ via: "trunk", trunk_id: india, match_prefix: "91", priority: 1 });
    const d = await decideRoute(testDeps(platform), c.dial("911", { privacy: "id" }));
    expect(d.reply.rtjson, steps(d)).toMatchObject({ action: "outbound" });
    expect(d.reply.rtjson.routes![0]).toMatchObject({ uri: "sip:911@carrier.example.net:5060", headers: { from: { uri: "sip:14155560142@carrier.example.net" } } });
    expect(d.reply.rtjson.vars).toMatchObject({ emergency: 1, country: null, direction: "outbound" });
    expect(d.slots).toEqual([]);
    expect(steps(d)).toContain("classify: emergency call from 1001");
    expect(steps(d)).toContain("(not the account's extension of that name)");
    // A route for the number itself comes first; one for other numbers never.
    const trunk = await c.f.trunk({ name: "psap", proxy: "10.9.9.9:5060", max_channels: 2 });
    // A route for the number counts whatever country it names.
    await c.f.route({ via: "trunk", trunk_id: trunk, match_prefix: "911", match_country: "US", priority: 5 });
    // A trunk's destination transform (E.164 with +) would make 911 India's +911: not applied.
    await c.f.transform({ scope_kind: "trunk", scope_id: trunk, direction: "outbound_dst", match_regex: "^(\\d+)$", replacement: "+$1" });
    await c.f.route({ via: "carrier", match_prefix: "1", priority: 1 });
    const routed = await decideRoute(testDeps(platform), c.dial("911"));
    expect(routed.reply.rtjson.routes!.map((r) => r.uri)).toEqual(["sip:911@10.9.9.9:5060"]);
    expect(routed.slots).toEqual([{ level: "trunk", id: trunk, limit: 2 }]);
    // Dialled with a +: an ordinary number (too short to go out). Not in EMERGENCY_NUMBERS: the
    // account's extension 911 (which hangs up).
    expect((await decideRoute(testDeps(platform), c.dial("+911"))).reply.rtjson).toMatchObject({ action: "reject", code: 484 });
    const none = testDeps(platform, { settings: { emergencyNumbers: [] } });
    const internal = await decideRoute(none, c.dial("911"));
    expect(internal.reply.rtjson).toMatchObject({ action: "reject", vars: { direction: "internal" } });
    expect(steps(internal)).toContain("extension: 911");
    // No route and no carrier default: 503, and the trace says what to add.
    const bare = await caller();
    const stuck = await decideRoute(testDeps(platform, { settings: { carrierUri: null } }), bare.dial("112"));
    expect(stuck.reply.rtjson).toMatchObject({ action: "reject", code: 503 });
    expect(steps(stuck)).toContain("no outbound route for 112: add one with match_prefix 112");
  });

  test("a PBX's emergency call goes out through the account's routes; the caller-ID is the number it sent", async () => {
    const c = await caller({ max_out: 0 });
    const pbx = await c.f.trunk({ name: "office", role: "pbx", inbound_auth: "register", inbound_username: `pbx-e-${c.f.accountId}` });
    await c.f.extension({ digits: "112", dest_kind: "hangup" });
    const d = await decideRoute(testDeps(platform), { callId: `e-${Date.now()}`, from: "14155560177", fromDomain: "pbx.example", to: "112", account_id: c.f.accountId, trunk_id: pbx, source_ip: "198.51.100.20" } as RouteRequest);
    expect(d.reply.rtjson, steps(d)).toMatchObject({ action: "outbound", vars: { emergency: 1 } });
    expect(d.reply.rtjson.routes![0]!.headers!.from).toEqual({ uri: "sip:14155560177@carrier.example.net" });
    expect(steps(d)).toContain("classify: emergency call from PBX trunk office");
  });
});
