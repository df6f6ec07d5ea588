/** Use cases on call records: listing and CSV export, detail, trace, usage, balance, live snapshot, CAC. */
import { keysetPage } from "../pagination/pagination.ts";
import { findAccount } from "../accounts/accounts.store.ts";
import { AppError, notFound, validationFailed } from "../errors/app-error.ts";
import { findConsoleUser } from "../auth/auth.store.ts";
import type { Principal } from "../auth/principal.ts";
import type { Database, DbOrTx } from "../db/db.ts";
import type { LiveStore } from "../live/live-store.ts";
import { cacSnapshot, resetCac } from "../cac/cac.service.ts";
import { defaultRatePlan } from "../rates/rates.service.ts";
import type { Static } from "@sinclair/typebox";
import type { CallModel, CallStatus } from "./calls.model.ts";
import type { CallRecordRow } from "./calls.schema.ts";
import {
  findCall,
  findCurrentCallOfUser,
  findCallBySipId,
  findCallBySipIdAnyAccount,
  listActiveCalls,
  listCalls,
  csvExportQuery,
  csvPage,
  listTrace,
  monthStartMs,
  countActiveCalls,
  callsUpAmong,
  usageByDay,
  usageTotals,
  type CallFilter,
  type CallKey,
  type UsageTotals,
} from "./calls.store.ts";

const sec = (ms: number | null): number | null => (ms === null ? null : Math.floor(ms / 1000));

/** The public shape of a call record. */
export function toCall(row: CallRecordRow): CallModel.Call {
  return {
    id: row.id,
    sip_call_id: row.sip_call_id,
    direction: row.direction as CallModel.Call["direction"],
    from: row.from,
    to: row.to,
    status: row.status as CallStatus,
    answered: row.answered as 0 | 1,
    started_at: sec(row.started_ms)!,
    answered_at: sec(row.answered_ms),
    ended_at: sec(row.ended_ms),
    billsec: row.billsec,
    // Whole seconds rounded up, as billsec is: a call is never billed longer than it lasted.
    duration_sec: row.ended_ms === null ? null : Math.max(0, Math.ceil((row.ended_ms - row.started_ms) / 1000)),
    hangup_cause: row.hangup_cause,
    sip_code: row.sip_code,
    cost_micro: row.cost_micro,
    currency: row.currency,
    rate_plan_id: row.rate_plan_id,
    user_id: row.user_id,
    device_id: row.device_id,
    number_id: row.number_id,
    trunk_id: row.trunk_id,
    queue_id: row.queue_id,
    agent_id: row.agent_id,
    flow_id: row.flow_id,
    recording_ids: row.recording_ids,
    legs: row.legs,
  };
}

function encodeCallCursor(row: CallRecordRow): string {
  return Buffer.from(`k1:${row.started_ms}:${row.id}`).toString("base64url");
}

function decodeCallCursor(cursor: string | undefined): CallKey | null {
  if (!cursor) return null;
  const match = /^k1:(\d{1,16}):(call_[0-9A-Z]{26})$/.exec(Buffer.from(cursor, "base64url").toString());
  if (!match) throw validationFailed([{ path: "/query/cursor", message: "Not a cursor this API issued." }]);
  return { startedMs: Number(match[1]), id: match[2]! };
}

/** The listing's filter from the query; 400 when the range is empty or reversed. */
function filterOf(query: Pick<CallModel.ListQuery, "since" | "until" | "direction" | "user_id" | "number_id">): CallFilter {
  const sinceMs = (query.since ?? 0) * 1000;
  const untilMs = query.until === undefined ? Number.MAX_SAFE_INTEGER : query.until * 1000;
  if (untilMs <= sinceMs) throw validationFailed([{ path: "/query/until", message: "until must be after since." }]);
  return { sinceMs, untilMs, direction: query.direction, userId: query.user_id, numberId: query.number_id };
}

