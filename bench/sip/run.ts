/**
 * The whole SIP path under load: sipp UAC → Kamailio (deploy/kamailio/kamailio.cfg) → Parley
 * (PostgreSQL + Redis) → sipp UAS. Every call is challenged (407: the first INVITE from an address
 * asks /route, later ones are challenged by the edge), authenticated against a device password and
 * routed to a registered user in one POST /route (with the digest), CDR'd (dialog events), held ~1 s.
 * The baseline is the same Kamailio config with STATIC_ROUTE (no HTTP: the digest checked against a
 * fixed password, every INVITE to the UAS), measured in the same run at the same rates. Between the two,
 * the HTTP floor (BENCH_SIP_STUB=0 leaves it out): the same config as Parley's edge calling a control
 * plane that does no work (bench/sip/stub-control.ts: /route replayed from memory, dialog events dropped),
 * what the edge and one HTTP hop cost on this machine before any routing, database or live store.
 *
 *   bun bench/sip/run.ts
 *
 * BENCH_SIP_RATES (calls/s, default 100,200,400,800), BENCH_SIP_SECONDS (per rate, default 60), BENCH_SIP_USERS
 * (callers and callees, default 50 of each),
 * BENCH_SIP_DATABASE_URL (used as is; default: a scratch database on BENCH_PG_URL, default
 * postgres://postgres@127.0.0.1:5432/postgres, created and dropped), BENCH_REDIS_URL (default
 * redis://127.0.0.1:6379). Kamailio runs as root in the foreground; its log goes to a scratch file
 * (BENCH_SIP_KEEP_LOGS=1 keeps it, and each sipp run's error log). Parley runs with LOG_LEVEL=warn. BENCH_SIP_WORKERS overrides
 * kamailio.cfg's SIP_WORKERS (64) async worker count; BENCH_SIP_DEFINES adds kamailio.cfg defines to the
 * Parley edge (space-separated, e.g. "EVENT_SHARDS=4 SIP_QUEUE_MAX=16"); BENCH_SIP_MM picks both edges' memory
 * manager (default tlsf, as docs/edge-protocols.md runs it). PARLEY_CPU_PROF=<dir> writes a CPU profile of Parley there.
 * Each run also counts the INVITEs the edge refused 503 itself (its overload guard: no call record) and reports the CPU (percent of one core, from /proc on Linux) of Parley, PostgreSQL (all its
 * processes), Kamailio (both edges), Redis and sipp while the load ran: where the machine's cores went,
 * and the whole machine's busy time from /proc/stat ("machine busy", interrupts included). Read the
 * latter for headroom: the groups leave out interrupt work (the loopback's packet processing, charged
 * to no process) and everything else running, and on this VM they added up to as little as half of it
 * (the static run at 800 calls/s: groups 36 %, machine 69 %; docs/decisions.md).
 */
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync, existsSync, openSync, readSync, closeSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import postgres from "postgres";
import { KAMAILIO_CFG, freePorts, freeUdpPort, nextMediaPort, runSipp, sipOptionsPing, startParley, startSipp, type Parley, type Proc } from "../../e2e/sip/harness.ts";
import { addSipUser, createSipTenant, PASSWORD, type SipTenant } from "../../e2e/sip/tenant.ts";
import { availableParallelism } from "node:os";
import { BenchError, cpuPercent, cpuSnapshot, machinePercent, machineTicks, createScratchDatabase, databaseUrl, pgClient, postgresReachable, redisReachable, runBench, children, spawnChild, stopChild, type Child } from "../lib.ts";

