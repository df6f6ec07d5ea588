/** The config file end to end on the service level: plan, apply, export, validation, secrets, isolation. */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { sql } from "drizzle-orm";
import type { Platform } from "../platform.ts";
import { AppError } from "../errors/app-error.ts";
import { normalizeE164 } from "../validation/fields.ts";
import { storeKind, testPlatform } from "../../../test/support/platform.ts";
import { applyConfig } from "./applier.ts";
import { exportConfig, exportConfigText } from "./exporter.ts";
import { formatPlan, planConfig } from "./planner.ts";
import { parseConfigText } from "./config-file.format.ts";
import { REALISTIC_ENV, realisticYaml, seedConfigAccount, snapshotAccount, CONFIG_TABLES, type SeededAccount } from "./config-file.fixture.ts";

// biome-ignore lint: test data of any shape
type Json = Record<string, any>;

let platform: Platform;

beforeAll(async () => {
  platform = await testPlatform();
});
afterAll(() => platform.close());

const env = REALISTIC_ENV;
const load = (seed: SeededAccount): Json => Bun.YAML.parse(realisticYaml(seed)) as Json;
const clone = <T>(value: T): T => structuredClone(value);

async function rows(table: string, accountId: string): Promise<Json[]> {
  const result: unknown = await platform.db.execute(sql`select * from ${sql.identifier(table)} where account_id = ${accountId}`);
  return (Array.isArray(result) ? result : ((result as { rows?: Json[] }).rows ?? [])) as Json[];
}

/** The error a call throws (fails the test when it does not throw). */
async function failure(run: () => Promise<unknown>): Promise<AppError> {
  try {
    await run();
  } catch (error) {
    if (error instanceof AppError) return error;
    throw error;
  }
  throw new Error("expected an AppError");
}

const paths = (error: AppError) => ((error.extra.details as Array<{ path: string }>) ?? []).map((d) => d.path);

/** The key each exported entry is found by. */
const keyOf = (section: string, e: Json) => (section === "sip_domains" ? e.domain : section === "forwards" ? `${e.user ?? e.did}/${e.trigger}` : e.name);

/** What the file says, in the form the export writes it (numbers normalized, ranges canonical, sets sorted, secrets hidden). */
function expectedForm(section: string, entry: Json): Json {
  const out: Json = { ...entry };
  for (const field of ["number", "cid_number", "did"]) if (typeof out[field] === "string") out[field] = normalizeE164(out[field]);
  if ((out.scope_kind === "did" || out.scope_kind === "number") && out.scope) out.scope = normalizeE164(out.scope);
  if (out.entries) out.entries = [...new Set((out.entries as string[]).map((e) => normalizeE164(e)))].sort();
  if (out.countries) out.countries = [...out.countries].sort();
  if (out.acl) {
    const canonical: Record<string, string> = { "198.51.100.7": "198.51.100.7/32", "2001:DB8:0:0::/64": "2001:db8::/64" };
    out.acl = (out.acl as string[]).map((a) => canonical[a] ?? a).sort();
  }
  if (out.auth_password) out.auth_password = "<unchanged>";
  if (section === "trunks" && out.inbound_password) out.inbound_password = "<unchanged>";
  return out;
}

