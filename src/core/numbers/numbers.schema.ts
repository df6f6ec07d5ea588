import { check, index, integer, jsonb, pgTable, primaryKey, text, uniqueIndex } from "drizzle-orm/pg-core";
import { sql } from "drizzle-orm";
import { epochSeconds, flag } from "../db/columns.ts";
import type { Static } from "@sinclair/typebox";
import type { DestXform } from "../routing/route-target.ts";

/** Number states: active routes calls, disabled refuses them, virtual is held but not delivered by a carrier. */
export const NUMBER_STATUSES = ["active", "disabled", "virtual"] as const;
/** How a number treats fax: plain voice, T.38 re-INVITE, or G.711 pass-through. */
export const FAX_MODES = ["voice", "t38", "passthrough"] as const;
/** Kinds a number's slots may route to (no feature codes: those are dialled internally, on extensions). */
export const NUMBER_DEST_KINDS = ["flow", "user", "extension", "ring_group", "queue", "voicemail", "conference", "forward", "hangup"] as const;

const inList = (values: readonly string[]) => sql.raw(values.map((v) => `'${v}'`).join(","));

/**
 * Inbound DIDs (SPEC.md section 2, Number). `dest_*`, `closed_dest_*` and `holiday_dest_*` are
 * route-target slots listed in src/core/routing/references.ts; `schedule_id` names a time_schedule.
 */
export const numbers = pgTable(
  "number",
  {
    account_id: text("account_id").notNull(),
    id: text("id").notNull(),
    /** E.164 without +. Unique platform-wide through `did_lookup`; unique here per account as the list's index. */
    e164: text("e164").notNull(),
    status: text("status").notNull().default("active"),
    dest_kind: text("dest_kind").notNull(),
    dest_id: text("dest_id"),
    dest_xform: jsonb("dest_xform").$type<Static<typeof DestXform>>(),
    /** Concurrent calls on this DID; null = unlimited. */
    max_channels: integer("max_channels"),
    fax_mode: text("fax_mode").notNull().default("voice"),
    allow_anonymous: flag("allow_anonymous").notNull().default(1),
    schedule_id: text("schedule_id"),
    closed_dest_kind: text("closed_dest_kind"),
    closed_dest_id: text("closed_dest_id"),
    holiday_dest_kind: text("holiday_dest_kind"),
    holiday_dest_id: text("holiday_dest_id"),
    label: text("label"),
    created_at: epochSeconds("created_at").notNull(),
    updated_at: epochSeconds("updated_at").notNull(),
  },
  (t) => [
    primaryKey({ columns: [t.account_id, t.id] }),
    // Serves the e164 prefix filter of the list; the global uniqueness is did_lookup's primary key.
    uniqueIndex("number_e164_uq").on(t.account_id, t.e164),
    // The in-use check before deleting a target, and the dest_id filter.
    index("number_dest_idx").on(t.account_id, t.dest_id),
    index("number_schedule_idx").on(t.account_id, t.schedule_id),
    check("number_status_chk", sql`${t.status} in (${inList(NUMBER_STATUSES)})`),
    check("number_fax_mode_chk", sql`${t.fax_mode} in (${inList(FAX_MODES)})`),
    check("number_allow_anonymous_chk", sql`${t.allow_anonymous} in (0,1)`),
    check("number_max_channels_chk", sql`${t.max_channels} is null or ${t.max_channels} >= 0`),
    check("number_dest_kind_chk", sql`${t.dest_kind} in (${inList(NUMBER_DEST_KINDS)})`),
    check("number_closed_dest_kind_chk", sql`${t.closed_dest_kind} is null or ${t.closed_dest_kind} in (${inList(NUMBER_DEST_KINDS)})`),
    check("number_holiday_dest_kind_chk", sql`${t.holiday_dest_kind} is null or ${t.holiday_dest_kind} in (${inList(NUMBER_DEST_KINDS)})`),
    // Closed and holiday destinations only apply while a schedule says the number is closed.
    check("number_closed_needs_schedule_chk", sql`${t.schedule_id} is not null or (${t.closed_dest_kind} is null and ${t.holiday_dest_kind} is null)`),
  ],
);

/**
 * Global reference table: E.164 → number. An inbound call arrives with only the dialled number, so
 * the edge's lookup cannot be routed by account_id; its primary key is also the platform-wide
 * uniqueness of a DID.
 */
export const didLookup = pgTable("did_lookup", {
  e164: text("e164").primaryKey(),
  account_id: text("account_id").notNull(),
  number_id: text("number_id").notNull(),
});

export type NumberRow = typeof numbers.$inferSelect;
export type NewNumberRow = typeof numbers.$inferInsert;
