import { check, pgTable, primaryKey, text, uniqueIndex } from "drizzle-orm/pg-core";
import { sql } from "drizzle-orm";
import { epochSeconds, flag } from "../db/columns.ts";

/**
 * Custom fields an account defines for its contacts (and, later, for calls): the schema that the
 * `custom` object of those records is validated against. `key` is what appears in that object.
 */
export const customFields = pgTable(
  "custom_field",
  {
    account_id: text("account_id").notNull(),
    id: text("id").notNull(),
    /** Which records carry the field: contact or call. Fixed at creation. */
    entity: text("entity").notNull(),
    key: text("key").notNull(),
    label: text("label").notNull(),
    type: text("type").notNull(),
    /** The allowed values of a select field; null for every other type. */
    options: text("options").array(),
    required: flag("required").notNull().default(0),
    created_at: epochSeconds("created_at").notNull(),
    updated_at: epochSeconds("updated_at").notNull(),
  },
  (t) => [
    primaryKey({ columns: [t.account_id, t.id] }),
    uniqueIndex("custom_field_key_uq").on(t.account_id, t.entity, t.key),
    check("custom_field_entity_chk", sql`${t.entity} in ('contact','call')`),
    check("custom_field_type_chk", sql`${t.type} in ('text','number','boolean','date','select')`),
    check("custom_field_required_chk", sql`${t.required} in (0,1)`),
  ],
);

export type CustomFieldRow = typeof customFields.$inferSelect;
