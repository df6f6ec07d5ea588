/**
 * Bulk configuration through the API: create N users each with a SIP device (POST /v1/users, then
 * POST /v1/devices with a password that becomes digest hashes), then list them page by page.
 * Baseline in the same run: psql inserting the same rows (user, device, credential lookup), one
 * autocommitted INSERT per row as the API does one transaction per request, and COPY for reference.
 * Run by `bun run bench:users`; PostgreSQL + Redis required.
 *
 * Environment: BENCH_USERS (default 10000), BENCH_CONCURRENCY (default 32), BENCH_PAGE (list page
 * size, default 100), BENCH_PG_URL, BENCH_REDIS_URL.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  BenchError,
  ROOT,
  createScratchDatabase,
  databaseUrl,
  pgClient,
  postgresReachable,
  redisReachable,
  runBench,
  startParley,
} from "./lib.ts";

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

function md5(text: string): string {
  return new Bun.CryptoHasher("md5").update(text).digest("hex");
}

async function api<T>(base: string, key: string, method: string, path: string, body?: unknown): Promise<T> {
  const response = await fetch(`${base}${path}`, {
    method,
    headers: { "x-api-key": key, ...(body ? { "content-type": "application/json" } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });
  const json = (await response.json()) as T;
  if (!response.ok) throw new BenchError(`${method} ${path} → ${response.status} ${JSON.stringify(json)}`);
  return json;
}

/** Runs `work(i)` for i in [0, n) with `concurrency` in flight. */
async function pool(n: number, concurrency: number, work: (i: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(Array.from({ length: concurrency }, async () => {
    while (next < n) await work(next++);
  }));
}

async function psqlFile(url: string, file: string): Promise<number> {
  const started = performance.now();
  const proc = Bun.spawn(["psql", "-q", "-v", "ON_ERROR_STOP=1", "-d", url, "-f", file], { stdout: "ignore", stderr: "pipe" });
  const code = await proc.exited;
  if (code !== 0) throw new BenchError(`psql failed: ${await new Response(proc.stderr).text()}`);
  return performance.now() - started;
}

async function main(): Promise<void> {
  const n = Number(process.env.BENCH_USERS || 10_000);
  const concurrency = Number(process.env.BENCH_CONCURRENCY || 32);
  const pageSize = Number(process.env.BENCH_PAGE || 100);
  const adminUrl = process.env.BENCH_PG_URL || "postgres://postgres@127.0.0.1:5432/postgres";
  const redisUrl = process.env.BENCH_REDIS_URL || "redis://127.0.0.1:6379";
  const problems = (await Promise.all([postgresReachable(adminUrl), redisReachable(redisUrl)])).filter(Boolean);
  if (problems.length) throw new BenchError(`this benchmark needs PostgreSQL and Redis: ${problems.join("; ")}`);
  if (!Bun.which("psql")) throw new BenchError("psql is needed for the baseline (apt-get install -y postgresql-client)");

  const name = await createScratchDatabase(adminUrl);
  const url = databaseUrl(adminUrl, name);
  console.log(`created database ${name}; ${n} users with devices, ${concurrency} requests in flight`);
  const parley = await startParley("postgres+redis", false, { databaseUrl: url, redisUrl }, "public");

  // 1. Through the API.
  const createStarted = performance.now();
  await pool(n, concurrency, async (i) => {
    const user = await api<{ data: { id: string } }>(parley.publicUrl, parley.apiKey, "POST", "/v1/users", {
      username: `agent${i}`,
      display_name: `Agent ${i}`,
      is_agent: 1,
    });
    await api(parley.publicUrl, parley.apiKey, "POST", "/v1/devices", { user_id: user.data.id, password: `pw-${i}-secret` });
  });
  const createMs = performance.now() - createStarted;
  const apiRows = n * 3; // user, device, credential lookup row

  // 2. List every user, page by page.
  const pageMs: number[] = [];
  let cursor: string | undefined;
  let listed = 0;
  do {
    const started = performance.now();
    const page = await api<{ data: unknown[]; next_cursor?: string }>(
      parley.publicUrl, parley.apiKey, "GET", `/v1/users?limit=${pageSize}${cursor ? `&cursor=${cursor}` : ""}`);
    pageMs.push(performance.now() - started);
    listed += page.data.length;
    cursor = page.next_cursor;
  } while (cursor);
  if (listed < n) throw new BenchError(`listed ${listed} users, created ${n}`);

  // 3. Baseline: the same rows straight into PostgreSQL, into a second account.
  const sql = pgClient(url, { max: 1, onnotice: () => {} });
  const [first] = await sql<{ id: string }[]>`select id from account order by id limit 1`;
  await sql.end();
  if (!first) throw new BenchError("no account in the database");
  const accountId = first.id;
  const baselineAccount = `${accountId}B`;
  const dir = mkdtempSync(join(tmpdir(), "parley-bench-users-"));
  const now = Math.floor(Date.now() / 1000);
  const realm = `${baselineAccount.toLowerCase()}.sip.parley.local`;
  const inserts: string[] = [`insert into account (id, name, created_at, updated_at) values ('${baselineAccount}', 'baseline', ${now}, ${now});`];
  const userCopy: string[] = [];
  for (let i = 0; i < n; i++) {
    const userId = `us_B${String(i).padStart(25, "0")}`;
    const deviceId = `dev_B${String(i).padStart(25, "0")}`;
    const user = `agent${i}`;
    const ha1 = md5(`${user}:${realm}:pw-${i}-secret`);
    const ha1b = md5(`${user}@${realm}:${realm}:pw-${i}-secret`);
    inserts.push(
      `insert into app_user (account_id, id, username, display_name, is_agent, created_at, updated_at) values ('${baselineAccount}', '${userId}', '${user}', 'Agent ${i}', 1, ${now}, ${now});`,
      `insert into device (account_id, id, user_id, auth_username, realm, ha1, ha1b, created_at, updated_at) values ('${baselineAccount}', '${deviceId}', '${userId}', '${user}', '${realm}', '${ha1}', '${ha1b}', ${now}, ${now});`,
      `insert into device_credential (realm, auth_username, account_id, device_id) values ('${realm}', '${user}', '${baselineAccount}', '${deviceId}');`,
    );
    userCopy.push(`${baselineAccount}C\t${userId}\t${user}\tAgent ${i}\t1\t${now}\t${now}`);
  }
  writeFileSync(join(dir, "inserts.sql"), inserts.join("\n") + "\n");
  const psqlMs = await psqlFile(url, join(dir, "inserts.sql"));
  writeFileSync(join(dir, "copy.sql"), [
    `insert into account (id, name, created_at, updated_at) values ('${baselineAccount}C', 'baseline copy', ${now}, ${now});`,
    "copy app_user (account_id, id, username, display_name, is_agent, created_at, updated_at) from stdin;",
    ...userCopy,
    "\\.",
  ].join("\n") + "\n");
  const copyMs = await psqlFile(url, join(dir, "copy.sql"));
  rmSync(dir, { recursive: true, force: true });

  const sorted = [...pageMs].sort((a, b) => a - b);
  const apiRowsPerSec = apiRows / (createMs / 1000);
  const psqlRowsPerSec = apiRows / (psqlMs / 1000);
  const report = {
    users: n,
    concurrency,
    api: { ms: Math.round(createMs), users_per_sec: Math.round(n / (createMs / 1000)), rows_per_sec: Math.round(apiRowsPerSec), requests_per_sec: Math.round((2 * n) / (createMs / 1000)) },
    psql_inserts: { ms: Math.round(psqlMs), rows_per_sec: Math.round(psqlRowsPerSec) },
    psql_copy_users: { ms: Math.round(copyMs), rows_per_sec: Math.round(n / (copyMs / 1000)) },
    ratio_api_to_psql_inserts: Number((apiRowsPerSec / psqlRowsPerSec).toFixed(3)),
    list: { page_size: pageSize, pages: pageMs.length, p50_ms: Number(percentile(sorted, 50).toFixed(2)), p99_ms: Number(percentile(sorted, 99).toFixed(2)), max_ms: Number(sorted.at(-1)!.toFixed(2)) },
  };
  console.log(`\nAPI: ${n} users + devices in ${(createMs / 1000).toFixed(1)} s = ${report.api.users_per_sec} users/s, ${report.api.rows_per_sec} rows/s (${report.api.requests_per_sec} requests/s)`);
  console.log(`psql, one INSERT per row: ${report.psql_inserts.rows_per_sec} rows/s; ratio API/psql = ${report.ratio_api_to_psql_inserts}`);
  console.log(`psql COPY of the users alone: ${report.psql_copy_users.rows_per_sec} rows/s (the ceiling)`);
  console.log(`list: ${report.list.pages} pages of ${pageSize}: p50 ${report.list.p50_ms} ms, p99 ${report.list.p99_ms} ms, max ${report.list.max_ms} ms`);
  mkdirSync(join(ROOT, ".bench"), { recursive: true });
  writeFileSync(join(ROOT, ".bench", "users.json"), JSON.stringify(report, null, 2) + "\n");
  console.log("wrote .bench/users.json");
}

if (import.meta.main) await runBench(main);