/** Calls started in the range, newest first, keyset-paginated. */
export async function listCallsPage(db: DbOrTx, accountId: string, query: CallModel.ListQuery & { limit: number }): Promise<{ data: CallModel.Call[]; next_cursor?: string }> {
  const rows = await listCalls(db, accountId, filterOf(query), decodeCallCursor(query.cursor), query.limit);
  return keysetPage(rows, query.limit, toCall, encodeCallCursor);
}

/** Columns of the CSV export, in order. */
export const CSV_COLUMNS = [
  "id",
  "sip_call_id",
  "direction",
  "from",
  "to",
  "status",
  "answered",
  "started_at",
  "answered_at",
  "ended_at",
  "billsec",
  "duration_sec",
  "hangup_cause",
  "sip_code",
  "cost_micro",
  "currency",
  "user_id",
  "device_id",
  "number_id",
  "trunk_id",
  "queue_id",
  "agent_id",
] as const satisfies ReadonlyArray<keyof CallModel.Call>;

/** Rows fetched per query while streaming the export. */
export const CSV_PAGE = 5_000;

/**
 * Every call of the range as CSV (header line first, CRLF line ends), newest first, streamed as the
 * client reads. PostgreSQL: one COPY of the range (one snapshot, formatted by the server, a few
 * chunks buffered ahead). PGlite: page by page, at most two pages in memory (the one being written
 * and the next one, fetched meanwhile). The range is checked before anything streams (a 400).
 */
export function streamCallsCsv(database: Pick<Database, "db" | "copyCsv">, accountId: string, query: CallModel.ListQuery): ReadableStream<Uint8Array> {
  // The export is the whole range: page parameters would be ignored, so they are refused instead.
  // An empty cursor is the first page (docs/api-conventions.md), here as in JSON pages: not a page parameter.
  const paging = (["limit", "cursor"] as const).filter((name) => query[name] !== undefined && !(name === "cursor" && query.cursor === ""));
  if (paging.length) {
    throw validationFailed(paging.map((name) => ({ path: `/query/${name}`, message: "format=csv exports the whole range; narrow it with since and until instead." })));
  }
  const filter = filterOf(query);
  if (database.copyCsv) return database.copyCsv(csvExportQuery(accountId, filter), { header: CSV_COLUMNS.join(","), lineEnd: "\r\n" });
  return pagedCsv(database.db, accountId, filter);
}

function pagedCsv(db: DbOrTx, accountId: string, filter: CallFilter): ReadableStream<Uint8Array> {
  const encoder = new TextEncoder();
  let next: ReturnType<typeof csvPage> | null = csvPage(db, accountId, filter, null, CSV_PAGE);
  let headerSent = false;
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      if (!headerSent) {
        headerSent = true;
        controller.enqueue(encoder.encode(`${CSV_COLUMNS.join(",")}\r\n`));
        return;
      }
      if (!next) return controller.close();
      const page = await next;
      next = page.rows === CSV_PAGE && page.last ? csvPage(db, accountId, filter, page.last, CSV_PAGE) : null;
      if (!page.rows) return controller.close();
      controller.enqueue(encoder.encode(`${page.text}\r\n`));
    },
    cancel() {
      next?.catch(() => {}); // the client went away; a page in flight is dropped
      next = null;
    },
  });
}

/** One call of the account; 404 otherwise. */
export async function getCall(db: DbOrTx, accountId: string, id: string): Promise<CallModel.Call> {
  const row = await findCall(db, accountId, id);
  if (!row) throw notFound("call");
  return toCall(row);
}

async function traceOf(db: DbOrTx, row: CallRecordRow): Promise<CallModel.Trace> {
  const steps = await listTrace(db, row.account_id, row.id);
  return {
    call_id: row.id,
    sip_call_id: row.sip_call_id,
    account_id: row.account_id,
    steps: steps.map((s) => ({ at: s.at_ms, step: s.step, result: s.result, data: s.data ?? null })),
  };
}

/** The ordered trace of one call of the account (by call_… id); 404 otherwise. */
export async function getCallTrace(db: DbOrTx, accountId: string, id: string): Promise<CallModel.Trace> {
  const row = await findCall(db, accountId, id);
  if (!row) throw notFound("call");
  return traceOf(db, row);
}

