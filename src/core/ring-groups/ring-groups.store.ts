/** Queries on ring groups and their members. The only file of this capability that touches drizzle. */
import { and, asc, eq, gt, ilike, sql, type SQL } from "drizzle-orm";
import type { DbOrTx } from "../db/db.ts";
import { rawRows } from "../db/migrate.ts";
import { ringGroupMembers, ringGroups, type RingGroupMemberRow, type RingGroupRow } from "./ring-groups.schema.ts";
import { likePrefix } from "../db/sql-text.ts";

export type NewRingGroupRow = typeof ringGroups.$inferInsert;
export type NewRingGroupMemberRow = typeof ringGroupMembers.$inferInsert;
export type RingGroupListRow = RingGroupRow & { member_count: number };

export async function insertRingGroup(db: DbOrTx, row: NewRingGroupRow): Promise<RingGroupRow> {
  const [created] = await db.insert(ringGroups).values(row).returning();
  if (!created) throw new Error("insert returned no row");
  return created;
}

export async function findRingGroup(db: DbOrTx, accountId: string, id: string): Promise<RingGroupRow | null> {
  const [row] = await db
    .select()
    .from(ringGroups)
    .where(and(eq(ringGroups.account_id, accountId), eq(ringGroups.id, id)))
    .limit(1);
  return row ?? null;
}

/** The group's row, locked until the transaction ends: an update merges onto it, a delete checks who refers to it. */
export async function findRingGroupForUpdate(db: DbOrTx, accountId: string, id: string): Promise<RingGroupRow | null> {
  const [row] = await db
    .select()
    .from(ringGroups)
    .where(and(eq(ringGroups.account_id, accountId), eq(ringGroups.id, id)))
    .limit(1)
    .for("update");
  return row ?? null;
}

export async function updateRingGroup(db: DbOrTx, accountId: string, id: string, patch: Partial<NewRingGroupRow>): Promise<RingGroupRow | null> {
  const [row] = await db
    .update(ringGroups)
    .set(patch)
    .where(and(eq(ringGroups.account_id, accountId), eq(ringGroups.id, id)))
    .returning();
  return row ?? null;
}

/** The group's members in ring order. */
export async function listRingGroupMembers(db: DbOrTx, accountId: string, ringGroupId: string): Promise<RingGroupMemberRow[]> {
  return db
    .select()
    .from(ringGroupMembers)
    .where(and(eq(ringGroupMembers.account_id, accountId), eq(ringGroupMembers.ring_group_id, ringGroupId)))
    .orderBy(asc(ringGroupMembers.position));
}

/** Replaces every member of the group with `members` (positions as given). Run inside a transaction. */
export async function replaceRingGroupMembers(db: DbOrTx, accountId: string, ringGroupId: string, members: NewRingGroupMemberRow[]): Promise<void> {
  await db.delete(ringGroupMembers).where(and(eq(ringGroupMembers.account_id, accountId), eq(ringGroupMembers.ring_group_id, ringGroupId)));
  if (members.length) await db.insert(ringGroupMembers).values(members);
}

/** Deletes the group and its members. Run inside a transaction. */
export async function deleteRingGroup(db: DbOrTx, accountId: string, id: string): Promise<boolean> {
  await db.delete(ringGroupMembers).where(and(eq(ringGroupMembers.account_id, accountId), eq(ringGroupMembers.ring_group_id, id)));
  const rows = await db
    .delete(ringGroups)
    .where(and(eq(ringGroups.account_id, accountId), eq(ringGroups.id, id)))
    .returning({ id: ringGroups.id });
  return rows.length > 0;
}

/** Filters of the ring group list. */
export interface RingGroupFilter {
  /** Name starts with this, any case. */
  namePrefix?: string;
  /** Only groups with this user as a member. */
  userId?: string;
  /** Only groups with this device as a member. */
  deviceId?: string;
  afterId: string | null;
  limit: number;
}

function hasMember(column: "user_id" | "device_id", value: string): SQL {
  return sql`exists (select 1 from ${ringGroupMembers} where ${ringGroupMembers.account_id} = ${ringGroups.account_id} and ${ringGroupMembers.ring_group_id} = ${ringGroups.id} and ${ringGroupMembers[column]} = ${value})`;
}

/** Ring groups of an account after `afterId` in id (creation) order, with their member counts. */
export async function selectRingGroups(db: DbOrTx, accountId: string, filter: RingGroupFilter): Promise<RingGroupListRow[]> {
  const conditions: SQL[] = [eq(ringGroups.account_id, accountId)];
  if (filter.afterId) conditions.push(gt(ringGroups.id, filter.afterId));
  if (filter.namePrefix) conditions.push(ilike(ringGroups.name, likePrefix(filter.namePrefix)));
  if (filter.userId) conditions.push(hasMember("user_id", filter.userId));
  if (filter.deviceId) conditions.push(hasMember("device_id", filter.deviceId));
  const memberCount = sql<number>`(select count(*) from ${ringGroupMembers} where ${ringGroupMembers.account_id} = ${ringGroups.account_id} and ${ringGroupMembers.ring_group_id} = ${ringGroups.id})`.mapWith(Number);
  const rows = await db
    .select({ group: ringGroups, member_count: memberCount })
    .from(ringGroups)
    .where(and(...conditions))
    .orderBy(asc(ringGroups.id))
    .limit(filter.limit);
  return rows.map((r) => ({ ...r.group, member_count: r.member_count }));
}

/**
 * Which of `ids` exist in `table` for this account. Raw SQL on purpose: users, devices and media are
 * other capabilities' tables, and this needs only their (account_id, id) keys. The rows found stay
 * key-share locked until the transaction ends, so a delete that locks its row first waits for this write.
 */
export async function existingIds(db: DbOrTx, table: "app_user" | "device" | "media_file", accountId: string, ids: readonly string[]): Promise<Set<string>> {
  if (ids.length === 0) return new Set();
  const list = sql.join(ids.map((id) => sql`${id}`), sql`, `);
  const rows = await rawRows<{ id: string }>(db, sql`select id from ${sql.identifier(table)} where account_id = ${accountId} and id in (${list}) for key share`);
  return new Set(rows.map((r) => r.id));
}
