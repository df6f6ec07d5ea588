/**
 * Event-to-WebSocket latency: from `platform.events.emit` (outbox insert, commit, publish on the live
 * store) to the message at a WebSocket client of the realtime host, at a steady rate. The baseline, in
 * the same run and process, publishes the same JSON directly on the live store's pub/sub to a bare
 * Bun WebSocket server that forwards it; the ratio shows what the platform adds. Run by
 * `bun run bench:events`.
 *
 *   bun bench/events-ws.ts [--embedded]
 *
 *   --embedded   PGlite + in-process live store, instead of PostgreSQL + Redis
 *
 * Environment: BENCH_EVENTS (events per measurement, default 3000), BENCH_RATE (events per second,
 * default 100: a steady rate the outbox commit sustains on a small machine; above
 * it emits queue and latency measures the queue), BENCH_PG_URL (default postgres://postgres@127.0.0.1:5432/postgres, used to create and
 * drop a scratch database), BENCH_REDIS_URL (default redis://127.0.0.1:6379). Falls back to embedded
 * stores, and says so, when either is unreachable. Results go to stdout and .bench/events-ws.json.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { loadConfig } from "../src/core/config/config.ts";
import { createPlatform, type Platform } from "../src/core/platform.ts";
import { createLogger } from "../src/core/log/logger.ts";
import { createAccount } from "../src/core/accounts/accounts.service.ts";
import { mintTicket } from "../src/core/tickets/tickets.service.ts";
import { accountKey } from "../src/core/live/live-store.ts";
import { createRealtimeApp } from "../src/realtime/app.ts";
import { ROOT, createScratchDatabase, databaseUrl, postgresReachable, redisReachable, runBench, type Mode } from "./lib.ts";

const TARGET_P99_MS = 50;

interface Stats {
  count: number;
  p50: number;
  p99: number;
  max: number;
}

function stats(samples: number[]): Stats {
  const sorted = [...samples].sort((a, b) => a - b);
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
  return { count: sorted.length, p50: round(at(0.5)), p99: round(at(0.99)), max: round(sorted[sorted.length - 1]!) };
}

const round = (ms: number) => Math.round(ms * 100) / 100;

/**
 * Sends `count` messages at `rate` per second with `send(seq)` and resolves with each one's latency
 * (indexed by seq) once `received(seq)` has been called for all of them (or rejects after a generous timeout).
 */
async function measure(
  count: number,
  rate: number,
  send: (seq: number) => Promise<unknown>,
  onReceive: (handler: (seq: number) => void) => void,
): Promise<number[]> {
  const sentAt = new Array<number>(count);
  const latencies: number[] = new Array<number>(count);
  let received = 0;
  let done: () => void;
  const all = new Promise<void>((resolve) => (done = resolve));
  onReceive((seq) => {
    if (sentAt[seq] === undefined || latencies[seq] !== undefined) return;
    latencies[seq] = performance.now() - sentAt[seq]!;
    if (++received === count) done();
  });
  const interval = 1000 / rate;
  const start = performance.now();
  const inFlight: Promise<unknown>[] = [];
  for (let seq = 0; seq < count; seq++) {
    const due = start + seq * interval;
    const wait = due - performance.now();
    if (wait > 1) await Bun.sleep(wait);
    sentAt[seq] = performance.now();
    inFlight.push(send(seq));
  }
  await Promise.all(inFlight);
  const timeout = Bun.sleep(30_000).then(() => {
    throw new Error(`only ${received} of ${count} messages arrived`);
  });
  await Promise.race([all, timeout]);
  return latencies;
}

/** A WebSocket client that calls `handler(seq)` for each message carrying a sequence number. */
async function client(url: string, seqOf: (message: Record<string, unknown>) => number | null): Promise<{ onReceive: (h: (seq: number) => void) => void; close: () => void }> {
  let handler: (seq: number) => void = () => {};
  const ws = new WebSocket(url);
  const ready = new Promise<void>((resolve, reject) => {
    ws.onerror = () => reject(new Error(`WebSocket to ${url} failed`));
    ws.onmessage = (m) => {
      const message = JSON.parse(String(m.data)) as Record<string, unknown>;
      if (message.type === "ready" || message.type === "hello") return resolve();
      const seq = seqOf(message);
      if (seq !== null) handler(seq);
    };
  });
  await ready;
  return { onReceive: (h) => (handler = h), close: () => ws.close() };
}

