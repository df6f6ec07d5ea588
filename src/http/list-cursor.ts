/**
 * A list's next_cursor carries the filters of its listing, for every list of the API: SPEC.md says to
 * send next_cursor back "with the same limit", and a client that does just that must get the next page
 * of the same listing (its range, status or name filter), not of the whole list.
 *
 * The host wraps a reply's `next_cursor` with the query's filters as the client wrote them (every query
 * parameter but `cursor` and `limit`), and unwraps a wrapped cursor before the route's query schema runs:
 * the filters it carries are put back into the query as text, so they are checked (and converted)
 * exactly like filters written in the URL. A filter the request repeats must have the same value, and the
 * request may add none the listing did not have: either would page one listing from another's place
 * (400 on /query/cursor). The list's own cursor travels inside, unchanged. A cursor of the list's own
 * form (issued before this wrapping) is still taken, with the query's filters as they are.
 */
import { AppError, validationFailed } from "../core/errors/app-error.ts";
import { NUL_MESSAGE, unstorableTextPath } from "../core/validation/storable-text.ts";
import { MAX_CURSOR_LENGTH } from "../core/pagination/pagination.ts";

const WRAPPED = "f1:";
/** Query parameters that are not filters: they may change from page to page (limit should not). */
const NOT_FILTERS = new Set(["cursor", "limit"]);
/** Longest wrapped cursor taken back (the query schemas' cursor limit). */
const MAX_WRAPPED = MAX_CURSOR_LENGTH;

/** Per request: the filters of the listing it continues or starts, as text, when it has any. */
const listingFilters = new WeakMap<Request, Record<string, string>>();
/**
 * Per request: why its cursor was refused. Unwrapping runs before the route's credential check; the
 * refusal waits for `cursorRefusal`, after it (a caller without a valid credential gets 401, and every
 * attempt counts against the rate limit, whatever its URL says).
 */
const refusals = new WeakMap<Request, AppError>();

/** The refusal of the request's cursor, found when it was unwrapped, or null. */
export function cursorRefusal(request: Request): AppError | null {
  return refusals.get(request) ?? null;
}

function refused(message: string): AppError {
  return validationFailed([{ path: "/query/cursor", message }]);
}

/**
 * Unwraps `query.cursor` when it carries filters (the query is changed in place: the list's own cursor
 * and the filters go back in); remembers the listing's filters for the reply's next_cursor.
 */
export function unwrapListCursor(request: Request, query: Record<string, unknown>): void {
  try {
    unwrap(request, query);
  } catch (error) {
    if (!(error instanceof AppError)) throw error;
    refusals.set(request, error);
  }
}

function unwrap(request: Request, query: Record<string, unknown>): void {
  const filters: Record<string, string> = {};
  for (const [name, value] of Object.entries(query)) if (!NOT_FILTERS.has(name) && typeof value === "string") filters[name] = value;
  const cursor = query.cursor;
  if (typeof cursor === "string" && cursor.length > 0 && cursor.length <= MAX_WRAPPED) {
    const text = Buffer.from(cursor, "base64url").toString();
    if (text.startsWith(WRAPPED)) {
      let carried: { c?: unknown; q?: unknown };
      try {
        carried = JSON.parse(text.slice(WRAPPED.length)) as typeof carried;
      } catch {
        throw refused("Not a cursor this API issued.");
      }
      const inner = carried?.c;
      const listing = carried?.q;
      if (typeof inner !== "string" || typeof listing !== "object" || listing === null || Array.isArray(listing)) throw refused("Not a cursor this API issued.");
      const entries = Object.entries(listing as Record<string, unknown>);
      if (entries.some(([name, value]) => typeof value !== "string" || NOT_FILTERS.has(name) || !/^[a-z][a-z0-9_]{0,63}$/.test(name))) throw refused("Not a cursor this API issued.");
      // A URL's %00 is refused before any route runs; a made-up cursor must not carry one past that.
      if (unstorableTextPath(listing, "") !== null || unstorableTextPath(inner, "") !== null) throw refused(NUL_MESSAGE);
      for (const name of Object.keys(filters)) {
        if (!Object.hasOwn(listing, name)) throw refused(`This cursor continues a listing without ${name}: send it alone, or start again without it.`);
      }
      for (const [name, value] of entries as Array<[string, string]>) {
        if (filters[name] !== undefined && filters[name] !== value) {
          throw refused(`This cursor continues a listing with another ${name}: send it alone (with the same limit), or with the same filters.`);
        }
      }
      // Checked whole before anything is written: a refused cursor leaves the query as sent.
      for (const [name, value] of entries as Array<[string, string]>) {
        filters[name] = value;
        query[name] = value;
      }
      query.cursor = inner;
    }
  }
  listingFilters.set(request, filters);
}

/** Wraps a list reply's next_cursor with the filters of its listing (none: an empty set, which no filter may join later). */
export function wrapListCursor(request: Request, reply: unknown): void {
  const filters = listingFilters.get(request);
  if (!filters || typeof reply !== "object" || reply === null) return;
  const page = reply as { next_cursor?: unknown };
  if (typeof page.next_cursor !== "string") return;
  page.next_cursor = Buffer.from(`${WRAPPED}${JSON.stringify({ c: page.next_cursor, q: filters })}`).toString("base64url");
}
