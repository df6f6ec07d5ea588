/** The realtime host ({realtime_url}): the live wallboard SPA and its WebSocket event stream. */
import { Elysia } from "elysia";
import type { Platform } from "../core/platform.ts";
import { hostBase, sealQueries } from "../http/host-base.ts";
import { pageConfig, pageRoutes } from "../http/static-pages.ts";
import { eventStream, type EventStreamOptions } from "./event-stream.ts";
import { MAX_CLIENT_MESSAGE_BYTES } from "./stream-protocol.ts";

export type RealtimeOptions = EventStreamOptions;

export function createRealtimeApp(platform: Platform, options: RealtimeOptions = {}) {
  const stream = eventStream(platform, options);
  const base = hostBase(platform, { host: "realtime", cors: false, accept: ["json"] });
  const app = new Elysia({ name: "realtime", normalize: false, serve: { routes: pageRoutes("wallboard") }, websocket: { maxPayloadLength: MAX_CLIENT_MESSAGE_BYTES } })
    .use(base)
    .use(pageConfig(platform))
    .use(stream.plugin)
    .decorate("eventStream", { hub: stream.hub, closeAll: stream.closeAll, connections: stream.connections });
  return sealQueries(app, base);
}
