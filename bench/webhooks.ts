/**
 * Webhook delivery throughput: deliveries per second from the delivery worker (claim with SKIP
 * LOCKED, sign twice, POST over HTTPS, record) to a local HTTPS receiver, against a bare client loop
 * POSTing the same bodies to the same receiver with the same concurrency, in the same run and
 * process. Prints both and the ratio (target ≥ 0.70).
 * Run by `bun run bench:webhooks`; PostgreSQL required (BENCH_PG_URL, default
 * postgres://postgres@127.0.0.1:5432/postgres; a scratch database is created and dropped).
 * BENCH_EMBEDDED=1 runs on PGlite instead.
 *
 * Environment: BENCH_EVENTS (default 5000), BENCH_SUBSCRIPTIONS (default 4: deliveries = events ×
 * subscriptions), BENCH_CONCURRENCY (default 64, the worker's default), BENCH_PER_SUBSCRIPTION
 * (default 16, the worker's default).
 */
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { rootCertificates } from "node:tls";
import { sql } from "drizzle-orm";
import { loadConfig } from "../src/core/config/config.ts";
import { createPlatform } from "../src/core/platform.ts";
import { rawRows } from "../src/core/db/migrate.ts";
import { createAccount } from "../src/core/accounts/accounts.service.ts";
import { createWebhook } from "../src/core/webhooks/webhooks.service.ts";
import { startDeliveryWorker } from "../src/core/webhooks/delivery-worker.ts";
import { startTestReceiver } from "../src/core/webhooks/delivery-test-receiver.ts";
import { BenchError, createScratchDatabase, databaseUrl, postgresReachable, randomHex, redact, runBench } from "./lib.ts";

const EVENTS = Number(process.env.BENCH_EVENTS ?? 5000);
const SUBSCRIPTIONS = Number(process.env.BENCH_SUBSCRIPTIONS ?? 4);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 64);
const PER_SUBSCRIPTION = Number(process.env.BENCH_PER_SUBSCRIPTION ?? 16);
const EMBEDDED = process.env.BENCH_EMBEDDED === "1";
const ADMIN_URL = process.env.BENCH_PG_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";

await runBench(async () => {
  const receiver = await startTestReceiver({ record: false });
  let received = 0;
  const sample: string[] = [];
  for (let s = 0; s < SUBSCRIPTIONS; s++) {
    receiver.on(`/hook-${s}`, (req) => {
      received++;
      if (sample.length < 1000) sample.push(req.body);
      return new Response("ok");
    });
  }
  const dataDir = mkdtempSync(join(tmpdir(), "parley-bench-webhooks-"));
  let env: Record<string, string> = { DATA_DIR: dataDir, LOG_LEVEL: "warn", WEBHOOK_ALLOW_PRIVATE: "1", WEBHOOK_CA_FILE: receiver.caFile };
  if (!EMBEDDED) {
    const problem = await postgresReachable(ADMIN_URL);
    if (problem) throw new BenchError(`PostgreSQL at ${redact(ADMIN_URL)}: ${problem}`);
    const name = await createScratchDatabase(ADMIN_URL);
    env = { ...env, DATABASE_URL: databaseUrl(ADMIN_URL, name), JWT_SECRET: randomHex(32), PARLEY_MASTER_KEY: randomHex(32) };
  }
  const platform = await createPlatform(loadConfig(env));
  try {
    const account = await createAccount(platform.db, { name: "bench" });
    for (let s = 0; s < SUBSCRIPTIONS; s++) {
      await createWebhook(platform.db, platform.secrets, account.id, { url: receiver.url(`/hook-${s}`) }, { allowPrivate: true });
    }
    const deliveries = EVENTS * SUBSCRIPTIONS;
    console.log(`store: ${EMBEDDED ? "PGlite (embedded)" : "PostgreSQL"}; ${EVENTS} events × ${SUBSCRIPTIONS} subscriptions = ${deliveries} deliveries; concurrency ${CONCURRENCY} (${PER_SUBSCRIPTION} per subscription)`);

    // Plan every delivery first (outbox rows), so the worker's rate is measured alone.
    const planStart = performance.now();
    for (let i = 0; i < EVENTS; i += 100) {
      await platform.events.transaction(async (_tx, emit) => {
        for (let j = i; j < Math.min(EVENTS, i + 100); j++) {
          await emit(account.id, "call.ended", {
            callId: `call_${j}`, direction: "inbound", answered: 1, billsec: 42, hangup_cause: "NORMAL_CLEARING", queue_id: null, agent_id: null, ts: Date.now(),
          });
        }
      });
    }
    console.log(`planned in ${((performance.now() - planStart) / 1000).toFixed(1)} s`);

    // Baseline: the same bodies, POSTed by a bare loop with the same concurrency and keep-alive TLS.
    // Run before and after ours (the mean is reported) so a change in machine load hits both sides.
    const bodies = [JSON.stringify({ event: "call.ended", account_id: account.id, data: { callId: "call_0" }, ts: Date.now() })];
    const session = new Bun.FetchSession({ tls: { ca: [...rootCertificates, await Bun.file(receiver.caFile).text()] } });
    async function bareLoop(): Promise<number> {
      let next = 0;
      const begin = performance.now();
      await Promise.all(
        Array.from({ length: CONCURRENCY }, async () => {
          while (next < deliveries) {
            const i = next++;
            const response = await session.fetch(receiver.url(`/hook-${i % SUBSCRIPTIONS}`), {
              method: "POST",
              headers: { "content-type": "application/json", "x-service-event": "call.ended" },
              body: bodies[i % bodies.length]!,
            });
            await response.arrayBuffer();
            if (!response.ok) throw new BenchError(`baseline POST got ${response.status}`);
          }
        }),
      );
      return (performance.now() - begin) / 1000;
    }
    const bareBefore = await bareLoop();
    received = 0;
    sample.length = 0;

    // Ours: start the worker, stop the clock when every delivery is recorded delivered.
    const start = performance.now();
    const worker = startDeliveryWorker(platform, { concurrency: CONCURRENCY, perSubscription: PER_SUBSCRIPTION });
    for (;;) {
      // The receiver's counter first (free); the database only once every POST has arrived, so the
      // measurement does not load the database it measures.
      if (received < deliveries) {
        await Bun.sleep(5);
        continue;
      }
      const [row] = await rawRows<{ open: number }>(
        platform.db,
        sql`select count(*)::int as open from webhook_delivery where account_id = ${account.id} and status <> 'delivered'`,
      );
      if (row!.open === 0) break;
      await Bun.sleep(5);
    }
    const oursSec = (performance.now() - start) / 1000;
    await worker.stop();
    if (received !== deliveries) throw new BenchError(`the receiver got ${received} POSTs for ${deliveries} deliveries`);

    bodies.splice(0, bodies.length, ...sample); // the very bodies the worker sent
    const bareAfter = await bareLoop();
    const bareSec = (bareBefore + bareAfter) / 2;
    session.close();

    const ours = deliveries / oursSec;
    const bare = deliveries / bareSec;
    console.log("");
    console.log(`  delivery worker     ${ours.toFixed(0).padStart(7)} deliveries/s   (${oursSec.toFixed(2)} s, claimed, signed, POSTed, recorded)`);
    console.log(`  bare client loop    ${bare.toFixed(0).padStart(7)} POSTs/s        (${bareBefore.toFixed(2)} s before, ${bareAfter.toFixed(2)} s after; same bodies, same concurrency)`);
    console.log(`  ratio               ${(ours / bare).toFixed(2)}   (target ≥ 0.70)`);
  } finally {
    await platform.close();
    await receiver.stop();
  }
});
