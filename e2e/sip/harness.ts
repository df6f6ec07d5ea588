/**
 * The real SIP path for e2e tests and the benchmark: Parley (`bun src/main.ts serve --hosts
 * public,control`), Kamailio with deploy/kamailio/kamailio.cfg, sipp scenarios. Nothing mocked.
 * Kamailio runs as root in the foreground (-DD -E); sipp writes its stats where we ask.
 */
import { mkdtempSync, readFileSync, existsSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { collect, freePorts } from "../../test/support/processes.ts";
export { freePorts };

export const ROOT = resolve(import.meta.dir, "..", "..");
export const KAMAILIO_CFG = join(ROOT, "deploy", "kamailio", "kamailio.cfg");
export const SCENARIOS = join(import.meta.dir, "scenarios");
export const ADMIN_TOKEN = "e2e-sip-admin-token-0123456789";
export const JWT_SECRET = "e2e-sip-jwt-secret-0123456789abcdef0123456789";
export const MASTER_KEY = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";

/** True when kamailio and sipp are installed (the tests skip otherwise, except under CI). */
export const HAVE_SIP_TOOLS = Bun.which("kamailio") !== null && Bun.which("sipp") !== null;
export const IN_CI = !["", "0", "false"].includes((process.env.CI ?? "").toLowerCase());

/** A UDP port nothing is bound to right now. */
export async function freeUdpPort(): Promise<number> {
  const sock = await Bun.udpSocket({ hostname: "127.0.0.1", port: 0 });
  const port = sock.port;
  sock.close();
  return port;
}

/**
 * sipp's media ports stay below Linux's ephemeral range (32768–60999 by default), where every outgoing
 * socket of the machine (Kamailio's, curl's, the database clients') takes its port: a sipp whose -mp
 * was taken that way could not bind and exited 254 (seen once in CI, registering a WebRTC test's phone).
 */
const MEDIA_PORT_MIN = 10_000;
const MEDIA_PORT_MAX = 32_000;
let mediaPort = MEDIA_PORT_MIN + (process.pid % 500) * 40;
/** Media ports for sipp (-mp), 4 apart (RTP, RTCP, and video's pair), never reused within a run. */
export function nextMediaPort(): number {
  mediaPort += 4;
  if (mediaPort > MEDIA_PORT_MAX) mediaPort = MEDIA_PORT_MIN;
  return mediaPort;
}

export interface Proc {
  proc: Bun.Subprocess<"ignore", "pipe", "pipe">;
  stdout(): string;
  stderr(): string;
  stop(): Promise<void>;
}

function spawn(cmd: string[], env: Record<string, string | undefined>, cwd = ROOT): Proc {
  const proc = Bun.spawn(cmd, { cwd, env: env as Record<string, string>, stdin: "ignore", stdout: "pipe", stderr: "pipe" });
  const stdout = collect(proc.stdout);
  const stderr = collect(proc.stderr);
  return {
    proc,
    stdout,
    stderr,
    async stop() {
      if (proc.exitCode !== null || proc.signalCode !== null) return;
      proc.kill("SIGTERM");
      const done = await Promise.race([proc.exited.then(() => true), Bun.sleep(8000).then(() => false)]);
      if (!done) {
        proc.kill("SIGKILL");
        await proc.exited;
      }
    },
  };
}

async function waitFor(what: string, check: () => Promise<boolean>, timeoutMs: number, diag: () => string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check().catch(() => false)) return;
    await Bun.sleep(200);
  }
  throw new Error(`${what} did not come up in ${timeoutMs} ms:\n${diag().slice(-4000)}`);
}

export interface Parley extends Proc {
  publicUrl: string;
  /** The console host (POST /login). */
  consoleUrl: string;
  controlUrl: string;
  controlPort: number;
  dataDir: string;
  /** Stops the process (its data kept), runs `whileDown`, then starts it again on the same ports and stores. */
  restart(whileDown?: () => Promise<void>): Promise<void>;
}

/** Stores of a Parley instance: PGlite in its own DATA_DIR, or PostgreSQL + Redis. */
export interface ParleyStores {
  databaseUrl?: string;
  redisUrl?: string;
}

