/**
 * The edge's dialog events drive the call record: early → ringing; confirmed → answered (call.answered);
 * terminated → ended with billsec, hangup cause and cost, CAC slots released (call.ended). Each change
 * is conditional on the record's state and written with its event, so a duplicate or late event
 * changes nothing: terminated twice ends once, confirmed after terminated is ignored, terminated before
 * confirmed is an unanswered call unless the end carries `answered_ts` (the shipped edge sends it),
 * which answers the call then. Times are the edge's (`ts`), never later than when they arrive. An
 * event for a Call-ID we never admitted is logged and ignored (the edge also reports dialogs of calls
 * the router refused without an account, e.g. unknown DIDs).
 */
import { sql } from "drizzle-orm";
import type { Platform } from "../platform.ts";
import type { DialogEvent } from "../routing/route-types.ts";
import type { EventInput } from "../events/bus.ts";
import type { EventPayload } from "../webhooks/event-catalog.ts";
import { releaseSlots, renewSlots } from "../cac/cac.service.ts";
import { defaultRatePlans, priceCall } from "../rates/rates.service.ts";
import type { CallRecordRow } from "./calls.schema.ts";
import {
  dialogRoundCtes,
  findCallBySipIdAnyAccount,
  callFailovers,
  findCallsBySipIds,
  insertTrace,
  lockLiveCalls,
  markAnsweredMany,
  markEndedMany,
  markRingingMany,
  type DialogCall,
  type EndPatch,
  type NewTraceStep,
  type RoundPatch,
  type SeenCall,
} from "./calls.store.ts";
import type { RatePlanRow } from "../rates/rates.schema.ts";
import { cacTtlMs } from "./cac-config.ts";
import { rawRows } from "../db/migrate.ts";
import { accountKey } from "../live/live-store.ts";
import { describeError } from "../../http/describe-error.ts";
import { existingUserKeys } from "../presence/presence.store.ts";

type Legs = Array<Record<string, unknown>>;

/** Q.850-style cause of a dialog that ended with `sipCode` (none: a BYE after answer, or no answer). */
export function hangupCauseOf(sipCode: number | undefined, answered: boolean): string {
  if (sipCode === undefined || sipCode < 300) return answered ? "NORMAL_CLEARING" : "NO_ANSWER";
  switch (sipCode) {
    case 486:
    case 600:
      return "USER_BUSY";
    case 487:
      return "ORIGINATOR_CANCEL";
    case 408:
    case 480:
      return "NO_ANSWER";
    case 404:
    case 484:
    case 604:
      return "UNALLOCATED_NUMBER";
    case 403:
    case 603:
      return "CALL_REJECTED";
    case 503:
      return "NORMAL_TEMPORARY_FAILURE";
    default:
      return sipCode >= 500 ? "NORMAL_TEMPORARY_FAILURE" : "CALL_REJECTED";
  }
}

/** Final status of an ended call. */
export function endStatusOf(answered: boolean, cause: string): CallRecordRow["status"] {
  if (answered) return "completed";
  if (cause === "USER_BUSY") return "busy";
  if (cause === "ORIGINATOR_CANCEL") return "canceled";
  if (cause === "NO_ANSWER" || cause === "NO_USER_RESPONSE") return "no_answer";
  return "failed";
}

/**
 * The user who answered: a callee leg's user (the confirmed one first), if it is a user of the call's
 * account (`known`: `account\0user` keys read for the round). Legs are the edge's text: a name that
 * is no user of the account is no agent of the call.
 */
function agentOf(accountId: string, legs: Legs | undefined, known: ReadonlyMap<string, unknown>): string | null {
  const callees = (legs ?? []).filter((l) => l.role === "callee" && typeof l.user_id === "string" && known.has(`${accountId}\u0000${l.user_id}`));
  const confirmed = callees.find((l) => l.state === "confirmed") ?? callees[0];
  return (confirmed?.user_id as string | undefined) ?? null;
}

/**
 * Who answered when the legs name no user: the user the call was routed to, unless the edge's failover
 * took the call elsewhere (the user's phone was busy or did not answer: the media engine's voicemail or
 * a forward answered, not the user).
 */
function routedAnswerer(call: { routed_user: string | null }, event: DialogEvent): string | null {
  return event.failover ? null : call.routed_user;
}

