/** decideRoute: classification, inbound DIDs and internal calls (outbound in decide-outbound.test.ts). */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Platform } from "../platform.ts";
import { storeKind, testPlatform } from "../../../test/support/platform.ts";
import { decideRoute } from "./decide.ts";
import { admitCall } from "../calls/admission.ts";
import { MAX_SOURCE_TRUNKS } from "./decide.store.ts";
import { contact, freshE164, routeFixture, testDeps } from "./decide.fixture.ts";
import type { RouteRequest } from "./route-types.ts";
import { sipDomains } from "../sip-domains/sip-domains.schema.ts";
import { nowSeconds } from "../db/columns.ts";
import { callLimits } from "../policies/policies.schema.ts";
import { eq } from "drizzle-orm";
import { DEFAULT_REALM_SUFFIX, defaultRealm } from "../devices/realm.ts";

let platform: Platform;
beforeAll(async () => {
  platform = await testPlatform();
});
afterAll(() => platform.close());

const CARRIER_IP = "192.0.2.10";
let n = 0;
const req = (patch: Partial<RouteRequest> & Record<string, unknown>): RouteRequest => ({ callId: `c${++n}-${Date.now()}`, from: "14155550000", fromDomain: "carrier.example", to: "", ...patch });
const steps = (d: { trace: Array<{ step: string; result: string }> }) => d.trace.map((s) => `${s.step}: ${s.result}`).join("\n");