/** Starts `parley serve --hosts public,console,control` on free ports and waits for /readyz of each. */
export async function startParley(stores: ParleyStores = {}, extraEnv: Record<string, string> = {}): Promise<Parley> {
  const [pub, ctl, con] = freePorts(3) as [number, number, number];
  const dataDir = mkdtempSync(join(tmpdir(), "parley-sip-"));
  const env: Record<string, string | undefined> = {
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    HOST: "127.0.0.1",
    PORT_PUBLIC: String(pub),
    PORT_CONTROL: String(ctl),
    PORT_CONSOLE: String(con),
    DATA_DIR: dataDir,
    ADMIN_TOKEN,
    JWT_SECRET,
    PARLEY_MASTER_KEY: MASTER_KEY,
    LOG_LEVEL: process.env.E2E_LOG_LEVEL ?? "warn",
    RATE_LIMIT_REQUESTS: "100000",
    DATABASE_URL: stores.databaseUrl,
    REDIS_URL: stores.redisUrl,
    ...extraEnv,
  };
  const cmd = ["bun", ...(process.env.PARLEY_CPU_PROF ? ["--cpu-prof", `--cpu-prof-dir=${process.env.PARLEY_CPU_PROF}`] : []), "src/main.ts", "serve", "--hosts", "public,console,control"];
  let p = spawn(cmd, env);
  const ready = () =>
    waitFor(
      "parley",
      async () =>
        (await fetch(`${parley.publicUrl}/readyz`)).ok && (await fetch(`${parley.controlUrl}/readyz`)).ok && (await fetch(`${parley.consoleUrl}/readyz`)).ok,
      120_000,
      () => p.stdout() + p.stderr(),
    );
  const parley: Parley = {
    ...p,
    publicUrl: `http://127.0.0.1:${pub}`,
    consoleUrl: `http://127.0.0.1:${con}`,
    controlUrl: `http://127.0.0.1:${ctl}`,
    controlPort: ctl,
    dataDir,
    async stop() {
      await p.stop();
      rmSync(dataDir, { recursive: true, force: true });
    },
    async restart(whileDown) {
      await p.stop();
      await whileDown?.();
      p = spawn(cmd, env);
      Object.assign(parley, { proc: p.proc, stdout: p.stdout, stderr: p.stderr });
      await ready();
    },
  };
  await ready();
  return parley;
}

export interface Kamailio extends Proc {
  port: number;
  /** Log lines so far. */
  log(): string;
}

/**
 * Starts Kamailio with the repository's config, pointed at `controlPort`. `defines` are extra -A
 * flags (e.g. `REPORT_TIMER="name=secreport;mode=1;interval=2"`).
 */
export async function startKamailio(options: { port?: number; controlPort: number; control2Port?: number; node?: string; defines?: string[]; children?: number; ipv6?: boolean }): Promise<Kamailio> {
  // A port free when chosen may be taken before Kamailio binds it (a sipp's media port, another
  // test's socket): a port this function chose is chosen again then, up to three times.
  for (let attempt = 1; ; attempt++) {
    try {
      return await startKamailioOn(options.port ?? (await freeUdpPort()), options);
    } catch (error) {
      if (options.port !== undefined || attempt >= 3 || !/Address already in use/.test(String(error))) throw error;
    }
  }
}

