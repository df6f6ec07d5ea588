/** GET /v1/usage, GET /v1/balance, GET /v1/live. */
import { Elysia } from "elysia";
import type { Platform } from "../../core/platform.ts";

export function usageRoutes(_platform: Platform) {
  return new Elysia({ name: "routes-usage", normalize: false });
}
