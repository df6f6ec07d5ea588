/** The internal directory: who in the account can be dialed, by name or by dial-by-name digits. */
import type { DbOrTx } from "../db/db.ts";
import { decodeCursor, toPage } from "../pagination/pagination.ts";
import type { ContactModel } from "./contacts.model.ts";
import { listDirectoryRows, type DirectoryRow } from "./directory.store.ts";

function toEntry(row: DirectoryRow): ContactModel.DirectoryEntry {
  return { id: row.id, username: row.username, display_name: row.display_name, is_agent: Number(row.is_agent) === 1 ? 1 : 0 };
}

/**
 * Active users of the account, keyset-paginated. `digits` is dial-by-name: users whose first or last
 * name, spelled on a phone keypad, starts with them; `q` a name or extension prefix.
 * @example await listDirectory(db, accountId, { limit: 10, digits: "527" }) // users named Lars …, or … Karlsson
 */
export async function listDirectory(
  db: DbOrTx,
  accountId: string,
  query: { limit: number; cursor?: string; digits?: string; q?: string },
): Promise<{ data: ContactModel.DirectoryEntry[]; next_cursor?: string }> {
  const rows = await listDirectoryRows(db, accountId, { digits: query.digits, prefix: query.q?.toLowerCase() }, decodeCursor(query.cursor, "us"), query.limit);
  return toPage(rows, query.limit, toEntry);
}
