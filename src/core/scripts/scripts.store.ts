/** Queries on agent scripts. The only file of this capability that touches drizzle. */
import { and, asc, eq, gt, sql, type SQL } from "drizzle-orm";
import type { DbOrTx } from "../db/db.ts";
import { scripts, type ScriptRow } from "./scripts.schema.ts";
import { likePrefix } from "../db/sql-text.ts";

export type NewScriptRow = typeof scripts.$inferInsert;

/** A script without its body, with the body's size. */
export type ScriptSummaryRow = Omit<ScriptRow, "body"> & { body_bytes: number };

export async function insertScript(db: DbOrTx, row: NewScriptRow): Promise<ScriptRow> {
  const [created] = await db.insert(scripts).values(row).returning();
  if (!created) throw new Error("insert returned no row");
  return created;
}

export async function findScript(db: DbOrTx, accountId: string, id: string): Promise<ScriptRow | null> {
  const [row] = await db
    .select()
    .from(scripts)
    .where(and(eq(scripts.account_id, accountId), eq(scripts.id, id)))
    .limit(1);
  return row ?? null;
}

/** Scripts after `afterId` in creation order, without bodies (a page of 500 × 256 KiB is not a list). */
export async function listScriptSummaries(
  db: DbOrTx,
  accountId: string,
  filter: { namePrefix?: string; contentType?: string },
  afterId: string | null,
  limit: number,
): Promise<ScriptSummaryRow[]> {
  const conditions: SQL[] = [eq(scripts.account_id, accountId)];
  if (filter.namePrefix !== undefined) {
    conditions.push(sql`lower(${scripts.name}) like ${likePrefix(filter.namePrefix)}`);
  }
  if (filter.contentType !== undefined) conditions.push(eq(scripts.content_type, filter.contentType));
  if (afterId) conditions.push(gt(scripts.id, afterId));
  return db
    .select({
      account_id: scripts.account_id,
      id: scripts.id,
      name: scripts.name,
      description: scripts.description,
      content_type: scripts.content_type,
      version: scripts.version,
      created_at: scripts.created_at,
      updated_at: scripts.updated_at,
      body_bytes: sql<number>`octet_length(${scripts.body})`.mapWith(Number),
    })
    .from(scripts)
    .where(and(...conditions))
    .orderBy(asc(scripts.id))
    .limit(limit);
}

/** Writes the changed columns and bumps the version in the same statement. */
export async function updateScript(db: DbOrTx, accountId: string, id: string, patch: Partial<NewScriptRow>): Promise<ScriptRow | null> {
  const [row] = await db
    .update(scripts)
    .set({ ...patch, version: sql`${scripts.version} + 1` })
    .where(and(eq(scripts.account_id, accountId), eq(scripts.id, id)))
    .returning();
  return row ?? null;
}

export async function deleteScript(db: DbOrTx, accountId: string, id: string): Promise<boolean> {
  const rows = await db
    .delete(scripts)
    .where(and(eq(scripts.account_id, accountId), eq(scripts.id, id)))
    .returning({ id: scripts.id });
  return rows.length > 0;
}