/**
 * GET /v1/calls/mine: the call the credential's own user is on now. A console login acts as a user
 * when it was created with one (user_id); an API key acts as no user.
 */
export async function getMyCurrentCall(db: DbOrTx, principal: Principal): Promise<CallModel.Call> {
  const login = principal.via === "token" && principal.consoleUserId ? await findConsoleUser(db, principal.accountId, principal.consoleUserId) : null;
  // No user, so no call of its own: a 404 that says why (SPEC.md's 403 is for a missing scope only).
  if (!login?.user_id) {
    throw new AppError(
      "not_found",
      principal.via === "key"
        ? "An API key acts as no user: /v1/calls/mine needs the session token of a console login created with a user_id."
        : "This console login acts as no user (it was created without a user_id), so it has no call of its own.",
    );
  }
  const row = await findCurrentCallOfUser(db, principal.accountId, login.user_id);
  if (!row) throw new AppError("not_found", "Your user is on no call now.");
  return toCall(row);
}

/** Control host: the trace by SIP Call-ID (or call_… id with the account), any account. */
export async function getTraceForEdge(db: DbOrTx, callId: string, accountId?: string): Promise<CallModel.Trace> {
  // With the account named, its own call by that Call-ID (another account may have used the same one).
  const row = accountId
    ? callId.startsWith("call_")
      ? await findCall(db, accountId, callId)
      : await findCallBySipId(db, accountId, callId)
    : await findCallBySipIdAnyAccount(db, callId);
  if (!row || (accountId && row.account_id !== accountId)) throw notFound("call");
  return traceOf(db, row);
}

async function accountOf(db: DbOrTx, accountId: string) {
  const account = await findAccount(db, accountId);
  if (!account) throw notFound("account");
  return account;
}

const withMinutes = (t: UsageTotals) => ({
  count: t.count,
  answered: t.answered,
  billsec: t.billsec,
  minutes: Math.round((t.billsec / 60) * 100) / 100,
  spend_micro: t.cost_micro,
});

/**
 * The currency spend is reported in: the default rate plan's; without a plan, the one the calls were
 * priced in when there is only one (else none: see the per-currency figures).
 */
function reportedCurrency(planCurrency: string | null, byCurrency: Record<string, number>): string | null {
  if (planCurrency) return planCurrency;
  const used = Object.keys(byCurrency);
  return used.length === 1 ? used[0]! : null;
}

/** Spend, minutes and counts of calls started in [since, until); with daily, per day in the account's timezone. */
export async function getUsage(db: DbOrTx, accountId: string, query: { since?: number; until?: number; daily?: "0" | "1" }): Promise<CallModel.Usage> {
  const account = await accountOf(db, accountId);
  // Without until: now, to the second, as the reply says it (until is exclusive): a call started in this
  // second is in the next window, never in two (a client walking windows passes the reply's until back).
  const nowMs = Math.floor(Date.now() / 1000) * 1000;
  const untilMs = query.until === undefined ? nowMs : query.until * 1000;
  // Without since: the start of the month that until falls in (until is exclusive), so a past until
  // alone asks for that month up to it.
  // (Not before the epoch: an until in the account's first local month of 1970 starts it at 0.)
  const sinceMs = query.since === undefined ? Math.max(0, await monthStartMs(db, account.timezone, untilMs - 1)) : query.since * 1000;
  if (untilMs <= sinceMs) {
    // Without until, it is now: the parameter the client sent is the one to name.
    throw validationFailed([query.until === undefined ? { path: "/query/since", message: "since must be before now (until, left out, is now)." } : { path: "/query/until", message: "until must be after since." }]);
  }
  const [plan, { byCurrency, ...totals }] = await Promise.all([defaultRatePlan(db, accountId), usageTotals(db, accountId, sinceMs, untilMs)]);
  const currency = reportedCurrency(plan?.currency ?? null, byCurrency);
  const usage: CallModel.Usage = {
    since: Math.floor(sinceMs / 1000),
    until: Math.floor(untilMs / 1000),
    timezone: account.timezone,
    currency,
    ...withMinutes({ ...totals, cost_micro: currency === null ? 0 : (byCurrency[currency] ?? 0) }),
    spend_by_currency: byCurrency,
  };
  if (query.daily === "1") {
    usage.daily = (await usageByDay(db, accountId, sinceMs, untilMs, account.timezone, currency)).map((d) => ({ day: d.day, ...withMinutes(d) }));
  }
  return usage;
}

