/**
 * What the benchmarks share: child processes that are always stopped, a scratch PostgreSQL database
 * that is always dropped, store reachability checks, starting Parley with its first-run API key, and
 * CPU accounting per process from /proc.
 */
import { mkdtempSync, readFileSync, readdirSync, rmSync } from "node:fs";
import { availableParallelism, tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { RedisClient } from "bun";
import postgres from "postgres";
import { postgresTarget } from "../src/core/db/open.ts";
import { collect, freePorts } from "../test/support/processes.ts";
export { collect, freePorts };

export const ROOT = resolve(import.meta.dir, "..");
const START_TIMEOUT_MS = 90_000;

export type Mode = "postgres+redis" | "embedded";

export class BenchError extends Error {}

export interface Child {
  name: string;
  proc: Bun.Subprocess<"ignore", "pipe", "pipe">;
  stdout(): string;
  stderr(): string;
}

// Everything that must be undone, whatever way the run ends.
export const children = new Set<Child>();
let scratchDatabase: { adminUrl: string; name: string } | null = null;
let scratchDir: string | null = null;
let cleaning: Promise<void> | null = null;

export function spawnChild(name: string, cmd: string[], env: Record<string, string>): Child {
  const proc = Bun.spawn(cmd, { cwd: ROOT, env, stdin: "ignore", stdout: "pipe", stderr: "pipe" });
  const child: Child = { name, proc, stdout: collect(proc.stdout), stderr: collect(proc.stderr) };
  children.add(child);
  return child;
}

export function exited(child: Child): boolean {
  return child.proc.exitCode !== null || child.proc.signalCode !== null;
}

/** SIGTERM, then SIGKILL if it has not exited after `graceMs`. */
export async function stopChild(child: Child, graceMs = 5_000): Promise<void> {
  if (!exited(child)) {
    child.proc.kill("SIGTERM");
    const timer = setTimeout(() => child.proc.kill("SIGKILL"), graceMs);
    await child.proc.exited;
    clearTimeout(timer);
  }
  children.delete(child);
}

/** Stops every child, drops the scratch database and removes the scratch directory. Runs once. */
export function cleanUp(): Promise<void> {
  cleaning ??= (async () => {
    await Promise.all([...children].map((c) => stopChild(c)));
    if (scratchDatabase) {
      const { adminUrl, name } = scratchDatabase;
      const sql = pgClient(adminUrl, { max: 1, connect_timeout: 5, onnotice: () => {} });
      try {
        // FORCE: a platform killed mid-query may leave sessions behind that would block the drop.
        await sql.unsafe(`drop database if exists "${name}" with (force)`);
        console.log(`dropped database ${name}`);
      } catch (error) {
        console.error(`could not drop database ${name}: ${(error as Error).message}; drop it by hand.`);
      } finally {
        await sql.end({ timeout: 2 });
      }
      scratchDatabase = null;
    }
    if (scratchDir) rmSync(scratchDir, { recursive: true, force: true });
  })();
  return cleaning;
}

export async function waitFor<T>(child: Child, what: string, probe: () => T | null): Promise<T> {
  const deadline = Date.now() + START_TIMEOUT_MS;
  for (;;) {
    const found = probe();
    if (found !== null) return found;
    if (exited(child)) throw new BenchError(`${child.name} exited before ${what}.\n${child.stdout()}\n${child.stderr()}`);
    if (Date.now() > deadline) throw new BenchError(`${child.name}: no ${what} within ${START_TIMEOUT_MS / 1000} s.\n${child.stdout()}\n${child.stderr()}`);
    await Bun.sleep(50);
  }
}

export async function postgresReachable(url: string): Promise<string | null> {
  const sql = pgClient(url, { max: 1, connect_timeout: 3, onnotice: () => {} });
  try {
    await sql`select 1`;
    return null;
  } catch (error) {
    return `PostgreSQL at ${redact(url)} is unreachable (${(error as Error).message})`;
  } finally {
    await sql.end({ timeout: 1 });
  }
}

export async function redisReachable(url: string): Promise<string | null> {
  const client = new RedisClient(url, { connectionTimeout: 3_000, autoReconnect: false, maxRetries: 0, enableOfflineQueue: false });
  try {
    await client.connect();
    await client.ping();
    return null;
  } catch (error) {
    return `Redis at ${redact(url)} is unreachable (${(error as Error).message})`;
  } finally {
    client.close();
  }
}

/** A postgres.js client for `url`, libpq's `?host=/socket/dir` understood (as Parley does). */
export function pgClient(url: string, options: postgres.Options<Record<string, postgres.PostgresType>> = {}): postgres.Sql {
  const target = postgresTarget(url);
  return postgres(target.url, { ...(target.path ? { path: target.path } : {}), ...options });
}

/** A URL without its password, for messages. */
export function redact(url: string): string {
  return url.replace(/\/\/([^:@/]+):[^@/]*@/, "//$1:***@");
}

/** The URL of database `name` on the server `adminUrl` points at. */
export function databaseUrl(adminUrl: string, name: string): string {
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return url.toString();
}

export async function createScratchDatabase(adminUrl: string): Promise<string> {
  const name = `parley_bench_${Date.now()}`;
  const sql = pgClient(adminUrl, { max: 1, connect_timeout: 5, onnotice: () => {} });
  try {
    await sql.unsafe(`create database "${name}"`);
  } finally {
    await sql.end({ timeout: 2 });
  }
  scratchDatabase = { adminUrl, name };
  return name;
}

export function randomHex(bytes: number): string {
  return Buffer.from(crypto.getRandomValues(new Uint8Array(bytes))).toString("hex");
}

/** Starts Parley (public and console hosts) and returns it with its whoami URL and the first-run API key. */
export async function startParley(
  mode: Mode,
  binary: boolean,
  stores: { databaseUrl?: string; redisUrl?: string },
  hosts = "public,console",
): Promise<{ child: Child; url: string; publicUrl: string; apiKey: string }> {
  const [publicPort, consolePort] = freePorts(2) as [number, number];
  scratchDir = mkdtempSync(join(tmpdir(), "parley-bench-"));
  const env: Record<string, string> = {
    PATH: process.env.PATH ?? "",
    HOME: scratchDir,
    HOST: "127.0.0.1",
    PORT_PUBLIC: String(publicPort),
    PORT_CONSOLE: String(consolePort),
    DATA_DIR: join(scratchDir, "data"),
    LOG_LEVEL: "warn",
    // The limiter still counts every request (its cost is part of what we measure) but never refuses.
    RATE_LIMIT_REQUESTS: "100000000",
    NODE_ENV: "production",
  };
  if (mode === "postgres+redis") {
    Object.assign(env, {
      DATABASE_URL: stores.databaseUrl!,
      REDIS_URL: stores.redisUrl!,
      JWT_SECRET: Buffer.from(crypto.getRandomValues(new Uint8Array(48))).toString("base64url"),
      PARLEY_MASTER_KEY: randomHex(32),
    });
  }
  const cmd = binary ? [join(ROOT, "dist", "parley"), "serve", "--hosts", hosts] : [process.execPath, join(ROOT, "src", "main.ts"), "serve", "--hosts", hosts];
  const child = spawnChild("parley", cmd, env);
  const apiKey = await waitFor(child, "the first-run API key", () => /^ {2}API key\s+(sk_\w+)\s*$/m.exec(child.stdout())?.[1] ?? null);
  return { child, url: `http://127.0.0.1:${publicPort}/v1/whoami`, publicUrl: `http://127.0.0.1:${publicPort}`, apiKey };
}


/**
 * Runs a benchmark's main with cleanup on every exit path: Ctrl-C, errors, normal end.
 */
export async function runBench(main: () => Promise<void>): Promise<never> {
  let interrupted = false;
  for (const signal of ["SIGINT", "SIGTERM"] as const) {
    process.on(signal, () => {
      if (interrupted) return;
      interrupted = true;
      console.error(`\n${signal}: stopping the servers and cleaning up …`);
      void cleanUp().finally(() => process.exit(130));
    });
  }
  let code = 0;
  try {
    await main();
  } catch (error) {
    // After Ctrl-C the children die under us; their errors are expected, not news.
    if (!interrupted) console.error(error instanceof BenchError ? `bench: ${error.message}` : error);
    code = 1;
  } finally {
    await cleanUp();
  }
  if (interrupted) await new Promise(() => {});
  process.exit(code);
}

/**
 * CPU seconds (user + system) a process has used so far, from /proc/<pid>/stat (Linux; 0 elsewhere or
 * when the process is gone). `statPath` may name a thread (/proc/<pid>/task/<tid>/stat).
 */
export function cpuSeconds(statPath: string): number {
  try {
    const stat = readFileSync(statPath, "utf8");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return (Number(fields[11]) + Number(fields[12])) / 100; // USER_HZ on Linux
  } catch {
    return 0; // gone, or not Linux
  }
}

/** The whole machine's CPU time so far (Linux /proc/stat, in USER_HZ ticks): busy, interrupts, all. */
export interface MachineTicks {
  /** Every state but idle and iowait: processes, the kernel, interrupts, steal. */
  busy: number;
  /** Hard and soft interrupts: network packet processing no process is charged with. */
  irq: number;
  total: number;
}

/** The machine's CPU ticks so far; all zero where there is no /proc/stat. */
export function machineTicks(): MachineTicks {
  try {
    const line = readFileSync("/proc/stat", "utf8").split("\n", 1)[0]!;
    const [user, nice, system, idle, iowait, irq, softirq, steal] = line.trim().split(/\s+/).slice(1, 9).map(Number) as number[];
    const busy = user! + nice! + system! + irq! + softirq! + steal!;
    return { busy, irq: irq! + softirq!, total: busy + idle! + iowait! };
  } catch {
    return { busy: 0, irq: 0, total: 0 };
  }
}

/**
 * Percent of one core the whole machine was busy between two readings, and how much of it went to
 * interrupts (which per-process figures leave out: the kernel charges a packet's softirq work to no
 * process, so the groups of cpuPercent add up to less than the machine used). Null without /proc/stat.
 */
export function machinePercent(from: MachineTicks, to: MachineTicks): { busy: number; irq: number } | null {
  const total = to.total - from.total;
  if (total <= 0) return null;
  const cores = availableParallelism();
  return { busy: (100 * cores * (to.busy - from.busy)) / total, irq: (100 * cores * (to.irq - from.irq)) / total };
}

/**
 * CPU seconds used so far per group: each group a process id or a process name (`comm`, every
 * process of that name summed). A process that started meanwhile counts from zero; one that ended took
 * its time with it, so read a phase as the difference of two snapshots.
 */
export function cpuSnapshot(groups: Record<string, number | string>): Map<string, Map<string, number>> {
  const byName = new Map<string, string[]>();
  const out = new Map<string, Map<string, number>>();
  for (const [group, who] of Object.entries(groups)) {
    out.set(group, new Map());
    if (typeof who === "number") out.get(group)!.set(String(who), cpuSeconds(`/proc/${who}/stat`));
    else byName.set(who, [...(byName.get(who) ?? []), group]);
  }
  if (byName.size && process.platform === "linux") {
    for (const pid of readdirSync("/proc")) {
      if (!/^\d+$/.test(pid)) continue;
      let comm: string;
      try {
        comm = readFileSync(`/proc/${pid}/comm`, "utf8").trim();
      } catch {
        continue; // ended while we looked
      }
      for (const group of byName.get(comm) ?? []) out.get(group)!.set(pid, cpuSeconds(`/proc/${pid}/stat`));
    }
  }
  return out;
}

/** Percent of one core each group used between two snapshots `seconds` apart. */
export function cpuPercent(from: ReturnType<typeof cpuSnapshot>, to: ReturnType<typeof cpuSnapshot>, seconds: number): Record<string, number> {
  const result: Record<string, number> = {};
  for (const [group, now] of to) {
    let used = 0;
    for (const [pid, s] of now) used += s - (from.get(group)?.get(pid) ?? 0);
    result[group] = seconds > 0 ? (100 * used) / seconds : 0;
  }
  return result;
}
