/** Queries on conference rooms. The only file of this capability that touches drizzle. */
import { and, asc, eq, gt, ilike, type SQL } from "drizzle-orm";
import type { DbOrTx } from "../db/db.ts";
import { likePrefix } from "../db/sql-text.ts";
import { conferences, type ConferenceRow } from "./conferences.schema.ts";

export type NewConferenceRow = typeof conferences.$inferInsert;

export async function insertConference(db: DbOrTx, row: NewConferenceRow): Promise<ConferenceRow> {
  const [created] = await db.insert(conferences).values(row).returning();
  if (!created) throw new Error("insert returned no row");
  return created;
}

/** One room of the account; `forUpdate` locks it until the transaction ends (serializes PIN changes). */
export async function findConference(db: DbOrTx, accountId: string, id: string, options: { forUpdate?: boolean } = {}): Promise<ConferenceRow | null> {
  const query = db
    .select()
    .from(conferences)
    .where(and(eq(conferences.account_id, accountId), eq(conferences.id, id)))
    .limit(1);
  const [row] = options.forUpdate ? await query.for("update") : await query;
  return row ?? null;
}

export async function updateConferenceRow(db: DbOrTx, accountId: string, id: string, patch: Partial<NewConferenceRow>): Promise<ConferenceRow | null> {
  const [row] = await db
    .update(conferences)
    .set(patch)
    .where(and(eq(conferences.account_id, accountId), eq(conferences.id, id)))
    .returning();
  return row ?? null;
}

export async function deleteConferenceRow(db: DbOrTx, accountId: string, id: string): Promise<boolean> {
  const rows = await db
    .delete(conferences)
    .where(and(eq(conferences.account_id, accountId), eq(conferences.id, id)))
    .returning({ id: conferences.id });
  return rows.length > 0;
}

/** The account's rooms in id (creation) order after `afterId`, optionally those whose name starts with `namePrefix` (any case). */
export async function listConferenceRows(
  db: DbOrTx,
  accountId: string,
  filter: { afterId: string | null; namePrefix?: string },
  limit: number,
): Promise<ConferenceRow[]> {
  const conditions: SQL[] = [eq(conferences.account_id, accountId)];
  if (filter.afterId) conditions.push(gt(conferences.id, filter.afterId));
  if (filter.namePrefix) conditions.push(ilike(conferences.name, likePrefix(filter.namePrefix)));
  return db
    .select()
    .from(conferences)
    .where(and(...conditions))
    .orderBy(asc(conferences.id))
    .limit(limit);
}
