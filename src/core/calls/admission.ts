/**
 * Call admission, the last step of POST /route: take the decision's CAC slots (all or nothing), write
 * the call record with its trace, and emit call.started, in one transaction. Retransmissions of the
 * same INVITE (same SIP Call-ID) get the first reply again and take nothing twice.
 */
import { accountKey } from "../live/live-store.ts";
import { newId } from "../ids/ids.ts";
import type { Platform } from "../platform.ts";
import { callLimitMember, type CacSlot, type RouteDecision, type RouteReply, type RouteRequest, type TraceStep } from "../routing/route-types.ts";
import { acquireSlots, releaseSlots } from "../cac/cac.service.ts";
import type { EventInput } from "../events/bus.ts";
import { findCall, findCallBySipId, insertTrace, type NewTraceStep } from "./calls.store.ts";
import { handleDialogEvent, hangupCauseOf } from "./dialog.ts";
import { recordLog } from "../logs/logs.service.ts";
import { noteDecision } from "./decision-notes.ts";
import { createAdmissionWriter, type AdmissionWriter } from "./admission-writer.ts";
import { cacTtlMs } from "./cac-config.ts";

/** How long a concurrent retransmission waits for the first one's record before answering 503. */
const RETRANSMIT_WAIT_MS = 3000;
/** How long the per-call admission claim lives (a crashed instance frees it after this). */
const CLAIM_TTL_MS = 10_000;
/**
 * How long after the edge stopped waiting for a reply its call, if the edge did not get the reply by
 * asking again, is ended as never placed. The edge retries at once (on its other control host) and a
 * retry waits at most RETRANSMIT_WAIT_MS for the first admission's record: well within this.
 */
export const UNDELIVERED_GRACE_MS = 10_000;
/** How long an answer from a call's stored reply (a retry, a retransmission) is remembered. */
const SERVED_TTL_MS = 60_000;

/**
 * Set when a call's stored reply was sent (to a retry of the edge, or a retransmission): by the call
 * record's id, since a Call-ID reused by a new INVITE has a record per INVITE.
 */
function servedKey(accountId: string, recordId: string): string {
  return accountKey(accountId, "served", recordId);
}

/**
 * How long after its record began an INVITE seen again (the same Call-ID and CSeq) is that INVITE
 * retransmitted, or the edge's retry of its /route: SIP's Timer B (64 × T1). Later, it is no
 * retransmission but a replay (a phone sending an old call's INVITE again): a merged request.
 */
export const RETRANSMISSION_WINDOW_MS = 32_000;

/**
 * The stored reply of a call admitted before, remembered as sent (see settleUndeliveredReply); or,
 * for a replay of an INVITE past RETRANSMISSION_WINDOW_MS, 482 (RFC 3261 8.2.2.2, a merged request):
 * an old reply must not place a new call unrecorded, uncounted and unbilled.
 */
async function storedReply(platform: Platform, accountId: string, call: { id: string; reply: RouteReply; started_ms: number }): Promise<RouteReply> {
  if (Date.now() - call.started_ms > RETRANSMISSION_WINDOW_MS) {
    platform.log.info("an old INVITE sent again (same Call-ID and CSeq) refused 482", { account_id: accountId });
    return { rtjson: { action: "reject", account_id: accountId, flow_id: null, vars: { reject_reason: "replayed_invite" }, code: 482, reason: "Loop Detected" } };
  }
  await platform.live.set(servedKey(accountId, call.id), "1", SERVED_TTL_MS);
  return call.reply;
}

/**
 * The reply to a call CAC refuses: 486 Busy Here when a person's own ceiling is reached (the user's
 * simultaneous calls, or a user-scope concurrent call limit: the person is busy, the caller may try
 * later or go to voicemail on busy), 503 Service Unavailable for every capacity ceiling (account,
 * number, trunk, an account's or a number's call limit), which tells an upstream carrier to try
 * another route.
 */
