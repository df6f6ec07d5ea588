/** Queries on call records and their traces. The only file of this capability that touches drizzle. */
import { and, asc, desc, eq, gte, isNull, lt, ne, sql, type SQL, type SQLWrapper } from "drizzle-orm";
import { resultRows, type DbOrTx } from "../db/db.ts";
import { callRecords, callTraces, type CallRecordRow, type CallTraceRow } from "./calls.schema.ts";

export type NewCallRecord = typeof callRecords.$inferInsert;
export type NewTraceStep = Omit<typeof callTraces.$inferInsert, "id">;

/** The account's call with this SIP Call-ID. */
export async function findCallBySipId(db: DbOrTx, accountId: string, sipCallId: string): Promise<CallRecordRow | null> {
  const [row] = await db
    .select()
    .from(callRecords)
    .where(and(eq(callRecords.account_id, accountId), eq(callRecords.sip_call_id, sipCallId)))
    .limit(1);
  return row ?? null;
}

/** The newest call with this SIP Call-ID in any account (for edge events that name no account). */
export async function findCallBySipIdAnyAccount(db: DbOrTx, sipCallId: string): Promise<CallRecordRow | null> {
  const [row] = await db.select().from(callRecords).where(eq(callRecords.sip_call_id, sipCallId)).orderBy(desc(callRecords.started_ms)).limit(1);
  return row ?? null;
}

/** One call of the account by call_… id. */
export async function findCall(db: DbOrTx, accountId: string, id: string): Promise<CallRecordRow | null> {
  const [row] = await db
    .select()
    .from(callRecords)
    .where(and(eq(callRecords.account_id, accountId), eq(callRecords.id, id)))
    .limit(1);
  return row ?? null;
}

/** Inserts a call unless the account already has one with its SIP Call-ID; true when inserted. */
export async function insertCall(db: DbOrTx, row: NewCallRecord): Promise<boolean> {
  const written = await db
    .insert(callRecords)
    .values(row)
    .onConflictDoNothing({ target: [callRecords.account_id, callRecords.sip_call_id] })
    .returning({ id: callRecords.id });
  return written.length === 1;
}

/** Appends trace steps in order. */
export async function insertTrace(db: DbOrTx, steps: NewTraceStep[]): Promise<void> {
  if (steps.length) await db.insert(callTraces).values(steps);
}

/** A call's trace, in order. */
export async function listTrace(db: DbOrTx, accountId: string, callId: string): Promise<CallTraceRow[]> {
  return db
    .select()
    .from(callTraces)
    .where(and(eq(callTraces.account_id, accountId), eq(callTraces.call_id, callId)))
    .orderBy(asc(callTraces.id));
}

/**
 * `ended_ms is null`, written so that the planner cannot read it as the predicate of
 * call_record_active_idx: an update of one call by its key must use the primary key. Matched, the
 * partial index made each dialog event scan every active call of the account (without statistics,
 * as on PGlite or with autovacuum off, the planner prefers it).
 */
const notEnded = sql`coalesce(${callRecords.ended_ms}, -1) = -1`;

/** One call of the account by its key, while it has not ended (and was not rejected): what the dialog updates touch. */
export function liveCallByKey(accountId: string, id: string): SQL {
  return and(eq(callRecords.account_id, accountId), eq(callRecords.id, id), notEnded, ne(callRecords.status, "rejected"))!;
}

/** routed → ringing (only from routed); returns the updated row or null. */
export async function markRinging(db: DbOrTx, accountId: string, id: string, atMs: number): Promise<CallRecordRow | null> {
  const [row] = await db
    .update(callRecords)
    .set({ status: "ringing", ringing_ms: atMs })
    .where(and(liveCallByKey(accountId, id), eq(callRecords.status, "routed")))
    .returning();
  return row ?? null;
}

/** Marks a call answered once, unless it has ended; returns the updated row or null. */
export async function markAnswered(
  db: DbOrTx,
  accountId: string,
  id: string,
  patch: { answered_ms: number; agent_id: string | null; legs?: Array<Record<string, unknown>> },
): Promise<CallRecordRow | null> {
  const [row] = await db
    .update(callRecords)
    .set({
      status: "answered",
      answered: 1,
      answered_ms: patch.answered_ms,
      agent_id: sql`coalesce(${callRecords.agent_id}, ${patch.agent_id})`,
      ...(patch.legs ? { legs: patch.legs } : {}),
    })
    .where(and(liveCallByKey(accountId, id), eq(callRecords.answered, 0)))
    .returning();
  return row ?? null;
}

