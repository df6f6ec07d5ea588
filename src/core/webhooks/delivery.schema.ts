import { sql } from "drizzle-orm";
import { bigint, check, index, integer, pgTable, primaryKey, smallint, text, uniqueIndex } from "drizzle-orm/pg-core";
import { epochMillis, epochSeconds } from "../db/columns.ts";

/**
 * One row per (event, subscription): the webhook delivery job and its record. Planned in the
 * transaction that emits the event (so a crash can neither lose nor invent one), claimed by the
 * delivery workers with `FOR UPDATE SKIP LOCKED`, and kept as the delivery log afterwards.
 *
 * Life: pending → (attempt) → delivered | failed | retrying → (attempt) → … at most 3 attempts.
 * A claim sets `claimed_until` (a lease) and `claim_token`; the worker that finishes the attempt
 * records it only while it still holds the claim, and a crashed worker's claim is taken again once
 * the lease has passed.
 */
export const webhookDeliveries = pgTable(
  "webhook_delivery",
  {
    account_id: text("account_id").notNull(),
    /** whd_…; also the Standard Webhooks `webhook-id` (stable across attempts). */
    id: text("id").notNull(),
    /** wh_… of the subscription (a deleted subscription's rows stay in the log). */
    webhook_id: text("webhook_id").notNull(),
    /** The `event` row delivered (its id; the body is built from it). */
    event_id: bigint("event_id", { mode: "number" }).notNull(),
    /** The event's name (copied for the log's filter). */
    event: text("event").notNull(),
    /** pending (not tried yet), retrying (waiting for the next attempt), delivered, failed. */
    status: text("status").notNull(),
    /** Attempts made so far (0–3). */
    attempts: smallint("attempts").notNull().default(0),
    /** HTTP status of the last attempt; null when it got no response (network error, timeout). */
    last_status: integer("last_status"),
    /** Short reason of the last failed attempt; null after success. Never carries a secret. */
    last_error: text("last_error"),
    /** When the next attempt is due, epoch ms (claim order). */
    next_attempt_at: epochMillis("next_attempt_at").notNull(),
    /** Lease of the worker attempting it now, epoch ms; null when nobody holds it. */
    claimed_until: epochMillis("claimed_until"),
    /** Random token of the current claim: a worker records its attempt only while it still holds it. */
    claim_token: text("claim_token"),
    created_at: epochSeconds("created_at").notNull(),
    updated_at: epochSeconds("updated_at").notNull(),
    delivered_at: epochSeconds("delivered_at"),
  },
  (t) => [
    primaryKey({ columns: [t.account_id, t.id] }),
    // Exactly one delivery per (event, subscription), whatever happens.
    uniqueIndex("webhook_delivery_event_webhook_uq").on(t.account_id, t.event_id, t.webhook_id),
    // The claim scan: due rows only (delivered/failed rows are the log and never scanned).
    index("webhook_delivery_due_idx").on(t.next_attempt_at).where(sql`${t.status} in ('pending','retrying')`),
    // The log's filter by subscription (newest first).
    index("webhook_delivery_webhook_idx").on(t.account_id, t.webhook_id, t.id),
    // Retention sweep of delivered rows.
    index("webhook_delivery_delivered_idx").on(t.delivered_at).where(sql`${t.status} = 'delivered'`),
    check("webhook_delivery_status_chk", sql`${t.status} in ('pending','retrying','delivered','failed')`),
  ],
);

export type WebhookDeliveryRow = typeof webhookDeliveries.$inferSelect;
