/**
 * The edge control plane ({control_url}): called by the SIP edge, media engines and operator tools.
 * Gated: the edge paths by an IP allowlist (CONTROL_ALLOW), /admin/* by the x-admin-token header.
 */
import { Elysia, type AnyElysia } from "elysia";
import type { Platform } from "../core/platform.ts";
import { AppError } from "../core/errors/app-error.ts";
import { ipAllowed } from "../core/net/cidr.ts";
import { clientIp } from "../http/request-context.ts";
import { hostBase, sealQueries } from "../http/host-base.ts";
import { adminRoutes } from "./routes/admin.ts";
import { configRoutes } from "./routes/config.ts";
import { edgeAuthRoutes } from "./routes/edge-auth.ts";
import { presenceRoutes } from "./routes/presence.ts";
import { routeRoutes } from "./routes/route.ts";
import { cacRoutes } from "./routes/cac.ts";
import { securityRoutes } from "./routes/security.ts";
import { trunkAuthRoutes } from "./routes/trunk-auth.ts";
import { trunkRoutes } from "./routes/trunks.ts";

/** A route module of the control host. */
export type ControlRouteModule = (platform: Platform) => AnyElysia;

/** Every control-host route module (admin and config are always mounted). */
export const CONTROL_ROUTE_MODULES: ControlRouteModule[] = [edgeAuthRoutes, routeRoutes, trunkAuthRoutes, trunkRoutes, presenceRoutes, cacRoutes, securityRoutes];

/** Paths only allow-listed addresses (edge, media and operator nodes) may reach. */
const GATED_PREFIXES = ["/auth", "/route", "/flow", "/presence", "/agent", "/cac", "/media", "/calls", "/security", "/node", "/debug", "/trunks"];

function isGated(path: string): boolean {
  return GATED_PREFIXES.some((p) => path === p || path.startsWith(`${p}/`));
}

function timingSafeEqualText(a: string, b: string): boolean {
  const ab = new TextEncoder().encode(a);
  const bb = new TextEncoder().encode(b);
  // Compare hashes so the comparison takes the same time whatever the lengths.
  const ha = new Bun.CryptoHasher("sha256").update(ab).digest();
  const hb = new Bun.CryptoHasher("sha256").update(bb).digest();
  let diff = ab.length ^ bb.length;
  for (let i = 0; i < ha.length; i++) diff |= ha[i]! ^ hb[i]!;
  return diff === 0;
}

/** The control host. `modules` defaults to every edge module; tests may mount a subset. */
export function createControlApp(platform: Platform, modules: ControlRouteModule[] = CONTROL_ROUTE_MODULES) {
  const { config } = platform;
  const notImplemented = () => {
    throw new AppError("not_implemented", "Not implemented on the control host.");
  };
  const base = hostBase(platform, { host: "control", cors: false, accept: ["json", "form"], itemCheckedBodies: ["/presence/events"] });
  const app = new Elysia({ name: "control", normalize: false })
    .use(base)
    // onRequest, not beforeHandle: the gate must hold for every path, routed or not.
    .onRequest(({ request, server }) => {
      const path = new URL(request.url).pathname;
      if (path.startsWith("/admin/")) {
        const token = request.headers.get("x-admin-token");
        if (!config.adminToken) throw new AppError("unauthorized", "Admin endpoints are disabled: ADMIN_TOKEN is not set.");
        if (!token || !timingSafeEqualText(token, config.adminToken)) throw new AppError("unauthorized", "A valid x-admin-token header is required.");
        return;
      }
      if (isGated(path) && !ipAllowed(clientIp(server, request), config.controlAllow)) {
        // No `need`: that names a missing scope (SPEC.md's 403); the fix here is the operator's setting.
        throw new AppError("forbidden", "This address may not reach the control plane.", { hint: "Add the edge node's address to CONTROL_ALLOW." });
      }
    })
    .use(adminRoutes(platform))
    .use(configRoutes(platform))
    .all("/v1/*", notImplemented, { detail: { hide: true } })
    .all("/v1", notImplemented, { detail: { hide: true } })
    .all("/hooks/carrier", notImplemented, { detail: { hide: true } })
    .all("/hooks/carrier/*", notImplemented, { detail: { hide: true } });
  for (const module of modules) app.use(module(platform));
  return sealQueries(app, base);
}
