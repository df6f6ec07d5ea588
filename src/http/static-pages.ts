/**
 * The browser apps: the console SPA on the console host, the wallboard on the realtime host. Bun
 * bundles each page (and `bun build --compile` embeds it). /config.json tells a page where the
 * public API lives, since the hosts may be on different origins.
 */
import { Elysia } from "elysia";
import consolePage from "../../web/console/index.html";
import wallboardPage from "../../web/wallboard/index.html";
import type { Platform } from "../core/platform.ts";

export function staticPages(platform: Platform, which: "console" | "wallboard") {
  const page = which === "console" ? consolePage : wallboardPage;
  return new Elysia({ name: `pages-${which}`, normalize: false })
    .get("/", page, { detail: { hide: true } })
    .get(
      "/config.json",
      () => ({ publicUrl: platform.config.urls.public, consoleUrl: platform.config.urls.console, realtimeUrl: platform.config.urls.realtime }),
      { detail: { hide: true } },
    );
}
