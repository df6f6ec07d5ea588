import { describe, expect, test } from "bun:test";
import { sql } from "drizzle-orm";
import { rawRows } from "./migrate.ts";
import { jsonRows, likePrefix } from "./sql-text.ts";
import { sharedStores } from "../../../test/support/platform.ts";

describe("likePrefix", () => {
  test("escapes the LIKE wildcards and the escape character", () => {
    expect(likePrefix("Sales")).toBe("Sales%");
    expect(likePrefix("50%_off\\x")).toBe("50\\%\\_off\\\\x%");
  });

  test("matches literally in the database", async () => {
    const { database } = await sharedStores();
    const match = async (value: string, prefix: string) =>
      (await rawRows<{ m: boolean }>(database.db, sql`select ${value} ilike ${likePrefix(prefix)} as m`))[0]!.m;
    expect(await match("50%_off sale", "50%_off")).toBe(true);
    expect(await match("50 percent off", "50%")).toBe(false);
    expect(await match("5a_b", "5_")).toBe(false);
    expect(await match("SALES team", "sales")).toBe(true);
  });
});

describe("jsonRows", () => {
  test("a set of keys joins a big table by probing its index, whatever the guessed row count", async () => {
    const { database } = await sharedStores();
    const table = `json_rows_probe_${Math.random().toString(36).slice(2, 8)}`;
    await database.db.execute(sql.raw(`create table ${table} (a text not null, b text not null, payload text not null, primary key (a, b))`));
    try {
      await database.db.execute(sql.raw(`insert into ${table} select 'acc', 'k' || g, repeat('x', 300) from generate_series(1, 5000) g`));
      await database.db.execute(sql.raw(`analyze ${table}`));
      const keys = [{ a: "acc", b: "k17" }, { a: "acc", b: "k4242" }, { a: "acc", b: "nope" }];
      const rows = await rawRows<{ b: string; v: number }>(
        database.db,
        sql`select t.b, k.v from ${sql.raw(table)} t join ${jsonRows(keys.map((k, i) => ({ ...k, v: i })), "k", "a text, b text, v int")} on t.a = k.a and t.b = k.b order by k.v`,
      );
      expect(rows.map((r) => [r.b, Number(r.v)])).toEqual([["k17", 0], ["k4242", 1]]);
      const plan = async (from: ReturnType<typeof sql>) =>
        JSON.stringify(await rawRows(database.db, sql`explain (format json) select t.b from ${sql.raw(table)} t join ${from} on t.a = k.a and t.b = k.b`));
      // The same join from the bare function (estimated at 100 rows) reads the whole table;
      // with jsonRows the plan probes the primary key per key.
      const bare = await plan(sql`jsonb_to_recordset(${JSON.stringify(keys)}::jsonb) as k(a text, b text)`);
      expect(bare).toContain('"Seq Scan"');
      const probed = await plan(jsonRows(keys, "k", "a text, b text"));
      expect(probed).not.toContain('"Seq Scan"');
      expect(probed).toContain(`${table}_pkey`);
    } finally {
      await database.db.execute(sql.raw(`drop table ${table}`));
    }
  });
});
