/**
 * Call forwards (SPEC.md section 2, "forward"; config-managed only). A forward belongs to a user or to
 * a DID and fires on one trigger; numbers and extensions may route to it (dest_kind forward), so its
 * id stays stable across config applies: the file keys it by (user or DID, trigger).
 */
import { check, pgTable, primaryKey, smallint, text, uniqueIndex } from "drizzle-orm/pg-core";
import { sql } from "drizzle-orm";
import { epochSeconds, flag } from "../db/columns.ts";

export const forwards = pgTable(
  "forward",
  {
    account_id: text("account_id").notNull(),
    id: text("id").notNull(),
    /** The user whose calls forward (us_…); null when the forward belongs to a DID. */
    user_id: text("user_id"),
    /** The DID whose calls forward (num_…); null when the forward belongs to a user. */
    number_id: text("number_id"),
    /** E.164 target, no leading +. */
    number: text("number").notNull(),
    trigger: text("trigger").notNull(),
    /** Seconds before a no_answer forward fires; null for the other triggers. */
    timeout_sec: smallint("timeout_sec"),
    cid_mode: text("cid_mode").notNull().default("passthrough"),
    cid_number: text("cid_number"),
    /** 1: the answering party must press 1 to take the call (screening against voicemail pickup). */
    confirm: flag("confirm").notNull().default(0),
    overflow_dest_kind: text("overflow_dest_kind"),
    overflow_dest_id: text("overflow_dest_id"),
    created_at: epochSeconds("created_at").notNull(),
    updated_at: epochSeconds("updated_at").notNull(),
  },
  (t) => [
    primaryKey({ columns: [t.account_id, t.id] }),
    uniqueIndex("forward_user_trigger_uq").on(t.account_id, t.user_id, t.trigger).where(sql`${t.user_id} is not null`),
    uniqueIndex("forward_number_trigger_uq").on(t.account_id, t.number_id, t.trigger).where(sql`${t.number_id} is not null`),
    check("forward_owner_chk", sql`(${t.user_id} is null) <> (${t.number_id} is null)`),
    check("forward_trigger_chk", sql`${t.trigger} in ('always','busy','no_answer','unreachable')`),
    check("forward_timeout_chk", sql`(${t.trigger} = 'no_answer' and ${t.timeout_sec} between 5 and 120) or (${t.trigger} <> 'no_answer' and ${t.timeout_sec} is null)`),
    check("forward_cid_mode_chk", sql`${t.cid_mode} in ('passthrough','did','custom')`),
    check("forward_cid_number_chk", sql`(${t.cid_mode} = 'custom') = (${t.cid_number} is not null)`),
    check("forward_confirm_chk", sql`${t.confirm} in (0,1)`),
  ],
);

export type ForwardRow = typeof forwards.$inferSelect;
