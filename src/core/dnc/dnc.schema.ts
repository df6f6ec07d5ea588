import { check, pgTable, primaryKey, text } from "drizzle-orm/pg-core";
import { sql } from "drizzle-orm";
import { epochSeconds } from "../db/columns.ts";

/**
 * The account's do-not-call list: numbers outbound calls and campaigns must not dial. Keyed by the
 * number itself, so a lookup on the call path is one primary-key probe. An entry past `expires_at`
 * no longer counts; it stays until removed or re-added.
 */
export const dncEntries = pgTable(
  "dnc_entry",
  {
    account_id: text("account_id").notNull(),
    /** E.164 without +. */
    e164: text("e164").notNull(),
    reason: text("reason"),
    /** Who listed it: api, import, agent (a callee asked during a call), campaign (a dialer disposition). */
    source: text("source").notNull().default("api"),
    /** Epoch seconds after which the entry no longer counts; null = never. */
    expires_at: epochSeconds("expires_at"),
    created_at: epochSeconds("created_at").notNull(),
  },
  (t) => [
    primaryKey({ columns: [t.account_id, t.e164] }),
    check("dnc_entry_source_chk", sql`${t.source} in ('api','import','agent','campaign')`),
  ],
);

export type DncEntryRow = typeof dncEntries.$inferSelect;
