/** Queries on custom fields. The only file of this capability that touches drizzle. */
import { and, asc, eq, gt, type SQL } from "drizzle-orm";
import type { DbOrTx } from "../db/db.ts";
import { customFields, type CustomFieldRow } from "./custom-fields.schema.ts";

export type NewCustomFieldRow = typeof customFields.$inferInsert;

export async function insertCustomField(db: DbOrTx, row: NewCustomFieldRow): Promise<CustomFieldRow> {
  const [created] = await db.insert(customFields).values(row).returning();
  if (!created) throw new Error("insert returned no row");
  return created;
}

export async function findCustomField(db: DbOrTx, accountId: string, id: string): Promise<CustomFieldRow | null> {
  const [row] = await db
    .select()
    .from(customFields)
    .where(and(eq(customFields.account_id, accountId), eq(customFields.id, id)))
    .limit(1);
  return row ?? null;
}

/** Fields of the account after `afterId`, in creation order, optionally of one entity. */
export async function listCustomFields(
  db: DbOrTx,
  accountId: string,
  filter: { entity?: string },
  afterId: string | null,
  limit: number,
): Promise<CustomFieldRow[]> {
  const conditions: SQL[] = [eq(customFields.account_id, accountId)];
  if (filter.entity) conditions.push(eq(customFields.entity, filter.entity));
  if (afterId) conditions.push(gt(customFields.id, afterId));
  return db
    .select()
    .from(customFields)
    .where(and(...conditions))
    .orderBy(asc(customFields.id))
    .limit(limit);
}

/** Every field of one entity of the account: what a record's custom object is checked against. */
export async function customFieldsOf(db: DbOrTx, accountId: string, entity: string): Promise<CustomFieldRow[]> {
  return db
    .select()
    .from(customFields)
    .where(and(eq(customFields.account_id, accountId), eq(customFields.entity, entity)))
    .orderBy(asc(customFields.id));
}

export async function updateCustomField(
  db: DbOrTx,
  accountId: string,
  id: string,
  patch: Partial<NewCustomFieldRow>,
): Promise<CustomFieldRow | null> {
  const [row] = await db
    .update(customFields)
    .set(patch)
    .where(and(eq(customFields.account_id, accountId), eq(customFields.id, id)))
    .returning();
  return row ?? null;
}

export async function deleteCustomField(db: DbOrTx, accountId: string, id: string): Promise<CustomFieldRow | null> {
  const [row] = await db
    .delete(customFields)
    .where(and(eq(customFields.account_id, accountId), eq(customFields.id, id)))
    .returning();
  return row ?? null;
}