/** The callee users the round's legs name that are users of their call's account. */
async function knownCallees(platform: Platform, items: ReadonlyArray<{ call: DialogCall; legs: Legs | undefined }>): Promise<ReadonlyMap<string, unknown>> {
  const named = new Map<string, { account_id: string; id: string }>();
  for (const { call, legs } of items) {
    for (const leg of legs ?? []) {
      if (leg.role === "callee" && typeof leg.user_id === "string") named.set(`${call.account_id}\u0000${leg.user_id}`, { account_id: call.account_id, id: leg.user_id });
    }
  }
  return named.size ? existingUserKeys(platform.db, [...named.values()], platform.configCache) : new Map();
}

/**
 * A dialog's event about `row` at `ts` (epoch ms): the call's id and direction, `fields` (the rest of the
 * event's payload, typed by the catalog), then the time.
 */
function callEvent<E extends "call.answered" | "call.ended">(
  row: Pick<DialogCall, "account_id" | "id" | "direction">,
  event: E,
  ts: number,
  fields: Omit<EventPayload<E>, "callId" | "direction" | "ts">,
): EventInput<E> {
  const data = { callId: row.id, direction: row.direction as "inbound" | "outbound" | "internal", ...fields, ts } as EventPayload<E>;
  return { accountId: row.account_id, event, data, ts };
}

/** call.answered of a call answered at `answeredMs`. */
function answeredEvent(row: DialogCall, answeredMs: number): EventInput {
  return callEvent(row, "call.answered", answeredMs, {
    queue_id: row.queue_id,
    agent_id: row.agent_id,
    wait_sec: Math.max(0, Math.round((answeredMs - row.started_ms) / 1000)),
  });
}

/** One event of a round with the call it names. */
interface Item {
  event: DialogEvent;
  call: SeenCall;
  at: number;
  legs: Legs | undefined;
}

/**
 * Applies one dialog event to its call record (safe to repeat and to receive out of order).
 * @example await handleDialogEvent(platform, { type: "dialog", callId: "a84b4c76e66710", state: "terminated", sip_code: 200 })
 */
export function handleDialogEvent(platform: Platform, event: DialogEvent): Promise<void> {
  return handleDialogEvents(platform, [event]);
}

/**
 * Applies dialog events to their call records, as a set: each call's events in the order given,
 * different calls together. The events are taken in rounds (each call's first run of events moving
 * forward, early → confirmed → terminated, then its second, …); a round costs a fixed number of
 * statements whatever its size: one read of the calls (the rate plans and users come from the
 * configuration cache) and one statement writing the records, their trace and their events with
 * their webhook deliveries (a call changed meanwhile costs a transaction more: see handleRound).
 * Like one event at a time, a repeated or late event
 * changes nothing. A failure fails the rest (the edge sends the batch again; what was done stays).
 */
export async function handleDialogEvents(platform: Platform, events: DialogEvent[], options: EndOptions = {}): Promise<void> {
  const sequences = new Map<string, DialogEvent[]>();
  for (const event of events) {
    const key = `${event.account_id ?? ""}\u0000${event.callId}\u0000${event.record_id ?? ""}`;
    const sequence = sequences.get(key);
    if (sequence) sequence.push(event);
    else sequences.set(key, [event]);
  }
  // A call's events that move forward (early, then confirmed, then terminated: a run) share a round:
  // the edge's ringing and answer usually arrive in one batch, and cost one round, not two. An event
  // that does not move forward (a repeat, or one out of order) starts the call's next run, applied after.
  const runs = [...sequences.values()].map(forwardRuns);
  for (let round = 0; ; round++) {
    const batch: DialogEvent[] = [];
    for (const callRuns of runs) if (callRuns.length > round) batch.push(...callRuns[round]!);
    if (!batch.length) return;
    await retryDeadlocks(() => handleRound(platform, batch, round === 0 ? options : { ...options, onCallsRead: undefined }));
  }
}

/** Times a round is run again after PostgreSQL chose it as a deadlock's victim. */
const DEADLOCK_RETRIES = 5;

/**
 * Runs a round again when PostgreSQL broke a deadlock by failing it (40P01, or 25P02 for a statement
 * pipelined after it in the aborted transaction): overlapping batches of
 * the same calls in other orders (several edges, two instances) can lock rows in opposite orders
 * inside one statement's plan. A round is safe to repeat (it applies what the records do not have
 * yet); before, the batch failed with a 500 and the edge sent it again.
 */
