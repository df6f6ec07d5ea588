/**
 * Presence: SIP registrations (where a user can be reached), live call counts per user, and the
 * agent state machine. All of it is live state (the live store), never the database: it is
 * rebuilt by the edge's next REGISTER and expires on its own.
 */
import type { LiveStore } from "../live/live-store.ts";
import { accountMember, parseAccountMember, presenceKeys, userMember } from "./presence-keys.ts";

/** One registered binding (Contact) of a user's device, as the router needs it. */
export interface RegisteredContact {
  device_id: string;
  user_id: string;
  /** The Contact URI the device registered. */
  contact: string;
  /** Where the REGISTER really came from (NAT: `sip:ip:port;transport=…`), when the edge saw it differ. */
  received: string | null;
  /** The Path header (RFC 3327), for devices behind another proxy or an outbound edge node. */
  path: string | null;
  /** The edge socket the REGISTER arrived on (`udp:1.2.3.4:5060`), to send requests out the same way. */
  socket: string | null;
  transport: string | null;
  user_agent: string | null;
  source_ip: string | null;
  /** When the binding expires, epoch ms. */
  expires_at: number;
  /** 1 when the device is a WebRTC endpoint (from the device record). */
  webrtc: 0 | 1;
}

/** What is stored per binding; `expires_at` comes from the sorted-set score, the only truth about expiry. */
type StoredContact = Omit<RegisteredContact, "expires_at">;

/** At most this many live bindings per device; a new one beyond it evicts the soonest-expiring. */
export const MAX_CONTACTS_PER_DEVICE = 10;

/** Longest registration lifetime accepted (s); typical registrars cap at 3600. */
export const MAX_REGISTER_EXPIRES_SEC = 86_400;

/** Keys outlive their last binding by this much, so a late read still finds an orderly (empty) state. */
const KEY_SLACK_MS = 60_000;

/**
 * The live (unexpired) bindings of one user, soonest-to-expire first. Two live-store reads, sent
 * together (one round trip). The router calls this for every call to a user.
 * @example const contacts = await userContacts(platform.live, "acc_…", "us_…"); // [] when offline
 */
export async function userContacts(live: LiveStore, accountId: string, userId: string, now: number = Date.now()): Promise<RegisteredContact[]> {
  const [scored, info] = await Promise.all([
    live.zrangeByScore(presenceKeys.userContacts(accountId, userId), now + 1, Infinity),
    live.hgetall(presenceKeys.userContactInfo(accountId, userId)),
  ]);
  if (!scored.length) return [];
  const out: RegisteredContact[] = [];
  for (const { member, score } of scored) {
    const raw = info[member];
    if (raw === undefined) continue; // a binding whose detail is being written or was just removed
    const stored = parseStored(raw);
    if (stored) out.push({ ...stored, expires_at: score });
  }
  return out;
}

/** A dialog is forgotten after this long even if its end was never reported (a lost BYE cannot pin a user forever). */
export const MAX_DIALOG_MS = 12 * 3_600_000;

/** Dialogs one user is in, by state. */
export interface UserCallStates {
  early: number;
  confirmed: number;
}

/** Entries first seen before this are stale (epoch ms, at least 1 so the score's sign stays the state). */
function staleBefore(now: number): number {
  return Math.max(1, now - MAX_DIALOG_MS);
}

/**
 * Dialogs of a user, counted by state (entries first seen more than {@link MAX_DIALOG_MS} ago ignored).
 * Two counts in one round trip, whatever the number of calls the user holds.
 */
export async function userCallStates(live: LiveStore, accountId: string, userId: string, now: number = Date.now()): Promise<UserCallStates> {
  const key = presenceKeys.userDialogs(accountId, userId);
  const since = staleBefore(now);
  const [early, confirmed] = await Promise.all([live.zcount(key, -Infinity, -since), live.zcount(key, since, Infinity)]);
  return { early, confirmed };
}

/**
 * How many dialogs (calls, ringing or answered) the user is in right now, from dialog events. One read.
 * @example await userCallCount(platform.live, "acc_…", "us_…") // 0 when idle
 */
export async function userCallCount(live: LiveStore, accountId: string, userId: string): Promise<number> {
  const states = await userCallStates(live, accountId, userId);
  return states.early + states.confirmed;
}

/**
 * Records that `userIds` are in dialog `callId` (early or confirmed; the id of the call's record when
 * the edge names it, else its Call-ID). A confirmed dialog is never
 * downgraded by a late early event, and a dialog already reported terminated is not revived by a
 * late one (edge workers can reorder events). One live-store round trip whatever the number of
 * users; stale entries (a lost end) are dropped on the way.
 */