describe(`decideRoute classification [${storeKind}]`, () => {
  test("an unknown source that is not authenticated is asked for credentials (407), nothing recorded", async () => {
    const d = await decideRoute(testDeps(platform), req({ to: "14155550100", source_ip: "198.51.100.99" }));
    expect(d.reply.rtjson).toMatchObject({ action: "reject", code: 407, account_id: null });
    expect(d.reply.rtjson.vars.auth_required).toBe(1);
    expect(d.accountId).toBeNull();
    expect(d.slots).toEqual([]);
    expect(steps(d)).toContain("classify: unknown source");
    const none = await decideRoute(testDeps(platform), req({ to: "14155550100" }));
    expect(none.reply.rtjson.code).toBe(407);
  });

  test("a tenant's trunk ACL overlapping the carrier's addresses cannot capture another tenant's DID", async () => {
    const owner = await routeFixture(platform);
    const did = await owner.number({ dest_kind: "hangup" });
    const other = await routeFixture(platform);
    const shared = "192.0.2.77"; // inside the carrier's 192.0.2.0/24; not CARRIER_IP, so other tests stay as they are
    const trunk = await other.trunk({}, [`${shared}/32`]);
    // A trunk is a candidate for a DID of another account only when its transforms might turn the
    // number into one of its own: this one has a transform that leaves the number as it is.
    await other.transform({ scope_kind: "trunk", scope_id: trunk, direction: "inbound_dst", match_regex: "^0", replacement: "44" });
    const d = await decideRoute(testDeps(platform), req({ to: did.e164, source_ip: shared }));
    expect(d.accountId).toBe(owner.accountId);
    expect(d.trunkId).toBeNull();
    expect(d.reply.rtjson).toMatchObject({ action: "reject", code: 603, account_id: owner.accountId });
    // The owner's trace names no other account's trunk.
    expect(steps(d)).not.toContain(trunk);
    expect(steps(d)).toContain(`inbound from the carrier by source ${shared}`);
  });

  test("another tenant's trunk on the carrier's address whose transform rewrites any number into its own DID captures nothing", async () => {
    const owner = await routeFixture(platform);
    const did = await owner.number({ dest_kind: "hangup" });
    const other = await routeFixture(platform);
    const own = await other.number({ dest_kind: "hangup" });
    // Addresses of this run's own (a database kept from an earlier run holds other trunks on fixed ones).
    const shared = `192.0.2.${100 + Math.floor(Math.random() * 150)}`;
    const trunk = await other.trunk({}, [`${shared}/32`]);
    await other.transform({ scope_kind: "trunk", scope_id: trunk, direction: "inbound_dst", match_regex: "^.*$", replacement: own.e164 });
    const d = await decideRoute(testDeps(platform), req({ to: did.e164, source_ip: shared }));
    expect(d.accountId).toBe(owner.accountId);
    expect(d.trunkId).toBeNull();
    expect(steps(d)).not.toContain(trunk);
    // Its own number, and a number that is no DID as dialled, still go through its transform.
    const mine = await decideRoute(testDeps(platform), req({ to: "0800123", source_ip: shared }));
    expect(mine).toMatchObject({ accountId: other.accountId, trunkId: trunk, numberId: own.id });
    // Another tenant's trunk of the same upstream (a shared address that is not the carrier's) neither.
    const upstream = `198.51.100.${10 + Math.floor(Math.random() * 240)}`;
    const ownersTrunk = await owner.trunk({}, [`${upstream}/32`]);
    const othersTrunk = await other.trunk({}, [`${upstream}/32`]);
    await other.transform({ scope_kind: "trunk", scope_id: othersTrunk, direction: "inbound_dst", match_regex: "^.*$", replacement: own.e164 });
    const viaUpstream = await decideRoute(testDeps(platform), req({ to: did.e164, source_ip: upstream }));
    expect(viaUpstream).toMatchObject({ accountId: owner.accountId, trunkId: ownersTrunk, numberId: did.id });
    expect(steps(viaUpstream)).not.toContain(othersTrunk);
  });

  test("the carrier's address → inbound to the DID; an unknown DID is 404", async () => {
    const f = await routeFixture(platform, { max_in: 10 });
    const flow = await f.flow();
    const did = await f.number({ dest_kind: "flow", dest_id: flow, max_channels: 3 });
    const d = await decideRoute(testDeps(platform), req({ to: `+${did.e164}`, source_ip: CARRIER_IP }));
    expect(d.direction).toBe("inbound");
    expect(d.accountId).toBe(f.accountId);
    expect(d.numberId).toBe(did.id);
    const rt = d.reply.rtjson;
    expect(rt).toMatchObject({ action: "flow", account_id: f.accountId, flow_id: flow, version: "1.0", routing: "serial" });
    expect(rt.routes).toHaveLength(2);
    expect(rt.routes![0]!.headers!.extra).toContain(`X-Account-Id: ${f.accountId}\r\n`);
    expect(rt.routes![0]!.headers!.extra).toContain(`X-Flow-Id: ${flow}\r\n`);
    expect(rt.routes![0]!.headers!.extra).toContain(`X-Dest: flow:${flow}\r\n`);
    // A voice number says nothing of fax; a T.38 one tells the media engine (vars and header).
    expect(rt.vars.fax_mode).toBeUndefined();
    expect(rt.routes![0]!.headers!.extra).not.toContain("X-Fax-Mode");
    const faxDid = await f.number({ dest_kind: "flow", dest_id: flow, fax_mode: "t38" });
    const fax = await decideRoute(testDeps(platform), req({ to: faxDid.e164, source_ip: CARRIER_IP }));
    expect(fax.reply.rtjson.vars.fax_mode).toBe("t38");
    expect(fax.reply.rtjson.routes![0]!.headers!.extra).toContain("X-Fax-Mode: t38\r\n");
    expect(rt.routes![0]!.uri).toMatch(new RegExp(`^sip:${did.e164}@10\\.0\\.0\\.[56]:5080$`));
    expect(new Set(rt.routes!.map((r) => r.dst_uri))).toEqual(new Set(["sip:10.0.0.5:5080", "sip:10.0.0.6:5080"]));
    expect(d.slots).toEqual([
      { level: "account_in", id: f.accountId, limit: 10 },
      { level: "number", id: did.id, limit: 3 },
    ]);
    // Other tests' trunks may share the carrier's addresses (the store is shared): each adds a "number" step.
    const stepNames = d.trace.map((s) => s.step);
    expect(stepNames[0]).toBe("classify");
    expect(stepNames.at(-1)).toBe("media_engine");
    expect(new Set(stepNames)).toEqual(new Set(["classify", "number", "media_engine"]));
    const unknown = await decideRoute(testDeps(platform), req({ to: freshE164(), source_ip: CARRIER_IP }));
    expect(unknown.reply.rtjson).toMatchObject({ action: "reject", code: 404 });
  });

  test("a trunk recognized by its ACL: trunk transforms before the lookup, trunk slot, other accounts' DIDs are 404", async () => {
    const f = await routeFixture(platform);
    const other = await routeFixture(platform);
    const flow = await f.flow();
    const did = await f.number({ dest_kind: "flow", dest_id: flow, e164: freshE164("4420") });
    const foreign = await other.number({ dest_kind: "hangup" });
    const trunk = await f.trunk({ name: "pbx", max_channels: 5, inbound_auth: "ip" }, ["203.0.113.0/28"]);
    await f.transform({ scope_kind: "trunk", scope_id: trunk, direction: "inbound_dst", match_regex: "^0(\\d{9,10})$", replacement: "44$1", ordering: 10, stop_on_match: 1 });
    await f.transform({ scope_kind: "trunk", scope_id: trunk, direction: "inbound_dst", match_regex: "^44", replacement: "99", ordering: 20 });
    const national = "0" + did.e164.slice(2);
    const d = await decideRoute(testDeps(platform), req({ to: national, source_ip: "203.0.113.4" }));
    expect(d.reply.rtjson.action).toBe("flow");
    expect(d.trunkId).toBe(trunk);
    expect(d.slots).toContainEqual({ level: "trunk", id: trunk, limit: 5 });
    expect(steps(d)).toContain(`${national} → ${did.e164}`);
    expect(steps(d)).not.toContain("→ 99");
    const cross = await decideRoute(testDeps(platform), req({ to: foreign.e164, source_ip: "203.0.113.4" }));
    expect(cross.reply.rtjson).toMatchObject({ action: "reject", code: 404 });
    // IPv4-mapped IPv6 is the same address.
    const mapped = await decideRoute(testDeps(platform), req({ to: national, source_ip: "::ffff:203.0.113.4" }));
    expect(mapped.reply.rtjson.action).toBe("flow");
    // A trunk the edge authenticated (register/digest) is named by account and trunk id.
    const byId = await decideRoute(testDeps(platform), req({ to: national, account_id: f.accountId, trunk_id: trunk }));
    expect(byId.reply.rtjson.action).toBe("flow");
    // A transform that writes the number with its + finds the DID too (DIDs are stored without it).
    const plus = await f.trunk({ name: "pbx-plus", inbound_auth: "ip" }, ["203.0.113.32/28"]);
    await f.transform({ scope_kind: "trunk", scope_id: plus, direction: "inbound_dst", match_regex: "^0(\\d{9,10})$", replacement: "+44$1" });
    const withPlus = await decideRoute(testDeps(platform), req({ to: national, source_ip: "203.0.113.33" }));
    expect(withPlus.reply.rtjson.action, steps(withPlus)).toBe("flow");
    expect(withPlus.trunkId).toBe(plus);
    const wrongId = await decideRoute(testDeps(platform), req({ to: national, account_id: other.accountId, trunk_id: trunk }));
    expect(wrongId.reply.rtjson).toMatchObject({ action: "reject", code: 403 });
  });

  test("a customer PBX's trunk (role pbx): a DID is inbound; the account's extensions and users are internal; a number goes out under the outbound policies with the caller-ID the PBX sent; a carrier's trunk gets none of that", async () => {
    const f = await routeFixture(platform);
    const alice = await f.user({ username: "alice" });
    const dev = await f.device(alice);
    const flow = await f.flow();
    const did = await f.number({ dest_kind: "flow", dest_id: flow, e164: freshE164("4420") });
    const ext = await f.extension({ digits: "300", dest_kind: "user", dest_id: alice });
    // Ranges of this run's own (a database kept from an earlier run holds other accounts' trunks).
    const net = `198.19.${Math.floor(Math.random() * 250)}`;
    const pbx = await f.trunk({ name: "office", role: "pbx", max_channels: 8, inbound_auth: "ip" }, [`${net}.0/28`]);
    const carrier = await f.trunk({ name: "carrier-in", inbound_auth: "ip" }, [`${net}.16/28`]);
    const out = await f.trunk({ name: "out", proxy: "out.example", max_channels: 20 });
    await f.route({ via: "trunk", trunk_id: out, match_prefix: "44", priority: 1 });
    await f.cidRule({ cid_number: "4930111111", match_country: "DE" });
    await f.phoneList("dnc_out", ["447700900999"]);
    const fromPbx = (to: string, extra: Partial<RouteRequest> = {}) => decideRoute(testDeps(platform, { contacts: { [alice]: [contact(alice, dev, "sip:alice@192.0.2.50:5060")] } }), req({ to, from: "442071110000", fromName: "Front Desk", source_ip: `${net}.2`, transport: "tcp", ...extra }));

    expect((await fromPbx(did.e164)).reply.rtjson).toMatchObject({ action: "flow" });
    const toExt = await fromPbx("300");
    expect(toExt.reply.rtjson).toMatchObject({ action: "proxy" });
    expect(toExt).toMatchObject({ direction: "internal", trunkId: pbx, userId: alice });
    expect(toExt.slots).toContainEqual({ level: "trunk", id: pbx, limit: 8 });
    expect(steps(toExt)).toContain("internal from PBX trunk office");
    expect(steps(toExt)).toContain(`extension: 300 (${ext})`);
    expect((await fromPbx("alice")).reply.rtjson).toMatchObject({ action: "proxy" });
    // Another account's phone behind the PBX's address names its own account's domain: it is challenged
    // (not cached at the edge, so the PBX's next calls are still asked about), never routed as the PBX's.
    const neighbour = await routeFixture(platform);
    const theirDomain = `nb-${crypto.randomUUID().slice(0, 8)}.example`;
    await platform.db.insert(sipDomains).values({ domain: theirDomain, account_id: neighbour.accountId, is_primary: 1, created_at: nowSeconds() });
    // A device of an account without SIP domains names its account's default realm.
    for (const fromDomain of [theirDomain, theirDomain.toUpperCase(), defaultRealm(neighbour.accountId), `x.${DEFAULT_REALM_SUFFIX}`]) {
      const foreign = await fromPbx("300", { fromDomain });
      expect(foreign.reply.rtjson, fromDomain).toMatchObject({ action: "reject", code: 407, account_id: null });
      expect(foreign.reply.rtjson.vars).toMatchObject({ auth_required: 1, no_challenge_cache: 1 });
      expect(steps(foreign)).toContain("another account's SIP domain");
    }
    // Its calls to the account's DIDs are DID calls as before; its own account's domain is the PBX's call.
    expect((await fromPbx(did.e164, { fromDomain: theirDomain })).reply.rtjson).toMatchObject({ action: "flow" });
    await platform.db.insert(sipDomains).values({ domain: `own-${theirDomain}`, account_id: f.accountId, is_primary: 0, created_at: nowSeconds() });
    expect((await fromPbx("300", { fromDomain: `own-${theirDomain}` })).reply.rtjson).toMatchObject({ action: "proxy" });
    expect((await fromPbx("300", { fromDomain: defaultRealm(f.accountId) })).reply.rtjson).toMatchObject({ action: "proxy" });

    // Out over UDP from an address alone: refused (toll-fraud gate: the source can be forged); over TCP or TLS it goes.
    for (const transport of [undefined, "udp", "ws"]) {
      const forged = await fromPbx("447700900123", { transport });
      expect(forged.reply.rtjson, transport).toMatchObject({ action: "reject", code: 403 });
      expect(steps(forged)).toContain("known by its address alone");
    }
    const outbound = await fromPbx("447700900123");
    expect(outbound.reply.rtjson).toMatchObject({ action: "outbound" });
    expect(outbound.direction).toBe("outbound");
    expect(outbound.reply.rtjson.routes![0]!.uri).toBe("sip:447700900123@out.example");
    expect(outbound.reply.rtjson.routes![0]!.headers!.from).toEqual({ uri: "sip:442071110000@out.example", display: "\"Front Desk\"" });
    expect(steps(outbound)).toContain("from the number the PBX sent");
    // Its own trunk's ceiling and the outbound trunk's both hold; the account's outbound ceiling too.
    expect(outbound.slots).toContainEqual({ level: "trunk", id: pbx, limit: 8 });
    expect(outbound.slots).toContainEqual({ level: "trunk", id: out, limit: 20 });
    // The account's caller-ID rule for the destination's country comes first; DNC holds.
    await f.route({ via: "trunk", trunk_id: out, match_prefix: "49", priority: 1 });
    const de = await fromPbx("4930222222");
    expect(de.reply.rtjson.routes![0]!.headers!.from!.uri).toBe("sip:4930111111@out.example");
    expect((await fromPbx("447700900999")).reply.rtjson).toMatchObject({ action: "reject", code: 603 });
    expect((await fromPbx("nobody")).reply.rtjson).toMatchObject({ action: "reject", code: 404 });
    // By trunk id (a PBX that authenticated with its digest): the same.
    const byId = await decideRoute(testDeps(platform), req({ to: "447700900124", account_id: f.accountId, trunk_id: pbx }));
    expect(byId.reply.rtjson).toMatchObject({ action: "outbound" });
    // A carrier's trunk reaches DIDs only.
    for (const to of ["300", "447700900125"]) {
      const refused = await decideRoute(testDeps(platform), req({ to, source_ip: `${net}.18` }));
      expect(refused.reply.rtjson, to).toMatchObject({ action: "reject", code: 404 });
    }
    expect(carrier).toMatch(/^trk_/);
    // An address another account's trunk shares names no account for a call that is no DID.
    const shared = await routeFixture(platform);
    await shared.trunk({ name: "neighbour", inbound_auth: "ip" }, [`${net}.0/24`]);
    const ambiguous = await fromPbx("447700900126");
    expect(ambiguous.reply.rtjson).toMatchObject({ action: "reject", code: 404 });
    expect(steps(ambiguous)).toContain("address is shared with other accounts' trunks or the carrier");
    expect((await fromPbx(did.e164)).reply.rtjson).toMatchObject({ action: "flow" });
  });

  test(`many tenants' trunks on one source range (more than ${MAX_SOURCE_TRUNKS}): the call goes through the trunk of the DID's owner`, async () => {
    // A range of its own per run where it can (the PostgreSQL test store is shared and kept between runs).
    // Any 198.18.x but .9 (the next test's trunk range, in the same database).
    const net = `198.18.${10 + Math.floor(Math.random() * 246)}`;
    const tenants = [];
    for (let i = 0; i < MAX_SOURCE_TRUNKS + 4; i++) {
      const f = await routeFixture(platform);
      const did = await f.number({ dest_kind: "hangup" });
      tenants.push({ f, did, trunk: await f.trunk({ name: `pbx-${i}` }, [`${net}.0/24`]) });
    }
    for (const t of [tenants.at(-1)!, tenants[0]!]) {
      const d = await decideRoute(testDeps(platform), req({ to: t.did.e164, source_ip: `${net}.9` }));
      expect(d.accountId).toBe(t.f.accountId);
      expect(d.trunkId).toBe(t.trunk);
      expect(d.reply.rtjson).toMatchObject({ action: "reject", code: 603 });
      // None of the other tenants' trunks was tried: they could not take this number.
      for (const other of tenants) if (other !== t) expect(steps(d)).not.toContain(other.trunk);
    }
    // A tenant whose transform turns a short code into its DID is still a candidate.
    const last = tenants.at(-1)!;
    const code = String(100_000 + Math.floor(Math.random() * 900_000));
    await last.f.transform({ scope_kind: "trunk", scope_id: last.trunk, direction: "inbound_dst", match_regex: `^${code}$`, replacement: last.did.e164 });
    const short = await decideRoute(testDeps(platform), req({ to: code, source_ip: `${net}.9` }));
    expect(short.trunkId).toBe(last.trunk);
    expect(short.accountId).toBe(last.f.accountId);
  });

  test(`another account's trunks with narrower ACLs and inbound transforms cannot push the DID owner's trunk out of the ${MAX_SOURCE_TRUNKS} candidates`, async () => {
    const net = `100.65.${Math.floor(Math.random() * 256)}`;
    const owner = await routeFixture(platform);
    const did = await owner.number({ dest_kind: "hangup" });
    const ownTrunk = await owner.trunk({ name: "owner-carrier" }, [`${net}.0/24`]);
    // An account-scope inbound transform makes every trunk of the other account a possible taker of any
    // number, and /32s are more specific than the owner's /24: before, they sorted first and filled the list.
    const rival = await routeFixture(platform);
    await rival.transform({ scope_kind: "account", scope_id: rival.accountId, direction: "inbound_dst", match_regex: "^0(\\d+)$", replacement: "44$1" });
    for (let i = 0; i < MAX_SOURCE_TRUNKS; i++) await rival.trunk({ name: `narrow-${i}` }, [`${net}.9/32`]);
    const d = await decideRoute(testDeps(platform), req({ to: did.e164, source_ip: `${net}.9` }));
    expect(d.accountId).toBe(owner.accountId);
    expect(d.trunkId).toBe(ownTrunk);
    expect(d.reply.rtjson).toMatchObject({ action: "reject", code: 603 });
  });

  test("a trunk's address calling a number none of its accounts holds gets 404, never a challenge", async () => {
    const f = await routeFixture(platform);
    const other = await routeFixture(platform);
    const own = await f.number({ dest_kind: "hangup" });
    const foreign = await other.number({ dest_kind: "hangup" });
    await f.trunk({ name: "plain-pbx", inbound_auth: "ip" }, ["198.18.9.0/29"]);
    expect((await decideRoute(testDeps(platform), req({ to: own.e164, source_ip: "198.18.9.3" }))).reply.rtjson).toMatchObject({ action: "reject", code: 603 });
    for (const to of [freshE164("1999"), foreign.e164]) {
      const d = await decideRoute(testDeps(platform), req({ to, source_ip: "198.18.9.3" }));
      expect(d.reply.rtjson, to).toMatchObject({ action: "reject", code: 404 });
      expect(d.reply.rtjson.vars.auth_required).toBeUndefined();
      expect(steps(d)).toContain("which none of its accounts holds");
    }
  });

  test("a disabled trunk is not recognized: its address must authenticate like anyone else", async () => {
    const f = await routeFixture(platform);
    const did = await f.number({ dest_kind: "hangup" });
    await f.trunk({ status: "disabled" }, ["203.0.113.64/28"]);
    const d = await decideRoute(testDeps(platform), req({ to: did.e164, source_ip: "203.0.113.70" }));
    expect(d.reply.rtjson).toMatchObject({ action: "reject", code: 407, account_id: null });
  });
});