describe(`config file: happy paths [${storeKind}]`, () => {
  test("the realistic file applies, exports to the same content, and applying again is an empty plan that writes nothing", async () => {
    const seed = await seedConfigAccount(platform);
    const file = load(seed);

    const first = await applyConfig(platform.db, platform.secrets, seed.accountId, file, { env });
    expect(first.applied).toBe(1);
    const created = Object.fromEntries(Object.entries(first.plan.resources).map(([k, v]) => [k, v.create.length]));
    expect(created).toEqual({
      sip_domains: 2,
      trunks: 2,
      outbound_routes: 4,
      number_transforms: 3,
      forwards: 3,
      call_limits: 2,
      caller_id_rules: 2,
      acl_rules: 2,
      recording_rules: 2,
      phone_lists: 1,
      geo_policies: 1,
      rate_plans: 0,
    });
    expect(first.plan.changes).toBe(24);

    // Export = input, semantically: every entry back under its key with what the file said (normalized).
    const exported = (await exportConfig(platform.db, seed.accountId)) as Json;
    expect(Object.keys(exported).sort()).toEqual(Object.keys(file).sort());
    for (const [section, entries] of Object.entries(file)) {
      if (section === "version") continue;
      const byKey = new Map((exported[section] as Json[]).map((e) => [keyOf(section, e), e]));
      expect([...byKey.keys()].sort(), section).toEqual((entries as Json[]).map((e) => keyOf(section, e)).sort());
      for (const entry of entries as Json[]) expect(byKey.get(keyOf(section, entry)), `${section} ${keyOf(section, entry)}`).toMatchObject(expectedForm(section, entry));
    }
    // Defaults are written out, so the export is the whole truth.
    const pbx = (exported.trunks as Json[]).find((t) => t.name === "office-pbx")!;
    expect(pbx).toMatchObject({ provider: "generic", do_register: 0, expire_sec: 3600, status: "active" });
    expect(pbx.auth_password).toBeUndefined();
    // Stable order: routes by priority, transforms by ordering, the primary domain first.
    expect((exported.outbound_routes as Json[]).map((r) => r.name)).toEqual(["office-extensions", "uk-via-carrier-a", "germany", "default"]);
    expect((exported.number_transforms as Json[]).map((r) => r.name)).toEqual(["strip-national-zero", "plus-for-uk-cid", "main-did-short"]);
    expect((exported.sip_domains as Json[])[0]!.is_primary).toBe(1);
    // Exporting twice gives the same text.
    expect(await exportConfigText(platform.db, seed.accountId, "yaml")).toBe(await exportConfigText(platform.db, seed.accountId, "yaml"));

    // Applying again (the file, then the export in both formats) plans nothing and writes nothing.
    const before = await snapshotAccount(platform, seed.accountId);
    for (const again of [
      file,
      parseConfigText(await exportConfigText(platform.db, seed.accountId, "yaml"), "yaml"),
      parseConfigText(await exportConfigText(platform.db, seed.accountId, "json"), "json"),
    ]) {
      const result = await applyConfig(platform.db, platform.secrets, seed.accountId, again, { env });
      expect(result.applied).toBe(0);
      expect(result.plan.changes).toBe(0);
    }
    expect(await snapshotAccount(platform, seed.accountId)).toBe(before);
    expect(formatPlan(await planConfig(platform.db, seed.accountId, file, { secrets: platform.secrets, env }))).toContain("No changes");
  });

  test("what was applied is stored with ids: trunk refs, scopes, ACL, forwards' owners", async () => {
    const seed = await seedConfigAccount(platform);
    await applyConfig(platform.db, platform.secrets, seed.accountId, load(seed), { env });
    const trunks = await rows("sip_trunk", seed.accountId);
    const carrier = trunks.find((t) => t.name === "carrier-a")!;
    expect(carrier.id).toMatch(/^trk_/);
    expect(carrier.auth_secret_ref).toMatch(/^sec_/);
    expect(carrier.inbound_secret_ref).toBeNull();
    const routes = await rows("outbound_route", seed.accountId);
    expect(routes.find((r) => r.name === "uk-via-carrier-a")).toMatchObject({ via: "trunk", trunk_id: carrier.id, match_prefix: "44", priority: 10 });
    expect(routes.find((r) => r.name === "germany")).toMatchObject({ via: "carrier", trunk_id: null, match_country: "DE" });
    const transforms = await rows("number_transform", seed.accountId);
    expect(transforms.find((t) => t.name === "strip-national-zero")).toMatchObject({ scope_kind: "trunk", scope_id: carrier.id });
    expect(transforms.find((t) => t.name === "main-did-short")).toMatchObject({ scope_kind: "did", scope_id: seed.numbers["14155550100"] });
    expect(transforms.find((t) => t.name === "plus-for-uk-cid")).toMatchObject({ scope_kind: "account", scope_id: seed.accountId });
    const acl = (await rows("sip_trunk_acl", seed.accountId)).filter((a) => a.trunk_id === carrier.id).map((a) => a.cidr).sort();
    expect(acl).toEqual(["192.0.2.0/24", "198.51.100.7/32"]);
    const forwards = await rows("forward", seed.accountId);
    expect(forwards.find((f) => f.trigger === "no_answer")).toMatchObject({ user_id: seed.users.alice, number_id: null, number: "447700900123", timeout_sec: 15, cid_mode: "did", confirm: 1 });
    expect(forwards.find((f) => f.trigger === "unreachable")).toMatchObject({ user_id: null, number_id: seed.numbers["14155550100"], cid_number: "14155550100" });
    expect((await rows("call_limit", seed.accountId)).find((c) => c.name === "alice-hourly-out")).toMatchObject({ scope_kind: "user", scope_id: seed.users.alice, hard: 0 });
    expect((await rows("phone_list_entry", seed.accountId)).map((e) => e.e164).sort()).toEqual(["12125550101", "12125550102", "442079460000"]);
    expect((await rows("geo_policy_country", seed.accountId)).map((e) => e.country).sort()).toEqual(["CA", "DE", "GB", "NO", "US"]);
  });

  test("a change plans exactly that change: one field edited, one trunk (and the route using it) removed", async () => {
    const seed = await seedConfigAccount(platform);
    const file = load(seed);
    await applyConfig(platform.db, platform.secrets, seed.accountId, file, { env });
    const storedTrunks = await rows("sip_trunk", seed.accountId);
    const pbxId = storedTrunks.find((t) => t.name === "office-pbx")!.id;
    const carrierId = storedTrunks.find((t) => t.name === "carrier-a")!.id;

    const changed = clone(file);
    changed.trunks[0].proxy = "sip2.carrier-a.example.com";
    changed.trunks.splice(1, 1);
    changed.outbound_routes = changed.outbound_routes.filter((r: Json) => r.name !== "office-extensions");
    const plan = await planConfig(platform.db, seed.accountId, changed, { secrets: platform.secrets, env });
    expect(plan.changes).toBe(3);
    expect(plan.resources.trunks).toEqual({
      create: [],
      update: [{ key: "carrier-a", id: carrierId, changes: [{ field: "proxy", old: "sip.carrier-a.example.com:5060", new: "sip2.carrier-a.example.com" }] }],
      delete: [{ key: "office-pbx", id: pbxId }],
    });
    expect(plan.resources.outbound_routes.delete.map((d) => d.key)).toEqual(["office-extensions"]);
    for (const [name, section] of Object.entries(plan.resources)) {
      if (name === "trunks" || name === "outbound_routes") continue;
      expect(section, name).toEqual({ create: [], update: [], delete: [] });
    }
    expect(formatPlan(plan)).toContain('proxy: "sip.carrier-a.example.com:5060" → "sip2.carrier-a.example.com"');

    const result = await applyConfig(platform.db, platform.secrets, seed.accountId, changed, { env });
    expect(result.plan).toEqual(plan);
    const after = await rows("sip_trunk", seed.accountId);
    expect(after.map((t) => t.name)).toEqual(["carrier-a"]);
    expect(after[0]!.id).toBe(carrierId); // updated in place
    expect((await rows("sip_trunk_acl", seed.accountId)).some((a) => a.trunk_id === pbxId)).toBe(false);
    expect((await planConfig(platform.db, seed.accountId, changed, { secrets: platform.secrets, env })).changes).toBe(0);
  });

  test("sets change member by member; an update keeps the id", async () => {
    const seed = await seedConfigAccount(platform);
    const file = load(seed);
    await applyConfig(platform.db, platform.secrets, seed.accountId, file, { env });
    const listId = (await rows("phone_list", seed.accountId))[0]!.id;
    const changed = clone(file);
    changed.phone_lists[0].entries = ["12125550101", "12125550103", "12125550102"];
    changed.geo_policies[0].countries = ["US", "CA"];
    changed.trunks[0].acl = ["192.0.2.0/24", "192.0.2.128/25"];
    const { plan } = await applyConfig(platform.db, platform.secrets, seed.accountId, changed, { env });
    expect(plan.resources.phone_lists.update).toEqual([{ key: "dnc", id: listId, changes: [{ field: "entries", added: ["12125550103"], removed: ["442079460000"] }] }]);
    expect(plan.resources.geo_policies.update[0]!.changes).toEqual([{ field: "countries", added: [], removed: ["DE", "GB", "NO"] }]);
    expect(plan.resources.trunks.update[0]!.changes).toEqual([{ field: "acl", added: ["192.0.2.128/25"], removed: ["198.51.100.7/32"] }]);
    expect((await rows("phone_list", seed.accountId))[0]!.id).toBe(listId);
    expect((await rows("phone_list_entry", seed.accountId)).map((e) => e.e164).sort()).toEqual(["12125550101", "12125550102", "12125550103"]);
  });

  test("a key change is a delete and a create; an empty file deletes everything the account had", async () => {
    const seed = await seedConfigAccount(platform);
    const file = load(seed);
    await applyConfig(platform.db, platform.secrets, seed.accountId, file, { env });
    const renamed = clone(file);
    renamed.call_limits[0].name = "account-ceiling";
    const plan = await planConfig(platform.db, seed.accountId, renamed, { secrets: platform.secrets, env });
    expect(plan.resources.call_limits.create.map((c) => c.key)).toEqual(["account-ceiling"]);
    expect(plan.resources.call_limits.delete.map((c) => c.key)).toEqual(["account-concurrent"]);
    expect(plan.changes).toBe(2);

    const wiped = await applyConfig(platform.db, platform.secrets, seed.accountId, { version: 1 }, { env });
    expect(wiped.plan.changes).toBe(24);
    for (const table of CONFIG_TABLES) expect(await rows(table, seed.accountId), table).toEqual([]);
    expect(await exportConfig(platform.db, seed.accountId)).toEqual({ version: 1 });
  });

  test("the complete example of docs/config-file.md applies as written", async () => {
    const seed = await seedConfigAccount(platform);
    const doc = await Bun.file(new URL("../../../docs/config-file.md", import.meta.url)).text();
    const example = /## A complete example\s+```yaml\n([\s\S]*?)```/.exec(doc)?.[1];
    expect(example).toBeDefined();
    const text = example!
      .replaceAll("acme.sip.example.com", `acme-${seed.tag}.sip.example.com`)
      .replaceAll("acme.example.net", `acme-${seed.tag}.example.net`)
      .replace(/overflow_dest_kind: voicemail\n(\s+)overflow_dest_id: vm_\w+/, `overflow_dest_kind: user\n$1overflow_dest_id: ${seed.users.bob}`);
    const result = await applyConfig(platform.db, platform.secrets, seed.accountId, parseConfigText(text, "yaml"), { env: { CARRIER_A_PASSWORD: "pw" } });
    expect(result.plan.changes).toBe(24);
  });

  test("JSON files work the same as YAML", async () => {
    const seed = await seedConfigAccount(platform);
    const json = JSON.stringify(load(seed));
    const result = await applyConfig(platform.db, platform.secrets, seed.accountId, parseConfigText(json, "json"), { env });
    expect(result.plan.changes).toBe(24);
    expect((await planConfig(platform.db, seed.accountId, JSON.parse(json), { secrets: platform.secrets, env })).changes).toBe(0);
  });
});

