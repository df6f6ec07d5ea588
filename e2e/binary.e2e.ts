/**
 * End-to-end test of the compiled binary (dist/parley, from `bun run build`): a copy in an empty
 * directory, no node_modules, a fresh DATA_DIR, every host on a free port. Run explicitly with
 *
 *   bun run build && bun test ./e2e/binary.e2e.ts
 *
 * The name does not match bun's default test pattern, so a plain `bun test` leaves it out (it needs
 * a build first). Without dist/parley it skips, except under CI, where a missing binary fails.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { chmodSync, copyFileSync, existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { collect, freePorts } from "../test/support/processes.ts";

const SOURCE_BINARY = resolve(import.meta.dir, "..", "dist", "parley");
const HAVE_BINARY = existsSync(SOURCE_BINARY);
const IN_CI = !["", "0", "false"].includes((process.env.CI ?? "").toLowerCase());

/** First run creates a PGlite cluster (initdb in wasm): seconds on a fast machine, more on CI. */
const START_TIMEOUT_MS = 90_000;
const STOP_TIMEOUT_MS = 10_000;

type HostName = "public" | "console" | "realtime" | "control";
const HOSTS: HostName[] = ["public", "console", "realtime", "control"];

interface Running {
  proc: Bun.Subprocess<"ignore", "pipe", "pipe">;
  /** Everything written to stdout so far (the banner, and logs at warn level and above). */
  stdout(): string;
  stderr(): string;
}

interface Banner {
  text: string;
  accountId: string | null;
  email: string | null;
  password: string | null;
  apiKey: string | null;
}

function start(binary: string, cwd: string, env: Record<string, string>): Running {
  const proc = Bun.spawn([binary, "serve"], { cwd, env, stdin: "ignore", stdout: "pipe", stderr: "pipe" });
  return { proc, stdout: collect(proc.stdout), stderr: collect(proc.stderr) };
}

/**
 * The banner's last line: the `curl` hint after first-run credentials, or the sign-in hint after
 * that. It contains blank lines itself, so its end is recognised by this line and the blank after it.
 */
const BANNER_END = /^(?: {2}Try: |Sign in with ).*\n\n/m;

/** Waits until the whole banner is out and picks the first-run credentials (if any) from it. */
async function waitForBanner(running: Running): Promise<Banner> {
  const deadline = Date.now() + START_TIMEOUT_MS;
  for (;;) {
    const out = running.stdout();
    const begin = out.indexOf("Parley is running.");
    const tail = begin === -1 ? null : BANNER_END.exec(out.slice(begin));
    if (tail) {
      const text = out.slice(begin, begin + tail.index + tail[0].length);
      const login = /^ {2}Console login\s+(\S+)\s+\/\s+(\S+)\s*$/m.exec(text);
      return {
        text,
        accountId: /default account (acc_\w+)/.exec(text)?.[1] ?? null,
        email: login?.[1] ?? null,
        password: login?.[2] ?? null,
        apiKey: /^ {2}API key\s+(sk_\w+)\s*$/m.exec(text)?.[1] ?? null,
      };
    }
    if (running.proc.exitCode !== null || running.proc.signalCode !== null) {
      throw new Error(`parley exited (${running.proc.exitCode ?? running.proc.signalCode}) before its banner.\nstdout:\n${running.stdout()}\nstderr:\n${running.stderr()}`);
    }
    if (Date.now() > deadline) throw new Error(`no banner within ${START_TIMEOUT_MS} ms.\nstdout:\n${running.stdout()}\nstderr:\n${running.stderr()}`);
    await Bun.sleep(50);
  }
}

