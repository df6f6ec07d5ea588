/**
 * The agent state machine. What the agent chose (`base`: logged_out, ready, paused, wrap_up) is kept
 * apart from what the calls say; the state everyone sees is derived from both:
 * logged out → logged_out; in a confirmed call → on_call; otherwise the base state.
 * Stored as one JSON value per agent, changed with compare-and-set so two instances cannot
 * interleave a read and a write. Every change of the derived state is emitted as `agent.state`.
 */
import { AppError, validationFailed } from "../errors/app-error.ts";
import type { EventBus } from "../events/bus.ts";
import type { LiveStore } from "../live/live-store.ts";
import type { AgentEventName, AgentStateName } from "./presence.model.ts";
import { presenceKeys } from "./presence-keys.ts";
import { userCallStates } from "./presence.service.ts";

/** What an agent chose; on_call is never chosen, it follows the calls. */
export type AgentBase = "logged_out" | "ready" | "paused" | "wrap_up";

/** One agent's live state as stored. */
export interface AgentLiveState {
  base: AgentBase;
  /** Pause reason while paused. */
  reason: string | null;
  /** Queues named at login. */
  queues: string[];
  /** The derived state last published. */
  state: AgentStateName;
  /** Epoch ms `state` began. */
  since: number;
}

/** A logged-out agent's state is kept this long (for the roster's "since"), then forgotten. */
const LOGGED_OUT_TTL_MS = 7 * 86_400_000;

const INITIAL: Omit<AgentLiveState, "since"> = { base: "logged_out", reason: null, queues: [], state: "logged_out" };

function parseState(raw: string | null): AgentLiveState | null {
  if (raw === null) return null;
  try {
    return JSON.parse(raw) as AgentLiveState;
  } catch {
    // Only this module writes the value; an unreadable one is treated as never logged in.
    return null;
  }
}

/** One agent's live state (null when the agent never logged in or it was forgotten). */
export async function agentLiveState(live: LiveStore, accountId: string, userId: string): Promise<AgentLiveState | null> {
  return parseState(await live.get(presenceKeys.agentState(accountId, userId)));
}

function derive(base: AgentBase, confirmedCalls: number): AgentStateName {
  if (base === "logged_out") return "logged_out";
  return confirmedCalls > 0 ? "on_call" : base;
}

/** What an agent event does to the chosen state; throws when it makes no sense now. */
function nextBase(current: Omit<AgentLiveState, "since">, event: AgentEventName, input: { reason?: string; queues?: string[] }) {
  if (input.reason !== undefined && event !== "pause") throw validationFailed([{ path: "/reason", message: "A reason goes with pause only." }]);
  if (input.queues !== undefined && event !== "login") throw validationFailed([{ path: "/queues", message: "Queues go with login only." }]);
  switch (event) {
    case "login":
      return { base: current.base === "logged_out" ? ("ready" as const) : current.base, reason: current.base === "logged_out" ? null : current.reason, queues: input.queues ?? current.queues };
    case "logout":
      return { base: "logged_out" as const, reason: null, queues: [] };
    case "available":
    case "unpause":
    case "pause":
      if (current.base === "logged_out") throw new AppError("conflict", "The agent is logged out; log in first.");
      return event === "pause"
        ? { base: "paused" as const, reason: input.reason ?? null, queues: current.queues }
        : { base: "ready" as const, reason: null, queues: current.queues };
  }
}

export interface AgentDeps {
  live: LiveStore;
  events: EventBus;
}

/** Thrown inside the event transaction when another change took the state first: rolled back, tried again. */
const CHANGED_MEANWHILE = new Error("agent state changed meanwhile");

/**
 * Applies `change` to the agent's state with compare-and-set (retried on a concurrent change) and
 * emits `agent.state` when the derived state changed. Returns the stored state.
 */
