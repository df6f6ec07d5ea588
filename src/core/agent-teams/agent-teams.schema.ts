import { pgTable, primaryKey, text, uniqueIndex } from "drizzle-orm/pg-core";
import { sql } from "drizzle-orm";
import { epochSeconds } from "../db/columns.ts";

/**
 * Agent teams: reporting groups. Membership lives on the user (`app_user.team_id`), so a user is in
 * at most one team and a team's members are a query, not rows here.
 */
export const agentTeams = pgTable(
  "agent_team",
  {
    account_id: text("account_id").notNull(),
    id: text("id").notNull(),
    name: text("name").notNull(),
    created_at: epochSeconds("created_at").notNull(),
    updated_at: epochSeconds("updated_at").notNull(),
  },
  (t) => [
    primaryKey({ columns: [t.account_id, t.id] }),
    // "Sales" and "sales" side by side in a report would be a mistake, not two teams.
    uniqueIndex("agent_team_name_uq").on(t.account_id, sql`lower(${t.name})`),
  ],
);

export type AgentTeamRow = typeof agentTeams.$inferSelect;
