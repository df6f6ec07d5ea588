/**
 * Call records at scale: 1,000,000 CDRs of one account (generated in PostgreSQL), then
 *  - GET /v1/calls pages (limit 100) at the start, the middle and the end of the range, reached by
 *    keyset cursors, and filtered pages: p50 / p99 per page (target: any page under 20 ms p99);
 *  - GET /v1/calls?format=csv of the whole range, streamed, against `psql \copy (select …) to` of the
 *    same rows and columns in the same run (target: at least half of psql's speed).
 * Run by `bun run bench:calls`; PostgreSQL + Redis required.
 *
 * Environment: BENCH_CDRS (default 1000000), BENCH_PAGES (pages sampled per position, default 200),
 * BENCH_PG_URL, BENCH_REDIS_URL.
 */
import { BenchError, createScratchDatabase, databaseUrl, pgClient, postgresReachable, redisReachable, runBench, startParley } from "./lib.ts";

const CSV_COLUMNS =
  "id, sip_call_id, direction, \"from\", \"to\", status, answered, started_ms / 1000, answered_ms / 1000, ended_ms / 1000, billsec, " +
  "(ended_ms - started_ms) / 1000, hangup_cause, sip_code, cost_micro, currency, user_id, device_id, number_id, trunk_id, queue_id, agent_id";

/** Reads a stream to its end; returns its bytes and line count. */
async function drain(stream: ReadableStream<Uint8Array>): Promise<{ bytes: number; lines: number }> {
  const reader = stream.getReader();
  let bytes = 0;
  let lines = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return { bytes, lines };
    bytes += value.length;
    for (let i = 0; i < value.length; i++) if (value[i] === 10) lines++;
  }
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

async function get(url: string, key: string): Promise<{ ms: number; body: { data: Array<{ id: string }>; next_cursor?: string } }> {
  const started = performance.now();
  const response = await fetch(url, { headers: { "x-api-key": key } });
  const body = (await response.json()) as { data: Array<{ id: string }>; next_cursor?: string };
  const ms = performance.now() - started;
  if (!response.ok) throw new BenchError(`GET ${url} → ${response.status} ${JSON.stringify(body)}`);
  return { ms, body };
}

