import { sql } from "drizzle-orm";
import { bigint, bigserial, customType, index, jsonb, pgTable, primaryKey, text } from "drizzle-orm/pg-core";
import { epochMillis } from "../db/columns.ts";

/** A transaction snapshot (PostgreSQL's pg_snapshot), read and written as its text `xmin:xmax:xip,…`. */
const pgSnapshot = customType<{ data: string }>({ dataType: () => "pg_snapshot" });

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
    /**
     * The writing transaction's id (xid8), and the oldest transaction still running when the row was
     * written (its snapshot's xmin): ids are taken at insert but seen in commit order, so a resume from
     * an event also replays the events of transactions that were running then (txid ≥ its txid_xmin),
     * which may have committed after it with smaller ids. Null on rows older than these columns.
     */
    txid: bigint("txid", { mode: "number" }).default(sql`(pg_current_xact_id()::text::bigint)`),
    txid_xmin: bigint("txid_xmin", { mode: "number" }).default(sql`(pg_snapshot_xmin(pg_current_snapshot())::text::bigint)`),
    /**
     * The writing statement's snapshot: the transactions it saw as running are exactly those not
     * visible in it (`pg_visible_in_snapshot`). A resume replays those among the events before its
     * point, not every event of a transaction newer than the snapshot's xmin: one long-open
     * transaction anywhere kept the xmin old, and every event in the window counted as late. Null on
     * rows older than this column (txid_xmin decides for them).
     */
    snap: pgSnapshot("snap").default(sql`pg_current_snapshot()`),
  },
  (t) => [primaryKey({ columns: [t.account_id, t.id] }), index("event_ts_idx").on(t.ts)],
);

export type EventRow = typeof events.$inferSelect;