async function startKamailioOn(port: number, options: { controlPort: number; control2Port?: number; node?: string; defines?: string[]; children?: number; ipv6?: boolean }): Promise<Kamailio> {
  // ipv6: the edge's SIP socket on ::1 instead (the control plane stays on 127.0.0.1).
  const host = options.ipv6 ? "[::1]" : "127.0.0.1";
  const args = [
    "kamailio", "-DD", "-E", "-m", "256", "-M", "16", "-x", "tlsf", "-X", "tlsf", "-f", KAMAILIO_CFG,
    "-A", `LISTEN=udp:${host}:${port}`,
    "-A", `REG_CONTACT_ADDR="${host}:${port}"`,
    "-A", `CONTROL_CON="ctl=>http://127.0.0.1:${options.controlPort}"`,
    ...(options.control2Port ? ["-A", `CONTROL_CON2="ctl2=>http://127.0.0.1:${options.control2Port}"`] : []),
    "-A", `NODE="${options.node ?? "edge-e2e"}"`,
    "-A", `UDP_CHILDREN=${options.children ?? 4}`,
    ...(options.defines ?? []).flatMap((d) => ["-A", d]),
  ];
  const p = spawn(args, { PATH: process.env.PATH, HOME: process.env.HOME });
  const k: Kamailio = { ...p, port, log: () => p.stderr() + p.stdout() };
  // Not waitFor: a Kamailio that exited (a port taken, a bad define) is reported at once.
  const deadline = Date.now() + 20_000;
  for (;;) {
    if (p.proc.exitCode !== null) throw new Error(`kamailio exited ${p.proc.exitCode}:\n${k.log().slice(-4000)}`);
    if (/INFO: .*(async|rtimer|ctl).*|main\.c.*main\(\)/.test(k.log()) && (await sipOptionsPing(port, options.ipv6 ? "::1" : "127.0.0.1"))) return k;
    if (Date.now() > deadline) {
      await k.stop();
      throw new Error(`kamailio did not come up in 20000 ms:\n${k.log().slice(-4000)}`);
    }
    await Bun.sleep(200);
  }
}

/** Sends an OPTIONS to the edge and waits up to 500 ms for any reply. */
export async function sipOptionsPing(port: number, address = "127.0.0.1"): Promise<boolean> {
  let answered = false;
  let done: () => void = () => {};
  const got = new Promise<void>((res) => {
    done = res;
  });
  // error: the ICMP "port unreachable" of a Kamailio not up yet; the next try will tell.
  const sock = await Bun.udpSocket({ hostname: address, port: 0, socket: { data() { answered = true; done(); }, error() {} } });
  try {
    const branch = `z9hG4bK${crypto.randomUUID().slice(0, 12)}`;
    const host = address.includes(":") ? `[${address}]` : address;
    const msg =
      `OPTIONS sip:${host}:${port} SIP/2.0\r\nVia: SIP/2.0/UDP ${host}:${sock.port};branch=${branch}\r\nMax-Forwards: 70\r\n` +
      `From: <sip:ping@${host}>;tag=p1\r\nTo: <sip:${host}:${port}>\r\nCall-ID: ${branch}@ping\r\nCSeq: 1 OPTIONS\r\nContent-Length: 0\r\n\r\n`;
    sock.send(msg, port, address);
    await Promise.race([got, Bun.sleep(500)]);
    return answered;
  } finally {
    sock.close();
  }
}

export interface SippResult {
  code: number | null;
  stdout: string;
  stderr: string;
  /** The last line of the -trace_stat CSV as a record (Successful/Failed call counts, …). */
  stats: Record<string, string>;
  /** Status codes of every response sipp received, in order (from -trace_msg). */
  statuses: number[];
  /** Call-IDs of the calls sipp made (from -trace_msg), to find them in Kamailio's log. */
  callIds: string[];
  /** Every message sipp sent and received (-trace_msg), to check a header a callee echoed. */
  messages: string;
}

/**
 * Runs one sipp scenario against `target` and waits for it. `args` are extra sipp flags. Returns the
 * exit code (0: every call succeeded, 1: at least one failed) and the final statistics.
 */
