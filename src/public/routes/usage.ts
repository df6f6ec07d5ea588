/** GET /v1/usage, GET /v1/balance, GET /v1/live (calls, CAC, agents, queues), GET /v1/live/interactions. */
import { Elysia } from "elysia";
import { Type as T } from "@sinclair/typebox";
import type { Platform } from "../../core/platform.ts";
import { CallModel } from "../../core/calls/calls.model.ts";
import { activeCalls, getBalance, getUsage, liveSnapshot } from "../../core/calls/calls.service.ts";
import { cacTtlMs } from "../../core/calls/cac-config.ts";
import { liveAgents } from "../../core/presence/presence-events.ts";
import { listQueueConfigs, MAX_LIVE_QUEUES } from "../../core/queues/queues.service.ts";
import { apiModels } from "../../http/api-models.ts";
import { DataReply, errorReplies } from "../../http/reply-models.ts";
import { apiAccess } from "../plugins/api-access.ts";
import { NoQuery } from "../../http/page-query.ts";

export function usageRoutes(platform: Platform) {
  return new Elysia({ name: "routes-usage", normalize: false })
    .use(apiModels)
    .use(apiAccess(platform))
    .get("/v1/usage", async ({ principal, query }) => ({ ok: true as const, data: await getUsage(platform.db, principal.accountId, query) }), {
      scope: "usage",
      query: CallModel.UsageQuery,
      response: { 200: DataReply(CallModel.Usage), ...errorReplies(400, 401, 403, 429) },
      detail: {
        tags: ["Usage"],
        summary: "Spend, minutes and call count",
        description: "Over calls started in [since, until) (default: this month in the account's timezone, until now). daily=1 adds a per-day series (days with calls).",
      },
    })
    .get("/v1/balance", async ({ principal }) => ({ ok: true as const, data: await getBalance(platform.db, principal.accountId) }), {
      scope: "usage",
      query: NoQuery,
      response: { 200: DataReply(CallModel.Balance), ...errorReplies(400, 401, 403, 429) },
      detail: { tags: ["Usage"], summary: "Financial statement: status, rate plan, month-to-date spend" },
    })
    .get(
      "/v1/live",
      async ({ principal }) => {
        const [snapshot, agents, queues] = await Promise.all([
          liveSnapshot(platform.db, platform.live, principal.accountId, cacTtlMs(platform)),
          liveAgents(platform, principal.accountId),
          listQueueConfigs(platform.db, principal.accountId),
        ]);
        return { ok: true as const, data: { ...snapshot, agents, queues } };
      },
      {
        scope: "cdr",
        query: NoQuery,
        response: { 200: DataReply(CallModel.LiveView), ...errorReplies(400, 401, 403, 429) },
        detail: {
          tags: ["Calls"],
          summary: "Live snapshot: agents, calls in progress, concurrency counters, queue configs",
          description: `Agents as the presence roster shows them (state, since, pause reason, calls); queues oldest first, at most ${MAX_LIVE_QUEUES}.`,
        },
      },
    )
    .get(
      "/v1/live/interactions",
      async ({ principal }) => ({ ok: true as const, data: await activeCalls(platform.db, principal.accountId, cacTtlMs(platform)) }),
      {
        scope: "reports",
        query: NoQuery,
        response: { 200: DataReply(T.Array(CallModel.ActiveCall)), ...errorReplies(400, 401, 403, 429) },
        detail: { tags: ["Reports"], summary: "Calls up now (polled alternative to the wallboard socket)", description: "Oldest first, at most 500." },
      },
    );
}
