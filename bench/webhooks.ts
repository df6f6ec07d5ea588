/**
 * Webhook delivery throughput: deliveries per second from the delivery worker (claim with SKIP
 * LOCKED, sign twice, POST over HTTPS, record) to a local HTTPS receiver, against a bare client loop
 * POSTing the same bodies to the same receiver, in the same process: Bun's fetch (the runtime's HTTP
 * client, what a bare loop is written with), with the same concurrency, the same kind of keep-alive
 * TLS session (the CA bundle plus SNI, connecting to the checked address with the URL's Host), the
 * same headers and bodies the worker sent, the same redirect and timeout options. The worker posts
 * with its own HTTPS client (src/core/webhooks/https-pool.ts), so each round also runs a bare loop on
 * that client, once, and prints the worker against it: what claiming, signing and recording cost
 * over the same POSTs (informational; the target is against the fetch loop). A first, unmeasured batch gives the bare loop requests the worker
 * really sent; each round plans fresh deliveries, then runs bare (replaying the last batch's
 * requests), worker, bare (replaying this round's): the machine is noisy, so the worker is compared
 * with the mean of the two bare runs around it;
 * the median ratio over the rounds is the result (target ≥ 0.70). Each round also prints the CPU time
 * per delivery spent in this process (and on its JavaScript thread, the bare loop's bottleneck) and in
 * PostgreSQL (Linux), which shows where the worker pays.
 * Run by `bun run bench:webhooks`; PostgreSQL required (BENCH_PG_URL, default
 * postgres://postgres@127.0.0.1:5432/postgres; a scratch database is created and dropped).
 * BENCH_EMBEDDED=1 runs on PGlite instead.
 *
 * Environment: BENCH_EVENTS (default 5000), BENCH_SUBSCRIPTIONS (default 4: deliveries = events ×
 * subscriptions), BENCH_CONCURRENCY (default 64, the worker's default), BENCH_PER_SUBSCRIPTION
 * (default 16, the worker's default), BENCH_ROUNDS (default 5: the machine is noisy, and the median of
 * five rounds moves less than that of three).
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
import { HttpsPool } from "../src/core/webhooks/https-pool.ts";
import { BenchError, cpuPercent, cpuSeconds, cpuSnapshot, createScratchDatabase, databaseUrl, postgresReachable, randomHex, redact, runBench } from "./lib.ts";

const EVENTS = Number(process.env.BENCH_EVENTS ?? 5000);
const SUBSCRIPTIONS = Number(process.env.BENCH_SUBSCRIPTIONS ?? 4);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 64);
const PER_SUBSCRIPTION = Number(process.env.BENCH_PER_SUBSCRIPTION ?? 16);
const ROUNDS = Math.max(1, Number(process.env.BENCH_ROUNDS ?? 5));
const EMBEDDED = process.env.BENCH_EMBEDDED === "1";
/** Idle connections are kept this long between runs (the receiver keeps them 30 s). */
const WARM_MS = 20_000;
const ADMIN_URL = process.env.BENCH_PG_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";

