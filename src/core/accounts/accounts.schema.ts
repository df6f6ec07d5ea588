import { check, index, integer, pgTable, text } from "drizzle-orm/pg-core";
import { sql } from "drizzle-orm";
import { epochSeconds, flag } from "../db/columns.ts";

/** The tenant. The distribution root: every tenant row elsewhere carries its id as account_id. */
export const accounts = pgTable(
  "account",
  {
    id: text("id").primaryKey(),
    name: text("name").notNull(),
    parent_id: text("parent_id"),
    status: text("status").notNull().default("active"),
    is_reseller: flag("is_reseller").notNull().default(0),
    timezone: text("timezone").notNull().default("UTC"),
    brand_name: text("brand_name"),
    brand_domain: text("brand_domain"),
    max_in: integer("max_in"),
    max_out: integer("max_out"),
    max_dialer: integer("max_dialer"),
    default_cid_number: text("default_cid_number"),
    language: text("language").notNull().default("en-US"),
    voice_gender: text("voice_gender").notNull().default("female"),
    tone_country: text("tone_country").notNull().default("US"),
    recording_retention_days: integer("recording_retention_days"),
    allow_free_caller_id: flag("allow_free_caller_id").notNull().default(0),
    did_default_dest_kind: text("did_default_dest_kind"),
    did_default_dest_id: text("did_default_dest_id"),
    /** Per-account override of RATE_LIMIT_REQUESTS for high-volume customers; null = platform default. */
    rate_limit_requests: integer("rate_limit_requests"),
    created_at: epochSeconds("created_at").notNull(),
    updated_at: epochSeconds("updated_at").notNull(),
  },
  (t) => [
    index("account_parent_idx").on(t.parent_id, t.id),
    check("account_status_chk", sql`${t.status} in ('active','suspended','closed')`),
    check("account_is_reseller_chk", sql`${t.is_reseller} in (0,1)`),
    check("account_allow_free_cid_chk", sql`${t.allow_free_caller_id} in (0,1)`),
    check("account_voice_gender_chk", sql`${t.voice_gender} in ('male','female')`),
    check("account_retention_chk", sql`${t.recording_retention_days} is null or ${t.recording_retention_days} >= 0`),
  ],
);

export type AccountRow = typeof accounts.$inferSelect;
