import { check, pgTable, primaryKey, text } from "drizzle-orm/pg-core";
import { sql } from "drizzle-orm";
import { epochSeconds } from "../db/columns.ts";

/**
 * Where the account wants its events POSTed. `events` holds catalog names, or `*` alone for every
 * event, so delivery matches a subscription with one array probe. The signing secret lives in the
 * secret store; the row only keeps its ref.
 */
export const webhookSubscriptions = pgTable(
  "webhook_subscription",
  {
    account_id: text("account_id").notNull(),
    /** wh_… */
    id: text("id").notNull(),
    /** An https:// URL whose host resolved to public addresses when it was saved. */
    url: text("url").notNull(),
    /** Event names, de-duplicated and sorted; `{*}` for all. */
    events: text("events").array().notNull(),
    description: text("description"),
    /** The HMAC signing secret's ref in the secret store. */
    secret_ref: text("secret_ref"),
    /** active, or disabled (delivery skips it). */
    status: text("status").notNull().default("active"),
    created_at: epochSeconds("created_at").notNull(),
    updated_at: epochSeconds("updated_at").notNull(),
  },
  (t) => [
    primaryKey({ columns: [t.account_id, t.id] }),
    check("webhook_subscription_status_chk", sql`${t.status} in ('active','disabled')`),
  ],
);

export type WebhookSubscriptionRow = typeof webhookSubscriptions.$inferSelect;
