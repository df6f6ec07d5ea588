/** The statistics keeper: tables get planner statistics where autovacuum does not give them. */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { sql } from "drizzle-orm";
import type { Platform } from "../platform.ts";
import { storeKind, testPlatform } from "../../../test/support/platform.ts";
import { rawRows } from "./migrate.ts";
import { analyzeStale, startStatisticsKeeper } from "./statistics.ts";

let platform: Platform;
const table = `stats_probe_${Math.random().toString(36).slice(2, 10)}`;

beforeAll(async () => {
  platform = await testPlatform();
  await platform.db.execute(sql.raw(`create table ${table} (account_id text not null, id text not null, other text, primary key (account_id, id))`));
});
afterAll(async () => {
  await platform.db.execute(sql.raw(`drop table if exists ${table}`));
  await platform.close();
});

/** What the planner believes about the probe table: rows (-1 = never analyzed) and column statistics. */
async function planner(): Promise<{ rows: number; columns: number }> {
  const [c] = await rawRows<{ rows: number }>(platform.db, sql`select reltuples::float8 as rows from pg_class where relname = ${table}`);
  const [s] = await rawRows<{ n: number }>(platform.db, sql`select count(*)::int as n from pg_stats where tablename = ${table}`);
  return { rows: Number(c!.rows), columns: Number(s!.n) };
}

describe(`statistics keeper [${storeKind}]`, () => {
  test("a changed table without statistics gets them; an unchanged one is left alone (none when autovacuum keeps them)", async () => {
    await platform.db.execute(sql.raw(`insert into ${table} select 'acc_' || (g % 3), 'id_' || g, null from generate_series(1, 40) g`));
    expect((await planner()).columns).toBe(0);
    const [auto] = await rawRows<{ on: boolean }>(platform.db, sql`select current_setting('autovacuum') = 'on' and current_setting('track_counts') = 'on' as on`);
    if (platform.database.kind === "postgres" && auto!.on) {
      // autovacuum's job: the keeper does nothing.
      expect(await analyzeStale(platform.database)).toEqual([]);
      return;
    }
    // PostgreSQL counts changes per backend and publishes them within about a second.
    let analyzed: string[] = [];
    for (let i = 0; i < 50 && !analyzed.some((t) => t === "*" || t.endsWith(table)); i++) {
      analyzed = await analyzeStale(platform.database);
      if (!analyzed.length) await Bun.sleep(100);
    }
    expect(analyzed.some((t) => t === "*" || t.endsWith(table))).toBe(true);
    expect(await planner()).toEqual({ rows: 40, columns: 3 });
    if (platform.database.kind === "postgres") {
      // Nothing changed since: not analyzed again.
      expect((await analyzeStale(platform.database)).some((t) => t.endsWith(table))).toBe(false);
    }
  });

  test("the JSON documents of calls, traces, events and logs get no column statistics (ANALYZE spent most of its time on them)", async () => {
    const documents = ["call_record.reply", "call_record.legs", "call_record.slots", "call_record.recording_ids", "call_trace.data", "event.data", "account_log.data"];
    const targets = await rawRows<{ col: string; target: number | null }>(
      platform.db,
      sql`select c.relname || '.' || a.attname as col, a.attstattarget::int as target from pg_attribute a join pg_class c on c.oid = a.attrelid
          where c.relnamespace = current_schema()::regnamespace and c.relname || '.' || a.attname = any(${sql.param(documents)}::text[])`,
    );
    expect(Object.fromEntries(targets.map((t) => [t.col, Number(t.target)]))).toEqual(Object.fromEntries(documents.map((d) => [d, 0])));
    // The keys the planner needs keep theirs.
    const [key] = await rawRows<{ target: number | null }>(
      platform.db,
      sql`select a.attstattarget::int as target from pg_attribute a join pg_class c on c.oid = a.attrelid
          where c.relnamespace = current_schema()::regnamespace and c.relname = 'call_record' and a.attname = 'sip_call_id'`,
    );
    expect(key!.target === null || Number(key!.target) < 0).toBe(true);
  });

  test("the timer runs a pass and stops", async () => {
    const errors: unknown[] = [];
    const keeper = startStatisticsKeeper(platform.database, (e) => errors.push(e), { firstMs: 1, everyMs: 60_000 });
    await Bun.sleep(50);
    await keeper.runOnce();
    keeper.stop();
    expect(errors).toEqual([]);
  });
});
