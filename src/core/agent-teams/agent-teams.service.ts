/** Use cases on agent teams: the groups agent and queue reports roll up by. */
import type { DbOrTx } from "../db/db.ts";
import { conflict, isUniqueViolation, notFound } from "../errors/app-error.ts";
import { newId } from "../ids/ids.ts";
import { nowSeconds } from "../db/columns.ts";
import { decodeCursor, toPage } from "../pagination/pagination.ts";
import { assertNotInUse } from "../routing/references.ts";
import type { AgentTeamModel } from "./agent-teams.model.ts";
import type { AgentTeamRow } from "./agent-teams.schema.ts";
import { deleteTeam as deleteTeamRow, findTeam, insertTeam, listTeams, teamMembers, updateTeam as updateTeamRow } from "./agent-teams.store.ts";

/** Maps a row to the API shape (without members). */
export function toTeam(row: AgentTeamRow): AgentTeamModel.Team {
  return { id: row.id, name: row.name, created_at: row.created_at, updated_at: row.updated_at };
}

async function withMembers(db: DbOrTx, row: AgentTeamRow): Promise<AgentTeamModel.TeamWithMembers> {
  const members = await teamMembers(db, row.account_id, row.id);
  return { ...toTeam(row), members: members.map((m) => ({ id: m.id, username: m.username, display_name: m.display_name })) };
}

function nameTaken(): never {
  throw conflict("A team with this name already exists.", { field: "name" });
}

/** Creates a team. Names are unique per account, ignoring case (409 `name`). */
export async function createTeam(db: DbOrTx, accountId: string, input: AgentTeamModel.Create): Promise<AgentTeamModel.TeamWithMembers> {
  const now = nowSeconds();
  try {
    const row = await insertTeam(db, { account_id: accountId, id: newId("team"), name: input.name, created_at: now, updated_at: now });
    return { ...toTeam(row), members: [] };
  } catch (error) {
    if (isUniqueViolation(error)) nameTaken();
    throw error;
  }
}

/** One team with its members. */
export async function getTeam(db: DbOrTx, accountId: string, id: string): Promise<AgentTeamModel.TeamWithMembers> {
  const row = await findTeam(db, accountId, id);
  if (!row) throw notFound("agent team");
  return withMembers(db, row);
}

/** Teams of the account, keyset-paginated, without members. */
export async function listAgentTeams(
  db: DbOrTx,
  accountId: string,
  query: { limit: number; cursor?: string; q?: string },
): Promise<{ data: AgentTeamModel.Team[]; next_cursor?: string }> {
  const rows = await listTeams(db, accountId, { namePrefix: query.q?.toLowerCase() }, decodeCursor(query.cursor, "team"), query.limit);
  return toPage(rows, query.limit, toTeam);
}

/** Renames a team. */
export async function patchTeam(db: DbOrTx, accountId: string, id: string, input: AgentTeamModel.Patch): Promise<AgentTeamModel.TeamWithMembers> {
  try {
    const row = await updateTeamRow(db, accountId, id, { ...(input.name !== undefined ? { name: input.name } : {}), updated_at: nowSeconds() });
    if (!row) throw notFound("agent team");
    return await withMembers(db, row);
  } catch (error) {
    if (isUniqueViolation(error)) nameTaken();
    throw error;
  }
}

/** Deletes a team nobody is in (409 naming the users otherwise). */
export async function deleteTeam(db: DbOrTx, accountId: string, id: string): Promise<void> {
  await db.transaction(async (tx) => {
    if (!(await findTeam(tx, accountId, id))) throw notFound("agent team");
    await assertNotInUse(tx, accountId, "agent_team", id);
    if (!(await deleteTeamRow(tx, accountId, id))) throw notFound("agent team");
  });
}
