/** Queries on webhook deliveries: planning, claiming, recording attempts, the log, retention. */
import { and, desc, eq, lt, or, arrayContains, sql, type SQL } from "drizzle-orm";
import type { Db, DbOrTx } from "../db/db.ts";
import { rawRows } from "../db/migrate.ts";
import { webhookDeliveries, type WebhookDeliveryRow } from "./delivery.schema.ts";
import { webhookSubscriptions } from "./webhooks.schema.ts";

export type NewDeliveryRow = typeof webhookDeliveries.$inferInsert;

/**
 * Ids of the active subscriptions of `accountId` that receive `event`: those naming it or `*`;
 * with `onlyId`, just that one (if active), whatever its event list.
 */
export async function matchingSubscriptionIds(tx: DbOrTx, accountId: string, event: string, onlyId: string | null): Promise<string[]> {
  const where: SQL[] = [eq(webhookSubscriptions.account_id, accountId), eq(webhookSubscriptions.status, "active")];
  if (onlyId !== null) where.push(eq(webhookSubscriptions.id, onlyId));
  else where.push(or(arrayContains(webhookSubscriptions.events, [event]), arrayContains(webhookSubscriptions.events, ["*"]))!);
  const rows = await tx.select({ id: webhookSubscriptions.id }).from(webhookSubscriptions).where(and(...where));
  return rows.map((r) => r.id);
}

export async function insertDeliveries(tx: DbOrTx, rows: NewDeliveryRow[]): Promise<void> {
  if (rows.length) await tx.insert(webhookDeliveries).values(rows);
}

/** How many deliveries one event has (the test endpoint's reply). */
export async function countDeliveriesOfEvent(tx: DbOrTx, accountId: string, eventId: number): Promise<number> {
  const [row] = await tx
    .select({ n: sql<number>`count(*)::int` })
    .from(webhookDeliveries)
    .where(and(eq(webhookDeliveries.account_id, accountId), eq(webhookDeliveries.event_id, eventId)));
  return Number(row?.n ?? 0);
}

/** Everything an attempt needs about a claimed delivery. */
export interface ClaimedDelivery {
  account_id: string;
  id: string;
  webhook_id: string;
  attempts: number;
  /** The event; null when its row is gone. */
  event: { name: string; data: unknown; ts: number } | null;
  /** The subscription; null when it was removed. */
  subscription: { url: string; secret_ref: string | null; status: string } | null;
}

/** Gives claims back unattempted (a stopping worker), so another worker may take them at once. */
export async function releaseClaims(db: DbOrTx, keys: Array<{ account_id: string; id: string; token: string }>): Promise<void> {
  if (!keys.length) return;
  await db.execute(
    sql`update webhook_delivery set claimed_until = null, claim_token = null
        where (account_id, id, claim_token) in (${sql.join(keys.map((k) => sql`(${k.account_id}, ${k.id}, ${k.token})`), sql`, `)})`,
  );
}

/** The outcome of one attempt, to be recorded. */
export interface AttemptRecord {
  account_id: string;
  id: string;
  /** The claim it was made under: recorded only while that claim still holds. */
  token: string;
  status: "delivered" | "failed" | "retrying";
  attempts: number;
  last_status: number | null;
  last_error: string | null;
  /** Epoch ms; meaningful for retrying. */
  next_attempt_at: number;
  updated_at: number;
  delivered_at: number | null;
}

/** What one exchange with the database does: record finished attempts and claim the next batch. */
export interface ExchangeInput {
  /** Outcomes to record (each under the claim it was made with). */
  records: AttemptRecord[];
  /** Epoch ms. */
  now: number;
  /** Most rows to claim (0: record only). */
  limit: number;
  /** Lease end of the new claim, epoch ms. */
  leaseUntil: number;
  token: string;
  /** Subscriptions not to claim for (they hold enough work here). */
  skipWebhooks: string[];
}

/**
 * Records attempt outcomes and claims up to `limit` due deliveries in ONE statement (one round
 * trip, one commit), so a busy worker pays one database exchange per batch, not two.
 *
 * Recording: sets each outcome and releases its claim, only on rows still holding the claim token
 * the attempt was made under (a row whose lease ran out and that another worker took is left
 * alone; its id is not in `recorded`). Claiming: pending or retrying, due, without a live lease,
 * not locked by another claim in progress (`FOR UPDATE SKIP LOCKED`), oldest due first, skipping
 * `skipWebhooks` and the rows being recorded; sets the lease and the claim token. The claimed rows are updated by `ctid` (a TID scan),
 * so the plan cannot turn into a scan of the whole table, and the due scan walks the partial due
 * index in order whatever the statistics say (no planner settings, hence no transaction). The
 * statement text is the same for every call (arrays are parameters), so it is prepared once.
 */