/** The baseline: a bare Bun WebSocket server forwarding one live-store channel to its clients. */
async function baselineServer(platform: Platform, channel: string) {
  const sockets = new Set<Bun.ServerWebSocket<unknown>>();
  const unsubscribe = await platform.live.subscribe(channel, (message) => {
    for (const s of sockets) s.send(message);
  });
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    fetch(req, srv) {
      return srv.upgrade(req) ? undefined : new Response("upgrade required", { status: 426 });
    },
    websocket: {
      open(ws) {
        sockets.add(ws);
        ws.send(JSON.stringify({ type: "hello" }));
      },
      message() {},
      close(ws) {
        sockets.delete(ws);
      },
    },
  });
  return {
    url: `ws://127.0.0.1:${server.port}/`,
    async stop() {
      await unsubscribe();
      await server.stop(true);
    },
  };
}

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { embedded: { type: "boolean", default: false } } });
  const count = Number(process.env.BENCH_EVENTS ?? 3000);
  const rate = Number(process.env.BENCH_RATE ?? 100);
  const pgAdmin = process.env.BENCH_PG_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";
  const redisUrl = process.env.BENCH_REDIS_URL ?? "redis://127.0.0.1:6379";
  let mode: Mode = values.embedded ? "embedded" : "postgres+redis";
  if (mode === "postgres+redis") {
    const problem = (await postgresReachable(pgAdmin)) ?? (await redisReachable(redisUrl));
    if (problem) {
      console.log(`${problem}: falling back to embedded stores.`);
      mode = "embedded";
    }
  }
  const dataDir = mkdtempSync(join(tmpdir(), "parley-bench-events-"));
  const env: Record<string, string> = {
    DATA_DIR: dataDir,
    LOG_LEVEL: "error",
    JWT_SECRET: "bench-jwt-secret-0123456789abcdef0123456789",
    PARLEY_MASTER_KEY: "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff",
  };
  if (mode === "postgres+redis") {
    env.DATABASE_URL = databaseUrl(pgAdmin, await createScratchDatabase(pgAdmin));
    env.REDIS_URL = redisUrl;
  }
  const platform = await createPlatform(loadConfig(env), { log: createLogger({ level: "error" }) });
  try {
    const account = await createAccount(platform.db, { name: "Bench" });
    const channel = accountKey(account.id, "bench-baseline");
    console.log(`events-ws: ${mode}, ${count} events per measurement at ${rate}/s`);

    // Baseline: live-store publish → bare Bun WebSocket server → client.
    const base = await baselineServer(platform, channel);
    const baseClient = await client(base.url, (m) => (m.type === "event" ? Number((m.data as { message: string }).message) : null));
    const baseline = await measure(
      count,
      rate,
      (seq) =>
        platform.live.publish(
          channel,
          JSON.stringify({ type: "event", id: `evt_${String(seq).padStart(26, "0")}`, event: "test", account_id: account.id, data: { message: String(seq), webhook_id: null, ts: Date.now() }, ts: Date.now() }),
        ),
      baseClient.onReceive,
    );
    baseClient.close();
    await base.stop();

    // Parley: platform.events.emit → outbox → live store → EventHub → realtime socket → client.
    const app = createRealtimeApp(platform).listen({ hostname: "127.0.0.1", port: 0 });
    const { ticket } = await mintTicket(platform.live, { accountId: account.id, kind: "events", scopes: ["events"] });
    const parleyClient = await client(`ws://127.0.0.1:${app.server!.port}/v1/events/stream?ticket=${ticket}`, (m) =>
      m.type === "event" ? Number((m.data as { message: string }).message) : null,
    );
    // How long emit() itself takes (the outbox transaction's commit), to tell storage from delivery.
    const committed: number[] = new Array<number>(count);
    const parley = await measure(
      count,
      rate,
      async (seq) => {
        const t0 = performance.now();
        await platform.events.emit(account.id, "test", { message: String(seq), webhook_id: null, ts: Date.now() });
        committed[seq] = performance.now() - t0;
      },
      parleyClient.onReceive,
    );
    parleyClient.close();
    await app.stop(true);

    const b = stats(baseline);
    const p = stats(parley);
    const c = stats(committed);
    // Per event: arrival minus commit, i.e. what publishing and the stream add after the outbox commit.
    const d = stats(parley.map((total, seq) => Math.max(0, total - committed[seq]!)));
    const ratio = { p50: round(p.p50 / b.p50), p99: round(p.p99 / b.p99), after_commit_p99: round(d.p99 / b.p99) };
    console.log("");
    console.log(`                         p50 ms   p99 ms   max ms`);
    console.log(`baseline (pub/sub → ws)  ${fmt(b.p50)}${fmt(b.p99)}${fmt(b.max)}`);
    console.log(`parley (emit → stream)   ${fmt(p.p50)}${fmt(p.p99)}${fmt(p.max)}`);
    console.log(`  of which emit() commit ${fmt(c.p50)}${fmt(c.p99)}${fmt(c.max)}`);
    console.log(`  after the commit       ${fmt(d.p50)}${fmt(d.p99)}${fmt(d.max)}`);
    console.log(`ratio parley/baseline    ${fmt(ratio.p50)}${fmt(ratio.p99)}  (after the commit: p99 ${ratio.after_commit_p99}x)`);
    console.log(`target p99 < ${TARGET_P99_MS} ms: ${p.p99 < TARGET_P99_MS ? "met" : "NOT met"}`);
    mkdirSync(join(ROOT, ".bench"), { recursive: true });
    writeFileSync(
      join(ROOT, ".bench", "events-ws.json"),
      JSON.stringify({ mode, count, rate, baseline: b, parley: p, emit_commit: c, after_commit: d, ratio, target_p99_ms: TARGET_P99_MS, at: new Date().toISOString() }, null, 2),
    );
  } finally {
    await platform.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

const fmt = (n: number) => String(n).padStart(8) + " ";

await runBench(main);
