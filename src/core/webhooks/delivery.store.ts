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

/**
 * Claims up to `limit` due deliveries in one statement: pending or retrying, due, without a live
 * lease, not locked by another worker's claim in progress (`FOR UPDATE SKIP LOCKED`), oldest due
 * first, skipping the subscriptions in `skipWebhooks`. Sets the lease and the claim token and returns
 * the rows with their event and subscription.
 */
export async function claimDueDeliveries(
  db: DbOrTx,
  input: { now: number; limit: number; leaseUntil: number; token: string; skipWebhooks: string[] },
): Promise<ClaimedDelivery[]> {
  const { now, limit, leaseUntil, token, skipWebhooks } = input;
  const skip = skipWebhooks.length
    ? sql`and d.webhook_id not in (${sql.join(skipWebhooks.map((id) => sql`${id}`), sql`, `)})`
    : sql``;
  type Row = {
    account_id: string;
    id: string;
    webhook_id: string;
    attempts: number;
    e_name: string | null;
    e_data: unknown;
    e_ts: string | number | null;
    s_url: string | null;
    s_secret_ref: string | null;
    s_status: string | null;
  };
  // The due set of a busy queue is large and churns faster than its statistics: the planner then
  // picks a bitmap scan plus a sort of every due row (tens of ms at 20k rows) over walking the
  // due index in order and stopping at `limit` (a few ms). The claim's transaction rules the
  // first plan out for this one statement.
  const rows = await db.transaction(async (tx) => {
    await tx.execute(sql`select set_config('enable_bitmapscan', 'off', true), set_config('enable_sort', 'off', true)`);
    return rawRows<Row>(
    tx,
    sql`update webhook_delivery w set claimed_until = ${leaseUntil}, claim_token = ${token}
        from (select d.account_id, d.id, d.event_id, d.webhook_id from webhook_delivery d
              where d.status in ('pending','retrying') and d.next_attempt_at <= ${now}
                and (d.claimed_until is null or d.claimed_until <= ${now}) ${skip}
              order by d.next_attempt_at
              limit ${limit}
              for update skip locked) c
          left join event e on e.account_id = c.account_id and e.id = c.event_id
          left join webhook_subscription s on s.account_id = c.account_id and s.id = c.webhook_id
        where w.account_id = c.account_id and w.id = c.id
        returning w.account_id, w.id, w.webhook_id, w.attempts,
                  e.name as e_name, e.data as e_data, e.ts as e_ts,
                  s.url as s_url, s.secret_ref as s_secret_ref, s.status as s_status`,
    );
  });
  return rows.map(toClaimed);
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

/**
 * Records attempt outcomes in one statement and releases their claims. A row whose claim token
 * changed (its lease ran out and another worker took it) is left alone. Returns the ids recorded.
 */
export async function recordAttempts(db: DbOrTx, records: AttemptRecord[]): Promise<Set<string>> {
  if (!records.length) return new Set();
  // One array per column (unnest): the statement text is the same for every batch size, so it is
  // prepared once, and a batch of hundreds costs ten parameters.
  const column = <T>(pick: (r: AttemptRecord) => T) => sql.param(records.map(pick));
  const rows = await rawRows<{ id: string }>(
    db,
    sql`update webhook_delivery d set status = u.status, attempts = u.attempts, last_status = u.last_status,
               last_error = u.last_error, next_attempt_at = u.next_attempt_at, updated_at = u.updated_at,
               delivered_at = u.delivered_at, claimed_until = null, claim_token = null
        from unnest(${column((r) => r.account_id)}::text[], ${column((r) => r.id)}::text[], ${column((r) => r.token)}::text[],
                    ${column((r) => r.status)}::text[], ${column((r) => r.attempts)}::smallint[], ${column((r) => r.last_status)}::integer[],
                    ${column((r) => r.last_error)}::text[], ${column((r) => r.next_attempt_at)}::bigint[], ${column((r) => r.updated_at)}::bigint[],
                    ${column((r) => r.delivered_at)}::bigint[])
             as u(account_id, id, token, status, attempts, last_status, last_error, next_attempt_at, updated_at, delivered_at)
        where d.account_id = u.account_id and d.id = u.id and d.claim_token = u.token
        returning d.id`,
  );
  return new Set(rows.map((r) => r.id));
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
 * Recording: like {@link recordAttempts}, only rows still holding the claim token they were made
 * under. Claiming: like {@link claimDueDeliveries}: pending or retrying, due, without a live lease,
 * not locked by another claim in progress (`FOR UPDATE SKIP LOCKED`), oldest due first, skipping
 * `skipWebhooks` and the rows being recorded. The claimed rows are updated by `ctid` (a TID scan),
 * so the plan cannot turn into a scan of the whole table, and the due scan walks the partial due
 * index in order whatever the statistics say (no planner settings, hence no transaction). The
 * statement text is the same for every call (arrays are parameters), so it is prepared once.
 */
export async function exchangeDeliveries(db: DbOrTx, input: ExchangeInput): Promise<{ recorded: Set<string>; claimed: ClaimedDelivery[] }> {
  const { records, now, limit, leaseUntil, token, skipWebhooks } = input;
  const column = <T>(pick: (r: AttemptRecord) => T) => sql.param(records.map(pick));
  const tokens = [...new Set(records.map((r) => r.token))];
  type Row = {
    r_id: string | null;
    account_id: string;
    id: string;
    webhook_id: string;
    attempts: number;
    e_name: string | null;
    e_data: unknown;
    e_ts: string | number | null;
    s_url: string | null;
    s_secret_ref: string | null;
    s_status: string | null;
  };
  const rows = await rawRows<Row>(
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
        select null::text as r_id, c.account_id, c.id, c.webhook_id, c.attempts,
               e.name as e_name, e.data as e_data, e.ts as e_ts,
               s.url as s_url, s.secret_ref as s_secret_ref, s.status as s_status
        from claimed c
          left join event e on e.account_id = c.account_id and e.id = c.event_id
          left join webhook_subscription s on s.account_id = c.account_id and s.id = c.webhook_id
        union all
        select id, null, null, null, null, null, null, null, null, null, null from rec`,
  );
  const recorded = new Set<string>();
  const claimed: ClaimedDelivery[] = [];
  for (const r of rows) {
    if (r.r_id !== null) recorded.add(r.r_id);
    else claimed.push(toClaimed(r));
  }
  return { recorded, claimed };
}

function toClaimed(r: {
  account_id: string;
  id: string;
  webhook_id: string;
  attempts: number;
  e_name: string | null;
  e_data: unknown;
  e_ts: string | number | null;
  s_url: string | null;
  s_secret_ref: string | null;
  s_status: string | null;
}): ClaimedDelivery {
  return {
    account_id: r.account_id,
    id: r.id,
    webhook_id: r.webhook_id,
    attempts: Number(r.attempts),
    event: r.e_name === null ? null : { name: r.e_name, data: typeof r.e_data === "string" ? JSON.parse(r.e_data) : r.e_data, ts: Number(r.e_ts) },
    subscription: r.s_url === null ? null : { url: r.s_url, secret_ref: r.s_secret_ref, status: r.s_status ?? "active" },
  };
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
