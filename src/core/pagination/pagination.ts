/**
 * Keyset pagination over time-ordered ids: a page is `limit` rows after the cursor's id, in id order.
 * The cursor is opaque to clients (base64url of a versioned payload) and checked on the way back in.
 */
import { validationFailed } from "../errors/app-error.ts";
import { isId, type IdPrefix } from "../ids/ids.ts";

export const DEFAULT_PAGE_SIZE = 50;
export const MAX_PAGE_SIZE = 500;
/**
 * Longest cursor a list takes: a list's own cursor is short, but the hosts wrap each next_cursor with
 * the listing's filters (src/http/list-cursor.ts), a URL's worth of text at most.
 */
export const MAX_CURSOR_LENGTH = 8192;


/** Encodes the last id of a page as a cursor. */
export function encodeCursor(lastId: string): string {
  return Buffer.from(`c1:${lastId}`).toString("base64url");
}

/**
 * The id a cursor stands after, or null for the first page. Throws 400 for a cursor we did not issue,
 * and for one of another list (its id has another prefix than the list's `prefix`): paging on from
 * another list's place would quietly give a wrong page.
 */
export function decodeCursor(cursor: string | undefined, prefix: IdPrefix): string | null {
  if (!cursor) return null;
  const text = Buffer.from(cursor, "base64url").toString();
  // Any id of ours (prefix and 26 Crockford characters); then it must be of this list.
  if (!text.startsWith("c1:") || !/^[a-z]+_[0-9A-HJKMNP-TV-Z]{26}$/.test(text.slice(3))) {
    throw validationFailed([{ path: "/query/cursor", message: "Not a cursor this API issued." }]);
  }
  const id = text.slice(3);
  if (!isId(id, prefix)) {
    throw validationFailed([{ path: "/query/cursor", message: "This cursor is from another list; pass the next_cursor of this list." }]);
  }
  return id;
}

/**
 * Turns the rows of one page (at most `limit`, read after the cursor) into the reply: as SPEC.md says,
 * every full page carries next_cursor, so the page after the last full one is empty and has none. A
 * reply without next_cursor is the last page.
 * @example keysetPage(rows, 50, toUser, (r) => encodeCursor(r.id))
 */
export function keysetPage<R, O>(rows: R[], limit: number, map: (row: R) => O, cursorOf: (row: R) => string): { data: O[]; next_cursor?: string } {
  const last = rows[rows.length - 1];
  return rows.length >= limit && last !== undefined ? { data: rows.map(map), next_cursor: cursorOf(last) } : { data: rows.map(map) };
}

/** keysetPage for rows ordered by their id. */
export function toPage<R extends { id: string }, O>(rows: R[], limit: number, map: (row: R) => O): { data: O[]; next_cursor?: string } {
  return keysetPage(rows, limit, map, (row) => encodeCursor(row.id));
}
