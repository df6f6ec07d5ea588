/** GET, POST, DELETE /v1/dnc: the do-not-call list. */
import { Elysia } from "elysia";
import { Type as T } from "@sinclair/typebox";
import type { Platform } from "../../core/platform.ts";
import { DncModel } from "../../core/dnc/dnc.model.ts";
import { addToDnc, listDnc, lookupDnc, removeFromDnc } from "../../core/dnc/dnc.service.ts";
import { DEFAULT_PAGE_SIZE } from "../../core/pagination/pagination.ts";
import { apiModels } from "../../http/api-models.ts";
import { DataReply, ListReply, errorReplies } from "../../http/reply-models.ts";
import { apiAccess } from "../plugins/api-access.ts";

export function dncRoutes(platform: Platform) {
  const tags = ["DNC"];
  return new Elysia({ name: "routes-dnc", prefix: "/v1/dnc", normalize: false })
    .use(apiModels)
    .use(apiAccess(platform))
    .get(
      "",
      async ({ principal, query }) => {
        if (query.number !== undefined) return { ok: true as const, data: await lookupDnc(platform.db, principal.accountId, query.number) };
        return { ok: true as const, ...(await listDnc(platform.db, principal.accountId, { ...query, limit: query.limit ?? DEFAULT_PAGE_SIZE })) };
      },
      {
        scope: "dnc",
        query: DncModel.ListQuery,
        response: { 200: T.Union([ListReply(DncModel.Entry), DataReply(DncModel.Lookup)]), ...errorReplies(400, 401, 403, 429) },
        detail: {
          tags,
          summary: "List the do-not-call list, or look one number up",
          description:
            "With number=: { ok, data: { e164, listed: 0|1, entry? } } for that number (any typed form). Otherwise a list in number order, " +
            "keyset-paginated; filters q (digit prefix), source, include_expired=1 (expired entries are hidden by default and never count as listed).",
        },
      },
    )
    .post("", async ({ principal, body }) => ({ ok: true as const, data: await addToDnc(platform.db, principal.accountId, body) }), {
      scope: "dnc",
      idempotent: true,
      parse: "json",
      body: DncModel.Add,
      response: { 200: DataReply(DncModel.AddResult), ...errorReplies(400, 401, 403, 409, 413, 415, 422, 429) },
      detail: {
        tags,
        summary: "Add numbers (bulk, up to 10,000)",
        description:
          "Any invalid number refuses the whole request (400, one detail per bad index at /numbers/<i>); duplicates in the request are fine. " +
          "A number already listed keeps its entry (counted in already_listed); an expired one is listed again (counted in added).",
      },
    })
    .delete("", async ({ principal, body }) => ({ ok: true as const, data: await removeFromDnc(platform.db, principal.accountId, body) }), {
      scope: "dnc",
      idempotent: true,
      parse: "json",
      body: DncModel.Remove,
      response: { 200: DataReply(DncModel.RemoveResult), ...errorReplies(400, 401, 403, 409, 413, 415, 422, 429) },
      detail: {
        tags,
        summary: "Remove numbers (bulk, up to 10,000)",
        description: "Numbers that are not listed are ignored; any invalid number refuses the whole request (400).",
      },
    });
}
