/**
 * Whether a tenant row exists, for checks across capabilities (a queue's music-on-hold file, a number's
 * schedule, a route target): one query shape, written once. Another account's row reads as absent.
 */
import { sql } from "drizzle-orm";
import type { DbOrTx } from "./db.ts";
import { rawRows } from "./migrate.ts";

/** Tenant tables other capabilities check ids against. */
export type TenantTable =
  | "app_user"
  | "device"
  | "media_file"
  | "time_schedule"
  | "voicemail"
  | "agent_team"
  | "flow"
  | "extension"
  | "ring_group"
  | "queue"
  | "conference"
  | "forward";

/**
 * True when `table` holds row `id` of this account.
 * @example if (!(await rowExists(db, "media_file", accountId, mohId))) throw validationFailed(…)
 */
export async function rowExists(db: DbOrTx, table: TenantTable, accountId: string, id: string): Promise<boolean> {
  const rows = await rawRows<{ one: number }>(db, sql`select 1 as one from ${sql.identifier(table)} where account_id = ${accountId} and id = ${id} limit 1`);
  return rows.length > 0;
}
