/** Use cases on contacts: the phonebook behind caller name, reverse lookup and screen-pop. */
import type { DbOrTx } from "../db/db.ts";
import { conflict, isUniqueViolation, notFound, validationFailed, type ErrorDetail } from "../errors/app-error.ts";
import { newId } from "../ids/ids.ts";
import { nowSeconds } from "../db/columns.ts";
import { decodeCursor, toPage } from "../pagination/pagination.ts";
import { normalizeE164 } from "../validation/fields.ts";
import { customFieldDefs } from "../custom-fields/custom-fields.service.ts";
import { mergeCustomValues, validateCustomValues } from "../custom-fields/custom-values.ts";
import type { ContactModel } from "./contacts.model.ts";
import type { ContactPhone, ContactRow } from "./contacts.schema.ts";
import { deleteContact as deleteContactRow, findContact, insertContact, listContactRows, updateContact as updateContactRow } from "./contacts.store.ts";

type PhoneIn = NonNullable<ContactModel.Create["phones"]>[number];

/** Maps a row to the API shape. */
export function toContact(row: ContactRow): ContactModel.Contact {
  return {
    id: row.id,
    first_name: row.first_name,
    last_name: row.last_name,
    display_name: row.display_name,
    company: row.company,
    email: row.email,
    phones: row.phones.map((p) => ({ label: p.label, e164: p.e164 })),
    tags: row.tags,
    external_id: row.external_id,
    notes: row.notes,
    custom: row.custom,
    created_at: row.created_at,
    updated_at: row.updated_at,
  };
}

/** The numbers normalized to E.164, each once; every number that is not valid or repeats is one detail. */
function normalizePhones(input: readonly PhoneIn[], details: ErrorDetail[]): ContactPhone[] {
  const out: ContactPhone[] = [];
  const seen = new Set<string>();
  input.forEach((phone, i) => {
    const e164 = normalizeE164(phone.e164);
    const path = `/phones/${i}/e164`;
    if (!e164) details.push({ path, message: "Not a valid E.164 number (country code and number, 7–15 digits)." });
    else if (seen.has(e164)) details.push({ path, message: "This number is already given above." });
    else {
      seen.add(e164);
      out.push({ label: phone.label ?? "other", e164 });
    }
  });
  return out;
}

/**
 * The name a contact shows when none is given: its names, else its company, else its email, else its
 * first number; null when it has none of these.
 * @example deriveDisplayName({ first_name: "Ada", last_name: "Lovelace", company: null, email: null, phones: [] }) // "Ada Lovelace"
 */
export function deriveDisplayName(c: Pick<ContactRow, "first_name" | "last_name" | "company" | "email" | "phones">): string | null {
  const names = [c.first_name, c.last_name].filter((n): n is string => !!n && n.trim() !== "").map((n) => n.trim());
  if (names.length) return names.join(" ");
  if (c.company?.trim()) return c.company.trim();
  if (c.email) return c.email;
  const first = c.phones[0];
  return first ? `+${first.e164}` : null;
}

const NOTHING_TO_SHOW = { path: "/display_name", message: "Give at least a name, a company, an email or a number." };

function externalIdTaken(): never {
  throw conflict("A contact with this external_id already exists.", { field: "external_id" });
}

/** Creates a contact; its custom values are checked against the account's contact fields. */
export async function createContact(db: DbOrTx, accountId: string, input: ContactModel.Create): Promise<ContactModel.Contact> {
  const details: ErrorDetail[] = [];
  const phones = normalizePhones(input.phones ?? [], details);
  const fields = await customFieldDefs(db, accountId, "contact");
  details.push(...validateCustomValues(fields, input.custom ?? {}, "/custom", "create"));
  const base = {
    first_name: input.first_name ?? null,
    last_name: input.last_name ?? null,
    company: input.company ?? null,
    email: input.email ?? null,
    phones,
  };
  const displayName = input.display_name ?? deriveDisplayName(base);
  if (!displayName) details.push(NOTHING_TO_SHOW);
  if (details.length) throw validationFailed(details);
  const now = nowSeconds();
  try {
    const row = await db.transaction((tx) =>
      insertContact(tx, {
        account_id: accountId,
        id: newId("ct"),
        ...base,
        display_name: displayName!,
        tags: [...new Set(input.tags ?? [])],
        external_id: input.external_id ?? null,
        notes: input.notes ?? null,
        custom: mergeCustomValues({}, input.custom ?? {}),
        created_at: now,
        updated_at: now,
      }),
    );
    return toContact(row);
  } catch (error) {
    if (isUniqueViolation(error)) externalIdTaken();
    throw error;
  }
}

