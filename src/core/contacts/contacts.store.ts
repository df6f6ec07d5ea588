/** Queries on contacts and their reverse-lookup numbers. The only file of this capability that touches drizzle. */
import { and, arrayContains, asc, eq, gt, inArray, or, sql, type SQL } from "drizzle-orm";
import type { DbOrTx } from "../db/db.ts";
import { contactPhones, contacts, type ContactRow } from "./contacts.schema.ts";
import { likePrefix } from "../db/sql-text.ts";

export type NewContactRow = typeof contacts.$inferInsert;

/** What a contact list can be narrowed by (all optional, combined with and). */
export interface ContactFilter {
  /** Lower-cased prefix of a first, last, display name or company. */
  prefix?: string;
  /** Exact E.164 of one of the contact's numbers. */
  e164?: string;
  tag?: string;
  externalId?: string;
}

async function writePhones(db: DbOrTx, accountId: string, contactId: string, numbers: string[]): Promise<void> {
  if (numbers.length === 0) return;
  await db.insert(contactPhones).values(numbers.map((e164) => ({ account_id: accountId, e164, contact_id: contactId })));
}

/** Inserts a contact and its lookup numbers. Call inside a transaction. */
export async function insertContact(db: DbOrTx, row: NewContactRow & { phones: NonNullable<NewContactRow["phones"]> }): Promise<ContactRow> {
  const [created] = await db.insert(contacts).values(row).returning();
  if (!created) throw new Error("insert returned no row");
  await writePhones(db, row.account_id, row.id, row.phones.map((p) => p.e164));
  return created;
}

export async function findContact(db: DbOrTx, accountId: string, id: string): Promise<ContactRow | null> {
  const [row] = await db
    .select()
    .from(contacts)
    .where(and(eq(contacts.account_id, accountId), eq(contacts.id, id)))
    .limit(1);
  return row ?? null;
}

/** Contacts of the account after `afterId`, in creation order, narrowed by `filter`. */
export async function listContactRows(db: DbOrTx, accountId: string, filter: ContactFilter, afterId: string | null, limit: number): Promise<ContactRow[]> {
  const conditions: SQL[] = [eq(contacts.account_id, accountId)];
  if (filter.prefix !== undefined) {
    const pattern = likePrefix(filter.prefix);
    conditions.push(
      or(
        sql`lower(${contacts.first_name}) like ${pattern}`,
        sql`lower(${contacts.last_name}) like ${pattern}`,
        sql`lower(${contacts.display_name}) like ${pattern}`,
        sql`lower(${contacts.company}) like ${pattern}`,
      )!,
    );
  }
  if (filter.e164 !== undefined) {
    const owners = db
      .select({ id: contactPhones.contact_id })
      .from(contactPhones)
      .where(and(eq(contactPhones.account_id, accountId), eq(contactPhones.e164, filter.e164)));
    conditions.push(inArray(contacts.id, owners));
  }
  if (filter.tag !== undefined) conditions.push(arrayContains(contacts.tags, [filter.tag]));
  if (filter.externalId !== undefined) conditions.push(eq(contacts.external_id, filter.externalId));
  if (afterId) conditions.push(gt(contacts.id, afterId));
  return db
    .select()
    .from(contacts)
    .where(and(...conditions))
    .orderBy(asc(contacts.id))
    .limit(limit);
}

/**
 * Writes a contact's changed columns; when `phones` is among them, its lookup numbers are replaced too.
 * Call inside a transaction.
 */
export async function updateContact(db: DbOrTx, accountId: string, id: string, patch: Partial<NewContactRow>): Promise<ContactRow | null> {
  const [row] = await db
    .update(contacts)
    .set(patch)
    .where(and(eq(contacts.account_id, accountId), eq(contacts.id, id)))
    .returning();
  if (!row) return null;
  if (patch.phones) {
    await db.delete(contactPhones).where(and(eq(contactPhones.account_id, accountId), eq(contactPhones.contact_id, id)));
    await writePhones(db, accountId, id, patch.phones.map((p) => p.e164));
  }
  return row;
}

/** Deletes a contact and its lookup numbers. Call inside a transaction. */
export async function deleteContact(db: DbOrTx, accountId: string, id: string): Promise<boolean> {
  const rows = await db
    .delete(contacts)
    .where(and(eq(contacts.account_id, accountId), eq(contacts.id, id)))
    .returning({ id: contacts.id });
  if (rows.length === 0) return false;
  await db.delete(contactPhones).where(and(eq(contactPhones.account_id, accountId), eq(contactPhones.contact_id, id)));
  return true;
}

/** True when any contact of the account holds a value under custom key `key`. */
export async function contactsUseCustomKey(db: DbOrTx, accountId: string, key: string): Promise<boolean> {
  const rows = await db
    .select({ id: contacts.id })
    .from(contacts)
    .where(and(eq(contacts.account_id, accountId), sql`(${contacts.custom} -> ${key}::text) is not null`))
    .limit(1);
  return rows.length > 0;
}

/** Drops custom key `key` from every contact of the account (its field was deleted). */
export async function removeCustomKeyFromContacts(db: DbOrTx, accountId: string, key: string, at: number): Promise<void> {
  await db
    .update(contacts)
    .set({ custom: sql`${contacts.custom} - ${key}::text`, updated_at: at })
    .where(and(eq(contacts.account_id, accountId), sql`(${contacts.custom} -> ${key}::text) is not null`));
}
