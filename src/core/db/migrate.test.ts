/** Migrations: embedded list matches the folder; applying is idempotent; an edited migration is refused. */
import { describe, expect, test } from "bun:test";
import { join } from "node:path";
import { sql } from "drizzle-orm";
import { renderMigrationIndex } from "../../../scripts/gen-migrations.ts";
import { migrations } from "../../../drizzle/index.ts";
import { migrate, rawRows } from "./migrate.ts";
import { sharedStores } from "../../../test/support/platform.ts";
import { openDatabase } from "./open.ts";

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

  test("0005 moves the deliveries still to attempt into the queue, with their claims, and only those", async () => {
    const database = await openDatabase({ kind: "pglite", dataDir: null });
    try {
      const upTo = migrations.findIndex((m) => m.tag === "0005_webhook_due");
      expect(upTo).toBeGreaterThan(0);
      await migrate(database.db, migrations.slice(0, upTo));
      await database.db.execute(sql`insert into webhook_delivery
          (account_id, id, webhook_id, event_id, event, status, attempts, next_attempt_at, claimed_until, claim_token, created_at, updated_at)
        values ('acc_a', 'whd_pending', 'wh_1', 1, 'test', 'pending', 0, 0, null, null, 1, 1),
               ('acc_a', 'whd_retrying', 'wh_1', 2, 'test', 'retrying', 1, 1234, 5678, 'tok', 1, 1),
               ('acc_a', 'whd_delivered', 'wh_1', 3, 'test', 'delivered', 1, 0, null, null, 1, 1),
               ('acc_a', 'whd_failed', 'wh_1', 4, 'test', 'failed', 3, 0, null, null, 1, 1)`);
      await migrate(database.db, migrations);
      const due = await rawRows<Record<string, unknown>>(
        database.db,
        sql`select id, event_id, attempts, next_attempt_at, claimed_until, claim_token from webhook_delivery_due order by id`,
      );
      expect(due).toEqual([
        { id: "whd_pending", event_id: 1, attempts: 0, next_attempt_at: 0, claimed_until: null, claim_token: null },
        { id: "whd_retrying", event_id: 2, attempts: 1, next_attempt_at: 1234, claimed_until: 5678, claim_token: "tok" },
      ]);
      // The log keeps every row and its status.
      const log = await rawRows<{ id: string; status: string }>(database.db, sql`select id, status from webhook_delivery order by id`);
      expect(log.map((r) => `${r.id}:${r.status}`)).toEqual(["whd_delivered:delivered", "whd_failed:failed", "whd_pending:pending", "whd_retrying:retrying"]);
    } finally {
      await database.close();
    }
  });
});
