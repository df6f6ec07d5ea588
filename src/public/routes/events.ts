/** POST /v1/events/ticket, GET /v1/logs. */
import { Elysia } from "elysia";
import type { Platform } from "../../core/platform.ts";

export function eventRoutes(_platform: Platform) {
  return new Elysia({ name: "routes-events", normalize: false });
}
