import { index, jsonb, pgTable, primaryKey, text, uniqueIndex } from "drizzle-orm/pg-core";
import { sql } from "drizzle-orm";
import { epochSeconds } from "../db/columns.ts";
import type { CustomValues } from "../custom-fields/custom-values.ts";

/** One phone number of a contact. */
export interface ContactPhone {
  label: "mobile" | "work" | "home" | "other";
  /** E.164 without +. */
  e164: string;
}

/** The phonebook: people and companies the account talks to, the source of caller name and screen-pop. */
export const contacts = pgTable(
  "contact",
  {
    account_id: text("account_id").notNull(),
    id: text("id").notNull(),
    first_name: text("first_name"),
    last_name: text("last_name"),
    /** Given, or derived from the names, company, email or first phone. */
    display_name: text("display_name").notNull(),
    company: text("company"),
    email: text("email"),
    /** The numbers as a set; mirrored in `contact_phone` for reverse lookup. */
    phones: jsonb("phones").$type<ContactPhone[]>().notNull().default(sql`'[]'::jsonb`),
    tags: text("tags").array().notNull().default(sql`'{}'::text[]`),
    /** The id of the record in the customer's CRM; unique per account when set. */
    external_id: text("external_id"),
    notes: text("notes"),
    /** Values of the account's contact custom fields, by key. */
    custom: jsonb("custom").$type<CustomValues>().notNull().default(sql`'{}'::jsonb`),
    created_at: epochSeconds("created_at").notNull(),
    updated_at: epochSeconds("updated_at").notNull(),
  },
  (t) => [
    primaryKey({ columns: [t.account_id, t.id] }),
    // NULLs are distinct in a unique index: contacts without an external id never conflict.
    uniqueIndex("contact_external_id_uq").on(t.account_id, t.external_id),
    index("contact_tags_idx").using("gin", t.tags),
  ],
);

export type ContactRow = typeof contacts.$inferSelect;

/**
 * Reverse lookup: number → contacts, for caller name and screen-pop on an inbound call. Written in the
 * same transaction as the contact's `phones`, so the two never disagree.
 */
export const contactPhones = pgTable(
  "contact_phone",
  {
    account_id: text("account_id").notNull(),
    e164: text("e164").notNull(),
    contact_id: text("contact_id").notNull(),
  },
  (t) => [
    primaryKey({ columns: [t.account_id, t.e164, t.contact_id] }),
    index("contact_phone_contact_idx").on(t.account_id, t.contact_id),
  ],
);
