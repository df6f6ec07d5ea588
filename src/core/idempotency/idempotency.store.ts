/** Queries on idempotency records. The only file of this capability that touches drizzle. */
import { and, eq, lt, or } from "drizzle-orm";
import type { DbOrTx } from "../db/db.ts";
import { idempotencyKeys } from "./idempotency.schema.ts";

export type IdempotencyRow = typeof idempotencyKeys.$inferSelect;

/** Inserts an in-flight claim; false when the key already has a record. */
export async function insertClaim(db: DbOrTx, row: typeof idempotencyKeys.$inferInsert): Promise<boolean> {
  const inserted = await db.insert(idempotencyKeys).values(row).onConflictDoNothing().returning({ key: idempotencyKeys.key });
  return inserted.length === 1;
}

export async function findRecord(db: DbOrTx, accountId: string, key: string): Promise<IdempotencyRow | null> {
  const [row] = await db
    .select()
    .from(idempotencyKeys)
    .where(and(eq(idempotencyKeys.account_id, accountId), eq(idempotencyKeys.key, key)))
    .limit(1);
  return row ?? null;
}

/**
 * Retakes a record that is expired (older than `expiredBefore`) or abandoned in flight (lock passed),
 * atomically: of two instances racing for it, exactly one gets true.
 */
export async function retakeStale(
  db: DbOrTx,
  accountId: string,
  key: string,
  now: number,
  expiredBefore: number,
  fresh: { request_hash: string; locked_until: number },
): Promise<boolean> {
  const rows = await db
    .update(idempotencyKeys)
    .set({ ...fresh, state: "in_flight", status: null, body: null, content_type: null, created_at: now })
    .where(
      and(
        eq(idempotencyKeys.account_id, accountId),
        eq(idempotencyKeys.key, key),
        or(
          lt(idempotencyKeys.created_at, expiredBefore),
          and(eq(idempotencyKeys.state, "in_flight"), lt(idempotencyKeys.locked_until, now)),
        ),
      ),
    )
    .returning({ key: idempotencyKeys.key });
  return rows.length === 1;
}

export async function storeReply(
  db: DbOrTx,
  accountId: string,
  key: string,
  reply: { status: number; body: string; content_type: string },
): Promise<void> {
  await db
    .update(idempotencyKeys)
    .set({ state: "done", ...reply })
    .where(and(eq(idempotencyKeys.account_id, accountId), eq(idempotencyKeys.key, key)));
}

export async function deleteRecord(db: DbOrTx, accountId: string, key: string): Promise<void> {
  await db.delete(idempotencyKeys).where(and(eq(idempotencyKeys.account_id, accountId), eq(idempotencyKeys.key, key)));
}

export async function deleteOlderThan(db: DbOrTx, before: number): Promise<void> {
  await db.delete(idempotencyKeys).where(lt(idempotencyKeys.created_at, before));
}
