/**
 * Policies (SPEC.md section 2, "Policies"; config-managed only). Each row applies at a scope:
 * `scope_kind` account (scope_id = the account id), user (us_…), did or number (num_…, a DID of the
 * account). `name` is the stable human key the config file uses.
 */
import { check, index, integer, pgTable, primaryKey, text, uniqueIndex } from "drizzle-orm/pg-core";
import { sql, type SQL } from "drizzle-orm";
import type { PgColumn } from "drizzle-orm/pg-core";
import { epochSeconds, flag } from "../db/columns.ts";

const scopeKindCheck = (column: PgColumn): SQL => sql`${column} in ('account','user','did','number')`;

/** Call-count ceilings: concurrent calls, or calls started per period. */
export const callLimits = pgTable(
  "call_limit",
  {
    account_id: text("account_id").notNull(),
    id: text("id").notNull(),
    name: text("name").notNull(),
    scope_kind: text("scope_kind").notNull(),
    scope_id: text("scope_id").notNull(),
    direction: text("direction").notNull().default("any"),
    /** null: max_count concurrent calls; N: at most max_count calls started in any N seconds. */
    period_sec: integer("period_sec"),
    max_count: integer("max_count").notNull(),
    /** 1: calls beyond the limit are refused; 0: they pass and a limit event is raised. */
    hard: flag("hard").notNull().default(1),
    created_at: epochSeconds("created_at").notNull(),
    updated_at: epochSeconds("updated_at").notNull(),
  },
  (t) => [
    primaryKey({ columns: [t.account_id, t.id] }),
    uniqueIndex("call_limit_name_uq").on(t.account_id, t.name),
    index("call_limit_scope_idx").on(t.account_id, t.scope_kind, t.scope_id),
    check("call_limit_scope_kind_chk", scopeKindCheck(t.scope_kind)),
    check("call_limit_direction_chk", sql`${t.direction} in ('in','out','dialer','any')`),
    check("call_limit_period_chk", sql`${t.period_sec} is null or ${t.period_sec} between 1 and 2592000`),
    check("call_limit_max_count_chk", sql`${t.max_count} >= 0`),
    check("call_limit_hard_chk", sql`${t.hard} in (0,1)`),
  ],
);

/** Outbound caller-ID presentation by destination country; lowest priority first, first match wins. */
export const callerIdRules = pgTable(
  "caller_id_rule",
  {
    account_id: text("account_id").notNull(),
    id: text("id").notNull(),
    name: text("name").notNull(),
    scope_kind: text("scope_kind").notNull(),
    scope_id: text("scope_id").notNull(),
    /** ISO alpha-2 country of the destination; null = any. */
    match_country: text("match_country"),
    cid_number: text("cid_number").notNull(),
    cid_name: text("cid_name"),
    priority: integer("priority").notNull().default(100),
    created_at: epochSeconds("created_at").notNull(),
    updated_at: epochSeconds("updated_at").notNull(),
  },
  (t) => [
    primaryKey({ columns: [t.account_id, t.id] }),
    uniqueIndex("caller_id_rule_name_uq").on(t.account_id, t.name),
    index("caller_id_rule_scope_idx").on(t.account_id, t.scope_kind, t.scope_id),
    check("caller_id_rule_scope_kind_chk", scopeKindCheck(t.scope_kind)),
  ],
);

/** Who may reach the platform: source IP ranges or source countries, allowed or denied. */
export const aclRules = pgTable(
  "acl_rule",
  {
    account_id: text("account_id").notNull(),
    id: text("id").notNull(),
    name: text("name").notNull(),
    scope_kind: text("scope_kind").notNull(),
    scope_id: text("scope_id").notNull(),
    rule_type: text("rule_type").notNull(),
    /** Canonical CIDR for ip_allow / ip_deny; ISO alpha-2 for geo_allow / geo_deny. */
    value: text("value").notNull(),
    created_at: epochSeconds("created_at").notNull(),
    updated_at: epochSeconds("updated_at").notNull(),
  },
  (t) => [
    primaryKey({ columns: [t.account_id, t.id] }),
    uniqueIndex("acl_rule_name_uq").on(t.account_id, t.name),
    index("acl_rule_scope_idx").on(t.account_id, t.scope_kind, t.scope_id),
    check("acl_rule_scope_kind_chk", scopeKindCheck(t.scope_kind)),
    check("acl_rule_type_chk", sql`${t.rule_type} in ('ip_allow','ip_deny','geo_allow','geo_deny')`),
  ],
);

