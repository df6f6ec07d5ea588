/**
 * A real HTTPS webhook receiver for tests and benchmarks: a self-signed certificate for `localhost`
 * (and 127.0.0.1) made with openssl in a temp dir, whose PEM the platform trusts through
 * WEBHOOK_CA_FILE, and a Bun.serve TLS listener on 127.0.0.1 that records every request.
 * Not used by the product.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

/** One request as the receiver saw it. */
export interface ReceivedRequest {
  path: string;
  headers: Record<string, string>;
  /** The raw body text, exactly as received (what signatures cover). */
  body: string;
  /** Epoch ms when it arrived. */
  at: number;
}

/** Decides the reply to one request; `n` counts the requests to this path so far (1 = first). */
export type ReceiverBehaviour = (request: ReceivedRequest, n: number) => Response | Promise<Response>;

export interface TestReceiver {
  port: number;
  /** PEM file of the receiver's self-signed certificate: pass it as WEBHOOK_CA_FILE. */
  caFile: string;
  /** `https://localhost:<port><path>`. */
  url(path: string): string;
  /** Every request so far, in arrival order (empty when `record: false`). */
  requests: ReceivedRequest[];
  /** Requests to one path. */
  at(path: string): ReceivedRequest[];
  /** Sets how a path answers (default: 200). */
  on(path: string, behaviour: ReceiverBehaviour): void;
  /** Resolves once `predicate()` holds, polling; rejects after `timeoutMs`. */
  until(predicate: () => boolean, timeoutMs?: number, what?: string): Promise<void>;
  stop(): Promise<void>;
}

/** A self-signed certificate for localhost / 127.0.0.1 in a new temp dir. */
export async function makeSelfSignedCert(): Promise<{ dir: string; certFile: string; cert: string; key: string }> {
  const dir = mkdtempSync(join(tmpdir(), "parley-hook-tls-"));
  const certFile = join(dir, "cert.pem");
  const keyFile = join(dir, "key.pem");
  const proc = Bun.spawn(
    [
      "openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
      "-keyout", keyFile, "-out", certFile, "-days", "2", "-subj", "/CN=localhost",
      "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1",
    ],
    { stdout: "ignore", stderr: "pipe" },
  );
  if ((await proc.exited) !== 0) throw new Error(`openssl failed: ${await new Response(proc.stderr).text()}`);
  return { dir, certFile, cert: await Bun.file(certFile).text(), key: await Bun.file(keyFile).text() };
}

/**
 * Starts a receiver.
 * @example const r = await startTestReceiver(); r.on("/flaky", (_q, n) => new Response(null, { status: n < 2 ? 503 : 200 }));
 */
export async function startTestReceiver(options: { record?: boolean } = {}): Promise<TestReceiver> {
  const record = options.record ?? true;
  const tls = await makeSelfSignedCert();
  const behaviours = new Map<string, ReceiverBehaviour>();
  const counts = new Map<string, number>();
  const requests: ReceivedRequest[] = [];
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    tls: { cert: tls.cert, key: tls.key },
    idleTimeout: 30,
    async fetch(req) {
      const url = new URL(req.url);
      const received: ReceivedRequest = {
        path: url.pathname,
        headers: Object.fromEntries(req.headers.entries()),
        body: await req.text(),
        at: Date.now(),
      };
      if (record) requests.push(received);
      const n = (counts.get(url.pathname) ?? 0) + 1;
      counts.set(url.pathname, n);
      const behaviour = behaviours.get(url.pathname);
      return behaviour ? behaviour(received, n) : new Response("ok");
    },
  });
  const port = server.port!;
  return {
    port,
    caFile: tls.certFile,
    url: (path) => `https://localhost:${port}${path}`,
    requests,
    at: (path) => requests.filter((r) => r.path === path),
    on: (path, behaviour) => void behaviours.set(path, behaviour),
    async until(predicate, timeoutMs = 15_000, what = "condition") {
      const deadline = Date.now() + timeoutMs;
      while (!predicate()) {
        if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
        await Bun.sleep(20);
      }
    },
    async stop() {
      await server.stop(true);
      rmSync(tls.dir, { recursive: true, force: true });
    },
  };
}
