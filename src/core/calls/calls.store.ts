/** Queries on call records and their traces. The only file of this capability that touches drizzle. */
import { and, asc, count, desc, eq, getTableColumns, gte, inArray, isNull, lt, ne, or, sql, type SQL, type SQLWrapper } from "drizzle-orm";
import { columnList, columnReader, jsonRows } from "../db/sql-text.ts";
import { resultRows, type DbOrTx } from "../db/db.ts";
import { rawRows } from "../db/migrate.ts";
import { callRecords, callTraces, type CallRecordRow, type CallTraceRow } from "./calls.schema.ts";

export type NewCallRecord = typeof callRecords.$inferInsert;
export type NewTraceStep = Omit<typeof callTraces.$inferInsert, "id">;

/**
 * The account's call of this SIP Call-ID and INVITE CSeq (`cseq`); without it, the newest of the
 * Call-ID (a Call-ID reused by a new INVITE has a record per INVITE).
 */
export async function findCallBySipId(db: DbOrTx, accountId: string, sipCallId: string, cseq?: number): Promise<CallRecordRow | null> {
  const sameCall = and(eq(callRecords.account_id, accountId), eq(callRecords.sip_call_id, sipCallId));
  const [row] = await db
    .select()
    .from(callRecords)
    .where(cseq === undefined ? sameCall : and(sameCall, eq(callRecords.sip_cseq, cseq)))
    .orderBy(desc(callRecords.started_ms))
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

/**
 * The user a call was routed to (the reply's `dest_kind` user): the one who answers when the edge
 * does not name a callee leg's user (the shipped edge does not; a media engine may).
 */
const routedUser = (reply: SQLWrapper) => sql`case when ${reply} #>> '{rtjson,vars,dest_kind}' = 'user' then ${reply} #>> '{rtjson,vars,dest_id}' end`;
const ROUTED_USER = routedUser(sql.raw("c.reply"));

/**
 * The call `userId` is in now, the latest if several: one it placed (user_id), answered (agent_id) or
 * that is ringing it (routed to the user and not answered yet). Reads the account's live calls only.
 */
export async function findCurrentCallOfUser(db: DbOrTx, accountId: string, userId: string): Promise<CallRecordRow | null> {
  const c = callRecords;
  const [row] = await db
    .select()
    .from(c)
    .where(
      and(
        eq(c.account_id, accountId),
        isNull(c.ended_ms),
        sql`(${c.user_id} = ${userId} or ${c.agent_id} = ${userId} or (${c.answered} = 0 and ${routedUser(c.reply)} = ${userId}))`,
      ),
    )
    .orderBy(desc(c.started_ms))
    .limit(1);
  return row ?? null;
}

/** The call_record columns, by their database names. */
const CALL_COLUMNS = new Set(Object.values(getTableColumns(callRecords)).map((c) => c.name));
/** Column lists of call inserts, by the columns a row gives (the callers give a few fixed sets). */
const callColumnLists = new Map<string, SQL>();

/** The names of the fields `row` gives (undefined ones are left to their defaults), comma-separated. */
const givenColumns = (row: Record<string, unknown>) => Object.keys(row).filter((k) => row[k] !== undefined).join(",");

/** The quoted column list of the fields `row` gives (undefined ones left to their defaults). */
function callColumnList(row: Record<string, unknown>): SQL {
  const signature = givenColumns(row);
  let list = callColumnLists.get(signature);
  if (!list) {
    const names = signature.split(",");
    const unknown = names.find((n) => !CALL_COLUMNS.has(n));
    if (unknown !== undefined) throw new Error(`call_record has no column ${unknown}`);
    list = sql.raw(names.map((n) => `"${n}"`).join(", "));
    if (callColumnLists.size < 64) callColumnLists.set(signature, list);
  }
  return list;
}


/**
 * The call path's write of admitted calls as CTEs of one statement (EventBus.statement): `adm_call`
 * inserts the calls whose Call-ID their account does not have yet (returning account_id, id,
 * sip_call_id), `adm_trace` the trace steps of those calls only, in order; both only where `gate`
 * holds. A fixed text per set of columns given (every call must give the same set; the query builder
 * took about 35 µs of CPU to write an insert each time), with the rows as JSON parameters, however
 * many. Columns the calls do not give take their defaults.
 */
export function admissionCtes(calls: NewCallRecord[], steps: NewTraceStep[], gate: SQL): SQL {
  const columns = callColumnList(calls[0]!);
  const signature = givenColumns(calls[0]!);
  if (calls.some((row) => givenColumns(row) !== signature)) throw new Error("admissionCtes: every call must give the same columns");
  return sql`adm_call as (
      insert into call_record (${columns})
      select ${columns} from jsonb_populate_recordset(null::call_record, ${JSON.stringify(calls)}::jsonb)
      where ${gate}
      on conflict (account_id, sip_call_id, sip_cseq) do nothing
      returning account_id, id, sip_call_id
    ), ${traceCte("adm_trace", steps, "adm_call")}`;
}

/** Trace steps as the JSON rows the inserts read (`data` null when absent). */
const traceJson = (steps: NewTraceStep[]) =>
  JSON.stringify(steps.map((s) => ({ account_id: s.account_id, call_id: s.call_id, at_ms: s.at_ms, step: s.step, result: s.result, data: s.data ?? null })));

/** CTE `name` appending `steps` in order (their ids follow it), for the calls CTE `written` returned (account_id, id) only. */
function traceCte(name: "adm_trace" | "dlg_trace", steps: NewTraceStep[], written: "adm_call" | "dlg_upd"): SQL {
  return sql`${sql.raw(name)} as (
      insert into call_trace (account_id, call_id, at_ms, step, result, data)
      select s.account_id, s.call_id, s.at_ms, s.step, s.result, s.data
      from rows from (jsonb_to_recordset(${traceJson(steps)}::jsonb) as (account_id text, call_id text, at_ms bigint, step text, result text, data jsonb))
        with ordinality as s(account_id, call_id, at_ms, step, result, data, n)
      where exists (select 1 from ${sql.raw(written)} w where w.account_id = s.account_id and w.id = s.call_id)
      order by s.n
    )`;
}

/**
 * Appends trace steps in order (their ids follow the order given). A fixed text with the steps as one
 * JSON parameter: no query building per call, and one prepared statement whatever the number of steps.
 */
export async function insertTrace(db: DbOrTx, steps: NewTraceStep[]): Promise<void> {
  if (!steps.length) return;
  await db.execute(
    sql`insert into call_trace (account_id, call_id, at_ms, step, result, data)
        select account_id, call_id, at_ms, step, result, data
        from rows from (jsonb_to_recordset(${traceJson(steps)}::jsonb) as (account_id text, call_id text, at_ms bigint, step text, result text, data jsonb))
          with ordinality as t(account_id, call_id, at_ms, step, result, data, n)
        order by n`,
  );
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

// ── Set-based forms of the dialog updates: one statement for the calls of a batch of edge events.
// The values travel as one JSON text (jsonb_to_recordset): nulls and the legs' JSON need no array
// casting, and the database parses it faster than the client escapes one array per column.

/**
 * Calls still open (admitted, no end) whose last sign of life (the answer, else the start) is before
 * `beforeMs`, oldest first: the partial index of open calls, whatever the account.
 */
export async function findStaleCalls(
  db: DbOrTx,
  beforeMs: number,
  limit: number,
): Promise<Array<Pick<CallRecordRow, "account_id" | "id" | "sip_call_id" | "started_ms" | "answered_ms">>> {
  return db
    .select({ account_id: callRecords.account_id, id: callRecords.id, sip_call_id: callRecords.sip_call_id, started_ms: callRecords.started_ms, answered_ms: callRecords.answered_ms })
    .from(callRecords)
    .where(
      and(
        isNull(callRecords.ended_ms),
        ne(callRecords.status, "rejected"),
        lt(callRecords.started_ms, beforeMs),
        sql`coalesce(${callRecords.answered_ms}, ${callRecords.started_ms}) < ${beforeMs}`,
      ),
    )
    .orderBy(asc(callRecords.started_ms))
    .limit(limit);
}

/**
 * The columns the dialog path reads and gets back from its updates: a call's keys and what its
 * events, end and CAC slots need. Not the whole row: the query builder spends its time per column
 * named, and the client parses every column it gets (the stored rtjson reply is the largest).
 */
const dialogColumns = {
  account_id: callRecords.account_id,
  id: callRecords.id,
  sip_call_id: callRecords.sip_call_id,
  direction: callRecords.direction,
  to: callRecords.to,
  started_ms: callRecords.started_ms,
  answered: callRecords.answered,
  answered_ms: callRecords.answered_ms,
  ended_ms: callRecords.ended_ms,
  billsec: callRecords.billsec,
  queue_id: callRecords.queue_id,
  agent_id: callRecords.agent_id,
  slots: callRecords.slots,
};

/** A call as the dialog path sees it ({@link dialogColumns}). */
export type DialogCall = Pick<CallRecordRow, keyof typeof dialogColumns>;

// ── The dialog path's statements, written as fixed text. They run for every batch of edge events,
// and the query builder took 18–35 µs of CPU to write each one (an update naming thirteen returned
// columns the most); a fixed text costs under 1 µs. The rows come back as the driver gives them and
// are read through the columns' own mappings (columnReader).

/** {@link dialogColumns} of call_record `c`, as a select or returning list, and the reader of its rows. */
const DIALOG_LIST = columnList(dialogColumns, "c");
const dialogCall = columnReader<DialogCall>(dialogColumns);

const dialogRows = async (db: DbOrTx, query: SQL): Promise<DialogCall[]> => (await rawRows<Record<string, unknown>>(db, query)).map(dialogCall);

/** `call_record c` is the call of row `v` (a jsonb_to_recordset) and is live (not ended, not rejected; see {@link notEnded}). */
const LIVE_CALL_OF_V = sql.raw(`c.account_id = v.account_id and c.id = v.id and coalesce(c.ended_ms, -1) = -1 and c.status <> 'rejected'`);

/**
 * A call as a dialog round reads it before writing: also its status, the DID it came in on (inbound
 * calls are priced by it) and the user it was routed to (who answers when the legs name nobody).
 */
export type SeenCall = DialogCall & { status: CallRecordRow["status"]; did: string | null; routed_user: string | null };

const SEEN_LIST = sql`${DIALOG_LIST}, c.status, c.reply #>> '{rtjson,vars,did}' as did, ${ROUTED_USER} as routed_user`;
const seenCall = (raw: Record<string, unknown>): SeenCall => ({
  ...dialogCall(raw),
  status: raw.status as CallRecordRow["status"],
  did: (raw.did as string | null) ?? null,
  routed_user: (raw.routed_user as string | null) ?? null,
});

/**
 * The calls of these (account, SIP Call-ID) keys that exist, in one read: of each Call-ID the newest
 * record (a Call-ID reused by a new INVITE has one per INVITE), or the one `record_id` names.
 */
export async function findCallsBySipIds(db: DbOrTx, keys: Array<{ account_id: string; sip_call_id: string; record_id?: string }>): Promise<SeenCall[]> {
  if (!keys.length) return [];
  const rows = keys.map((k) => ({ account_id: k.account_id, sip_call_id: k.sip_call_id, record_id: k.record_id ?? null }));
  const query =
    rows.length === 1
      ? rows[0]!.record_id !== null
        ? sql`select ${SEEN_LIST} from call_record c where c.account_id = ${rows[0]!.account_id} and c.id = ${rows[0]!.record_id} and c.sip_call_id = ${rows[0]!.sip_call_id}`
        : sql`select ${SEEN_LIST} from call_record c where c.account_id = ${rows[0]!.account_id} and c.sip_call_id = ${rows[0]!.sip_call_id}
              order by c.started_ms desc limit 1`
      : sql`select distinct on (c.account_id, c.id) ${SEEN_LIST} from ${jsonRows(rows, "k", "account_id text, sip_call_id text, record_id text")}
            cross join lateral (select * from call_record r where r.account_id = k.account_id and r.sip_call_id = k.sip_call_id
              and (k.record_id is null or r.id = k.record_id) order by r.started_ms desc limit 1) c`;
  return (await rawRows<Record<string, unknown>>(db, query)).map(seenCall);
}

/**
 * What a dialog round writes to one call at once (see dialogRoundCtes): the record's state after the
 * round's events, and the state it was read in (`seen_*`), which it must still be in.
 */
export interface RoundPatch {
  account_id: string;
  id: string;
  seen_status: string;
  seen_answered: number;
  status: string;
  ringing_ms: number | null;
  answered: number;
  answered_ms: number | null;
  agent_id: string | null;
  /** The legs the round's events gave (null: unchanged). */
  legs: Array<Record<string, unknown>> | null;
  /** Whether the round ends the call (the end's columns below are written only then). */
  ends: boolean;
  ended_ms: number | null;
  billsec: number;
  hangup_cause: string | null;
  sip_code: number | null;
  cost_micro: number;
  currency: string | null;
  rate_plan_id: string | null;
  /** With the end: the direction and number of a call the edge's failover forwarded out (null: unchanged). */
  direction: string | null;
  to: string | null;
}

/**
 * A dialog round's writes as CTEs of one statement (EventBus.statement): `dlg_upd` applies each
 * call's patch only while its record is still live and as it was read (status and answer unchanged:
 * no other round changed it meanwhile), returning the calls written (account_id, id); `dlg_trace`
 * appends the trace steps of those calls only, in order. Both only where `gate` holds. Rows are
 * updated in (account, id) order.
 */
export function dialogRoundCtes(patches: RoundPatch[], steps: NewTraceStep[], gate: SQL): SQL {
  const ordered = [...patches].sort((a, b) => (a.account_id < b.account_id ? -1 : a.account_id > b.account_id ? 1 : a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  return sql`dlg_upd as (
      update call_record c set status = v.status, ringing_ms = coalesce(v.ringing_ms, c.ringing_ms),
             answered = v.answered, answered_ms = v.answered_ms, agent_id = v.agent_id, legs = coalesce(v.legs, c.legs),
             ended_ms = case when v.ends then v.ended_ms else c.ended_ms end,
             billsec = case when v.ends then v.billsec else c.billsec end,
             hangup_cause = case when v.ends then v.hangup_cause else c.hangup_cause end,
             sip_code = case when v.ends then v.sip_code else c.sip_code end,
             cost_micro = case when v.ends then v.cost_micro else c.cost_micro end,
             currency = case when v.ends then v.currency else c.currency end,
             rate_plan_id = case when v.ends then v.rate_plan_id else c.rate_plan_id end,
             direction = coalesce(v.direction, c.direction), "to" = coalesce(v."to", c."to")
      from rows from (jsonb_to_recordset(${JSON.stringify(ordered)}::jsonb) as (account_id text, id text, seen_status text, seen_answered integer,
             status text, ringing_ms bigint, answered integer, answered_ms bigint, agent_id text, legs jsonb, ends boolean, ended_ms bigint,
             billsec integer, hangup_cause text, sip_code integer, cost_micro bigint, currency text, rate_plan_id text, direction text, "to" text))
        with ordinality as v(account_id, id, seen_status, seen_answered, status, ringing_ms, answered, answered_ms, agent_id, legs, ends, ended_ms,
             billsec, hangup_cause, sip_code, cost_micro, currency, rate_plan_id, direction, "to", n)
      where ${gate} and ${LIVE_CALL_OF_V} and c.status = v.seen_status and c.answered = v.seen_answered
      returning c.account_id, c.id
    ), ${traceCte("dlg_trace", steps, "dlg_upd")}`;
}

/** markRinging for many calls: routed → ringing; returns the rows it changed. */
export async function markRingingMany(db: DbOrTx, rows: Array<{ account_id: string; id: string; ringing_ms: number }>): Promise<DialogCall[]> {
  if (!rows.length) return [];
  return dialogRows(
    db,
    sql`update call_record c set status = 'ringing', ringing_ms = v.ringing_ms
        from ${jsonRows(rows, "v", "account_id text, id text, ringing_ms bigint")}
        where ${LIVE_CALL_OF_V} and c.status = 'routed'
        returning ${DIALOG_LIST}`,
  );
}

/** Whose call it is, as its record says (dialog events that name no account or no legs). */
export interface CallParties {
  account_id: string;
  sip_call_id: string;
  /** The user who placed it (a device's user). */
  user_id: string | null;
  /** The user who answered it, once answered. */
  agent_id: string | null;
  /** The user it was routed to (dest_kind user), who rings. */
  routed_user: string | null;
}

/** The parties of the calls with these SIP Call-IDs, in any account, newest first. */
export async function callPartiesBySipIds(db: DbOrTx, sipCallIds: string[]): Promise<CallParties[]> {
  if (!sipCallIds.length) return [];
  return rawRows<CallParties>(
    db,
    sql`select c.account_id, c.sip_call_id, c.user_id, c.agent_id, ${ROUTED_USER} as routed_user
        from call_record c where c.sip_call_id = any(${sql.param(sipCallIds)}::text[])
        order by c.started_ms desc`,
  );
}

/** markAnswered for many calls: answered once, unless ended; returns the rows it changed. */
export async function markAnsweredMany(
  db: DbOrTx,
  /** `no_routed`: the edge's failover took the call elsewhere (the user it was routed to is no answerer). */
  rows: Array<{ account_id: string; id: string; answered_ms: number; agent_id: string | null; legs: Array<Record<string, unknown>> | null; no_routed?: boolean }>,
): Promise<DialogCall[]> {
  if (!rows.length) return [];
  return dialogRows(
    db,
    sql`update call_record c set status = 'answered', answered = 1, answered_ms = v.answered_ms,
               agent_id = coalesce(c.agent_id, v.agent_id, case when v.no_routed then null else ${ROUTED_USER} end), legs = coalesce(v.legs, c.legs)
        from ${jsonRows(rows, "v", "account_id text, id text, answered_ms bigint, agent_id text, legs jsonb, no_routed boolean")}
        where ${LIVE_CALL_OF_V} and c.answered = 0
        returning ${DIALOG_LIST}`,
  );
}

/** A live call about to end: also the DID it came in on (inbound calls are priced by it). */
export type EndingCall = DialogCall & { did: string | null };

/**
 * The failover destinations /route gave these calls (its reply's `failover_<trigger>` and
 * `failover_<trigger>_number` vars), keyed `account\0id`: where the edge's failover took a call, as it
 * was when the call was routed (a forward edited or deleted since does not change it).
 */
export async function callFailovers(db: DbOrTx, keys: Array<{ account_id: string; id: string }>): Promise<Map<string, Record<string, unknown>>> {
  if (!keys.length) return new Map();
  const rows = await rawRows<{ account_id: string; id: string; vars: unknown }>(
    db,
    sql`select c.account_id, c.id, c.reply #> '{rtjson,vars}' as vars from call_record c
        join ${jsonRows(keys, "v", "account_id text, id text")} on c.account_id = v.account_id and c.id = v.id`,
  );
  const out = new Map<string, Record<string, unknown>>();
  for (const row of rows) {
    const vars = typeof row.vars === "string" ? (JSON.parse(row.vars) as unknown) : row.vars;
    if (vars && typeof vars === "object") out.set(`${row.account_id}\u0000${row.id}`, vars as Record<string, unknown>);
  }
  return out;
}

/** The live calls of these keys, locked until the transaction ends (in key order, so two batches cannot deadlock here). */
export async function lockLiveCalls(db: DbOrTx, keys: Array<{ account_id: string; id: string }>): Promise<EndingCall[]> {
  if (!keys.length) return [];
  const rows = await rawRows<Record<string, unknown>>(
    db,
    sql`select ${DIALOG_LIST}, c.reply #>> '{rtjson,vars,did}' as did from call_record c
        where (c.account_id, c.id) in (select k.account_id, k.id from ${jsonRows(keys, "k", "account_id text, id text")})
          and coalesce(c.ended_ms, -1) = -1 and c.status <> 'rejected'
        order by c.account_id, c.id
        for update`,
  );
  return rows.map((raw) => ({ ...dialogCall(raw), did: (raw.did as string | null) ?? null }));
}

/** What ending one call writes. */
export type EndPatch = Pick<CallRecordRow, "account_id" | "id" | "status" | "ended_ms" | "billsec" | "hangup_cause" | "sip_code" | "cost_micro" | "currency" | "rate_plan_id"> & {
  legs: Array<Record<string, unknown>> | null;
  /** Set when the end reports an answer the record does not have yet (its confirmed event lost or late). */
  answered_ms?: number | null;
  /** The answering user the end's legs name, with answered_ms. */
  agent_id?: string | null;
  /** The edge's failover took the call elsewhere: the user it was routed to did not answer it. */
  no_routed?: boolean;
  /**
   * The edge's failover forwarded the call out (a media engine placed the forward): from its end the
   * record is outbound to the forward's number, as a forward /route places is.
   */
  direction?: string | null;
  to?: string | null;
};

/** markEnded for many calls: each ended once; returns the rows it changed. */
export async function markEndedMany(db: DbOrTx, rows: EndPatch[]): Promise<DialogCall[]> {
  if (!rows.length) return [];
  return dialogRows(
    db,
    sql`update call_record c set status = v.status, ended_ms = v.ended_ms, billsec = v.billsec, hangup_cause = v.hangup_cause,
               sip_code = v.sip_code, cost_micro = v.cost_micro, currency = v.currency, rate_plan_id = v.rate_plan_id,
               legs = coalesce(v.legs, c.legs), direction = coalesce(v.direction, c.direction), "to" = coalesce(v."to", c."to"),
               answered = case when c.answered = 0 and v.answered_ms is not null then 1 else c.answered end,
               answered_ms = case when c.answered = 0 and v.answered_ms is not null then v.answered_ms else c.answered_ms end,
               agent_id = case when c.answered = 0 and v.answered_ms is not null then coalesce(c.agent_id, v.agent_id, case when v.no_routed then null else ${ROUTED_USER} end) else c.agent_id end
        from ${jsonRows(
          rows,
          "v",
          'account_id text, id text, status text, ended_ms bigint, billsec integer, hangup_cause text, sip_code integer, cost_micro bigint, currency text, rate_plan_id text, legs jsonb, answered_ms bigint, agent_id text, no_routed boolean, direction text, "to" text',
        )}
        where ${LIVE_CALL_OF_V}
        returning ${DIALOG_LIST}`,
  );
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
 * Text a spreadsheet would run as a formula: starting with = + - @ (after any spaces or line breaks,
 * which spreadsheets may trim), a tab or a carriage return.
 */
const formulaLike = (column: SQLWrapper) =>
  // By the first character's code (ascii(): no copy of the text, cheaper than LIKE): = + - @ tab CR,
  // or a space or line feed followed, past the spaces and line breaks, by = + - @.
  sql`(ascii(${column}) in (61, 43, 45, 64, 9, 13)
       or (ascii(${column}) in (32, 10) and ascii(ltrim(${column}, ' ' || chr(9) || chr(10) || chr(13))) in (61, 43, 45, 64)))`;

/**
 * A text cell guarded against spreadsheet formulas (a leading ' added): from and to come from SIP
 * headers anyone can write. Both exports use it; COPY quotes the result itself.
 */
const guarded = (column: SQLWrapper) => sql`case when ${formulaLike(column)} then '''' || ${column} else ${column} end`;

/**
 * One CSV cell computed by the database, for the paged export: the guard, then RFC 4180 quoting the
 * way COPY (format csv) writes it, so both stores give the same bytes (an empty text is `""`, a
 * missing one nothing). Numbers and our own ids need neither and are written as they are; agent_id
 * is guarded too, as records written before it was checked against the account's users may hold
 * the edge's text.
 */
function csvText(column: SQLWrapper): SQL {
  // LIKE ANY rather than regular expressions or nested strpos(): each cell is looked at a few times
  // only, which keeps the whole line at about a microsecond in PostgreSQL.
  const quoted = (value: SQL) =>
    sql`case when ${value} = '' then '""' when ${value} like any (array['%"%', '%,%', '%' || chr(10) || '%', '%' || chr(13) || '%']) then '"' || replace(${value}, '"', '""') || '"' else ${value} end`;
  return sql`coalesce(case when ${formulaLike(column)} then ${quoted(sql`('''' || ${column})`)} else ${quoted(sql`${column}`)} end, '')`;
}

const secs = (column: SQLWrapper) => sql`coalesce((${column} / 1000)::text, '')`;
const plain = (column: SQLWrapper) => sql`coalesce(${column}::text, '')`;

/** Seconds from routing to the end, null while the call is up (GREATEST alone would skip the null and say 0). */
const durationSec = sql`case when ${callRecords.ended_ms} is null then null else greatest(0, ceil((${callRecords.ended_ms} - ${callRecords.started_ms}) / 1000.0))::bigint end`;

/** The CSV line of a call, built by the database: the columns of CSV_COLUMNS, in order. */
const csvLineSql = sql<string>`concat_ws(',',
  ${plain(callRecords.id)}, ${csvText(callRecords.sip_call_id)}, ${plain(callRecords.direction)},
  ${csvText(callRecords.from)}, ${csvText(callRecords.to)}, ${plain(callRecords.status)}, ${plain(callRecords.answered)},
  ${secs(callRecords.started_ms)}, ${secs(callRecords.answered_ms)}, ${secs(callRecords.ended_ms)}, ${plain(callRecords.billsec)},
  coalesce(${durationSec}::text, ''),
  ${csvText(callRecords.hangup_cause)}, ${plain(callRecords.sip_code)}, ${plain(callRecords.cost_micro)}, ${csvText(callRecords.currency)},
  ${plain(callRecords.user_id)}, ${plain(callRecords.device_id)}, ${plain(callRecords.number_id)}, ${plain(callRecords.trunk_id)},
  ${plain(callRecords.queue_id)}, ${csvText(callRecords.agent_id)})`;

/**
 * The whole CSV export as one query whose columns are the cells of CSV_COLUMNS (newest first), for
 * COPY (format csv) to quote and write: the cells csvLineSql builds, less the quoting.
 */
export function csvExportQuery(accountId: string, filter: CallFilter): SQL {
  return sql`select ${callRecords.id}, ${guarded(callRecords.sip_call_id)}, ${callRecords.direction},
      ${guarded(callRecords.from)}, ${guarded(callRecords.to)}, ${callRecords.status}, ${callRecords.answered},
      ${callRecords.started_ms} / 1000, ${callRecords.answered_ms} / 1000, ${callRecords.ended_ms} / 1000, ${callRecords.billsec},
      ${durationSec},
      ${guarded(callRecords.hangup_cause)}, ${callRecords.sip_code}, ${callRecords.cost_micro}, ${guarded(callRecords.currency)},
      ${callRecords.user_id}, ${callRecords.device_id}, ${callRecords.number_id}, ${callRecords.trunk_id},
      ${callRecords.queue_id}, ${guarded(callRecords.agent_id)}
    from ${callRecords}
    where ${listWhere(accountId, filter, null)}
    order by ${callRecords.started_ms} desc, ${callRecords.id} desc`;
}

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
  return db.select().from(callRecords).where(activeCallsOf(accountId, sinceMs)).orderBy(asc(callRecords.started_ms), asc(callRecords.id)).limit(limit);
}

/** How many calls of the account are up (what listActiveCalls lists, without a limit). */
export async function countActiveCalls(db: DbOrTx, accountId: string, sinceMs: number): Promise<number> {
  const [row] = await db.select({ n: count() }).from(callRecords).where(activeCallsOf(accountId, sinceMs));
  return Number(row?.n ?? 0);
}

/**
 * Calls up: admitted, not ended, up since `sinceMs` counted from the answer when there was one, as
 * the CAC slots and the stale-call sweep count it (a long ring or queue wait before the answer does
 * not hide a call that is up). The partial index of open calls holds only the calls up now: few rows,
 * whatever the filter.
 */
function activeCallsOf(accountId: string, sinceMs: number): SQL | undefined {
  return and(
    eq(callRecords.account_id, accountId),
    isNull(callRecords.ended_ms),
    ne(callRecords.status, "rejected"),
    or(gte(callRecords.started_ms, sinceMs), gte(callRecords.answered_ms, sinceMs)),
  );
}

/** Of `ids`, the calls up now (as `activeCallsOf` counts them), and those that have a record at all. */
export async function callsUpAmong(db: DbOrTx, accountId: string, ids: string[], sinceMs: number): Promise<{ up: Set<string>; recorded: Set<string> }> {
  if (!ids.length) return { up: new Set(), recorded: new Set() };
  const rows = await db
    .select({ id: callRecords.id, up: sql<boolean>`coalesce(${activeCallsOf(accountId, sinceMs)}, false)` })
    .from(callRecords)
    .where(and(eq(callRecords.account_id, accountId), inArray(callRecords.id, ids)));
  return { up: new Set(rows.filter((r) => r.up === true || String(r.up) === "true").map((r) => r.id)), recorded: new Set(rows.map((r) => r.id)) };
}

/** Totals over calls started in [since, until). */
export interface UsageTotals {
  count: number;
  answered: number;
  billsec: number;
  cost_micro: number;
}

const counts = {
  count: sql<number>`count(*)::int`,
  answered: sql<number>`coalesce(sum(${callRecords.answered}), 0)::int`,
  billsec: sql<number>`coalesce(sum(${callRecords.billsec}), 0)::bigint`,
};

/** The totals; cost only of calls priced in `currency` (micro-units of different currencies never add up). */
const totalsIn = (currency: string | null) => ({
  ...counts,
  cost_micro: sql<number>`coalesce(sum(${callRecords.cost_micro}) filter (where ${callRecords.currency} = ${currency ?? ""}), 0)::bigint`,
});

function usageWhere(accountId: string, sinceMs: number, untilMs: number): SQL {
  return and(eq(callRecords.account_id, accountId), gte(callRecords.started_ms, sinceMs), lt(callRecords.started_ms, untilMs), ne(callRecords.status, "rejected"))!;
}

const asTotals = (r: { count: unknown; answered: unknown; billsec: unknown; cost_micro: unknown }): UsageTotals => ({
  count: Number(r.count),
  answered: Number(r.answered),
  billsec: Number(r.billsec),
  cost_micro: Number(r.cost_micro),
});

/**
 * Count, answered and billsec of the account's admitted calls started in [since, until), and their
 * cost per currency they were priced in (currencies that cost something), in one pass over them.
 */
export async function usageTotals(
  db: DbOrTx,
  accountId: string,
  sinceMs: number,
  untilMs: number,
): Promise<Omit<UsageTotals, "cost_micro"> & { byCurrency: Record<string, number> }> {
  const rows = await db
    .select({ currency: callRecords.currency, ...counts, cost_micro: sql<number>`coalesce(sum(${callRecords.cost_micro}), 0)::bigint` })
    .from(callRecords)
    .where(usageWhere(accountId, sinceMs, untilMs))
    .groupBy(callRecords.currency)
    .orderBy(callRecords.currency);
  const out = { count: 0, answered: 0, billsec: 0, byCurrency: {} as Record<string, number> };
  for (const r of rows) {
    const t = asTotals(r);
    out.count += t.count;
    out.answered += t.answered;
    out.billsec += t.billsec;
    if (r.currency !== null && t.cost_micro > 0) out.byCurrency[r.currency] = t.cost_micro;
  }
  return out;
}

/** The same totals per calendar day (YYYY-MM-DD) in `timezone`, days with calls only, oldest first. */
export async function usageByDay(
  db: DbOrTx,
  accountId: string,
  sinceMs: number,
  untilMs: number,
  timezone: string,
  currency: string | null,
): Promise<Array<UsageTotals & { day: string }>> {
  const day = sql<string>`to_char(to_timestamp(${callRecords.started_ms} / 1000.0) at time zone ${timezone}, 'YYYY-MM-DD')`;
  const rows = await db
    .select({ day, ...totalsIn(currency) })
    .from(callRecords)
    .where(usageWhere(accountId, sinceMs, untilMs))
    // By position: the expression repeated would bind the timezone as a second parameter, which
    // PostgreSQL does not see as the same expression.
    .groupBy(sql`1`)
    .orderBy(sql`1`);
  return rows.map((r) => ({ day: r.day, ...asTotals(r) }));
}

/**
 * Epoch ms of the first instant of the current month in `timezone`. A midnight that happens twice
 * (clocks going back at midnight, as Havana's on 1 November) is read by PostgreSQL as the later
 * instant; the earlier one, midnight in the offset of the day before, is the month's start when its
 * local time is that midnight too.
 */
export async function monthStartMs(db: DbOrTx, timezone: string, nowMs: number): Promise<number> {
  const result = await db.execute(
    sql`select (extract(epoch from case when alt < later and (alt at time zone ${timezone}) = local_start then alt else later end) * 1000)::bigint as ms
        from (select local_start, later,
                     (local_start - (((later - interval '1 day') at time zone ${timezone}) - ((later - interval '1 day') at time zone 'UTC'))) at time zone 'UTC' as alt
              from (select local_start, local_start at time zone ${timezone} as later
                    from (select date_trunc('month', to_timestamp(${nowMs} / 1000.0) at time zone ${timezone}) as local_start) a) b) c`,
  );
  const rows = resultRows<{ ms: unknown }>(result);
  return Number(rows[0]!.ms);
}
