/** Use cases on custom fields: defining the keys a contact's (or call's) custom object may hold. */
import type { DbOrTx } from "../db/db.ts";
import { conflict, isUniqueViolation, notFound, validationFailed } from "../errors/app-error.ts";
import { newId } from "../ids/ids.ts";
import { nowSeconds } from "../db/columns.ts";
import { decodeCursor, toPage } from "../pagination/pagination.ts";
import { contactsUseCustomKey, removeCustomKeyFromContacts } from "../contacts/contacts.store.ts";
import type { CustomFieldModel } from "./custom-fields.model.ts";
import type { CustomFieldRow } from "./custom-fields.schema.ts";
import type { CustomFieldDef } from "./custom-values.ts";
import {
  customFieldsOf,
  deleteCustomField,
  findCustomField,
  insertCustomField,
  listCustomFields,
  updateCustomField,
} from "./custom-fields.store.ts";

/** Maps a row to the API shape. */
export function toField(row: CustomFieldRow): CustomFieldModel.Field {
  return {
    id: row.id,
    entity: row.entity as CustomFieldModel.Entity,
    key: row.key,
    label: row.label,
    type: row.type as CustomFieldModel.FieldType,
    options: row.options,
    required: row.required === 1 ? 1 : 0,
    created_at: row.created_at,
    updated_at: row.updated_at,
  };
}

/** A select field needs options; no other type may have any. */
function checkOptions(type: CustomFieldModel.FieldType, options: string[] | null): void {
  if (type === "select" && !options) throw validationFailed([{ path: "/options", message: "A select field needs options." }]);
  if (type !== "select" && options) throw validationFailed([{ path: "/options", message: "Only a select field has options." }]);
}

function keyTaken(): never {
  throw conflict("A custom field with this key already exists for this entity.", { field: "key" });
}

/**
 * The fields a record of `entity` is validated against, for `validateCustomValues`.
 * @example validateCustomValues(await customFieldDefs(db, accountId, "contact"), body.custom ?? {}, "/custom")
 */
export async function customFieldDefs(db: DbOrTx, accountId: string, entity: CustomFieldModel.Entity): Promise<CustomFieldDef[]> {
  const rows = await customFieldsOf(db, accountId, entity);
  return rows.map((r) => ({ key: r.key, type: r.type as CustomFieldDef["type"], options: r.options, required: r.required }));
}

/** Defines a field. Its key is unique per account and entity (409 `key`). */
export async function createField(db: DbOrTx, accountId: string, input: CustomFieldModel.Create): Promise<CustomFieldModel.Field> {
  const options = input.options ?? null;
  checkOptions(input.type, options);
  const now = nowSeconds();
  try {
    const row = await insertCustomField(db, {
      account_id: accountId,
      id: newId("fld"),
      entity: input.entity,
      key: input.key,
      label: input.label,
      type: input.type,
      options,
      required: input.required ?? 0,
      created_at: now,
      updated_at: now,
    });
    return toField(row);
  } catch (error) {
    if (isUniqueViolation(error)) keyTaken();
    throw error;
  }
}

export async function getField(db: DbOrTx, accountId: string, id: string): Promise<CustomFieldModel.Field> {
  const row = await findCustomField(db, accountId, id);
  if (!row) throw notFound("custom field");
  return toField(row);
}

/** Fields of the account, keyset-paginated, optionally of one entity. */
export async function listFields(
  db: DbOrTx,
  accountId: string,
  query: { limit: number; cursor?: string; entity?: CustomFieldModel.Entity },
): Promise<{ data: CustomFieldModel.Field[]; next_cursor?: string }> {
  const rows = await listCustomFields(db, accountId, { entity: query.entity }, decodeCursor(query.cursor, "fld"), query.limit);
  return toPage(rows, query.limit, toField);
}

/**
 * Changes a field; only sent fields change. Changing the key or type of a contact field that any
 * contact holds a value for is refused (409): those values would be orphaned or of the wrong type.
 * Moving away from select drops the options unless they are sent (which is then a 400).
 */
export async function updateField(
  db: DbOrTx,
  accountId: string,
  id: string,
  input: CustomFieldModel.Update,
): Promise<CustomFieldModel.Field> {
  const row = await findCustomField(db, accountId, id);
  if (!row) throw notFound("custom field");
  const type = input.type ?? (row.type as CustomFieldModel.FieldType);
  const options = input.options !== undefined ? input.options : type === "select" ? row.options : null;
  checkOptions(type, options);
  const keyChanges = input.key !== undefined && input.key !== row.key;
  const typeChanges = type !== row.type;
  if ((keyChanges || typeChanges) && row.entity === "contact" && (await contactsUseCustomKey(db, accountId, row.key))) {
    throw conflict(`Contacts hold values for '${row.key}'; its ${keyChanges ? "key" : "type"} cannot change. Create a new field instead.`, {
      field: keyChanges ? "key" : "type",
    });
  }
  try {
    const updated = await updateCustomField(db, accountId, id, {
      ...(input.key !== undefined ? { key: input.key } : {}),
      ...(input.label !== undefined ? { label: input.label } : {}),
      ...(input.required !== undefined ? { required: input.required } : {}),
      type,
      options,
      updated_at: nowSeconds(),
    });
    if (!updated) throw notFound("custom field");
    return toField(updated);
  } catch (error) {
    if (isUniqueViolation(error)) keyTaken();
    throw error;
  }
}

/** Deletes a field and, with it, every contact's value for it (one transaction). */
export async function deleteField(db: DbOrTx, accountId: string, id: string): Promise<void> {
  await db.transaction(async (tx) => {
    const row = await deleteCustomField(tx, accountId, id);
    if (!row) throw notFound("custom field");
    if (row.entity === "contact") await removeCustomKeyFromContacts(tx, accountId, row.key, nowSeconds());
  });
}