async function retryDeadlocks<T>(run: () => Promise<T>): Promise<T> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await run();
    } catch (error) {
      const e = error as { code?: unknown; cause?: { code?: unknown } };
      // The driver's error, or the query builder's around it. A statement pipelined after the victim in
      // its transaction reports 25P02 (the transaction was aborted) instead: the same deadlock.
      const code = e.code ?? e.cause?.code;
      if (!(code === "40P01" || code === "25P02") || attempt >= DEADLOCK_RETRIES) throw error;
      await Bun.sleep(5 + Math.random() * 20 * (attempt + 1));
    }
  }
}

const STATE_RANK: Record<DialogEvent["state"], number> = { early: 0, confirmed: 1, terminated: 2 };

/** One call's events cut into runs whose states strictly move forward (early → confirmed → terminated). */
function forwardRuns(sequence: DialogEvent[]): DialogEvent[][] {
  const runs: DialogEvent[][] = [];
  let last = Infinity;
  for (const event of sequence) {
    const rank = STATE_RANK[event.state];
    if (rank <= last) runs.push([event]);
    else runs[runs.length - 1]!.push(event);
    last = rank;
  }
  return runs;
}

/**
 * A round's items without what happened after its call's end, each call's in state order. Events of one
 * call can reach a round in two groups (one naming its record, one not; a replay), so the round's order
 * is not the call's: a confirmation after the end is not an answer, one before it is, wherever each
 * stands in the list. Times decide (the end's earliest); an event without its time (`ts`) is after
 * the end when it comes after it in the list.
 */
function beforeTheEnd(items: Item[]): Item[] {
  const ends = new Map<string, { at: number; index: number }>();
  items.forEach((item, index) => {
    if (item.event.state !== "terminated") return;
    const key = `${item.call.account_id}\u0000${item.call.id}`;
    const seen = ends.get(key);
    ends.set(key, { at: Math.min(seen?.at ?? Infinity, item.at), index: Math.min(seen?.index ?? Infinity, index) });
  });
  if (!ends.size) return items;
  const kept = items.filter((item, index) => {
    const end = ends.get(`${item.call.account_id}\u0000${item.call.id}`);
    if (!end || item.event.state === "terminated") return true;
    return item.event.ts !== undefined ? item.at <= end.at : index < end.index;
  });
  // Stable: a call's events keep their order within a state.
  return kept.sort((a, b) => STATE_RANK[a.event.state] - STATE_RANK[b.event.state]);
}

/** How ends are recorded (the edge's events use the defaults). */
export interface EndOptions {
  /**
   * The call's real length is unknown (its end was never reported: stale-calls.ts), so it is not
   * billed: billsec 0 and no cost, whatever its answer and end times say.
   */
  unbilled?: boolean;
  /**
   * Epoch ms of "now": no time is recorded after it (an edge clock ahead of ours must not bill the
   * future). Default: when the round is handled; the stale-call sweep gives its own.
   */
  now?: number;
  /**
   * The users (`account\0user` keys) of the events' accounts that the legs name, when the caller has
   * read them already (presence does); else they are read here.
   */
  knownUsers?: ReadonlyMap<string, unknown>;
  /**
   * Told once, after the first read, which of the events' calls have a record (`account\0Call-ID` keys;
   * events naming an account only): presence tracks no dialog of a call Parley never routed.
   */
  onCallsRead?: (recorded: ReadonlySet<string>) => void;
}

/** What the round's reads gave: the rate plans of the accounts whose calls end, the users the legs name. */
interface RoundContext {
  plans: Map<string, RatePlanRow>;
  known: ReadonlyMap<string, unknown>;
  /** /route's failover vars of the calls whose ends name a forward as their failover (`account\0call_…`). */
  failovers: ReadonlyMap<string, Record<string, unknown>>;
  /** EMERGENCY_NUMBERS: a call out to one is not billed. */
  emergency: readonly string[];
  unbilled: boolean;
  now: number;
}

/** Calls a round wrote: answered ones (their slots renewed) and ended ones (released). */
interface RoundWritten {
  answered: Array<Pick<DialogCall, "account_id" | "id" | "slots">>;
  ended: Array<Pick<DialogCall, "account_id" | "id" | "slots">>;
}