/** Ends a call once; returns the updated row, or null when it had ended already. */
export async function markEnded(
  db: DbOrTx,
  accountId: string,
  id: string,
  patch: Pick<NewCallRecord, "status" | "ended_ms" | "billsec" | "hangup_cause" | "sip_code" | "cost_micro" | "currency" | "rate_plan_id"> & {
    legs?: Array<Record<string, unknown>>;
  },
): Promise<CallRecordRow | null> {
  const [row] = await db
    .update(callRecords)
    .set(patch)
    .where(liveCallByKey(accountId, id))
    .returning();
  return row ?? null;
}

/** Filters of a call listing. Times in epoch ms, `until` exclusive. */
export interface CallFilter {
  sinceMs: number;
  untilMs: number;
  direction?: string;
  userId?: string;
  numberId?: string;
}

/** Keyset position: the last row of the previous page (newest first). */
export interface CallKey {
  startedMs: number;
  id: string;
}

function listWhere(accountId: string, filter: CallFilter, after: CallKey | null): SQL | undefined {
  const where: SQL[] = [eq(callRecords.account_id, accountId), gte(callRecords.started_ms, filter.sinceMs), lt(callRecords.started_ms, filter.untilMs)];
  if (filter.direction) where.push(eq(callRecords.direction, filter.direction));
  if (filter.userId) where.push(eq(callRecords.user_id, filter.userId));
  if (filter.numberId) where.push(eq(callRecords.number_id, filter.numberId));
  // A row comparison: one range condition on the (account_id, started_ms, id) index.
  if (after) where.push(sql`(${callRecords.started_ms}, ${callRecords.id}) < (${after.startedMs}, ${after.id})`);
  return and(...where);
}

/** Calls started in [since, until), newest first, after `after`. */
export async function listCalls(db: DbOrTx, accountId: string, filter: CallFilter, after: CallKey | null, limit: number): Promise<CallRecordRow[]> {
  return db
    .select()
    .from(callRecords)
    .where(listWhere(accountId, filter, after))
    .orderBy(desc(callRecords.started_ms), desc(callRecords.id))
    .limit(limit);
}

/**
 * One CSV cell computed by the database (RFC 4180 quoting; text starting with = + - @, a tab or a
 * carriage return gets a leading ' so a spreadsheet never evaluates it: from and to come from SIP
 * headers anyone can write). Numbers and our own ids need neither and are written as they are.
 */
