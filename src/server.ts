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
import { startStaleCallSweeper } from "./core/calls/stale-calls.ts";
import { startDeliveryWorker } from "./core/webhooks/delivery-worker.ts";
import { sweepLogs } from "./core/logs/logs.service.ts";
import { sweepEvents } from "./core/events/bus.ts";
import { startStatisticsKeeper } from "./core/db/statistics.ts";

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
  let closeStreams = () => {};
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
    // Open event streams would keep stop(false) waiting forever: they are closed first (clients resume).
    if ("eventStream" in app.decorator) closeStreams = (app.decorator as { eventStream: { closeAll(): void } }).eventStream.closeAll;
    servers.push(app.server);
  }
  // Hourly retention: idempotency records, the account log, stored events.
  const purge = setInterval(() => {
    const jobs: Array<[string, () => Promise<unknown>]> = [
      ["idempotency purge", () => purgeExpiredIdempotencyKeys(platform.db)],
      ["log sweep", () => sweepLogs(platform.db)],
      ["event sweep", () => sweepEvents(platform.db)],
    ];
    for (const [name, job] of jobs) job().catch((error) => platform.log.warn(`${name} failed`, { error: describeError(error) }));
  }, 3600_000);
  purge.unref();
  // Planner statistics where autovacuum does not keep them (PGlite; PostgreSQL with autovacuum off).
  const statistics = startStatisticsKeeper(platform.database, (error) => platform.log.warn("analyze failed", { error: describeError(error) }));
  // Calls whose end the edge never reported are closed at their ceiling (stale-calls.ts).
  const staleCalls = startStaleCallSweeper(platform);
  // One webhook delivery worker per serve process, whatever hosts it runs (WEBHOOK_WORKERS=0: none).
  const webhooks = platform.config.webhookWorkers ? startDeliveryWorker(platform) : null;
  return {
    ports,
    async stop() {
      clearInterval(purge);
      statistics.stop();
      staleCalls.stop();
      closeStreams();
      // stop(false): refuse new connections, let requests in flight complete.
      await Promise.all(servers.map((s) => s.stop(false)));
      await webhooks?.stop();
    },
  };
}
