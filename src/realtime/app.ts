/** The realtime host ({realtime_url}): the live wallboard SPA (its WebSocket feed arrives with the events work). */
import { Elysia } from "elysia";
import type { Platform } from "../core/platform.ts";
import { hostBase } from "../http/host-base.ts";
import { pageConfig, pageRoutes } from "../http/static-pages.ts";

export function createRealtimeApp(platform: Platform) {
  return new Elysia({ name: "realtime", normalize: false, serve: { routes: pageRoutes("wallboard") } })
    .use(hostBase(platform, { host: "realtime", cors: false, accept: ["json"] }))
    .use(pageConfig(platform));
}
