/** Queries on webhook deliveries: planning, claiming, recording attempts, the log, retention. */
import { and, desc, eq, lt, ne, sql, type SQL } from "drizzle-orm";
import type { Database, Db, DbOrTx } from "../db/db.ts";
import type { ConfigCache } from "../cache/config-cache.ts";
import { rawRows } from "../db/migrate.ts";
import { rawJson } from "../db/sql-text.ts";
import { webhookDeliveries, type WebhookDeliveryRow } from "./delivery.schema.ts";

export type NewDeliveryRow = typeof webhookDeliveries.$inferInsert;

/**
 * The active subscriptions of `accountIds` with the events each receives (one read for a set of
 * events). Read by every emitting transaction, so a fixed text: the query builder took ~18 µs of CPU
 * to write it each time.
 */
export async function activeSubscriptions(tx: DbOrTx, accountIds: string[], cache?: ConfigCache): Promise<Array<{ account_id: string; id: string; events: string[] }>> {
  if (!accountIds.length) return [];
  if (cache) {
    // Per account, kept until the account's subscriptions (or any of its configuration) change.
    // Never the transaction's own uncommitted subscription: no transaction both writes
    // subscriptions and emits events.
    const found = await cache.readEach("webhook-subscriptions\u0000", accountIds.map((id) => ({ account_id: id, id: "" })), async (missing) => {
      const rows = await activeSubscriptions(tx, missing.map((m) => m.account_id));
      const byAccount = new Map<string, Array<{ account_id: string; id: string; events: string[] }>>(missing.map((m) => [`${m.account_id}\u0000`, []]));
      for (const row of rows) byAccount.get(`${row.account_id}\u0000`)!.push(row);
      return byAccount;
    });
    return [...found.values()].flat();
  }
  const byAccount = accountIds.length === 1 ? sql`account_id = ${accountIds[0]!}` : sql`account_id = any(${sql.param(accountIds)}::text[])`;
  return rawRows(tx, sql`select account_id, id, events from webhook_subscription where ${byAccount} and status = 'active'`);
}

/**
 * Whether subscription `w` receives event `e` (SQL, aliases given): as planDeliveries decides it, a
 * test event naming a webhook_id goes to that subscription only, others to subscriptions naming
 * the event or `*`.
 */
function receives(e: string, w: string): SQL {
  const [ev, sub] = [sql.raw(e), sql.raw(w)];
  return sql`${sub}.account_id = ${ev}.account_id and ${sub}.status = 'active'
    and case when ${ev}.name = 'test' and jsonb_typeof(${ev}.data -> 'webhook_id') = 'string'
             then ${sub}.id = ${ev}.data ->> 'webhook_id'
             else ${ev}.name = any(${sub}.events) or '*' = any(${sub}.events) end`;
}

/**
 * The delivery planner in SQL (EventBus.statement): the same rows as insertDeliveries writes for
 * planDeliveries' plan, one per (event, subscription receiving it), due at once, with ids from the
 * statement's pool in (event, subscription) order.
 */
export const deliveryPlanSql = {
  need: sql`select i.account_id, count(*)::int as n from ev_in i join webhook_subscription w on ${receives("i", "w")} group by i.account_id`,
  ctes: sql`plan_wh_match as (
      select e.account_id, e.id as event_id, e.name, e.ts, w.id as webhook_id, row_number() over (order by e.id, w.id) as n
      from ev e join webhook_subscription w on ${receives("e", "w")}
    ), plan_wh_log as (
      insert into webhook_delivery (account_id, id, webhook_id, event_id, event, status, attempts, created_at, updated_at)
      select m.account_id, p.id, m.webhook_id, m.event_id, m.name, 'pending', 0, m.ts / 1000, m.ts / 1000
      from plan_wh_match m join ev_pool p on p.n = m.n
      returning account_id, id, webhook_id, event_id, attempts
    ), plan_wh_due as (
      insert into webhook_delivery_due (account_id, id, webhook_id, event_id, attempts, next_attempt_at)
      select account_id, id, webhook_id, event_id, attempts, 0 from plan_wh_log
    )`,
  planned: sql`select distinct event_id from plan_wh_log`,
};

/**
 * Plans deliveries: their log rows and their queue rows (due at once), in one statement of the
 * emitting transaction.
 */
