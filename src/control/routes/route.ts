/** POST /route (the call routing decision). */
import { Elysia } from "elysia";
import type { Platform } from "../../core/platform.ts";

export function routeRoutes(_platform: Platform) {
  return new Elysia({ name: "control-route", normalize: false });
}
