import { check, index, jsonb, pgTable, primaryKey, text } from "drizzle-orm/pg-core";
import { sql } from "drizzle-orm";
import { epochMillis } from "../db/columns.ts";

/**
 * The account's recent log: flow-node steps, platform notices, webhook and edge events, newest first
 * through GET /v1/logs. Short-lived by design: `sweepLogs` keeps 7 days and a bounded number of rows
 * per account. Ids are time-ordered (`log_…`), so id order is recording order and the keyset.
 */
export const accountLogs = pgTable(
  "account_log",
  {
    account_id: text("account_id").notNull(),
    /** log_… id (time-ordered). */
    id: text("id").notNull(),
    /** When it happened, epoch ms. */
    ts: epochMillis("ts").notNull(),
    /** debug, info, warn or error. */
    level: text("level").notNull(),
    /** Who wrote it: flow, platform, webhook, edge, … */
    source: text("source").notNull(),
    message: text("message").notNull(),
    /** call_… the line belongs to, when it belongs to a call. */
    call_id: text("call_id"),
    /** Structured details (never secrets). */
    data: jsonb("data").notNull().default({}),
  },
  (t) => [
    primaryKey({ columns: [t.account_id, t.id] }),
    index("account_log_call_idx").on(t.account_id, t.call_id, t.id),
    index("account_log_ts_idx").on(t.ts),
    check("account_log_level_chk", sql`${t.level} in ('debug','info','warn','error')`),
  ],
);

export type AccountLogRow = typeof accountLogs.$inferSelect;