export async function trackDialog(live: LiveStore, accountId: string, callId: string, state: "early" | "confirmed", userIds: string[], now: number = Date.now()): Promise<void> {
  if (!userIds.length) return;
  // One atomic step (a script on Redis): the time first seen is kept through the states, the score's
  // sign is the state.
  await live.markDialog({
    endedKey: presenceKeys.dialogEnded(accountId, callId),
    usersKey: presenceKeys.dialogUsers(accountId, callId),
    userKeys: userIds.map((userId) => presenceKeys.userDialogs(accountId, userId)),
    users: userIds,
    member: callId,
    confirmed: state === "confirmed",
    now,
    ttlMs: MAX_DIALOG_MS,
  });
}

/**
 * Ends dialog `dialogId` for every user it touched (and `extraUserIds`); returns those users. Two
 * live-store round trips: the end mark with the dialog's users, then every user's entry at once.
 * `legacyId`: the name an instance of an earlier version tracked the dialog by (its Call-ID): its users
 * are read and their entries under it dropped in the same round trips (one command more each way).
 */
export async function endDialog(live: LiveStore, accountId: string, dialogId: string, extraUserIds: string[], legacyId?: string): Promise<string[]> {
  const legacy = legacyId !== undefined && legacyId !== dialogId ? legacyId : null;
  const keys = legacy === null ? [presenceKeys.dialogUsers(accountId, dialogId)] : [presenceKeys.dialogUsers(accountId, dialogId), presenceKeys.dialogUsers(accountId, legacy)];
  const [, ...members] = await Promise.all([live.set(presenceKeys.dialogEnded(accountId, dialogId), "1", 3_600_000), ...keys.map((k) => live.smembers(k))]);
  const users = [...new Set([...members.flat(), ...extraUserIds])];
  const names = legacy === null ? [dialogId] : [dialogId, legacy];
  await Promise.all([...users.map((userId) => live.zrem(presenceKeys.userDialogs(accountId, userId), ...names)), live.del(...keys)]);
  return users;
}

/**
 * Takes out of dialog `callId` the users it touched that `keepUserIds` does not name, and returns them:
 * after the edge's failover (the user rung was busy or did not answer; the media engine's voicemail or
 * a forward took the call) that user is no longer in it, though the call goes on.
 */
export async function leaveDialog(live: LiveStore, accountId: string, callId: string, keepUserIds: readonly string[]): Promise<string[]> {
  const usersKey = presenceKeys.dialogUsers(accountId, callId);
  const keep = new Set(keepUserIds);
  const gone = (await live.smembers(usersKey)).filter((userId) => !keep.has(userId));
  if (!gone.length) return [];
  await Promise.all([...gone.map((userId) => live.zrem(presenceKeys.userDialogs(accountId, userId), callId)), live.srem(usersKey, ...gone)]);
  return gone;
}

function parseStored(raw: string): StoredContact | null {
  try {
    const value = JSON.parse(raw) as StoredContact;
    return typeof value === "object" && value !== null && typeof value.contact === "string" ? value : null;
  } catch {
    // A corrupt entry (should not happen: only this module writes it) counts as no binding.
    return null;
  }
}

/** A registration to store (expires > 0) or remove (expires 0). */
export interface RegistrationInput {
  account_id: string;
  user_id: string;
  device_id: string;
  contact: string;
  /** Seconds; 0 removes the binding. */
  expires: number;
  webrtc: 0 | 1;
  user_agent?: string | null;
  transport?: string | null;
  source_ip?: string | null;
  received?: string | null;
  path?: string | null;
  socket?: string | null;
}

/** What is kept of a binding whoever it is of (a device's, a trunk's): its Contact and how it is reached. */
function bindingDetail(input: Omit<TrunkRegistrationInput, "account_id" | "trunk_id" | "expires">): Pick<RegisteredContact, "contact" | "received" | "path" | "socket" | "transport" | "user_agent" | "source_ip"> {
  return {
    contact: input.contact,
    received: input.received ?? null,
    path: input.path ?? null,
    socket: input.socket ?? null,
    transport: input.transport ?? null,
    user_agent: input.user_agent ?? null,
    source_ip: input.source_ip ?? null,
  };
}

/**
 * Stores or removes one binding in the three views (user, device, account) and its detail in one
 * atomic live-store step (one round trip), evicting the soonest-expiring bindings of the device beyond
 * {@link MAX_CONTACTS_PER_DEVICE}; expired bindings are dropped on the way, and the keys live as long
 * as their last binding (plus a minute).
 */
export async function applyRegistration(live: LiveStore, input: RegistrationInput, now: number = Date.now()): Promise<void> {
  const { account_id: acc, user_id: userId, device_id: deviceId, contact } = input;
  const stored: StoredContact = { device_id: deviceId, user_id: userId, ...bindingDetail(input), contact, webrtc: input.webrtc };
  await live.bindExpiring({
    // The members: `<deviceId> <contact>`, `<contact>`, `<userId> <deviceId> <contact>` (presence-keys.ts).
    views: [
      { key: presenceKeys.userContacts(acc, userId), prefix: userMember(deviceId, "") },
      { key: presenceKeys.deviceContacts(acc, deviceId), prefix: "" },
      { key: presenceKeys.accountContacts(acc), prefix: accountMember(userId, deviceId, "") },
    ],
    detail: { key: presenceKeys.userContactInfo(acc, userId), view: 0, value: JSON.stringify(stored) },
    id: contact,
    deadline: input.expires > 0 ? now + input.expires * 1000 : 0,
    now,
    cap: { view: 1, max: MAX_CONTACTS_PER_DEVICE },
    slackMs: KEY_SLACK_MS,
  });
}

