/**
 * Who refers to what. Every column in the schema that names another resource is listed here once,
 * so deleting a resource still in use is refused with a 409 naming its users, whatever refers to it:
 * a route-target slot, a schedule, a greeting, a membership.
 *
 * When a table gains such a column, add it here; `references.test.ts` checks the list against the
 * live schema so a missing or misspelled entry fails the tests.
 */
import { sql, type SQL } from "drizzle-orm";
import type { DbOrTx } from "../db/db.ts";
import { rawRows } from "../db/migrate.ts";
import { conflict } from "../errors/app-error.ts";
import type { DestKind } from "./route-target.ts";

/** A resource kind that can be referred to (route-target kinds plus the rest). */
export type ReferencedKind = Exclude<DestKind, "hangup" | "feature"> | "schedule" | "media" | "agent_team" | "device" | "number";

/** A route-target slot: `<prefix>_kind` / `<prefix>_id` columns of `table`; `owner` names the row in messages. */
export const ROUTE_TARGET_SLOTS: Array<{ table: string; owner: string; prefix: string; ownerId?: string }> = [
  { table: "account", owner: "account", prefix: "did_default_dest" },
  { table: "number", owner: "number", prefix: "dest" },
  { table: "number", owner: "number", prefix: "closed_dest" },
  { table: "number", owner: "number", prefix: "holiday_dest" },
  { table: "extension", owner: "extension", prefix: "dest" },
  { table: "extension", owner: "extension", prefix: "closed_dest" },
  { table: "extension", owner: "extension", prefix: "holiday_dest" },
  { table: "ring_group", owner: "ring_group", prefix: "exit_dest" },
  { table: "ring_group", owner: "ring_group", prefix: "closed_dest" },
  { table: "ring_group", owner: "ring_group", prefix: "holiday_dest" },
  { table: "queue", owner: "queue", prefix: "timeout_dest" },
  { table: "queue", owner: "queue", prefix: "abandon_dest" },
  { table: "queue", owner: "queue", prefix: "no_agents_dest" },
  { table: "queue", owner: "queue", prefix: "queue_full_dest" },
  { table: "queue", owner: "queue", prefix: "ewt_dest" },
  { table: "queue", owner: "queue", prefix: "closed_dest" },
  { table: "queue", owner: "queue", prefix: "holiday_dest" },
  { table: "in_queue_option", owner: "queue", prefix: "dest", ownerId: "queue_id" },
  { table: "forward", owner: "forward", prefix: "overflow_dest" },
];

/** A plain reference column: `table.column` holds the id of a `target`. */
export const REFERENCE_COLUMNS: Array<{ table: string; column: string; owner: string; target: ReferencedKind; ownerId?: string }> = [
  { table: "number", column: "schedule_id", owner: "number", target: "schedule" },
  { table: "extension", column: "schedule_id", owner: "extension", target: "schedule" },
  { table: "ring_group", column: "schedule_id", owner: "ring_group", target: "schedule" },
  { table: "queue", column: "schedule_id", owner: "queue", target: "schedule" },
  { table: "ring_group", column: "moh_media_id", owner: "ring_group", target: "media" },
  { table: "queue", column: "moh_media_id", owner: "queue", target: "media" },
  { table: "conference", column: "moh_media_id", owner: "conference", target: "media" },
  { table: "voicemail", column: "greeting_media_id", owner: "voicemail", target: "media" },
  { table: "in_queue_option", column: "prompt_media_id", owner: "queue", target: "media", ownerId: "queue_id" },
  { table: "app_user", column: "voicemail_id", owner: "user", target: "voicemail" },
  { table: "app_user", column: "team_id", owner: "user", target: "agent_team" },
  { table: "ring_group_member", column: "user_id", owner: "ring_group", target: "user", ownerId: "ring_group_id" },
  { table: "ring_group_member", column: "device_id", owner: "ring_group", target: "device", ownerId: "ring_group_id" },
  { table: "agent_queue_assignment", column: "user_id", owner: "queue", target: "user", ownerId: "queue_id" },
  { table: "console_user", column: "user_id", owner: "console_user", target: "user" },
  { table: "media_playlist_item", column: "media_id", owner: "media_playlist", target: "media", ownerId: "playlist_id" },
  { table: "forward", column: "user_id", owner: "forward", target: "user" },
  { table: "forward", column: "number_id", owner: "forward", target: "number" },
];

/** Who uses a resource: the kind and id of each referring row (its owner: a queue for its option). */
export interface Usage {
  kind: string;
  id: string;
}

/** Every row of this account that refers to `kind` `id`, at most 20 (enough to tell a user what to change). */
export async function findUsages(db: DbOrTx, accountId: string, kind: ReferencedKind, id: string): Promise<Usage[]> {
  const parts: SQL[] = [];
  for (const slot of ROUTE_TARGET_SLOTS) {
    const ownerId = sql.identifier(slot.ownerId ?? "id");
    const accountColumn = sql.identifier(slot.table === "account" ? "id" : "account_id");
    parts.push(
      sql`select ${slot.owner} as kind, ${ownerId} as id from ${sql.identifier(slot.table)} where ${accountColumn} = ${accountId} and ${sql.identifier(`${slot.prefix}_kind`)} = ${kind} and ${sql.identifier(`${slot.prefix}_id`)} = ${id}`,
    );
  }
  for (const ref of REFERENCE_COLUMNS) {
    if (ref.target !== kind) continue;
    const ownerId = sql.identifier(ref.ownerId ?? "id");
    parts.push(
      sql`select ${ref.owner} as kind, ${ownerId} as id from ${sql.identifier(ref.table)} where account_id = ${accountId} and ${sql.identifier(ref.column)} = ${id}`,
    );
  }
  if (parts.length === 0) return [];
  const union = sql.join(parts, sql` union `);
  const rows = await rawRows<Usage>(db, sql`select distinct kind, id from (${union}) as usages order by kind, id limit 20`);
  return rows.filter((r) => !(r.kind === kind && r.id === id)); // a resource does not block its own deletion
}

/**
 * Refuses (409, naming the users in `used_by`) to delete a resource something still refers to.
 * @example await assertNotInUse(tx, accountId, "schedule", "sch_…")
 */
export async function assertNotInUse(db: DbOrTx, accountId: string, kind: ReferencedKind, id: string): Promise<void> {
  const usages = await findUsages(db, accountId, kind, id);
  if (usages.length) {
    const names = usages.slice(0, 5).map((u) => `${u.kind} ${u.id}`).join(", ");
    throw conflict(`Still in use by ${names}${usages.length > 5 ? " and others" : ""}; change those first.`, { used_by: usages });
  }
}
