/** Use cases on extensions. Each takes the account explicitly; none knows about HTTP. */
import type { DbOrTx } from "../db/db.ts";
import { nowSeconds } from "../db/columns.ts";
import { conflict, isUniqueViolation, notFound } from "../errors/app-error.ts";
import { refuseEmergencyNumber, type DialableRules } from "../validation/emergency-numbers.ts";
import { newId } from "../ids/ids.ts";
import { decodeCursor, toPage } from "../pagination/pagination.ts";
import { assertNotInUse } from "../routing/references.ts";
import { checkRoutedFields, mergeRoutedFields, type RoutedFields } from "../numbers/routed-fields.ts";
import type { ExtensionModel } from "./extensions.model.ts";
import type { ExtensionRow, NewExtensionRow } from "./extensions.schema.ts";
import { deleteExtensionRow, findExtension, insertExtension, listExtensionRows, updateExtensionRow } from "./extensions.store.ts";

/** Maps a row to the API shape (every field, fixed order). */
export function toExtension(row: ExtensionRow): ExtensionModel.Extension {
  return {
    id: row.id,
    digits: row.digits,
    dest_kind: row.dest_kind,
    dest_id: row.dest_id,
    dest_xform: row.dest_xform ?? null,
    schedule_id: row.schedule_id,
    closed_dest_kind: row.closed_dest_kind,
    closed_dest_id: row.closed_dest_id,
    holiday_dest_kind: row.holiday_dest_kind,
    holiday_dest_id: row.holiday_dest_id,
    label: row.label,
    created_at: row.created_at,
    updated_at: row.updated_at,
  };
}

/** What a create or update may not give as digits: the platform's emergency numbers. */
export type ExtensionRules = DialableRules;

function duplicateDigits(error: unknown): unknown {
  return isUniqueViolation(error) ? conflict("Another extension of this account already has these digits.", { field: "digits" }) : error;
}

/**
 * Adds an extension. Its digits must be free in the account (409 `{ field: "digits" }`); the
 * destination is required and every target and the schedule must exist in this account.
 * @example await createExtension(db, "acc_…", { digits: "100", dest_kind: "user", dest_id: "us_…" })
 */
export async function createExtension(db: DbOrTx, accountId: string, input: ExtensionModel.Create, rules: ExtensionRules = {}): Promise<ExtensionModel.Extension> {
  refuseEmergencyNumber(input.digits, rules, "/digits", "an extension");
  const routed: RoutedFields = {
    dest_kind: input.dest_kind ?? null,
    dest_id: input.dest_id ?? null,
    schedule_id: input.schedule_id ?? null,
    closed_dest_kind: input.closed_dest_kind ?? null,
    closed_dest_id: input.closed_dest_id ?? null,
    holiday_dest_kind: input.holiday_dest_kind ?? null,
    holiday_dest_id: input.holiday_dest_id ?? null,
  };
  await checkRoutedFields(db, accountId, routed, { sent: new Set(Object.keys(input)) });
  const now = nowSeconds();
  try {
    const row = await insertExtension(db, {
      account_id: accountId,
      id: newId("ext"),
      digits: input.digits,
      ...routed,
      dest_kind: routed.dest_kind!,
      dest_xform: input.dest_xform ?? null,
      label: input.label ?? null,
      created_at: now,
      updated_at: now,
    });
    return toExtension(row);
  } catch (error) {
    throw duplicateDigits(error);
  }
}

/** One extension of the account; another account's is a 404 like a missing one. */
export async function getExtension(db: DbOrTx, accountId: string, id: string): Promise<ExtensionModel.Extension> {
  const row = await findExtension(db, accountId, id);
  if (!row) throw notFound("extension");
  return toExtension(row);
}

/** Extensions of the account, keyset-paginated, narrowed by `filters`. */
export async function listExtensions(
  db: DbOrTx,
  accountId: string,
  filters: ExtensionModel.Filters,
  page: { limit: number; cursor?: string },
): Promise<{ data: ExtensionModel.Extension[]; next_cursor?: string }> {
  const { q, ...rest } = filters;
  const rows = await listExtensionRows(db, accountId, { ...rest, ...(q ? { digits_prefix: q } : {}) }, decodeCursor(page.cursor, "ext"), page.limit);
  return toPage(rows, page.limit, toExtension);
}

/**
 * Applies the sent fields to an extension. Routing fields are merged onto the stored row (see
 * `mergeRoutedFields`) and the result is checked as a whole; an extension may not route to itself.
 */
export async function updateExtension(db: DbOrTx, accountId: string, id: string, patch: ExtensionModel.Patch, rules: ExtensionRules = {}): Promise<ExtensionModel.Extension> {
  try {
    return await db.transaction(async (tx) => {
      const current = await findExtension(tx, accountId, id, { forUpdate: true });
      if (!current) throw notFound("extension");
      // Only new digits are checked: an extension made before keeps its own when its other fields change.
      if (patch.digits !== current.digits) refuseEmergencyNumber(patch.digits, rules, "/digits", "an extension");
      const routed = mergeRoutedFields(current, patch);
      await checkRoutedFields(tx, accountId, routed, { sent: new Set(Object.keys(patch)), self: { kind: "extension", id } });
      const set: Partial<NewExtensionRow> = { ...routed, dest_kind: routed.dest_kind!, updated_at: nowSeconds() };
      if (patch.digits !== undefined) set.digits = patch.digits;
      if (patch.dest_xform !== undefined) set.dest_xform = patch.dest_xform;
      if (patch.label !== undefined) set.label = patch.label;
      const row = await updateExtensionRow(tx, accountId, id, set);
      if (!row) throw notFound("extension");
      return toExtension(row);
    });
  } catch (error) {
    throw duplicateDigits(error);
  }
}

/**
 * Deletes an extension. Refused (409 naming them in `used_by`) while a number, another extension,
 * a ring group, a queue or the account's DID default still routes to it.
 */
export async function deleteExtension(db: DbOrTx, accountId: string, id: string): Promise<void> {
  await db.transaction(async (tx) => {
    // Locked first, so a concurrent delete of the same extension waits instead of racing the check.
    if (!(await findExtension(tx, accountId, id, { forUpdate: true }))) throw notFound("extension");
    await assertNotInUse(tx, accountId, "extension", id);
    await deleteExtensionRow(tx, accountId, id);
  });
}
