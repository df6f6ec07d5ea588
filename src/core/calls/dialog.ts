/**
 * The edge's dialog events drive the call record: early → ringing; confirmed → answered (call.answered);
 * terminated → ended with billsec, hangup cause and cost, CAC slots released (call.ended). Each change
 * is one conditional update in one transaction with its event, so a duplicate or late event changes
 * nothing: terminated twice ends once, confirmed after terminated is ignored, terminated before
 * confirmed is an unanswered call. An event for a Call-ID we never admitted is logged and ignored (the
 * edge also reports dialogs of calls the router refused without an account, e.g. unknown DIDs).
 */
import type { Platform } from "../platform.ts";
import type { DialogEvent } from "../routing/route-types.ts";
import type { Tx } from "../db/db.ts";
import { releaseSlots, renewSlots } from "../cac/cac.service.ts";
import { defaultRatePlan, priceCall } from "../rates/rates.service.ts";
import type { CallRecordRow } from "./calls.schema.ts";
import { findCallBySipId, findCallBySipIdAnyAccount, insertTrace, markAnswered, markEnded, markRinging } from "./calls.store.ts";
import { cacTtlMs } from "./cac-config.ts";

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

/** The answering agent: the user of a callee leg (the first confirmed one if the edge says which). */
function agentOf(legs: Legs | undefined): string | null {
  const callees = (legs ?? []).filter((l) => l.role === "callee" && typeof l.user_id === "string");
  const confirmed = callees.find((l) => l.state === "confirmed") ?? callees[0];
  return (confirmed?.user_id as string | undefined) ?? null;
}

async function trace(tx: Tx, call: CallRecordRow, at: number, step: string, result: string, data?: Record<string, unknown>): Promise<void> {
  await insertTrace(tx, [{ account_id: call.account_id, call_id: call.id, at_ms: at, step, result, data: data ?? null }]);
}

/**
 * Applies one dialog event to its call record (safe to repeat and to receive out of order).
 * @example await handleDialogEvent(platform, { type: "dialog", callId: "a84b4c76e66710", state: "terminated", sip_code: 200 })
 */
export async function handleDialogEvent(platform: Platform, event: DialogEvent): Promise<void> {
  const call = event.account_id
    ? await findCallBySipId(platform.db, event.account_id, event.callId)
    : await findCallBySipIdAnyAccount(platform.db, event.callId);
  if (!call) {
    platform.log.info("dialog event for an unknown call ignored", { state: event.state, account_id: event.account_id ?? null });
    return;
  }
  const at = event.ts ?? Date.now();
  const legs = event.legs as Legs | undefined;
  if (event.state === "early") {
    await platform.events.transaction(async (tx) => {
      const row = await markRinging(tx, call.account_id, call.id, at);
      if (row) await trace(tx, row, at, "dialog", "early: ringing");
    });
    return;
  }
  if (event.state === "confirmed") {
    // A confirmation can only move answered_ms forward of the start (clock skew between edge and us).
    const answeredMs = Math.max(at, call.started_ms);
    const answered = await platform.events.transaction(async (tx, emit) => {
      const row = await markAnswered(tx, call.account_id, call.id, { answered_ms: answeredMs, agent_id: agentOf(legs), ...(legs ? { legs } : {}) });
      if (!row) return null;
      await trace(tx, row, at, "dialog", "confirmed: answered");
      await emit(
        row.account_id,
        "call.answered",
        {
          callId: row.id,
          direction: row.direction as "inbound" | "outbound" | "internal",
          queue_id: row.queue_id,
          agent_id: row.agent_id,
          wait_sec: Math.max(0, Math.round((answeredMs - row.started_ms) / 1000)),
          ts: answeredMs,
        },
        answeredMs,
      );
      return row;
    });
    if (answered) await renewSlots(platform.live, answered.account_id, answered.id, answered.slots, cacTtlMs(platform));
    return;
  }
  await endCall(platform, call, event, at, legs);
}

async function endCall(platform: Platform, call: CallRecordRow, event: DialogEvent, at: number, legs: Legs | undefined): Promise<void> {
  const plan = await defaultRatePlan(platform.db, call.account_id);
  const ended = await platform.events.transaction(async (tx, emit) => {
    // Decide from the row as it is now inside the transaction's update: answered_ms comes from the
    // stored record, never from this event, so a late confirmed cannot be invented here.
    const endedMs = Math.max(at, call.started_ms);
    const fresh = await findCallBySipId(tx, call.account_id, call.sip_call_id);
    if (!fresh || fresh.ended_ms !== null) return null;
    const answered = fresh.answered === 1 && fresh.answered_ms !== null;
    const billsec = answered ? Math.max(0, Math.ceil((endedMs - fresh.answered_ms!) / 1000)) : 0;
    const cause = event.hangup_cause ?? hangupCauseOf(event.sip_code, answered);
    const price = priceCall(plan, fresh.direction as "inbound" | "outbound" | "internal", fresh.to, billsec);
    const row = await markEnded(tx, call.account_id, call.id, {
      status: endStatusOf(answered, cause),
      ended_ms: endedMs,
      billsec,
      hangup_cause: cause,
      sip_code: event.sip_code ?? null,
      cost_micro: price.cost_micro,
      currency: price.currency,
      rate_plan_id: price.rate_plan_id,
      ...(legs ? { legs } : {}),
    });
    if (!row) return null;
    await trace(tx, row, at, "dialog", `terminated: ${cause}, billsec ${billsec}`, {
      sip_code: event.sip_code ?? null,
      cost_micro: price.cost_micro,
      ...(price.prefix !== null ? { rate_prefix: price.prefix, billed_sec: price.billed_sec } : {}),
    });
    await emit(
      row.account_id,
      "call.ended",
      {
        callId: row.id,
        direction: row.direction as "inbound" | "outbound" | "internal",
        answered: answered ? 1 : 0,
        billsec,
        hangup_cause: cause,
        queue_id: row.queue_id,
        agent_id: row.agent_id,
        ts: endedMs,
      },
      endedMs,
    );
    return row;
  });
  // Released after commit: the slots are free exactly when the record says the call ended. A
  // repeated terminated event releases again, which is harmless.
  await releaseSlots(platform.live, call.account_id, call.id, ended?.slots ?? call.slots);
}