/**
 * One round: at most one event per state per call, in state order. The calls are read once (the
 * rate plans and users from the cache); then each call's events are applied to its record as read,
 * and every call is written by one statement with its trace and events (no transaction to open).
 * A call whose record changed between the read and the write (another round or instance got there
 * first: rare) is left out by that statement and applied again the locked way (applyLocked).
 */
async function handleRound(platform: Platform, events: DialogEvent[], { unbilled = false, now = Date.now(), knownUsers, onCallsRead }: EndOptions): Promise<void> {
  const keyed = events.filter((e) => e.account_id);
  // The rate plans of the accounts whose calls end are read beside the calls (an event without an
  // account, rare, has its plan read after).
  const planAccounts = [...new Set(keyed.filter((e) => e.state === "terminated").map((e) => e.account_id!))];
  const [calls, plans] = await Promise.all([
    findCallsBySipIds(platform.db, keyed.map((e) => ({ account_id: e.account_id!, sip_call_id: e.callId, ...(e.record_id ? { record_id: e.record_id } : {}) }))),
    defaultRatePlans(platform.db, planAccounts, platform.configCache),
  ]);
  // By record (events that name theirs), and the newest of each Call-ID (events that do not).
  const byRecord = new Map<string, SeenCall>();
  const found = new Map<string, SeenCall>();
  for (const call of calls) {
    byRecord.set(`${call.account_id}\u0000${call.id}`, call);
    const key = `${call.account_id}\u0000${call.sip_call_id}`;
    const seen = found.get(key);
    if (!seen || seen.started_ms < call.started_ms) found.set(key, call);
  }
  onCallsRead?.(new Set(calls.map((call) => `${call.account_id}\u0000${call.sip_call_id}`)));
  let items: Item[] = [];
  // Nothing happened after now: an edge clock ahead of ours (or a ts in seconds × 1000 too many)
  // must not bill the future.
  for (const event of events) {
    const call = !event.account_id
      ? await findCallWithoutAccount(platform, event.callId)
      : event.record_id
        ? byRecord.get(`${event.account_id}\u0000${event.record_id}`)
        : found.get(`${event.account_id}\u0000${event.callId}`);
    if (!call) {
      platform.log.info("dialog event for an unknown call ignored", { state: event.state, account_id: event.account_id ?? null });
      continue;
    }
    items.push({ event, call, at: Math.min(event.ts ?? now, now), legs: event.legs as Legs | undefined });
  }
  items = beforeTheEnd(items);
  if (!items.length) return;
  const answering = items.filter((i) => i.event.state !== "early");
  const unplanned = [...new Set(items.filter((i) => i.event.state === "terminated").map((i) => i.call.account_id))].filter((id) => !planAccounts.includes(id));
  const [unplannedPlans, known] = await Promise.all([defaultRatePlans(platform.db, unplanned, platform.configCache), knownUsers ?? knownCallees(platform, answering)]);
  for (const [accountId, plan] of unplannedPlans) plans.set(accountId, plan);
  // A call the edge's failover handed to a media engine to forward out ends as an outbound call to the
  // forward's number, the one /route gave the edge: read from the records (rare: only for such ends).
  const forwarded = items.filter((i) => i.event.state === "terminated" && i.event.failover?.startsWith("forward:"));
  const failovers = await callFailovers(platform.db, forwarded.map((i) => ({ account_id: i.call.account_id, id: i.call.id })));
  const context: RoundContext = { plans, known, unbilled, now, failovers, emergency: platform.config.routing.emergencyNumbers };

  const { written, changed } = await applyAtOnce(platform, items, context);
  if (changed.length) {
    const locked = await applyLocked(platform, changed, context);
    written.answered.push(...locked.answered);
    written.ended.push(...locked.ended);
  }

  // After commit: slots are renewed for answered calls, and released exactly when the record says
  // the call ended. A repeated terminated event releases again, which is harmless.
  const ttl = cacTtlMs(platform);
  const endedSlots = new Map(written.ended.map((row) => [`${row.account_id}\u0000${row.id}`, row.slots]));
  // A call answered and ended in this round is only released (a renewal beside the release could
  // take its slots back).
  const terminated = items.filter((i) => i.event.state === "terminated");
  const ending = new Set(terminated.map((i) => `${i.call.account_id}\u0000${i.call.id}`));
  await Promise.all([
    ...written.answered.filter((row) => !ending.has(`${row.account_id}\u0000${row.id}`)).map((row) => renewSlots(platform.live, row.account_id, row.id, row.slots, ttl)),
    ...terminated.map((i) => releaseSlots(platform.live, i.call.account_id, i.call.id, endedSlots.get(`${i.call.account_id}\u0000${i.call.id}`) ?? i.call.slots)),
  ]);
  // Only the ends this round wrote: a terminated event sent again (an edge's retried batch) finds the
  // record ended, and outbound already (its direction as read here would let `any` windows count it).
  const forwardedNow = forwarded.filter((i) => endedSlots.has(`${i.call.account_id}\u0000${i.call.id}`));
  if (forwardedNow.length) await countFailoverForwards(platform, forwardedNow, failovers);
}

