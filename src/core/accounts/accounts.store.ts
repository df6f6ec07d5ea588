/** Queries on accounts. The only file of this capability that touches drizzle. */
import { and, asc, eq, gt, sql } from "drizzle-orm";
import type { DbOrTx } from "../db/db.ts";
import { rawRows } from "../db/migrate.ts";
import { accounts, type AccountRow } from "./accounts.schema.ts";

export type NewAccountRow = typeof accounts.$inferInsert;

export async function insertAccount(db: DbOrTx, row: NewAccountRow): Promise<AccountRow> {
  const [created] = await db.insert(accounts).values(row).returning();
  if (!created) throw new Error("insert returned no row");
  return created;
}

export async function findAccount(db: DbOrTx, id: string): Promise<AccountRow | null> {
  const [row] = await db.select().from(accounts).where(eq(accounts.id, id)).limit(1);
  return row ?? null;
}

export async function updateAccount(db: DbOrTx, id: string, patch: Partial<NewAccountRow>): Promise<AccountRow | null> {
  const [row] = await db.update(accounts).set(patch).where(eq(accounts.id, id)).returning();
  return row ?? null;
}

/** Children of `parentId`, in id (creation) order after `afterId`. */
export async function listChildAccounts(db: DbOrTx, parentId: string, afterId: string | null, limit: number): Promise<AccountRow[]> {
  const where = afterId ? and(eq(accounts.parent_id, parentId), gt(accounts.id, afterId)) : eq(accounts.parent_id, parentId);
  return db.select().from(accounts).where(where).orderBy(asc(accounts.id)).limit(limit);
}

export async function countAccounts(db: DbOrTx): Promise<number> {
  const rows = await db.select({ id: accounts.id }).from(accounts).limit(1);
  return rows.length;
}

/**
 * Whether the database's time zone data knows `name`: the account's zone goes into SQL (`at time
 * zone`, usage days and month starts), and the runtime's zone list can hold names the database's
 * tzdata dropped (US/Pacific-New).
 */
export async function isKnownTimeZone(db: DbOrTx, name: string): Promise<boolean> {
  const [row] = await rawRows<{ ok: boolean }>(db, sql`select exists (select 1 from pg_timezone_names where name = ${name}) as ok`);
  return row?.ok === true;
}
