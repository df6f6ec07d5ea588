/** POST /v1/events/ticket (realtime stream tickets), GET /v1/logs (the account log). */
import { Elysia } from "elysia";
import type { Platform } from "../../core/platform.ts";
import { TicketModel } from "../../core/tickets/tickets.model.ts";
import { mintTicket, ticketKindFor } from "../../core/tickets/tickets.service.ts";
import { LogModel } from "../../core/logs/logs.model.ts";
import { listLogs } from "../../core/logs/logs.service.ts";
import { apiModels } from "../../http/api-models.ts";
import { DataReply, ListReply, errorReplies } from "../../http/reply-models.ts";
import { STREAM_PATH } from "../../realtime/stream-protocol.ts";
import { apiAccess } from "../plugins/api-access.ts";
import { optionalBody } from "../../http/optional-body.ts";

/**
 * The WebSocket URL of the stream on the realtime host (REALTIME_URL, or HOST:PORT_REALTIME); a path
 * in REALTIME_URL (a proxy's prefix) is kept in front of the stream's.
 */
export function streamUrl(platform: Pick<Platform, "config">, ticket: string): string {
  const url = new URL(platform.config.urls.realtime);
  url.pathname = `${url.pathname.replace(/\/+$/, "")}${STREAM_PATH}`;
  url.search = "";
  url.hash = "";
  url.protocol = url.protocol === "https:" ? "wss:" : "ws:";
  url.searchParams.set("ticket", ticket);
  return url.toString();
}

export function eventRoutes(platform: Platform) {
  return new Elysia({ name: "routes-events", normalize: false })
    .use(apiModels)
    .use(apiAccess(platform))
    .post(
      "/v1/events/ticket",
      async ({ principal, body }) => {
        // Which of the two the ticket is (and, when asked for one, that its scope is there).
        const kind = ticketKindFor(principal.scopes, body.kind);
        const minted = await mintTicket(platform.live, {
          accountId: principal.accountId,
          kind,
          scopes: principal.scopes,
          keyId: principal.keyId,
          credentialExpiresAt: principal.expiresAt,
        });
        return { ok: true as const, data: { ticket: minted.ticket, kind, expires_in: minted.expiresIn, url: streamUrl(platform, minted.ticket) } };
      },
      {
        scope: ["events", "wallboard"],
        idempotent: true,
        ...optionalBody(TicketModel.Mint),
        response: { 200: DataReply(TicketModel.Minted), ...errorReplies(400, 401, 403, 409, 413, 415, 422, 429) },
        detail: {
          tags: ["Events"],
          summary: "Mint a single-use ticket for the realtime event stream",
          description:
            "Needs scope events (an events ticket) or wallboard (a wallboard ticket; same stream today). The ticket opens one WebSocket " +
            "at data.url within 60 s and is then spent; a second use, or a use after 60 s, is closed with code 4401. " +
            "The socket lives as long as the credential: revoking the API key that minted the ticket, or the expiry of the console session that did, closes it with 4403. " +
            "Body optional: { kind } to ask for a kind explicitly (403 with need when its scope is missing). See docs/realtime.md.",
        },
      },
    )
    .get(
      "/v1/logs",
      async ({ principal, query }) => ({ ok: true as const, ...(await listLogs(platform.db, principal.accountId, query)) }),
      {
        scope: "cdr",
        query: LogModel.ListQuery,
        response: { 200: ListReply(LogModel.Entry), ...errorReplies(400, 401, 403, 429) },
        detail: {
          tags: ["Events"],
          summary: "Recent flow-node and platform log lines",
          description:
            "Newest first, kept 7 days (and at most 10,000 lines per account). level=warn gives warn and error lines; call_id one call's lines. Keyset-paginated (limit ≤ 500, default 50).",
        },
      },
    );
}
