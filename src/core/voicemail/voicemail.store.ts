/** Queries on voicemail boxes. The only file of this capability that touches drizzle. */
import { and, asc, eq, gt, ilike, type SQL } from "drizzle-orm";
import type { DbOrTx } from "../db/db.ts";
import { voicemails, type VoicemailRow } from "./voicemail.schema.ts";
import { likePrefix } from "../db/sql-text.ts";

export type NewVoicemailRow = typeof voicemails.$inferInsert;

export async function insertVoicemail(db: DbOrTx, row: NewVoicemailRow): Promise<VoicemailRow> {
  const [created] = await db.insert(voicemails).values(row).returning();
  if (!created) throw new Error("insert returned no row");
  return created;
}

/** One box of the account; `forUpdate` locks it until the transaction ends (serializes PIN changes). */
export async function findVoicemail(db: DbOrTx, accountId: string, id: string, options: { forUpdate?: boolean } = {}): Promise<VoicemailRow | null> {
  const query = db
    .select()
    .from(voicemails)
    .where(and(eq(voicemails.account_id, accountId), eq(voicemails.id, id)))
    .limit(1);
  const [row] = options.forUpdate ? await query.for("update") : await query;
  return row ?? null;
}

export async function updateVoicemailRow(db: DbOrTx, accountId: string, id: string, patch: Partial<NewVoicemailRow>): Promise<VoicemailRow | null> {
  const [row] = await db
    .update(voicemails)
    .set(patch)
    .where(and(eq(voicemails.account_id, accountId), eq(voicemails.id, id)))
    .returning();
  return row ?? null;
}

export async function deleteVoicemailRow(db: DbOrTx, accountId: string, id: string): Promise<boolean> {
  const rows = await db
    .delete(voicemails)
    .where(and(eq(voicemails.account_id, accountId), eq(voicemails.id, id)))
    .returning({ id: voicemails.id });
  return rows.length > 0;
}

/** The account's boxes in id (creation) order after `afterId`, optionally those whose name starts with `namePrefix` (any case). */
export async function listVoicemailRows(
  db: DbOrTx,
  accountId: string,
  filter: { afterId: string | null; namePrefix?: string },
  limit: number,
): Promise<VoicemailRow[]> {
  const conditions: SQL[] = [eq(voicemails.account_id, accountId)];
  if (filter.afterId) conditions.push(gt(voicemails.id, filter.afterId));
  if (filter.namePrefix) conditions.push(ilike(voicemails.name, likePrefix(filter.namePrefix)));
  return db
    .select()
    .from(voicemails)
    .where(and(...conditions))
    .orderBy(asc(voicemails.id))
    .limit(limit);
}