export async function getContact(db: DbOrTx, accountId: string, id: string): Promise<ContactModel.Contact> {
  const row = await findContact(db, accountId, id);
  if (!row) throw notFound("contact");
  return toContact(row);
}

/** Contacts of the account, keyset-paginated; `phone` is the reverse lookup (any typed form of the number). */
export async function listContacts(
  db: DbOrTx,
  accountId: string,
  query: { limit: number; cursor?: string; q?: string; phone?: string; tag?: string; external_id?: string },
): Promise<{ data: ContactModel.Contact[]; next_cursor?: string }> {
  let e164: string | undefined;
  if (query.phone !== undefined) {
    e164 = normalizeE164(query.phone) ?? undefined;
    if (!e164) throw validationFailed([{ path: "/query/phone", message: "Not a valid E.164 number." }]);
  }
  const rows = await listContactRows(
    db,
    accountId,
    { prefix: query.q?.toLowerCase(), e164, tag: query.tag, externalId: query.external_id },
    decodeCursor(query.cursor, "ct"),
    query.limit,
  );
  return toPage(rows, query.limit, toContact);
}

/**
 * The contacts holding `e164` (E.164 without +), oldest first: the caller-name and screen-pop source of the call path.
 * @example await findContactsByNumber(db, accountId, "14155550123")
 */
export async function findContactsByNumber(db: DbOrTx, accountId: string, e164: string, limit = 10): Promise<ContactModel.Contact[]> {
  const rows = await listContactRows(db, accountId, { e164 }, null, limit);
  return rows.map(toContact);
}

/**
 * Changes a contact; only sent fields change. phones and tags are replaced as a whole, custom is
 * merged key by key (null removes). A display name that was derived follows the new names unless
 * one is sent; sending display_name null returns to the derived name.
 */
export async function updateContact(db: DbOrTx, accountId: string, id: string, input: ContactModel.Update): Promise<ContactModel.Contact> {
  const row = await findContact(db, accountId, id);
  if (!row) throw notFound("contact");
  const details: ErrorDetail[] = [];
  const phones = input.phones ? normalizePhones(input.phones, details) : row.phones;
  if (input.custom) {
    const fields = await customFieldDefs(db, accountId, "contact");
    details.push(...validateCustomValues(fields, input.custom, "/custom", "update"));
  }
  const merged = {
    first_name: input.first_name !== undefined ? input.first_name : row.first_name,
    last_name: input.last_name !== undefined ? input.last_name : row.last_name,
    company: input.company !== undefined ? input.company : row.company,
    email: input.email !== undefined ? input.email : row.email,
    phones,
  };
  const wasDerived = row.display_name === deriveDisplayName(row);
  const displayName =
    input.display_name !== undefined
      ? (input.display_name ?? deriveDisplayName(merged))
      : wasDerived
        ? deriveDisplayName(merged)
        : row.display_name;
  if (!displayName) details.push(NOTHING_TO_SHOW);
  if (details.length) throw validationFailed(details);
  try {
    const updated = await db.transaction((tx) =>
      updateContactRow(tx, accountId, id, {
        first_name: merged.first_name,
        last_name: merged.last_name,
        company: merged.company,
        email: merged.email,
        display_name: displayName!,
        ...(input.phones ? { phones } : {}),
        ...(input.tags ? { tags: [...new Set(input.tags)] } : {}),
        ...(input.external_id !== undefined ? { external_id: input.external_id } : {}),
        ...(input.notes !== undefined ? { notes: input.notes } : {}),
        ...(input.custom ? { custom: mergeCustomValues(row.custom, input.custom) } : {}),
        updated_at: nowSeconds(),
      }),
    );
    if (!updated) throw notFound("contact");
    return toContact(updated);
  } catch (error) {
    if (isUniqueViolation(error)) externalIdTaken();
    throw error;
  }
}

/** Deletes a contact and its reverse-lookup numbers. */
export async function deleteContact(db: DbOrTx, accountId: string, id: string): Promise<void> {
  const deleted = await db.transaction((tx) => deleteContactRow(tx, accountId, id));
  if (!deleted) throw notFound("contact");
}