/**
 * Removes every binding of a device (disabled, deleted, or moved to another user: `userId` is the user
 * it was registered for), so the roster stops counting it at once. The router also never rings a
 * binding of a device that is not active, whatever the live store still holds.
 */
export async function forgetDevice(live: LiveStore, accountId: string, userId: string, deviceId: string, now: number = Date.now()): Promise<number> {
  const bound = await live.zrangeByScore(presenceKeys.deviceContacts(accountId, deviceId), -Infinity, Infinity);
  await Promise.all(
    bound.map(({ member }) => applyRegistration(live, { account_id: accountId, user_id: userId, device_id: deviceId, contact: member, expires: 0, webrtc: 0 }, now)),
  );
  return bound.length;
}

/** One registered binding of a trunk that registers to us (a customer PBX with inbound_auth register). */
export type TrunkContact = Omit<RegisteredContact, "device_id" | "user_id" | "webrtc"> & { trunk_id: string };

/** A trunk's registration to store (expires > 0) or remove (expires 0). */
export type TrunkRegistrationInput = Omit<RegistrationInput, "user_id" | "device_id" | "webrtc"> & { trunk_id: string };

/**
 * Stores or removes one binding of a trunk (its own view and detail, one atomic step, at most
 * {@link MAX_CONTACTS_PER_DEVICE} live ones): calls out through the trunk go to its live bindings.
 * Trunks are not users, so the roster does not count them.
 */
export async function applyTrunkRegistration(live: LiveStore, input: TrunkRegistrationInput, now: number = Date.now()): Promise<void> {
  const stored: Omit<TrunkContact, "expires_at"> = { trunk_id: input.trunk_id, ...bindingDetail(input) };
  await live.bindExpiring({
    views: [{ key: presenceKeys.trunkContacts(input.account_id, input.trunk_id), prefix: "" }],
    detail: { key: presenceKeys.trunkContactInfo(input.account_id, input.trunk_id), view: 0, value: JSON.stringify(stored) },
    id: input.contact,
    deadline: input.expires > 0 ? now + input.expires * 1000 : 0,
    now,
    cap: { view: 0, max: MAX_CONTACTS_PER_DEVICE },
    slackMs: KEY_SLACK_MS,
  });
}

/** Removes every binding of a trunk (`Contact: *`). */
export async function forgetTrunk(live: LiveStore, accountId: string, trunkId: string, now: number = Date.now()): Promise<number> {
  const bound = await live.zrangeByScore(presenceKeys.trunkContacts(accountId, trunkId), -Infinity, Infinity);
  await Promise.all(bound.map(({ member }) => applyTrunkRegistration(live, { account_id: accountId, trunk_id: trunkId, contact: member, expires: 0 }, now)));
  return bound.length;
}

/**
 * The live bindings of a trunk, soonest-to-expire first (one round trip).
 * @example const contacts = await trunkContacts(platform.live, "acc_…", "trk_…"); // [] when not registered
 */
export async function trunkContacts(live: LiveStore, accountId: string, trunkId: string, now: number = Date.now()): Promise<TrunkContact[]> {
  const [scored, info] = await Promise.all([
    live.zrangeByScore(presenceKeys.trunkContacts(accountId, trunkId), now + 1, Infinity),
    live.hgetall(presenceKeys.trunkContactInfo(accountId, trunkId)),
  ]);
  const out: TrunkContact[] = [];
  for (const { member, score } of scored) {
    const raw = info[member];
    if (raw === undefined) continue;
    try {
      const stored = JSON.parse(raw) as Omit<TrunkContact, "expires_at">;
      if (typeof stored.contact === "string") out.push({ ...stored, expires_at: score });
    } catch {
      // A detail that is not ours (written by hand): the binding is skipped, as a user's would be.
    }
  }
  return out;
}

/** Live bindings of a whole account, per user: how many contacts and which devices. One read. */
export async function accountRegistrations(
  live: LiveStore,
  accountId: string,
  now: number = Date.now(),
): Promise<Map<string, { contacts: number; devices: Set<string> }>> {
  const scored = await live.zrangeByScore(presenceKeys.accountContacts(accountId), now + 1, Infinity);
  const byUser = new Map<string, { contacts: number; devices: Set<string> }>();
  for (const { member } of scored) {
    const parts = parseAccountMember(member);
    if (!parts) continue;
    const entry = byUser.get(parts.userId) ?? { contacts: 0, devices: new Set<string>() };
    entry.contacts += 1;
    entry.devices.add(parts.deviceId);
    byUser.set(parts.userId, entry);
  }
  return byUser;
}
