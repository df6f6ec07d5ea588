import { check, index, integer, pgTable, primaryKey, text, uniqueIndex } from "drizzle-orm/pg-core";
import { sql } from "drizzle-orm";
import { epochSeconds } from "../db/columns.ts";

/**
 * Ring groups (SPEC.md: ring_group): ring several users or devices at once or in turn, then exit to a
 * route target when nobody answers. Optional business hours through `schedule_id`.
 */
export const ringGroups = pgTable(
  "ring_group",
  {
    account_id: text("account_id").notNull(),
    id: text("id").notNull(),
    name: text("name").notNull(),
    strategy: text("strategy").notNull().default("ring_all"),
    /** How long the group rings before it exits; also a member's default timeout. */
    ring_timeout_sec: integer("ring_timeout_sec").notNull().default(20),
    /** Music on hold while the caller waits (media_file); null = ringback. */
    moh_media_id: text("moh_media_id"),
    exit_dest_kind: text("exit_dest_kind"),
    exit_dest_id: text("exit_dest_id"),
    schedule_id: text("schedule_id"),
    closed_dest_kind: text("closed_dest_kind"),
    closed_dest_id: text("closed_dest_id"),
    holiday_dest_kind: text("holiday_dest_kind"),
    holiday_dest_id: text("holiday_dest_id"),
    created_at: epochSeconds("created_at").notNull(),
    updated_at: epochSeconds("updated_at").notNull(),
  },
  (t) => [
    primaryKey({ columns: [t.account_id, t.id] }),
    // Names are how people pick a group in the console: unique per account, whatever the case.
    uniqueIndex("ring_group_name_uq").on(t.account_id, sql`lower(${t.name})`),
    index("ring_group_schedule_idx").on(t.account_id, t.schedule_id),
    check("ring_group_strategy_chk", sql`${t.strategy} in ('ring_all','sequential','round_robin')`),
    check("ring_group_ring_timeout_chk", sql`${t.ring_timeout_sec} between 5 and 600`),
  ],
);

/**
 * Members of a ring group, in ring order (`position`). Each is a user (all of their devices ring)
 * or one device. A write that carries members replaces the whole set.
 */
export const ringGroupMembers = pgTable(
  "ring_group_member",
  {
    account_id: text("account_id").notNull(),
    ring_group_id: text("ring_group_id").notNull(),
    position: integer("position").notNull(),
    user_id: text("user_id"),
    device_id: text("device_id"),
    /** Seconds after the group starts before this member rings. */
    delay_sec: integer("delay_sec").notNull().default(0),
    /** Seconds this member rings; null = the group's ring_timeout_sec. */
    timeout_sec: integer("timeout_sec"),
  },
  (t) => [
    primaryKey({ columns: [t.account_id, t.ring_group_id, t.position] }),
    // Lookups by member: "groups containing this user" and the in-use check before deleting a user or device.
    index("ring_group_member_user_idx").on(t.account_id, t.user_id),
    index("ring_group_member_device_idx").on(t.account_id, t.device_id),
    check("ring_group_member_one_target_chk", sql`(${t.user_id} is null) <> (${t.device_id} is null)`),
    check("ring_group_member_delay_chk", sql`${t.delay_sec} between 0 and 300`),
    check("ring_group_member_timeout_chk", sql`${t.timeout_sec} is null or ${t.timeout_sec} between 5 and 600`),
  ],
);

export type RingGroupRow = typeof ringGroups.$inferSelect;
export type RingGroupMemberRow = typeof ringGroupMembers.$inferSelect;
