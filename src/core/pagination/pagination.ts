/**
 * Keyset pagination over time-ordered ids: a page is `limit` rows after the cursor's id, in id order.
 * The cursor is opaque to clients (base64url of a versioned payload) and checked on the way back in.
 */
import { validationFailed } from "../errors/app-error.ts";

export const DEFAULT_PAGE_SIZE = 50;
export const MAX_PAGE_SIZE = 500;


/** Encodes the last id of a page as a cursor. */
export function encodeCursor(lastId: string): string {
  return Buffer.from(`c1:${lastId}`).toString("base64url");
}

/** The id a cursor stands after, or null for the first page. Throws 400 for a cursor we did not issue. */
export function decodeCursor(cursor: string | undefined): string | null {
  if (!cursor) return null;
  const text = Buffer.from(cursor, "base64url").toString();
  if (!text.startsWith("c1:") || !/^[a-z]+_[0-9A-Z]{26}$/.test(text.slice(3))) {
    throw validationFailed([{ path: "/query/cursor", message: "Not a cursor this API issued." }]);
  }
  return text.slice(3);
}

/**
 * Turns `limit + 1` fetched rows into a page: the first `limit` rows, and next_cursor only when
 * more rows exist (a reply without next_cursor is the last page).
 */
export function toPage<R extends { id: string }, O>(rows: R[], limit: number, map: (row: R) => O): { data: O[]; next_cursor?: string } {
  const more = rows.length > limit;
  const pageRows = more ? rows.slice(0, limit) : rows;
  const last = pageRows[pageRows.length - 1];
  return more && last ? { data: pageRows.map(map), next_cursor: encodeCursor(last.id) } : { data: pageRows.map(map) };
}