export async function insertDeliveries(tx: DbOrTx, rows: NewDeliveryRow[]): Promise<void> {
  if (!rows.length) return;
  const column = <T>(pick: (r: NewDeliveryRow) => T) => sql.param(rows.map(pick));
  await tx.execute(
    sql`with ins as (
          insert into webhook_delivery (account_id, id, webhook_id, event_id, event, status, attempts, created_at, updated_at)
          select * from unnest(${column((r) => r.account_id)}::text[], ${column((r) => r.id)}::text[], ${column((r) => r.webhook_id)}::text[],
                               ${column((r) => r.event_id)}::bigint[], ${column((r) => r.event)}::text[], ${column((r) => r.status)}::text[],
                               ${column((r) => r.attempts ?? 0)}::smallint[], ${column((r) => r.created_at)}::bigint[], ${column((r) => r.updated_at)}::bigint[])
          returning account_id, id, webhook_id, event_id, attempts
        )
        insert into webhook_delivery_due (account_id, id, webhook_id, event_id, attempts, next_attempt_at)
        select account_id, id, webhook_id, event_id, attempts, 0 from ins`,
  );
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
  /** The event (`id`: its sequence number); null when its row is gone. */
  event: { id: number; name: string; data: unknown; ts: number } | null;
  /** The subscription; null when it was removed. */
  subscription: { url: string; secret_ref: string | null; status: string } | null;
}

/** A subscription as an attempt needs it now (null: removed). */
export async function subscriptionForDelivery(db: DbOrTx, accountId: string, id: string): Promise<ClaimedDelivery["subscription"]> {
  const [row] = await rawRows<{ url: string; secret_ref: string | null; status: string }>(
    db,
    sql`select url, secret_ref, status from webhook_subscription where account_id = ${accountId} and id = ${id}`,
  );
  return row ?? null;
}

