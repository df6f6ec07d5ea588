/**
 * A control host on a real socket for tests: the edge paths are gated by client address, which
 * `app.handle()` does not have. Sends JSON or form bodies the way an edge would.
 */
import { afterAll, beforeAll } from "bun:test";
import type { Platform } from "../../core/platform.ts";
import { testPlatform } from "../../../test/support/platform.ts";
import { createControlApp, type ControlRouteModule } from "../app.ts";

// Any body type the tests care about; tests narrow before use.
// biome-ignore lint: test helper
export type Body = Record<string, any>;

export interface ControlClient {
  /** http://127.0.0.1:<port>, for requests the helpers below do not make (raw bodies). */
  base: string;
  /** POST as JSON (default) or as an HTML form (every value sent as text). */
  post(path: string, body: unknown, as?: "json" | "form"): Promise<{ status: number; body: Body }>;
  get(path: string): Promise<{ status: number; body: Body }>;
  stop(): Promise<void>;
}

export function listenControl(platform: Platform, modules: ControlRouteModule[]): ControlClient {
  const app = createControlApp(platform, modules).listen({ hostname: "127.0.0.1", port: 0 });
  const base = `http://127.0.0.1:${app.server!.port}`;
  const read = async (r: Response) => ({ status: r.status, body: (await r.json()) as Body });
  return {
    base,
    async post(path, body, as = "json") {
      if (as === "form") {
        const form = new URLSearchParams();
        for (const [k, v] of Object.entries(body as Record<string, unknown>)) form.set(k, String(v));
        return read(await fetch(base + path, { method: "POST", headers: { "content-type": "application/x-www-form-urlencoded" }, body: form.toString() }));
      }
      return read(await fetch(base + path, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) }));
    },
    async get(path) {
      return read(await fetch(base + path));
    },
    async stop() {
      await app.stop();
    },
  };
}

/** A test file's platform (its log lines kept, debug and up) and a control host serving `modules` on it. */
export interface ControlTestHost {
  readonly platform: Platform;
  readonly client: ControlClient;
  /** Every log line the platform wrote. */
  readonly logged: string[];
}

/**
 * Sets up a ControlTestHost for the calling test file (beforeAll) and tears it down (afterAll); its
 * fields are there once the tests run.
 * @example const host = controlTestHost([trunkRoutes]); test("…", async () => { await host.client.post(…); });
 */
export function controlTestHost(modules: ControlRouteModule[]): ControlTestHost {
  const host = { logged: [] as string[] } as { platform: Platform; client: ControlClient; logged: string[] };
  beforeAll(async () => {
    host.platform = await testPlatform({ logLines: host.logged, logLevel: "debug" });
    host.client = listenControl(host.platform, modules);
  });
  afterAll(async () => {
    await host.client.stop();
    await host.platform.close();
  });
  return host;
}
