/** Migrations: embedded list matches the folder; applying is idempotent; an edited migration is refused. */
import { describe, expect, test } from "bun:test";
import { join } from "node:path";
import { sql } from "drizzle-orm";
import { renderMigrationIndex } from "../../../scripts/gen-migrations.ts";
import { migrations } from "../../../drizzle/index.ts";
import { migrate, rawRows } from "./migrate.ts";
import { sharedStores } from "../../../test/support/platform.ts";

describe("migrations", () => {
  test("drizzle/index.ts is current (run `bun run db:generate` after changing a schema)", async () => {
    const dir = join(import.meta.dir, "..", "..", "..", "drizzle");
    expect(await Bun.file(join(dir, "index.ts")).text()).toBe(renderMigrationIndex(dir));
  });

  test("re-applying does nothing; every migration is recorded", async () => {
    const { database } = await sharedStores();
    expect(await migrate(database.db, migrations)).toEqual([]);
    const rows = await rawRows<{ tag: string }>(database.db, sql`select tag from parley_migration order by tag`);
    expect(rows.map((r) => r.tag)).toEqual(migrations.map((m) => m.tag));
  });

  test("a migration edited after it was applied stops start-up", async () => {
    const { database } = await sharedStores();
    const edited = migrations.map((m, i) => (i === 0 ? { ...m, sql: m.sql + "\n-- edited" } : m));
    expect(migrate(database.db, edited)).rejects.toThrow(/changed after it was applied/);
  });
});
