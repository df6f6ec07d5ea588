/** Text helpers for queries, shared by every store. */
import { sql, type Column, type SQL } from "drizzle-orm";

/**
 * A LIKE / ILIKE pattern matching values that start with `prefix`, taken literally: `%`, `_` and `\`
 * in it are escaped (PostgreSQL's default escape character is `\`), so a user's search for "50%_off"
 * matches that text and nothing else.
 * @example ilike(table.name, likePrefix("Sales")) // name starts with "Sales", any case
 */
export function likePrefix(prefix: string): string {
  return `${prefix.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
}

/**
 * Rows sent as one JSON text, as a table `alias(columns)` for a FROM or an IN: the set-based forms of
 * per-row statements (the database parses one JSON text faster than the client escapes one array
 * per column). The LIMIT of the row count is there for the planner: a set-returning function is
 * estimated at 100 rows, and with few or stale statistics that estimate made joins to the calls
 * table hash or loop over a sequential scan of it (every call ever recorded, for a handful of keys)
 * instead of probing its index per row. With the true count the plan is an index probe per row.
 * @example sql`update t set x = v.x from ${jsonRows(rows, "v", "id text, x int")} where t.id = v.id`
 */
export function jsonRows(rows: unknown[], alias: string, columns: string): SQL {
  // The count rounded up to a power of two, written as a constant: a parameter there would leave
  // the prepared statement's generic plan guessing, so PostgreSQL would plan every execution again;
  // with a constant the generic plan is as good as a custom one and is kept. A dozen texts in all.
  const bound = 2 ** Math.ceil(Math.log2(Math.max(1, rows.length)));
  return sql`(select * from jsonb_to_recordset(${JSON.stringify(rows)}::jsonb) as ${sql.raw(alias)}(${sql.raw(columns)}) limit ${sql.raw(String(bound))}) ${sql.raw(alias)}`;
}

// ── Values of rows read with rawRows (fixed-text statements), as the drivers give them: PostgreSQL
// (postgres.js) gives a bigint as text, PGlite as a number; jsonb comes parsed or as text.

/** A numeric column's value as a number. */
export const rawNumber = (value: unknown): number => (typeof value === "number" ? value : Number(value));

/** A nullable numeric column's value as a number or null. */
export const rawNumberOrNull = (value: unknown): number | null => (value === null || value === undefined ? null : rawNumber(value));

/** A json/jsonb column's value, parsed. */
export const rawJson = <T>(value: unknown): T => (typeof value === "string" ? JSON.parse(value) : value) as T;

/**
 * `columns` (the query builder's select fields, by their database names) as the select or returning
 * list of a fixed-text statement on table alias `alias`; read its rows with {@link columnReader}.
 * @example sql`select ${columnList(dialogColumns, "c")} from call_record c where …`
 */
export function columnList(columns: Record<string, Column>, alias: string): SQL {
  return sql.raw(
    Object.values(columns)
      .map((c) => `${alias}."${c.name}"`)
      .join(", "),
  );
}

/**
 * Reads a raw row of a {@link columnList} statement as the query builder would: each field by its
 * column's database name, through that column's own driver-value mapping (a bigint in number mode
 * from text, jsonb parsed), null kept.
 * @example const toCall = columnReader<DialogCall>(dialogColumns); (await rawRows(db, query)).map(toCall)
 */
export function columnReader<R>(columns: Record<string, Column>): (raw: Record<string, unknown>) => R {
  const fields = Object.entries(columns);
  return (raw) => {
    const row: Record<string, unknown> = {};
    for (const [key, column] of fields) {
      const value = raw[column.name];
      row[key] = value === null || value === undefined ? null : column.mapFromDriverValue(value);
    }
    return row as R;
  };
}