export function cacRejectReply(decision: RouteDecision, refused: CacSlot): RouteReply {
  const busy = refused.level === "user" || refused.busy === true;
  return {
    rtjson: {
      action: "reject",
      account_id: decision.accountId,
      flow_id: null,
      vars: { ...decision.reply.rtjson.vars, reject_reason: "cac", cac_level: refused.level, cac_id: refused.id },
      code: busy ? 486 : 503,
      reason: busy ? "Busy Here" : "Service Unavailable",
    },
  };
}

function traceRows(accountId: string, callId: string, steps: readonly TraceStep[]): NewTraceStep[] {
  return steps.map((s) => ({ account_id: accountId, call_id: callId, at_ms: s.at, step: s.step, result: s.result, data: s.data ?? null }));
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** The per-call admission claim: one admission per Call-ID at a time, on every instance. */
export interface AdmissionClaim {
  key: string;
  /** This request's token (released only by its holder). */
  value: string;
  ttlMs: number;
}

/**
 * A fresh admission claim of one call, for a caller that takes it itself together with another key
 * (POST /route with a digest takes it with the nonce: setEachIfAbsent) and hands it to admitCall.
 * @example const claim = admissionClaim(accountId, req.callId)
 */
export function admissionClaim(accountId: string, sipCallId: string, cseq?: number): AdmissionClaim {
  return { key: admissionClaimKey(accountId, sipCallId, cseq), value: newId("req"), ttlMs: CLAIM_TTL_MS };
}

/** Per INVITE (its Call-ID and CSeq): another INVITE reusing the Call-ID is admitted beside it, not after it. */
function admissionClaimKey(accountId: string, sipCallId: string, cseq?: number): string {
  return accountKey(accountId, "admit", callLimitMember(sipCallId, cseq));
}

/** Gives a claim back; a claim not given back expires on its own. */
export function releaseAdmissionClaim(platform: Platform, claim: AdmissionClaim): void {
  platform.live.compareAndDelete(claim.key, claim.value).catch((error: unknown) => {
    platform.log.warn("admission claim not released (it expires on its own)", { error: String(error) });
  });
}

/**
 * Admits a call: when `decision.accountId` is set, takes `decision.slots` (CAC, all or nothing), writes
 * the call record (status routed, or rejected with the reject's SIP code, for the router's rejects
 * and CAC refusals alike) with its trace steps, and emits call.started for routed calls, all in one
 * transaction (shared with the calls admitted beside it: admission-writer.ts). Returns the reply to send. Idempotent per INVITE (its Call-ID and CSeq).
 * `held`: the call's admission claim as the caller tried it already (`taken`: it got it; not taken:
 * another admission of the Call-ID holds it); without it, the claim is tried here.
 * @example const reply = await admitCall(platform, await decideRoute(platform, req), req)
 */
export async function admitCall(
  platform: Platform,
  decision: RouteDecision,
  req: RouteRequest,
  held?: { claim: AdmissionClaim; taken: boolean },
): Promise<RouteReply> {
  const accountId = decision.accountId;
  const sipCallId = req.callId;
  const cseq = req.cseq ?? 0;
  let given = held;
  if (given && (!accountId || given.claim.key !== admissionClaimKey(accountId, sipCallId, req.cseq))) {
    // Not this admission's claim (the decision names no account, or another one): given back.
    if (given.taken) releaseAdmissionClaim(platform, given.claim);
    given = undefined;
  }
  if (!accountId) return decision.reply;

  // One admission per Call-ID at a time, on every instance: a retransmission arriving while the first
  // is still being admitted waits for its record instead of racing it for the same slots.
  const claim = given?.claim ?? admissionClaim(accountId, sipCallId, req.cseq);
  const taken = given ? given.taken : await platform.live.setIfAbsent(claim.key, claim.value, claim.ttlMs);
  if (!taken) {
    for (let waited = 0; waited < RETRANSMIT_WAIT_MS; waited += 50) {
      const existing = await findCallBySipId(platform.db, accountId, sipCallId, cseq);
      if (existing) return storedReply(platform, accountId, existing);
      await sleep(50);
    }
    platform.log.warn("route retransmission timed out waiting for the first admission", { account_id: accountId });
    return { rtjson: { action: "reject", account_id: accountId, flow_id: null, vars: {}, code: 503, reason: "Service Unavailable" } };
  }
  try {
    // No look-up first: a Call-ID seen before (a retransmission after the first admission ended)
    // fails the record's unique insert, gives back what it took and answers with the stored reply.
    // That rare case pays for the common one, which saves a database round trip.
    return await admitNew(platform, decision, accountId, sipCallId, cseq);
  } finally {
    // The reply does not wait for the claim to go: the record is committed (or nothing was), so a
    // retransmission that still finds the claim finds the record too; a claim left behind expires.
    releaseAdmissionClaim(platform, claim);
  }
}

async function admitNew(platform: Platform, decision: RouteDecision, accountId: string, sipCallId: string, cseq: number): Promise<RouteReply> {
  const member = callLimitMember(sipCallId, cseq);
  const id = newId("call");
  const startedMs = Date.now();
  const steps: TraceStep[] = [...decision.trace];
  let reply = decision.reply;
  let slots: CacSlot[] = [];
  let trunkId = decision.trunkId;
  const routed = reply.rtjson.action !== "reject";

  if (routed && decision.slots.length) {
    let wanted = decision.slots;
    let legs = decision.legs ?? null;
    for (;;) {
      const got = await acquireSlots(platform.live, accountId, id, wanted, cacTtlMs(platform));
      if (got.ok) {
        slots = wanted;
        steps.push({ at: Date.now(), step: "cac", result: `admitted (${slots.map((s) => `${s.level} ${s.id}${s.leg ? ` (leg ${s.leg})` : ""} ${s.soft ? `counted, soft limit ${s.limit}` : `≤ ${s.limit}`}`).join(", ")})` });
        break;
      }
      // A full trunk fails over: the call goes on from its next leg through another trunk (or the carrier).
      const next = got.refused.level === "trunk" && legs ? pastFullTrunk(reply, legs, wanted, got.refused) : null;
      if (next) {
        steps.push({
          at: Date.now(),
          step: "cac",
          result: `trunk ${got.refused.id} full (${got.active} of ${got.refused.limit}): its routes skipped, ${next.legs.length} left`,
          data: { level: got.refused.level, id: got.refused.id, limit: got.refused.limit, active: got.active },
        });
        ({ reply, legs, slots: wanted, trunkId } = next);
        continue;
      }
      reply = cacRejectReply(decision, got.refused);
      steps.push({
        at: Date.now(),
        step: "cac",
        result: `refused: ${got.refused.level} ${got.refused.id} at its limit of ${got.refused.limit}`,
        data: { level: got.refused.level, id: got.refused.id, limit: got.refused.limit, active: got.active },
      });
      break;
    }
  }
  const admitted = reply.rtjson.action !== "reject";
  // A refusal of the router already ends its trace with its reject step; CAC's gets one here.
  if (routed && !admitted) steps.push({ at: Date.now(), step: "reject", result: `${reply.rtjson.code ?? 0} ${reply.rtjson.reason ?? ""}`.trim() });
  const withCallId: RouteReply = { rtjson: { ...reply.rtjson, vars: { ...reply.rtjson.vars, call_id: id } } };
  // Numbers are recorded E.164 without "+", as the called number is: a carrier's "+4477…" is 4477….
  const from = decision.from.replace(/^\+(?=\d{1,15}$)/, "");

  const call = {
    account_id: accountId,
    id,
    sip_call_id: sipCallId,
    sip_cseq: cseq,
    direction: decision.direction,
    from,
    to: decision.to,
    user_id: decision.userId,
    device_id: decision.deviceId,
    number_id: decision.numberId,
    trunk_id: trunkId,
    queue_id: decision.queueId,
    flow_id: reply.rtjson.flow_id,
    status: admitted ? ("routed" as const) : ("rejected" as const),
    sip_code: admitted ? null : (reply.rtjson.code ?? null),
    reject_reason: admitted ? null : (reply.rtjson.reason ?? null),
    started_ms: startedMs,
    ended_ms: admitted ? null : startedMs,
    // A refusal says why as an ended call would: 486 USER_BUSY, 404 UNALLOCATED_NUMBER, 503 NORMAL_TEMPORARY_FAILURE, …
    hangup_cause: admitted ? null : hangupCauseOf(reply.rtjson.code ?? 403, false),
    slots,
    reply: withCallId,
  };
  const started: EventInput | null = admitted
    ? {
        accountId,
        event: "call.started",
        data: { callId: id, direction: decision.direction, from, to: decision.to, number_id: decision.numberId, ts: startedMs },
        ts: startedMs,
      }
    : null;
  let inserted: boolean;
  try {
    inserted = await writerOf(platform).write({ call, steps: traceRows(accountId, id, steps), started });
  } catch (error) {
    // Nothing was recorded: give the slots back so a failed write cannot leak them.
    await Promise.all([releaseSlots(platform.live, accountId, id, slots), giveBackLimitWindows(platform, decision, member)]);
    throw error;
  }
  // A refused call counts against no call limit (it was counted by the windows it passed first).
  if (inserted && !admitted) await giveBackLimitWindows(platform, decision, member);
  if (inserted) {
    // A line in the account log is worth less than the call: its failure fails nothing.
    await noteDecision(platform, call, steps, reply).catch((error: unknown) => {
      platform.log.warn("account log line not written", { account_id: accountId, error: String(error) });
    });
  }
  if (!inserted) {
    // This Call-ID was recorded before (a retransmission, or another instance whose claim had
    // expired): its reply wins. This decision counted the call in the windows again (the same
    // member): a refused call is taken out once more, an admitted one stays counted.
    await releaseSlots(platform.live, accountId, id, slots);
    const existing = await findCallBySipId(platform.db, accountId, sipCallId, cseq);
    if (existing?.reply.rtjson.action === "reject") await giveBackLimitWindows(platform, decision, member);
    if (existing) return storedReply(platform, accountId, existing);
    throw new Error("the call's Call-ID is recorded but its record was not found");
  }
  return withCallId;
}

/** Takes the call out of the per-period call-limit windows it was counted in (a refused call). */
async function giveBackLimitWindows(platform: Platform, decision: RouteDecision, member: string): Promise<void> {
  if (!decision.limitWindows?.length) return;
  await Promise.all(decision.limitWindows.map((key) => platform.live.zrem(key, member))).catch((error: unknown) => {
    // The call stays counted until its window passes (period_sec): a limit reached early, nothing lost.
    platform.log.warn("call-limit windows not given back", { account_id: decision.accountId, error: String(error) });
  });
}

const isTrunkSlot = (slot: CacSlot, trunkId: string) => slot.level === "trunk" && slot.id === trunkId;

/**
 * The call's reply, slots and legs without the legs through `full` (a trunk at its max_channels): the
 * next trunk's slot instead, or none when the carrier comes next. Null when no leg is left, or when
 * `full` is not the slot of the call's leg out (the trunk the call came in through is full: the call
 * is refused, whatever other trunk it could go out by). Only the leg out's slot is given up: a call
 * that came in through the trunk it would go out by keeps its place coming in.
 */
function pastFullTrunk(
  reply: RouteReply,
  legs: NonNullable<RouteDecision["legs"]>,
  slots: readonly CacSlot[],
  full: CacSlot,
): { reply: RouteReply; legs: NonNullable<RouteDecision["legs"]>; slots: CacSlot[]; trunkId: string | null } | null {
  const routes = reply.rtjson.routes ?? [];
  const first = legs[0]?.trunk;
  if (routes.length !== legs.length || !first) return null;
  // The leg out's slot: apart from the coming-in one when both are the same trunk's.
  const legOut = slots.find((s) => isTrunkSlot(s, first.id) && s.leg === "out") ?? slots.find((s) => isTrunkSlot(s, first.id) && !s.leg);
  if (!legOut || !isTrunkSlot(full, legOut.id) || full.leg !== legOut.leg) return null;
  const keep = legs.flatMap((leg, i) => (leg.trunk?.id === full.id ? [] : [i]));
  if (!keep.length) return null;
  const left = keep.map((i) => legs[i]!);
  const next = left.find((l) => l.trunk)?.trunk ?? null;
  const nextSlots = slots.filter((s) => s !== legOut);
  if (next && next.max !== null) {
    const cameIn = nextSlots.some((s) => isTrunkSlot(s, next.id));
    nextSlots.push(cameIn ? { level: "trunk", id: next.id, limit: next.max, leg: "out" } : { level: "trunk", id: next.id, limit: next.max });
  }
  const trunkId = next?.id ?? null;
  return {
    reply: { rtjson: { ...reply.rtjson, routes: keep.map((i) => routes[i]!), vars: { ...reply.rtjson.vars, trunk_id: trunkId } } },
    legs: left,
    slots: nextSlots,
    trunkId,
  };
}

/** What settleUndeliveredReply found. */
export type UndeliveredOutcome = "ended" | "answered by a retry" | "went on" | "nothing held";

/**
 * For a /route reply the edge never got (it stopped waiting: its connection closed before we
 * answered, HTTP_TIMEOUT), called UNDELIVERED_GRACE_MS later. The edge refused that caller (503),
 * but the call was admitted: its record is open and its CAC slots are taken, and no dialog event
 * will ever end it. Unless the edge got the same reply by asking again (its retry on another
 * instance, a retransmission: both are answered from the stored reply, which is remembered), or
 * the call has moved on since (a dialog event), it is ended as the caller saw it (503, failed,
 * not billed) and its slots are given back, instead of being held until CAC_MAX_CALL_SEC.
 * @example await settleUndeliveredReply(platform, reply, sipCallId) // "ended"
 */
export async function settleUndeliveredReply(platform: Platform, reply: RouteReply, sipCallId: string): Promise<UndeliveredOutcome> {
  const accountId = reply.rtjson.account_id;
  if (!accountId || reply.rtjson.action === "reject") return "nothing held";
  // The reply names its record (vars.call_id): another INVITE may have reused the Call-ID since.
  const recordId = reply.rtjson.vars.call_id;
  const call = typeof recordId === "string" ? await findCall(platform.db, accountId, recordId) : await findCallBySipId(platform.db, accountId, sipCallId);
  if (call && (await platform.live.get(servedKey(accountId, call.id)))) return "answered by a retry";
  if (!call || call.status !== "routed") return "went on";
  const now = Date.now();
  await Promise.all([
    insertTrace(platform.db, [
      { account_id: accountId, call_id: call.id, at_ms: now, step: "edge", result: "the edge stopped waiting for this reply and refused the call (503): never placed", data: null },
    ]),
    // The account's operators see it too (GET /v1/logs): a sign the control plane answers the edge too slowly.
    recordLog(platform.db, {
      accountId,
      level: "warn",
      source: "edge",
      callId: call.id,
      message: "The edge stopped waiting for this call's routing reply and refused it (503): it was ended as not placed.",
      data: { sip_call_id: sipCallId, to: call.to },
      ts: now,
    }),
  ]);
  await handleDialogEvent(platform, { type: "dialog", callId: sipCallId, record_id: call.id, account_id: accountId, state: "terminated", sip_code: 503, hangup_cause: "NORMAL_TEMPORARY_FAILURE" });
  return "ended";
}

const writers = new WeakMap<Platform, AdmissionWriter>();

/** The platform's admission writer (admitted calls are written together under load). */
function writerOf(platform: Platform): AdmissionWriter {
  let writer = writers.get(platform);
  if (!writer) {
    writer = createAdmissionWriter(platform);
    writers.set(platform, writer);
  }
  return writer;
}
