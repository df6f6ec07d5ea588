/** Use cases on the do-not-call list, and the check the call path makes before dialing. */
import { keysetPage } from "../pagination/pagination.ts";
import type { DbOrTx } from "../db/db.ts";
import { validationFailed, type ErrorDetail } from "../errors/app-error.ts";
import { nowSeconds } from "../db/columns.ts";
import { E164_PATTERN, normalizeE164 } from "../validation/fields.ts";
import type { DncModel } from "./dnc.model.ts";
import type { DncEntryRow } from "./dnc.schema.ts";
import { addEntries, findActiveEntry, listEntries, removeEntries } from "./dnc.store.ts";

const E164_SHAPE = new RegExp(E164_PATTERN);

function toEntry(row: DncEntryRow): DncModel.Entry {
  return {
    e164: row.e164,
    reason: row.reason,
    source: row.source as DncModel.Source,
    expires_at: row.expires_at,
    created_at: row.created_at,
  };
}

/** The list is ordered by number, not by id, so its cursor carries the last number of a page. */
function encodeDncCursor(e164: string): string {
  return Buffer.from(`d1:${e164}`).toString("base64url");
}

function decodeDncCursor(cursor: string | undefined): string | null {
  if (!cursor) return null;
  const text = Buffer.from(cursor, "base64url").toString();
  if (!text.startsWith("d1:") || !E164_SHAPE.test(text.slice(3))) {
    throw validationFailed([{ path: "/query/cursor", message: "Not a cursor this API issued." }]);
  }
  return text.slice(3);
}

/** Every number normalized and de-duplicated; every invalid one is a detail `/numbers/<i>`. */
function normalizeNumbers(numbers: readonly string[]): string[] {
  const details: ErrorDetail[] = [];
  const out = new Set<string>();
  numbers.forEach((value, i) => {
    const e164 = normalizeE164(value);
    if (e164) out.add(e164);
    else details.push({ path: `/numbers/${i}`, message: "Not a valid E.164 number (country code and number, 7–15 digits)." });
  });
  if (details.length) throw validationFailed(details, `${details.length} of the numbers are not valid; nothing was changed.`);
  return [...out];
}

/**
 * True when `e164` (E.164 without +) is on the account's list at `now` (epoch seconds): the check
 * outbound calls and campaigns make before dialing.
 * @example if (await isOnDnc(db, accountId, "14155550123", nowSeconds())) refuse()
 */
export async function isOnDnc(db: DbOrTx, accountId: string, e164: string, now: number): Promise<boolean> {
  return (await findActiveEntry(db, accountId, e164, now)) !== null;
}

/** Whether one number, typed in any form, is listed now. */
export async function lookupDnc(db: DbOrTx, accountId: string, number: string): Promise<DncModel.Lookup> {
  const e164 = normalizeE164(number);
  if (!e164) throw validationFailed([{ path: "/query/number", message: "Not a valid E.164 number." }]);
  const row = await findActiveEntry(db, accountId, e164, nowSeconds());
  return row ? { e164, listed: 1, entry: toEntry(row) } : { e164, listed: 0 };
}

/** Listed numbers in number order, keyset-paginated. */
export async function listDnc(
  db: DbOrTx,
  accountId: string,
  query: { limit: number; cursor?: string; q?: string; source?: DncModel.Source; include_expired?: number },
): Promise<{ data: DncModel.Entry[]; next_cursor?: string }> {
  const rows = await listEntries(
    db,
    accountId,
    { digitsPrefix: query.q?.replace(/^\+/, ""), source: query.source, includeExpired: query.include_expired === 1, now: nowSeconds() },
    decodeDncCursor(query.cursor),
    query.limit,
  );
  return keysetPage(rows, query.limit, toEntry, (row) => encodeDncCursor(row.e164));
}

/** Lists numbers in bulk. One invalid number refuses the whole request; nothing is written then. */
export async function addToDnc(db: DbOrTx, accountId: string, input: DncModel.Add): Promise<{ added: number; already_listed: number }> {
  const numbers = normalizeNumbers(input.numbers);
  const now = nowSeconds();
  if (input.expires_at != null && input.expires_at <= now) {
    throw validationFailed([{ path: "/expires_at", message: "Must be in the future (epoch seconds)." }]);
  }
  const added = await db.transaction((tx) =>
    addEntries(tx, accountId, numbers, { reason: input.reason ?? null, source: input.source ?? "api", expires_at: input.expires_at ?? null, created_at: now }),
  );
  return { added, already_listed: numbers.length - added };
}

/** Removes numbers in bulk; numbers not listed are fine. One invalid number refuses the whole request. */
export async function removeFromDnc(db: DbOrTx, accountId: string, input: DncModel.Remove): Promise<{ removed: number }> {
  const numbers = normalizeNumbers(input.numbers);
  const now = nowSeconds();
  const removed = await db.transaction((tx) => removeEntries(tx, accountId, numbers, now));
  return { removed };
}
