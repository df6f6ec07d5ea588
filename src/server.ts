/**
 * Starts the selected hosts of one platform, each on its own port, and stops them gracefully:
 * in-flight requests finish before the stores close.
 */
import type { Platform } from "./core/platform.ts";
import { purgeExpiredIdempotencyKeys } from "./core/idempotency/idempotency.service.ts";
import { describeError } from "./http/describe-error.ts";
import type { HostName } from "./http/host-base.ts";
import { createPublicApp } from "./public/app.ts";
import { createConsoleApp } from "./console/app.ts";
import { createRealtimeApp } from "./realtime/app.ts";
import { createControlApp } from "./control/app.ts";

export const ALL_HOSTS: HostName[] = ["public", "console", "realtime", "control"];

/** Largest request body any host accepts; JSON routes refuse more than 1 MiB earlier. */
const MAX_REQUEST_BODY = 64 * 1024 * 1024;

export interface RunningHosts {
  /** The port each started host actually listens on (useful with port 0). */
  ports: Partial<Record<HostName, number>>;
  /** Stops accepting, lets in-flight requests finish, then stops background jobs. */
  stop(): Promise<void>;
}

const FACTORIES = {
  public: createPublicApp,
  console: createConsoleApp,
  realtime: createRealtimeApp,
  control: createControlApp,
} as const;

export function startHosts(platform: Platform, hosts: HostName[] = ALL_HOSTS): RunningHosts {
  const servers: Array<{ stop(closeActive?: boolean): Promise<void> }> = [];
  const ports: Partial<Record<HostName, number>> = {};
  for (const host of hosts) {
    const app = FACTORIES[host](platform).listen({
      hostname: platform.config.host,
      port: platform.config.ports[host],
      maxRequestBodySize: MAX_REQUEST_BODY,
      // Production bundling of the pages, no hot reload; one process per port unless an operator
      // deliberately runs several (reusePort would silently split traffic between instances).
      development: false,
      reusePort: false,
    });
    if (!app.server) throw new Error(`the ${host} host did not start`);
    ports[host] = app.server.port;
    servers.push(app.server);
  }
  const purge = setInterval(() => {
    purgeExpiredIdempotencyKeys(platform.db).catch((error) =>
      platform.log.warn("idempotency purge failed", { error: describeError(error) }),
    );
  }, 3600_000);
  purge.unref();
  return {
    ports,
    async stop() {
      clearInterval(purge);
      // stop(false): refuse new connections, let requests in flight complete.
      await Promise.all(servers.map((s) => s.stop(false)));
    },
  };
}
