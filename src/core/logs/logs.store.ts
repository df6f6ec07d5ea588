/** Queries on the account log. The only file of this capability that touches drizzle. */
import { and, desc, eq, inArray, lt, sql, type SQL } from "drizzle-orm";
import type { DbOrTx } from "../db/db.ts";
import { accountLogs, type AccountLogRow } from "./logs.schema.ts";

export type NewLogRow = typeof accountLogs.$inferInsert;

/** Writes one line (works on a transaction handle: the line commits or rolls back with it). */
export async function insertLog(db: DbOrTx, row: NewLogRow): Promise<void> {
  await db.insert(accountLogs).values(row);
}

/** Lines of one account before `beforeId`, newest first, at most `limit`. */
export async function listLogRows(
  db: DbOrTx,
  accountId: string,
  filter: { levels?: readonly string[]; callId?: string; source?: string },
  beforeId: string | null,
  limit: number,
): Promise<AccountLogRow[]> {
  const where: SQL[] = [eq(accountLogs.account_id, accountId)];
  if (filter.levels) where.push(inArray(accountLogs.level, [...filter.levels]));
  if (filter.callId !== undefined) where.push(eq(accountLogs.call_id, filter.callId));
  if (filter.source !== undefined) where.push(eq(accountLogs.source, filter.source));
  if (beforeId) where.push(lt(accountLogs.id, beforeId));
  return db
    .select()
    .from(accountLogs)
    .where(and(...where))
    .orderBy(desc(accountLogs.id))
    .limit(limit);
}

/** Deletes every line older than `beforeTs` (epoch ms), all accounts. Returns how many. */
export async function deleteLogsBefore(db: DbOrTx, beforeTs: number): Promise<number> {
  const gone = await db.delete(accountLogs).where(lt(accountLogs.ts, beforeTs)).returning({ id: accountLogs.id });
  return gone.length;
}

/** Accounts holding more than `maxRows` lines. */
export async function accountsOverLogCap(db: DbOrTx, maxRows: number): Promise<string[]> {
  const rows = await db
    .select({ account_id: accountLogs.account_id })
    .from(accountLogs)
    .groupBy(accountLogs.account_id)
    .having(sql`count(*) > ${maxRows}`);
  return rows.map((r) => r.account_id);
}

/** Keeps the newest `keep` lines of one account, deletes the rest. Returns how many went. */
export async function trimAccountLogs(db: DbOrTx, accountId: string, keep: number): Promise<number> {
  const [cutoff] = await db
    .select({ id: accountLogs.id })
    .from(accountLogs)
    .where(eq(accountLogs.account_id, accountId))
    .orderBy(desc(accountLogs.id))
    .offset(keep - 1)
    .limit(1);
  if (!cutoff) return 0;
  const gone = await db
    .delete(accountLogs)
    .where(and(eq(accountLogs.account_id, accountId), lt(accountLogs.id, cutoff.id)))
    .returning({ id: accountLogs.id });
  return gone.length;
}
