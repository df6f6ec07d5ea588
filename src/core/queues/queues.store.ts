/** Queries on queues, their members and options. The only file of this capability that touches drizzle. */
import { and, asc, eq, gt, ilike, inArray, sql, type SQL } from "drizzle-orm";
import type { DbOrTx } from "../db/db.ts";
import { rawRows } from "../db/migrate.ts";
import {
  agentQueueAssignments,
  inQueueOptions,
  queues,
  type AgentQueueAssignmentRow,
  type InQueueOptionRow,
  type NewQueueRow,
  type QueueRow,
} from "./queues.schema.ts";
import { likePrefix } from "../db/sql-text.ts";

export async function insertQueue(db: DbOrTx, row: NewQueueRow): Promise<QueueRow> {
  const [created] = await db.insert(queues).values(row).returning();
  if (!created) throw new Error("insert returned no row");
  return created;
}

/**
 * One queue of the account. `forUpdate` locks the row until the transaction ends, so writes to the
 * queue and to its members and options are serialized against each other and against its deletion.
 */
export async function findQueue(db: DbOrTx, accountId: string, id: string, options: { forUpdate?: boolean } = {}): Promise<QueueRow | null> {
  const query = db.select().from(queues).where(and(eq(queues.account_id, accountId), eq(queues.id, id))).limit(1);
  const [row] = options.forUpdate ? await query.for("update") : await query;
  return row ?? null;
}

export async function updateQueueRow(db: DbOrTx, accountId: string, id: string, patch: Partial<NewQueueRow>): Promise<QueueRow | null> {
  const [row] = await db.update(queues).set(patch).where(and(eq(queues.account_id, accountId), eq(queues.id, id))).returning();
  return row ?? null;
}

export async function deleteQueueRow(db: DbOrTx, accountId: string, id: string): Promise<boolean> {
  const rows = await db.delete(queues).where(and(eq(queues.account_id, accountId), eq(queues.id, id))).returning({ id: queues.id });
  return rows.length > 0;
}

/** Filters of the queue list. */
export interface QueueListFilter {
  /** Case-insensitive prefix of the name. */
  namePrefix?: string;
  /** Only queues this user is a member of. */
  memberUserId?: string;
}

/** Queues of the account after `afterId`, in id (creation) order. */
export async function listQueueRows(db: DbOrTx, accountId: string, filter: QueueListFilter, afterId: string | null, limit: number): Promise<QueueRow[]> {
  const conditions: SQL[] = [eq(queues.account_id, accountId)];
  if (afterId) conditions.push(gt(queues.id, afterId));
  if (filter.namePrefix) conditions.push(ilike(queues.name, likePrefix(filter.namePrefix)));
  if (filter.memberUserId) {
    const memberOf = db
      .select({ id: agentQueueAssignments.queue_id })
      .from(agentQueueAssignments)
      .where(and(eq(agentQueueAssignments.account_id, accountId), eq(agentQueueAssignments.user_id, filter.memberUserId)));
    conditions.push(inArray(queues.id, memberOf));
  }
  return db.select().from(queues).where(and(...conditions)).orderBy(asc(queues.id)).limit(limit);
}

/** Members of a queue by tier, then position (the order calls are offered in for top_down). */
export async function listMemberRows(db: DbOrTx, accountId: string, queueId: string): Promise<AgentQueueAssignmentRow[]> {
  return db
    .select()
    .from(agentQueueAssignments)
    .where(and(eq(agentQueueAssignments.account_id, accountId), eq(agentQueueAssignments.queue_id, queueId)))
    .orderBy(asc(agentQueueAssignments.tier_level), asc(agentQueueAssignments.position), asc(agentQueueAssignments.created_at), asc(agentQueueAssignments.user_id));
}

export async function findMemberRow(db: DbOrTx, accountId: string, queueId: string, userId: string): Promise<AgentQueueAssignmentRow | null> {
  const [row] = await db
    .select()
    .from(agentQueueAssignments)
    .where(and(eq(agentQueueAssignments.account_id, accountId), eq(agentQueueAssignments.queue_id, queueId), eq(agentQueueAssignments.user_id, userId)))
    .limit(1);
  return row ?? null;
}

export async function insertMemberRow(db: DbOrTx, row: typeof agentQueueAssignments.$inferInsert): Promise<AgentQueueAssignmentRow> {
  const [created] = await db.insert(agentQueueAssignments).values(row).returning();
  if (!created) throw new Error("insert returned no row");
  return created;
}

