/**
 * Throughput and latency of GET /v1/whoami (API-key auth, rate limiter, JSON reply) against a bare
 * Bun.serve baseline, with wrk. Run by `bun run bench`.
 *
 *   bun bench/run.ts [--embedded] [--binary]
 *
 *   --embedded   PGlite + in-process live store, instead of PostgreSQL + Redis
 *   --binary     run dist/parley (from `bun run build`) instead of `bun src/main.ts`
 *
 * Environment: BENCH_ROUNDS (alternating bare/parley rounds, default 5), BENCH_DURATION (wrk duration
 * of each measurement, default 5s), BENCH_CONNECTIONS (default 64),
 * BENCH_PG_URL (default postgres://postgres@127.0.0.1:5432/postgres, used to create and drop the
 * scratch database), BENCH_REDIS_URL (default redis://127.0.0.1:6379).
 *
 * PostgreSQL + Redis is the default; when either is unreachable it falls back to embedded stores
 * and says so. Results go to stdout and to .bench/whoami.json.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { cpus } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import {
  BenchError,
  ROOT,
  createScratchDatabase,
  databaseUrl,
  exited,
  postgresReachable,
  redisReachable,
  runBench,
  spawnChild,
  startParley,
  waitFor,
  children,
  type Child,
  type Mode,
} from "./lib.ts";

const TARGET_RATIO = 0.5;
const TARGET_P99_MS = 10;
const WARMUP = "5s"; // JIT tiers settle in about this long; shorter left the first round low

interface WrkResult {
  requestsPerSec: number;
  p50Ms: number;
  p99Ms: number;
  requests: number;
  /** Responses outside 2xx/3xx and socket errors; either makes the run meaningless. */
  non2xx: number;
  socketErrors: number;
}

/** Starts the bare baseline and returns it with its whoami URL. */
async function startBare(): Promise<{ child: Child; url: string }> {
  const child = spawnChild("bare", [process.execPath, join(ROOT, "bench", "bare-server.ts")], {
    PATH: process.env.PATH ?? "",
    PORT: "0",
    HOST: "127.0.0.1",
    NODE_ENV: "production",
  });
  const base = await waitFor(child, "its listening line", () => /listening on (http:\/\/\S+)/.exec(child.stdout())?.[1] ?? null);
  return { child, url: `${base}/v1/whoami` };
}

/** One request before wrk: a wrong key or a 401 would otherwise be benchmarked as if it were the real thing. */
async function checkEndpoint(name: string, url: string, apiKey: string): Promise<void> {
  const response = await fetch(url, { headers: { "x-api-key": apiKey } });
  const text = await response.text();
  if (response.status !== 200 || !text.includes('"via":"key"')) {
    throw new BenchError(`${name}: GET ${url} answered ${response.status} ${text}`);
  }
}

const UNIT_MS: Record<string, number> = { us: 0.001, ms: 1, s: 1000, m: 60_000 };

function toMs(value: string, unit: string): number {
  const factor = UNIT_MS[unit];
  if (factor === undefined) throw new BenchError(`unknown latency unit in wrk output: ${value}${unit}`);
  return Number(value) * factor;
}

/** Reads requests/s, p50, p99 and error counts out of wrk's text report (run with --latency). */
function parseWrk(output: string): WrkResult {
  const rps = /^Requests\/sec:\s+([\d.]+)/m.exec(output);
  const p50 = /^\s+50%\s+([\d.]+)(us|ms|s|m)\s*$/m.exec(output);
  const p99 = /^\s+99%\s+([\d.]+)(us|ms|s|m)\s*$/m.exec(output);
  const total = /^\s*(\d+) requests in /m.exec(output);
  if (!rps?.[1] || !p50?.[1] || !p50[2] || !p99?.[1] || !p99[2] || !total?.[1]) {
    throw new BenchError(`could not read wrk's output:\n${output}`);
  }
  const non2xx = /Non-2xx or 3xx responses:\s+(\d+)/.exec(output);
  const socket = /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(output);
  return {
    requestsPerSec: Number(rps[1]),
    p50Ms: toMs(p50[1], p50[2]),
    p99Ms: toMs(p99[1], p99[2]),
    requests: Number(total[1]),
    non2xx: Number(non2xx?.[1] ?? 0),
    socketErrors: socket ? socket.slice(1).reduce((sum, n) => sum + Number(n), 0) : 0,
  };
}