describe(`config file: secrets [${storeKind}]`, () => {
  test("a password is stored only as a secret ref: ciphertext in `secret`, nowhere in plain text, never exported or planned", async () => {
    const seed = await seedConfigAccount(platform);
    const password = env.CARRIER_PASSWORD;
    const file = load(seed);
    file.trunks[1].inbound_auth = "digest";
    file.trunks[1].inbound_username = `pbx-in-${seed.accountId.slice(-8)}`; // unique platform-wide
    file.trunks[1].inbound_password = "plain-Inbound-Pw-42";
    const { plan } = await applyConfig(platform.db, platform.secrets, seed.accountId, file, { env });
    expect(JSON.stringify(plan)).not.toContain(password);
    expect(JSON.stringify(plan)).not.toContain("plain-Inbound-Pw-42");
    expect(plan.resources.trunks.create[0]!.values.auth_password).toBe("<secret>");

    const trunks = await rows("sip_trunk", seed.accountId);
    const carrier = trunks.find((t) => t.name === "carrier-a")!;
    const pbx = trunks.find((t) => t.name === "office-pbx")!;
    expect(await platform.secrets.reveal(platform.db, seed.accountId, carrier.auth_secret_ref)).toBe(password);
    expect(await platform.secrets.reveal(platform.db, seed.accountId, pbx.inbound_secret_ref)).toBe("plain-Inbound-Pw-42");
    const secretRows = await rows("secret", seed.accountId);
    expect(secretRows.map((s) => s.id).sort()).toEqual([carrier.auth_secret_ref, pbx.inbound_secret_ref].sort());
    const everything = await snapshotAccount(platform, seed.accountId);
    for (const plain of [password, "plain-Inbound-Pw-42", Buffer.from(password).toString("base64")]) expect(everything).not.toContain(plain);

    for (const format of ["yaml", "json"] as const) {
      const text = await exportConfigText(platform.db, seed.accountId, format);
      expect(text).not.toContain(password);
      expect(text).not.toContain("plain-Inbound-Pw-42");
      expect(text).toContain("<unchanged>");
    }
  });

  test("a new password shows as changed (never its value); <unchanged> keeps it; leaving it out removes it", async () => {
    const seed = await seedConfigAccount(platform);
    const file = load(seed);
    await applyConfig(platform.db, platform.secrets, seed.accountId, file, { env });
    const ref = (await rows("sip_trunk", seed.accountId)).find((t) => t.name === "carrier-a")!.auth_secret_ref as string;

    const rotated = await applyConfig(platform.db, platform.secrets, seed.accountId, file, { env: { CARRIER_PASSWORD: "rotated-Pw-2" } });
    expect(rotated.plan.resources.trunks.update).toEqual([{ key: "carrier-a", id: expect.any(String), changes: [{ field: "auth_password", secret: "changed" }] }]);
    expect(JSON.stringify(rotated.plan)).not.toContain("rotated-Pw-2");
    expect(await platform.secrets.reveal(platform.db, seed.accountId, ref)).toBe("rotated-Pw-2");

    const kept = clone(file);
    kept.trunks[0].auth_password = "<unchanged>";
    expect((await applyConfig(platform.db, platform.secrets, seed.accountId, kept, { env: {} })).plan.changes).toBe(0);
    // Without a secret store the planner cannot compare, so a given plaintext counts as changed.
    expect((await planConfig(platform.db, seed.accountId, file, { env: { CARRIER_PASSWORD: "rotated-Pw-2" } })).changes).toBe(1);
    expect((await planConfig(platform.db, seed.accountId, file, { secrets: platform.secrets, env: { CARRIER_PASSWORD: "rotated-Pw-2" } })).changes).toBe(0);

    const dropped = clone(file);
    dropped.trunks[0].do_register = 0;
    delete dropped.trunks[0].auth_password;
    const removal = await applyConfig(platform.db, platform.secrets, seed.accountId, dropped, { env });
    expect(removal.plan.resources.trunks.update[0]!.changes).toEqual([
      { field: "do_register", old: 1, new: 0 },
      { field: "auth_password", secret: "removed" },
    ]);
    expect((await rows("sip_trunk", seed.accountId)).find((t) => t.name === "carrier-a")!.auth_secret_ref).toBeNull();
    expect(await rows("secret", seed.accountId)).toEqual([]);

    const deleted = clone(file);
    deleted.trunks[0].auth_password = "again-Pw";
    await applyConfig(platform.db, platform.secrets, seed.accountId, deleted, { env });
    expect((await rows("secret", seed.accountId)).length).toBe(1);
    deleted.trunks[0] = { name: "carrier-b", proxy: "sip.b.example.com", direction: "outbound" };
    deleted.outbound_routes[0].trunk = "carrier-b";
    deleted.number_transforms[0].scope = "carrier-b";
    await applyConfig(platform.db, platform.secrets, seed.accountId, deleted, { env });
    expect(await rows("secret", seed.accountId)).toEqual([]); // the deleted trunk's secret went with it
  });
});

