/** Queries on agent teams and their members. The only file of this capability that touches drizzle. */
import { and, asc, eq, gt, sql, type SQL } from "drizzle-orm";
import type { DbOrTx } from "../db/db.ts";
import { rawRows } from "../db/migrate.ts";
import { agentTeams, type AgentTeamRow } from "./agent-teams.schema.ts";
import { likePrefix } from "../db/sql-text.ts";

export type NewAgentTeamRow = typeof agentTeams.$inferInsert;

export interface TeamMemberRow {
  id: string;
  username: string;
  display_name: string;
}

export async function insertTeam(db: DbOrTx, row: NewAgentTeamRow): Promise<AgentTeamRow> {
  const [created] = await db.insert(agentTeams).values(row).returning();
  if (!created) throw new Error("insert returned no row");
  return created;
}

export async function findTeam(db: DbOrTx, accountId: string, id: string): Promise<AgentTeamRow | null> {
  const [row] = await db
    .select()
    .from(agentTeams)
    .where(and(eq(agentTeams.account_id, accountId), eq(agentTeams.id, id)))
    .limit(1);
  return row ?? null;
}

/** Teams after `afterId` in creation order, optionally by name prefix (lower-cased). */
export async function listTeams(db: DbOrTx, accountId: string, filter: { namePrefix?: string }, afterId: string | null, limit: number): Promise<AgentTeamRow[]> {
  const conditions: SQL[] = [eq(agentTeams.account_id, accountId)];
  if (filter.namePrefix !== undefined) {
    conditions.push(sql`lower(${agentTeams.name}) like ${likePrefix(filter.namePrefix)}`);
  }
  if (afterId) conditions.push(gt(agentTeams.id, afterId));
  return db
    .select()
    .from(agentTeams)
    .where(and(...conditions))
    .orderBy(asc(agentTeams.id))
    .limit(limit);
}

export async function updateTeam(db: DbOrTx, accountId: string, id: string, patch: Partial<NewAgentTeamRow>): Promise<AgentTeamRow | null> {
  const [row] = await db
    .update(agentTeams)
    .set(patch)
    .where(and(eq(agentTeams.account_id, accountId), eq(agentTeams.id, id)))
    .returning();
  return row ?? null;
}

export async function deleteTeam(db: DbOrTx, accountId: string, id: string): Promise<boolean> {
  const rows = await db
    .delete(agentTeams)
    .where(and(eq(agentTeams.account_id, accountId), eq(agentTeams.id, id)))
    .returning({ id: agentTeams.id });
  return rows.length > 0;
}

/** Users whose team_id is `teamId`, by name. Read from `app_user` (the users capability's table) with plain SQL. */
export async function teamMembers(db: DbOrTx, accountId: string, teamId: string): Promise<TeamMemberRow[]> {
  return rawRows<TeamMemberRow>(
    db,
    sql`select id, username, display_name from app_user where account_id = ${accountId} and team_id = ${teamId} order by lower(display_name), id`,
  );
}