/** Gives claims back unattempted (a stopping worker), so another worker may take them at once. */
export async function releaseClaims(db: DbOrTx, keys: Array<{ account_id: string; id: string; token: string }>): Promise<void> {
  if (!keys.length) return;
  await db.execute(
    sql`update webhook_delivery_due set claimed_until = null, claim_token = null
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
  /**
   * The account log's line of a final failure (warn, source webhook), written with the outcome, and
   * only when the outcome is (the claim still held).
   */
  log?: { id: string; message: string; data: Record<string, unknown> };
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
  /** Most rows to claim per subscription: `caps[webhook_id]`, else `defaultCap`. */
  caps: Record<string, number>;
  defaultCap: number;
  /** Attempts a delivery gets: a claim counting a lost one never goes past it. */
  maxAttempts: number;
}

/**
 * Records attempt outcomes and claims up to `limit` due deliveries in ONE statement (one round
 * trip, one commit), so a busy worker pays one database exchange per batch, not two.
 *
 * Recording, only for rows whose queue entry still holds the claim token the attempt was made
 * under (a row whose lease ran out and that another worker took is left alone; its id is not in
 * `recorded`): a final outcome (delivered, failed) deletes the queue entry, a retry sets its next
 * due time and releases it; either way the log row takes the outcome (a HOT update). The outcomes
 * travel as comma-separated columns and one JSON text (outcomeColumns), not as arrays the client
 * escapes value by value.
 * Claiming: due, without a live lease, not locked by another claim in progress (`FOR UPDATE SKIP
 * LOCKED`), oldest due first, skipping `skipWebhooks` and the rows being recorded, and of each
 * subscription at most its cap (`caps`, else `defaultCap`): among the `limit` oldest candidates, a
 * subscription's oldest up to its cap, so one subscription's backlog never fills a claim. The
 * candidates are read unlocked, then locked by `ctid` with the conditions checked again (a row
 * another claim changed meanwhile is a new version at another `ctid`, and is left alone). Sets the
 * lease and the claim token (a HOT update); the claimed rows are updated by `ctid` (a TID scan). A row
 * taken from a claim that lapsed unrecorded (its token still set: a worker that died, or lost the
 * claim to a failed exchange) counts that claim as an attempt made, since its POST may have gone out,
 * so no delivery is ever sent more than the three times the retry schedule allows; claims known not
 * to have been attempted are given back (`releaseClaims`) and count nothing. The due scan
 * must walk the queue's index in order and stop at `limit`: without statistics (no autovacuum, or
 * PGlite) the planner prefers a bitmap scan of every due row plus a sort, which made each claim
 * cost as much as the whole backlog. Those plans are off on the queue connections (PostgreSQL: the
 * statement is one round trip there, planned once per connection) and, on PGlite, in a transaction
 * around the statement.
 */
export async function exchangeDeliveries(database: Pick<Database, "db" | "queue">, input: ExchangeInput): Promise<{ recorded: Set<string>; claimed: ClaimedDelivery[] }> {
  const { records, now, limit, leaseUntil, token, skipWebhooks, caps, defaultCap, maxAttempts } = input;
  const tokens = [...new Set(records.map((r) => r.token))];
  const { plain, others } = outcomeColumns(records);
  const capsJson = JSON.stringify(caps);
  /** Due, unleased, and not of a claim being recorded in this statement. */
  const claimable = (d: string) => {
    const at = sql.raw(d);
    return sql`${at}.next_attempt_at <= ${now}
      and (${at}.claimed_until is null or ${at}.claimed_until <= ${now})
      and (${at}.claim_token is null or ${at}.claim_token <> all(${sql.param(tokens)}::text[]))`;
  };
  // The `limit` oldest claimable rows. With subscriptions to skip, their rows are not walked past: a
  // slow endpoint's backlog sits at the front of the due order, and the plain walk read all of it on
  // every claim (100,000 rows: 10 ms a claim). Then each subscription that has due rows is found by a
  // skip scan of (webhook_id, next_attempt_at) (a probe per subscription), and of each one not skipped
  // its oldest claimable rows, up to its cap, are read from its own part of that index.
  const candidates = skipWebhooks.length
    ? sql`(with recursive subs(w) as (
              (select x.webhook_id from webhook_delivery_due x order by x.webhook_id limit 1)
              union all
              select (select x.webhook_id from webhook_delivery_due x where x.webhook_id > s.w order by x.webhook_id limit 1)
              from subs s where s.w is not null)
            select d.ctid, d.webhook_id, d.next_attempt_at
            from subs s cross join lateral (
              select d.ctid, d.webhook_id, d.next_attempt_at from webhook_delivery_due d
              -- Due as a row comparison on the index's two columns: only that index can take it, so the
              -- planner walks this subscription's part of it, not the due order of all of them filtered
              -- by subscription (which a generic plan's estimates preferred).
              where d.webhook_id = s.w and (d.webhook_id, d.next_attempt_at) <= (s.w, ${now}) and ${claimable("d")}
              order by d.webhook_id, d.next_attempt_at
              limit greatest(0, coalesce((${capsJson}::jsonb ->> s.w)::integer, ${defaultCap}))) d
            where s.w is not null and s.w <> all(${sql.param(skipWebhooks)}::text[])
            order by d.next_attempt_at
            limit ${limit})`
    : sql`(select d.ctid, d.webhook_id, d.next_attempt_at from webhook_delivery_due d
            where ${claimable("d")}
            order by d.next_attempt_at
            limit ${limit})`;
  // One row of four JSON arrays: the ids NOT recorded (claim lost), the claimed rows, and each
  // claimed row's event and subscription once (deliveries share them). Parsing a few JSON texts
  // costs the worker far less than hundreds of rows of ten columns each.
  const column = (i: number) => sql`string_to_array(${plain[i]!}, ',')`;
  const statement = sql`with u as (
            select account_id, id, token, 'delivered' as status, attempts::smallint as attempts, last_status::integer as last_status,
                   null::text as last_error, next_attempt_at::bigint as next_attempt_at, updated_at::bigint as updated_at,
                   delivered_at::bigint as delivered_at, null::text as log_id, null::text as log_message, null::jsonb as log_data
            from unnest(${column(0)}, ${column(1)}, ${column(2)}, ${column(3)}, ${column(4)}, ${column(5)}, ${column(6)}, ${column(7)})
              as p(account_id, id, token, attempts, last_status, next_attempt_at, updated_at, delivered_at)
            union all
            select o->>0, o->>1, o->>2, o->>3, (o->>4)::smallint, (o->>5)::integer, o->>6, (o->>7)::bigint,
                   (o->>8)::bigint, (o->>9)::bigint, o->>10, o->>11, o->12
            from jsonb_array_elements(${others}::jsonb) as o
          ), fin as (
            delete from webhook_delivery_due d using u
            where u.status in ('delivered', 'failed') and d.account_id = u.account_id and d.id = u.id and d.claim_token = u.token
            returning d.account_id, d.id
          ), failures as (
            insert into account_log (account_id, id, ts, level, source, message, call_id, data)
            select u.account_id, u.log_id, u.next_attempt_at, 'warn', 'webhook', u.log_message, null,
                   -- Given up without a new attempt (the subscription or event gone): the last attempt's
                   -- status, as the delivery keeps it (this statement sees the row as it was).
                   case when u.log_data->'last_status' = 'null'::jsonb
                     then u.log_data || jsonb_build_object('last_status', (select l.last_status from webhook_delivery l where l.account_id = u.account_id and l.id = u.id))
                     else u.log_data end
            from u join fin on fin.account_id = u.account_id and fin.id = u.id
            where u.status = 'failed' and u.log_id is not null
          ), ret as (
            update webhook_delivery_due d set attempts = u.attempts, next_attempt_at = u.next_attempt_at, claimed_until = null, claim_token = null
            from u
            where u.status = 'retrying' and d.account_id = u.account_id and d.id = u.id and d.claim_token = u.token
            returning d.account_id, d.id
          ), rec as (
            select account_id, id from fin union all select account_id, id from ret
          ), logged as (
            update webhook_delivery l set status = u.status, attempts = u.attempts,
                   -- No attempt made (the subscription or event is gone): the last attempt's status stays.
                   last_status = case when u.attempts = l.attempts then l.last_status else u.last_status end,
                   last_error = u.last_error, updated_at = u.updated_at, delivered_at = u.delivered_at
            from u, rec
            where rec.account_id = u.account_id and rec.id = u.id and l.account_id = u.account_id and l.id = u.id
          ), claimed as (
            -- A claim token still set is a claim whose lease ran out with nothing recorded (its worker
            -- died, or its exchange failed): its attempt may have been sent, so it counts.
            update webhook_delivery_due w set claimed_until = ${leaseUntil}, claim_token = ${token},
                   attempts = least(w.attempts + (w.claim_token is not null)::int, ${maxAttempts})
            where w.ctid = any(array(
              select l.ctid from webhook_delivery_due l
              where l.ctid = any(array(
                  select c.ctid from (
                    select d.ctid, row_number() over (partition by d.webhook_id collate "C" order by d.next_attempt_at) as n,
                           coalesce((${capsJson}::jsonb ->> d.webhook_id)::integer, ${defaultCap}) as cap
                    from ${candidates} d) c
                  where c.n <= c.cap))
                and l.next_attempt_at <= ${now}
                and (l.claimed_until is null or l.claimed_until <= ${now})
                and (l.claim_token is null or l.claim_token <> all(${sql.param(tokens)}::text[]))
              for update skip locked))
            returning w.account_id, w.id, w.webhook_id, w.attempts, w.event_id
          )
          select
            (select coalesce(json_agg(u.id), '[]') from u
              where not exists (select 1 from rec where rec.account_id = u.account_id and rec.id = u.id)) as lost,
            (select coalesce(json_agg(json_build_array(c.account_id, c.id, c.webhook_id, c.attempts, c.event_id)), '[]') from claimed c) as claimed,
            (select coalesce(json_agg(json_build_array(e.account_id, e.id, e.name, e.data, e.ts)), '[]') from event e
              where (e.account_id, e.id) in (select account_id, event_id from claimed)) as events,
            (select coalesce(json_agg(json_build_array(s.account_id, s.id, s.url, s.secret_ref, s.status)), '[]') from webhook_subscription s
              where (s.account_id, s.id) in (select account_id, webhook_id from claimed)) as subs`;
  type Row = { lost: unknown; claimed: unknown; events: unknown; subs: unknown };
  const [row] = database.queue
    ? await rawRows<Row>(database.queue, statement)
    : await database.db.transaction(async (tx) => {
        await tx.execute(sql`select set_config('enable_bitmapscan', 'off', true), set_config('enable_seqscan', 'off', true)`);
        return rawRows<Row>(tx, statement);
      });
  const lost = new Set(rawJson<string[]>(row?.lost ?? "[]"));
  const recorded = new Set<string>();
  for (const r of records) if (!lost.has(r.id)) recorded.add(r.id);
  const events = new Map<string, ClaimedDelivery["event"]>();
  for (const [accountId, id, name, data, ts] of rawJson<Array<[string, number, string, unknown, number]>>(row?.events ?? "[]")) {
    events.set(`${accountId}\u0000${id}`, { id: Number(id), name, data, ts: Number(ts) });
  }
  const subs = new Map<string, ClaimedDelivery["subscription"]>();
  for (const [accountId, id, url, secretRef, status] of rawJson<Array<[string, string, string, string | null, string]>>(row?.subs ?? "[]")) {
    subs.set(`${accountId}\u0000${id}`, { url, secret_ref: secretRef, status: status ?? "active" });
  }
  const claimed = rawJson<Array<[string, string, string, number, number]>>(row?.claimed ?? "[]").map(
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

/** Text that can go in a comma-separated list unchanged: ids, tokens, digits. */
const LIST_SAFE = /^[\w.:-]+$/;

/**
 * The outcomes as the exchange reads them. Delivered ones with nothing more to say (no error, no log
 * line), nearly all of them, go as eight comma-separated columns (account, id, token, attempts,
 * last_status, next_attempt_at, updated_at, delivered_at), which PostgreSQL splits with string_to_array;
 * the others (retries, failures) as one JSON array of arrays. Parsing every outcome as JSON cost
 * PostgreSQL ~3 µs a row, the columns a tenth of that, and joining them costs the worker less than
 * JSON.stringify.
 */
export function outcomeColumns(records: AttemptRecord[]): { plain: string[]; others: string } {
  const plain: string[][] = [[], [], [], [], [], [], [], []];
  const others: unknown[] = [];
  for (const r of records) {
    if (
      r.status === "delivered" && r.last_error === null && !r.log && r.last_status !== null && r.delivered_at !== null &&
      LIST_SAFE.test(r.account_id) && LIST_SAFE.test(r.id) && LIST_SAFE.test(r.token)
    ) {
      const values = [r.account_id, r.id, r.token, r.attempts, r.last_status, r.next_attempt_at, r.updated_at, r.delivered_at];
      for (let i = 0; i < 8; i++) plain[i]!.push(String(values[i]));
    } else {
      others.push([
        r.account_id, r.id, r.token, r.status, r.attempts, r.last_status, r.last_error, r.next_attempt_at, r.updated_at, r.delivered_at,
        ...(r.log ? [r.log.id, r.log.message, r.log.data] : []),
      ]);
    }
  }
  return { plain: plain.map((values) => values.join(",")), others: JSON.stringify(others) };
}

/**
 * Deletes up to `batch` finished (delivered or failed) deliveries created before `before` (epoch s);
 * returns how many. A delivery still to be attempted is never removed, however old.
 */
export async function deleteFinishedBefore(db: Db, before: number, batch: number): Promise<number> {
  const rows = await rawRows<{ id: string }>(
    db,
    sql`delete from webhook_delivery where (account_id, id) in (
          select account_id, id from webhook_delivery
          where created_at < ${before} and status in ('delivered', 'failed')
          order by created_at
          limit ${batch})
        returning id`,
  );
  return rows.length;
}

/** The log's filters. */
export interface DeliveryFilter {
  webhookId?: string;
  event?: string;
  /** true: failed ones only; false: all but the failed ones. */
  failed?: boolean;
}

/** One account's deliveries, newest first, before `beforeId`. */
export async function listDeliveryRows(db: DbOrTx, accountId: string, filter: DeliveryFilter, beforeId: string | null, limit: number): Promise<WebhookDeliveryRow[]> {
  const where: SQL[] = [eq(webhookDeliveries.account_id, accountId)];
  if (filter.webhookId !== undefined) where.push(eq(webhookDeliveries.webhook_id, filter.webhookId));
  if (filter.event !== undefined) where.push(eq(webhookDeliveries.event, filter.event));
  if (filter.failed !== undefined) where.push(filter.failed ? eq(webhookDeliveries.status, "failed") : ne(webhookDeliveries.status, "failed"));
  if (beforeId) where.push(lt(webhookDeliveries.id, beforeId));
  return db.select().from(webhookDeliveries).where(and(...where)).orderBy(desc(webhookDeliveries.id)).limit(limit);
}
