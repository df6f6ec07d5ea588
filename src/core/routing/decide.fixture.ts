/**
 * Test fixtures for the router: rows written straight into the tables (the config file and /v1
 * services validate them; the router tests need exact shapes, fast), and deps with injected presence.
 */
import type { Platform } from "../platform.ts";
import { newId } from "../ids/ids.ts";
import { nowSeconds } from "../db/columns.ts";
import { accounts } from "../accounts/accounts.schema.ts";
import { appUsers } from "../users/users.schema.ts";
import { devices } from "../devices/devices.schema.ts";
import { didLookup, numbers } from "../numbers/numbers.schema.ts";
import { extensions } from "../extensions/extensions.schema.ts";
import { forwards } from "../forwards/forwards.schema.ts";
import { timeScheduleRules, timeSchedules } from "../schedules/schedules.schema.ts";
import { numberTransforms, outboundRoutes, sipTrunkAcls, sipTrunks } from "../trunks/trunks.schema.ts";
import { aclRules, callerIdRules, callLimits, geoPolicies, geoPolicyCountries, phoneListEntries, phoneLists } from "../policies/policies.schema.ts";
import { flows } from "../flows/flows.schema.ts";
import { createAccount } from "../accounts/accounts.service.ts";
import { eq } from "drizzle-orm";
import type { RegisteredContact } from "../presence/presence.service.ts";
import type { RouteDeps, RouteSettings } from "./decide.ts";
import { parseCidrList } from "../net/cidr.ts";

const stamp = () => ({ created_at: nowSeconds(), updated_at: nowSeconds() });
let seq = 0;
/**
 * The subscriber part of the last number handed out: one after another from a random start, so no
 * two numbers of a run are alike (random ones were: 7 digits give a birthday collision within a few
 * thousand numbers, which failed a test on a duplicate did_lookup key), and runs on a reused database
 * rarely overlap.
 */
let numberSeq = Math.floor(Math.random() * 1e7);
/** A DID no other test uses: `prefix` (default 1415) and 7 more digits. */
export function freshE164(prefix = "1415"): string {
  numberSeq = (numberSeq + 1) % 1e7;
  return prefix + String(numberSeq).padStart(7, "0");
}

