/**
 * In-process latency of decideRoute (the hot path of POST /route), per kind of call, against a
 * baseline measured in the same run: one prepared primary-key select on the same database.
 *
 *   bun bench/route.ts [--embedded]
 *
 * PostgreSQL + Redis by default (BENCH_PG_URL, default postgres://postgres@127.0.0.1:5432/postgres,
 * a scratch database created and dropped; BENCH_REDIS_URL, default redis://127.0.0.1:6379);
 * --embedded uses PGlite in memory and the in-process live store. BENCH_ROUTE_N (default 3000)
 * decisions per scenario, sequential (latency) and then 32 at a time (throughput). The account starts
 * with a history of finished calls (BENCH_ROUTE_HISTORY, default 20000) and planner statistics, as a
 * running installation has.
 */
import { parseArgs } from "node:util";
import { eq, sql } from "drizzle-orm";
import { openDatabase } from "../src/core/db/open.ts";
import { migrate } from "../src/core/db/migrate.ts";
import { migrations } from "../drizzle/index.ts";
import { openLiveStore } from "../src/core/live/index.ts";
import type { Platform } from "../src/core/platform.ts";
import { didLookup } from "../src/core/numbers/numbers.schema.ts";
import { decideRoute } from "../src/core/routing/decide.ts";
import { contact, freshE164, routeFixture, testDeps } from "../src/core/routing/decide.fixture.ts";
import type { RouteRequest } from "../src/core/routing/route-types.ts";
import { createScratchDatabase, databaseUrl, runBench } from "./lib.ts";
import { createEventIdCodec } from "../src/core/events/event-ids.ts";
import { createEventBus } from "../src/core/events/bus.ts";
import { planWebhookDeliveries } from "../src/core/webhooks/delivery.service.ts";
import { createLogger } from "../src/core/log/logger.ts";
import { admitCall } from "../src/core/calls/admission.ts";
import { handleDialogEvent } from "../src/core/calls/dialog.ts";

const { values } = parseArgs({ options: { embedded: { type: "boolean", default: false } } });
const N = Number(process.env.BENCH_ROUTE_N ?? 3000);
/** Finished calls in the account before the run (BENCH_ROUTE_HISTORY, default 20000). */
const HISTORY_CALLS = Number(process.env.BENCH_ROUTE_HISTORY ?? 20_000);

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

async function measure(name: string, run: (i: number) => Promise<unknown>, baseline?: { p50: number; p99: number }) {
  for (let i = 0; i < 200; i++) await run(i); // warm-up (prepare, JIT)
  const times: number[] = [];
  for (let i = 0; i < N; i++) {
    const t0 = performance.now();
    await run(i);
    times.push(performance.now() - t0);
  }
  times.sort((a, b) => a - b);
  const p50 = percentile(times, 50);
  const p99 = percentile(times, 99);
  const t0 = performance.now();
  let next = 0;
  await Promise.all(Array.from({ length: 32 }, async () => {
    while (next < N) await run(next++);
  }));
  const rate = N / ((performance.now() - t0) / 1000);
  const ratio = baseline ? `  (${(p50 / baseline.p50).toFixed(1)}× / ${(p99 / baseline.p99).toFixed(1)}× baseline)` : "";
  console.log(`${name.padEnd(34)} p50 ${(p50 * 1000).toFixed(0).padStart(5)} µs  p99 ${(p99 * 1000).toFixed(0).padStart(6)} µs  ${rate.toFixed(0).padStart(6)} decisions/s at 32 concurrent${ratio}`);
  return { p50, p99 };
}

