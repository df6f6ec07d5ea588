import { check, integer, pgTable, primaryKey, text } from "drizzle-orm/pg-core";
import { sql } from "drizzle-orm";
import { epochSeconds } from "../db/columns.ts";

/**
 * Agent scripts: a blob the service stores and the agent's client renders (markdown, HTML or a JSON
 * document a client-side form engine reads). The service never interprets the body beyond checking
 * that a JSON script parses.
 */
export const scripts = pgTable(
  "script",
  {
    account_id: text("account_id").notNull(),
    id: text("id").notNull(),
    name: text("name").notNull(),
    description: text("description"),
    content_type: text("content_type").notNull(),
    body: text("body").notNull(),
    /** 1 at creation, bumped by every update, so a client can tell its cached copy is stale. */
    version: integer("version").notNull().default(1),
    created_at: epochSeconds("created_at").notNull(),
    updated_at: epochSeconds("updated_at").notNull(),
  },
  (t) => [
    primaryKey({ columns: [t.account_id, t.id] }),
    check("script_content_type_chk", sql`${t.content_type} in ('text/markdown','text/html','application/json')`),
    check("script_version_chk", sql`${t.version} >= 1`),
  ],
);

export type ScriptRow = typeof scripts.$inferSelect;