/**
 * A forward the edge's failover placed (a media engine called the number /route gave) counts in the
 * windows of the account's and the call's user's limits of calls out, as a forward /route places
 * itself does: /route only checked them then (the forward was a maybe). A window an inbound call was
 * counted in coming in (direction any) has it already. Rare (only such ends): one read per call.
 */
async function countFailoverForwards(platform: Platform, items: Item[], failovers: ReadonlyMap<string, Record<string, unknown>>): Promise<void> {
  for (const { call, event } of items) {
    if (!failoverNumber(failovers.get(`${call.account_id}\u0000${call.id}`), event.failover!)) continue;
    try {
      const windows = await rawRows<{ id: string; period_sec: number; direction: string }>(
        platform.db,
        sql`select l.id, l.period_sec, l.direction from call_limit l join call_record c on c.account_id = l.account_id and c.id = ${call.id}
            where l.account_id = ${call.account_id} and l.period_sec is not null and l.direction in ('out', 'any')
              and ((l.scope_kind = 'account' and l.scope_id = c.account_id) or (l.scope_kind = 'user' and l.scope_id = c.user_id))`,
      );
      await Promise.all(
        windows
          .filter((w) => w.direction === "out" || call.direction !== "inbound")
          .map((w) =>
            platform.live.zaddExpiringWithin([{ key: accountKey(call.account_id, "call_limit_log", w.id), limit: Number.MAX_SAFE_INTEGER }], `forward:${call.id}`, Number(w.period_sec) * 1000),
          ),
      );
    } catch (error) {
      platform.log.warn("a failover forward could not be counted in its call limits", { call_id: call.id, error: describeError(error) });
    }
  }
}

/** The newest call with this Call-ID in any account, as a round reads calls (events naming no account: rare). */
async function findCallWithoutAccount(platform: Platform, sipCallId: string): Promise<SeenCall | undefined> {
  const row = await findCallBySipIdAnyAccount(platform.db, sipCallId);
  if (!row) return undefined;
  return (await findCallsBySipIds(platform.db, [{ account_id: row.account_id, sip_call_id: sipCallId }]))[0];
}

/** A call's record as its end is worked out from: as locked (applyLocked) or as read (applyAtOnce). */
type EndBasis = Pick<DialogCall, "account_id" | "id" | "answered" | "answered_ms" | "started_ms" | "direction" | "to"> & { did: string | null };

/** How one call ends: the record's end columns, and what its trace and events say. */
interface EndWork {
  patch: EndPatch;
  answered: boolean;
  /** When the end reports an answer the record does not have (its confirmed event lost or late). */
  lateAnswerMs: number | null;
  cause: string;
  at: number;
  data: Record<string, unknown>;
}

