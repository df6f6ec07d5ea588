/**
 * Planner statistics where nothing else keeps them. PostgreSQL's autovacuum analyzes a table once
 * enough of it has changed; PGlite (the embedded default) has no autovacuum, and some PostgreSQL
 * installations run with it off. Without statistics the planner guesses every table is tiny and,
 * between indexes of equal guessed cost, may take one that scans every row of an account (seen: the
 * dialog events of the call path reading every user of the account through an unrelated index).
 *
 * The keeper: on PostgreSQL with autovacuum on, nothing. On PostgreSQL with it off, it analyzes the
 * tables autovacuum would have (changed rows since the last analyze above 50 + 10 % of the table)
 * and any changed table never analyzed (however small: the guess is what misleads), checked every
 * `everyMs` (default 15 s, the first 5 s after start). On PGlite, where the change counters are not
 * kept, it analyzes the whole database `everyMs` after the previous run (default 15 minutes, the first
 * 30 s after start; ANALYZE samples at most 30,000 rows a table, so a run stays short whatever the data).
 */
import { sql } from "drizzle-orm";
import type { Database } from "./db.ts";
import { rawRows } from "./migrate.ts";

export interface StatisticsKeeper {
  /** Runs one pass now (start-up and tests); resolves with the tables analyzed (`*` = all). */
  runOnce(): Promise<string[]>;
  stop(): void;
}

/** One pass: analyzes what needs it; returns the tables analyzed (`*` = the whole database). */
export async function analyzeStale(database: Pick<Database, "db" | "kind">): Promise<string[]> {
  if (database.kind === "pglite") {
    await database.db.execute(sql`analyze`);
    return ["*"];
  }
  const [setting] = await rawRows<{ on: boolean }>(database.db, sql`select current_setting('autovacuum') = 'on' and current_setting('track_counts') = 'on' as on`);
  if (setting?.on) return [];
  const stale = await rawRows<{ name: string }>(
    database.db,
    sql`select quote_ident(schemaname) || '.' || quote_ident(relname) as name from pg_stat_user_tables
        where schemaname = current_schema()
          and (n_mod_since_analyze > 50 + 0.1 * greatest(n_live_tup, 0)
               or (n_mod_since_analyze > 0 and last_analyze is null and last_autoanalyze is null))
        order by relname`,
  );
  for (const { name } of stale) await database.db.execute(sql.raw(`analyze ${name}`));
  return stale.map((s) => s.name);
}

/**
 * Starts the keeper: a first pass `firstMs` after start, then every `everyMs`.
 * @example const keeper = startStatisticsKeeper(platform.database, (e) => log.warn("analyze failed", e)); … keeper.stop();
 */
export function startStatisticsKeeper(
  database: Pick<Database, "db" | "kind">,
  onError: (error: unknown) => void,
  options: { firstMs?: number; everyMs?: number } = {},
): StatisticsKeeper {
  // PostgreSQL: a pass is one look at pg_stat_user_tables unless a table needs analyzing, so it runs
  // early and often: each connection caches generic plans, and those made for a table without
  // statistics stay until an ANALYZE of it (seen: 0.8 ms a Call-ID look-up after a minute of calls,
  // 35 µs with statistics).
  const everyMs = options.everyMs ?? (database.kind === "pglite" ? 15 * 60_000 : 15_000);
  let running: Promise<string[]> | null = null;
  const runOnce = () => {
    running ??= analyzeStale(database).finally(() => (running = null));
    return running;
  };
  const tick = () => void runOnce().catch(onError);
  const first = setTimeout(tick, options.firstMs ?? (database.kind === "pglite" ? 30_000 : 5_000));
  const timer = setInterval(tick, everyMs);
  first.unref();
  timer.unref();
  return {
    runOnce,
    stop() {
      clearTimeout(first);
      clearInterval(timer);
    },
  };
}