function csvText(column: SQLWrapper): SQL {
  // LIKE ANY rather than regular expressions or nested strpos(): each cell is looked at a few times
  // only, which keeps the whole line at about a microsecond in PostgreSQL.
  const quoted = (value: SQL) =>
    sql`case when ${value} like any (array['%"%', '%,%', '%' || chr(10) || '%', '%' || chr(13) || '%']) then '"' || replace(${value}, '"', '""') || '"' else ${value} end`;
  const formula = sql`${column} like any (array['=%', '+%', '-%', '@%', chr(9) || '%', chr(13) || '%'])`;
  return sql`coalesce(case when ${formula} then ${quoted(sql`('''' || ${column})`)} else ${quoted(sql`${column}`)} end, '')`;
}

const secs = (column: SQLWrapper) => sql`coalesce((${column} / 1000)::text, '')`;
const plain = (column: SQLWrapper) => sql`coalesce(${column}::text, '')`;

/** The CSV line of a call, built by the database: the columns of CSV_COLUMNS, in order. */
const csvLineSql = sql<string>`concat_ws(',',
  ${plain(callRecords.id)}, ${csvText(callRecords.sip_call_id)}, ${plain(callRecords.direction)},
  ${csvText(callRecords.from)}, ${csvText(callRecords.to)}, ${plain(callRecords.status)}, ${plain(callRecords.answered)},
  ${secs(callRecords.started_ms)}, ${secs(callRecords.answered_ms)}, ${secs(callRecords.ended_ms)}, ${plain(callRecords.billsec)},
  coalesce(greatest(0, round((${callRecords.ended_ms} - ${callRecords.started_ms}) / 1000.0))::bigint::text, ''),
  ${csvText(callRecords.hangup_cause)}, ${plain(callRecords.sip_code)}, ${plain(callRecords.cost_micro)}, ${csvText(callRecords.currency)},
  ${plain(callRecords.user_id)}, ${plain(callRecords.device_id)}, ${plain(callRecords.number_id)}, ${plain(callRecords.trunk_id)},
  ${plain(callRecords.queue_id)}, ${plain(callRecords.agent_id)})`;

/**
 * One page of the CSV export as one text (CRLF-separated lines, built and joined by the database, so
 * the driver parses one value per page instead of thousands of rows), with its keyset position.
 */
export async function csvPage(
  db: DbOrTx,
  accountId: string,
  filter: CallFilter,
  after: CallKey | null,
  limit: number,
): Promise<{ text: string; rows: number; last: CallKey | null }> {
  const result = await db.execute(sql`
    select string_agg(p.line, chr(13) || chr(10) order by p.started_ms desc, p.id desc) as text,
           count(*)::int as rows,
           (array_agg(p.started_ms order by p.started_ms, p.id))[1] as last_ms,
           (array_agg(p.id order by p.started_ms, p.id))[1] as last_id
    from (
      select ${csvLineSql} as line, ${callRecords.started_ms} as started_ms, ${callRecords.id} as id
      from ${callRecords}
      where ${listWhere(accountId, filter, after)}
      order by ${callRecords.started_ms} desc, ${callRecords.id} desc
      limit ${limit}
    ) p`);
  const row = resultRows<{ text: string | null; rows: number; last_ms: unknown; last_id: string | null }>(result)[0];
  if (!row || !row.rows || row.text === null || row.last_id === null) return { text: "", rows: 0, last: null };
  return { text: row.text, rows: Number(row.rows), last: { startedMs: Number(row.last_ms), id: row.last_id } };
}

/** Calls of the account not yet ended (admitted ones, not rejects), oldest first. */
export async function listActiveCalls(db: DbOrTx, accountId: string, sinceMs: number, limit: number): Promise<CallRecordRow[]> {
  return db
    .select()
    .from(callRecords)
    .where(and(eq(callRecords.account_id, accountId), isNull(callRecords.ended_ms), ne(callRecords.status, "rejected"), gte(callRecords.started_ms, sinceMs)))
    .orderBy(asc(callRecords.started_ms), asc(callRecords.id))
    .limit(limit);
}

/** Totals over calls started in [since, until). */
export interface UsageTotals {
  count: number;
  answered: number;
  billsec: number;
  cost_micro: number;
}

const totals = {
  count: sql<number>`count(*)::int`,
  answered: sql<number>`coalesce(sum(${callRecords.answered}), 0)::int`,
  billsec: sql<number>`coalesce(sum(${callRecords.billsec}), 0)::bigint`,
  cost_micro: sql<number>`coalesce(sum(${callRecords.cost_micro}), 0)::bigint`,
};

function usageWhere(accountId: string, sinceMs: number, untilMs: number): SQL {
  return and(eq(callRecords.account_id, accountId), gte(callRecords.started_ms, sinceMs), lt(callRecords.started_ms, untilMs), ne(callRecords.status, "rejected"))!;
}

const asTotals = (r: { count: unknown; answered: unknown; billsec: unknown; cost_micro: unknown }): UsageTotals => ({
  count: Number(r.count),
  answered: Number(r.answered),
  billsec: Number(r.billsec),
  cost_micro: Number(r.cost_micro),
});

/** Count, answered, billsec and cost of the account's admitted calls started in [since, until). */
export async function usageTotals(db: DbOrTx, accountId: string, sinceMs: number, untilMs: number): Promise<UsageTotals> {
  const [row] = await db.select(totals).from(callRecords).where(usageWhere(accountId, sinceMs, untilMs));
  return asTotals(row!);
}

/** The same totals per calendar day (YYYY-MM-DD) in `timezone`, days with calls only, oldest first. */
export async function usageByDay(db: DbOrTx, accountId: string, sinceMs: number, untilMs: number, timezone: string): Promise<Array<UsageTotals & { day: string }>> {
  const day = sql<string>`to_char(to_timestamp(${callRecords.started_ms} / 1000.0) at time zone ${timezone}, 'YYYY-MM-DD')`;
  const rows = await db
    .select({ day, ...totals })
    .from(callRecords)
    .where(usageWhere(accountId, sinceMs, untilMs))
    // By position: the expression repeated would bind the timezone as a second parameter, which
    // PostgreSQL does not see as the same expression.
    .groupBy(sql`1`)
    .orderBy(sql`1`);
  return rows.map((r) => ({ day: r.day, ...asTotals(r) }));
}

/** Epoch ms of the first instant of the current month in `timezone`. */
export async function monthStartMs(db: DbOrTx, timezone: string, nowMs: number): Promise<number> {
  const result = await db.execute(
    sql`select (extract(epoch from (date_trunc('month', to_timestamp(${nowMs} / 1000.0) at time zone ${timezone}) at time zone ${timezone})) * 1000)::bigint as ms`,
  );
  const rows = resultRows<{ ms: unknown }>(result);
  return Number(rows[0]!.ms);
}
