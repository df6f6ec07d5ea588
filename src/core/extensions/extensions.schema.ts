import { check, index, jsonb, pgTable, primaryKey, text, uniqueIndex } from "drizzle-orm/pg-core";
import { sql } from "drizzle-orm";
import type { Static } from "@sinclair/typebox";
import type { DestXform } from "../routing/route-target.ts";
import { epochSeconds } from "../db/columns.ts";

/** Kinds an extension's closed and holiday slots may route to. */
export const EXTENSION_DEST_KINDS = ["flow", "user", "extension", "ring_group", "queue", "voicemail", "conference", "forward", "hangup"] as const;

const inList = (values: readonly string[]) => sql.raw(values.map((v) => `'${v}'`).join(","));

/**
 * Extensions (SPEC.md section 2): short codes dialled inside the account. The route-target and
 * schedule fields mirror a number's; the main slot may also be a feature code (`feature`).
 */
export const extensions = pgTable(
  "extension",
  {
    account_id: text("account_id").notNull(),
    id: text("id").notNull(),
    /** 1–16 of 0-9, * and #; unique per account. */
    digits: text("digits").notNull(),
    dest_kind: text("dest_kind").notNull(),
    dest_id: text("dest_id"),
    dest_xform: jsonb("dest_xform").$type<Static<typeof DestXform>>(),
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
    // The dial plan looks an extension up by its digits; also the digits prefix filter of the list.
    uniqueIndex("extension_digits_uq").on(t.account_id, t.digits),
    // The in-use check before deleting a target, and the dest_id filter.
    index("extension_dest_idx").on(t.account_id, t.dest_id),
    index("extension_schedule_idx").on(t.account_id, t.schedule_id),
    check("extension_digits_chk", sql`${t.digits} ~ '^[0-9*#]{1,16}$'`),
    check("extension_dest_kind_chk", sql`${t.dest_kind} in (${inList([...EXTENSION_DEST_KINDS, "feature"])})`),
    check("extension_closed_dest_kind_chk", sql`${t.closed_dest_kind} is null or ${t.closed_dest_kind} in (${inList(EXTENSION_DEST_KINDS)})`),
    check("extension_holiday_dest_kind_chk", sql`${t.holiday_dest_kind} is null or ${t.holiday_dest_kind} in (${inList(EXTENSION_DEST_KINDS)})`),
    // Closed and holiday destinations only apply while a schedule says the extension is closed.
    check("extension_closed_needs_schedule_chk", sql`${t.schedule_id} is not null or (${t.closed_dest_kind} is null and ${t.holiday_dest_kind} is null)`),
  ],
);

export type ExtensionRow = typeof extensions.$inferSelect;
export type NewExtensionRow = typeof extensions.$inferInsert;
