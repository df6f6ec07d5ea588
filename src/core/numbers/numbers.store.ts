/** Queries on numbers and the DID lookup. The only file of this capability that touches drizzle. */
import { and, asc, eq, gt, like, type SQL } from "drizzle-orm";
import type { DbOrTx } from "../db/db.ts";
import { didLookup, numbers, type NewNumberRow, type NumberRow } from "./numbers.schema.ts";

/**
 * Inserts a number and its lookup row. The lookup goes first: its primary key is the platform-wide
 * uniqueness check on the e164. Call inside a transaction.
 */
export async function insertNumber(db: DbOrTx, row: NewNumberRow): Promise<NumberRow> {
  await db.insert(didLookup).values({ e164: row.e164, account_id: row.account_id, number_id: row.id });
  const [created] = await db.insert(numbers).values(row).returning();
  if (!created) throw new Error("insert returned no row");
  return created;
}

/** One number of the account; `forUpdate` locks it for the rest of the transaction. */
export async function findNumber(db: DbOrTx, accountId: string, id: string, options: { forUpdate?: boolean } = {}): Promise<NumberRow | null> {
  const query = db.select().from(numbers).where(and(eq(numbers.account_id, accountId), eq(numbers.id, id))).limit(1);
  const [row] = options.forUpdate ? await query.for("update") : await query;
  return row ?? null;
}

/** What the list can be narrowed by; `e164_prefix` is digits only. */
export interface NumberRowFilters {
  status?: string;
  dest_kind?: string;
  dest_id?: string;
  e164_prefix?: string;
  schedule_id?: string;
}

/** Numbers of the account matching `filters`, in id (creation) order after `afterId`. */
export async function listNumberRows(
  db: DbOrTx,
  accountId: string,
  filters: NumberRowFilters,
  afterId: string | null,
  limit: number,
): Promise<NumberRow[]> {
  const where: SQL[] = [eq(numbers.account_id, accountId)];
  if (afterId) where.push(gt(numbers.id, afterId));
  if (filters.status) where.push(eq(numbers.status, filters.status));
  if (filters.dest_kind) where.push(eq(numbers.dest_kind, filters.dest_kind));
  if (filters.dest_id) where.push(eq(numbers.dest_id, filters.dest_id));
  if (filters.schedule_id) where.push(eq(numbers.schedule_id, filters.schedule_id));
  // Digits only (checked by the caller), so the prefix holds no LIKE wildcard.
  if (filters.e164_prefix) where.push(like(numbers.e164, `${filters.e164_prefix}%`));
  return db.select().from(numbers).where(and(...where)).orderBy(asc(numbers.id)).limit(limit);
}

/**
 * Writes `patch` to a number; when the e164 changes, moves its lookup row too (a taken e164 fails
 * on the lookup's primary key). Call inside a transaction.
 */
export async function updateNumberRow(db: DbOrTx, current: NumberRow, patch: Partial<NewNumberRow>): Promise<NumberRow> {
  if (patch.e164 !== undefined && patch.e164 !== current.e164) {
    await db
      .update(didLookup)
      .set({ e164: patch.e164 })
      .where(and(eq(didLookup.e164, current.e164), eq(didLookup.account_id, current.account_id), eq(didLookup.number_id, current.id)));
  }
  const [row] = await db
    .update(numbers)
    .set(patch)
    .where(and(eq(numbers.account_id, current.account_id), eq(numbers.id, current.id)))
    .returning();
  if (!row) throw new Error("update returned no row");
  return row;
}

/** Deletes a number and its lookup row; false when the account has no such number. Call inside a transaction. */
export async function deleteNumberRow(db: DbOrTx, accountId: string, id: string): Promise<boolean> {
  const [gone] = await db
    .delete(numbers)
    .where(and(eq(numbers.account_id, accountId), eq(numbers.id, id)))
    .returning({ e164: numbers.e164 });
  if (!gone) return false;
  await db.delete(didLookup).where(and(eq(didLookup.e164, gone.e164), eq(didLookup.account_id, accountId), eq(didLookup.number_id, id)));
  return true;
}
