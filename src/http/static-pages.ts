/**
 * The browser apps: the console SPA on the console host, the wallboard on the realtime host.
 *
 * The pages are Bun HTML bundles handed to Bun.serve's own `routes` (through the listening app's
 * `serve` option): Elysia only serves bundles as static routes when an app has no onRequest hook,
 * and every host has one. Bun bundles each page and `bun build --compile` embeds it.
 * /config.json tells a page where the public API lives, since the hosts may be on different origins.
 */
import { Elysia } from "elysia";
import consolePage from "../../web/console/index.html";
import wallboardPage from "../../web/wallboard/index.html";
import type { Platform } from "../core/platform.ts";

/** Bun.serve routes that serve a page at `/`. */
export function pageRoutes(which: "console" | "wallboard") {
  return { "/": which === "console" ? consolePage : wallboardPage };
}

/** The Elysia side of the pages: their runtime configuration. */
export function pageConfig(platform: Platform) {
  return new Elysia({ name: "page-config", normalize: false }).get(
    "/config.json",
    () => ({ publicUrl: platform.config.urls.public, consoleUrl: platform.config.urls.console, realtimeUrl: platform.config.urls.realtime }),
    { detail: { hide: true } },
  );
}