const RATES = (process.env.BENCH_SIP_RATES ?? "100,200,400,800").split(",").map((s) => Number(s.trim())).filter((n) => n > 0);
const SECONDS = Number(process.env.BENCH_SIP_SECONDS ?? 60);
const HOLD_MS = 1000;
/**
 * Callees and callers (BENCH_SIP_USERS of each, default 50; caller i calls callee i): a user may hold at
 * most 100 calls (max_simultaneous ≤ 100), and under load a call holds its user's slot for its 1 s plus
 * however late its end event is handled. With 20 of each, at 500 calls/s (25 calls/s per user) users
 * reached 100 thirteen seconds into a run and 562 of 10,000 calls were refused 486 by CAC: the tenant's
 * shape, not the platform's capacity, which is what this measures.
 */
const CALLEES = Math.max(1, Number(process.env.BENCH_SIP_USERS ?? 50));
const CALLERS = Array.from({ length: CALLEES }, (_, i) => String(1000 + i));
const SCENARIO = join(import.meta.dir, "call.xml");
/** Kamailio's allocator for both edges (docs/edge-protocols.md recommends tlsf; BENCH_SIP_MM=qm compares Debian's default). */
const MEMORY_MANAGER = process.env.BENCH_SIP_MM || "tlsf";
const scratch = mkdtempSync(join(tmpdir(), "parley-bench-sip-"));
/** The HTTP floor beside the static baseline (bench/sip/stub-control.ts). */
const STUB = process.env.BENCH_SIP_STUB !== "0";

interface Edge {
  child: Child;
  port: number;
  logFile: string;
}

