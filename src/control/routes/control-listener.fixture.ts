/**
 * A control host on a real socket for tests: the edge paths are gated by client address, which
 * `app.handle()` does not have. Sends JSON or form bodies the way an edge would.
 */
import type { Platform } from "../../core/platform.ts";
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
