/**
 * Test fixtures: an account with users and DIDs to refer to, and a realistic config file for it.
 * Used by the config-file, CLI and control-route tests.
 */
import { sql } from "drizzle-orm";
import type { Platform } from "../platform.ts";
import { newId } from "../ids/ids.ts";
import { seedTenant } from "../../../test/support/platform.ts";

export interface SeededAccount {
  accountId: string;
  /** username → us_… */
  users: Record<string, string>;
  /** E.164 → num_… */
  numbers: Record<string, string>;
  /** A unique suffix, for platform-wide values (SIP domains). */
  tag: string;
}

let counter = 0;

/** A fresh account with users alice and bob and two DIDs. */
export async function seedConfigAccount(platform: Platform): Promise<SeededAccount> {
  const { accountId } = await seedTenant(platform);
  const tag = `t${Date.now().toString(36)}${(++counter).toString(36)}${Math.floor(Math.random() * 1e6).toString(36)}`;
  const now = Math.floor(Date.now() / 1000);
  const users: Record<string, string> = {};
  for (const username of ["alice", "bob"]) {
    const id = newId("us");
    users[username] = id;
    await platform.db.execute(
      sql`insert into app_user (account_id, id, username, display_name, created_at, updated_at) values (${accountId}, ${id}, ${username}, ${username}, ${now}, ${now})`,
    );
  }
  const numbers: Record<string, string> = {};
  for (const e164 of ["14155550100", "442071230000"]) {
    const id = newId("num");
    numbers[e164] = id;
    await platform.db.execute(
      sql`insert into number (account_id, id, e164, dest_kind, created_at, updated_at) values (${accountId}, ${id}, ${e164}, 'hangup', ${now}, ${now})`,
    );
  }
  return { accountId, users, numbers, tag };
}

/**
 * The realistic file of the tests: 2 SIP domains, 2 trunks with ACLs (one registering with digest
 * credentials from ${CARRIER_PASSWORD}), routes by prefix and by country with priorities, 3 number
 * transforms, a DNC list, a geo allowlist, call limits, caller-ID rules, recording rules, ACL rules
 * and forwards for alice.
 */
export function realisticYaml(seed: SeededAccount): string {
  return `# Acme's telephony configuration
version: 1
sip_domains:
  - domain: acme-${seed.tag}.sip.example.com
    is_primary: 1
  - domain: acme-${seed.tag}.example.net
trunks:
  - name: carrier-a
    provider: carrier
    role: carrier
    direction: both
    proxy: sip.carrier-a.example.com:5060
    transport: udp
    do_register: 1
    auth_username: acme123
    auth_password: \${CARRIER_PASSWORD}
    realm: carrier-a.example.com
    from_domain: carrier-a.example.com
    expire_sec: 600
    max_channels: 30
    cid_number: "+1 415 555 0100"
    ping_sec: 30
    acl:
      - 192.0.2.0/24
      - 198.51.100.7
  - name: office-pbx
    role: pbx
    direction: both
    proxy: "[2001:db8::10]:5061"
    transport: tls
    inbound_auth: ip
    acl:
      - 2001:DB8:0:0::/64
      - 203.0.113.0/28
outbound_routes:
  - name: uk-via-carrier-a
    match_prefix: "44"
    via: trunk
    trunk: carrier-a
    priority: 10
  - name: germany
    match_country: DE
    via: carrier
    priority: 20
  - name: office-extensions
    match_prefix: "1415555"
    via: trunk
    trunk: office-pbx
    priority: 5
  - name: default
    via: carrier
    priority: 1000
number_transforms:
  - name: strip-national-zero
    scope_kind: trunk
    scope: carrier-a
    direction: inbound_dst
    match_regex: "^0(\\\\d{9,10})$"
    replacement: "44$1"
    ordering: 10
    stop_on_match: 1
  - name: plus-for-uk-cid
    direction: outbound_cid
    match_regex: "^(44\\\\d+)$"
    replacement: "+$1"
    ordering: 20
  - name: main-did-short
    scope_kind: did
    scope: "14155550100"
    direction: inbound_dst
    match_regex: "^1415555(0100)$"
    replacement: "$1"
call_limits:
  - name: account-concurrent
    direction: any
    max_count: 50
  - name: alice-hourly-out
    scope_kind: user
    scope: alice
    direction: out
    period_sec: 3600
    max_count: 100
    hard: 0
caller_id_rules:
  - name: uk-callers-see-london
    match_country: GB
    cid_number: "442071230000"
    cid_name: Acme London
    priority: 10
  - name: everyone-else
    cid_number: "14155550100"
    priority: 100
acl_rules:
  - name: office-network
    rule_type: ip_allow
    value: 203.0.113.0/24
  - name: no-sanctioned
    rule_type: geo_deny
    value: KP
recording_rules:
  - name: record-everything
    direction: any
    mode: "on"
    stereo: 1
  - name: bob-on-demand
    scope_kind: user
    scope: bob
    mode: on_demand
phone_lists:
  - name: dnc
    kind: dnc_out
    entries:
      - "+1 (212) 555-0101"
      - "12125550102"
      - "00442079460000"
geo_policies:
  - name: dial-na-and-europe
    mode: allowlist
    countries: [US, CA, GB, DE, "NO"]
forwards:
  - user: alice
    trigger: no_answer
    number: "+44 7700 900123"
    timeout_sec: 15
    cid_mode: did
    confirm: 1
    overflow_dest_kind: user
    overflow_dest_id: ${seed.users.bob}
  - user: alice
    trigger: busy
    number: "447700900123"
  - did: "14155550100"
    trigger: unreachable
    number: "14155550199"
    cid_mode: custom
    cid_number: "14155550100"
`;
}

/** The environment the realistic file needs. */
export const REALISTIC_ENV = { CARRIER_PASSWORD: "s3cret-Carrier-Pw!" };

/** Every table the config file writes (plus the secret store). */
export const CONFIG_TABLES = [
  "sip_domain",
  "sip_trunk",
  "sip_trunk_acl",
  "outbound_route",
  "number_transform",
  "forward",
  "call_limit",
  "caller_id_rule",
  "acl_rule",
  "recording_rule",
  "phone_list",
  "phone_list_entry",
  "geo_policy",
  "geo_policy_country",
  "secret",
] as const;

/** Every row of the account in those tables, as JSON text: equal snapshots mean nothing was written. */
export async function snapshotAccount(platform: Platform, accountId: string): Promise<string> {
  const out: Record<string, unknown[]> = {};
  for (const table of CONFIG_TABLES) {
    const result: unknown = await platform.db.execute(sql`select * from ${sql.identifier(table)} where account_id = ${accountId} order by 1, 2, 3`);
    out[table] = Array.isArray(result) ? result : ((result as { rows?: unknown[] }).rows ?? []);
  }
  return JSON.stringify(out);
}
