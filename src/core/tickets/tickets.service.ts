/**
 * Single-use tickets for the realtime WebSocket: browsers cannot send headers on a WebSocket, so a
 * scoped API request mints a short-lived ticket that the socket presents once in its URL.
 *
 * A ticket is `rt1.<account id>.<secret>`. Only the SHA-256 of the secret is a live-store key (under
 * the account's hash tag), so a dump of the live store holds no usable ticket. Redeeming is the live
 * store's `take` (read and delete in one atomic step), so a ticket opens at most one socket, even
 * when two instances race for it.
 */
import { createHash } from "node:crypto";
import { accountKey, type LiveStore } from "../live/live-store.ts";
import { hasScope } from "../auth/scopes.ts";
import { forbidden } from "../errors/app-error.ts";
import type { TicketModel } from "./tickets.model.ts";

/** Seconds a ticket stays valid. */
export const TICKET_TTL_SEC = 60;
/**
 * Seconds the live store keeps a ticket past its expiry, so that presenting it then is told
 * "expired" (a new ticket fixes it) rather than "unknown or already used". Taking it deletes it.
 */
export const TICKET_KEPT_EXPIRED_SEC = 300;

export type TicketKind = TicketModel.Kind;

/** What a redeemed ticket grants. */
export interface TicketGrant {
  accountId: string;
  kind: TicketKind;
  /** The minting credential's scopes. */
  scopes: string[];
  /** The API key that minted it (sk_…); absent for a console session. The stream ends when it is revoked. */
  keyId?: string;
  /** Epoch ms the minting session token expires at (absent for an API key). The stream ends then. */
  credentialExpiresAt?: number;
  /** Epoch ms. */
  issuedAt: number;
  /** Epoch ms after which the ticket no longer opens anything. */
  expiresAt: number;
}

/** Why a ticket was refused; `unknown` covers never issued, already used, and expired over 5 minutes ago. */
export type TicketRefusal = "malformed" | "unknown" | "expired";

export type Redemption = { ok: true; grant: TicketGrant } | { ok: false; reason: TicketRefusal };

const TICKET_RE = /^rt1\.(acc_[0-9A-HJKMNP-TV-Z]{26})\.([A-Za-z0-9_-]{43})$/;

function ticketKey(accountId: string, secret: string): string {
  return accountKey(accountId, "ticket", createHash("sha256").update(secret).digest("hex"));
}

/**
 * The kind of ticket a credential mints: the one asked for (its scope required), else `events` when
 * it holds scope events, else `wallboard` when it holds scope wallboard. Throws 403 naming the scope.
 * @example ticketKindFor(["wallboard"]) // "wallboard"
 */
export function ticketKindFor(scopes: readonly string[], requested?: TicketKind): TicketKind {
  if (requested) {
    if (!hasScope(scopes, requested)) throw forbidden(requested);
    return requested;
  }
  if (hasScope(scopes, "events")) return "events";
  if (hasScope(scopes, "wallboard")) return "wallboard";
  throw forbidden("events", "This credential lacks the scope 'events' (or 'wallboard' for a wallboard ticket).");
}

/**
 * Mints a ticket bound to the account, the scopes and the kind.
 * @example const { ticket } = await mintTicket(live, { accountId, kind: "events", scopes: ["events"] });
 */
export async function mintTicket(
  live: LiveStore,
  input: { accountId: string; kind: TicketKind; scopes: readonly string[]; keyId?: string; credentialExpiresAt?: number; now?: number; ttlSec?: number },
): Promise<{ ticket: string; expiresIn: number; grant: TicketGrant }> {
  const ttlSec = input.ttlSec ?? TICKET_TTL_SEC;
  const issuedAt = input.now ?? Date.now();
  const secret = Buffer.from(crypto.getRandomValues(new Uint8Array(32))).toString("base64url");
  const grant: TicketGrant = {
    accountId: input.accountId,
    kind: input.kind,
    scopes: [...input.scopes],
    ...(input.keyId === undefined ? {} : { keyId: input.keyId }),
    ...(input.credentialExpiresAt === undefined ? {} : { credentialExpiresAt: input.credentialExpiresAt }),
    issuedAt,
    expiresAt: issuedAt + ttlSec * 1000,
  };
  await live.set(ticketKey(input.accountId, secret), JSON.stringify(grant), (ttlSec + TICKET_KEPT_EXPIRED_SEC) * 1000);
  return { ticket: `rt1.${input.accountId}.${secret}`, expiresIn: ttlSec, grant };
}

/**
 * Redeems a ticket once: the first call for a valid ticket gets its grant; every later call, on any
 * instance, gets `unknown`. `now` is injectable so tests can step past the expiry.
 */
export async function redeemTicket(live: LiveStore, ticket: string, now: number = Date.now()): Promise<Redemption> {
  const match = TICKET_RE.exec(ticket);
  if (!match) return { ok: false, reason: "malformed" };
  const stored = await live.take(ticketKey(match[1]!, match[2]!));
  if (stored === null) return { ok: false, reason: "unknown" };
  const grant = JSON.parse(stored) as TicketGrant;
  // The store keeps it TICKET_KEPT_EXPIRED_SEC longer than it is valid: this is the expiry.
  if (now >= grant.expiresAt) return { ok: false, reason: "expired" };
  return { ok: true, grant };
}
