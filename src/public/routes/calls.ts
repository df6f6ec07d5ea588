/** GET /v1/calls (+csv), GET /v1/calls/{id}/trace, POST /v1/cac/reset. */
import { Elysia } from "elysia";
import type { Platform } from "../../core/platform.ts";

export function callRoutes(_platform: Platform) {
  return new Elysia({ name: "routes-calls", normalize: false });
}
