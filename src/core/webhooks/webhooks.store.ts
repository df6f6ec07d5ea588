/** Queries on webhook subscriptions. The only file of this capability that touches drizzle. */
import { and, asc, count, eq, gt, or, arrayContains, type SQL } from "drizzle-orm";
import type { DbOrTx } from "../db/db.ts";
import { accounts } from "../accounts/accounts.schema.ts";
import { webhookSubscriptions, type WebhookSubscriptionRow } from "./webhooks.schema.ts";

/**
 * Locks the account's row for the rest of the transaction, so two creations of the same account are
 * counted against the cap one after the other.
 */
export async function lockAccountForWebhooks(tx: DbOrTx, accountId: string): Promise<void> {
  await tx.select({ id: accounts.id }).from(accounts).where(eq(accounts.id, accountId)).for("update");
}

/** How many subscriptions the account has (the cap). */
export async function countWebhooks(db: DbOrTx, accountId: string): Promise<number> {
  const [row] = await db.select({ n: count() }).from(webhookSubscriptions).where(eq(webhookSubscriptions.account_id, accountId));
  return Number(row?.n ?? 0);
}

export type NewWebhookRow = typeof webhookSubscriptions.$inferInsert;

export async function insertWebhook(db: DbOrTx, row: NewWebhookRow): Promise<WebhookSubscriptionRow> {
  const [created] = await db.insert(webhookSubscriptions).values(row).returning();
  if (!created) throw new Error("insert returned no row");
  return created;
}

/** Subscriptions after `afterId` in creation order; with `event`, only those receiving it (or `*`). */
export async function listWebhookRows(
  db: DbOrTx,
  accountId: string,
  filter: { event?: string },
  afterId: string | null,
  limit: number,
): Promise<WebhookSubscriptionRow[]> {
  const conditions: SQL[] = [eq(webhookSubscriptions.account_id, accountId)];
  if (filter.event !== undefined) {
    conditions.push(or(arrayContains(webhookSubscriptions.events, [filter.event]), arrayContains(webhookSubscriptions.events, ["*"]))!);
  }
  if (afterId) conditions.push(gt(webhookSubscriptions.id, afterId));
  return db
    .select()
    .from(webhookSubscriptions)
    .where(and(...conditions))
    .orderBy(asc(webhookSubscriptions.id))
    .limit(limit);
}

/** Deletes one subscription; returns the removed row (for its secret ref) or null. */
export async function deleteWebhookRow(db: DbOrTx, accountId: string, id: string): Promise<WebhookSubscriptionRow | null> {
  const [row] = await db
    .delete(webhookSubscriptions)
    .where(and(eq(webhookSubscriptions.account_id, accountId), eq(webhookSubscriptions.id, id)))
    .returning();
  return row ?? null;
}

/** A subscription's status, or null when the account has no such subscription. */
export async function findWebhookStatus(db: DbOrTx, accountId: string, id: string): Promise<string | null> {
  const [row] = await db
    .select({ status: webhookSubscriptions.status })
    .from(webhookSubscriptions)
    .where(and(eq(webhookSubscriptions.account_id, accountId), eq(webhookSubscriptions.id, id)));
  return row?.status ?? null;
}
