/** GET /cac, POST /cac/reset, GET /calls/{callId}/trace. */
import { Elysia } from "elysia";
import type { Platform } from "../../core/platform.ts";

export function cacRoutes(_platform: Platform) {
  return new Elysia({ name: "control-cac", normalize: false });
}