export async function updateMemberRow(
  db: DbOrTx,
  accountId: string,
  queueId: string,
  userId: string,
  patch: Partial<Pick<AgentQueueAssignmentRow, "tier_level" | "position" | "delay_sec" | "mode">>,
): Promise<AgentQueueAssignmentRow | null> {
  const [row] = await db
    .update(agentQueueAssignments)
    .set(patch)
    .where(and(eq(agentQueueAssignments.account_id, accountId), eq(agentQueueAssignments.queue_id, queueId), eq(agentQueueAssignments.user_id, userId)))
    .returning();
  return row ?? null;
}

export async function deleteMemberRow(db: DbOrTx, accountId: string, queueId: string, userId: string): Promise<boolean> {
  const rows = await db
    .delete(agentQueueAssignments)
    .where(and(eq(agentQueueAssignments.account_id, accountId), eq(agentQueueAssignments.queue_id, queueId), eq(agentQueueAssignments.user_id, userId)))
    .returning({ user_id: agentQueueAssignments.user_id });
  return rows.length > 0;
}

export async function deleteMemberRows(db: DbOrTx, accountId: string, queueId: string): Promise<void> {
  await db.delete(agentQueueAssignments).where(and(eq(agentQueueAssignments.account_id, accountId), eq(agentQueueAssignments.queue_id, queueId)));
}

export async function listOptionRows(db: DbOrTx, accountId: string, queueId: string): Promise<InQueueOptionRow[]> {
  return db
    .select()
    .from(inQueueOptions)
    .where(and(eq(inQueueOptions.account_id, accountId), eq(inQueueOptions.queue_id, queueId)))
    .orderBy(asc(inQueueOptions.digit));
}

export async function findOptionRow(db: DbOrTx, accountId: string, queueId: string, digit: string): Promise<InQueueOptionRow | null> {
  const [row] = await db
    .select()
    .from(inQueueOptions)
    .where(and(eq(inQueueOptions.account_id, accountId), eq(inQueueOptions.queue_id, queueId), eq(inQueueOptions.digit, digit)))
    .limit(1);
  return row ?? null;
}

export async function countOptionRows(db: DbOrTx, accountId: string, queueId: string): Promise<number> {
  const [row] = await db
    .select({ n: sql<number>`count(*)::int` })
    .from(inQueueOptions)
    .where(and(eq(inQueueOptions.account_id, accountId), eq(inQueueOptions.queue_id, queueId)));
  return Number(row?.n ?? 0);
}

/** Writes the option of one key, replacing every column of an existing one. */
export async function upsertOptionRow(db: DbOrTx, row: InQueueOptionRow): Promise<InQueueOptionRow> {
  const { account_id: _a, queue_id: _q, digit: _d, ...rest } = row;
  const [written] = await db
    .insert(inQueueOptions)
    .values(row)
    .onConflictDoUpdate({ target: [inQueueOptions.account_id, inQueueOptions.queue_id, inQueueOptions.digit], set: rest })
    .returning();
  if (!written) throw new Error("upsert returned no row");
  return written;
}

/** Deletes one option; returns it (its secret ref is the caller's to remove), or null when absent. */
export async function deleteOptionRow(db: DbOrTx, accountId: string, queueId: string, digit: string): Promise<InQueueOptionRow | null> {
  const [row] = await db
    .delete(inQueueOptions)
    .where(and(eq(inQueueOptions.account_id, accountId), eq(inQueueOptions.queue_id, queueId), eq(inQueueOptions.digit, digit)))
    .returning();
  return row ?? null;
}

/** Deletes every option of a queue; returns the secret refs they held. */
export async function deleteOptionRows(db: DbOrTx, accountId: string, queueId: string): Promise<string[]> {
  const rows = await db
    .delete(inQueueOptions)
    .where(and(eq(inQueueOptions.account_id, accountId), eq(inQueueOptions.queue_id, queueId)))
    .returning({ ref: inQueueOptions.webhook_secret_ref });
  return rows.flatMap((r) => (r.ref ? [r.ref] : []));
}

// The tables below belong to other capabilities (users, media, schedules); queues only ask whether a
// row exists, with raw SQL, so this capability does not import their schemas.

/** A user of the account and whether it is an agent; null when the account has no such user. */
export async function findUserAgentFlag(db: DbOrTx, accountId: string, userId: string): Promise<{ is_agent: number } | null> {
  const [row] = await rawRows<{ is_agent: number }>(db, sql`select is_agent from app_user where account_id = ${accountId} and id = ${userId} limit 1`);
  return row ? { is_agent: Number(row.is_agent) } : null;
}

