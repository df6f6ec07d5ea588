/** GET /cac, POST /cac/reset, GET /calls/{callId}/trace. */
import { Elysia, t } from "elysia";
import type { Platform } from "../../core/platform.ts";
import { CallModel } from "../../core/calls/calls.model.ts";
import { getTraceForEdge, liveSnapshot, resetAccountCac } from "../../core/calls/calls.service.ts";
import { cacTtlMs } from "../../core/calls/cac-config.ts";

export function cacRoutes(platform: Platform) {
  return new Elysia({ name: "control-cac", normalize: false })
    .get("/cac", async ({ query }) => ({ ok: true as const, data: await liveSnapshot(platform.db, platform.live, query.accountId, cacTtlMs(platform)) }), {
      query: CallModel.CacQuery,
      detail: { summary: "Concurrency counters, ceilings and active calls of an account" },
    })
    .post("/cac/reset", async ({ body }) => ({ ok: true as const, data: await resetAccountCac(platform.db, platform.live, body.accountId) }), {
      body: CallModel.ResetBody,
      detail: { summary: "Clears an account's stuck counters" },
    })
    .get(
      "/calls/:callId/trace",
      async ({ params, query }) => ({ ok: true as const, data: await getTraceForEdge(platform.db, params.callId, query.accountId) }),
      {
        params: t.Object({ callId: t.String({ minLength: 1, maxLength: 255 }) }),
        query: t.Object({ accountId: t.Optional(t.String({ maxLength: 64 })) }, { additionalProperties: false }),
        detail: { summary: "Ordered execution trace of a call, by SIP Call-ID (or call_… id with accountId)" },
      },
    );
}
