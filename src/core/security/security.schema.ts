import { check, index, pgTable, primaryKey, smallint, integer, text } from "drizzle-orm/pg-core";
import { sql } from "drizzle-orm";
import { epochSeconds, flag } from "../db/columns.ts";

/**
 * Bans the SIP edge nodes report (global, not per account: an attacking address attacks the
 * platform). One row per (address, node): each node bans on its own (pike, failed digests) and
 * reports its snapshot about every 30 s. `status` is active while the node still holds the ban,
 * expired once it no longer reports it (or its deadline passed, or the node went silent), lifted
 * when an operator allow-listed the address.
 */
export const securityBans = pgTable(
  "security_ban",
  {
    /** The banned address, canonical text (IPv4 dotted, IPv6 compressed lower case). */
    ip: text("ip").notNull(),
    /** The edge node that holds the ban (its name as it reports it). */
    node: text("node").notNull(),
    status: text("status").notNull().default("active"),
    /** Why the node banned it (pike, auth, …), as the node says. */
    reason: text("reason"),
    /** Requests or failures the node counted for it. */
    hits: integer("hits").notNull().default(0),
    /** How many separate times this node banned the address (a ban that comes back after expiring counts again). */
    ban_count: smallint("ban_count").notNull().default(1),
    /** Epoch seconds of the first report of this address by this node. */
    first_seen: epochSeconds("first_seen").notNull(),
    /** Epoch seconds of the latest report that still carried the ban. */
    last_seen: epochSeconds("last_seen").notNull(),
    /** Epoch seconds when the node's ban ends, if it said. */
    expires_at: epochSeconds("expires_at"),
    /** 1 for an address worth a look: a repeat offender, banned by several nodes, or many digest failures. Sticky. */
    flagged: flag("flagged").notNull().default(0),
  },
  (t) => [
    primaryKey({ columns: [t.ip, t.node] }),
    index("security_ban_seen_idx").on(t.last_seen),
    check("security_ban_status_chk", sql`${t.status} in ('active','expired','lifted')`),
    check("security_ban_flagged_chk", sql`${t.flagged} in (0,1)`),
  ],
);

export type SecurityBanRow = typeof securityBans.$inferSelect;

/** Addresses (IP or CIDR) that are never banned: operator and carrier ranges. Global. */
export const securityAllow = pgTable("security_allow", {
  /** Canonical CIDR text; a single host has no /len. */
  address: text("address").primaryKey(),
  note: text("note"),
  created_at: epochSeconds("created_at").notNull(),
});

export type SecurityAllowRow = typeof securityAllow.$inferSelect;