/** The exit code, or null when the process is still running after `ms`. */
async function exitWithin(running: Running, ms: number): Promise<number | null> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<null>((done) => (timer = setTimeout(() => done(null), ms)));
  try {
    return await Promise.race([running.proc.exited, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

if (!HAVE_BINARY) {
  const message = `${SOURCE_BINARY} is missing: run \`bun run build\` first.`;
  if (IN_CI) {
    test("the compiled binary exists (CI)", () => {
      throw new Error(message);
    });
  } else {
    console.warn(`binary e2e skipped: ${message}`);
  }
}

describe.skipIf(!HAVE_BINARY)("compiled binary (dist/parley)", () => {
  let workDir = "";
  let binary = "";
  let env: Record<string, string> = {};
  const ports = {} as Record<HostName, number>;
  const started: Running[] = [];
  let first: Banner | undefined;

  const url = (host: HostName, path: string) => `http://127.0.0.1:${ports[host]}${path}`;
  /** The first start's credentials; later tests cannot run without them. */
  const creds = () => {
    if (!first?.apiKey || !first.email || !first.password || !first.accountId) {
      throw new Error("the first start did not print credentials (see the first test)");
    }
    return { apiKey: first.apiKey, email: first.email, password: first.password, accountId: first.accountId };
  };

  beforeAll(() => {
    workDir = mkdtempSync(join(tmpdir(), "parley-e2e-"));
    binary = join(workDir, "parley");
    // A copy away from the repository proves the binary carries everything (no node_modules, no
    // web/ or drizzle/ beside it) and does not depend on its working directory.
    copyFileSync(SOURCE_BINARY, binary);
    chmodSync(binary, 0o755);
    const [pub, con, rt, ctl] = freePorts(4) as [number, number, number, number];
    Object.assign(ports, { public: pub, console: con, realtime: rt, control: ctl });
    // Only what the binary needs: a DATABASE_URL or REDIS_URL from the caller's shell must not leak in.
    env = {
      PATH: process.env.PATH ?? "/usr/bin:/bin",
      HOME: workDir,
      HOST: "127.0.0.1",
      PORT_PUBLIC: String(ports.public),
      PORT_CONSOLE: String(ports.console),
      PORT_REALTIME: String(ports.realtime),
      PORT_CONTROL: String(ports.control),
      DATA_DIR: join(workDir, "data"),
      LOG_LEVEL: "warn",
    };
  });

  afterAll(async () => {
    for (const running of started) {
      if (running.proc.exitCode !== null || running.proc.signalCode !== null) continue;
      running.proc.kill("SIGTERM");
      if ((await exitWithin(running, 5_000)) === null) {
        running.proc.kill("SIGKILL");
        await running.proc.exited;
      }
    }
    if (workDir) rmSync(workDir, { recursive: true, force: true });
  });

  test(
    "first start on an empty DATA_DIR prints the banner with first-run credentials",
    async () => {
      const running = start(binary, workDir, env);
      started.push(running);
      first = await waitForBanner(running);
      expect(first.apiKey).toMatch(/^sk_\w+$/);
      expect(first.email).toContain("@");
      expect(first.password).toBeTruthy();
      expect(first.accountId).toMatch(/^acc_/);
    },
    START_TIMEOUT_MS + 5_000,
  );

  test("GET /healthz answers 200 on all four hosts", async () => {
    for (const host of HOSTS) {
      const response = await fetch(url(host, "/healthz"));
      expect({ host, status: response.status }).toEqual({ host, status: 200 });
      expect(await response.json()).toEqual({ ok: true });
    }
  });

  test("GET /readyz answers 200 (the embedded stores are up)", async () => {
    const response = await fetch(url("public", "/readyz"));
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ ok: true });
  });

  test("GET /v1/whoami with the printed API key", async () => {
    const response = await fetch(url("public", "/v1/whoami"), { headers: { "x-api-key": creds().apiKey } });
    expect(response.status).toBe(200);
    const body = (await response.json()) as { accountId: string; scopes: string[]; via: string };
    expect(body.via).toBe("key");
    expect(body.accountId).toBe(creds().accountId);
  });

  test("POST /login on the console host with the printed email and password", async () => {
    const response = await fetch(url("console", "/login"), {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ email: creds().email, password: creds().password }),
    });
    expect(response.status).toBe(200);
    const body = (await response.json()) as { token: string; token_type: string; expires_in: number };
    expect(body.token_type).toBe("Bearer");
    expect(body.expires_in).toBe(43200);
    const whoami = await fetch(url("public", "/v1/whoami"), { headers: { authorization: `Bearer ${body.token}` } });
    expect(whoami.status).toBe(200);
    expect(((await whoami.json()) as { via: string }).via).toBe("token");
  });

  test("GET / on the console host serves the console page and its bundled script", async () => {
    const page = await fetch(url("console", "/"));
    expect(page.status).toBe(200);
    expect(page.headers.get("content-type") ?? "").toContain("text/html");
    const html = await page.text();
    expect(html).toContain("<title>Parley console</title>");
    const src = /<script[^>]*\ssrc="([^"]+)"/.exec(html)?.[1];
    expect(src).toBeTruthy();
    const script = await fetch(new URL(src!, url("console", "/")));
    expect(script.status).toBe(200);
    expect(script.headers.get("content-type") ?? "").toContain("javascript");
    const js = await script.text();
    // React's development build would ship its dev-only warnings.
    expect(js).not.toContain("Each child in a list should have a unique");
  });

  test("SIGTERM stops it cleanly (exit code 0) within 10 s", async () => {
    const running = started[0]!;
    running.proc.kill("SIGTERM");
    expect(await exitWithin(running, STOP_TIMEOUT_MS)).toBe(0);
  }, STOP_TIMEOUT_MS + 5_000);

  test(
    "a restart on the same DATA_DIR shows no credentials, and the old API key still works",
    async () => {
      // Elysia listens with SO_REUSEPORT: a first instance still alive would share the ports and
      // answer some of these requests, so make sure it is gone whatever the previous test did.
      const previous = started[0];
      if (previous && previous.proc.exitCode === null && previous.proc.signalCode === null) {
        previous.proc.kill("SIGKILL");
        await previous.proc.exited;
      }
      const running = start(binary, workDir, env);
      started.push(running);
      const again = await waitForBanner(running);
      expect(again.text).not.toContain("API key");
      expect(again.text).not.toContain("Console login");
      expect(again.text).not.toContain("sk_");
      expect(again.text).not.toContain(creds().password);
      const response = await fetch(url("public", "/v1/whoami"), { headers: { "x-api-key": creds().apiKey } });
      expect(response.status).toBe(200);
      expect(((await response.json()) as { accountId: string }).accountId).toBe(creds().accountId);
      running.proc.kill("SIGTERM");
      expect(await exitWithin(running, STOP_TIMEOUT_MS)).toBe(0);
    },
    START_TIMEOUT_MS + STOP_TIMEOUT_MS + 5_000,
  );
});
