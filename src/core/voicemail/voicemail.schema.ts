import { check, integer, pgTable, primaryKey, text } from "drizzle-orm/pg-core";
import { sql } from "drizzle-orm";
import { epochSeconds, flag } from "../db/columns.ts";

/**
 * Voicemail boxes (tenant table). The PIN is never stored here: `pin_secret_ref` points into the
 * encrypted `secret` table. Numbers, extensions and users refer to a box by id (see
 * routing/references.ts), so deleting one still in use is refused.
 */
export const voicemails = pgTable(
  "voicemail",
  {
    account_id: text("account_id").notNull(),
    id: text("id").notNull(),
    name: text("name").notNull(),
    /** media_file id of the box's own greeting; null = the system greeting. */
    greeting_media_id: text("greeting_media_id"),
    skip_instructions: flag("skip_instructions").notNull().default(0),
    quota_mb: integer("quota_mb").notNull().default(100),
    notify_email: text("notify_email"),
    /** `sec_…` of the PIN; null = the box has no PIN. */
    pin_secret_ref: text("pin_secret_ref"),
    max_message_sec: integer("max_message_sec").notNull().default(300),
    /** Prompt language override; null = the account's language. */
    language: text("language"),
    created_at: epochSeconds("created_at").notNull(),
    updated_at: epochSeconds("updated_at").notNull(),
  },
  (t) => [
    primaryKey({ columns: [t.account_id, t.id] }),
    check("voicemail_skip_instructions_chk", sql`${t.skip_instructions} in (0,1)`),
    check("voicemail_quota_mb_chk", sql`${t.quota_mb} between 1 and 10240`),
    check("voicemail_max_message_sec_chk", sql`${t.max_message_sec} between 10 and 3600`),
  ],
);

export type VoicemailRow = typeof voicemails.$inferSelect;