/** Kamailio with the repository's config, its log to a file (a pipe would hold hundreds of MB). */
async function startEdge(name: string, controlPort: number, defines: string[]): Promise<Edge> {
  const port = freePorts(1)[0]!;
  const logFile = join(scratch, `${name}.log`);
  const args = [
    "-DD", "-E", "-m", "1024", "-M", "16", "-x", MEMORY_MANAGER, "-X", MEMORY_MANAGER, "-f", KAMAILIO_CFG,
    "-A", `LISTEN=udp:127.0.0.1:${port}`,
    "-A", `CONTROL_CON="ctl=>http://127.0.0.1:${controlPort}"`,
    "-A", `NODE="${name}"`,
    ...defines.flatMap((d) => ["-A", d]),
  ];
  // Through sh so that stderr goes straight to the file.
  const quoted = args.map((a) => `'${a.replace(/'/g, `'\\''`)}'`).join(" ");
  const child = spawnChild(name, ["sh", "-c", `exec kamailio ${quoted} >>'${logFile}' 2>&1`], { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "" });
  const deadline = Date.now() + 20_000;
  for (;;) {
    if (child.proc.exitCode !== null) throw new BenchError(`${name} exited:\n${existsSync(logFile) ? readFileSync(logFile, "utf8").slice(-3000) : ""}`);
    if (await sipOptionsPing(port)) break;
    if (Date.now() > deadline) throw new BenchError(`${name} did not answer OPTIONS in 20 s`);
    await Bun.sleep(200);
  }
  return { child, port, logFile };
}

/** The part of a file written since `from` (bytes). */
function readFrom(file: string, from: number): string {
  const size = statSync(file).size;
  if (size <= from) return "";
  const fd = openSync(file, "r");
  try {
    const buf = Buffer.alloc(size - from);
    readSync(fd, buf, 0, buf.length, from);
    return buf.toString("utf8");
  } finally {
    closeSync(fd);
  }
}

function pct(sorted: number[], p: number): number | null {
  if (!sorted.length) return null;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

interface Latency {
  n: number;
  p50: number | null;
  p99: number | null;
  errors: number;
}

/** `ctl <what> rc=… us=…` lines of a log slice: count, p50/p99 (µs) and non-200 answers. */
function latency(log: string, what: RegExp): Latency {
  const us: number[] = [];
  let errors = 0;
  for (const m of log.matchAll(/ctl (\/\S+)((?: [a-z]+)*) rc=(\d+) us=(\d+)(.*)$/gm)) {
    if (!what.test(`${m[1]}${m[2]}${m[5]}`)) continue;
    us.push(Number(m[4]));
    if (m[3] !== "200") errors++;
  }
  us.sort((a, b) => a - b);
  return { n: us.length, p50: pct(us, 50), p99: pct(us, 99), errors };
}

interface Step {
  attempted: number;
  successful: number;
  failed: number;
  retrans: number;
  setupMs: number | null;
  wallSec: number;
  /** /route for INVITEs without credentials the edge asked about (the others it challenged itself). */
  routeChallenge?: Latency;
  /** /route for INVITEs with credentials (the digest verified inside /route). */
  routeDigest?: Latency;
  /** Of those, calls /route refused (CAC 486s, mostly, under load). */
  digestRejects?: number;
  /** INVITEs the edge refused 503 itself, overloaded (they never reach Parley: no call record). */
  overloaded?: number;
  events?: Latency;
  cdrs?: { written: number; completed: number; drainSec: number };
  failures: string;
  /** Percent of one core per process group while the load ran (Linux). */
  cpu: Record<string, number>;
  /** The whole machine while the load ran, percent of one core: busy, and of it interrupts (Linux). */
  machine: { busy: number; irq: number } | null;
}

/** The processes whose CPU a phase reports: Parley by its pid, the others by name (all of them). */
let cpuGroups: Record<string, number | string> = {};

/** One sipp UAC run at `rate` calls/s for SECONDS, against `port`. */
async function load(port: number, rate: number, domain: string, csv: string): Promise<Omit<Step, "routeChallenge" | "routeDigest" | "digestRejects" | "events" | "cdrs">> {
  const total = Math.max(1, Math.round(rate * SECONDS));
  const cpuBefore = cpuSnapshot(cpuGroups);
  const machineBefore = machineTicks();
  const t0 = performance.now();
  const r = await runSippLoad(port, [
    "-inf", csv, "-key", "domain", domain,
    "-d", String(HOLD_MS), "-r", String(rate), "-rp", "1000", "-m", String(total),
    "-recv_timeout", "20000", "-timeout", `${SECONDS + 60}s`, "-buff_size", String(8 * 1024 * 1024),
  ]);
  const wallSec = (performance.now() - t0) / 1000;
  const cpu = cpuPercent(cpuBefore, cpuSnapshot(cpuGroups), wallSec);
  const machine = machinePercent(machineBefore, machineTicks());
  const s = r.stats;
  const failures = Object.entries(s)
    .filter(([k, v]) => /^Failed.*\(C\)$/.test(k) && k !== "FailedCall(C)" && Number(v) > 0)
    .map(([k, v]) => `${k.replace("(C)", "")}=${v}`)
    .join(" ");
  const setup = s["ResponseTime1(C)"];
  return {
    attempted: Number(s["OutgoingCall(C)"] ?? s["TotalCallCreated"] ?? 0),
    successful: Number(s["SuccessfulCall(C)"] ?? 0),
    failed: Number(s["FailedCall(C)"] ?? 0),
    retrans: Number(s["Retransmissions(C)"] ?? 0),
    setupMs: setup ? hmsToMs(setup) : null,
    wallSec,
    failures: failures || (r.code !== 0 && r.code !== 1 ? `sipp exit ${r.code}: ${r.stderr.slice(-300)}` : ""),
    cpu,
    machine,
  };
}

/** "parley 52, postgres 48, …; machine 190 (irq 21)" (percent of one core per group, then the whole machine). */
function cpuLine(step: Pick<Step, "cpu" | "machine">): string {
  const groups = Object.entries(step.cpu)
    .map(([group, percent]) => `${group} ${percent.toFixed(0)}`)
    .join(", ");
  return step.machine ? `${groups}; machine ${step.machine.busy.toFixed(0)} (irq ${step.machine.irq.toFixed(0)})` : groups;
}

/** The machine's busy percent, or "-" where it cannot be read. */
const busy = (step: Pick<Step, "machine">) => (step.machine ? step.machine.busy.toFixed(0) : "-");

/** sipp's "HH:MM:SS:usec" (or "HH:MM:SS.usec") → ms. */
function hmsToMs(v: string): number | null {
  const m = /^(\d+):(\d+):(\d+)[:.](\d+)$/.exec(v.trim());
  if (!m) return null;
  return (Number(m[1]) * 3600 + Number(m[2]) * 60 + Number(m[3])) * 1000 + Number(m[4]) / 1000;
}

/** sipp without -trace_msg (at 800 calls/s it would write GBs): final stats only. */
async function runSippLoad(port: number, args: string[]): Promise<{ code: number | null; stats: Record<string, string>; stderr: string }> {
  const dir = mkdtempSync(join(scratch, "sipp-"));
  const cmd = ["sipp", `127.0.0.1:${port}`, "-sf", SCENARIO, "-i", "127.0.0.1", "-p", String(await freeUdpPort()), "-mp", String(nextMediaPort()), "-nostdin",
    "-trace_stat", "-stf", join(dir, "stat.csv"), "-fd", "5", "-trace_err", "-error_file", join(dir, "err.log"), ...args];
  // BENCH_SIP_TRACE=1: keep every message with timestamps (small runs only) for diagnosis.
  if (process.env.BENCH_SIP_TRACE === "1") cmd.push("-trace_msg", "-message_file", join(scratch, `messages-${port}-${Date.now()}.log`));
  const proc = Bun.spawn(cmd, { cwd: dir, stdin: "ignore", stdout: "ignore", stderr: "pipe" });
  const stderr = await new Response(proc.stderr).text();
  await proc.exited;
  let stats: Record<string, string> = {};
  const file = join(dir, "stat.csv");
  if (existsSync(file)) {
    const lines = readFileSync(file, "utf8").trim().split("\n");
    const head = lines[0]!.split(";");
    const last = lines[lines.length - 1]!.split(";");
    stats = Object.fromEntries(head.map((h, i) => [h, last[i] ?? ""]));
  }
  const err = existsSync(join(dir, "err.log")) ? readFileSync(join(dir, "err.log"), "utf8") : "";
  if (process.env.BENCH_SIP_KEEP_LOGS !== "1") rmSync(dir, { recursive: true, force: true });
  return { code: proc.exitCode, stats, stderr: stderr + err.slice(-2000) };
}

async function cdrCount(sql: postgres.Sql, accountId: string): Promise<{ written: number; completed: number }> {
  const [row] = await sql<{ written: string; completed: string }[]>`
    select count(*) as written, count(*) filter (where status = 'completed') as completed from call_record where account_id = ${accountId}`;
  return { written: Number(row!.written), completed: Number(row!.completed) };
}

/** Waits until every answered call's CDR is complete (dialog events drain after the load), up to 120 s. */
async function drainCdrs(sql: postgres.Sql, accountId: string, base: { written: number; completed: number }, expected: number): Promise<{ written: number; completed: number; drainSec: number }> {
  const t0 = performance.now();
  let last = await cdrCount(sql, accountId);
  let stable = 0;
  while (performance.now() - t0 < 120_000) {
    if (last.completed - base.completed >= expected) break;
    await Bun.sleep(1000);
    const now = await cdrCount(sql, accountId);
    stable = now.completed === last.completed ? stable + 1 : 0;
    last = now;
    if (stable >= 10) break; // nothing moved for 10 s
  }
  return { written: last.written - base.written, completed: last.completed - base.completed, drainSec: (performance.now() - t0) / 1000 };
}

const fmt = (n: number | null | undefined, digits = 0) => (n === null || n === undefined ? "-" : n.toFixed(digits));
const lat = (l?: Latency) => (l && l.n ? `${fmt(l.p50 !== null ? l.p50 / 1000 : null, 2)}/${fmt(l.p99 !== null ? l.p99 / 1000 : null, 1)}` : "-");

await runBench(async () => {
  const pgAdmin = process.env.BENCH_PG_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";
  const redisUrl = process.env.BENCH_REDIS_URL ?? "redis://127.0.0.1:6379";
  let dbUrl = process.env.BENCH_SIP_DATABASE_URL;
  const problem = (await postgresReachable(dbUrl ?? pgAdmin)) ?? (await redisReachable(redisUrl));
  if (problem) throw new BenchError(problem);
  if (!Bun.which("kamailio") || !Bun.which("sipp")) throw new BenchError("kamailio and sipp (sip-tester) are required");
  dbUrl ??= databaseUrl(pgAdmin, await createScratchDatabase(pgAdmin));

  console.log(`SIP bench: rates ${RATES.join(", ")} calls/s, ${SECONDS} s each, calls held ${HOLD_MS} ms, ${CALLEES} callees; PostgreSQL + Redis`);
  const parley: Parley = await startParley({ databaseUrl: dbUrl, redisUrl }, { LOG_LEVEL: "warn", RATE_LIMIT_REQUESTS: "100000000" });
  // Registered so that any exit path stops it (runBench's cleanUp).
  const parleyChild: Child = { name: "parley", proc: parley.proc, stdout: parley.stdout, stderr: parley.stderr };
  cpuGroups = { parley: parley.proc.pid, postgres: "postgres", kamailio: "kamailio", redis: "redis-server", sipp: "sipp" };
  children.add(parleyChild);
  const [uasPort, carrierPort] = freePorts(2) as [number, number];
  const tenant: SipTenant = await createSipTenant(parley, { carrierPort, maxOut: null, users: CALLERS.map((username) => ({ username, max: 100 })) });
  const callees = Array.from({ length: CALLEES }, (_, i) => String(2000 + i));
  for (const u of callees) await addSipUser(parley, tenant, u, 100);

  const uas: Proc = startSipp("uas.xml", ["-p", String(uasPort), "-mp", String(nextMediaPort()), "-buff_size", String(8 * 1024 * 1024)]);
  children.add({ name: "sipp-uas", proc: uas.proc, stdout: uas.stdout, stderr: uas.stderr });
  const edge = await startEdge("edge-bench", parley.controlPort, [
    ...(process.env.BENCH_SIP_WORKERS ? [`SIP_WORKERS=${process.env.BENCH_SIP_WORKERS}`] : []),
    ...(process.env.BENCH_SIP_DEFINES ?? "").split(/\s+/).filter(Boolean),
  ]);
  const baseline = await startEdge("edge-static", parley.controlPort, ["STATIC_ROUTE", `STATIC_PASSWORD="${PASSWORD}"`, `STATIC_ROUTE_URI="sip:127.0.0.1:${uasPort}"`]);
  let stubEdge: Edge | undefined;
  if (STUB) {
    const stubPort = freePorts(1)[0]!;
    const stubControl = spawnChild("stub-control", ["bun", "bench/sip/stub-control.ts"], { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "", PORT: String(stubPort), STUB_UPSTREAM: parley.controlUrl });
    const deadline = Date.now() + 10_000;
    while (!stubControl.stdout().includes("listening on")) {
      if (stubControl.proc.exitCode !== null || Date.now() > deadline) throw new BenchError(`the stub control plane did not start: ${stubControl.stderr().slice(-500)}`);
      await Bun.sleep(50);
    }
    cpuGroups.stub = stubControl.proc.pid;
    stubEdge = await startEdge("edge-stub", stubPort, [
      ...(process.env.BENCH_SIP_WORKERS ? [`SIP_WORKERS=${process.env.BENCH_SIP_WORKERS}`] : []),
      ...(process.env.BENCH_SIP_DEFINES ?? "").split(/\s+/).filter(Boolean),
    ]);
  }

  for (const u of callees) {
    const r = await runSipp("register.xml", `127.0.0.1:${edge.port}`, ["-s", u, "-au", u, "-ap", PASSWORD, "-key", "domain", tenant.domain, "-key", "contact_port", String(uasPort), "-key", "expires", "3600", "-m", "1", "-timeout", "10s"]);
    if (r.code !== 0) throw new BenchError(`REGISTER ${u} failed: ${r.stderr.slice(-500)}`);
  }
  const csv = join(scratch, "callees.csv");
  // Each line: callee; caller; the caller's credentials (sipp's [authentication] keyword, per call).
  writeFileSync(csv, `SEQUENTIAL\n${callees.map((c, i) => `${c};${CALLERS[i]};[authentication username=${CALLERS[i]} password=${PASSWORD}];`).join("\n")}\n`);

  const sql = pgClient(dbUrl, { max: 1, onnotice: () => {} });
  const rows: Array<{ rate: number; base: Step; stub?: Step; real: Step }> = [];
  try {
    // Warm-up (JIT, prepared statements, keep-alive connections), not reported.
    await load(edge.port, 20, tenant.domain, csv).catch(() => undefined);
    // The floor's warm-up also fills its replies (one per callee, from Parley).
    if (stubEdge) await load(stubEdge.port, 20, tenant.domain, csv).catch(() => undefined);
    for (const rate of RATES) {
      const base = { ...(await load(baseline.port, rate, tenant.domain, csv)) } as Step;
      await Bun.sleep(3000); // UAS timewait
      let stub: Step | undefined;
      if (stubEdge) {
        const stubOffset = statSync(stubEdge.logFile).size;
        stub = { ...(await load(stubEdge.port, rate, tenant.domain, csv)) } as Step;
        const stubLog = readFrom(stubEdge.logFile, stubOffset);
        stub.routeChallenge = latency(stubLog, /^\/route.* auth=0$/);
        stub.routeDigest = latency(stubLog, /^\/route.* auth=1$/);
        stub.overloaded = (stubLog.match(/overload: .* INVITE refused with 503/g) ?? []).length;
        await Bun.sleep(3000);
      }
      const before = await cdrCount(sql, tenant.accountId);
      const offset = statSync(edge.logFile).size;
      const real = { ...(await load(edge.port, rate, tenant.domain, csv)) } as Step;
      real.cdrs = await drainCdrs(sql, tenant.accountId, before, real.successful);
      const log = readFrom(edge.logFile, offset);
      real.routeChallenge = latency(log, /^\/route.* auth=0$/);
      real.routeDigest = latency(log, /^\/route.* auth=1$/);
      real.digestRejects = latency(log, /^\/route.*action=reject.* auth=1$/).n;
      real.events = latency(log, /^\/presence\/events/);
      real.overloaded = (log.match(/overload: .* INVITE refused with 503/g) ?? []).length;
      rows.push({ rate, base, stub, real });
      console.log(
        `${String(rate).padStart(4)}/s  static: ${base.successful}/${base.attempted} ok in ${fmt(base.wallSec, 1)} s, ${base.failed} failed, ${base.retrans} retrans, setup ${fmt(base.setupMs, 1)} ms` +
          (stub ? `  |  HTTP floor: ${stub.successful}/${stub.attempted} ok, ${stub.failed} failed, ${stub.retrans} retrans, setup ${fmt(stub.setupMs, 1)} ms, /route digest ${lat(stub.routeDigest)} ms, ${stub.overloaded} refused 503` : "") +
          `  |  parley: ${real.successful}/${real.attempted} ok in ${fmt(real.wallSec, 1)} s, ${real.failed} failed, ${real.retrans} retrans, setup ${fmt(real.setupMs, 1)} ms; ` +
          `CDRs ${real.cdrs.written} (${real.cdrs.completed} completed, drained ${fmt(real.cdrs.drainSec, 0)} s); ${real.overloaded} INVITEs refused 503 by the edge's overload guard` +
          (base.failures || real.failures ? `\n        failures: static [${base.failures}] parley [${real.failures}]` : "") +
          `\n        CPU, % of one core: static ${cpuLine(base)}${stub ? `  |  HTTP floor ${cpuLine(stub)}` : ""}  |  parley ${cpuLine(real)}`,
      );
      await Bun.sleep(3000);
    }
  } finally {
    await sql.end({ timeout: 2 });
  }

  console.log("\nms (p50/p99) as Kamailio saw the control calls; ratio = Parley's successful calls / the static baseline's.");
  if (STUB) {
    console.log("HTTP floor (the same edge, a control plane doing no work): rate | ok | failed | retrans | /route without credentials | /route with digest | edge overload 503s | setup ms | CPU kamailio + stub + sipp | machine busy");
    for (const { rate, stub } of rows) {
      if (!stub) continue;
      console.log([rate, `${stub.successful}/${stub.attempted}`, stub.failed, stub.retrans, lat(stub.routeChallenge), lat(stub.routeDigest), stub.overloaded ?? 0, fmt(stub.setupMs, 1), ((stub.cpu.kamailio ?? 0) + (stub.cpu.stub ?? 0) + (stub.cpu.sipp ?? 0)).toFixed(0), busy(stub)].join(" | "));
    }
    console.log("Parley:");
  }
  console.log("rate | attempted | ok static | ok parley | failed | retrans | /route without credentials (n) | /route with digest (n, rejected) | /presence/events batches | CDRs (completed) | edge overload 503s | ratio | setup ms static/parley");
  for (const { rate, base, real } of rows) {
    console.log(
      [
        rate,
        real.attempted,
        base.successful,
        real.successful,
        `${base.failed}/${real.failed}`,
        `${base.retrans}/${real.retrans}`,
        `${lat(real.routeChallenge)} (${real.routeChallenge?.n ?? 0})`,
        `${lat(real.routeDigest)} (${real.routeDigest?.n ?? 0}, ${real.digestRejects ?? 0})`,
        lat(real.events),
        `${real.cdrs?.written} (${real.cdrs?.completed})`,
        real.overloaded ?? 0,
        base.successful ? (real.successful / base.successful).toFixed(3) : "-",
        `${fmt(base.setupMs, 1)}/${fmt(real.setupMs, 1)}`,
      ].join(" | "),
    );
  }
  console.log(`\nCPU during each Parley run, % of one core (this machine has ${availableParallelism()} cores, ${availableParallelism() * 100} % in all):`);
  // "all" adds up the processes; "machine busy" is the whole machine from /proc/stat, which is more:
  // interrupts (the loopback's packet processing) are charged to no process, and other processes run.
  console.log("rate | parley | postgres | kamailio | redis | sipp | all | machine busy (of it interrupts) | static run: kamailio + sipp, machine busy");
  for (const { rate, base, real } of rows) {
    const all = Object.values(real.cpu).reduce((a, b) => a + b, 0);
    const percents = [real.cpu.parley, real.cpu.postgres, real.cpu.kamailio, real.cpu.redis, real.cpu.sipp, all];
    const machine = real.machine ? `${real.machine.busy.toFixed(0)} (${real.machine.irq.toFixed(0)})` : "-";
    console.log([String(rate), ...percents.map((v) => (v ?? 0).toFixed(0)), machine, `${((base.cpu.kamailio ?? 0) + (base.cpu.sipp ?? 0)).toFixed(0)}, ${busy(base)}`].join(" | "));
  }
  const errs = rows.map((r) => (r.real.routeDigest?.errors ?? 0) + (r.real.routeChallenge?.errors ?? 0)).reduce((a, b) => a + b, 0);
  if (errs) console.log(`control calls answered with something other than 200: ${errs}`);
  if (process.env.BENCH_SIP_KEEP_LOGS === "1") console.log(`logs kept in ${scratch}`);
  children.delete(parleyChild);
  await parley.stop(); // also removes its DATA_DIR
  for (const c of [...children]) await stopChild(c);
  if (process.env.BENCH_SIP_KEEP_LOGS !== "1") rmSync(scratch, { recursive: true, force: true });
});