/** The end of `fresh` that terminated event `item` reports, priced by the account's default plan. */
function endOf(fresh: EndBasis, { event, call, at, legs }: Item, { plans, known, unbilled, now, failovers, emergency }: RoundContext): EndWork {
  let endedMs = Math.max(at, call.started_ms);
  // The end says when the call was answered and the record has no answer (its confirmed event
  // was lost, or is behind the end): answered then, between the start and the end.
  const lateAnswerMs = fresh.answered === 1 || event.answered_ts === undefined ? null : Math.min(Math.max(Math.min(event.answered_ts, now), fresh.started_ms), endedMs);
  const answeredMs = fresh.answered === 1 ? fresh.answered_ms : lateAnswerMs;
  const wasAnswered = answeredMs !== null;
  // An end the edge's times put before the answer: ended when answered (0 s).
  if (answeredMs !== null) endedMs = Math.max(endedMs, answeredMs);
  const billsec = answeredMs !== null && !unbilled ? Math.ceil((endedMs - answeredMs) / 1000) : 0;
  const cause = event.hangup_cause ?? hangupCauseOf(event.sip_code, wasAnswered);
  // Forwarded out by the edge's failover (a media engine placed the forward): an outbound call to the
  // forward's number from here on, recorded and billed as one, like a forward /route places.
  const forwardedTo = event.failover?.startsWith("forward:") ? failoverNumber(failovers.get(`${fresh.account_id}\u0000${fresh.id}`), event.failover) : null;
  const direction = forwardedTo !== null ? "outbound" : (fresh.direction as "inbound" | "outbound" | "internal");
  const to = forwardedTo ?? fresh.to;
  // An emergency call is free (its digits would otherwise be priced by some country's prefix: 911 by +91).
  const free = direction === "outbound" && emergency.includes(to);
  const price = priceCall(plans.get(fresh.account_id) ?? null, direction, direction === "inbound" && fresh.did ? fresh.did : to, billsec, wasAnswered && !unbilled && !free);
  return {
    patch: {
      account_id: fresh.account_id,
      id: fresh.id,
      status: endStatusOf(wasAnswered, cause),
      ended_ms: endedMs,
      billsec,
      hangup_cause: cause,
      sip_code: event.sip_code ?? null,
      cost_micro: price.cost_micro,
      currency: price.currency,
      rate_plan_id: price.rate_plan_id,
      legs: legs ?? null,
      answered_ms: lateAnswerMs,
      agent_id: lateAnswerMs === null ? null : agentOf(fresh.account_id, legs, known),
      ...(event.failover ? { no_routed: true } : {}),
      ...(forwardedTo !== null && (direction !== fresh.direction || to !== fresh.to) ? { direction, to } : {}),
    },
    answered: wasAnswered,
    lateAnswerMs,
    cause,
    at,
    data: {
      sip_code: event.sip_code ?? null,
      // The edge's answer time as the end reported it (checked against the record's).
      ...(event.answered_ts !== undefined ? { answered_ts: event.answered_ts } : {}),
      cost_micro: price.cost_micro,
      ...(unbilled ? { unbilled: "the end was never reported" } : {}),
      ...(price.prefix !== null ? { rate_prefix: price.prefix, billed_sec: price.billed_sec } : {}),
      ...(forwardedTo !== null ? { forwarded_to: forwardedTo, was: fresh.direction } : {}),
    },
  };
}

/** The number /route gave for the failover `value` (`forward:fwd_…`) among a call's failover vars, or null. */
function failoverNumber(vars: Record<string, unknown> | undefined, value: string): string | null {
  if (!vars) return null;
  for (const trigger of ["busy", "no_answer", "unreachable"]) {
    const number = vars[`failover_${trigger}_number`];
    if (vars[`failover_${trigger}`] === value && typeof number === "string" && number !== "") return number;
  }
  return null;
}

/** call.ended of `row` (its record after the end). */
function endedEvent(row: Pick<DialogCall, "account_id" | "id" | "direction" | "billsec" | "queue_id" | "agent_id">, end: EndWork, endedMs: number): EventInput {
  return callEvent(row, "call.ended", endedMs, {
    answered: end.answered ? 1 : 0,
    billsec: row.billsec,
    hangup_cause: end.cause,
    queue_id: row.queue_id,
    agent_id: row.agent_id,
  });
}

const traceStep = (row: Pick<DialogCall, "account_id" | "id">, at: number, result: string, data?: Record<string, unknown>): NewTraceStep => ({
  account_id: row.account_id,
  call_id: row.id,
  at_ms: at,
  step: "dialog",
  result,
  data: data ?? null,
});

/**
 * The round applied to each call's record as read: each call's events in order make one patch (its
 * state after them), its trace steps and its events, and one statement writes them all where the
 * record is still as read. Returns what it wrote, and the items of calls it did not write because
 * their record changed meanwhile.
 */
