/**
 * Where presence lives in the live store. Everything is under the account's hash tag
 * (`accountKey`), so one account's presence shares a Redis Cluster slot.
 *
 * Registrations are sorted sets scored by their deadline (epoch ms): a member whose score has
 * passed is expired, whatever anyone did or did not clean up. Three views of the same bindings:
 * - per user:   `reg:u:<userId>`   member `<deviceId> <contact>`     (+ hash `reg:u:<userId>:info` → JSON detail)
 * - per device: `reg:d:<deviceId>` member `<contact>`                 (bounds the bindings of one device)
 * - per account `reg:all`          member `<userId> <deviceId> <contact>` (the roster in one read)
 * Contacts never hold whitespace (validated), so a space separates the parts unambiguously.
 */
import { accountKey } from "../live/live-store.ts";

export const presenceKeys = {
  userContacts: (accountId: string, userId: string) => accountKey(accountId, "reg", "u", userId),
  userContactInfo: (accountId: string, userId: string) => accountKey(accountId, "reg", "u", userId, "info"),
  deviceContacts: (accountId: string, deviceId: string) => accountKey(accountId, "reg", "d", deviceId),
  accountContacts: (accountId: string) => accountKey(accountId, "reg", "all"),
  /** A trunk that registers to us (inbound_auth register): `reg:t:<trunkId>` member `<contact>` (+ `:info`). */
  trunkContacts: (accountId: string, trunkId: string) => accountKey(accountId, "reg", "t", trunkId),
  trunkContactInfo: (accountId: string, trunkId: string) => accountKey(accountId, "reg", "t", trunkId, "info"),
  /**
   * Sorted set: the dialogs a user is in, member callId, scored by when the dialog was first seen
   * (epoch ms), positive once confirmed and negative while early, so each state is one ZCOUNT
   * (confirmed: [since, +inf], early: [-inf, -since]) however many calls the user holds.
   */
  userDialogs: (accountId: string, userId: string) => accountKey(accountId, "calls", "user", userId),
  /** Set: the users a dialog touched (to release them when it ends). */
  dialogUsers: (accountId: string, callId: string) => accountKey(accountId, "dialog", callId, "users"),
  /** Tombstone of an ended dialog, so a late early/confirmed event does not revive it. */
  dialogEnded: (accountId: string, callId: string) => accountKey(accountId, "dialog", callId, "ended"),
  /** String (JSON, compare-and-set): one agent's live state. */
  agentState: (accountId: string, userId: string) => accountKey(accountId, "agent", userId),
} as const;

/** Member of a user's set: `<deviceId> <contact>`. */
export function userMember(deviceId: string, contact: string): string {
  return `${deviceId} ${contact}`;
}

/** Member of the account's set: `<userId> <deviceId> <contact>`. */
export function accountMember(userId: string, deviceId: string, contact: string): string {
  return `${userId} ${deviceId} ${contact}`;
}

/** Splits an account-set member back into its parts (null for anything malformed). */
export function parseAccountMember(member: string): { userId: string; deviceId: string; contact: string } | null {
  const a = member.indexOf(" ");
  const b = a < 0 ? -1 : member.indexOf(" ", a + 1);
  if (a <= 0 || b <= a + 1 || b === member.length - 1) return null;
  return { userId: member.slice(0, a), deviceId: member.slice(a + 1, b), contact: member.slice(b + 1) };
}
