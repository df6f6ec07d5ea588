/** Opening the store: libpq's Unix-socket URL form. */
import { describe, expect, test } from "bun:test";
import { existsSync, rmSync } from "node:fs";
import { sql } from "drizzle-orm";
import { openDatabase, postgresTarget } from "./open.ts";
import { rawRows } from "./migrate.ts";
import { createPlatform } from "../platform.ts";
import { testConfig } from "../../../test/support/platform.ts";

describe("postgresTarget", () => {
  test("a host parameter naming a directory is the socket of the URL's port; the rest of the URL is kept", () => {
    expect(postgresTarget("postgres://postgres@/parley?host=/var/run/postgresql")).toEqual({
      url: "postgres://postgres@localhost:5432/parley",
      path: "/var/run/postgresql/.s.PGSQL.5432",
    });
    expect(postgresTarget("postgres://u:p%40ss@db:6543/x?host=/run/pg/&sslmode=disable")).toEqual({
      url: "postgres://u:p%40ss@db:6543/x?sslmode=disable",
      path: "/run/pg/.s.PGSQL.6543",
    });
    expect(postgresTarget("postgresql:///x?host=/tmp")).toEqual({ url: "postgresql://localhost:5432/x", path: "/tmp/.s.PGSQL.5432" });
  });

  test("any other URL is left as it is", () => {
    for (const url of ["postgres://u@h/x", "postgres://u@h:7/x?sslmode=require", "postgres://u@h/x?host=other.example"]) {
      expect(postgresTarget(url)).toEqual({ url });
    }
  });

  const socketDir = "/var/run/postgresql";
  const testUrl = process.env.TEST_DATABASE_URL;
  test.skipIf(!testUrl || !existsSync(`${socketDir}/.s.PGSQL.5432`))("connects over the socket", async () => {
    const name = new URL(testUrl!).pathname.slice(1);
    const user = new URL(testUrl!).username || "postgres";
    const database = await openDatabase({ kind: "postgres", url: `postgres://${user}@/${name}?host=${socketDir}` });
    try {
      const [row] = await rawRows<{ addr: string | null; db: string }>(database.db, sql`select inet_server_addr()::text as addr, current_database() as db`);
      expect(row).toEqual({ addr: null, db: name }); // no server address: not TCP
    } finally {
      await database.close();
    }
  });
});

describe.skipIf(!process.env.TEST_DATABASE_URL)("statements [postgres]", () => {
  test("a statement with parameters is prepared once per connection (named), in and out of transactions", async () => {
    const database = await openDatabase({ kind: "postgres", url: process.env.TEST_DATABASE_URL!, maxConnections: 1 });
    try {
      const marker = `prep_${Math.random().toString(36).slice(2, 8)}`;
      const named = async (db: typeof database.db) =>
        (await rawRows<{ n: number }>(db, sql`select count(*)::int as n from pg_prepared_statements where statement like ${`%${marker}%`}`))[0]!.n;
      await rawRows(database.db, sql`select ${1}::int as ${sql.raw(marker)}`);
      await rawRows(database.db, sql`select ${2}::int as ${sql.raw(marker)}`);
      expect(await named(database.db)).toBe(1);
      await database.db.transaction(async (tx) => {
        await rawRows(tx, sql`select ${3}::int as ${sql.raw(`${marker}_tx`)}`);
        expect(await named(tx)).toBe(2);
      });
    } finally {
      await database.close();
    }
  });

  test("transactions: commit, rollback on a failed statement or a thrown error, nested ones as savepoints", async () => {
    const database = await openDatabase({ kind: "postgres", url: process.env.TEST_DATABASE_URL!, maxConnections: 2 });
    const table = sql.raw(`tx_probe_${Math.random().toString(36).slice(2, 8)}`);
    const ids = async () => (await rawRows<{ id: number }>(database.db, sql`select id from ${table} order by id`)).map((r) => r.id);
    try {
      await rawRows(database.db, sql`create table ${table} (id int primary key)`);
      // Every statement runs inside the transaction: now() is the transaction's start.
      const [a, b] = await database.db.transaction(async (tx) => {
        const [first] = await rawRows<{ t: string }>(tx, sql`select now()::text as t`);
        await rawRows(tx, sql`select pg_sleep(0.02)`);
        const [second] = await rawRows<{ t: string }>(tx, sql`select now()::text as t`);
        return [first!.t, second!.t];
      });
      expect(a).toBe(b);
      await database.db.transaction(async (tx) => {
        await rawRows(tx, sql`insert into ${table} values (${1})`);
      });
      expect(await ids()).toEqual([1]);
      // A failed statement rolls back the statements before it.
      await expect(
        database.db.transaction(async (tx) => {
          await rawRows(tx, sql`insert into ${table} values (${2})`);
          await rawRows(tx, sql`insert into ${table} values (${1})`);
        }),
      ).rejects.toThrow();
      // So does an error of the callback, and statements issued together all go.
      await expect(
        database.db.transaction(async (tx) => {
          await Promise.all([rawRows(tx, sql`insert into ${table} values (${3})`), rawRows(tx, sql`insert into ${table} values (${4})`)]);
          throw new Error("changed my mind");
        }),
      ).rejects.toThrow("changed my mind");
      expect(await ids()).toEqual([1]);
      // A nested transaction that fails leaves the outer one's work.
      await database.db.transaction(async (tx) => {
        await rawRows(tx, sql`insert into ${table} values (${5})`);
        await expect(
          tx.transaction(async (inner) => {
            await rawRows(inner, sql`insert into ${table} values (${6})`);
            throw new Error("inner");
          }),
        ).rejects.toThrow("inner");
        await tx.transaction(async (inner) => {
          await rawRows(inner, sql`insert into ${table} values (${7})`);
        });
      });
      expect(await ids()).toEqual([1, 5, 7]);
      // The connections went back to the pool: two transactions at once still run.
      await Promise.all([1, 2, 3].map((n) => database.db.transaction((tx) => rawRows(tx, sql`select ${n}::int`))));
    } finally {
      await rawRows(database.db, sql`drop table if exists ${table}`);
      await database.close();
    }
  });

  test("?prepare=false leaves statements unnamed", async () => {
    const url = new URL(process.env.TEST_DATABASE_URL!);
    url.searchParams.set("prepare", "false");
    const database = await openDatabase({ kind: "postgres", url: url.toString(), maxConnections: 1 });
    try {
      await rawRows(database.db, sql`select ${1}::int as unnamed_probe`);
      const [row] = await rawRows<{ n: number }>(database.db, sql`select count(*)::int as n from pg_prepared_statements where statement like ${"%unnamed_probe%"}`);
      expect(row!.n).toBe(0);
    } finally {
      await database.close();
    }
  });
});

describe.skipIf(!process.env.TEST_DATABASE_URL)("pool size [postgres]", () => {
  test("DATABASE_POOL_SIZE bounds the platform's connections: statements beyond it wait for one", async () => {
    const config = testConfig({ DATABASE_URL: process.env.TEST_DATABASE_URL!, DATABASE_POOL_SIZE: "2" });
    const platform = await createPlatform(config);
    try {
      const rows = await Promise.all(
        Array.from({ length: 6 }, () => rawRows<{ pid: number }>(platform.db, sql`select pg_backend_pid() as pid from pg_sleep(${0.05})`)),
      );
      expect(new Set(rows.map((r) => r[0]!.pid)).size).toBe(2);
    } finally {
      await platform.close();
      rmSync(config.dataDir, { recursive: true, force: true });
    }
  });
});