await runBench(async () => {
  const pgAdmin = process.env.BENCH_PG_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";
  const url = values.embedded ? null : databaseUrl(pgAdmin, await createScratchDatabase(pgAdmin));
  const database = await openDatabase(url ? { kind: "postgres", url } : { kind: "pglite", dataDir: null });
  await migrate(database.db, migrations);
  const live = await openLiveStore(values.embedded ? undefined : (process.env.BENCH_REDIS_URL ?? "redis://127.0.0.1:6379"));
  // Only the stores: a full platform also starts the event relay and credential caches, whose
  // background work would be measured too.
  const log = createLogger({ level: "error" });
  const events = createEventBus({ db: database.db, live, log, ids: createEventIdCodec(crypto.getRandomValues(new Uint8Array(32))) });
  events.addPlanner(planWebhookDeliveries);
  const platform = { db: database.db, live, log, events, config: { cacMaxCallSec: 14_400 } } as unknown as Platform;
  console.log(`decideRoute, ${url ? "PostgreSQL + Redis" : "PGlite + in-process"}, ${N} decisions per scenario`);

  const f = await routeFixture(platform, { max_in: 1000, max_out: 1000 });
  const flow = await f.flow();
  const alice = await f.user({ username: "1001" });
  const bob = await f.user({ username: "1002", voicemail_id: "vm_x" });
  const aliceDev = await f.device(alice);
  const bobDev = await f.device(bob);
  const sch = await f.schedule("Europe/Paris", [1, 2, 3, 4, 5].map((dow) => ({ kind: "weekly", dow, start_time: "08:00", end_time: "18:00" })));
  const flowDid = await f.number({ dest_kind: "flow", dest_id: flow, schedule_id: sch, closed_dest_kind: "flow", closed_dest_id: flow, max_channels: 100 });
  const userDid = await f.number({ dest_kind: "user", dest_id: bob });
  await f.extension({ digits: "200", dest_kind: "user", dest_id: bob });
  const trunk = await f.trunk({ name: "uk", proxy: "uk.example.net", max_channels: 100 });
  await f.route({ via: "trunk", trunk_id: trunk, match_prefix: "44", priority: 10 });
  await f.route({ via: "carrier", priority: 1000 });
  await f.transform({ direction: "outbound_dst", match_regex: "^0(\\d{10})$", replacement: "44$1" });
  await f.cidRule({ cid_number: "442071230000", match_country: "GB" });
  await f.geo("denylist", ["KP"]);
  await f.callLimit({ direction: "out", period_sec: 60, max_count: 1_000_000_000, hard: 1 });
  await f.phoneList("dnc_out", ["447700900999"]);
  const deps = testDeps(platform, { contacts: { [bob]: [contact(bob, bobDev, "sip:1002@10.1.1.2:5060")] } });
  const base = (to: string, extra: Partial<RouteRequest> = {}): RouteRequest => ({ callId: `b${Math.random()}`, from: "14155550000", fromDomain: "x", to, ...extra });
  const dev = { account_id: f.accountId, user_id: alice, device_id: aliceDev, source_ip: "10.1.1.1" };

  // A running installation has a call history and planner statistics; a scratch database has
  // neither. Without them the plans cached on each connection are the plans for empty tables, kept
  // while the admission scenario fills them: seen, the dialog events' Call-ID look-up walked every
  // call of the account through an unrelated index (0.8 ms each and growing, 10× what it costs).
  const since = Date.now() - 86_400_000;
  await database.db.execute(sql`
    insert into call_record (account_id, id, sip_call_id, direction, "from", "to", status, answered, started_ms, ended_ms, billsec, reply)
    select ${f.accountId}, 'call_hist' || g, 'hist-' || g || '@bench', 'internal', '1001', '200', 'completed', 1,
           ${since}::bigint + g * 4, ${since}::bigint + g * 4 + 60000, 60, '{}'::jsonb
    from generate_series(1, ${HISTORY_CALLS}) g`);
  await database.db.execute(sql`
    insert into call_trace (account_id, call_id, at_ms, step, result)
    select ${f.accountId}, 'call_hist' || g, ${since}::bigint + g * 4, s, 'ok'
    from generate_series(1, ${HISTORY_CALLS}) g, unnest(array['auth', 'route', 'cac']) s`);
  await database.db.execute(sql`analyze`);
  const pk = database.db.select({ id: didLookup.number_id }).from(didLookup).where(eq(didLookup.e164, sql.placeholder("e164"))).prepare("bench_pk");
  const baseline = await measure("baseline: prepared pk select", () => pk.execute({ e164: flowDid.e164 }));
  await measure("inbound carrier → DID → flow", () => decideRoute(deps, base(flowDid.e164, { source_ip: "192.0.2.1" })), baseline);
  await measure("inbound carrier → DID → user (proxy)", () => decideRoute(deps, base(userDid.e164, { source_ip: "192.0.2.1" })), baseline);
  await measure("internal device → extension → user", () => decideRoute(deps, base("200", dev)), baseline);
  await measure("outbound device → trunk (all policies)", () => decideRoute(deps, base("07700900100", dev)), baseline);
  // The whole /route work of a routed call (decision, CAC, call record + trace, call.started) and, outside
  // the timing, its end (so the CAC slots are given back).
  const ended: Array<Promise<void>> = [];
  await measure("decide + admit (internal → user)", async () => {
    const req = base("200", dev);
    const reply = await admitCall(platform, await decideRoute(deps, req), req);
    ended.push(handleDialogEvent(platform, { type: "dialog", callId: req.callId, state: "terminated", account_id: f.accountId, sip_code: 200 }).catch(() => {}));
    return reply;
  }, baseline);
  await Promise.all(ended);
  await measure("refused: unknown DID", () => decideRoute(deps, base(freshE164(), { source_ip: "192.0.2.1" })), baseline);
  await live.close();
  await database.close();
});