async function wrk(name: string, url: string, apiKey: string, duration: string, connections: number): Promise<string> {
  const cmd = ["wrk", "-t1", `-c${connections}`, `-d${duration}`, "--latency", "-H", `x-api-key: ${apiKey}`, url];
  const child = spawnChild(`wrk against ${name.trim()}`, cmd, { PATH: process.env.PATH ?? "" });
  const code = await child.proc.exited;
  children.delete(child);
  if (code !== 0) throw new BenchError(`${child.name} exited with ${code}:\n${child.stdout()}${child.stderr()}`);
  return child.stdout();
}

async function measure(server: Child, url: string, apiKey: string, duration: string, connections: number, warmUp: boolean): Promise<WrkResult> {
  const name = server.name.padEnd(6);
  process.stdout.write(`${name}: ${warmUp ? `warm-up ${WARMUP}, then ` : ""}${duration} with ${connections} connections … `);
  if (warmUp) await wrk(name, url, apiKey, WARMUP, connections);
  const output = await wrk(name, url, apiKey, duration, connections);
  const result = parseWrk(output);
  process.stdout.write(`${Math.round(result.requestsPerSec).toLocaleString("en-US")} req/s\n`);
  if (result.non2xx || result.socketErrors) {
    const died = exited(server) ? `\n${server.name} exited (${server.proc.exitCode ?? server.proc.signalCode}); its stderr:\n${server.stderr().slice(-4000)}` : "";
    throw new BenchError(`${server.name}: ${result.non2xx} non-2xx responses, ${result.socketErrors} socket errors; the numbers would be meaningless.\n${output}${died}`);
  }
  return result;
}

