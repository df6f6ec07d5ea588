/** Queries on forwards. The only file of this capability that touches drizzle. */
import { and, eq, or } from "drizzle-orm";
import type { DbOrTx } from "../db/db.ts";
import { forwards, type ForwardRow } from "./forwards.schema.ts";

export type NewForwardRow = typeof forwards.$inferInsert;

export async function listForwards(db: DbOrTx, accountId: string): Promise<ForwardRow[]> {
  return db.select().from(forwards).where(eq(forwards.account_id, accountId));
}

export async function insertForward(db: DbOrTx, row: NewForwardRow): Promise<void> {
  await db.insert(forwards).values(row);
}

export async function updateForward(db: DbOrTx, accountId: string, id: string, patch: Partial<NewForwardRow>): Promise<void> {
  await db.update(forwards).set(patch).where(and(eq(forwards.account_id, accountId), eq(forwards.id, id)));
}

export async function deleteForward(db: DbOrTx, accountId: string, id: string): Promise<void> {
  await db.delete(forwards).where(and(eq(forwards.account_id, accountId), eq(forwards.id, id)));
}

/**
 * The numbers of forwards named by (account, id), keyed `account\0id`: what a call the edge's failover
 * forwarded out was forwarded to. Unknown ids (a forward deleted since) are left out.
 */
export async function forwardNumbers(db: DbOrTx, keys: Array<{ account_id: string; id: string }>): Promise<Map<string, string>> {
  const rows = await db
    .select({ account_id: forwards.account_id, id: forwards.id, number: forwards.number })
    .from(forwards)
    .where(or(...keys.map((k) => and(eq(forwards.account_id, k.account_id), eq(forwards.id, k.id)))));
  return new Map(rows.map((r) => [`${r.account_id}\u0000${r.id}`, r.number]));
}
