/**
 * Webhook claims behind a slow endpoint's backlog: the time of one delivery claim (the worker's
 * exchange, claiming only) while one subscription that the worker skips (it holds all it may of it)
 * has BENCH_BACKLOG due deliveries at the front of the queue, against the same claim with no backlog,
 * in the same run. Before the claim found the other subscriptions by a skip scan, it walked the whole
 * backlog on every claim (100,000 rows: about 10 ms a claim; 1,000,000: 100 ms).
 * Target: the backlog costs a claim at most twice the time of one without it.
 * Run by `bun run bench:claims`; PostgreSQL required (BENCH_PG_URL, default
 * postgres://postgres@127.0.0.1:5432/postgres; a scratch database is created and dropped).
 *
 * Environment: BENCH_BACKLOG (default 100000), BENCH_CLAIMS (claims timed per case, default 300).
 */
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { sql } from "drizzle-orm";
import { loadConfig } from "../src/core/config/config.ts";
import { createPlatform } from "../src/core/platform.ts";
import { exchangeDeliveries } from "../src/core/webhooks/delivery.store.ts";
import { BenchError, createScratchDatabase, databaseUrl, postgresReachable, randomHex, redact, runBench } from "./lib.ts";

const BACKLOG = Number(process.env.BENCH_BACKLOG ?? 100_000);
const CLAIMS = Number(process.env.BENCH_CLAIMS ?? 300);
const ADMIN_URL = process.env.BENCH_PG_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";
const TARGET_RATIO = 2;

await runBench(async () => {
  const problem = await postgresReachable(ADMIN_URL);
  if (problem) throw new BenchError(`PostgreSQL at ${redact(ADMIN_URL)}: ${problem}`);
  const name = await createScratchDatabase(ADMIN_URL);
  const platform = await createPlatform(
    loadConfig({ DATA_DIR: mkdtempSync(join(tmpdir(), "parley-bench-claims-")), LOG_LEVEL: "warn", DATABASE_URL: databaseUrl(ADMIN_URL, name), JWT_SECRET: randomHex(32), PARLEY_MASTER_KEY: randomHex(32) }),
  );
  try {
    const db = platform.db;
    // Five subscriptions with 20 due deliveries each, newer than any of the backlog.
    await db.execute(sql`insert into webhook_delivery_due (account_id, id, webhook_id, event_id, attempts, next_attempt_at)
      select 'acc_bench', 'whd_new_' || g, 'wh_other_' || (g % 5), g, 0, 1000000000000 + g from generate_series(1, 100) g`);
    /** Median and p99 ms of CLAIMS claims of 64, skipping the slow subscription (leases end at once, so every claim finds the same rows). */
    async function timeClaims(): Promise<{ p50: number; p99: number; claimed: number }> {
      const times: number[] = [];
      let claimed = 0;
      for (let i = 0; i < CLAIMS + 20; i++) {
        const now = 2_000_000_000_000 + i;
        const start = performance.now();
        const result = await exchangeDeliveries(platform.database, {
          records: [], now, limit: 64, leaseUntil: now, token: `bench-${i}`, skipWebhooks: ["wh_slow"], caps: {}, defaultCap: 64, maxAttempts: 3,
        });
        if (i >= 20) {
          times.push(performance.now() - start);
          claimed = result.claimed.length;
        }
      }
      times.sort((a, b) => a - b);
      return { p50: times[Math.floor(times.length / 2)]!, p99: times[Math.floor(times.length * 0.99)]!, claimed };
    }
    const bare = await timeClaims();
    await db.execute(sql`insert into webhook_delivery_due (account_id, id, webhook_id, event_id, attempts, next_attempt_at)
      select 'acc_bench', 'whd_slow_' || g, 'wh_slow', 1000 + g, 0, g from generate_series(1, ${BACKLOG}) g`);
    await db.execute(sql`vacuum analyze webhook_delivery_due`);
    const behind = await timeClaims();
    if (bare.claimed !== 64 || behind.claimed !== 64) throw new BenchError(`claims took ${bare.claimed} and ${behind.claimed} rows, not 64`);
    const ratio = behind.p50 / bare.p50;
    console.log(`claims of 64 deliveries of 5 subscriptions, skipping a sixth (${CLAIMS} each, PostgreSQL)`);
    console.log(`  no backlog                     p50 ${bare.p50.toFixed(2)} ms   p99 ${bare.p99.toFixed(2)} ms`);
    console.log(`  behind ${BACKLOG.toLocaleString("en-US")} skipped deliveries   p50 ${behind.p50.toFixed(2)} ms   p99 ${behind.p99.toFixed(2)} ms`);
    console.log(`  ratio (behind / none)          ${ratio.toFixed(2)}   (target ≤ ${TARGET_RATIO})`);
  } finally {
    await platform.close();
  }
});
