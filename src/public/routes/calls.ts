/** GET /v1/calls (+csv), GET /v1/calls/mine, GET /v1/calls/{id}, GET /v1/calls/{id}/trace, POST /v1/cac/reset. */
import { Elysia } from "elysia";
import { Type as T } from "@sinclair/typebox";
import type { Platform } from "../../core/platform.ts";
import { CallModel } from "../../core/calls/calls.model.ts";
import { getCall, getCallTrace, getMyCurrentCall, listCallsPage, resetAccountCac, streamCallsCsv } from "../../core/calls/calls.service.ts";
import { DEFAULT_PAGE_SIZE } from "../../core/pagination/pagination.ts";
import { apiModels } from "../../http/api-models.ts";
import { DataReply, ListReply, errorReplies } from "../../http/reply-models.ts";
import { apiAccess } from "../plugins/api-access.ts";
import { NoQuery } from "../../http/page-query.ts";
import { optionalBody } from "../../http/optional-body.ts";
import { AppError } from "../../core/errors/app-error.ts";
import { cacTtlMs } from "../../core/calls/cac-config.ts";

const IdParams = T.Object({ id: T.String({ maxLength: 64, description: "call_… id." }) });

/** CSV exports of one account that may run at once on an instance (more: 429). */
export const MAX_EXPORTS_PER_ACCOUNT = 2;

/** `stream`, calling `done` once when it ends, fails or its reader cancels it. */
function whileStreaming(stream: ReadableStream<Uint8Array>, done: () => void): ReadableStream<Uint8Array> {
  const reader = stream.getReader();
  let finished = false;
  const finish = () => {
    if (finished) return;
    finished = true;
    done();
  };
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      try {
        const next = await reader.read();
        if (next.done) {
          finish();
          controller.close();
        } else controller.enqueue(next.value);
      } catch (error) {
        finish();
        controller.error(error);
      }
    },
    cancel(reason) {
      finish();
      return reader.cancel(reason);
    },
  });
}

/** GET /v1/calls?format=csv's reply. */
const CsvText = T.String({ description: "format=csv: a header row, then one row per call (RFC 4180, streamed)." });

export function callRoutes(platform: Platform) {
  const tags = ["Calls"];
  /** CSV exports running now, per account (this instance). */
  const exportsByAccount = new Map<string, number>();
  const listJson = async (accountId: string, query: CallModel.ListQuery) => ({
    ok: true as const,
    ...(await listCallsPage(platform.db, accountId, { ...query, limit: query.limit ?? DEFAULT_PAGE_SIZE })),
  });
  return new Elysia({ name: "routes-calls", normalize: false })
    .use(apiModels)
    .use(apiAccess(platform))
    .get(
      "/v1/calls",
      // Not async: a Response (csv) or a promise of the JSON page, so each branch keeps its own type.
      ({ principal, query, set }) => {
        if (query.format !== "csv") {
          return listJson(principal.accountId, query);
        }
        // Each export holds a database connection for as long as its client reads: an account's are
        // bounded, so one tenant's slow downloads cannot hold every export connection of the instance.
        const running = exportsByAccount.get(principal.accountId) ?? 0;
        if (running >= MAX_EXPORTS_PER_ACCOUNT) {
          throw new AppError(
            "rate_limited",
            `At most ${MAX_EXPORTS_PER_ACCOUNT} CSV exports of an account run at once (on this instance); retry when one has finished.`,
            { hint: "Wait for a running export to finish, or narrow the range with since and until.", retry_after_sec: 10 },
            { "retry-after": "10" },
          );
        }
        // The range is checked before the stream starts, so a bad one is a 400, not a broken download.
        const csv = streamCallsCsv(platform.database, principal.accountId, query);
        exportsByAccount.set(principal.accountId, running + 1);
        const body = whileStreaming(csv, () => {
          const left = (exportsByAccount.get(principal.accountId) ?? 1) - 1;
          if (left > 0) exportsByAccount.set(principal.accountId, left);
          else exportsByAccount.delete(principal.accountId);
        });
        const headers: Record<string, string> = {};
        for (const [k, v] of Object.entries(set.headers)) if (v !== undefined) headers[k] = String(v);
        headers["content-type"] = "text/csv; charset=utf-8";
        headers["content-disposition"] = 'attachment; filename="calls.csv"';
        headers["cache-control"] = "no-store";
        return new Response(body, { status: 200, headers });
      },
      {
        scope: "cdr",
        query: CallModel.ListQuery,
        response: { 200: T.Union([ListReply(CallModel.Call), CsvText]), ...errorReplies(400, 401, 403, 429) },
        detail: {
          // The OpenAPI document lists the CSV under its own media type (openapi-document.ts).
          ...({ "x-also-returns": { "text/csv": { schema: CsvText } } } as Record<string, unknown>),
          tags,
          summary: "List call records (CDRs)",
          description:
            "Calls started in [since, until) (epoch seconds), newest first, keyset-paginated; filters direction, user_id, number_id. " +
            "format=csv streams every call of the range as text/csv (RFC 4180, header line first; cells starting with = + - @ get a leading ').",
        },
      },
    )
    .get("/v1/calls/mine", async ({ principal }) => ({ ok: true as const, data: await getMyCurrentCall(platform.db, principal) }), {
      scope: "calls",
      query: NoQuery,
      response: { 200: DataReply(CallModel.Call), ...errorReplies(400, 401, 403, 404, 429) },
      detail: {
        tags,
        summary: "The call your own user is on now",
        description:
          "For the session token of a console login that acts as a user (created with user_id): the latest call that user placed, answered or is being rung by, still up. " +
          "404 when there is none, and for an API key or a login without a user (they have no call of their own; the message says which).",
      },
    })
    .get("/v1/calls/:id", async ({ principal, params }) => ({ ok: true as const, data: await getCall(platform.db, principal.accountId, params.id) }), {
      scope: "cdr",
      params: IdParams,
      query: NoQuery,
      response: { 200: DataReply(CallModel.Call), ...errorReplies(400, 401, 403, 404, 429) },
      detail: { tags, summary: "One call record" },
    })
    .get(
      "/v1/calls/:id/trace",
      async ({ principal, params }) => ({ ok: true as const, data: await getCallTrace(platform.db, principal.accountId, params.id) }),
      {
        scope: "cdr",
        params: IdParams,
        query: NoQuery,
        response: { 200: DataReply(CallModel.Trace), ...errorReplies(400, 401, 403, 404, 429) },
        detail: { tags, summary: "A call's execution trace", description: "Ordered steps: routing decisions (classify, number, schedule, …, cac, reject), then dialog events and flow steps." },
      },
    )
    .post("/v1/cac/reset", async ({ principal }) => ({ ok: true as const, data: await resetAccountCac(platform.db, platform.live, principal.accountId, { maxCallMs: cacTtlMs(platform) }) }), {
      scope: "cdr",
      idempotent: true,
      // No fields: the account is the credential's (a body naming another is refused, not ignored).
      ...optionalBody(T.Object({}, { additionalProperties: false })),
      response: { 200: DataReply(CallModel.ResetResult), ...errorReplies(400, 401, 403, 409, 422, 429) },
      detail: {
        tags,
        summary: "Clear this account's concurrency counters",
        description: "For counters leaked by a lost BYE or a crashed node. Calls still up stop counting against the ceilings until they end.",
      },
    });
}
