/** Queries on forwards. The only file of this capability that touches drizzle. */
import { and, eq } from "drizzle-orm";
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
