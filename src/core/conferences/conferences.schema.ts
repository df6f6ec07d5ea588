import { check, integer, pgTable, primaryKey, text } from "drizzle-orm/pg-core";
import { sql } from "drizzle-orm";
import { epochSeconds, flag } from "../db/columns.ts";

/**
 * Conference rooms (tenant table). Member and admin PINs live encrypted in the `secret` table; only
 * their refs are kept here. Numbers and extensions route to a room by id (see routing/references.ts).
 */
export const conferences = pgTable(
  "conference",
  {
    account_id: text("account_id").notNull(),
    id: text("id").notNull(),
    name: text("name").notNull(),
    /** `sec_…` of the member PIN; null = anyone routed here may join. */
    pin_secret_ref: text("pin_secret_ref"),
    /** `sec_…` of the admin (moderator) PIN; null = the room has no admin. */
    admin_pin_secret_ref: text("admin_pin_secret_ref"),
    max_members: integer("max_members").notNull().default(50),
    /** media_file id played while waiting alone or for the admin; null = the system music. */
    moh_media_id: text("moh_media_id"),
    record: flag("record").notNull().default(0),
    wait_for_admin: flag("wait_for_admin").notNull().default(0),
    announce_join_leave: flag("announce_join_leave").notNull().default(1),
    created_at: epochSeconds("created_at").notNull(),
    updated_at: epochSeconds("updated_at").notNull(),
  },
  (t) => [
    primaryKey({ columns: [t.account_id, t.id] }),
    check("conference_max_members_chk", sql`${t.max_members} between 2 and 1000`),
    check("conference_record_chk", sql`${t.record} in (0,1)`),
    check("conference_wait_for_admin_chk", sql`${t.wait_for_admin} in (0,1)`),
    check("conference_announce_join_leave_chk", sql`${t.announce_join_leave} in (0,1)`),
    // The database keeps the rule the API enforces: waiting for an admin needs an admin PIN.
    check("conference_wait_for_admin_pin_chk", sql`${t.wait_for_admin} = 0 or ${t.admin_pin_secret_ref} is not null`),
  ],
);

export type ConferenceRow = typeof conferences.$inferSelect;