async function applyAtOnce(platform: Platform, items: Item[], context: RoundContext): Promise<{ written: RoundWritten; changed: Item[] }> {
  const byCall = new Map<string, Item[]>();
  for (const item of items) {
    const key = `${item.call.account_id}\u0000${item.call.id}`;
    const list = byCall.get(key);
    if (list) list.push(item);
    else byCall.set(key, [item]);
  }
  const patches: RoundPatch[] = [];
  const steps: NewTraceStep[] = [];
  const events: Array<EventInput & { key: string }> = [];
  const planned = new Map<string, { items: Item[]; answered: boolean; ends: boolean }>();
  for (const [key, its] of byCall) {
    const call = its[0]!.call;
    // An ended (or refused) call takes no event: nothing to write, as the conditional updates find.
    if (call.ended_ms !== null || call.status === "rejected") continue;
    const state = { status: call.status as string, ringing_ms: null as number | null, answered: call.answered, answered_ms: call.answered_ms, agent_id: call.agent_id, legs: null as Legs | null };
    let end: EndWork | null = null;
    let answeredNow = false;
    const callSteps: NewTraceStep[] = [];
    const callEvents: EventInput[] = [];
    for (const item of its) {
      if (end) break; // nothing after the end (see handleRound)
      const kind = item.event.state;
      if (kind === "early") {
        if (state.status !== "routed") continue;
        state.status = "ringing";
        state.ringing_ms = item.at;
        callSteps.push(traceStep(call, item.at, "early: ringing"));
      } else if (kind === "confirmed") {
        if (state.answered !== 0) continue;
        // A confirmation can only move answered_ms forward of the start (clock skew between edge and us).
        const answeredMs = Math.max(item.at, call.started_ms);
        Object.assign(state, {
          status: "answered",
          answered: 1,
          answered_ms: answeredMs,
          agent_id: state.agent_id ?? agentOf(call.account_id, item.legs, context.known) ?? routedAnswerer(call, item.event),
          legs: item.legs ?? state.legs,
        });
        answeredNow = true;
        callSteps.push(traceStep(call, item.at, "confirmed: answered"));
        callEvents.push(answeredEvent({ ...call, agent_id: state.agent_id }, answeredMs));
      } else {
        end = endOf({ ...call, answered: state.answered, answered_ms: state.answered_ms }, item, context);
        if (end.lateAnswerMs !== null) {
          state.answered = 1;
          state.answered_ms = end.lateAnswerMs;
          state.agent_id = state.agent_id ?? end.patch.agent_id ?? routedAnswerer(call, item.event);
          // Answered as the end reports it: the answer is traced and announced first, as it happened.
          callSteps.push(traceStep(call, end.lateAnswerMs, "confirmed: answered (reported with the end)"));
          callEvents.push(answeredEvent({ ...call, agent_id: state.agent_id }, end.lateAnswerMs));
        }
        state.status = end.patch.status;
        state.legs = item.legs ?? state.legs;
        callSteps.push(traceStep(call, end.at, `terminated: ${end.cause}, billsec ${end.patch.billsec}${end.patch.direction ? `, forwarded out to ${end.patch.to}: outbound` : ""}`, end.data));
        callEvents.push(endedEvent({ ...call, direction: end.patch.direction ?? call.direction, agent_id: state.agent_id, billsec: end.patch.billsec }, end, end.patch.ended_ms!));
      }
    }
    if (!callSteps.length) continue;
    patches.push({
      account_id: call.account_id,
      id: call.id,
      seen_status: call.status,
      seen_answered: call.answered,
      status: state.status,
      ringing_ms: state.ringing_ms,
      answered: state.answered,
      answered_ms: state.answered_ms,
      agent_id: state.agent_id,
      legs: state.legs,
      ends: end !== null,
      ended_ms: end?.patch.ended_ms ?? null,
      billsec: end?.patch.billsec ?? 0,
      hangup_cause: end?.patch.hangup_cause ?? null,
      sip_code: end?.patch.sip_code ?? null,
      cost_micro: end?.patch.cost_micro ?? 0,
      currency: end?.patch.currency ?? null,
      rate_plan_id: end?.patch.rate_plan_id ?? null,
      direction: end?.patch.direction ?? null,
      to: end?.patch.to ?? null,
    });
    steps.push(...callSteps);
    for (const event of callEvents) events.push({ ...event, key: call.id });
    planned.set(key, { items: its, answered: answeredNow, ends: end !== null });
  }
  const written: RoundWritten = { answered: [], ended: [] };
  if (!patches.length) return { written, changed: [] };
  const { result } = await platform.events.statement({
    ctes: (gate) => dialogRoundCtes(patches, steps, gate),
    events,
    keep: sql`exists (select 1 from dlg_upd u where u.account_id = i.account_id and u.id = i.key)`,
    result: sql`(select coalesce(json_agg(json_build_array(account_id, id)), '[]') from dlg_upd)`,
  });
  const done = new Set((result as Array<[string, string]>).map(([accountId, id]) => `${accountId}\u0000${id}`));
  const changed: Item[] = [];
  for (const [key, plan] of planned) {
    if (!done.has(key)) {
      changed.push(...plan.items);
      continue;
    }
    const call = plan.items[0]!.call;
    if (plan.answered) written.answered.push(call);
    if (plan.ends) written.ended.push(call);
  }
  return { written, changed };
}

