/** Queries on rate plans. The only file of this capability that touches drizzle. */
import { and, asc, eq } from "drizzle-orm";
import type { DbOrTx } from "../db/db.ts";
import { ratePlans, type RatePlanRow } from "./rates.schema.ts";

/** The account's rate plans by name. */
export async function listRatePlans(db: DbOrTx, accountId: string): Promise<RatePlanRow[]> {
  return db.select().from(ratePlans).where(eq(ratePlans.account_id, accountId)).orderBy(asc(ratePlans.name));
}

export async function insertRatePlan(db: DbOrTx, row: RatePlanRow): Promise<void> {
  await db.insert(ratePlans).values(row);
}

export async function updateRatePlan(db: DbOrTx, accountId: string, id: string, patch: Partial<Omit<RatePlanRow, "account_id" | "id" | "created_at">>): Promise<void> {
  await db
    .update(ratePlans)
    .set(patch)
    .where(and(eq(ratePlans.account_id, accountId), eq(ratePlans.id, id)));
}

export async function deleteRatePlan(db: DbOrTx, accountId: string, id: string): Promise<void> {
  await db.delete(ratePlans).where(and(eq(ratePlans.account_id, accountId), eq(ratePlans.id, id)));
}

/** One plan of the account. */
export async function findRatePlan(db: DbOrTx, accountId: string, id: string): Promise<RatePlanRow | null> {
  const [row] = await db
    .select()
    .from(ratePlans)
    .where(and(eq(ratePlans.account_id, accountId), eq(ratePlans.id, id)))
    .limit(1);
  return row ?? null;
}