export async function exchangeDeliveries(db: DbOrTx, input: ExchangeInput): Promise<{ recorded: Set<string>; claimed: ClaimedDelivery[] }> {
  const { records, now, limit, leaseUntil, token, skipWebhooks } = input;
  const column = <T>(pick: (r: AttemptRecord) => T) => sql.param(records.map(pick));
  const tokens = [...new Set(records.map((r) => r.token))];
  // One row of four JSON arrays: the ids NOT recorded (claim lost), the claimed rows, and each
  // claimed row's event and subscription once (deliveries share them). Parsing a few JSON texts
  // costs the worker far less than hundreds of rows of ten columns each.
  const [row] = await rawRows<{ lost: unknown; claimed: unknown; events: unknown; subs: unknown }>(
    db,
    sql`with rec as (
          update webhook_delivery d set status = u.status, attempts = u.attempts, last_status = u.last_status,
                 last_error = u.last_error, next_attempt_at = u.next_attempt_at, updated_at = u.updated_at,
                 delivered_at = u.delivered_at, claimed_until = null, claim_token = null
          from unnest(${column((r) => r.account_id)}::text[], ${column((r) => r.id)}::text[], ${column((r) => r.token)}::text[],
                      ${column((r) => r.status)}::text[], ${column((r) => r.attempts)}::smallint[], ${column((r) => r.last_status)}::integer[],
                      ${column((r) => r.last_error)}::text[], ${column((r) => r.next_attempt_at)}::bigint[], ${column((r) => r.updated_at)}::bigint[],
                      ${column((r) => r.delivered_at)}::bigint[])
               as u(account_id, id, token, status, attempts, last_status, last_error, next_attempt_at, updated_at, delivered_at)
          where d.account_id = u.account_id and d.id = u.id and d.claim_token = u.token
          returning d.id
        ), claimed as (
          update webhook_delivery w set claimed_until = ${leaseUntil}, claim_token = ${token}
          where w.ctid = any(array(
            select d.ctid from webhook_delivery d
            where d.status in ('pending','retrying') and d.next_attempt_at <= ${now}
              and (d.claimed_until is null or d.claimed_until <= ${now})
              and (d.claim_token is null or d.claim_token <> all(${sql.param(tokens)}::text[]))
              and d.webhook_id <> all(${sql.param(skipWebhooks)}::text[])
            order by d.next_attempt_at
            limit ${limit}
            for update skip locked))
          returning w.account_id, w.id, w.webhook_id, w.attempts, w.event_id
        )
        select
          (select coalesce(json_agg(u.id), '[]') from unnest(${column((r) => r.id)}::text[]) as u(id)
            where u.id not in (select id from rec)) as lost,
          (select coalesce(json_agg(json_build_array(c.account_id, c.id, c.webhook_id, c.attempts, c.event_id)), '[]') from claimed c) as claimed,
          (select coalesce(json_agg(json_build_array(e.account_id, e.id, e.name, e.data, e.ts)), '[]') from event e
            where (e.account_id, e.id) in (select account_id, event_id from claimed)) as events,
          (select coalesce(json_agg(json_build_array(s.account_id, s.id, s.url, s.secret_ref, s.status)), '[]') from webhook_subscription s
            where (s.account_id, s.id) in (select account_id, webhook_id from claimed)) as subs`,
  );
  const parsed = <T>(value: unknown): T => (typeof value === "string" ? JSON.parse(value) : value) as T;
  const lost = new Set(parsed<string[]>(row?.lost ?? "[]"));
  const recorded = new Set<string>();
  for (const r of records) if (!lost.has(r.id)) recorded.add(r.id);
  const events = new Map<string, ClaimedDelivery["event"]>();
  for (const [accountId, id, name, data, ts] of parsed<Array<[string, number, string, unknown, number]>>(row?.events ?? "[]")) {
    events.set(`${accountId}\u0000${id}`, { name, data, ts: Number(ts) });
  }
  const subs = new Map<string, ClaimedDelivery["subscription"]>();
  for (const [accountId, id, url, secretRef, status] of parsed<Array<[string, string, string, string | null, string]>>(row?.subs ?? "[]")) {
    subs.set(`${accountId}\u0000${id}`, { url, secret_ref: secretRef, status: status ?? "active" });
  }
  const claimed = parsed<Array<[string, string, string, number, number]>>(row?.claimed ?? "[]").map(
    ([accountId, id, webhookId, attempts, eventId]): ClaimedDelivery => ({
      account_id: accountId,
      id,
      webhook_id: webhookId,
      attempts: Number(attempts),
      event: events.get(`${accountId}\u0000${eventId}`) ?? null,
      subscription: subs.get(`${accountId}\u0000${webhookId}`) ?? null,
    }),
  );
  return { recorded, claimed };
}

/** Deletes up to `batch` delivered rows delivered before `before` (epoch s); returns how many. */
export async function deleteDeliveredBefore(db: Db, before: number, batch: number): Promise<number> {
  const rows = await rawRows<{ id: string }>(
    db,
    sql`delete from webhook_delivery where (account_id, id) in (
          select account_id, id from webhook_delivery
          where status = 'delivered' and delivered_at < ${before}
          limit ${batch})
        returning id`,
  );
  return rows.length;
}

/** The log's filters. */
export interface DeliveryFilter {
  webhookId?: string;
  event?: string;
  failedOnly?: boolean;
}

/** One account's deliveries, newest first, before `beforeId`. */
export async function listDeliveryRows(db: DbOrTx, accountId: string, filter: DeliveryFilter, beforeId: string | null, limit: number): Promise<WebhookDeliveryRow[]> {
  const where: SQL[] = [eq(webhookDeliveries.account_id, accountId)];
  if (filter.webhookId !== undefined) where.push(eq(webhookDeliveries.webhook_id, filter.webhookId));
  if (filter.event !== undefined) where.push(eq(webhookDeliveries.event, filter.event));
  if (filter.failedOnly) where.push(eq(webhookDeliveries.status, "failed"));
  if (beforeId) where.push(lt(webhookDeliveries.id, beforeId));
  return db.select().from(webhookDeliveries).where(and(...where)).orderBy(desc(webhookDeliveries.id)).limit(limit);
}
