/** The reference registry and the route-target kinds match the migrated schema, entry by entry. */
import { describe, expect, test } from "bun:test";
import { sql } from "drizzle-orm";
import { rawRows } from "../db/migrate.ts";
import { sharedStores, storeKind } from "../../../test/support/platform.ts";
import { REFERENCE_COLUMNS, ROUTE_TARGET_SLOTS } from "./references.ts";
import { DEST_KINDS } from "./route-target.ts";

async function columnsByTable(): Promise<Map<string, Set<string>>> {
  const { database } = await sharedStores();
  const rows = await rawRows<{ table_name: string; column_name: string }>(
    database.db,
    sql`select table_name, column_name from information_schema.columns where table_schema = current_schema()`,
  );
  const map = new Map<string, Set<string>>();
  for (const r of rows) {
    if (!map.has(r.table_name)) map.set(r.table_name, new Set());
    map.get(r.table_name)!.add(r.column_name);
  }
  return map;
}

describe(`reference registry [${storeKind}]`, () => {
  test("every route-target slot names real columns", async () => {
    const tables = await columnsByTable();
    const missing = ROUTE_TARGET_SLOTS.flatMap((slot) =>
      [`${slot.prefix}_kind`, `${slot.prefix}_id`, slot.ownerId ?? "id"].filter((c) => !tables.get(slot.table)?.has(c)).map((c) => `${slot.table}.${c}`),
    );
    expect(missing).toEqual([]);
  });

  test("every reference column is real", async () => {
    const tables = await columnsByTable();
    const missing = REFERENCE_COLUMNS.flatMap((ref) =>
      [ref.column, ref.ownerId ?? "id", "account_id"].filter((c) => !tables.get(ref.table)?.has(c)).map((c) => `${ref.table}.${c}`),
    );
    expect(missing).toEqual([]);
  });

  test("every route-target kind points at a real table with account_id and id", async () => {
    const tables = await columnsByTable();
    for (const [kind, spec] of Object.entries(DEST_KINDS)) {
      if (!spec.table) continue;
      expect(tables.get(spec.table)?.has("account_id"), kind).toBe(true);
      expect(tables.get(spec.table)?.has("id"), kind).toBe(true);
    }
  });

  test("every *_dest_kind column in the schema is registered as a slot", async () => {
    const tables = await columnsByTable();
    const registered = new Set(ROUTE_TARGET_SLOTS.map((s) => `${s.table}.${s.prefix}_kind`));
    const found = [...tables].flatMap(([table, cols]) => [...cols].filter((c) => c.endsWith("dest_kind")).map((c) => `${table}.${c}`));
    expect(found.filter((c) => !registered.has(c))).toEqual([]);
  });
});
