/** The console host ({console_url}): POST /login and the management console SPA. */
import { Elysia } from "elysia";
import type { Platform } from "../core/platform.ts";
import { AuthModel } from "../core/auth/auth.model.ts";
import { login } from "../core/auth/auth.service.ts";
import { AppError } from "../core/errors/app-error.ts";
import { clientIp } from "../http/request-context.ts";
import { hostBase, sealQueries } from "../http/host-base.ts";
import { errorReplies } from "../http/reply-models.ts";
import { apiModels } from "../http/api-models.ts";
import { pageConfig, pageRoutes } from "../http/static-pages.ts";

/** Failed logins allowed per address and per email in LOGIN_WINDOW_MS before 429. */
const LOGIN_FAILURES = 10;
const LOGIN_WINDOW_MS = 15 * 60 * 1000;

export function createConsoleApp(platform: Platform) {
  const { live } = platform;
  const base = hostBase(platform, { host: "console", cors: true, accept: ["json"] });
  const app = new Elysia({ name: "console", normalize: false, serve: { routes: pageRoutes("console") } })
    .use(base)
    .use(apiModels)
    .post(
      "/login",
      async ({ body, request, server }) => {
        const ip = clientIp(server, request);
        const keys = [`{ip:${ip}}:login-fail`, `{login:${body.email.trim().toLowerCase()}}:fail`];
        for (const key of keys) {
          const failures = Number((await live.get(key)) ?? "0");
          if (failures >= LOGIN_FAILURES) {
            const retry = Math.max(1, Math.ceil((await live.ttl(key)) / 1000));
            throw new AppError(
              "rate_limited",
              "Too many failed logins; try again later.",
              { hint: "Wait before trying again.", retry_after_sec: retry },
              { "retry-after": String(retry) },
            );
          }
        }
        try {
          return await login(platform.db, platform.tokens, body);
        } catch (error) {
          if (error instanceof AppError && error.code === "unauthorized") {
            await Promise.all(keys.map((key) => live.incr(key, 1, LOGIN_WINDOW_MS)));
          }
          throw error;
        }
      },
      {
        parse: "json",
        body: AuthModel.Login,
        response: { 200: AuthModel.LoginReply, ...errorReplies(400, 401, 415, 429) },
        detail: { summary: "Exchange email and password for a session token (12 h)" },
      },
    )
    .use(pageConfig(platform));
  return sealQueries(app, base);
}
