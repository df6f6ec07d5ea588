/** POST /presence/event, GET /presence/users. */
import { Elysia } from "elysia";
import type { Platform } from "../../core/platform.ts";

export function presenceRoutes(_platform: Platform) {
  return new Elysia({ name: "control-presence", normalize: false });
}
