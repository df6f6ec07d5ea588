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

  test("0014 rewrites numbers stored with the trunk 0 after their country code, merging do-not-call entries by the later expiry", async () => {
    const database = await openDatabase({ kind: "pglite", dataDir: null });
    try {
      const upTo = migrations.findIndex((m) => m.tag === "0014_trunk_zero");
      expect(upTo).toBeGreaterThan(0);
      await migrate(database.db, migrations.slice(0, upTo));
      // As the normalization before wrote "+44 (0)20 7123 0000" (4402…), beside entries in the new form.
      await database.db.execute(sql`insert into dnc_entry (account_id, e164, reason, source, expires_at, created_at)
        values ('acc_a', '4402071230000', 'old form, never expires', 'api', null, 1),
               ('acc_a', '442071230000', 'new form, expiring', 'api', 5000, 2),
               ('acc_a', '4907001234567', 'old form only', 'api', 9000, 3),
               ('acc_a', '390612345678', 'Italy keeps its 0', 'api', null, 4),
               ('acc_b', '4402079990000', 'another account', 'api', null, 5)`);
      await database.db.execute(sql`insert into phone_list_entry (account_id, phone_list_id, e164, created_at)
        values ('acc_a', 'pl_1', '4401611234567', 1), ('acc_a', 'pl_1', '441611234567', 1), ('acc_a', 'pl_2', '3301234567890', 1)`);
      await migrate(database.db, migrations);
      const dnc = await rawRows<{ account_id: string; e164: string; expires_at: number | null }>(database.db, sql`select account_id, e164, expires_at from dnc_entry order by account_id, e164`);
      expect(dnc).toEqual([
        // Merged: never expires (the later of the two).
        { account_id: "acc_a", e164: "390612345678", expires_at: null },
        { account_id: "acc_a", e164: "442071230000", expires_at: null },
        { account_id: "acc_a", e164: "497001234567", expires_at: 9000 },
        { account_id: "acc_b", e164: "442079990000", expires_at: null },
      ]);
      const lists = await rawRows<{ phone_list_id: string; e164: string }>(database.db, sql`select phone_list_id, e164 from phone_list_entry order by phone_list_id, e164`);
      expect(lists).toEqual([
        { phone_list_id: "pl_1", e164: "441611234567" },
        { phone_list_id: "pl_2", e164: "331234567890" },
      ]);
    } finally {
      await database.close();
    }
  });
});
