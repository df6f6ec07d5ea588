import { check, integer, pgTable, primaryKey, smallint, text, uniqueIndex } from "drizzle-orm/pg-core";
import { sql } from "drizzle-orm";
import { epochSeconds, flag } from "../db/columns.ts";

/**
 * Business-hours schedules (SPEC.md: time_schedule). Numbers, extensions, ring groups and queues
 * point at one through `schedule_id`; the router evaluates it with `evaluateSchedule`.
 */
export const timeSchedules = pgTable(
  "time_schedule",
  {
    account_id: text("account_id").notNull(),
    id: text("id").notNull(),
    name: text("name").notNull(),
    /** IANA zone; null = the account's time zone, so a schedule follows the account when it moves. */
    timezone: text("timezone"),
    created_at: epochSeconds("created_at").notNull(),
    updated_at: epochSeconds("updated_at").notNull(),
  },
  (t) => [
    primaryKey({ columns: [t.account_id, t.id] }),
    // Names are how people pick a schedule in the console: unique per account, whatever the case.
    uniqueIndex("time_schedule_name_uq").on(t.account_id, sql`lower(${t.name})`),
  ],
);

/**
 * The rules of a schedule, kept in the order they were sent (`position`). A write that carries
 * rules replaces the whole set, so positions are always 0..n-1.
 */
export const timeScheduleRules = pgTable(
  "time_schedule_rule",
  {
    account_id: text("account_id").notNull(),
    schedule_id: text("schedule_id").notNull(),
    position: integer("position").notNull(),
    kind: text("kind").notNull(),
    /** Day of week, 0 = Sunday; weekly rules only. */
    dow: smallint("dow"),
    /** HH:MM; required on weekly rules, optional (= whole day) on date rules. */
    start_time: text("start_time"),
    /** HH:MM, 24:00 allowed; after start_time. */
    end_time: text("end_time"),
    /** YYYY-MM-DD; the day of a date rule, the first day of a date_range. */
    start_date: text("start_date"),
    /** YYYY-MM-DD; the last day of a date_range (inclusive). */
    end_date: text("end_date"),
    /** 0 = an open window; 1 = closed (a holiday on date rules, a break on weekly ones). */
    is_closed: flag("is_closed").notNull().default(0),
    label: text("label"),
  },
  (t) => [
    primaryKey({ columns: [t.account_id, t.schedule_id, t.position] }),
    check("time_schedule_rule_kind_chk", sql`${t.kind} in ('weekly','date','date_range')`),
    check("time_schedule_rule_dow_chk", sql`${t.dow} is null or ${t.dow} between 0 and 6`),
    check("time_schedule_rule_is_closed_chk", sql`${t.is_closed} in (0,1)`),
    check("time_schedule_rule_times_chk", sql`${t.start_time} is null or ${t.end_time} is null or ${t.start_time} < ${t.end_time}`),
    check("time_schedule_rule_dates_chk", sql`${t.start_date} is null or ${t.end_date} is null or ${t.start_date} <= ${t.end_date}`),
  ],
);

export type TimeScheduleRow = typeof timeSchedules.$inferSelect;
export type TimeScheduleRuleRow = typeof timeScheduleRules.$inferSelect;
