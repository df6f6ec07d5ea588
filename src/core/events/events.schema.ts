import { bigserial, index, jsonb, pgTable, primaryKey, text } from "drizzle-orm/pg-core";
import { epochMillis } from "../db/columns.ts";

/**
 * The outbox: every event the platform produces, written in the same transaction as the change that
 * caused it. `id` comes from one sequence, so it orders an account's events and is the resume point of
 * the realtime stream. Webhook deliveries are planned from these rows in the same transaction.
 */
export const events = pgTable(
  "event",
  {
    account_id: text("account_id").notNull(),
    /** Platform-wide increasing id (a sequence): the resume cursor. */
    id: bigserial("id", { mode: "number" }).notNull(),
    /** A catalog name (call.started, …, test). */
    name: text("name").notNull(),
    /** The event's `data`, valid against the catalog schema of `name`. */
    data: jsonb("data").notNull(),
    /** When it happened, epoch ms (the delivery body's `ts`). */
    ts: epochMillis("ts").notNull(),
  },
  (t) => [primaryKey({ columns: [t.account_id, t.id] }), index("event_ts_idx").on(t.ts)],
);

export type EventRow = typeof events.$inferSelect;
