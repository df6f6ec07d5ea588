/**
 * Idempotency-Key semantics (DESIGN.md section 3): per account, 24 h; a retry with the same key and
 * the same request gets the stored reply; the same key with another request is refused (422); a
 * duplicate that arrives while the first is still running gets 409.
 */
import { Type as T } from "@sinclair/typebox";
import type { DbOrTx } from "../db/db.ts";
import { AppError, validationFailed } from "../errors/app-error.ts";
import { deleteOlderThan, deleteRecord, findRecord, insertClaim, retakeStale, storeReply } from "./idempotency.store.ts";

export const IDEMPOTENCY_RETENTION_MS = 24 * 3600 * 1000;
/** How long a claim may stay in flight before another instance may assume its holder died. */
const IN_FLIGHT_LOCK_MS = 60_000;

/** What to do with a request that carries an Idempotency-Key. */
export type IdempotencyClaim =
  | { kind: "claimed" }
  | { kind: "replay"; status: number; body: string; contentType: string };

/** The Idempotency-Key header: its format (checked below) and, in the OpenAPI document, every write's parameter. */
export const IdempotencyKeyHeader = T.String({
  minLength: 1,
  maxLength: 255,
  pattern: "^[!-~]+$",
  description:
    "Makes a retried write safe: the same key with the same request within 24 h gets the first reply again (header idempotency-replayed: true), " +
    "a different request with it is a 422, one while the first still runs a 409 (docs/api-conventions.md). 1–255 printable ASCII characters, no spaces.",
});
const KEY_FORMAT = new RegExp(IdempotencyKeyHeader.pattern!);

/** Refuses keys that are empty, too long or not printable ASCII (400). */
export function checkIdempotencyKey(key: string): void {
  if (key.length < IdempotencyKeyHeader.minLength! || key.length > IdempotencyKeyHeader.maxLength! || !KEY_FORMAT.test(key)) {
    throw validationFailed([{ path: "/headers/idempotency-key", message: "Must be 1–255 printable ASCII characters without spaces." }]);
  }
}

/**
 * What identifies a request (who sent it, method, path with query, body text), as an HMAC-SHA256 under
 * a server secret. Keyed, not a plain hash: a body can carry a short PIN or a SIP password, and a plain
 * hash of it stored in the database could be brute-forced by anyone who reads the table. The sender (an
 * API key's id, a console user's) is part of it: a stored reply can carry a secret shown once (a new
 * API key), so another credential of the account sending the same key and request gets 422, not the
 * reply.
 */
export function requestFingerprint(secret: Uint8Array, sender: string, method: string, pathWithQuery: string, body: string): string {
  return new Bun.CryptoHasher("sha256", secret).update(`${sender}\n${method}\n${pathWithQuery}\n${body}`).digest("hex");
}

/**
 * The key that seals stored replies: a reply can carry a secret shown once (a new API key, a webhook
 * signing secret), so it is kept encrypted (AES-256-GCM), never in plaintext, for its 24 hours.
 */
export function deriveReplySealKey(masterKey: Uint8Array): Uint8Array {
  return new Uint8Array(new Bun.CryptoHasher("sha256", masterKey).update("parley/idempotency-replies/v1").digest());
}

/** The fingerprint key, derived from the master key so every instance computes the same fingerprints. */
export function deriveFingerprintSecret(masterKey: Uint8Array): Uint8Array {
  return new Uint8Array(new Bun.CryptoHasher("sha256", masterKey).update("parley/idempotency-fingerprint/v1").digest());
}

/**
 * Claims `key` for this request, or says how to answer instead. Throws 409 while another request
 * holds it and 422 when it was used for a different request.
 */
export async function claimIdempotencyKey(
  db: DbOrTx,
  accountId: string,
  key: string,
  requestHash: string,
  now = Date.now(),
): Promise<IdempotencyClaim> {
  const fresh = { request_hash: requestHash, locked_until: now + IN_FLIGHT_LOCK_MS };
  const expiredBefore = now - IDEMPOTENCY_RETENTION_MS;
  for (let attempt = 0; attempt < 3; attempt++) {
    if (await insertClaim(db, { account_id: accountId, key, state: "in_flight", created_at: now, ...fresh })) {
      return { kind: "claimed" };
    }
    const row = await findRecord(db, accountId, key);
    if (!row) continue; // Deleted between our insert and read (released after a 5xx): try again.
    const stale = row.created_at < expiredBefore || (row.state === "in_flight" && row.locked_until < now);
    if (stale) {
      if (await retakeStale(db, accountId, key, now, expiredBefore, fresh)) return { kind: "claimed" };
      continue;
    }
    if (row.request_hash !== requestHash) {
      throw new AppError("idempotency_key_reused", "This Idempotency-Key was already used with a different request.");
    }
    if (row.state !== "done" || row.status === null || row.body === null) {
      throw new AppError("conflict", "A request with this Idempotency-Key is still in progress; retry later.");
    }
    return { kind: "replay", status: row.status, body: row.body, contentType: row.content_type ?? "application/json" };
  }
  throw new AppError("conflict", "A request with this Idempotency-Key is still in progress; retry later.");
}

/** Stores the reply of a claimed request for replay. */
export async function completeIdempotencyKey(
  db: DbOrTx,
  accountId: string,
  key: string,
  reply: { status: number; body: string; contentType: string },
): Promise<void> {
  await storeReply(db, accountId, key, { status: reply.status, body: reply.body, content_type: reply.contentType });
}

/** Forgets a claim whose request failed on our side (5xx), so a retry runs again. */
export async function releaseIdempotencyKey(db: DbOrTx, accountId: string, key: string): Promise<void> {
  await deleteRecord(db, accountId, key);
}

/** Deletes records past retention. Safe to run on every instance. */
export async function purgeExpiredIdempotencyKeys(db: DbOrTx, now = Date.now()): Promise<void> {
  await deleteOlderThan(db, now - IDEMPOTENCY_RETENTION_MS);
}
