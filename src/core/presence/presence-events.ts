/**
 * Use cases of POST /presence/event (register, dialog, agent) and GET /presence/users (the roster).
 */
import { AppError, notFound, validationFailed } from "../errors/app-error.ts";
import type { Platform } from "../platform.ts";
import { handleDialogEvent } from "../calls/dialog.ts";
import type { PresenceModel } from "./presence.model.ts";
import { accountRegistrations, applyRegistration, endDialog, trackDialog, userCallStates } from "./presence.service.ts";
import {
  accountExists,
  existingUserIds,
  findPresenceUser,
  findRegisteringDevice,
  listRosterUsers,
  missingQueueIds,
  ownersOfDevices,
} from "./presence.store.ts";
import { agentLiveState, applyAgentEvent, refreshAgentAfterCalls } from "./agent-state.ts";
import { parseIp } from "../net/cidr.ts";

/** Optional clock for tests that inject short expiries (epoch ms). */
export interface PresenceClock {
  now?: () => number;
}

/**
 * A REGISTER the edge accepted: stores (expires > 0) or removes (expires 0) the binding.
 * 404 for a device that is not the account's; 403 when device or account is not active (unregister always passes).
 */
export async function handleRegister(platform: Platform, input: PresenceModel.Register, clock: PresenceClock = {}): Promise<void> {
  const device = await findRegisteringDevice(platform.db, input.account_id, input.device_id);
  if (!device) throw notFound("device");
  if (input.user_id !== undefined && input.user_id !== device.user_id) {
    throw validationFailed([{ path: "/user_id", message: "Not the user of this device." }]);
  }
  if (input.source_ip !== undefined && !parseIp(input.source_ip)) throw validationFailed([{ path: "/source_ip", message: "Not an IP address." }]);
  if (input.expires > 0 && (device.device_status !== "active" || device.account_status !== "active")) {
    throw new AppError("forbidden", "This device may not register.");
  }
  await applyRegistration(
    platform.live,
    {
      account_id: input.account_id,
      user_id: device.user_id,
      device_id: input.device_id,
      contact: input.contact,
      expires: input.expires,
      webrtc: device.is_webrtc === 1 ? 1 : 0,
      user_agent: input.user_agent ?? null,
      transport: input.transport?.toLowerCase() ?? null,
      source_ip: input.source_ip ?? null,
      received: input.received ?? null,
      path: input.path ?? null,
      socket: input.socket ?? null,
    },
    clock.now?.() ?? Date.now(),
  );
}

/**
 * A dialog's lifecycle: keeps per-user call counts and agents' on_call state, then hands the event to
 * the call record (`handleDialogEvent`). Legs naming unknown users are skipped, not refused: the call
 * record must still get the event (a user may be deleted mid-call).
 */
export async function handleDialog(platform: Platform, event: PresenceModel.Dialog, clock: PresenceClock = {}): Promise<void> {
  const accountId = event.account_id;
  if (accountId !== undefined) {
    if (!(await accountExists(platform.db, accountId))) throw notFound("account");
    const legs = event.legs ?? [];
    const named = [...new Set(legs.map((l) => l.user_id).filter((u): u is string => typeof u === "string" && u.length > 0))];
    const deviceOnly = [...new Set(legs.filter((l) => !l.user_id && l.device_id).map((l) => l.device_id!))];
    const known = await existingUserIds(platform.db, accountId, named);
    const owners = await ownersOfDevices(platform.db, accountId, deviceOnly);
    const users = [...new Set([...named.filter((u) => known.has(u)), ...owners.values()])];
    const now = clock.now ?? Date.now;
    let touched: string[];
    if (event.state === "terminated") touched = await endDialog(platform.live, accountId, event.callId, users);
    else {
      await trackDialog(platform.live, accountId, event.callId, event.state, users, now());
      touched = users;
    }
    const deps = { live: platform.live, events: platform.events };
    for (const userId of touched) await refreshAgentAfterCalls(deps, accountId, userId, now);
  }
  await handleDialogEvent(platform, event);
}

/** An agent's own state change. 404 for a user not in the account or a queue not in it; 400 for a non-agent. */
export async function handleAgent(platform: Platform, input: PresenceModel.Agent, clock: PresenceClock = {}): Promise<void> {
  const user = await findPresenceUser(platform.db, input.account_id, input.user_id);
  if (!user) throw notFound("user");
  if (user.is_agent !== 1) throw validationFailed([{ path: "/user_id", message: "This user is not an agent (is_agent is 0)." }]);
  if (user.status !== "active" && input.event !== "logout") throw new AppError("forbidden", "This user is disabled.");
  const queues = input.queues ? [...new Set(input.queues)] : undefined;
  if (queues) {
    const missing = await missingQueueIds(platform.db, input.account_id, queues);
    if (missing.length) throw notFound("queue");
  }
  await applyAgentEvent(
    { live: platform.live, events: platform.events },
    input.account_id,
    input.user_id,
    input.event,
    { ...(input.reason !== undefined ? { reason: input.reason } : {}), ...(queues ? { queues } : {}) },
    clock.now ?? Date.now,
  );
}

/**
 * The presence roster of an account with its status tiles. One database read and one live read per
 * user (pipelined by the Redis client), fine for accounts of a few thousand users.
 */
export async function presenceRoster(platform: Platform, accountId: string, clock: PresenceClock = {}): Promise<{ data: PresenceModel.RosterUser[]; tiles: PresenceModel.Roster["tiles"] }> {
  if (!(await accountExists(platform.db, accountId))) throw notFound("account");
  const now = clock.now?.() ?? Date.now();
  const [users, registrations] = await Promise.all([listRosterUsers(platform.db, accountId), accountRegistrations(platform.live, accountId, now)]);
  const live = await Promise.all(
    users.map(async (u) => {
      const [calls, agent] = await Promise.all([userCallStates(platform.live, accountId, u.id, now), u.is_agent === 1 ? agentLiveState(platform.live, accountId, u.id) : null]);
      return { calls, agent };
    }),
  );
  const tiles = { total: users.length, registered: 0, offline: 0, on_call: 0, ready: 0, paused: 0, logged_out: 0 };
  const data = users.map((u, i): PresenceModel.RosterUser => {
    const reg = registrations.get(u.id);
    const { calls, agent } = live[i]!;
    const registered = reg ? 1 : 0;
    const onCall = calls.confirmed > 0 ? 1 : 0;
    const status = onCall ? "on_call" : calls.early > 0 ? "ringing" : registered ? "available" : "offline";
    const agentState = u.is_agent === 1 ? (agent?.state ?? "logged_out") : null;
    if (registered) tiles.registered += 1;
    else tiles.offline += 1;
    if (onCall) tiles.on_call += 1;
    if (agentState === "ready") tiles.ready += 1;
    if (agentState === "paused") tiles.paused += 1;
    if (agentState === "logged_out") tiles.logged_out += 1;
    return {
      id: u.id,
      name: u.name,
      extension: u.extension,
      status,
      user_status: u.user_status === "disabled" ? "disabled" : "active",
      is_agent: u.is_agent === 1 ? 1 : 0,
      registered,
      contacts: reg?.contacts ?? 0,
      devices_registered: reg?.devices.size ?? 0,
      on_call: onCall,
      calls: calls.early + calls.confirmed,
      agent_state: agentState,
      since: agentState === null ? null : (agent?.since ?? null),
      reason: agent?.state === "paused" ? agent.reason : null,
    };
  });
  return { data, tiles };
}
