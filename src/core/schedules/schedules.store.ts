/** Queries on schedules and their rules. The only file of this capability that touches drizzle. */
import { and, asc, eq, gt, ilike, sql, type SQL } from "drizzle-orm";
import type { DbOrTx } from "../db/db.ts";
import { timeScheduleRules, timeSchedules, type TimeScheduleRow, type TimeScheduleRuleRow } from "./schedules.schema.ts";
import { likePrefix } from "../db/sql-text.ts";

export type NewTimeScheduleRow = typeof timeSchedules.$inferInsert;
export type NewTimeScheduleRuleRow = typeof timeScheduleRules.$inferInsert;
export type TimeScheduleListRow = TimeScheduleRow & { rule_count: number };

export async function insertSchedule(db: DbOrTx, row: NewTimeScheduleRow): Promise<TimeScheduleRow> {
  const [created] = await db.insert(timeSchedules).values(row).returning();
  if (!created) throw new Error("insert returned no row");
  return created;
}

export async function findSchedule(db: DbOrTx, accountId: string, id: string): Promise<TimeScheduleRow | null> {
  const [row] = await db
    .select()
    .from(timeSchedules)
    .where(and(eq(timeSchedules.account_id, accountId), eq(timeSchedules.id, id)))
    .limit(1);
  return row ?? null;
}

/** The schedule's row, locked until the transaction ends: a delete holds it while it checks who still refers to it. */
export async function findScheduleForUpdate(db: DbOrTx, accountId: string, id: string): Promise<TimeScheduleRow | null> {
  const [row] = await db
    .select()
    .from(timeSchedules)
    .where(and(eq(timeSchedules.account_id, accountId), eq(timeSchedules.id, id)))
    .limit(1)
    .for("update");
  return row ?? null;
}

export async function updateSchedule(db: DbOrTx, accountId: string, id: string, patch: Partial<NewTimeScheduleRow>): Promise<TimeScheduleRow | null> {
  const [row] = await db
    .update(timeSchedules)
    .set(patch)
    .where(and(eq(timeSchedules.account_id, accountId), eq(timeSchedules.id, id)))
    .returning();
  return row ?? null;
}

/** The schedule's rules in position order. */
export async function listScheduleRules(db: DbOrTx, accountId: string, scheduleId: string): Promise<TimeScheduleRuleRow[]> {
  return db
    .select()
    .from(timeScheduleRules)
    .where(and(eq(timeScheduleRules.account_id, accountId), eq(timeScheduleRules.schedule_id, scheduleId)))
    .orderBy(asc(timeScheduleRules.position));
}

/** Replaces every rule of the schedule with `rules` (positions as given). Run inside a transaction. */
export async function replaceScheduleRules(db: DbOrTx, accountId: string, scheduleId: string, rules: NewTimeScheduleRuleRow[]): Promise<void> {
  await db.delete(timeScheduleRules).where(and(eq(timeScheduleRules.account_id, accountId), eq(timeScheduleRules.schedule_id, scheduleId)));
  if (rules.length) await db.insert(timeScheduleRules).values(rules);
}

/** Deletes the schedule and its rules; false when it does not exist. Run inside a transaction. */
export async function deleteSchedule(db: DbOrTx, accountId: string, id: string): Promise<boolean> {
  await db.delete(timeScheduleRules).where(and(eq(timeScheduleRules.account_id, accountId), eq(timeScheduleRules.schedule_id, id)));
  const rows = await db
    .delete(timeSchedules)
    .where(and(eq(timeSchedules.account_id, accountId), eq(timeSchedules.id, id)))
    .returning({ id: timeSchedules.id });
  return rows.length > 0;
}

/** Schedules of an account after `afterId` in id (creation) order, optionally by name prefix (any case). */
export async function selectSchedules(
  db: DbOrTx,
  accountId: string,
  filter: { namePrefix?: string; afterId: string | null; limit: number },
): Promise<TimeScheduleListRow[]> {
  const conditions: SQL[] = [eq(timeSchedules.account_id, accountId)];
  if (filter.afterId) conditions.push(gt(timeSchedules.id, filter.afterId));
  if (filter.namePrefix) conditions.push(ilike(timeSchedules.name, likePrefix(filter.namePrefix)));
  return db
    .select({
      account_id: timeSchedules.account_id,
      id: timeSchedules.id,
      name: timeSchedules.name,
      timezone: timeSchedules.timezone,
      created_at: timeSchedules.created_at,
      updated_at: timeSchedules.updated_at,
      rule_count: sql<number>`(select count(*) from ${timeScheduleRules} where ${timeScheduleRules.account_id} = ${timeSchedules.account_id} and ${timeScheduleRules.schedule_id} = ${timeSchedules.id})`.mapWith(Number),
    })
    .from(timeSchedules)
    .where(and(...conditions))
    .orderBy(asc(timeSchedules.id))
    .limit(filter.limit);
}

/**
 * True when the schedule exists in this account, for a write that is about to point at it. Inside a
 * transaction the row stays share-locked until commit, so a concurrent delete (which locks it for
 * update first) either sees the new reference and refuses, or runs first and this returns false.
 */
export async function lockScheduleShared(db: DbOrTx, accountId: string, id: string): Promise<boolean> {
  const rows = await db
    .select({ id: timeSchedules.id })
    .from(timeSchedules)
    .where(and(eq(timeSchedules.account_id, accountId), eq(timeSchedules.id, id)))
    .limit(1)
    .for("share");
  return rows.length > 0;
}
