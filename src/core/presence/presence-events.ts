/**
 * Use cases of POST /presence/event (register, dialog, agent) and GET /presence/users (the roster).
 */
import { AppError, notFound, validationFailed } from "../errors/app-error.ts";
import type { Platform } from "../platform.ts";
import { handleDialogEvents, type EndOptions } from "../calls/dialog.ts";
import { callPartiesBySipIds } from "../calls/calls.store.ts";
import type { PresenceModel } from "./presence.model.ts";
import { accountRegistrations, applyRegistration, applyTrunkRegistration, endDialog, forgetDevice, forgetTrunk, leaveDialog, trackDialog, userCallStates } from "./presence.service.ts";
import { findTrunkStatus } from "../trunks/trunks.store.ts";
import {
  accountExists,
  deviceOwners,
  existingAccountIds,
  existingUserKeys,
  findPresenceUser,
  findRegisteringDevice,
  listRosterUsers,
  missingQueueIds,
} from "./presence.store.ts";
import { agentLiveState, applyAgentEvent, refreshAgentAfterCalls } from "./agent-state.ts";

/** Optional clock for tests that inject short expiries (epoch ms). */
export interface PresenceClock {
  now?: () => number;
}

/**
 * A REGISTER the edge accepted: stores (expires > 0) or removes (expires 0) the binding.
 * 404 for a device that is not the account's; 403 when the device, its user or the account is not
 * active, as /auth refuses them (unregister always passes).
 */
export async function handleRegister(platform: Platform, input: PresenceModel.Register, clock: PresenceClock = {}): Promise<void> {
  if ((input.device_id === undefined) === (input.trunk_id === undefined)) {
    throw validationFailed([{ path: input.device_id === undefined ? "/device_id" : "/trunk_id", message: "Name the device or the trunk that registered (one of device_id, trunk_id)." }]);
  }
  if (input.trunk_id !== undefined) return handleTrunkRegister(platform, { ...input, trunk_id: input.trunk_id }, clock);
  const deviceId = input.device_id!;
  const device = await findRegisteringDevice(platform.db, input.account_id, deviceId);
  if (!device) throw notFound("device");
  if (input.user_id !== undefined && input.user_id !== device.user_id) {
    throw validationFailed([{ path: "/user_id", message: "Not the user of this device." }]);
  }
  if (input.contact === "*") {
    // `Contact: *` (RFC 3261 10.2.2): remove every binding of the device; only with expires 0.
    checkWildcard(input);
    await forgetDevice(platform.live, input.account_id, device.user_id, deviceId, clock.now?.() ?? Date.now());
    return;
  }
  const bindings = bindingsOf(input);
  if (bindings.some((b) => b.expires > 0) && (device.device_status !== "active" || device.user_status !== "active" || device.account_status !== "active")) {
    throw new AppError("forbidden", "This device may not register.");
  }
  const now = clock.now?.() ?? Date.now();
  for (const binding of bindings) {
    await applyRegistration(platform.live, { account_id: input.account_id, user_id: device.user_id, device_id: deviceId, webrtc: device.is_webrtc === 1 ? 1 : 0, ...binding }, now);
  }
}

/** `Contact: *` removes every binding, with expires 0 and alone (RFC 3261 10.2.2). */
function checkWildcard(input: PresenceModel.Register): void {
  if (input.expires !== 0) throw validationFailed([{ path: "/contact", message: "* removes every binding: send it with expires 0." }]);
  if (input.contacts?.length) throw validationFailed([{ path: "/contacts", message: "* removes every binding: send it alone." }]);
}

/**
 * The bindings a register event asks for, as presence keeps them (a device's or a trunk's): its
 * Contact, then the REGISTER's further ones, each with its own lifetime and NAT source and the rest
 * shared (one REGISTER: one transport, source, socket and User-Agent).
 */
function bindingsOf(input: PresenceModel.Register) {
  const shared = {
    user_agent: input.user_agent ?? null,
    transport: input.transport?.toLowerCase() ?? null,
    source_ip: input.source_ip ?? null,
    path: input.path ?? null,
    socket: input.socket ?? null,
  };
  return [
    { ...shared, contact: input.contact, expires: input.expires, received: input.received ?? null },
    ...(input.contacts ?? []).map((c) => ({ ...shared, contact: c.contact, expires: c.expires, received: c.received ?? null })),
  ];
}

/**
 * A trunk's REGISTER (a customer PBX with inbound_auth register): 404 for a trunk that is not the
 * account's, 403 when it may not register (not active, its account not active, not a register trunk,
 * outbound only), as /auth refuses it; unregistering always passes.
 */