describe(`decideRoute inbound DIDs [${storeKind}]`, () => {
  test("number status: disabled 480, virtual unreachable from the carrier (404), a suspended account 403", async () => {
    const f = await routeFixture(platform);
    const disabled = await f.number({ dest_kind: "hangup", status: "disabled" });
    const virtual = await f.number({ dest_kind: "hangup", status: "virtual" });
    expect((await decideRoute(testDeps(platform), req({ to: disabled.e164, source_ip: CARRIER_IP }))).reply.rtjson.code).toBe(480);
    expect((await decideRoute(testDeps(platform), req({ to: virtual.e164, source_ip: CARRIER_IP }))).reply.rtjson.code).toBe(404);
    const s = await routeFixture(platform, { status: "suspended" });
    const did = await s.number({ dest_kind: "hangup" });
    expect((await decideRoute(testDeps(platform), req({ to: did.e164, source_ip: CARRIER_IP }))).reply.rtjson.code).toBe(403);
  });

  test("anonymous callers: 433 when the number refuses them, through when allowed", async () => {
    const f = await routeFixture(platform);
    const flow = await f.flow();
    const strict = await f.number({ dest_kind: "flow", dest_id: flow, allow_anonymous: 0 });
    const open = await f.number({ dest_kind: "flow", dest_id: flow, allow_anonymous: 1 });
    for (const caller of [{ from: "anonymous" }, { from: "" }, { from: "14155550111", privacy: "id" }]) {
      const d = await decideRoute(testDeps(platform), req({ to: strict.e164, source_ip: CARRIER_IP, ...caller }));
      expect(d.reply.rtjson, JSON.stringify(caller)).toMatchObject({ action: "reject", code: 433, reason: "Anonymity Disallowed" });
      expect((await decideRoute(testDeps(platform), req({ to: open.e164, source_ip: CARRIER_IP, ...caller }))).reply.rtjson.action).toBe("flow");
    }
    expect((await decideRoute(testDeps(platform), req({ to: strict.e164, source_ip: CARRIER_IP, privacy: "none" }))).reply.rtjson.action).toBe("flow");
  });

  test("an anonymous or withheld caller forwarded with cid_mode passthrough: From sip:anonymous@anonymous.invalid, a withheld number only in P-Asserted-Identity", async () => {
    const f = await routeFixture(platform);
    const flow = await f.flow();
    const did = await f.number({ dest_kind: "flow", dest_id: flow, allow_anonymous: 1 });
    await f.forward({ number_id: did.id, number: "447700900323", trigger: "always" });
    const call = (caller: Partial<RouteRequest>) => decideRoute(testDeps(platform), req({ to: did.e164, source_ip: CARRIER_IP, ...caller }));
    for (const caller of [{ from: "anonymous" }, { from: "" }, { from: "unknown", privacy: "id" }]) {
      const d = await call(caller);
      const leg = d.reply.rtjson.routes![0]!;
      expect(leg.headers!.from, JSON.stringify(caller)).toEqual({ uri: "sip:anonymous@anonymous.invalid", display: "Anonymous" });
      expect(leg.headers!.extra, JSON.stringify(caller)).not.toContain("P-Asserted-Identity");
    }
    const withheld = await call({ from: "14155550333", privacy: "id" });
    const leg = withheld.reply.rtjson.routes![0]!;
    expect(leg.headers!.from).toEqual({ uri: "sip:anonymous@anonymous.invalid", display: "Anonymous" });
    expect(leg.headers!.extra).toContain("P-Asserted-Identity: <sip:14155550333@carrier.example.net>\r\n");
    // An anonymous From with the number the carrier asserts (P-Asserted-Identity): that number is
    // asserted on, withheld; anything but a number there is not.
    const asserted = (await call({ from: "anonymous", asserted: "+14155550444" })).reply.rtjson.routes![0]!;
    expect(asserted.headers!.from).toEqual({ uri: "sip:anonymous@anonymous.invalid", display: "Anonymous" });
    expect(asserted.headers!.extra).toContain("P-Asserted-Identity: <sip:14155550444@carrier.example.net>\r\nPrivacy: id\r\n");
    for (const odd of ["alice", "1415555044x", "12", ""]) {
      const leg = (await call({ from: "anonymous", asserted: odd })).reply.rtjson.routes![0]!;
      expect(leg.headers!.extra, odd).not.toContain("P-Asserted-Identity");
    }
    // A caller who withholds nothing is presented as before.
    const plain = await call({ from: "14155550333" });
    expect(plain.reply.rtjson.routes![0]!.headers!.from).toEqual({ uri: "sip:14155550333@carrier.example.net" });
    expect(plain.reply.rtjson.routes![0]!.headers!.extra).not.toContain("P-Asserted-Identity");
    // The forward's own caller-ID (did, custom) is the account's number, not the caller's: presented.
    const byDid = await f.number({ dest_kind: "flow", dest_id: flow, allow_anonymous: 1 });
    await f.forward({ number_id: byDid.id, number: "447700900326", trigger: "always", cid_mode: "did" });
    const didCid = await decideRoute(testDeps(platform), req({ to: byDid.e164, source_ip: CARRIER_IP, from: "14155550333", privacy: "id" }));
    expect(didCid.reply.rtjson.routes![0]!.headers!.from).toEqual({ uri: `sip:${byDid.e164}@carrier.example.net` });
  });

  test("schedules: open → main, closed → closed_dest, holiday → holiday_dest, in the schedule's zone", async () => {
    const f = await routeFixture(platform, { timezone: "UTC" });
    const flow = await f.flow();
    const sch = await f.schedule("Europe/Paris", [
      { kind: "weekly", dow: 1, start_time: "09:00", end_time: "17:00" },
      { kind: "date", start_date: "2025-03-10", is_closed: 1 },
    ]);
    const did = await f.number({ dest_kind: "flow", dest_id: flow, schedule_id: sch, closed_dest_kind: "voicemail", closed_dest_id: "vm_closed", holiday_dest_kind: "queue", holiday_dest_id: "q_holiday" });
    const at = (iso: string) => testDeps(platform, { now: new Date(iso) });
    // Monday 2025-03-03 08:30Z is 09:30 in Paris: open (at 08:30 UTC a UTC schedule would be closed).
    const open = await decideRoute(at("2025-03-03T08:30:00Z"), req({ to: did.e164, source_ip: CARRIER_IP }));
    expect(open.reply.rtjson).toMatchObject({ action: "flow", flow_id: flow });
    expect(steps(open)).toContain(`schedule: ${sch} open`);
    const closed = await decideRoute(at("2025-03-03T16:30:00Z"), req({ to: did.e164, source_ip: CARRIER_IP }));
    expect(closed.reply.rtjson).toMatchObject({ action: "flow", flow_id: null, vars: { dest_kind: "voicemail", dest_id: "vm_closed" } });
    const holiday = await decideRoute(at("2025-03-10T10:00:00Z"), req({ to: did.e164, source_ip: CARRIER_IP }));
    expect(holiday.reply.rtjson.vars).toMatchObject({ dest_kind: "queue", dest_id: "q_holiday" });
    expect(holiday.queueId).toBe("q_holiday");
  });

  test("closed with no closed destination: the account's did_default_dest, else 480", async () => {
    const f = await routeFixture(platform, { did_default_dest_kind: "voicemail", did_default_dest_id: "vm_default" });
    const sch = await f.schedule("UTC", []); // no rules: always closed
    const did = await f.number({ dest_kind: "hangup", schedule_id: sch });
    const d = await decideRoute(testDeps(platform), req({ to: did.e164, source_ip: CARRIER_IP }));
    expect(d.reply.rtjson.vars).toMatchObject({ dest_kind: "voicemail", dest_id: "vm_default" });
    expect(steps(d)).toContain("did_default");
    const g = await routeFixture(platform);
    const sch2 = await g.schedule("UTC", []);
    const did2 = await g.number({ dest_kind: "hangup", schedule_id: sch2 });
    expect((await decideRoute(testDeps(platform), req({ to: did2.e164, source_ip: CARRIER_IP }))).reply.rtjson.code).toBe(480);
  });

  test("hangup → 603; an unpublished flow → 480; no media engine → 503", async () => {
    const f = await routeFixture(platform);
    const hang = await f.number({ dest_kind: "hangup" });
    expect((await decideRoute(testDeps(platform), req({ to: hang.e164, source_ip: CARRIER_IP }))).reply.rtjson.code).toBe(603);
    const draftFlow = await f.flow(0);
    const unpub = await f.number({ dest_kind: "flow", dest_id: draftFlow });
    expect((await decideRoute(testDeps(platform), req({ to: unpub.e164, source_ip: CARRIER_IP }))).reply.rtjson.code).toBe(480);
    const q = await f.number({ dest_kind: "queue", dest_id: "q_x" });
    const none = await decideRoute(testDeps(platform, { settings: { mediaEngines: [] } }), req({ to: q.e164, source_ip: CARRIER_IP }));
    expect(none.reply.rtjson).toMatchObject({ action: "reject", code: 503 });
    expect(none.slots).toEqual([]);
  });

  test("a number's always-forward goes out at once, caller-ID per cid_mode; failover forwards ride in vars", async () => {
    const f = await routeFixture(platform, { max_out: 4 });
    const flow = await f.flow();
    const did = await f.number({ dest_kind: "flow", dest_id: flow });
    await f.forward({ number_id: did.id, number: "447700900123", trigger: "always", cid_mode: "did" });
    const d = await decideRoute(testDeps(platform), req({ to: did.e164, source_ip: CARRIER_IP, from: "14155550199" }));
    expect(d.reply.rtjson).toMatchObject({ action: "outbound", routing: "serial" });
    expect(d.reply.rtjson.routes![0]).toMatchObject({ uri: "sip:447700900123@carrier.example.net:5060", headers: { from: { uri: `sip:${did.e164}@carrier.example.net` } } });
    expect(d.slots).toContainEqual({ level: "account_out", id: f.accountId, limit: 4 });
    const user = await f.user();
    const did2 = await f.number({ dest_kind: "user", dest_id: user });
    await f.forward({ number_id: did2.id, number: "447700900124", trigger: "busy" });
    const dev = await f.device(user);
    const d2 = await decideRoute(testDeps(platform, { contacts: { [user]: [contact(user, dev, "sip:1001@198.51.100.20:5062")] } }), req({ to: did2.e164, source_ip: CARRIER_IP }));
    expect(d2.reply.rtjson.action).toBe("proxy");
    expect(d2.reply.rtjson.vars).toMatchObject({ failover_busy_number: "447700900124", media_engine: "sip:10.0.0.5:5080" });
    expect(String(d2.reply.rtjson.vars.failover_busy)).toMatch(/^forward:fwd_/);
  });

  test("a forward's number passes the do-not-call lists and geo policies like a number dialled", async () => {
    const f = await routeFixture(platform);
    const flow = await f.flow();
    const dnc = await f.number({ dest_kind: "flow", dest_id: flow });
    const german = await f.number({ dest_kind: "flow", dest_id: flow });
    const allowed = await f.number({ dest_kind: "flow", dest_id: flow });
    await f.phoneList("dnc_out", ["12125550101"]);
    await f.geo("denylist", ["DE"]);
    await f.phoneList("allow", ["4930999999"]);
    await f.forward({ number_id: dnc.id, number: "12125550101", trigger: "always" });
    await f.forward({ number_id: german.id, number: "493012345678", trigger: "always" });
    await f.forward({ number_id: allowed.id, number: "4930999999", trigger: "always" });
    const toDnc = await decideRoute(testDeps(platform), req({ to: dnc.e164, source_ip: CARRIER_IP }));
    expect(toDnc.reply.rtjson).toMatchObject({ action: "reject" });
    expect([403, 603]).toContain(toDnc.reply.rtjson.code!);
    expect(steps(toDnc)).toContain("do-not-call");
    const toDe = await decideRoute(testDeps(platform), req({ to: german.e164, source_ip: CARRIER_IP }));
    expect(toDe.reply.rtjson).toMatchObject({ action: "reject", code: 403 });
    expect(steps(toDe)).toContain("refuses DE");
    // An allow list holds the number: out it goes.
    expect((await decideRoute(testDeps(platform), req({ to: allowed.e164, source_ip: CARRIER_IP }))).reply.rtjson.action).toBe("outbound");
  });

  test("inbound call limits: a hard per-period limit refuses past its count, a concurrent one becomes a CAC ceiling", async () => {
    const f = await routeFixture(platform, { max_in: 50 });
    const flow = await f.flow();
    const did = await f.number({ dest_kind: "flow", dest_id: flow });
    await f.callLimit({ direction: "in", period_sec: 3600, max_count: 2, hard: 1 });
    await f.callLimit({ scope_kind: "did", scope_id: did.id, direction: "in", max_count: 7, hard: 1 });
    const any = await f.callLimit({ scope_kind: "did", scope_id: did.id, direction: "any", max_count: 5, hard: 1 });
    const go = (callId?: string) => decideRoute(testDeps(platform), req({ to: did.e164, source_ip: CARRIER_IP, ...(callId ? { callId } : {}) }));
    const first = await go("limit-retransmitted");
    expect(first.reply.rtjson.action).toBe("flow");
    // One direction lowers that direction's ceiling; "any" has its own counter, shared by both directions.
    expect(first.slots).toContainEqual({ level: "number", id: did.id, limit: 7 });
    expect(first.slots).toContainEqual({ level: "call_limit", id: any, limit: 5 });
    // A retransmission of the same call is not a second call: it takes nothing from the window.
    expect((await go("limit-retransmitted")).reply.rtjson.action).toBe("flow");
    expect((await go("limit-second")).reply.rtjson.action).toBe("flow");
    const third = await go("limit-third");
    expect(third.reply.rtjson).toMatchObject({ action: "reject", code: 403 });
    expect(steps(third)).toContain("2 calls in the last 3600s, limit 2");
    // Each call that got in stays counted for the whole period (a sliding window): a retransmission of
    // one of them is let in again, the refused call is refused again, and so is any other.
    expect((await go("limit-second")).reply.rtjson.action).toBe("flow");
    expect((await go("limit-third")).reply.rtjson.code).toBe(403);
    expect((await go()).reply.rtjson.code).toBe(403);
  });

  test("a user's own inbound call limits hold for the calls from outside that reach it (per period, concurrent), not for internal ones", async () => {
    const f = await routeFixture(platform);
    const user = await f.user({ username: "2001", max_simultaneous: 3 });
    const dev = await f.device(user);
    const did = await f.number({ dest_kind: "user", dest_id: user });
    const other = await f.user({ username: "2002" });
    const otherDev = await f.device(other);
    await f.callLimit({ scope_kind: "user", scope_id: user, direction: "in", period_sec: 3600, max_count: 2, hard: 1 });
    await f.callLimit({ scope_kind: "user", scope_id: user, direction: "any", max_count: 1, hard: 1 });
    // The user's limits on calls it places are not limits on calls it receives.
    await f.callLimit({ scope_kind: "user", scope_id: user, direction: "out", period_sec: 3600, max_count: 0, hard: 1 });
    // Another user's limit is not this user's.
    await f.callLimit({ scope_kind: "user", scope_id: other, direction: "in", period_sec: 3600, max_count: 0, hard: 1 });
    const contacts = { [user]: [contact(user, dev, "sip:2001@198.51.100.21:5062")] };
    const call = (deps = testDeps(platform, { contacts }), callId?: string) =>
      decideRoute(deps, req({ to: did.e164, source_ip: CARRIER_IP, ...(callId ? { callId } : {}) }));
    const first = await call(undefined, "user-limit-retransmitted");
    expect(first.reply.rtjson.action).toBe("proxy");
    // The concurrent one (direction any) is a ceiling of its own, shared by both directions.
    expect(first.slots).toContainEqual({ level: "user", id: user, limit: 3 });
    expect(first.slots.some((s) => s.level === "call_limit")).toBe(true);
    expect((await call(undefined, "user-limit-retransmitted")).reply.rtjson.action).toBe("proxy");
    expect((await call()).reply.rtjson.action).toBe("proxy");
    const third = await call();
    expect(third.reply.rtjson).toMatchObject({ action: "reject", code: 403 });
    expect(steps(third)).toContain("call_limit");
    // Internal calls to the user are not calls from outside: its inbound limits leave them alone.
    const internal = await decideRoute(
      testDeps(platform, { contacts }),
      req({ from: "2002", fromDomain: "r.example", to: "2001", account_id: f.accountId, user_id: other, device_id: otherDev }),
    );
    expect(internal.reply.rtjson.action).toBe("proxy");
  });

  test("a user's concurrent inbound limit is a counter of its own: at that many calls from outside it is busy (its busy forward, else 486); other calls of the user do not fill it", async () => {
    const f = await routeFixture(platform);
    const user = await f.user({ username: "2101", max_simultaneous: 4 });
    const dev = await f.device(user);
    const did = await f.number({ dest_kind: "user", dest_id: user });
    const limit = await f.callLimit({ scope_kind: "user", scope_id: user, direction: "in", max_count: 1, hard: 1 });
    const contacts = { [user]: [contact(user, dev, "sip:2101@198.51.100.22:5062")] };
    const first = req({ to: did.e164, source_ip: CARRIER_IP });
    const idle = await decideRoute(testDeps(platform, { contacts }), first);
    expect(idle.reply.rtjson.action).toBe("proxy");
    expect(idle.slots).toContainEqual({ level: "user", id: user, limit: 4 });
    expect(idle.slots).toContainEqual({ level: "call_limit", id: limit, limit: 1, busy: true });
    // On a call it placed (presence counts it; the limit's counter does not): a call from outside still reaches it.
    const onAnother = await decideRoute(testDeps(platform, { contacts, calls: { [user]: 1 } }), req({ to: did.e164, source_ip: CARRIER_IP }));
    expect(onAnother.reply.rtjson.action, steps(onAnother)).toBe("proxy");
    // A call from outside holds the counter: the next is busy.
    expect((await admitCall(platform, idle, first)).rtjson.action).toBe("proxy");
    const busy = await decideRoute(testDeps(platform, { contacts, calls: { [user]: 1 } }), req({ to: did.e164, source_ip: CARRIER_IP }));
    expect(busy.reply.rtjson).toMatchObject({ action: "reject", code: 486 });
    expect(steps(busy)).toContain("holds 1 of 1 concurrent calls");
  });

  test("callers on a dnc_in list (the account's, or this DID's) are declined, after the caller-ID transforms; an allow list wins", async () => {
    const f = await routeFixture(platform);
    const flow = await f.flow();
    const did = await f.number({ dest_kind: "flow", dest_id: flow });
    const other = await f.number({ dest_kind: "flow", dest_id: flow });
    const call = (to: string, from: string) => decideRoute(testDeps(platform), req({ to, from, source_ip: CARRIER_IP }));
    // No dnc_in list: nobody is looked up.
    expect((await call(did.e164, "14155550111")).reply.rtjson.action).toBe("flow");
    await f.phoneList("dnc_in", ["14155550111", "442079460000"]);
    await f.phoneList("dnc_in", ["14155550222"], { scope_kind: "did", scope_id: did.id });
    await f.phoneList("allow", ["442079460000"]);
    await f.transform({ direction: "inbound_cid", match_regex: "^0(\\d+)$", replacement: "1$1" });
    const listed = await call(did.e164, "+14155550111");
    expect(listed.reply.rtjson).toMatchObject({ action: "reject", code: 603, reason: "Decline" });
    expect(steps(listed)).toContain("dnc_in");
    expect(listed.slots).toEqual([]);
    // Compared after the transforms: the national form of a listed number is that number.
    expect((await call(did.e164, "04155550111")).reply.rtjson.code).toBe(603);
    // A DID's own list holds for that DID only.
    expect((await call(did.e164, "14155550222")).reply.rtjson.code).toBe(603);
    expect((await call(other.e164, "14155550222")).reply.rtjson.action).toBe("flow");
    // On an allow list too: let through. Not a number: on no list.
    expect((await call(did.e164, "442079460000")).reply.rtjson.action).toBe("flow");
    expect((await call(did.e164, "anonymous")).reply.rtjson.action).toBe("flow");
  });

  test("a forward's legs take their route's and trunk's transforms; where the forward fails to is every trigger's failover", async () => {
    const f = await routeFixture(platform);
    const flow = await f.flow();
    const did = await f.number({ dest_kind: "flow", dest_id: flow });
    const pbx = await f.trunk({ name: "pbx", proxy: "pbx.example:5060" });
    await f.route({ via: "trunk", trunk_id: pbx, match_prefix: "44", priority: 1 });
    await f.transform({ scope_kind: "trunk", scope_id: pbx, direction: "outbound_dst", match_regex: "^44", replacement: "9944" });
    await f.forward({ number_id: did.id, number: "447700900123", trigger: "always", overflow_dest_kind: "flow", overflow_dest_id: flow });
    const d = await decideRoute(testDeps(platform), req({ to: did.e164, source_ip: CARRIER_IP }));
    expect(d.reply.rtjson.action).toBe("outbound");
    expect(d.reply.rtjson.routes!.map((r) => r.uri)).toEqual(["sip:99447700900123@pbx.example:5060"]);
    expect(d.reply.rtjson.vars).toMatchObject({
      failover_busy: `flow:${flow}`,
      failover_no_answer: `flow:${flow}`,
      failover_unreachable: `flow:${flow}`,
      media_engine: "sip:10.0.0.5:5080",
    });
    // Overflow to hangup, or none: no failover (the call ends when the forward fails).
    const plain = await f.number({ dest_kind: "flow", dest_id: flow });
    await f.forward({ number_id: plain.id, number: "447700900124", trigger: "always", overflow_dest_kind: "hangup" });
    const ends = await decideRoute(testDeps(platform), req({ to: plain.e164, source_ip: CARRIER_IP }));
    expect(Object.keys(ends.reply.rtjson.vars).filter((k) => k.startsWith("failover_"))).toEqual([]);
  });

  test("inbound ACL rules on the source address: the DID's own; the account's are about its devices", async () => {
    const f = await routeFixture(platform);
    const flow = await f.flow();
    const did = await f.number({ dest_kind: "flow", dest_id: flow });
    await f.aclRule({ scope_kind: "did", scope_id: did.id, rule_type: "ip_deny", value: "192.0.2.66/32" });
    expect((await decideRoute(testDeps(platform), req({ to: did.e164, source_ip: "192.0.2.66" }))).reply.rtjson.code).toBe(403);
    expect((await decideRoute(testDeps(platform), req({ to: did.e164, source_ip: "192.0.2.67" }))).reply.rtjson.action).toBe("flow");
    // An account-wide allow list (the office network its phones call from) does not cut off the
    // carrier's or the account's trunks' calls to its numbers.
    await f.aclRule({ rule_type: "ip_allow", value: "203.0.113.0/24" });
    await f.trunk({ name: "pbx-acl", inbound_auth: "ip" }, ["198.18.7.0/28"]);
    expect((await decideRoute(testDeps(platform), req({ to: did.e164, source_ip: CARRIER_IP }))).reply.rtjson.action).toBe("flow");
    expect((await decideRoute(testDeps(platform), req({ to: did.e164, source_ip: "198.18.7.2" }))).reply.rtjson.action).toBe("flow");
  });
});

