/**
 * SQL for the secret table. Knows nothing about encryption; every query is scoped by account so a
 * ref from one account can never reach another account's row.
 */
import { and, eq } from "drizzle-orm";
import type { DbOrTx } from "../db/db.ts";
import { secrets, type SecretRow } from "./secrets.schema.ts";

/** Inserts one row. */
export async function insertSecretRow(tx: DbOrTx, row: SecretRow): Promise<void> {
  await tx.insert(secrets).values(row);
}

/** The stored ciphertext of `id` in `accountId`, or null when absent or owned by another account. */
export async function findSecretCiphertext(tx: DbOrTx, accountId: string, id: string): Promise<string | null> {
  const rows = await tx
    .select({ ciphertext: secrets.ciphertext })
    .from(secrets)
    .where(and(eq(secrets.accountId, accountId), eq(secrets.id, id)))
    .limit(1);
  return rows[0]?.ciphertext ?? null;
}

/** Replaces the ciphertext of `id` in `accountId`. False when there is no such row. */
export async function updateSecretCiphertext(
  tx: DbOrTx,
  accountId: string,
  id: string,
  ciphertext: string,
): Promise<boolean> {
  const rows = await tx
    .update(secrets)
    .set({ ciphertext })
    .where(and(eq(secrets.accountId, accountId), eq(secrets.id, id)))
    .returning({ id: secrets.id });
  return rows.length > 0;
}

/** Deletes `id` in `accountId`. False when there was no such row. */
export async function deleteSecretRow(tx: DbOrTx, accountId: string, id: string): Promise<boolean> {
  const rows = await tx
    .delete(secrets)
    .where(and(eq(secrets.accountId, accountId), eq(secrets.id, id)))
    .returning({ id: secrets.id });
  return rows.length > 0;
}
