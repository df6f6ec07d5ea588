/** Queries on extensions. The only file of this capability that touches drizzle. */
import { and, asc, eq, gt, like, type SQL } from "drizzle-orm";
import type { DbOrTx } from "../db/db.ts";
import { extensions, type ExtensionRow, type NewExtensionRow } from "./extensions.schema.ts";

export async function insertExtension(db: DbOrTx, row: NewExtensionRow): Promise<ExtensionRow> {
  const [created] = await db.insert(extensions).values(row).returning();
  if (!created) throw new Error("insert returned no row");
  return created;
}

/** One extension of the account; `forUpdate` locks it for the rest of the transaction. */
export async function findExtension(db: DbOrTx, accountId: string, id: string, options: { forUpdate?: boolean } = {}): Promise<ExtensionRow | null> {
  const query = db.select().from(extensions).where(and(eq(extensions.account_id, accountId), eq(extensions.id, id))).limit(1);
  const [row] = options.forUpdate ? await query.for("update") : await query;
  return row ?? null;
}

/** What the list can be narrowed by; `digits_prefix` holds only 0-9, * and #. */
export interface ExtensionRowFilters {
  digits_prefix?: string;
  dest_kind?: string;
  dest_id?: string;
  schedule_id?: string;
}

/** Extensions of the account matching `filters`, in id (creation) order after `afterId`. */
export async function listExtensionRows(
  db: DbOrTx,
  accountId: string,
  filters: ExtensionRowFilters,
  afterId: string | null,
  limit: number,
): Promise<ExtensionRow[]> {
  const where: SQL[] = [eq(extensions.account_id, accountId)];
  if (afterId) where.push(gt(extensions.id, afterId));
  // 0-9, * and # only (checked by the caller), so the prefix holds no LIKE wildcard.
  if (filters.digits_prefix) where.push(like(extensions.digits, `${filters.digits_prefix}%`));
  if (filters.dest_kind) where.push(eq(extensions.dest_kind, filters.dest_kind));
  if (filters.dest_id) where.push(eq(extensions.dest_id, filters.dest_id));
  if (filters.schedule_id) where.push(eq(extensions.schedule_id, filters.schedule_id));
  return db.select().from(extensions).where(and(...where)).orderBy(asc(extensions.id)).limit(limit);
}

export async function updateExtensionRow(db: DbOrTx, accountId: string, id: string, patch: Partial<NewExtensionRow>): Promise<ExtensionRow | null> {
  const [row] = await db
    .update(extensions)
    .set(patch)
    .where(and(eq(extensions.account_id, accountId), eq(extensions.id, id)))
    .returning();
  return row ?? null;
}

/** Deletes an extension; false when the account has no such extension. */
export async function deleteExtensionRow(db: DbOrTx, accountId: string, id: string): Promise<boolean> {
  const gone = await db
    .delete(extensions)
    .where(and(eq(extensions.account_id, accountId), eq(extensions.id, id)))
    .returning({ id: extensions.id });
  return gone.length > 0;
}