function row(cells: string[], widths: number[]): string {
  return cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join("  ");
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    args: process.argv.slice(2),
    options: { embedded: { type: "boolean", default: false }, binary: { type: "boolean", default: false } },
    strict: true,
  });
  if (!Bun.which("wrk")) {
    console.error("wrk is not installed. Install it (Debian/Ubuntu: `apt-get install -y wrk`; macOS: `brew install wrk`) and run again.");
    process.exit(1);
  }
  if (values.binary && !(await Bun.file(join(ROOT, "dist", "parley")).exists())) {
    throw new BenchError("--binary needs dist/parley: run `bun run build` first.");
  }
  // wrk takes 10, 10s, 2m, 1h; a bare number means seconds.
  const roundCount = Number(process.env.BENCH_ROUNDS || "5");
  if (!Number.isInteger(roundCount) || roundCount < 1 || roundCount > 50) throw new BenchError("BENCH_ROUNDS must be a whole number from 1 to 50");
  const durationText = process.env.BENCH_DURATION || "5s";
  if (!/^\d+[smh]?$/.test(durationText)) throw new BenchError(`BENCH_DURATION must look like 10, 10s, 2m or 1h; got ${durationText}`);
  const duration = /^\d+$/.test(durationText) ? `${durationText}s` : durationText;
  const connections = Number(process.env.BENCH_CONNECTIONS || 64);
  if (!Number.isInteger(connections) || connections < 1) throw new BenchError(`BENCH_CONNECTIONS must be a positive integer; got ${process.env.BENCH_CONNECTIONS}`);
  const adminUrl = process.env.BENCH_PG_URL || "postgres://postgres@127.0.0.1:5432/postgres";
  const redisUrl = process.env.BENCH_REDIS_URL || "redis://127.0.0.1:6379";

  let mode: Mode = "postgres+redis";
  let fallback: string | null = null;
  if (values.embedded) {
    mode = "embedded";
  } else {
    const problems = (await Promise.all([postgresReachable(adminUrl), redisReachable(redisUrl)])).filter((p): p is string => p !== null);
    if (problems.length) {
      mode = "embedded";
      fallback = problems.join("; ");
    }
  }
  if (fallback) console.log(`NOTE: ${fallback}. Falling back to embedded stores (PGlite + in-process live store).`);
  const stores: { databaseUrl?: string; redisUrl?: string } = {};
  if (mode === "postgres+redis") {
    const name = await createScratchDatabase(adminUrl);
    stores.databaseUrl = databaseUrl(adminUrl, name);
    stores.redisUrl = redisUrl;
    console.log(`created database ${name}`);
  }
  const runner = values.binary ? "dist/parley" : "bun src/main.ts";
  console.log(`mode: ${mode === "embedded" ? "embedded (PGlite + in-process live store)" : "PostgreSQL + Redis"}; parley runs as ${runner}`);

  const baseline = await startBare();
  const parley = await startParley(mode, values.binary, stores);
  await checkEndpoint("bare", baseline.url, parley.apiKey);
  await checkEndpoint("parley", parley.url, parley.apiKey);

  // This machine's speed drifts by a factor of two within seconds (shared hosts). Measuring the two
  // servers in alternating short rounds and comparing each pair, taken moments apart, cancels most of
  // that drift; the medians keep one unlucky round from deciding the result.
  const rounds: Array<{ bare: WrkResult; parley: WrkResult; ratio: number }> = [];
  for (let round = 1; round <= roundCount; round++) {
    console.log(`round ${round}/${roundCount}`);
    const b = await measure(baseline.child, baseline.url, parley.apiKey, duration, connections, round === 1);
    const p = await measure(parley.child, parley.url, parley.apiKey, duration, connections, round === 1);
    rounds.push({ bare: b, parley: p, ratio: p.requestsPerSec / b.requestsPerSec });
  }
  const median = (values: number[]) => {
    const sorted = [...values].sort((x, y) => x - y);
    const mid = Math.floor(sorted.length / 2);
    return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
  };
  const medianOf = (pick: (r: (typeof rounds)[number]) => WrkResult): WrkResult => ({
    ...pick(rounds[0]!),
    requestsPerSec: median(rounds.map((r) => pick(r).requestsPerSec)),
    p50Ms: median(rounds.map((r) => pick(r).p50Ms)),
    p99Ms: median(rounds.map((r) => pick(r).p99Ms)),
  });
  const bare = medianOf((r) => r.bare);
  const platform = medianOf((r) => r.parley);
  const ratio = median(rounds.map((r) => r.ratio));
  const ratioOk = ratio >= TARGET_RATIO;
  const p99Ok = platform.p99Ms < TARGET_P99_MS;
  const widths = [8, 12, 10, 10];
  const fmt = (r: WrkResult, name: string) => row([name, Math.round(r.requestsPerSec).toLocaleString("en-US"), r.p50Ms.toFixed(2), r.p99Ms.toFixed(2)], widths);
  console.log("");
  console.log(`GET /v1/whoami, wrk -t1 -c${connections} -d${duration} × ${roundCount} alternating rounds, ${mode}, ${cpus().length} CPUs, Bun ${Bun.version}`);
  console.log(`per-round ratios: ${rounds.map((r) => r.ratio.toFixed(2)).join(", ")}`);
  console.log("medians:");
  console.log(row(["", "req/s", "p50 ms", "p99 ms"], widths));
  console.log(fmt(bare, "bare"));
  console.log(fmt(platform, "parley"));
  console.log("");
  console.log(`ratio parley/bare = ${ratio.toFixed(2)} (median of the per-round ratios)`);
  console.log(`target ratio >= ${TARGET_RATIO.toFixed(2)}: ${ratioOk ? "holds" : "MISSED"}`);
  console.log(`target p99 < ${TARGET_P99_MS} ms: ${p99Ok ? "holds" : "MISSED"} (${platform.p99Ms.toFixed(2)} ms)`);

  const report = {
    endpoint: "GET /v1/whoami",
    at: new Date().toISOString(),
    mode,
    fallbackReason: fallback,
    parleyRunsAs: runner,
    wrk: { threads: 1, connections, duration, warmup: WARMUP },
    machine: { cpus: cpus().length, bun: Bun.version, platform: `${process.platform}-${process.arch}` },
    rounds,
    bare,
    parley: platform,
    ratio: Number(ratio.toFixed(4)),
    targets: {
      ratio: { min: TARGET_RATIO, holds: ratioOk },
      p99Ms: { max: TARGET_P99_MS, holds: p99Ok },
    },
  };
  mkdirSync(join(ROOT, ".bench"), { recursive: true });
  writeFileSync(join(ROOT, ".bench", "whoami.json"), JSON.stringify(report, null, 2) + "\n");
  console.log("wrote .bench/whoami.json");
}

if (import.meta.main) await runBench(main);