describe(`config file: errors [${storeKind}]`, () => {
  test("every validation problem is a 400 with its JSON pointer in the file, and nothing is written", async () => {
    const seed = await seedConfigAccount(platform);
    const base = load(seed);
    await applyConfig(platform.db, platform.secrets, seed.accountId, base, { env });
    const before = await snapshotAccount(platform, seed.accountId);
    const cases: Array<[string, (f: Json) => void, string]> = [
      ["version", (f) => (f.version = 2), "/version"],
      ["unknown section", (f) => (f.trunkz = []), "/trunkz"],
      ["unknown field", (f) => (f.trunks[0].password = "x"), "/trunks/0/password"],
      ["bad proxy", (f) => (f.trunks[1].proxy = "not a host!"), "/trunks/1/proxy"],
      ["proxy port", (f) => (f.trunks[0].proxy = "sip.example.com:70000"), "/trunks/0/proxy"],
      ["transport", (f) => (f.trunks[0].transport = "sctp"), "/trunks/0/transport"],
      ["flag as string", (f) => (f.trunks[0].do_register = "1"), "/trunks/0/do_register"],
      ["expire range", (f) => (f.trunks[0].expire_sec = 10), "/trunks/0/expire_sec"],
      ["register needs a username", (f) => delete f.trunks[0].auth_username, "/trunks/0/auth_username"],
      ["outbound needs a proxy", (f) => delete f.trunks[1].proxy, "/trunks/1/proxy"],
      ["acl not a range", (f) => (f.trunks[1].acl[1] = "203.0.113.0/33"), "/trunks/1/acl/1"],
      ["acl host bits", (f) => (f.trunks[0].acl[0] = "192.0.2.1/24"), "/trunks/0/acl/0"],
      ["acl twice", (f) => f.trunks[0].acl.push("198.51.100.7/32"), "/trunks/0/acl/2"],
      ["inbound ip without acl", (f) => (f.trunks[1].acl = []), "/trunks/1/acl"],
      ["PBX by address wider than /24", (f) => (f.trunks[1].role = "pbx", f.trunks[1].acl = ["198.51.100.0/24", "203.0.112.0/23"]), "/trunks/1/acl/1"],
      ["PBX by address wider than /56", (f) => (f.trunks[1].role = "pbx", f.trunks[1].acl = ["2001:db8::/48"]), "/trunks/1/acl/0"],
      ["carrier by address wider than /24", (f) => (f.trunks[1].acl = ["0.0.0.0/0"]), "/trunks/1/acl/0"],
      ["carrier by address wider than /48", (f) => (f.trunks[1].acl = ["198.51.100.0/24", "2001:db8::/32"]), "/trunks/1/acl/1"],
      ["reg_node not a node name", (f) => (f.trunks[0].reg_node = "edge 1"), "/trunks/0/reg_node"],
      ["digest without credentials", (f) => (f.trunks[1].inbound_auth = "digest"), "/trunks/1/inbound_username"],
      ["duplicate trunk", (f) => (f.trunks[1].name = "carrier-a"), "/trunks/1/name"],
      ["trunk cid", (f) => (f.trunks[0].cid_number = "12"), "/trunks/0/cid_number"],
      ["env unset", (f) => (f.trunks[0].auth_password = "${NOT_SET_ANYWHERE}"), "/trunks/0/auth_password"],
      ["unchanged on a new trunk", (f) => f.trunks.push({ name: "carrier-new", proxy: "sip.new.example.com", direction: "outbound", auth_username: "u", auth_password: "<unchanged>" }), "/trunks/2/auth_password"],
      ["unchanged where none is stored", (f) => (f.trunks[1].auth_username = "u", f.trunks[1].auth_password = "<unchanged>"), "/trunks/1/auth_password"],
      ["route to an unknown trunk", (f) => (f.outbound_routes[0].trunk = "nope"), "/outbound_routes/0/trunk"],
      ["route via carrier with a trunk", (f) => (f.outbound_routes[1].trunk = "carrier-a"), "/outbound_routes/1/trunk"],
      ["route via trunk without one", (f) => delete f.outbound_routes[0].trunk, "/outbound_routes/0/trunk"],
      ["route over an inbound trunk", (f) => (f.trunks[1].direction = "inbound"), "/outbound_routes/2/trunk"],
      ["prefix with +", (f) => (f.outbound_routes[0].match_prefix = "+44"), "/outbound_routes/0/match_prefix"],
      ["prefix as a YAML number", (f) => (f.outbound_routes[0].match_prefix = 44), "/outbound_routes/0/match_prefix"],
      ["country", (f) => (f.outbound_routes[1].match_country = "UK"), "/outbound_routes/1/match_country"],
      ["duplicate route", (f) => (f.outbound_routes[1].name = "uk-via-carrier-a"), "/outbound_routes/1/name"],
      ["regex syntax", (f) => (f.number_transforms[0].match_regex = "^0(\\d+"), "/number_transforms/0/match_regex"],
      ["nested quantifier", (f) => (f.number_transforms[1].match_regex = "^(\\d+)+$"), "/number_transforms/1/match_regex"],
      ["regex too long", (f) => (f.number_transforms[0].match_regex = "1".repeat(201)), "/number_transforms/0/match_regex"],
      ["replacement group", (f) => (f.number_transforms[0].replacement = "$2"), "/number_transforms/0/replacement"],
      ["replacement text", (f) => (f.number_transforms[0].replacement = "abc"), "/number_transforms/0/replacement"],
      ["replacement named group the pattern lacks", (f) => (f.number_transforms[0].replacement = "44$<nn>"), "/number_transforms/0/replacement"],
      ["transform on an unknown trunk", (f) => (f.number_transforms[0].scope = "nope"), "/number_transforms/0/scope"],
      ["transform on a DID of no one", (f) => (f.number_transforms[2].scope = "19995550000"), "/number_transforms/2/scope"],
      ["transform without scope", (f) => delete f.number_transforms[2].scope, "/number_transforms/2/scope"],
      ["transform scope kind", (f) => (f.number_transforms[0].scope_kind = "user"), "/number_transforms/0/scope_kind"],
      ["inbound transform on a route", (f) => (f.number_transforms[0].scope_kind = "route", f.number_transforms[0].scope = "default"), "/number_transforms/0/direction"],
      ["forward of an unknown user", (f) => (f.forwards[0].user = "carol"), "/forwards/0/user"],
      ["forward with user and did", (f) => (f.forwards[0].did = "14155550100"), "/forwards/0/user"],
      ["forward of a DID of no one", (f) => (f.forwards[2].did = "19995550000"), "/forwards/2/did"],
      ["forward target", (f) => (f.forwards[1].number = "0"), "/forwards/1/number"],
      ["timeout on busy", (f) => (f.forwards[1].timeout_sec = 20), "/forwards/1/timeout_sec"],
      ["timeout range", (f) => (f.forwards[0].timeout_sec = 200), "/forwards/0/timeout_sec"],
      ["custom cid missing", (f) => delete f.forwards[2].cid_number, "/forwards/2/cid_number"],
      ["cid without custom", (f) => (f.forwards[1].cid_number = "14155550100"), "/forwards/1/cid_number"],
      ["trigger", (f) => (f.forwards[1].trigger = "sometimes"), "/forwards/1/trigger"],
      ["duplicate forward", (f) => (f.forwards[1].trigger = "no_answer"), "/forwards/1/trigger"],
      ["overflow to a missing user", (f) => (f.forwards[0].overflow_dest_id = "us_00000000000000000000000000"), "/forwards/0/overflow_dest_id"],
      ["overflow to a forward", (f) => (f.forwards[0].overflow_dest_kind = "forward", f.forwards[0].overflow_dest_id = "fwd_x"), "/forwards/0/overflow_dest_kind"],
      ["overflow id without kind", (f) => delete f.forwards[0].overflow_dest_kind, "/forwards/0/overflow_dest_kind"],
      ["limit below zero", (f) => (f.call_limits[0].max_count = -1), "/call_limits/0/max_count"],
      ["limit of an unknown user", (f) => (f.call_limits[1].scope = "carol"), "/call_limits/1/scope"],
      ["account scope with a scope", (f) => (f.call_limits[0].scope = "alice"), "/call_limits/0/scope"],
      ["caller-ID number", (f) => (f.caller_id_rules[0].cid_number = "not a number"), "/caller_id_rules/0/cid_number"],
      ["ip rule with a country", (f) => (f.acl_rules[1].rule_type = "ip_deny"), "/acl_rules/1/value"],
      ["geo rule with a range", (f) => (f.acl_rules[0].rule_type = "geo_allow"), "/acl_rules/0/value"],
      ["recording mode", (f) => (f.recording_rules[0].mode = "always"), "/recording_rules/0/mode"],
      ["list entry", (f) => (f.phone_lists[0].entries[1] = "12"), "/phone_lists/0/entries/1"],
      ["list entry twice", (f) => (f.phone_lists[0].entries[1] = "+1 212 555 0101"), "/phone_lists/0/entries/1"],
      ["list kind", (f) => (f.phone_lists[0].kind = "block"), "/phone_lists/0/kind"],
      ["geo country", (f) => (f.geo_policies[0].countries[0] = "XX"), "/geo_policies/0/countries/0"],
      ["empty allowlist", (f) => (f.geo_policies[0].countries = []), "/geo_policies/0/countries"],
      ["geo country the router never detects", (f) => (f.geo_policies[0].countries[1] = "MF"), "/geo_policies/0/countries/1"],
      ["geo country as a non-country", (f) => (f.geo_policies[0].countries[1] = "QQ"), "/geo_policies/0/countries/1"],
      ["route country the router never detects", (f) => (f.outbound_routes[1].match_country = "PN"), "/outbound_routes/1/match_country"],
      ["caller-ID rule country the router never detects", (f) => (f.caller_id_rules[0].match_country = "BL"), "/caller_id_rules/0/match_country"],
      ["two primary domains", (f) => (f.sip_domains[1].is_primary = 1), "/sip_domains/1/is_primary"],
      ["no primary domain", (f) => (f.sip_domains[0].is_primary = 0), "/sip_domains/0/is_primary"],
      ["upper-case domain", (f) => (f.sip_domains[0].domain = "ACME.example.com"), "/sip_domains/0/domain"],
      ["duplicate domain", (f) => (f.sip_domains[1].domain = f.sip_domains[0].domain), "/sip_domains/1/domain"],
    ];
    for (const [name, mutate, path] of cases) {
      const file = clone(base);
      mutate(file);
      const error = await failure(() => applyConfig(platform.db, platform.secrets, seed.accountId, file, { env }));
      expect(error.status, name).toBe(400);
      expect(error.code, name).toBe("validation_failed");
      expect(paths(error), name).toContain(path);
      if (process.env.DUMP_ERRORS) console.log(name, "→", JSON.stringify(error.extra.details ?? error.message));
      const planError = await failure(() => planConfig(platform.db, seed.accountId, file, { secrets: platform.secrets, env }));
      expect(paths(planError), name).toContain(path);
    }
    expect(await snapshotAccount(platform, seed.accountId)).toBe(before);
  });

  test("geo policies name territories that share a calling code (JE, GG, IM …) and ZZ, numbers of no country; a country never detected is refused with the reason", async () => {
    const seed = await seedConfigAccount(platform);
    const file = load(seed);
    file.geo_policies = [{ name: "no-crown-or-satellite", mode: "denylist", countries: ["JE", "GG", "IM", "ZZ"] }];
    file.outbound_routes[1].match_country = "JE";
    await applyConfig(platform.db, platform.secrets, seed.accountId, file, { env });
    const exported = await exportConfig(platform.db, seed.accountId);
    expect(exported.geo_policies).toEqual([expect.objectContaining({ name: "no-crown-or-satellite", countries: ["GG", "IM", "JE", "ZZ"] })]);
    file.geo_policies[0].countries.push("MF");
    const error = await failure(() => applyConfig(platform.db, platform.secrets, seed.accountId, file, { env }));
    expect(error.status).toBe(400);
    const detail = (error.extra.details as Array<{ path: string; message: string }>).find((d) => d.path === "/geo_policies/0/countries/4");
    expect(detail?.message).toContain("+590");
    expect(detail?.message).toContain("GP");
    // ZZ is a geo policy's word for no country, not a destination a route or a caller-ID rule matches.
    const zz = load(seed);
    zz.outbound_routes[1].match_country = "ZZ";
    expect(paths(await failure(() => applyConfig(platform.db, platform.secrets, seed.accountId, zz, { env })))).toContain("/outbound_routes/1/match_country");
  });

  test("several problems are reported together, sorted by path", async () => {
    const seed = await seedConfigAccount(platform);
    const file = load(seed);
    file.trunks[1].proxy = "bad host";
    file.outbound_routes[0].trunk = "nope";
    file.forwards[0].user = "carol";
    const schemaError = await failure(() => applyConfig(platform.db, platform.secrets, seed.accountId, file, { env }));
    expect(paths(schemaError)).toEqual(["/trunks/1/proxy"]); // the shape is checked first
    file.trunks[1].proxy = "pbx.example.com";
    const error = await failure(() => applyConfig(platform.db, platform.secrets, seed.accountId, file, { env }));
    expect(paths(error)).toEqual(["/outbound_routes/0/trunk", "/forwards/0/user"].sort((a, b) => a.localeCompare(b, "en", { numeric: true })));
    expect(await rows("sip_trunk", seed.accountId)).toEqual([]);
  });

  test("unparseable text and a file that is not a mapping are 400 at the root", async () => {
    for (const [text, format] of [["version: [1", "yaml"], ["{ nope", "json"]] as const) {
      const error = await failure(async () => parseConfigText(text, format));
      expect(error.status).toBe(400);
      expect(paths(error)).toEqual([""]);
    }
    const seed = await seedConfigAccount(platform);
    for (const file of [null, [], "version: 1", 1]) {
      const error = await failure(() => planConfig(platform.db, seed.accountId, file));
      expect(paths(error)).toEqual([""]);
    }
    const multi = await failure(async () => parseConfigText("version: 1\n---\nversion: 1\n", "yaml"));
    expect(multi.status).toBe(400);
  });

  test("an unknown account is 404", async () => {
    for (const run of [
      () => planConfig(platform.db, "acc_nope", { version: 1 }),
      () => applyConfig(platform.db, platform.secrets, "acc_nope", { version: 1 }),
      () => exportConfig(platform.db, "acc_nope"),
    ]) {
      expect((await failure(run)).status).toBe(404);
    }
  });

  test("deleting a forward a number still routes to is a 409 naming the number; nothing is written", async () => {
    const seed = await seedConfigAccount(platform);
    const file = load(seed);
    await applyConfig(platform.db, platform.secrets, seed.accountId, file, { env });
    const forward = (await rows("forward", seed.accountId)).find((f) => f.trigger === "unreachable")!;
    const numberId = seed.numbers["442071230000"]!;
    await platform.db.execute(sql`update number set dest_kind = 'forward', dest_id = ${forward.id} where account_id = ${seed.accountId} and id = ${numberId}`);
    const before = await snapshotAccount(platform, seed.accountId);
    const without = clone(file);
    without.forwards.splice(2, 1);
    const error = await failure(() => applyConfig(platform.db, platform.secrets, seed.accountId, without, { env }));
    expect(error.status).toBe(409);
    expect(error.extra.used_by).toEqual([{ kind: "number", id: numberId }]);
    expect(await snapshotAccount(platform, seed.accountId)).toBe(before);
    // Editing it keeps its id, so the number still reaches it.
    const edited = clone(file);
    edited.forwards[2].number = "14155550198";
    await applyConfig(platform.db, platform.secrets, seed.accountId, edited, { env });
    expect((await rows("forward", seed.accountId)).find((f) => f.trigger === "unreachable")).toMatchObject({ id: forward.id, number: "14155550198" });
  });

  test("removing a SIP domain devices authenticate in is a 409 naming them", async () => {
    const seed = await seedConfigAccount(platform);
    const file = load(seed);
    await applyConfig(platform.db, platform.secrets, seed.accountId, file, { env });
    const realm = file.sip_domains[1].domain as string;
    const now = Math.floor(Date.now() / 1000);
    await platform.db.execute(
      sql`insert into device (account_id, id, user_id, auth_username, realm, ha1, ha1b, created_at, updated_at) values (${seed.accountId}, 'dev_TESTDEVICE0000000000000000', ${seed.users.alice}, 'alice', ${realm}, 'x', 'y', ${now}, ${now})`,
    );
    const without = clone(file);
    without.sip_domains.splice(1, 1);
    const error = await failure(() => applyConfig(platform.db, platform.secrets, seed.accountId, without, { env }));
    expect(error.status).toBe(409);
    expect(error.extra.used_by).toEqual([{ kind: "device", id: "dev_TESTDEVICE0000000000000000" }]);
  });
});

