/**
 * Calls whose end the edge never reported: a BYE lost on the way, an edge restarted with dialog
 * events still in its queue, an edge that died with its dialogs. Their CAC slots already free
 * themselves after the call ceiling (CAC_MAX_CALL_SEC, counted from the answer, else the start);
 * this closes their records at that same deadline, so reports, /v1/live and integrations (call.ended)
 * do not wait forever for a call that is over. Such a call ends with hangup cause
 * RECOVERY_ON_TIMER_EXPIRE (Q.850 102) and is not billed (billsec 0, no cost): its real length is
 * unknown, and billing the ceiling could charge hours for a short call whose BYE was lost. An end
 * reported later changes nothing (ended once).
 */
import type { Platform } from "../platform.ts";
import { describeError } from "../../http/describe-error.ts";
import { cacTtlMs } from "./cac-config.ts";
import { findStaleCalls } from "./calls.store.ts";
import { handleDialogs } from "../presence/presence-events.ts";

export const LOST_END_CAUSE = "RECOVERY_ON_TIMER_EXPIRE";

/** Calls closed per statement; a sweep takes at most MAX_ROUNDS of them. */
const BATCH = 500;
const MAX_ROUNDS = 20;

/**
 * Closes every open call past its deadline at `now`; returns how many it closed. Safe to run on
 * every instance at once: ending is conditional, so each call ends (and emits call.ended) once.
 * @example await endStaleCalls(platform) // 0 on a healthy system
 */
export async function endStaleCalls(platform: Platform, now: number = Date.now()): Promise<number> {
  const ttl = cacTtlMs(platform);
  let closed = 0;
  for (let round = 0; round < MAX_ROUNDS; round++) {
    const stale = await findStaleCalls(platform.db, now - ttl, BATCH);
    if (!stale.length) break;
    // As the edge's own end would: the record, CAC slots, and the users' live call state (agents
    // leave on_call).
    const refused = await handleDialogs(
      platform,
      stale.map((call) => ({
        type: "dialog" as const,
        callId: call.sip_call_id,
        record_id: call.id,
        account_id: call.account_id,
        state: "terminated" as const,
        hangup_cause: LOST_END_CAUSE,
        ts: (call.answered_ms ?? call.started_ms) + ttl,
      })),
      {},
      { unbilled: true, now },
    );
    // A call of an account that is gone is refused (its record goes with the account).
    closed += refused.filter((r) => r === null).length;
    if (stale.length < BATCH) break;
  }
  if (closed) platform.log.warn("calls closed without a reported end", { calls: closed, cause: LOST_END_CAUSE });
  return closed;
}

/**
 * Runs {@link endStaleCalls} every `everyMs` (default a minute) until stopped.
 * @example const sweeper = startStaleCallSweeper(platform); … sweeper.stop();
 */
export function startStaleCallSweeper(platform: Platform, everyMs = 60_000): { stop(): void } {
  let running = false;
  const timer = setInterval(() => {
    if (running) return;
    running = true;
    endStaleCalls(platform)
      .catch((error) => platform.log.warn("stale call sweep failed", { error: describeError(error) }))
      .finally(() => (running = false));
  }, everyMs);
  timer.unref();
  return { stop: () => clearInterval(timer) };
}