async function main(): Promise<void> {
  const n = Number(process.env.BENCH_CDRS || 1_000_000);
  const samples = Number(process.env.BENCH_PAGES || 200);
  const adminUrl = process.env.BENCH_PG_URL || "postgres://postgres@127.0.0.1:5432/postgres";
  const redisUrl = process.env.BENCH_REDIS_URL || "redis://127.0.0.1:6379";
  const problems = (await Promise.all([postgresReachable(adminUrl), redisReachable(redisUrl)])).filter(Boolean);
  if (problems.length) throw new BenchError(`this benchmark needs PostgreSQL and Redis: ${problems.join("; ")}`);
  if (!Bun.which("psql")) throw new BenchError("psql is needed for the baseline (apt-get install -y postgresql-client)");

  const name = await createScratchDatabase(adminUrl);
  const url = databaseUrl(adminUrl, name);
  const parley = await startParley("postgres+redis", false, { databaseUrl: url, redisUrl }, "public");
  const sql = pgClient(url, { max: 1, onnotice: () => {} });
  const [account] = await sql<{ id: string }[]>`select id from account order by id limit 1`;
  if (!account) throw new BenchError("no account in the database");

  // 1,000,000 calls over the last 30 days, one every ~2.6 s, a realistic mix of outcomes.
  const endMs = Date.now() - 60_000;
  const spanMs = 30 * 86_400_000;
  const loadStarted = performance.now();
  await sql.unsafe(`
    insert into call_record (account_id, id, sip_call_id, direction, "from", "to", user_id, number_id, status, sip_code,
      answered, started_ms, answered_ms, ended_ms, billsec, hangup_cause, cost_micro, currency, reply)
    select '${account.id}', 'call_' || upper(lpad(to_hex(g), 26, '0')), 'bench-' || g || '@edge',
      (array['inbound','outbound','internal'])[1 + g % 3], '1415555' || lpad((g % 10000)::text, 4, '0'),
      '1650555' || lpad((g % 9973)::text, 4, '0'), 'us_' || lpad((g % 200)::text, 26, '0'), null,
      case when g % 5 = 0 then 'no_answer' else 'completed' end, case when g % 5 = 0 then 480 else 200 end,
      case when g % 5 = 0 then 0 else 1 end,
      ${endMs - spanMs} + (g::bigint * ${Math.floor(spanMs / n)}),
      case when g % 5 = 0 then null else ${endMs - spanMs} + (g::bigint * ${Math.floor(spanMs / n)}) + 4000 end,
      ${endMs - spanMs} + (g::bigint * ${Math.floor(spanMs / n)}) + 4000 + (g % 300) * 1000,
      case when g % 5 = 0 then 0 else g % 300 end, case when g % 5 = 0 then 'NO_ANSWER' else 'NORMAL_CLEARING' end,
      (g % 300) * 1000, 'USD', '{"rtjson":{"action":"reject","account_id":null,"flow_id":null,"vars":{}}}'::jsonb
    from generate_series(1, ${n}) g`);
  await sql.unsafe("analyze call_record");
  console.log(`created database ${name}; ${n.toLocaleString()} CDRs loaded in ${((performance.now() - loadStarted) / 1000).toFixed(1)} s`);

  const base = `${parley.publicUrl}/v1/calls`;
  const since = Math.floor((endMs - spanMs - 1000) / 1000);
  const until = Math.floor(endMs / 1000) + 3600;
  const range = `since=${since}&until=${until}`;

  // Pages at three depths: the newest, the middle (cursor from a page whose `until` is mid-range), the oldest.
  const positions: Array<[string, string]> = [
    ["newest pages", `${base}?${range}&limit=100`],
    ["middle of the range", `${base}?since=${since}&until=${Math.floor((endMs - spanMs / 2) / 1000)}&limit=100`],
    ["oldest pages", `${base}?since=${since}&until=${since + 3 * 86_400}&limit=100`],
    ["filtered (direction=outbound)", `${base}?${range}&direction=outbound&limit=100`],
  ];
  const all: number[] = [];
  console.log(`\nGET /v1/calls, pages of 100, ${samples} pages per position (walking next_cursor)`);
  for (const [label, first] of positions) {
    const times: number[] = [];
    let next: string | undefined;
    for (let i = 0; i < samples; i++) {
      const page = await get(next ? `${first}&cursor=${next}` : first, parley.apiKey);
      if (page.body.data.length !== 100) throw new BenchError(`${label}: a page of ${page.body.data.length}`);
      times.push(page.ms);
      next = page.body.next_cursor;
    }
    times.sort((a, b) => a - b);
    all.push(...times);
    console.log(`  ${label.padEnd(30)} p50 ${percentile(times, 50).toFixed(2)} ms   p99 ${percentile(times, 99).toFixed(2)} ms`);
  }
  all.sort((a, b) => a - b);
  console.log(`  ${"all pages".padEnd(30)} p50 ${percentile(all, 50).toFixed(2)} ms   p99 ${percentile(all, 99).toFixed(2)} ms   (target p99 < 20 ms)`);

  // CSV export of everything vs psql \copy of the same rows and columns; alternating, twice each.
  const csvRuns: number[] = [];
  const psqlRuns: number[] = [];
  let csvBytes = 0;
  for (let round = 0; round < 2; round++) {
    let started = performance.now();
    const response = await fetch(`${base}?${range}&format=csv`, { headers: { "x-api-key": parley.apiKey } });
    if (!response.ok || !response.body) throw new BenchError(`CSV export → ${response.status}`);
    const { bytes, lines } = await drain(response.body);
    csvBytes = bytes;
    csvRuns.push(performance.now() - started);
    if (lines !== n + 1) throw new BenchError(`CSV export: ${lines} lines, expected ${n + 1}`);

    started = performance.now();
    const copy = Bun.spawn(
      ["psql", "-q", "-d", url, "-c",
        `\\copy (select ${CSV_COLUMNS} from call_record where account_id = '${account.id}' order by started_ms desc, id desc) to stdout with (format csv, header)`],
      { stdout: "pipe", stderr: "pipe" },
    );
    const copied = (await drain(copy.stdout)).lines;
    if ((await copy.exited) !== 0) throw new BenchError(`psql \\copy failed: ${await new Response(copy.stderr).text()}`);
    psqlRuns.push(performance.now() - started);
    if (copied !== n + 1) throw new BenchError(`psql \\copy: ${copied} lines`);
  }
  const csvMs = Math.min(...csvRuns);
  const psqlMs = Math.min(...psqlRuns);
  console.log(`\nCSV export of ${n.toLocaleString()} CDRs (${(csvBytes / 1e6).toFixed(0)} MB), best of 2`);
  console.log(`  GET /v1/calls?format=csv   ${(csvMs / 1000).toFixed(2)} s   ${Math.round(n / (csvMs / 1000)).toLocaleString()} rows/s`);
  console.log(`  psql \\copy (same rows)     ${(psqlMs / 1000).toFixed(2)} s   ${Math.round(n / (psqlMs / 1000)).toLocaleString()} rows/s`);
  console.log(`  ratio (API / psql speed)   ${(psqlMs / csvMs).toFixed(2)}   (target ≥ 0.50)`);
  await sql.end();
}

await runBench(main);