export async function runSipp(scenario: string, target: string, args: string[], timeoutMs = 60_000): Promise<SippResult> {
  const dir = mkdtempSync(join(tmpdir(), "sipp-"));
  const file = scenario.includes("/") ? scenario : join(SCENARIOS, scenario);
  // Ports of its own: two sipp UACs at once must not both take 5060 (SIP) or 6000 (media).
  if (!args.includes("-p")) args = [...args, "-p", String(await freeUdpPort())];
  if (!args.includes("-mp")) args = [...args, "-mp", String(nextMediaPort())];
  // sipp's -timeout stops new calls but lets a call in progress retransmit to its end (Timer F: 32 s
  // with retrans=500); -recv_timeout aborts a call whose expected reply does not come in time.
  const t = args.indexOf("-timeout");
  if (t >= 0 && !args.includes("-recv_timeout")) args = [...args, "-recv_timeout", args[t + 1]!];
  const cmd = ["sipp", target, "-sf", file, "-i", "127.0.0.1", "-bg", "-nostdin", "-trace_stat", "-stf", join(dir, "stat.csv"), "-fd", "1", "-trace_err", "-error_file", join(dir, "err.log"), "-trace_msg", "-message_file", join(dir, "messages.log"), ...args];
  cmd.splice(cmd.indexOf("-bg"), 1); // foreground: we wait for the exit code
  const proc = Bun.spawn(cmd, { cwd: dir, stdin: "ignore", stdout: "pipe", stderr: "pipe" });
  const timer = setTimeout(() => proc.kill("SIGKILL"), timeoutMs);
  const [stdout, stderr] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text()]);
  await proc.exited;
  clearTimeout(timer);
  const statsFile = join(dir, "stat.csv");
  let stats: Record<string, string> = {};
  if (existsSync(statsFile)) {
    const lines = readFileSync(statsFile, "utf8").trim().split("\n");
    const head = lines[0]!.split(";");
    const last = lines[lines.length - 1]!.split(";");
    stats = Object.fromEntries(head.map((h, i) => [h, last[i] ?? ""]));
  }
  const err = existsSync(join(dir, "err.log")) ? readFileSync(join(dir, "err.log"), "utf8") : "";
  const messages = existsSync(join(dir, "messages.log")) ? readFileSync(join(dir, "messages.log"), "utf8") : "";
  const statuses = [...messages.matchAll(/^SIP\/2\.0 (\d{3})/gm)].map((m) => Number(m[1]));
  const callIds = [...new Set([...messages.matchAll(/^Call-ID:\s*(\S+)/gim)].map((m) => m[1]!))];
  rmSync(dir, { recursive: true, force: true });
  return { code: proc.exitCode, stdout, stderr: stderr + err, stats, statuses, callIds, messages };
}

export const HAVE_RTPENGINE = Bun.which("rtpengine") !== null;

/**
 * rtpengine (the media relay for WebRTC, Debian package rtpengine-daemon) in the foreground, without
 * its kernel module: its ng control socket on 127.0.0.1:`ngPort`, media on 127.0.0.1 ports
 * `portMin`..`portMax`. Waits until it says it is up.
 */
export async function startRtpengine(ngPort: number, portMin: number, portMax: number): Promise<Proc> {
  const p = spawn(
    ["rtpengine", "--foreground", "--log-stderr", "--log-level=6", "--table=-1", "--interface=127.0.0.1", `--listen-ng=127.0.0.1:${ngPort}`, `--port-min=${portMin}`, `--port-max=${portMax}`],
    { PATH: process.env.PATH, HOME: process.env.HOME },
    tmpdir(),
  );
  await waitFor(
    "rtpengine",
    async () => {
      if (p.proc.exitCode !== null) throw new Error(`rtpengine exited ${p.proc.exitCode}`);
      return /Startup complete/.test(p.stderr() + p.stdout());
    },
    15_000,
    () => p.stderr() + p.stdout(),
  );
  return p;
}

/** A sipp process left running (a UAS). */
export function startSipp(scenario: string, args: string[]): Proc {
  const file = scenario.includes("/") ? scenario : join(SCENARIOS, scenario);
  return spawn(["sipp", "-sf", file, "-i", "127.0.0.1", "-nostdin", ...args], { PATH: process.env.PATH, HOME: process.env.HOME }, tmpdir());
}

/** JSON over HTTP with an optional API key or admin token. */
export async function api<T = any>(method: string, url: string, body?: unknown, headers: Record<string, string> = {}): Promise<{ status: number; body: T }> {
  const r = await fetch(url, {
    method,
    headers: { ...(body !== undefined ? { "content-type": "application/json" } : {}), ...headers },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await r.text();
  let parsed: unknown = null;
  try {
    parsed = text ? JSON.parse(text) : null;
  } catch {
    parsed = text;
  }
  return { status: r.status, body: parsed as T };
}
