import { sql } from "drizzle-orm";
import { bigint, check, index, integer, pgTable, primaryKey, smallint, text, uniqueIndex } from "drizzle-orm/pg-core";
import { epochMillis, epochSeconds } from "../db/columns.ts";

/**
 * One row per (event, subscription): the webhook delivery's record, planned in the transaction
 * that emits the event (so a crash can neither lose nor invent one) and kept as the delivery log.
 *
 * Life: pending → (attempt) → delivered | failed | retrying → (attempt) → … at most 3 attempts.
 * The work queue is `webhook_delivery_due` beside it: a row there while an attempt is still to be
 * made. No column an attempt changes here is indexed (not even in a partial index's condition), and
 * the table leaves room in each page, so recording an attempt is a HOT update: one new tuple
 * version on the same page and no index entries (docs/decisions.md, "Webhook delivery storage").
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
    created_at: epochSeconds("created_at").notNull(),
    updated_at: epochSeconds("updated_at").notNull(),
    delivered_at: epochSeconds("delivered_at"),
  },
  (t) => [
    primaryKey({ columns: [t.account_id, t.id] }),
    // Exactly one delivery per (event, subscription), whatever happens.
    uniqueIndex("webhook_delivery_event_webhook_uq").on(t.account_id, t.event_id, t.webhook_id),
    // The log's filter by subscription (newest first).
    index("webhook_delivery_webhook_idx").on(t.account_id, t.webhook_id, t.id),
    // The retention sweep of finished rows (created_at never changes, so attempts stay HOT).
    index("webhook_delivery_created_idx").on(t.created_at),
    check("webhook_delivery_status_chk", sql`${t.status} in ('pending','retrying','delivered','failed')`),
  ],
);

/**
 * The delivery work queue: one row per delivery that still has an attempt to make (pending or
 * retrying), inserted with its `webhook_delivery` row and deleted in the statement that records its
 * final outcome. Workers claim due rows with `FOR UPDATE SKIP LOCKED` and a lease: a claim sets
 * `claimed_until` and `claim_token` (neither indexed, so a claim is a HOT update), and a worker
 * records an attempt only while it still holds the claim; a crashed worker's claims are taken again
 * once their lease has passed. Holding only what is due keeps the claim scan short.
 */
export const webhookDeliveriesDue = pgTable(
  "webhook_delivery_due",
  {
    account_id: text("account_id").notNull(),
    /** The delivery (webhook_delivery.id). */
    id: text("id").notNull(),
    webhook_id: text("webhook_id").notNull(),
    event_id: bigint("event_id", { mode: "number" }).notNull(),
    /** Attempts made so far (0–2 here: a third is the last). */
    attempts: smallint("attempts").notNull().default(0),
    /** When the next attempt is due, epoch ms (claim order). */
    next_attempt_at: epochMillis("next_attempt_at").notNull(),
    /** Lease of the worker attempting it now, epoch ms; null when nobody holds it. */
    claimed_until: epochMillis("claimed_until"),
    /** Random token of the current claim: a worker records its attempt only while it still holds it. */
    claim_token: text("claim_token"),
  },
  (t) => [
    primaryKey({ columns: [t.account_id, t.id] }),
    index("webhook_delivery_due_next_idx").on(t.next_attempt_at),
    // A claim that skips subscriptions (full here) finds the others' oldest rows without walking the
    // skipped ones' backlog (exchangeDeliveries).
    index("webhook_delivery_due_webhook_idx").on(t.webhook_id, t.next_attempt_at),
  ],
);

export type WebhookDeliveryRow = typeof webhookDeliveries.$inferSelect;
