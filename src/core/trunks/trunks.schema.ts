/**
 * SIP trunks, their source-address allowlists, outbound routes and number transforms (SPEC.md section 2,
 * "Trunks and outbound"). Config-managed only: these rows are written by the declarative config file
 * (src/core/config-file), never by a /v1 endpoint. `name` is the stable human key the file uses.
 */
import { check, index, integer, pgTable, primaryKey, text, uniqueIndex } from "drizzle-orm/pg-core";
import { sql } from "drizzle-orm";
import { epochSeconds, flag } from "../db/columns.ts";

/** A SIP trunk: a carrier or PBX the platform exchanges calls with. */
export const sipTrunks = pgTable(
  "sip_trunk",
  {
    account_id: text("account_id").notNull(),
    id: text("id").notNull(),
    name: text("name").notNull(),
    provider: text("provider").notNull().default("generic"),
    role: text("role").notNull().default("carrier"),
    direction: text("direction").notNull().default("both"),
    /** host[:port] the platform sends to (and registers with); null for a trunk that only sends to us. */
    proxy: text("proxy"),
    transport: text("transport").notNull().default("udp"),
    do_register: flag("do_register").notNull().default(0),
    auth_username: text("auth_username"),
    /** Our digest password towards the trunk, in the secret store. */
    auth_secret_ref: text("auth_secret_ref"),
    realm: text("realm"),
    from_domain: text("from_domain"),
    from_user: text("from_user"),
    expire_sec: integer("expire_sec").notNull().default(3600),
    inbound_auth: text("inbound_auth").notNull().default("ip"),
    inbound_username: text("inbound_username"),
    /** The password the trunk uses towards us (register / digest), in the secret store. */
    inbound_secret_ref: text("inbound_secret_ref"),
    reg_node: text("reg_node"),
    max_channels: integer("max_channels"),
    cid_number: text("cid_number"),
    ping_sec: integer("ping_sec"),
    status: text("status").notNull().default("active"),
    created_at: epochSeconds("created_at").notNull(),
    updated_at: epochSeconds("updated_at").notNull(),
  },
  (t) => [
    primaryKey({ columns: [t.account_id, t.id] }),
    uniqueIndex("sip_trunk_name_uq").on(t.account_id, t.name),
    check("sip_trunk_provider_chk", sql`${t.provider} in ('generic','carrier')`),
    check("sip_trunk_role_chk", sql`${t.role} in ('carrier','pbx')`),
    check("sip_trunk_direction_chk", sql`${t.direction} in ('inbound','outbound','both')`),
    check("sip_trunk_transport_chk", sql`${t.transport} in ('udp','tcp','tls')`),
    check("sip_trunk_do_register_chk", sql`${t.do_register} in (0,1)`),
    check("sip_trunk_inbound_auth_chk", sql`${t.inbound_auth} in ('ip','register','digest')`),
    check("sip_trunk_status_chk", sql`${t.status} in ('active','disabled')`),
    check("sip_trunk_expire_chk", sql`${t.expire_sec} between 60 and 86400`),
    check("sip_trunk_max_channels_chk", sql`${t.max_channels} is null or ${t.max_channels} >= 1`),
    check("sip_trunk_ping_chk", sql`${t.ping_sec} is null or ${t.ping_sec} between 5 and 3600`),
  ],
);

/** Source addresses a trunk may send from (the authentication when inbound_auth is ip). */
export const sipTrunkAcls = pgTable(
  "sip_trunk_acl",
  {
    account_id: text("account_id").notNull(),
    trunk_id: text("trunk_id").notNull(),
    /** Canonical CIDR (network address, explicit prefix length). */
    cidr: text("cidr").notNull(),
    created_at: epochSeconds("created_at").notNull(),
  },
  (t) => [primaryKey({ columns: [t.account_id, t.trunk_id, t.cidr] })],
);

/** Which way an outbound call leaves: the first matching route by priority (lowest first) wins. */
export const outboundRoutes = pgTable(
  "outbound_route",
  {
    account_id: text("account_id").notNull(),
    id: text("id").notNull(),
    name: text("name").notNull(),
    /** Leading digits of the E.164 destination; null = any. */
    match_prefix: text("match_prefix"),
    /** ISO alpha-2 country of the destination; null = any. */
    match_country: text("match_country"),
    via: text("via").notNull(),
    trunk_id: text("trunk_id"),
    priority: integer("priority").notNull().default(100),
    created_at: epochSeconds("created_at").notNull(),
    updated_at: epochSeconds("updated_at").notNull(),
  },
  (t) => [
    primaryKey({ columns: [t.account_id, t.id] }),
    uniqueIndex("outbound_route_name_uq").on(t.account_id, t.name),
    index("outbound_route_priority_idx").on(t.account_id, t.priority),
    check("outbound_route_via_chk", sql`${t.via} in ('carrier','trunk')`),
    check("outbound_route_trunk_chk", sql`(${t.via} = 'trunk') = (${t.trunk_id} is not null)`),
  ],
);

/** Regex rewrite of a called or calling number at a scope, applied in `ordering`. */
export const numberTransforms = pgTable(
  "number_transform",
  {
    account_id: text("account_id").notNull(),
    id: text("id").notNull(),
    name: text("name").notNull(),
    scope_kind: text("scope_kind").notNull(),
    /** The account id (scope account), a trunk (trk_), a DID (num_) or an outbound route (ort_). */
    scope_id: text("scope_id").notNull(),
    direction: text("direction").notNull(),
    match_regex: text("match_regex").notNull(),
    replacement: text("replacement").notNull(),
    ordering: integer("ordering").notNull().default(100),
    stop_on_match: flag("stop_on_match").notNull().default(0),
    created_at: epochSeconds("created_at").notNull(),
    updated_at: epochSeconds("updated_at").notNull(),
  },
  (t) => [
    primaryKey({ columns: [t.account_id, t.id] }),
    uniqueIndex("number_transform_name_uq").on(t.account_id, t.name),
    index("number_transform_scope_idx").on(t.account_id, t.scope_kind, t.scope_id, t.direction, t.ordering),
    check("number_transform_scope_kind_chk", sql`${t.scope_kind} in ('account','trunk','did','route')`),
    check("number_transform_direction_chk", sql`${t.direction} in ('inbound_dst','inbound_cid','outbound_dst','outbound_cid')`),
    check("number_transform_stop_chk", sql`${t.stop_on_match} in (0,1)`),
  ],
);

export type SipTrunkRow = typeof sipTrunks.$inferSelect;
export type SipTrunkAclRow = typeof sipTrunkAcls.$inferSelect;
export type OutboundRouteRow = typeof outboundRoutes.$inferSelect;
export type NumberTransformRow = typeof numberTransforms.$inferSelect;

/**
 * The global lookup of the edge for a trunk that authenticates towards us (inbound_auth register or
 * digest): its inbound_username, unique platform-wide (the digest names no account), to its trunk.
 * Written with the trunk (trunks.store.ts); a reference table keyed by the value (DESIGN.md section 2).
 */
export const trunkCredentials = pgTable("trunk_credential", {
  username: text("username").primaryKey(),
  account_id: text("account_id").notNull(),
  trunk_id: text("trunk_id").notNull(),
});
export type TrunkCredentialRow = typeof trunkCredentials.$inferSelect;