/** Whether calls are recorded. */
export const recordingRules = pgTable(
  "recording_rule",
  {
    account_id: text("account_id").notNull(),
    id: text("id").notNull(),
    name: text("name").notNull(),
    scope_kind: text("scope_kind").notNull(),
    scope_id: text("scope_id").notNull(),
    direction: text("direction").notNull().default("any"),
    mode: text("mode").notNull(),
    /** 1: each party on its own channel. */
    stereo: flag("stereo").notNull().default(0),
    created_at: epochSeconds("created_at").notNull(),
    updated_at: epochSeconds("updated_at").notNull(),
  },
  (t) => [
    primaryKey({ columns: [t.account_id, t.id] }),
    uniqueIndex("recording_rule_name_uq").on(t.account_id, t.name),
    index("recording_rule_scope_idx").on(t.account_id, t.scope_kind, t.scope_id),
    check("recording_rule_scope_kind_chk", scopeKindCheck(t.scope_kind)),
    check("recording_rule_direction_chk", sql`${t.direction} in ('in','out','dialer','any')`),
    check("recording_rule_mode_chk", sql`${t.mode} in ('off','on','on_demand')`),
    check("recording_rule_stereo_chk", sql`${t.stereo} in (0,1)`),
  ],
);

/** A named list of numbers with one meaning (kind): do-not-call out/in, do-not-record, allow. */
export const phoneLists = pgTable(
  "phone_list",
  {
    account_id: text("account_id").notNull(),
    id: text("id").notNull(),
    name: text("name").notNull(),
    scope_kind: text("scope_kind").notNull(),
    scope_id: text("scope_id").notNull(),
    kind: text("kind").notNull(),
    created_at: epochSeconds("created_at").notNull(),
    updated_at: epochSeconds("updated_at").notNull(),
  },
  (t) => [
    primaryKey({ columns: [t.account_id, t.id] }),
    uniqueIndex("phone_list_name_uq").on(t.account_id, t.name),
    index("phone_list_scope_idx").on(t.account_id, t.scope_kind, t.scope_id),
    check("phone_list_scope_kind_chk", scopeKindCheck(t.scope_kind)),
    check("phone_list_kind_chk", sql`${t.kind} in ('dnc_out','dnc_in','dnr','allow')`),
  ],
);

/** One E.164 number of a phone list. */
export const phoneListEntries = pgTable(
  "phone_list_entry",
  {
    account_id: text("account_id").notNull(),
    phone_list_id: text("phone_list_id").notNull(),
    e164: text("e164").notNull(),
    created_at: epochSeconds("created_at").notNull(),
  },
  (t) => [
    primaryKey({ columns: [t.account_id, t.phone_list_id, t.e164] }),
    // The router asks "is this number on any list of this account": by number, not by list.
    index("phone_list_entry_e164_idx").on(t.account_id, t.e164),
  ],
);

/** Which destination countries outbound calls may reach. */
export const geoPolicies = pgTable(
  "geo_policy",
  {
    account_id: text("account_id").notNull(),
    id: text("id").notNull(),
    name: text("name").notNull(),
    scope_kind: text("scope_kind").notNull(),
    scope_id: text("scope_id").notNull(),
    mode: text("mode").notNull(),
    created_at: epochSeconds("created_at").notNull(),
    updated_at: epochSeconds("updated_at").notNull(),
  },
  (t) => [
    primaryKey({ columns: [t.account_id, t.id] }),
    uniqueIndex("geo_policy_name_uq").on(t.account_id, t.name),
    index("geo_policy_scope_idx").on(t.account_id, t.scope_kind, t.scope_id),
    check("geo_policy_scope_kind_chk", scopeKindCheck(t.scope_kind)),
    check("geo_policy_mode_chk", sql`${t.mode} in ('allowlist','denylist')`),
  ],
);

/** One country of a geo policy. */
export const geoPolicyCountries = pgTable(
  "geo_policy_country",
  {
    account_id: text("account_id").notNull(),
    geo_policy_id: text("geo_policy_id").notNull(),
    country: text("country").notNull(),
    created_at: epochSeconds("created_at").notNull(),
  },
  (t) => [primaryKey({ columns: [t.account_id, t.geo_policy_id, t.country] })],
);

export type CallLimitRow = typeof callLimits.$inferSelect;
export type CallerIdRuleRow = typeof callerIdRules.$inferSelect;
export type AclRuleRow = typeof aclRules.$inferSelect;
export type RecordingRuleRow = typeof recordingRules.$inferSelect;
export type PhoneListRow = typeof phoneLists.$inferSelect;
export type GeoPolicyRow = typeof geoPolicies.$inferSelect;