/** An account and a helper to add rows to it. */
export async function routeFixture(platform: Platform, accountPatch: Partial<typeof accounts.$inferInsert> = {}) {
  const db = platform.db;
  const account = await createAccount(db, { name: `Route ${++seq}` });
  if (Object.keys(accountPatch).length) await db.update(accounts).set(accountPatch).where(eq(accounts.id, account.id));
  const accountId = account.id;
  const name = () => `n${++seq}`;
  return {
    accountId,
    async user(patch: Partial<typeof appUsers.$inferInsert> = {}) {
      const id = newId("us");
      await db.insert(appUsers).values({ account_id: accountId, id, username: `u${++seq}`, display_name: "User", ...stamp(), ...patch });
      return id;
    },
    async device(userId: string, patch: Partial<typeof devices.$inferInsert> = {}) {
      const id = newId("dev");
      await db.insert(devices).values({ account_id: accountId, id, user_id: userId, auth_username: `d${++seq}`, realm: "r.example", ha1: "x", ha1b: "x", ...stamp(), ...patch });
      return id;
    },
    async number(patch: Partial<typeof numbers.$inferInsert> & { dest_kind: string }) {
      const id = newId("num");
      const e164 = patch.e164 ?? freshE164();
      await db.insert(numbers).values({ account_id: accountId, id, ...stamp(), ...patch, e164 });
      await db.insert(didLookup).values({ e164, account_id: accountId, number_id: id });
      return { id, e164 };
    },
    async extension(patch: Partial<typeof extensions.$inferInsert> & { digits: string; dest_kind: string }) {
      const id = newId("ext");
      await db.insert(extensions).values({ account_id: accountId, id, ...stamp(), ...patch });
      return id;
    },
    async flow(published = 1) {
      const id = newId("flow");
      await db.insert(flows).values({ account_id: accountId, id, name: name(), is_published: published, version: published, ...stamp() });
      return id;
    },
    async forward(patch: Partial<typeof forwards.$inferInsert> & { number: string; trigger: string }) {
      const id = newId("fwd");
      await db.insert(forwards).values({ account_id: accountId, id, ...stamp(), ...patch });
      return id;
    },
    async schedule(timezone: string | null, rules: Array<Partial<typeof timeScheduleRules.$inferInsert> & { kind: string }>) {
      const id = newId("sch");
      await db.insert(timeSchedules).values({ account_id: accountId, id, name: name(), timezone, ...stamp() });
      if (rules.length) await db.insert(timeScheduleRules).values(rules.map((r, position) => ({ account_id: accountId, schedule_id: id, position, ...r })));
      return id;
    },
    async trunk(patch: Partial<typeof sipTrunks.$inferInsert> = {}, acl: string[] = []) {
      const id = newId("trk");
      await db.insert(sipTrunks).values({ account_id: accountId, id, name: name(), ...stamp(), ...patch });
      for (const cidr of acl) await db.insert(sipTrunkAcls).values({ account_id: accountId, trunk_id: id, cidr, created_at: nowSeconds() });
      return id;
    },
    async route(patch: Partial<typeof outboundRoutes.$inferInsert> & { via: string }) {
      const id = newId("ort");
      await db.insert(outboundRoutes).values({ account_id: accountId, id, name: name(), ...stamp(), ...patch });
      return id;
    },
    async transform(patch: Partial<typeof numberTransforms.$inferInsert> & { direction: string; match_regex: string; replacement: string }) {
      const id = newId("ntr");
      await db.insert(numberTransforms).values({ account_id: accountId, id, name: name(), scope_kind: "account", scope_id: accountId, ...stamp(), ...patch });
      return id;
    },
    async callLimit(patch: Partial<typeof callLimits.$inferInsert> & { max_count: number }) {
      const id = newId("cl");
      await db.insert(callLimits).values({ account_id: accountId, id, name: name(), scope_kind: "account", scope_id: accountId, ...stamp(), ...patch });
      return id;
    },
    async cidRule(patch: Partial<typeof callerIdRules.$inferInsert> & { cid_number: string }) {
      const id = newId("cir");
      await db.insert(callerIdRules).values({ account_id: accountId, id, name: name(), scope_kind: "account", scope_id: accountId, ...stamp(), ...patch });
      return id;
    },
    async aclRule(patch: Partial<typeof aclRules.$inferInsert> & { rule_type: string; value: string }) {
      const id = newId("acl");
      await db.insert(aclRules).values({ account_id: accountId, id, name: name(), scope_kind: "account", scope_id: accountId, ...stamp(), ...patch });
      return id;
    },
    async phoneList(kind: string, entries: string[], scope: { scope_kind: string; scope_id: string } = { scope_kind: "account", scope_id: accountId }) {
      const id = newId("pl");
      await db.insert(phoneLists).values({ account_id: accountId, id, name: name(), kind, ...scope, ...stamp() });
      for (const e164 of entries) await db.insert(phoneListEntries).values({ account_id: accountId, phone_list_id: id, e164, created_at: nowSeconds() });
      return id;
    },
    async geo(mode: string, countries: string[], scope: { scope_kind: string; scope_id: string } = { scope_kind: "account", scope_id: accountId }) {
      const id = newId("geo");
      await db.insert(geoPolicies).values({ account_id: accountId, id, name: name(), mode, ...scope, ...stamp() });
      for (const country of countries) await db.insert(geoPolicyCountries).values({ account_id: accountId, geo_policy_id: id, country, created_at: nowSeconds() });
      return id;
    },
  };
}

/** A registered contact as presence would return it. */
export function contact(userId: string, deviceId: string, uri: string, extra: Partial<RegisteredContact> = {}): RegisteredContact {
  return { device_id: deviceId, user_id: userId, contact: uri, received: null, path: null, socket: null, transport: "udp", user_agent: null, source_ip: null, expires_at: Date.now() + 60_000, webrtc: 0, ...extra };
}

/** Deps on the platform's stores with presence injected: `contacts` and `calls` keyed by user id. */
export function testDeps(
  platform: Platform,
  options: { contacts?: Record<string, RegisteredContact[]>; calls?: Record<string, number>; settings?: Partial<RouteSettings> & { carrier?: string }; now?: Date } = {},
): RouteDeps {
  return {
    db: platform.db,
    live: platform.live,
    settings: {
      carrierAddresses: parseCidrList(options.settings?.carrier ?? "192.0.2.0/24"),
      carrierUri: options.settings?.carrierUri === undefined ? "sip:carrier.example.net:5060" : options.settings.carrierUri,
      mediaEngines: options.settings?.mediaEngines ?? ["sip:10.0.0.5:5080", "sip:10.0.0.6:5080"],
      emergencyNumbers: options.settings?.emergencyNumbers ?? ["911", "112"],
    },
    contacts: async (_accountId, userId) => options.contacts?.[userId] ?? [],
    userCallCount: async (_accountId, userId) => options.calls?.[userId] ?? 0,
    now: options.now ? () => options.now! : undefined,
  };
}