async function handleTrunkRegister(platform: Platform, input: PresenceModel.Register & { trunk_id: string }, clock: PresenceClock): Promise<void> {
  if (input.user_id !== undefined) throw validationFailed([{ path: "/user_id", message: "A trunk has no user." }]);
  const trunk = await findTrunkStatus(platform.db, input.account_id, input.trunk_id);
  if (!trunk) throw notFound("trunk");
  const now = clock.now?.() ?? Date.now();
  if (input.contact === "*") {
    checkWildcard(input);
    await forgetTrunk(platform.live, input.account_id, input.trunk_id, now);
    return;
  }
  const bindings = bindingsOf(input);
  if (bindings.some((b) => b.expires > 0) && (trunk.status !== "active" || trunk.account_status !== "active" || trunk.inbound_auth !== "register" || trunk.direction === "outbound")) {
    throw new AppError("forbidden", "This trunk may not register.");
  }
  for (const binding of bindings) await applyTrunkRegistration(platform.live, { account_id: input.account_id, trunk_id: input.trunk_id, ...binding }, now);
}

/**
 * A dialog's lifecycle: keeps per-user call counts and agents' on_call state, then hands the event to
 * the call record (`handleDialogEvents`). Legs naming unknown users are skipped, not refused: the call
 * record must still get the event (a user may be deleted mid-call). 404 for an unknown account.
 */
export async function handleDialog(platform: Platform, event: PresenceModel.Dialog, clock: PresenceClock = {}): Promise<void> {
  const [refusal] = await handleDialogs(platform, [event], clock);
  if (refusal) throw refusal;
}

/** Who a leg names: a user (by id), a device only, or nobody. */
function legRef(leg: NonNullable<PresenceModel.Dialog["legs"]>[number]): { user: boolean; id: string } | null {
  if (typeof leg.user_id === "string" && leg.user_id.length > 0) return { user: true, id: leg.user_id };
  return leg.device_id ? { user: false, id: leg.device_id } : null;
}

/**
 * Dialog events as a set (a batch from the edge): each call's events in the order given, different
 * calls side by side; the database reads and writes are shared by the whole set (a fixed number of
 * statements per round, see handleDialogEvents). Returns, per event, the error that refused it (an
 * unknown account: nothing of it is done) or null. Any other failure throws.
 */
export async function handleDialogs(
  platform: Platform,
  given: PresenceModel.Dialog[],
  clock: PresenceClock = {},
  options: EndOptions = {},
): Promise<Array<AppError | null>> {
  const key = (accountId: string, id: string) => `${accountId}\u0000${id}`;
  const fromRecord = await withCallParties(platform, given);
  const events = fromRecord.events;
  const accountIds = [...new Set(events.flatMap((e) => (e.account_id !== undefined ? [e.account_id] : [])))];
  // The accounts, and the users each event's legs name (known ones) or own (legs with a device
  // only), read together (an unknown account has no users to find).
  type Keyed = PresenceModel.Dialog & { account_id: string };
  const named = new Map<string, { account_id: string; id: string }>();
  const deviceOnly = new Map<string, { account_id: string; id: string }>();
  for (const e of events) {
    if (e.account_id === undefined) continue;
    for (const leg of e.legs ?? []) {
      const ref = legRef(leg);
      if (ref) (ref.user ? named : deviceOnly).set(key(e.account_id, ref.id), { account_id: e.account_id, id: ref.id });
    }
  }
  const [accounts, known, owners] = await Promise.all([
    existingAccountIds(platform.db, accountIds, platform.configCache),
    existingUserKeys(platform.db, [...named.values()], platform.configCache),
    deviceOwners(platform.db, [...deviceOnly.values()], platform.configCache),
  ]);
  const refusals = events.map((e) => (e.account_id !== undefined && !accounts.has(e.account_id) ? notFound("account") : null));
  const accepted = events.filter((_, i) => refusals[i] === null);
  const keyed = accepted.filter((e): e is Keyed => e.account_id !== undefined);
  /** Users read above that are not agents: their calls change no agent state (no live read for them). */
  const notAgents = new Set<string>();
  for (const [k, u] of known) if (u.is_agent !== 1) notAgents.add(k);
  for (const [k, o] of owners) if (o.is_agent === 0) notAgents.add(key(k.slice(0, k.indexOf("\u0000")), o.user_id));
  const usersOf = (e: Keyed) => {
    const recorded = fromRecord.users.get(e);
    if (recorded) return recorded;
    const users = new Set<string>();
    for (const leg of e.legs ?? []) {
      const ref = legRef(leg);
      const user = !ref ? undefined : ref.user ? (known.has(key(e.account_id, ref.id)) ? ref.id : undefined) : owners.get(key(e.account_id, ref.id))?.user_id;
      if (user) users.add(user);
    }
    return [...users];
  };

  // Live state: each call's events in order, calls side by side; the call records meanwhile (the
  // two touch nothing of each other's).
  const now = clock.now ?? Date.now;
  const deps = { live: platform.live, events: platform.events };
  const calls = new Map<string, Keyed[]>();
  for (const e of keyed) {
    const k = key(e.account_id, e.callId);
    const list = calls.get(k);
    if (list) list.push(e);
    else calls.set(k, [e]);
  }
  // A dialog is tracked only for a call Parley routed (it has a record): one it never saw, made up or
  // from another system, would make its users look busy (486) for hours. The call records' first read
  // tells; an end is always applied (it only clears).
  let callsRead!: (recorded: ReadonlySet<string>) => void;
  const recorded = new Promise<ReadonlySet<string>>((resolve) => (callsRead = resolve));
  const records = handleDialogEvents(platform, accepted, { ...options, knownUsers: known, onCallsRead: callsRead }).finally(() => callsRead(new Set()));
  await Promise.all([
    records,
    ...[...calls.values()].map(async (sequence) => {
      const routed = (await recorded).has(key(sequence[0]!.account_id, sequence[0]!.callId));
      for (const event of sequence) {
        const users = usersOf(event);
        let touched = users;
        // A dialog is its call record's (the edge names it): a new INVITE under a Call-ID used before
        // (a retry after 422, a phone that reuses them) is a call of its own, not one already ended.
        const dialogId = event.record_id ?? event.callId;
        if (event.state === "terminated") touched = await endDialog(platform.live, event.account_id, dialogId, users, event.callId);
        else if (!routed) continue;
        else {
          await trackDialog(platform.live, event.account_id, dialogId, event.state, users, now());
          // After the edge's failover the user it rang is out of the call (its legs name them no more).
          if (event.failover && event.legs) touched = [...users, ...(await leaveDialog(platform.live, event.account_id, dialogId, users))];
        }
        const agents = touched.filter((userId) => !notAgents.has(key(event.account_id, userId)));
        await Promise.all(agents.map((userId) => refreshAgentAfterCalls(deps, event.account_id, userId, now)));
      }
    }),
  ]);
  return refusals;
}