/**
 * The round applied the locked way, in one transaction: one conditional update per state on the
 * records as they are now, the ends decided from the rows locked. A call's ringing, answer and end in
 * one round apply in that order: the three statements go out in that order on the transaction, so the
 * answer sees the ringing row and the end's locked read sees the answer.
 */
async function applyLocked(platform: Platform, items: Item[], context: RoundContext): Promise<RoundWritten> {
  const early = items.filter((i) => i.event.state === "early");
  const confirmed = items.filter((i) => i.event.state === "confirmed");
  const terminated = items.filter((i) => i.event.state === "terminated");
  return platform.events.transaction(async (tx, _emit, emitMany) => {
    const traces: NewTraceStep[] = [];
    const emits: EventInput[] = [];
    const byId = (list: Item[]) => new Map(list.map((i) => [`${i.call.account_id}\u0000${i.call.id}`, i]));

    // The three statements go out together (pipelined on the transaction), in this order.
    // Ends are decided from the rows as they are now, locked: answered_ms comes from the stored
    // record, never from this event, so a late confirmed cannot be invented here.
    const [ringing, answered, ending] = await Promise.all([
      markRingingMany(tx, early.map((i) => ({ account_id: i.call.account_id, id: i.call.id, ringing_ms: i.at }))),
      markAnsweredMany(
        tx,
        confirmed.map((i) => ({
          account_id: i.call.account_id,
          id: i.call.id,
          answered_ms: Math.max(i.at, i.call.started_ms),
          agent_id: agentOf(i.call.account_id, i.legs, context.known),
          legs: i.legs ?? null,
          ...(i.event.failover ? { no_routed: true } : {}),
        })),
      ),
      lockLiveCalls(tx, terminated.map((i) => ({ account_id: i.call.account_id, id: i.call.id }))),
    ]);
    const earlyOf = byId(early);
    for (const row of ringing) traces.push(traceStep(row, earlyOf.get(`${row.account_id}\u0000${row.id}`)!.at, "early: ringing"));

    const answerOf = byId(confirmed);
    for (const row of answered) {
      const item = answerOf.get(`${row.account_id}\u0000${row.id}`)!;
      traces.push(traceStep(row, item.at, "confirmed: answered"));
      emits.push(answeredEvent(row, Math.max(item.at, item.call.started_ms)));
    }

    const endOfCall = byId(terminated);
    const works = new Map<string, EndWork>();
    for (const fresh of ending) works.set(`${fresh.account_id}\u0000${fresh.id}`, endOf(fresh, endOfCall.get(`${fresh.account_id}\u0000${fresh.id}`)!, context));
    const ended = await markEndedMany(tx, [...works.values()].map((w) => w.patch));
    for (const row of ended) {
      const end = works.get(`${row.account_id}\u0000${row.id}`)!;
      if (end.lateAnswerMs !== null) {
        // Answered as the end reports it: the answer is traced and announced first, as it happened.
        traces.push(traceStep(row, end.lateAnswerMs, "confirmed: answered (reported with the end)"));
        emits.push(answeredEvent(row, end.lateAnswerMs));
      }
      traces.push(traceStep(row, end.at, `terminated: ${end.cause}, billsec ${row.billsec}${end.patch.direction ? `, forwarded out to ${end.patch.to}: outbound` : ""}`, end.data));
      emits.push(endedEvent(row, end, row.ended_ms!));
    }
    await Promise.all([insertTrace(tx, traces), emitMany(emits)]);
    return { answered, ended };
  });
}
