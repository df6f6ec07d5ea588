import { check, index, integer, pgTable, primaryKey, text, uniqueIndex } from "drizzle-orm/pg-core";
import { sql } from "drizzle-orm";
import { epochSeconds, flag } from "../db/columns.ts";

/**
 * Users (tenant table): the logical identity an agent or extension owner is. Named `app_user`
 * because `user` is reserved in PostgreSQL. `username` is the SIP user part and is unique per
 * account, so the same extension in two tenants is two rows.
 */
export const appUsers = pgTable(
  "app_user",
  {
    account_id: text("account_id").notNull(),
    id: text("id").notNull(),
    username: text("username").notNull(),
    display_name: text("display_name").notNull(),
    email: text("email"),
    is_agent: flag("is_agent").notNull().default(0),
    out_cid_number: text("out_cid_number"),
    out_cid_name: text("out_cid_name"),
    max_simultaneous: integer("max_simultaneous").notNull().default(2),
    ring_timeout_sec: integer("ring_timeout_sec").notNull().default(25),
    /** Default mailbox (`voicemail` of the same account); checked on write. */
    voicemail_id: text("voicemail_id"),
    /** Reporting team (`agent_team` of the same account); checked on write. */
    team_id: text("team_id"),
    status: text("status").notNull().default("active"),
    created_at: epochSeconds("created_at").notNull(),
    updated_at: epochSeconds("updated_at").notNull(),
  },
  (t) => [
    primaryKey({ columns: [t.account_id, t.id] }),
    uniqueIndex("app_user_username_uq").on(t.account_id, t.username),
    // Serve the team filter and the in-use checks of agent_team / voicemail deletes without a scan.
    index("app_user_team_idx").on(t.account_id, t.team_id),
    index("app_user_voicemail_idx").on(t.account_id, t.voicemail_id),
    check("app_user_status_chk", sql`${t.status} in ('active','disabled')`),
    check("app_user_is_agent_chk", sql`${t.is_agent} in (0,1)`),
    check("app_user_max_simultaneous_chk", sql`${t.max_simultaneous} >= 1`),
    check("app_user_ring_timeout_chk", sql`${t.ring_timeout_sec} between 5 and 300`),
  ],
);

export type UserRow = typeof appUsers.$inferSelect;
export type NewUserRow = typeof appUsers.$inferInsert;