/**
 * Dialog events that name no account, or (before the end) no legs, completed from their call records:
 * the account of the call with that Call-ID (the newest, when the event names none), and as the users
 * on the call the one who placed it and the one it rings (early) or who answered (confirmed). Without
 * this such an event updated the call record but not presence: its users looked free while on the call,
 * or (an end without account) stayed on a call that had ended and were refused 486 after. The shipped
 * edge names both, so its events read nothing here.
 */
async function withCallParties(
  platform: Platform,
  events: PresenceModel.Dialog[],
): Promise<{ events: PresenceModel.Dialog[]; users: Map<PresenceModel.Dialog, string[]> }> {
  const users = new Map<PresenceModel.Dialog, string[]>();
  const incomplete = (e: PresenceModel.Dialog) => e.account_id === undefined || (e.state !== "terminated" && !e.legs?.length);
  if (!events.some(incomplete)) return { events, users };
  const parties = await callPartiesBySipIds(platform.db, [...new Set(events.filter(incomplete).map((e) => e.callId))]);
  const completed = events.map((e) => {
    if (!incomplete(e)) return e;
    // Newest first: the event's own account's call, or the newest call with that Call-ID.
    const call = parties.find((p) => p.sip_call_id === e.callId && (e.account_id === undefined || p.account_id === e.account_id));
    if (!call) return e;
    const event = e.account_id === undefined ? { ...e, account_id: call.account_id } : e;
    if (e.state !== "terminated" && !e.legs?.length) {
      const callee = e.state === "early" ? call.routed_user : (call.agent_id ?? call.routed_user);
      users.set(event, [...new Set([call.user_id, callee].filter((u): u is string => u !== null))]);
    }
    return event;
  });
  return { events: completed, users };
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
  return rosterOf(platform, accountId, {}, clock);
}

/**
 * The account's agents as the roster shows them (agent state, since, pause reason, calls,
 * registration): the agents of GET /v1/live. One live read per agent only.
 */
export async function liveAgents(platform: Platform, accountId: string, clock: PresenceClock = {}): Promise<PresenceModel.RosterUser[]> {
  return (await rosterOf(platform, accountId, { agentsOnly: true }, clock)).data;
}

async function rosterOf(
  platform: Platform,
  accountId: string,
  options: { agentsOnly?: boolean },
  clock: PresenceClock,
): Promise<{ data: PresenceModel.RosterUser[]; tiles: PresenceModel.Roster["tiles"] }> {
  const now = clock.now?.() ?? Date.now();
  const [users, registrations] = await Promise.all([listRosterUsers(platform.db, accountId, options), accountRegistrations(platform.live, accountId, now)]);
  const live = await Promise.all(
    users.map(async (u) => {
      const [calls, agent] = await Promise.all([userCallStates(platform.live, accountId, u.id, now), u.is_agent === 1 ? agentLiveState(platform.live, accountId, u.id) : null]);
      return { calls, agent };
    }),
  );
  const tiles = { total: users.length, registered: 0, offline: 0, on_call: 0, ready: 0, paused: 0, logged_out: 0 };
  const data = users.map((u, i): PresenceModel.RosterUser => {
    // A disabled user is neither reachable nor an agent taking calls, whatever is still stored.
    const disabled = u.user_status === "disabled";
    const reg = disabled ? undefined : registrations.get(u.id);
    const { calls, agent: stored } = live[i]!;
    const agent = disabled ? null : stored;
    const registered = reg ? 1 : 0;
    const onCall = calls.confirmed > 0 ? 1 : 0;
    const status = onCall ? "on_call" : calls.early > 0 ? "ringing" : registered ? "available" : "offline";
    const agentState = u.is_agent === 1 ? (agent?.state ?? "logged_out") : null;
    if (registered) tiles.registered += 1;
    if (status === "offline") tiles.offline += 1;
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