async function updateAgent(
  deps: AgentDeps,
  accountId: string,
  userId: string,
  change: (current: Omit<AgentLiveState, "since">, confirmedCalls: number) => Pick<AgentLiveState, "base" | "reason" | "queues"> | null,
  now: () => number,
  /** The stored state as the caller just read it (the first attempt reads only the calls); a concurrent change still fails the compare-and-set. */
  known?: string | null,
): Promise<AgentLiveState | null> {
  const key = presenceKeys.agentState(accountId, userId);
  for (let attempt = 0; attempt < 20; attempt++) {
    // One round trip: the state and the user's calls are read together.
    const [raw, calls] = await Promise.all([
      attempt === 0 && known !== undefined ? known : deps.live.get(key),
      userCallStates(deps.live, accountId, userId),
    ]);
    const current = parseState(raw) ?? { ...INITIAL, since: now() };
    const next = change(current, calls.confirmed);
    if (next === null) return parseState(raw);
    const state = derive(next.base, calls.confirmed);
    const reasonChanged = next.reason !== current.reason;
    const ts = now();
    const stored: AgentLiveState = { ...next, state, since: state === current.state ? current.since : ts };
    const ttl = stored.base === "logged_out" ? LOGGED_OUT_TTL_MS : undefined;
    const text = JSON.stringify(stored);
    if (!(state !== current.state || (state === "paused" && reasonChanged))) {
      if (!(await deps.live.compareAndSet(key, raw, text, ttl))) continue;
      return stored;
    }
    // The state (live store) and its agent.state event (database) change together: the event is
    // written in a transaction that commits only once the compare-and-set took, and a commit that
    // fails puts the state back. Else a failed write left the state changed without its event, and
    // the client's retry, finding nothing to change, never emitted it.
    const data = { user_id: userId, state, previous_state: current.state, reason: stored.state === "paused" ? stored.reason : null, ts };
    let swapped = false;
    try {
      await deps.events.transaction(async (_tx, emit) => {
        await emit(accountId, "agent.state", data, ts);
        swapped = await deps.live.compareAndSet(key, raw, text, ttl);
        if (!swapped) throw CHANGED_MEANWHILE;
      });
    } catch (error) {
      if (error === CHANGED_MEANWHILE) continue;
      if (swapped) {
        const back = raw === null ? deps.live.compareAndDelete(key, text) : deps.live.compareAndSet(key, text, raw, current.base === "logged_out" ? LOGGED_OUT_TTL_MS : undefined);
        await back.catch(() => false);
      }
      throw error;
    }
    return stored;
  }
  throw new AppError("conflict", "The agent's state is changing too fast; retry.");
}

/**
 * Applies an agent event (login, logout, available, pause, unpause).
 * @example await applyAgentEvent({ live, events }, "acc_…", "us_…", "pause", { reason: "lunch" })
 */
export async function applyAgentEvent(
  deps: AgentDeps,
  accountId: string,
  userId: string,
  event: AgentEventName,
  input: { reason?: string; queues?: string[] } = {},
  now: () => number = Date.now,
): Promise<AgentLiveState> {
  const stored = await updateAgent(deps, accountId, userId, (current) => nextBase(current, event, input), now);
  // updateAgent returns null only when `change` does; ours never does.
  return stored!;
}

/**
 * Logs an agent out because the user can no longer take calls as one (disabled, deleted, no longer an
 * agent): \`agent.state\` says so, and the logged-out state expires on its own. A user who is not
 * logged in is left alone (nothing stored, no event).
 */
export async function retireAgent(deps: AgentDeps, accountId: string, userId: string, now: () => number = Date.now): Promise<void> {
  await updateAgent(deps, accountId, userId, (current) => (current.base === "logged_out" ? null : { base: "logged_out", reason: null, queues: [] }), now);
}

/**
 * Re-derives an agent's state after its calls changed (dialog events): on_call when a confirmed call
 * began, back to the chosen state when the last one ended. Agents who never logged in are left alone.
 */
export async function refreshAgentAfterCalls(deps: AgentDeps, accountId: string, userId: string, now: () => number = Date.now): Promise<void> {
  // Most users in calls are not logged-in agents: one read settles it for them (their call counts,
  // which the update reads with the state, are not needed).
  const raw = await deps.live.get(presenceKeys.agentState(accountId, userId));
  const stored = parseState(raw);
  if (stored === null || stored.base === "logged_out") return;
  await updateAgent(deps, accountId, userId, (current, confirmed) => {
    if (current.base === "logged_out") return null;
    if (derive(current.base, confirmed) === current.state) return null;
    return { base: current.base, reason: current.reason, queues: current.queues };
  }, now, raw);
}

/**
 * Puts an agent into wrap-up (after a queue call, for the queue's wrap_up_sec); `available` ends it.
 * For the ACD, which owns wrap-up timing.
 */
export async function startWrapUp(deps: AgentDeps, accountId: string, userId: string, now: () => number = Date.now): Promise<void> {
  await updateAgent(deps, accountId, userId, (current) => (current.base === "logged_out" ? null : { base: "wrap_up", reason: null, queues: current.queues }), now);
}
