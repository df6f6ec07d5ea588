import { check, integer, jsonb, pgTable, primaryKey, text } from "drizzle-orm/pg-core";
import { sql } from "drizzle-orm";
import { epochSeconds, flag } from "../db/columns.ts";

/**
 * Versioned call flows (SPEC.md: name, version, is_published, graph { nodes, edges }). The table
 * exists so numbers and extensions can route to a flow; the flow API and its lint come with the
 * flows capability.
 */
export const flows = pgTable(
  "flow",
  {
    account_id: text("account_id").notNull(),
    id: text("id").notNull(),
    name: text("name").notNull(),
    version: integer("version").notNull().default(0),
    is_published: flag("is_published").notNull().default(0),
    graph: jsonb("graph").notNull().default(sql`'{"nodes":[],"edges":[]}'::jsonb`),
    created_at: epochSeconds("created_at").notNull(),
    updated_at: epochSeconds("updated_at").notNull(),
  },
  (t) => [primaryKey({ columns: [t.account_id, t.id] }), check("flow_is_published_chk", sql`${t.is_published} in (0,1)`)],
);
