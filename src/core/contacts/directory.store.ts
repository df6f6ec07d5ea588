/**
 * Queries of the internal directory: the account's active users, read from `app_user` (owned by the
 * users capability) with plain SQL so this capability does not depend on that one's schema module.
 */
import { sql, type SQL } from "drizzle-orm";
import type { DbOrTx } from "../db/db.ts";
import { rawRows } from "../db/migrate.ts";
import { KEYPAD_DIGITS, KEYPAD_LETTERS } from "./keypad.ts";
import { likePrefix } from "../db/sql-text.ts";

export interface DirectoryRow {
  id: string;
  username: string;
  display_name: string;
  is_agent: number;
}

export interface DirectoryFilter {
  /** Keypad digits a first or last name must start with. */
  digits?: string;
  /** Lower-cased prefix of the whole name, the last name or the extension. */
  prefix?: string;
}

/** A text expression spelled on the keypad, letters only. */
function keypad(expr: SQL): SQL {
  return sql`translate(regexp_replace(lower(${expr}), '[^a-z]', '', 'g'), ${KEYPAD_LETTERS}, ${KEYPAD_DIGITS})`;
}

/** Active users of the account after `afterId`, in id order, narrowed by `filter`. */
export async function listDirectoryRows(db: DbOrTx, accountId: string, filter: DirectoryFilter, afterId: string | null, limit: number): Promise<DirectoryRow[]> {
  const name = sql`u.name`;
  const first = sql`split_part(u.name, ' ', 1)`;
  const last = sql`regexp_replace(u.name, '^.*\\s', '')`;
  const conditions: SQL[] = [sql`true`];
  if (filter.digits !== undefined) {
    const pattern = `${filter.digits}%`;
    conditions.push(sql`(${keypad(first)} like ${pattern} or ${keypad(last)} like ${pattern})`);
  }
  if (filter.prefix !== undefined) {
    const pattern = likePrefix(filter.prefix);
    conditions.push(sql`(lower(${name}) like ${pattern} or lower(${last}) like ${pattern} or lower(u.username) like ${pattern})`);
  }
  if (afterId) conditions.push(sql`u.id > ${afterId}`);
  return rawRows<DirectoryRow>(
    db,
    sql`select u.id, u.username, u.name as display_name, u.is_agent from (
          select id, username, coalesce(nullif(trim(display_name), ''), username) as name, is_agent
          from app_user where account_id = ${accountId} and status = 'active'
        ) as u
        where ${sql.join(conditions, sql` and `)}
        order by u.id limit ${limit}`,
  );
}
