/**
 * PINs kept as secrets: the row holds only a `sec_…` ref, the digits live encrypted in the secret
 * store. Shared by voicemail boxes and conference rooms, which follow the same write rules:
 * a new PIN replaces the old one under the same ref, null removes it, absent leaves it alone.
 */
import { timingSafeEqual } from "node:crypto";
import type { DbOrTx } from "../db/db.ts";
import type { SecretStore } from "../secrets/secrets.service.ts";

/**
 * Applies a PIN change inside the caller's transaction and returns the ref the row must hold.
 * @example row.pin_secret_ref = await writePinSecret(tx, secrets, accountId, row.pin_secret_ref, body.pin)
 */
export async function writePinSecret(
  tx: DbOrTx,
  secrets: SecretStore,
  accountId: string,
  currentRef: string | null,
  pin: string | null | undefined,
): Promise<string | null> {
  if (pin === undefined) return currentRef;
  if (pin === null) {
    if (currentRef) await secrets.remove(tx, accountId, currentRef);
    return null;
  }
  // Reusing the ref keeps the row unchanged; a dangling ref (secret gone) gets a fresh secret.
  if (currentRef && (await secrets.replace(tx, accountId, currentRef, pin))) return currentRef;
  return secrets.put(tx, accountId, pin);
}

/** Removes the secrets behind a deleted row's PIN refs (nulls skipped). */
export async function removePinSecrets(tx: DbOrTx, secrets: SecretStore, accountId: string, refs: Array<string | null>): Promise<void> {
  for (const ref of refs) if (ref) await secrets.remove(tx, accountId, ref);
}

const digest = (text: string) => new Bun.CryptoHasher("sha256").update(text).digest();

/**
 * Compares two PINs in constant time. Both sides are hashed first so neither the position of the
 * first wrong digit nor the length of the stored PIN shows in the timing.
 */
export function pinsMatch(stored: string, given: string): boolean {
  return timingSafeEqual(digest(stored), digest(given));
}