/** Status, rate plan and month-to-date spend (month of the account's timezone). */
export async function getBalance(db: DbOrTx, accountId: string): Promise<CallModel.Balance> {
  const account = await accountOf(db, accountId);
  const nowMs = Date.now();
  const startMs = await monthStartMs(db, account.timezone, nowMs);
  const [plan, { byCurrency, count }] = await Promise.all([defaultRatePlan(db, accountId), usageTotals(db, accountId, startMs, nowMs + 1)]);
  const currency = reportedCurrency(plan?.currency ?? null, byCurrency);
  return {
    status: account.status as CallModel.Balance["status"],
    rate_plan: plan ? { id: plan.id, name: plan.name, currency: plan.currency } : null,
    currency,
    month_start: Math.floor(startMs / 1000),
    month_to_date_spend_micro: currency === null ? 0 : (byCurrency[currency] ?? 0),
    month_to_date_spend_by_currency: byCurrency,
    month_to_date_calls: count,
  };
}

/** Most active calls a snapshot lists. */
const LIVE_LIMIT = 500;

/** Calls up now (admitted, not ended, started within the CAC ceiling), oldest first. */
export async function activeCalls(db: DbOrTx, accountId: string, maxCallMs: number): Promise<Array<Static<typeof CallModel.ActiveCall>>> {
  const rows = await listActiveCalls(db, accountId, Date.now() - maxCallMs, LIVE_LIMIT);
  return rows.map((r) => ({
    id: r.id,
    direction: r.direction as CallModel.Call["direction"],
    from: r.from,
    to: r.to,
    status: r.status as CallStatus,
    started_at: sec(r.started_ms)!,
    answered_at: sec(r.answered_ms),
    user_id: r.user_id,
    queue_id: r.queue_id,
    agent_id: r.agent_id,
  }));
}

/**
 * GET /v1/live and GET /cac: active calls (how many are up, and the oldest LIVE_LIMIT of them), CAC
 * counters and the account's ceilings.
 */
export async function liveSnapshot(db: DbOrTx, live: LiveStore, accountId: string, maxCallMs: number) {
  const account = await accountOf(db, accountId);
  const calls = await activeCalls(db, accountId, maxCallMs);
  return {
    active_calls: calls.length < LIVE_LIMIT ? calls.length : await countActiveCalls(db, accountId, Date.now() - maxCallMs),
    calls,
    cac: await cacSnapshot(live, accountId),
    ceilings: { max_in: account.max_in, max_out: account.max_out, max_dialer: account.max_dialer },
  };
}

/**
 * Clears the account's CAC counters (404 for an unknown account). `leakedOnly` (POST /v1/cac/reset,
 * the account's own keys) clears only the slots of calls that are not up, so an account cannot lift
 * the ceilings its operator set; the operator's POST /cac/reset clears them all (an edge that lost
 * its dialogs leaves calls that look up until the stale-call sweep).
 */
export async function resetAccountCac(db: DbOrTx, live: LiveStore, accountId: string, leakedOnly?: { maxCallMs: number }): Promise<{ counters: number; calls: number }> {
  await accountOf(db, accountId);
  if (!leakedOnly) return resetCac(live, accountId);
  return resetCac(live, accountId, { callsUp: (ids) => callsUpAmong(db, accountId, ids, Date.now() - leakedOnly.maxCallMs), ttlMs: leakedOnly.maxCallMs });
}
