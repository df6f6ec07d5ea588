/** POST /security/report, GET /security/bans, GET/POST /security/allow, DELETE /security/allow/{ip}. */
import { Elysia } from "elysia";
import type { Platform } from "../../core/platform.ts";

export function securityRoutes(_platform: Platform) {
  return new Elysia({ name: "control-security", normalize: false });
}
