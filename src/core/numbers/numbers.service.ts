/** Use cases on numbers (inbound DIDs). Each takes the account explicitly; none knows about HTTP. */
import type { DbOrTx } from "../db/db.ts";
import { nowSeconds } from "../db/columns.ts";
import { conflict, isUniqueViolation, notFound, validationFailed, type ErrorDetail } from "../errors/app-error.ts";
import { newId } from "../ids/ids.ts";
import { decodeCursor, toPage } from "../pagination/pagination.ts";
import { normalizeE164 } from "../validation/fields.ts";
import { assertNotInUse } from "../routing/references.ts";
import type { NumberModel } from "./numbers.model.ts";
import type { NewNumberRow, NumberRow } from "./numbers.schema.ts";
import { deleteNumberRow, findNumber, insertNumber, listNumberRows, updateNumberRow } from "./numbers.store.ts";
import { checkRoutedFields, mergeRoutedFields, type RoutedFields } from "./routed-fields.ts";

/** Maps a row to the API shape (every field, fixed order). */
export function toNumber(row: NumberRow): NumberModel.Number {
  return {
    id: row.id,
    e164: row.e164,
    status: row.status as NumberModel.Status,
    dest_kind: row.dest_kind,
    dest_id: row.dest_id,
    dest_xform: row.dest_xform ?? null,
    max_channels: row.max_channels,
    fax_mode: row.fax_mode as NumberModel.FaxMode,
    allow_anonymous: row.allow_anonymous === 1 ? 1 : 0,
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

const E164_REFUSED = "Not a phone number in E.164 form: country code first, 7 to 15 digits (e.g. +1 415 555 0123).";

/** The e164 a request asks for, or a 400 detail when it does not normalize. */
function parseE164(input: string, details: ErrorDetail[]): string | null {
  const e164 = normalizeE164(input);
  if (e164 === null) details.push({ path: "/e164", message: E164_REFUSED });
  return e164;
}

function duplicateE164(error: unknown): unknown {
  return isUniqueViolation(error) ? conflict("This number is already in use on the platform.", { field: "e164" }) : error;
}

/**
 * Adds a number to the account. The e164 is normalized from what people type and must be free on
 * the whole platform (409 `{ field: "e164" }`); the destination is required and every target and
 * the schedule must exist in this account.
 * @example await createNumber(db, "acc_…", { e164: "+1 415 555 0123", dest_kind: "flow", dest_id: "flow_…" })
 */
export async function createNumber(db: DbOrTx, accountId: string, input: NumberModel.Create): Promise<NumberModel.Number> {
  const details: ErrorDetail[] = [];
  const e164 = parseE164(input.e164, details);
  const routed: RoutedFields = {
    dest_kind: input.dest_kind ?? null,
    dest_id: input.dest_id ?? null,
    schedule_id: input.schedule_id ?? null,
    closed_dest_kind: input.closed_dest_kind ?? null,
    closed_dest_id: input.closed_dest_id ?? null,
    holiday_dest_kind: input.holiday_dest_kind ?? null,
    holiday_dest_id: input.holiday_dest_id ?? null,
  };
  await checkRoutedFields(db, accountId, routed, { sent: new Set(Object.keys(input)), details });
  // checkRoutedFields has already thrown when e164 was refused; this narrows the type for the insert.
  if (e164 === null) throw validationFailed(details);
  const now = nowSeconds();
  try {
    const row = await db.transaction((tx) =>
      insertNumber(tx, {
        account_id: accountId,
        id: newId("num"),
        e164,
        status: input.status ?? "active",
        ...routed,
        dest_kind: routed.dest_kind!,
        dest_xform: input.dest_xform ?? null,
        max_channels: input.max_channels ?? null,
        fax_mode: input.fax_mode ?? "voice",
        allow_anonymous: input.allow_anonymous ?? 1,
        label: input.label ?? null,
        created_at: now,
        updated_at: now,
      }),
    );
    return toNumber(row);
  } catch (error) {
    throw duplicateE164(error);
  }
}

/** One number of the account; another account's is a 404 like a missing one. */
export async function getNumber(db: DbOrTx, accountId: string, id: string): Promise<NumberModel.Number> {
  const row = await findNumber(db, accountId, id);
  if (!row) throw notFound("number");
  return toNumber(row);
}

/** Numbers of the account, keyset-paginated, narrowed by `filters`. */
export async function listNumbers(
  db: DbOrTx,
  accountId: string,
  filters: NumberModel.Filters,
  page: { limit: number; cursor?: string },
): Promise<{ data: NumberModel.Number[]; next_cursor?: string }> {
  const { q, ...rest } = filters;
  const e164Prefix = q?.trim().replace(/^\+/, "");
  const rows = await listNumberRows(db, accountId, { ...rest, ...(e164Prefix ? { e164_prefix: e164Prefix } : {}) }, decodeCursor(page.cursor, "num"), page.limit);
  return toPage(rows, page.limit, toNumber);
}

/**
 * Applies the sent fields to a number. Routing fields are merged onto the stored row (see
 * `mergeRoutedFields`) and the result is checked as a whole; a new e164 moves the DID lookup in the
 * same transaction.
 */
export async function updateNumber(db: DbOrTx, accountId: string, id: string, patch: NumberModel.Patch): Promise<NumberModel.Number> {
  try {
    return await db.transaction(async (tx) => {
      const current = await findNumber(tx, accountId, id, { forUpdate: true });
      if (!current) throw notFound("number");
      const details: ErrorDetail[] = [];
      const e164 = patch.e164 === undefined ? current.e164 : parseE164(patch.e164, details);
      const routed = mergeRoutedFields(current, patch);
      await checkRoutedFields(tx, accountId, routed, { sent: new Set(Object.keys(patch)), details });
      const set: Partial<NewNumberRow> = { ...routed, dest_kind: routed.dest_kind!, e164: e164!, updated_at: nowSeconds() };
      if (patch.status !== undefined) set.status = patch.status;
      if (patch.dest_xform !== undefined) set.dest_xform = patch.dest_xform;
      if (patch.max_channels !== undefined) set.max_channels = patch.max_channels;
      if (patch.fax_mode !== undefined) set.fax_mode = patch.fax_mode;
      if (patch.allow_anonymous !== undefined) set.allow_anonymous = patch.allow_anonymous;
      if (patch.label !== undefined) set.label = patch.label;
      return toNumber(await updateNumberRow(tx, current, set));
    });
  } catch (error) {
    throw duplicateE164(error);
  }
}

/**
 * Deletes a number and frees its e164 on the platform at once. Refused (409 with `used_by`) while
 * something still refers to the number: its call forwards (config-managed).
 */
export async function deleteNumber(db: DbOrTx, accountId: string, id: string): Promise<void> {
  await db.transaction(async (tx) => {
    // Locked first, so a concurrent delete of the same number waits instead of racing the check.
    if (!(await findNumber(tx, accountId, id, { forUpdate: true }))) throw notFound("number");
    await assertNotInUse(tx, accountId, "number", id);
    await deleteNumberRow(tx, accountId, id);
  });
}
