/** Text helpers for queries, shared by every store. */

/**
 * A LIKE / ILIKE pattern matching values that start with `prefix`, taken literally: `%`, `_` and `\`
 * in it are escaped (PostgreSQL's default escape character is `\`), so a user's search for "50%_off"
 * matches that text and nothing else.
 * @example ilike(table.name, likePrefix("Sales")) // name starts with "Sales", any case
 */
export function likePrefix(prefix: string): string {
  return `${prefix.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
}