await runBench(async () => {
  const receiver = await startTestReceiver({ record: false });
  let received = 0;
  /** Bodies and headers of requests the worker sent (replayed by the bare loop). */
  const sample: Array<{ body: string; headers: Record<string, string> }> = [];
  for (let s = 0; s < SUBSCRIPTIONS; s++) {
    receiver.on(`/hook-${s}`, (req) => {
      received++;
      if (sample.length < 1000) sample.push({ body: req.body, headers: req.headers });
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
    // Not through the API (which waits for this itself): the events planned next see the subscriptions.
    await platform.configCache.settle();
    const deliveries = EVENTS * SUBSCRIPTIONS;
    console.log(`store: ${EMBEDDED ? "PGlite (embedded)" : "PostgreSQL"}; ${EVENTS} events × ${SUBSCRIPTIONS} subscriptions = ${deliveries} deliveries per round, ${ROUNDS} rounds; concurrency ${CONCURRENCY} (${PER_SUBSCRIPTION} per subscription)`);

    // The bare client: the worker's kind of session (CA bundle + SNI from the URL's host name),
    // connecting to the address with the URL's Host header, as the worker does.
    const session = new Bun.FetchSession({ tls: { ca: [...rootCertificates, await Bun.file(receiver.caFile).text()], serverName: "localhost" } });
    const target = (i: number) => `https://127.0.0.1:${receiver.port}/hook-${i % SUBSCRIPTIONS}`;
    const HOP = new Set(["host", "content-length", "connection", "accept", "accept-encoding"]);
    /** What the bare loop POSTs: requests the worker sent (bodies and headers), taken from the receiver. */
    let requests: Array<{ body: string; headers: Record<string, string> }> = [];
    const replayed = () => sample.map(({ body, headers }) => ({ body, headers: Object.fromEntries(Object.entries(headers).filter(([k]) => !HOP.has(k))) }));
    /** Seconds for `post` to run once per delivery, CONCURRENCY at a time. */
    async function timedLoop(post: (i: number) => Promise<void>): Promise<number> {
      let next = 0;
      const begin = performance.now();
      await Promise.all(
        Array.from({ length: CONCURRENCY }, async () => {
          while (next < deliveries) await post(next++);
        }),
      );
      return (performance.now() - begin) / 1000;
    }
    const bareLoop = () =>
      timedLoop(async (i) => {
        const request = requests[i % requests.length]!;
        const response = await session.fetch(target(i), {
          method: "POST",
          headers: { ...request.headers, host: `localhost:${receiver.port}` },
          body: request.body,
          redirect: "manual",
          signal: AbortSignal.timeout(5000),
        });
        await response.arrayBuffer();
        if (!response.ok) throw new BenchError(`baseline POST got ${response.status}`);
      });

    /** The same bare loop on the worker's HTTPS client (its headers as one block of lines). */
    const pool = new HttpsPool({ ca: [...rootCertificates, await Bun.file(receiver.caFile).text()], idleMs: WARM_MS });
    function barePoolLoop(): Promise<number> {
      const lines = requests.map((r) => Object.entries(r.headers).map(([k, v]) => `${k}: ${v}\r\n`).join(""));
      return timedLoop(async (i) => {
        const k = i % requests.length;
        const status = await pool.post({
          address: "127.0.0.1", port: receiver.port, serverName: "localhost", hostHeader: `localhost:${receiver.port}`,
          path: `/hook-${i % SUBSCRIPTIONS}`, headers: lines[k]!, body: requests[k]!.body, timeoutMs: 5000,
        });
        if (status !== 200) throw new BenchError(`baseline POST got ${status}`);
      });
    }

    /**
     * CPU seconds so far of this process, and of each PostgreSQL process when the server runs on this
     * machine (Linux): the whole server, so keep other database work off it while measuring.
     */
    const cpuNow = (): { self: number; js: number; db: ReturnType<typeof cpuSnapshot> } => {
      const usage = process.cpuUsage();
      // The JavaScript thread alone (the process's main thread): the bare loop's bottleneck.
      const js = process.platform === "linux" ? cpuSeconds(`/proc/self/task/${process.pid}/stat`) : 0;
      return { self: (usage.user + usage.system) / 1e6, js, db: cpuSnapshot(EMBEDDED ? {} : { postgres: "postgres" }) };
    };
    const cpuPer = (from: ReturnType<typeof cpuNow>, n: number) => {
      const to = cpuNow();
      // Percent of a core over one second is CPU seconds × 100.
      const db = (cpuPercent(from.db, to.db, 1).postgres ?? 0) / 100;
      const js = process.platform === "linux" ? ` (${(((to.js - from.js) * 1e6) / n).toFixed(0)} on its JavaScript thread)` : "";
      return `${(((to.self - from.self) * 1e6) / n).toFixed(0)} µs in this process${js}${EMBEDDED ? "" : `, ${((db * 1e6) / n).toFixed(0)} µs in PostgreSQL`} per delivery`;
    };
    /** Plans `count` call.ended events (outbox rows: deliveries = count × subscriptions). */
    async function plan(tag: string, count: number): Promise<void> {
      for (let i = 0; i < count; i += 100) {
        await platform.events.transaction(async (_tx, emit) => {
          for (let j = i; j < Math.min(count, i + 100); j++) {
            await emit(account.id, "call.ended", {
              callId: `call_${tag}_${j}`, direction: "inbound", answered: 1, billsec: 42, hangup_cause: "NORMAL_CLEARING", queue_id: null, agent_id: null, ts: Date.now(),
            });
          }
        });
      }
    }
    /**
     * The worker's HTTPS client, kept from round to round: a running platform's worker posts on
     * connections it already holds (the bare loops' sessions are kept too); without it each round
     * would pay 64 TLS handshakes the bare loops do not (~45 ms of CPU here, 3 % of a round).
     */
    const workerPool = new HttpsPool({ ca: [...rootCertificates, await Bun.file(receiver.caFile).text()], idleMs: WARM_MS });
    /** Starts the worker and stops the clock when every one of `expected` deliveries is recorded delivered: seconds. */
    async function deliverAll(expected: number): Promise<number> {
      received = 0;
      sample.length = 0;
      const start = performance.now();
      const worker = startDeliveryWorker(platform, { concurrency: CONCURRENCY, perSubscription: PER_SUBSCRIPTION, httpsPool: workerPool });
      for (;;) {
        // The receiver's counter first (free); the database only once every POST has arrived, so the
        // measurement does not load the database it measures.
        if (received < expected) {
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
      const seconds = (performance.now() - start) / 1000;
      await worker.stop();
      if (received !== expected) throw new BenchError(`the receiver got ${received} POSTs for ${expected} deliveries`);
      return seconds;
    }

    // Not measured: the worker delivers a first batch, so that every bare run, the first one too, posts
    // requests the worker really sent (the same bodies and headers, signatures included).
    await plan("warmup", Math.min(EVENTS, 1000));
    await deliverAll(Math.min(EVENTS, 1000) * SUBSCRIPTIONS);
    requests = replayed();

    const ratios: number[] = [];
    const poolRatios: number[] = [];
    for (let round = 1; round <= ROUNDS; round++) {
      // Plan every delivery of the round first (outbox rows), so the worker's rate is measured alone.
      const planStart = performance.now();
      await plan(String(round), EVENTS);
      const planned = ((performance.now() - planStart) / 1000).toFixed(1);

      const bareCpu = cpuNow();
      const bareBefore = await bareLoop();
      const bareCost = cpuPer(bareCpu, deliveries);

      // Ours: from the worker's start until every delivery is recorded delivered.
      const workerCpu = cpuNow();
      const oursSec = await deliverAll(deliveries);
      const workerCost = cpuPer(workerCpu, deliveries);

      // The next bare runs replay the requests this round's worker sent.
      requests = replayed();
      const bareAfter = await bareLoop();
      const bareSec = (bareBefore + bareAfter) / 2;
      const poolCpu = cpuNow();
      const poolSec = await barePoolLoop();
      const poolCost = cpuPer(poolCpu, deliveries);
      const ours = deliveries / oursSec;
      const bare = deliveries / bareSec;
      const barePool = deliveries / poolSec;
      ratios.push(ours / bare);
      poolRatios.push(ours / barePool);
      console.log("");
      console.log(`round ${round} (planned in ${planned} s)`);
      console.log(`  delivery worker     ${ours.toFixed(0).padStart(7)} deliveries/s   (${oursSec.toFixed(2)} s, claimed, signed, POSTed, recorded)`);
      console.log(`  bare client loop    ${bare.toFixed(0).padStart(7)} POSTs/s        (${bareBefore.toFixed(2)} s before, ${bareAfter.toFixed(2)} s after; the requests the worker sent, same concurrency)`);
      console.log(`  ratio               ${(ours / bare).toFixed(2)}`);
      console.log(`  CPU, worker         ${workerCost}`);
      console.log(`  CPU, bare (before)  ${bareCost}`);
      console.log(`  bare loop, worker's client ${barePool.toFixed(0).padStart(7)} POSTs/s (${poolSec.toFixed(2)} s; worker/it ${(ours / barePool).toFixed(2)}); CPU ${poolCost}`);
    }
    session.close();
    pool.close();
    workerPool.close();
    const sorted = [...ratios].sort((x, y) => x - y);
    const median = sorted.length % 2 ? sorted[(sorted.length - 1) / 2]! : (sorted[sorted.length / 2 - 1]! + sorted[sorted.length / 2]!) / 2;
    console.log("");
    console.log(`ratio per round: ${ratios.map((r) => r.toFixed(2)).join(", ")}; median ${median.toFixed(2)}   (target ≥ 0.70)`);
    console.log(`against a bare loop on the worker's own client: ${poolRatios.map((r) => r.toFixed(2)).join(", ")} (informational)`);
  } finally {
    await platform.close();
    await receiver.stop();
  }
});
