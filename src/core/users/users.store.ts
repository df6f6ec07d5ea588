/** Queries on users. The only file of this capability that touches drizzle. */
import { and, asc, eq, gt, ilike, or, type SQL } from "drizzle-orm";
import type { DbOrTx } from "../db/db.ts";
import { appUsers, type NewUserRow, type UserRow } from "./users.schema.ts";
import { likePrefix } from "../db/sql-text.ts";

export type { NewUserRow, UserRow };

/** Filters of the user list; each one given narrows it. */
export interface UserFilters {
  status?: string;
  is_agent?: number;
  team_id?: string;
  /** Case-insensitive prefix of the username or the display name. */
  q?: string;
}

export async function insertUser(db: DbOrTx, row: NewUserRow): Promise<UserRow> {
  const [created] = await db.insert(appUsers).values(row).returning();
  if (!created) throw new Error("insert returned no row");
  return created;
}

export async function findUser(db: DbOrTx, accountId: string, id: string): Promise<UserRow | null> {
  const [row] = await db.select().from(appUsers).where(and(eq(appUsers.account_id, accountId), eq(appUsers.id, id))).limit(1);
  return row ?? null;
}

/**
 * Locks a user row for deletion (run inside a transaction): a device write holding the row waits
 * to commit first, so the delete then sees and removes that device too. False when there is no such user.
 */
export async function lockUserForDelete(tx: DbOrTx, accountId: string, id: string): Promise<boolean> {
  const rows = await tx
    .select({ id: appUsers.id })
    .from(appUsers)
    .where(and(eq(appUsers.account_id, accountId), eq(appUsers.id, id)))
    .for("update");
  return rows.length > 0;
}

/** Users of an account after `afterId`, in id (creation) order. */
export async function listUsers(db: DbOrTx, accountId: string, filters: UserFilters, afterId: string | null, limit: number): Promise<UserRow[]> {
  const where: SQL[] = [eq(appUsers.account_id, accountId)];
  if (afterId) where.push(gt(appUsers.id, afterId));
  if (filters.status !== undefined) where.push(eq(appUsers.status, filters.status));
  if (filters.is_agent !== undefined) where.push(eq(appUsers.is_agent, filters.is_agent));
  if (filters.team_id !== undefined) where.push(eq(appUsers.team_id, filters.team_id));
  if (filters.q !== undefined) {
    const prefix = likePrefix(filters.q);
    where.push(or(ilike(appUsers.username, prefix), ilike(appUsers.display_name, prefix))!);
  }
  return db.select().from(appUsers).where(and(...where)).orderBy(asc(appUsers.id)).limit(limit);
}

export async function updateUser(db: DbOrTx, accountId: string, id: string, patch: Partial<NewUserRow>): Promise<UserRow | null> {
  const [row] = await db.update(appUsers).set(patch).where(and(eq(appUsers.account_id, accountId), eq(appUsers.id, id))).returning();
  return row ?? null;
}

export async function deleteUserRow(db: DbOrTx, accountId: string, id: string): Promise<boolean> {
  const rows = await db.delete(appUsers).where(and(eq(appUsers.account_id, accountId), eq(appUsers.id, id))).returning({ id: appUsers.id });
  return rows.length > 0;
}