describe(`config file: isolation [${storeKind}]`, () => {
  test("two applies of one file at once: one writes, the other then finds nothing to do", async () => {
    const seed = await seedConfigAccount(platform);
    const file = load(seed);
    const results = await Promise.all([0, 1, 2].map(() => applyConfig(platform.db, platform.secrets, seed.accountId, clone(file), { env })));
    expect(results.map((r) => r.applied).sort()).toEqual([0, 0, 1]);
    expect((await rows("sip_trunk", seed.accountId)).length).toBe(2);
    expect((await rows("secret", seed.accountId)).length).toBe(1);
  });

  test("applying to one account leaves another untouched; the same names live in both", async () => {
    const a = await seedConfigAccount(platform);
    const b = await seedConfigAccount(platform);
    await applyConfig(platform.db, platform.secrets, a.accountId, load(a), { env });
    const aBefore = await snapshotAccount(platform, a.accountId);
    const bFile = load(b);
    await applyConfig(platform.db, platform.secrets, b.accountId, bFile, { env });
    bFile.trunks.splice(1, 1);
    bFile.outbound_routes = bFile.outbound_routes.filter((r: Json) => r.name !== "office-extensions");
    bFile.call_limits = [];
    await applyConfig(platform.db, platform.secrets, b.accountId, bFile, { env });
    await applyConfig(platform.db, platform.secrets, b.accountId, { version: 1 }, { env });
    expect(await snapshotAccount(platform, a.accountId)).toBe(aBefore);
    expect((await planConfig(platform.db, a.accountId, load(a), { secrets: platform.secrets, env })).changes).toBe(0);
  });

  test("another account's SIP domain is a 409; its users, DIDs and ids are unknown here", async () => {
    const a = await seedConfigAccount(platform);
    const b = await seedConfigAccount(platform);
    const aFile = load(a);
    await applyConfig(platform.db, platform.secrets, a.accountId, aFile, { env });
    const bBefore = await snapshotAccount(platform, b.accountId);

    const steal = load(b);
    steal.sip_domains[1].domain = aFile.sip_domains[1].domain;
    const taken = await failure(() => applyConfig(platform.db, platform.secrets, b.accountId, steal, { env }));
    expect(taken.status).toBe(409);
    expect(taken.extra.field).toBe("/sip_domains/1/domain");

    const foreignUser = load(b);
    foreignUser.forwards[0].overflow_dest_id = a.users.bob; // a user id of account a
    expect(paths(await failure(() => applyConfig(platform.db, platform.secrets, b.accountId, foreignUser, { env })))).toContain("/forwards/0/overflow_dest_id");

    await platform.db.execute(sql`update number set e164 = '15005550000' where account_id = ${b.accountId} and e164 = '14155550100'`);
    const foreignDid = load(b); // 14155550100 is now only account a's
    expect(paths(await failure(() => applyConfig(platform.db, platform.secrets, b.accountId, foreignDid, { env })))).toEqual(
      expect.arrayContaining(["/number_transforms/2/scope", "/forwards/2/did"]),
    );
    expect(await snapshotAccount(platform, b.accountId)).toBe(bBefore);
  });

  test("a stored reference whose target was deleted exports as its raw id and is refused on apply", async () => {
    const seed = await seedConfigAccount(platform);
    const file = load(seed);
    await applyConfig(platform.db, platform.secrets, seed.accountId, file, { env });
    await platform.db.execute(sql`delete from app_user where account_id = ${seed.accountId} and username = 'bob'`);
    const exported = (await exportConfig(platform.db, seed.accountId)) as Json;
    const rule = (exported.recording_rules as Json[]).find((r) => r.name === "bob-on-demand")!;
    expect(rule.scope).toBe(seed.users.bob);
    const error = await failure(() => applyConfig(platform.db, platform.secrets, seed.accountId, exported, { env }));
    expect(paths(error)).toEqual(expect.arrayContaining(["/recording_rules/0/scope"]));
  });
});
