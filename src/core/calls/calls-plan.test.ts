/**
 * The dialog events' updates of one call record must be served by the primary key. When their
 * `ended_ms is null` matched the partial index of active calls, the planner walked every active call of
 * the account for each event. Checked with statistics, as the statistics keeper (or autovacuum) keeps
 * them: a table never analyzed leaves the planner guessing (src/core/db/statistics.ts).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { sql } from "drizzle-orm";
import type { Platform } from "../platform.ts";
import { seedTenant, storeKind, testPlatform } from "../../../test/support/platform.ts";
import { rawRows } from "../db/migrate.ts";
import { callRecords } from "./calls.schema.ts";
import { liveCallByKey, markAnsweredMany, markRingingMany } from "./calls.store.ts";

let platform: Platform;

beforeAll(async () => {
  platform = await testPlatform();
});
afterAll(async () => {
  await platform.close();
});

describe(`call record updates by key [${storeKind}]`, () => {
  test("an update of one live call uses the primary key, not the active-calls index (every other call ended)", async () => {
    const t = await seedTenant(platform);
    await platform.db.execute(sql`
      insert into call_record (account_id, id, sip_call_id, direction, "from", "to", status, started_ms, ended_ms, reply)
      select ${t.accountId}, 'call_plan_' || g, 'sip-plan-' || g, 'internal', '1001', '1002',
             case when g = 7 then 'answered' else 'completed' end, ${Date.now()}::bigint - g,
             case when g = 7 then null else ${Date.now()}::bigint end, '{}'::jsonb
      from generate_series(1, 2000) g`);
    await platform.db.execute(sql`analyze call_record`);
    const update = platform.db.update(callRecords).set({ billsec: 1 }).where(liveCallByKey(t.accountId, "call_plan_7"));
    const { sql: text, params } = update.toSQL();
    // EXPLAIN cannot take bind parameters here: inline them (test data, quoted).
    const inlined = text.replace(/\$(\d+)/g, (_m, n: string) => {
      const value = params[Number(n) - 1];
      return typeof value === "number" ? String(value) : `'${String(value).replace(/'/g, "''")}'`;
    });
    const plan = (await rawRows<Record<string, string>>(platform.db, sql.raw(`explain ${inlined}`))).map((r) => Object.values(r)[0]).join("\n");
    expect(plan).toContain("call_record_account_id_id_pk");
    expect(plan).not.toContain("call_record_active_idx");
    // And it does what it says: the live call is updated, an ended one is not.
    await platform.db.execute(sql`update call_record set ended_ms = started_ms + 1000, status = 'completed' where account_id = ${t.accountId} and id = 'call_plan_8'`);
    expect((await update.returning({ id: callRecords.id })).map((r) => r.id)).toEqual(["call_plan_7"]);
    const ended = await platform.db.update(callRecords).set({ billsec: 1 }).where(liveCallByKey(t.accountId, "call_plan_8")).returning({ id: callRecords.id });
    expect(ended).toEqual([]);
  });

  test("a live call's ringing and answered updates are HOT (no indexed column changes, room left in the page)", async () => {
    const t = await seedTenant(platform);
    const counts = await platform.db.transaction(async (tx) => {
      await tx.execute(sql`
        insert into call_record (account_id, id, sip_call_id, direction, "from", "to", status, started_ms, reply)
        values (${t.accountId}, 'call_hot_1', ${`sip-hot-${t.accountId}`}, 'internal', '1001', '1002', 'routed', ${Date.now()}, '{}'::jsonb)`);
      const stats = async () =>
        (await rawRows<{ upd: number; hot: number }>(tx, sql`select n_tup_upd::int as upd, n_tup_hot_upd::int as hot from pg_stat_xact_user_tables where relname = 'call_record'`))[0]!;
      const before = await stats();
      const key = { account_id: t.accountId, id: "call_hot_1" };
      expect(await markRingingMany(tx, [{ ...key, ringing_ms: Date.now() }])).toHaveLength(1);
      expect(await markAnsweredMany(tx, [{ ...key, answered_ms: Date.now(), agent_id: null, legs: [{ leg: "callee", user_id: "us_x" }] }])).toHaveLength(1);
      const after = await stats();
      return { upd: after.upd - before.upd, hot: after.hot - before.hot };
    });
    expect(counts).toEqual({ upd: 2, hot: 2 });
  });
});