describe(`decideRoute internal calls [${storeKind}]`, () => {
  async function office() {
    const f = await routeFixture(platform);
    const alice = await f.user({ username: "1001", ring_timeout_sec: 20, max_simultaneous: 2 });
    const bob = await f.user({ username: "1002", ring_timeout_sec: 30, voicemail_id: "vm_bob" });
    const aliceDev = await f.device(alice);
    const bobDev = await f.device(bob);
    const from = (to: string, extra: Record<string, unknown> = {}) => req({ from: "1001", fromDomain: "r.example", to, account_id: f.accountId, user_id: alice, device_id: aliceDev, ...extra });
    return { f, alice, bob, aliceDev, bobDev, from };
  }

  test("a binding of a device disabled or removed since it registered is never rung", async () => {
    const o = await office();
    const off = await o.f.device(o.bob, { status: "disabled" });
    const live = contact(o.bob, o.bobDev, "sip:1002@10.1.1.2:5060");
    const stale = [contact(o.bob, off, "sip:1002@10.1.1.9:5060"), contact(o.bob, "dev_GONE", "sip:1002@10.1.1.8:5060")];
    const d = await decideRoute(testDeps(platform, { contacts: { [o.bob]: [...stale, live] } }), o.from("1002"));
    expect(d.reply.rtjson.routes!.map((r) => r.uri)).toEqual(["sip:1002@10.1.1.2:5060"]);
    expect(steps(d)).toContain("2 binding(s) of inactive devices left out");
    // Only such bindings: the user is not reachable (here: to the user's voicemail).
    const none = await decideRoute(testDeps(platform, { contacts: { [o.bob]: stale } }), o.from("1002"));
    expect(steps(none)).toContain("no registered contacts");
  });

  test("to a user: proxy to each registered contact in parallel, ring timeout, user slot", async () => {
    const o = await office();
    const contacts = [
      contact(o.bob, o.bobDev, "sip:1002@10.1.1.2:5060", { received: "sip:198.51.100.7:40000", socket: "udp:192.0.2.1:5060" }),
      contact(o.bob, o.bobDev, "sip:1002@10.1.1.3:5060;transport=tcp", { path: "<sip:edge2.example;lr>" }),
    ];
    const d = await decideRoute(testDeps(platform, { contacts: { [o.bob]: contacts } }), o.from("1002"));
    expect(d.direction).toBe("internal");
    expect(d.userId).toBe(o.alice);
    expect(d.deviceId).toBe(o.aliceDev);
    expect(d.reply.rtjson).toMatchObject({ action: "proxy", version: "1.0", routing: "parallel", account_id: o.f.accountId });
    expect(d.reply.rtjson.routes).toEqual([
      { uri: "sip:1002@10.1.1.2:5060", dst_uri: "sip:198.51.100.7:40000", socket: "udp:192.0.2.1:5060", fr_inv_timer: 30000, headers: { extra: expect.stringContaining(`X-Account-Id: ${o.f.accountId}`) } },
      { uri: "sip:1002@10.1.1.3:5060;transport=tcp", path: "<sip:edge2.example;lr>", fr_inv_timer: 30000, headers: { extra: expect.any(String) } },
    ]);
    // The callee's slot, and the caller's own ceiling (alice: 2).
    expect(d.slots).toEqual([{ level: "user", id: o.alice, limit: 2 }, { level: "user", id: o.bob, limit: 2 }]);
    // Bob has a mailbox: busy, no-answer and unreachable (no contact could be sent to) fail over to it.
    expect(d.reply.rtjson.vars).toMatchObject({ failover_busy: "voicemail:vm_bob", failover_no_answer: "voicemail:vm_bob", failover_unreachable: "voicemail:vm_bob" });
  });

  test("the call's user: the caller for a call from a device, the user it rings for a carrier's call to a DID", async () => {
    const o = await office();
    const c = { [o.bob]: [contact(o.bob, o.bobDev, "sip:1002@10.1.1.2")] };
    const did = await o.f.number({ dest_kind: "user", dest_id: o.bob });
    const inbound = await decideRoute(testDeps(platform, { contacts: c }), req({ to: `+${did.e164}`, source_ip: CARRIER_IP }));
    expect(inbound.direction).toBe("inbound");
    expect(inbound.reply.rtjson.action).toBe("proxy");
    expect(inbound.userId).toBe(o.bob);
    expect(inbound.deviceId).toBeNull();
    const internal = await decideRoute(testDeps(platform, { contacts: c }), o.from("1002"));
    expect(internal.userId).toBe(o.alice);
  });

  test("the caller's max_simultaneous holds for internal calls too (to a user or through an extension)", async () => {
    const o = await office();
    const digits = "7345";
    await o.f.extension({ digits, dest_kind: "user", dest_id: o.bob });
    const c = { [o.bob]: [contact(o.bob, o.bobDev, "sip:1002@10.1.1.2")] };
    for (const to of ["1002", digits]) {
      const d = await decideRoute(testDeps(platform, { contacts: c }), o.from(to));
      expect(d.slots, to).toContainEqual({ level: "user", id: o.alice, limit: 2 });
    }
  });

  test("a user at max_simultaneous: the busy forward, else the user's voicemail, else 486", async () => {
    const o = await office();
    const c = { [o.bob]: [contact(o.bob, o.bobDev, "sip:1002@10.1.1.2")] };
    const busy = await decideRoute(testDeps(platform, { contacts: c, calls: { [o.bob]: 2 } }), o.from("1002"));
    expect(busy.reply.rtjson).toMatchObject({ action: "flow", vars: { dest_kind: "voicemail", dest_id: "vm_bob" } });
    // No media engine to answer the mailbox: busy, not "service unavailable"; unregistered, 480.
    const noEngine = await decideRoute(testDeps(platform, { contacts: c, calls: { [o.bob]: 2 }, settings: { mediaEngines: [] } }), o.from("1002"));
    expect(noEngine.reply.rtjson).toMatchObject({ action: "reject", code: 486 });
    expect(steps(noEngine)).toContain("vm_bob skipped: no media engine configured");
    expect((await decideRoute(testDeps(platform, { settings: { mediaEngines: [] } }), o.from("1002"))).reply.rtjson).toMatchObject({ action: "reject", code: 480 });
    await o.f.forward({ user_id: o.bob, number: "447700900555", trigger: "busy" });
    const fwd = await decideRoute(testDeps(platform, { contacts: c, calls: { [o.bob]: 2 } }), o.from("1002"));
    expect(fwd.reply.rtjson).toMatchObject({ action: "outbound", routes: [{ uri: "sip:447700900555@carrier.example.net:5060" }] });
    const carol = await o.f.user({ username: "1003", max_simultaneous: 1 });
    const carolDev = await o.f.device(carol);
    const full = await decideRoute(testDeps(platform, { contacts: { [carol]: [contact(carol, carolDev, "sip:1003@10.1.1.4")] }, calls: { [carol]: 1 } }), o.from("1003"));
    expect(full.reply.rtjson).toMatchObject({ action: "reject", code: 486 });
  });

  test("a DID's busy and unreachable forwards take a call to its user that /route knows is busy or unreachable", async () => {
    const o = await office();
    const carol = await o.f.user({ username: "1003", max_simultaneous: 1 });
    const carolDev = await o.f.device(carol);
    const did = await o.f.number({ dest_kind: "user", dest_id: carol });
    await o.f.forward({ number_id: did.id, number: "447700900601", trigger: "unreachable", cid_mode: "did" });
    await o.f.forward({ number_id: did.id, number: "447700900602", trigger: "busy" });
    const call = (deps: Parameters<typeof testDeps>[1]) => decideRoute(testDeps(platform, deps), req({ to: did.e164, source_ip: CARRIER_IP }));
    const unreachable = await call({});
    expect(unreachable.reply.rtjson).toMatchObject({ action: "outbound", routes: [{ uri: "sip:447700900601@carrier.example.net:5060", headers: { from: { uri: expect.stringContaining(did.e164) } } }] });
    expect(steps(unreachable)).toContain(`the number's unreachable forward to 447700900601 (${unreachable.reply.rtjson.vars.forward_id})`);
    const ringing = { contacts: { [carol]: [contact(carol, carolDev, "sip:1003@10.1.1.4")] } };
    const busy = await call({ ...ringing, calls: { [carol]: 1 } });
    expect(busy.reply.rtjson).toMatchObject({ action: "outbound", routes: [{ uri: "sip:447700900602@carrier.example.net:5060" }] });
    // Free and registered: rung, the number's forwards riding as failover.
    const rung = await call(ringing);
    expect(rung.reply.rtjson).toMatchObject({ action: "proxy", vars: { failover_busy: expect.stringMatching(/^forward:fwd_/), failover_unreachable: expect.stringMatching(/^forward:fwd_/) } });
    // The user's own forward comes first.
    await o.f.forward({ user_id: carol, number: "447700900603", trigger: "busy" });
    expect((await call({ ...ringing, calls: { [carol]: 1 } })).reply.rtjson.routes![0]!.uri).toBe("sip:447700900603@carrier.example.net:5060");
  });

  test("a busy or unreachable forward the phone lists or geo policies refuse is no way on: the mailbox takes its place, then the number's forward, then 486 / 480", async () => {
    const o = await office();
    const dan = await o.f.user({ username: "1004", max_simultaneous: 1, voicemail_id: "vm_dan" });
    const danDev = await o.f.device(dan);
    const bad = "447700900999";
    await o.f.phoneList("dnc_out", [bad]);
    await o.f.forward({ user_id: dan, number: bad, trigger: "busy" });
    await o.f.forward({ user_id: dan, number: bad, trigger: "unreachable" });
    const ringing = { [dan]: [contact(dan, danDev, "sip:1004@10.1.1.5")] };
    const atOneCall = { contacts: ringing, calls: { [dan]: 1 } };
    const busy = await decideRoute(testDeps(platform, atOneCall), o.from("1004"));
    expect(busy.reply.rtjson, steps(busy)).toMatchObject({ action: "flow", vars: { dest_kind: "voicemail", dest_id: "vm_dan" } });
    expect(busy.reply.rtjson.vars.forward_id).toBeUndefined();
    expect(steps(busy)).toContain(`busy → ${bad}`);
    expect(steps(busy)).toContain("refused: on a do-not-call phone list");
    const unreachable = await decideRoute(testDeps(platform), o.from("1004"));
    expect(unreachable.reply.rtjson, steps(unreachable)).toMatchObject({ action: "flow", vars: { dest_kind: "voicemail", dest_id: "vm_dan" } });
    // No media engine to answer the mailbox: busy 486, unreachable 480.
    const noEngine = { settings: { mediaEngines: [] } };
    expect((await decideRoute(testDeps(platform, { ...noEngine, ...atOneCall }), o.from("1004"))).reply.rtjson).toMatchObject({ action: "reject", code: 486 });
    expect((await decideRoute(testDeps(platform, noEngine), o.from("1004"))).reply.rtjson).toMatchObject({ action: "reject", code: 480 });
    // A call to a DID: the number's own forward next, unless the policies refuse it too (a geo policy here).
    await o.f.geo("denylist", ["DE"]);
    const did = await o.f.number({ dest_kind: "user", dest_id: dan });
    await o.f.forward({ number_id: did.id, number: "447700900604", trigger: "busy" });
    await o.f.forward({ number_id: did.id, number: "493012345670", trigger: "unreachable" });
    const toDid = (deps: Parameters<typeof testDeps>[1]) => decideRoute(testDeps(platform, deps), req({ to: did.e164, source_ip: CARRIER_IP }));
    const didBusy = await toDid({ ...noEngine, ...atOneCall });
    expect(didBusy.reply.rtjson, steps(didBusy)).toMatchObject({ action: "outbound", routes: [{ uri: "sip:447700900604@carrier.example.net:5060" }] });
    const didUnreachable = await toDid(noEngine);
    expect(didUnreachable.reply.rtjson, steps(didUnreachable)).toMatchObject({ action: "reject", code: 480 });
    expect(steps(didUnreachable)).toContain("refuses DE");
  });

  test("a hard limit of calls out that is full makes no forward a failover: the mailbox takes its place; a refused no-answer forward leaves the ring time alone", async () => {
    const o = await office();
    const number = "447700900123";
    await o.f.forward({ user_id: o.bob, number, trigger: "no_answer", timeout_sec: 10 });
    await o.f.forward({ user_id: o.bob, number, trigger: "unreachable" });
    const ringing = { [o.bob]: [contact(o.bob, o.bobDev, "sip:1002@10.1.1.2")] };
    // Before any limit: the forwards are the failovers, and the no-answer one shortens the ring.
    const open = await decideRoute(testDeps(platform, { contacts: ringing }), o.from("1002"));
    expect(open.reply.rtjson.vars).toMatchObject({ failover_no_answer: expect.stringMatching(/^forward:/), failover_unreachable: expect.stringMatching(/^forward:/) });
    expect(open.reply.rtjson.routes![0]!.fr_inv_timer).toBe(10_000);
    // "0 blocks every call of that direction": a forward out too, as a failover or not.
    await o.f.callLimit({ name: "no-calls-out", direction: "out", period_sec: 3600, max_count: 0, hard: 1 });
    const rung = await decideRoute(testDeps(platform, { contacts: ringing }), o.from("1002"));
    expect(rung.reply.rtjson, steps(rung)).toMatchObject({ action: "proxy", vars: { failover_no_answer: "voicemail:vm_bob", failover_unreachable: "voicemail:vm_bob" } });
    expect(steps(rung)).toContain("refused: call limit no-calls-out reached");
    expect(rung.reply.rtjson.routes![0]!.fr_inv_timer).toBe(30_000);
    // Not registered: the unreachable forward is refused by the limit, and the mailbox takes the call (not a 403).
    const away = await decideRoute(testDeps(platform), o.from("1002"));
    expect(away.reply.rtjson, steps(away)).toMatchObject({ action: "flow", vars: { dest_kind: "voicemail", dest_id: "vm_bob" } });
  });

  test("a forward to the account's own number that routes straight back (to the forwarding user, or the number itself) is a loop: 482, never a call out", async () => {
    const f = await routeFixture(platform);
    const alice = await f.user({ username: "1001" });
    const aliceDev = await f.device(alice);
    const bob = await f.user({ username: "1002" });
    const bobsLine = await f.number({ dest_kind: "user", dest_id: bob });
    await f.forward({ user_id: bob, number: bobsLine.e164, trigger: "always" });
    const d = await decideRoute(testDeps(platform), req({ from: "1001", fromDomain: "r.example", to: "1002", account_id: f.accountId, user_id: alice, device_id: aliceDev }));
    expect(d.reply.rtjson, steps(d)).toMatchObject({ action: "reject", code: 482 });
    expect(steps(d)).toContain("a loop through the carrier");
    // The carrier's call to that number: the same.
    const inbound = await decideRoute(testDeps(platform), req({ to: bobsLine.e164, source_ip: CARRIER_IP }));
    expect(inbound.reply.rtjson).toMatchObject({ action: "reject", code: 482 });
    // As a failover (the user rung and not answering): no failover either, the mailbox instead.
    const dave = await f.user({ username: "1004", voicemail_id: "vm_dave" });
    const daveDev = await f.device(dave);
    const davesLine = await f.number({ dest_kind: "user", dest_id: dave });
    await f.forward({ user_id: dave, number: davesLine.e164, trigger: "no_answer" });
    const rung = await decideRoute(testDeps(platform, { contacts: { [dave]: [contact(dave, daveDev, "sip:1004@10.1.1.4")] } }), req({ to: davesLine.e164, source_ip: CARRIER_IP }));
    expect(rung.reply.rtjson, steps(rung)).toMatchObject({ action: "proxy", vars: { failover_no_answer: "voicemail:vm_dave" } });
    expect(steps(rung)).toContain("a loop through the carrier");
    // A number forwarding to itself.
    const selfish = await f.number({ dest_kind: "hangup" });
    await f.forward({ number_id: selfish.id, number: selfish.e164, trigger: "always" });
    expect((await decideRoute(testDeps(platform), req({ to: selfish.e164, source_ip: CARRIER_IP }))).reply.rtjson).toMatchObject({ action: "reject", code: 482 });
    // A forward to another of the account's numbers that goes elsewhere still goes out (a hairpin, not a loop).
    const sales = await f.number({ dest_kind: "hangup" });
    const carol = await f.user({ username: "1003" });
    await f.forward({ user_id: carol, number: sales.e164, trigger: "always" });
    const out = await decideRoute(testDeps(platform), req({ from: "1001", fromDomain: "r.example", to: "1003", account_id: f.accountId, user_id: alice, device_id: aliceDev }));
    expect(out.reply.rtjson.action, steps(out)).toBe("outbound");
  });

  test("a destination's caller name prefix goes before the caller's name (else number) in each leg's From display, quoted and escaped", async () => {
    const o = await office();
    await o.f.extension({ digits: "7002", dest_kind: "user", dest_id: o.bob, dest_xform: { cid_name_prefix: 'Sales "EU": ' } });
    const ringing = { [o.bob]: [contact(o.bob, o.bobDev, "sip:1002@10.1.1.2"), contact(o.bob, o.bobDev, "sip:1002@10.1.1.3")] };
    const named = await decideRoute(testDeps(platform, { contacts: ringing }), o.from("7002", { fromName: "Alice \\ A." }));
    expect(named.reply.rtjson.routes!.map((r) => r.headers?.from)).toEqual([{ display: '"Sales \\"EU\\": Alice \\\\ A."' }, { display: '"Sales \\"EU\\": Alice \\\\ A."' }]);
    // The edge gives the name as the header holds it: a quoted string keeps its quotes and escapes.
    const quoted = await decideRoute(testDeps(platform, { contacts: ringing }), o.from("7002", { fromName: '"Alice \\"A\\""' }));
    expect(quoted.reply.rtjson.routes![0]!.headers?.from).toEqual({ display: '"Sales \\"EU\\": Alice \\"A\\""' });
    const unnamed = await decideRoute(testDeps(platform, { contacts: ringing }), o.from("7002"));
    expect(unnamed.reply.rtjson.routes![0]!.headers?.from).toEqual({ display: '"Sales \\"EU\\": 1001"' });
    // Without a prefix, the From is left as the caller sent it.
    expect((await decideRoute(testDeps(platform, { contacts: ringing }), o.from("1002"))).reply.rtjson.routes![0]!.headers?.from).toBeUndefined();
  });

  test("a failover forward's checks: the call's own place in an `any` window is not another call; a refused one leaves the caller-ID alone", async () => {
    const f = await routeFixture(platform);
    const bob = await f.user({ username: "1002", voicemail_id: "vm_bob" });
    await f.forward({ user_id: bob, number: "447700900123", trigger: "unreachable" });
    const did = await f.number({ dest_kind: "user", dest_id: bob });
    const limit = await f.callLimit({ name: "one-per-hour", direction: "any", period_sec: 3600, max_count: 1, hard: 1 });
    // The DID's call takes the window's one place coming in; its forward out is the same call.
    const d = await decideRoute(testDeps(platform), req({ to: did.e164, source_ip: CARRIER_IP }));
    expect(d.reply.rtjson.action, steps(d)).toBe("outbound");
    // A phone's call whose forward a limit refuses goes to the mailbox as the phone's caller, unchanged.
    await platform.db.update(callLimits).set({ direction: "out", max_count: 0 }).where(eq(callLimits.id, limit));
    const alice = await f.user({ username: "1001", out_cid_number: "14155560100" });
    const aliceDev = await f.device(alice);
    const v = await decideRoute(testDeps(platform), req({ from: "1001", fromDomain: "r.example", to: "1002", account_id: f.accountId, user_id: alice, device_id: aliceDev }));
    expect(v.reply.rtjson, steps(v)).toMatchObject({ action: "flow", vars: { dest_kind: "voicemail" } });
    expect(v.from).toBe("1001");
    expect(v.reply.rtjson.vars.caller_id).toBeUndefined();
    expect(v.trace.map((x) => x.step)).not.toContain("caller_id");
  });

  test("a device's call forwarded out presents its caller's caller-ID (rules, out_cid), not the From the phone wrote", async () => {
    const f = await routeFixture(platform);
    const alice = await f.user({ username: "1001", out_cid_number: "14155560100" });
    const aliceDev = await f.device(alice);
    const bob = await f.user({ username: "1002" });
    await f.forward({ user_id: bob, number: "447700900321", trigger: "always" });
    const d = await decideRoute(testDeps(platform), req({ from: "1001", fromDomain: "r.example", to: "1002", account_id: f.accountId, user_id: alice, device_id: aliceDev }));
    expect(d.reply.rtjson.action, steps(d)).toBe("outbound");
    expect(JSON.stringify(d.reply.rtjson.routes![0])).toContain("14155560100");
    expect(JSON.stringify(d.reply.rtjson.routes![0])).not.toContain("sip:1001@");
    // An account rule for the destination's country comes first, as for a call the device places out itself.
    await f.cidRule({ cid_number: "14155560199", scope_kind: "account", scope_id: f.accountId, match_country: "GB" });
    const ruled = await decideRoute(testDeps(platform), req({ from: "1001", fromDomain: "r.example", to: "1002", account_id: f.accountId, user_id: alice, device_id: aliceDev }));
    expect(JSON.stringify(ruled.reply.rtjson.routes![0])).toContain("14155560199");
  });

  test("a call forwarded out to a number is an outbound call, whoever placed it (a device's call to a user or an extension, a DID's call)", async () => {
    const f = await routeFixture(platform, { max_out: 3 });
    const alice = await f.user({ username: "1001" });
    const aliceDev = await f.device(alice);
    const bob = await f.user({ username: "1002" });
    const fwd = await f.forward({ user_id: bob, number: "447700900321", trigger: "always" });
    await f.extension({ digits: "7321", dest_kind: "forward", dest_id: fwd });
    const did = await f.number({ dest_kind: "user", dest_id: bob });
    const device = (to: string) => req({ from: "1001", fromDomain: "r.example", to, account_id: f.accountId, user_id: alice, device_id: aliceDev });
    for (const [why, r] of [["to the user", device("1002")], ["through an extension", device("7321")], ["a DID's call", req({ to: did.e164, source_ip: CARRIER_IP })]] as const) {
      const d = await decideRoute(testDeps(platform), r);
      expect(d.reply.rtjson.action, why).toBe("outbound");
      expect(d.direction, why).toBe("outbound");
      expect(d.reply.rtjson.vars.direction, why).toBe("outbound");
      expect(d.reply.rtjson.routes![0]!.headers!.extra, why).toContain("X-Call-Direction: outbound\r\n");
      expect(d.slots, why).toContainEqual({ level: "account_out", id: f.accountId, limit: 3 });
      expect(d.to, why).toBe("447700900321");
    }
  });

  test("no contacts: the unreachable forward, else the user's voicemail, else 480", async () => {
    const o = await office();
    const vm = await decideRoute(testDeps(platform), o.from("1002"));
    expect(vm.reply.rtjson).toMatchObject({ action: "flow", vars: { dest_kind: "voicemail", dest_id: "vm_bob" } });
    const carol = await o.f.user({ username: "1003" });
    expect((await decideRoute(testDeps(platform), o.from("1003"))).reply.rtjson.code).toBe(480);
    await o.f.forward({ user_id: carol, number: "447700900777", trigger: "unreachable" });
    const fwd = await decideRoute(testDeps(platform), o.from("1003"));
    expect(fwd.reply.rtjson.action).toBe("outbound");
  });

  test("a no-answer forward shortens the ring and rides as failover", async () => {
    const o = await office();
    await o.f.forward({ user_id: o.bob, number: "447700900888", trigger: "no_answer", timeout_sec: 10 });
    const d = await decideRoute(testDeps(platform, { contacts: { [o.bob]: [contact(o.bob, o.bobDev, "sip:1002@10.1.1.2")] } }), o.from("1002"));
    expect(d.reply.rtjson.routes![0]!.fr_inv_timer).toBe(10000);
    expect(d.reply.rtjson.vars).toMatchObject({ failover_no_answer_number: "447700900888", failover_no_answer_timeout: 10 });
  });

  test("extensions: to a user through the extension; a feature code goes to a media engine", async () => {
    const o = await office();
    await o.f.extension({ digits: "200", dest_kind: "user", dest_id: o.bob });
    await o.f.extension({ digits: "*97", dest_kind: "feature", dest_id: "voicemail_main" });
    await o.f.extension({ digits: "300", dest_kind: "extension", dest_id: await o.f.extension({ digits: "301", dest_kind: "user", dest_id: o.bob }) });
    const c = { [o.bob]: [contact(o.bob, o.bobDev, "sip:1002@10.1.1.2")] };
    const viaExt = await decideRoute(testDeps(platform, { contacts: c }), o.from("200"));
    expect(viaExt.reply.rtjson).toMatchObject({ action: "proxy", routes: [{ uri: "sip:1002@10.1.1.2" }] });
    expect(viaExt.trace.map((s) => s.step)).toEqual(["classify", "extension", "user", "proxy"]);
    const chained = await decideRoute(testDeps(platform, { contacts: c }), o.from("300"));
    expect(chained.reply.rtjson.action).toBe("proxy");
    const feat = await decideRoute(testDeps(platform), o.from("*97"));
    expect(feat.reply.rtjson).toMatchObject({ action: "flow", vars: { feature: "voicemail_main", dest_kind: "feature", dest_id: "voicemail_main" } });
    expect(feat.reply.rtjson.routes![0]!.headers!.extra).toContain("X-Dest: feature:voicemail_main");
    // A stored code that is no feature of ours (an object's own name) is a 404, not a flow.
    await o.f.extension({ digits: "*77", dest_kind: "feature", dest_id: "constructor" });
    expect((await decideRoute(testDeps(platform), o.from("*77"))).reply.rtjson).toMatchObject({ action: "reject", code: 404 });
  });

  test("an unknown extension that is not a number is 404; an unknown device is 403", async () => {
    const o = await office();
    const misdial = await decideRoute(testDeps(platform), o.from("sales"));
    expect(misdial.reply.rtjson.code).toBe(404);
    // A name dialled from a phone is an internal call that found nobody, not an outbound one.
    expect(misdial.direction).toBe("internal");
    const bad = await decideRoute(testDeps(platform), o.from("1002", { device_id: "dev_nope" }));
    expect(bad.reply.rtjson.code).toBe(403);
    // Another account's device named with this account: refused, and nothing is this account's to record.
    const other = await office();
    const foreign = await decideRoute(testDeps(platform), o.from("1002", { device_id: other.aliceDev, user_id: other.alice }));
    expect(foreign.reply.rtjson).toMatchObject({ action: "reject", code: 403, account_id: null });
    expect(foreign.accountId).toBeNull();
    expect(bad.accountId).toBeNull();
  });

  test("a refused call of the account's own device is recorded as that device's call, not an inbound one", async () => {
    const o = await office();
    const wrongUser = await decideRoute(testDeps(platform), o.from("1002", { user_id: o.bob }));
    expect(wrongUser.reply.rtjson).toMatchObject({ action: "reject", code: 403, account_id: o.f.accountId });
    expect(steps(wrongUser)).toContain("user does not own the device");
    expect(wrongUser).toMatchObject({ accountId: o.f.accountId, direction: "internal", userId: o.alice, deviceId: o.aliceDev });
    const off = await o.f.device(o.alice, { status: "disabled" });
    const disabled = await decideRoute(testDeps(platform), o.from("442071234567", { device_id: off }));
    expect(steps(disabled)).toContain("device disabled");
    expect(disabled).toMatchObject({ accountId: o.f.accountId, direction: "outbound", userId: o.alice, deviceId: off });
  });
});
