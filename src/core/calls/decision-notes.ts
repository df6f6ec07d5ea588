/**
 * What the account log (GET /v1/logs) says about routing decisions: the refusals an account's own
 * rules and limits make, and soft call limits exceeded, at most one line a minute per kind, so a
 * flood of refusals stays readable; and every emergency call, each a line of its own. Each call's own record and trace say everything else.
 */
import type { Platform } from "../platform.ts";
import type { RouteReply, TraceStep } from "../routing/route-types.ts";
import { recordLog } from "../logs/logs.service.ts";

/**
 * Refusal codes that mean one of the account's own rules or limits said no, which its operators want
 * to see in the account log: policies (ACL, geo, call limits, the toll-fraud gate, an inactive
 * account) 403, anonymity 433, capacity or no outbound route 503, do-not-call 603. A busy or
 * unregistered user, an unknown number and the like are ordinary outcomes (the call records say them).
 */
const NOTED_CODES = new Set([403, 433, 503, 603]);
/** At most one line per account and kind of note per this long, per instance (a flood of refusals is one line a minute). */
const NOTE_EVERY_MS = 60_000;
const noted = new WeakMap<Platform, Map<string, number>>();

/** True when no line of this kind was written for the account within NOTE_EVERY_MS (and claims it). */
function dueNote(platform: Platform, key: string, now: number): boolean {
  let seen = noted.get(platform);
  if (!seen) {
    seen = new Map();
    noted.set(platform, seen);
  }
  const last = seen.get(key);
  if (last !== undefined && now - last < NOTE_EVERY_MS) return false;
  if (seen.size >= 10_000) for (const [k, at] of seen) if (now - at >= NOTE_EVERY_MS) seen.delete(k);
  seen.set(key, now);
  return true;
}

/**
 * The account log's line for a decision worth an operator's attention: a call refused by the
 * account's rules or limits, or a soft call limit exceeded (the call went on). Rate-limited per kind.
 * @example await noteDecision(platform, call, steps, reply) // a 603 do-not-call refusal: one warn line
 */
export async function noteDecision(platform: Platform, call: { account_id: string; id: string; from: string; to: string; direction: string }, steps: readonly TraceStep[], reply: RouteReply): Promise<void> {
  const now = Date.now();
  const who = `Call from ${call.from || "anonymous"} to ${call.to}`;
  const later = "Others like it in the next minute are not logged here; GET /v1/calls lists every call.";
  const notes: Array<{ key: string; message: string; data: Record<string, unknown> }> = [];
  const code = reply.rtjson.code;
  if (reply.rtjson.action === "reject" && code !== undefined && NOTED_CODES.has(code)) {
    const cac = steps.find((s) => s.step === "cac" && s.result.startsWith("refused"));
    const rejected = steps.find((s) => s.step === "reject");
    const why = cac ? cac.result.replace(/^refused: /, "") : (rejected?.result.replace(/^\d+ [^:]*: /, "") ?? "");
    if (code !== 603 || why.startsWith("do not call")) {
      notes.push({
        key: `refused ${code}`,
        message: `${who} refused (${code} ${reply.rtjson.reason ?? ""}): ${why}. ${later}`,
        data: { code, direction: call.direction, from: call.from, to: call.to },
      });
    }
  }
  // Every emergency call, placed or not (refused before routing too: a source-address rule, a PBX that
  // may not call out): its own line, never folded into a minute's.
  // The number as dialled, separators aside (9-1-1).
  const dialled = call.to.replace(/[\s().-]/g, "");
  if (steps.some((s) => s.step === "emergency") || platform.config.routing.emergencyNumbers.includes(dialled)) {
    const placed = reply.rtjson.action !== "reject";
    // Why it was refused, from the trace: an address rule or the toll-fraud gate before routing, no
    // route after it (then where to look).
    const rejected = steps.find((s) => s.step === "reject")?.result.replace(/^\d+ [^:]*: /, "");
    const why = placed ? "" : `: ${rejected ?? "refused"}${code === 503 ? `; check the outbound routes and trunks for ${dialled}` : ""}`;
    notes.push({
      key: `emergency ${call.id}`,
      message: `Emergency call from ${call.from || "anonymous"} to ${dialled} ${placed ? "placed" : `refused (${code ?? 0} ${reply.rtjson.reason ?? ""})${why}`}.`,
      data: { emergency: true, placed, direction: call.direction, from: call.from, to: call.to },
    });
  }
  for (const step of steps) {
    const limit = step.step === "call_limit" && step.data?.soft === true ? step.result.replace(/^warning: /, "") : null;
    if (limit) notes.push({ key: `soft ${limit.split(" soft limit")[0]}`, message: `${who}: ${limit}. ${later}`, data: { direction: call.direction, from: call.from, to: call.to } });
  }
  for (const note of notes) {
    if (!dueNote(platform, `${call.account_id}\u0000${note.key}`, now)) continue;
    await recordLog(platform.db, { accountId: call.account_id, level: "warn", source: "platform", callId: call.id, message: note.message, data: note.data, ts: now });
  }
}
