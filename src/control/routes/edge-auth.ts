/** POST /auth (SIP digest verification for the edge). */
import { Elysia } from "elysia";
import type { Platform } from "../../core/platform.ts";

export function edgeAuthRoutes(_platform: Platform) {
  return new Elysia({ name: "control-edge-auth", normalize: false });
}
