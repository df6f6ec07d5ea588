/** GET and PATCH /v1/account, GET /v1/accounts. */
import { Elysia } from "elysia";
import type { Platform } from "../../core/platform.ts";
import { AccountModel } from "../../core/accounts/accounts.model.ts";
import { getAccount, listSubaccounts, patchAccount } from "../../core/accounts/accounts.service.ts";
import { DEFAULT_PAGE_SIZE } from "../../core/pagination/pagination.ts";
import { PageQuery } from "../../http/page-query.ts";
import { apiModels } from "../../http/api-models.ts";
import { DataReply, ListReply, errorReplies } from "../../http/reply-models.ts";
import { apiAccess } from "../plugins/api-access.ts";

export function accountRoutes(platform: Platform) {
  return new Elysia({ name: "routes-account", prefix: "/v1", normalize: false })
    .use(apiModels)
    .use(apiAccess(platform))
    .get("/account", async ({ principal }) => ({ ok: true as const, data: await getAccount(platform.db, principal.accountId) }), {
      scope: "any",
      response: { 200: DataReply(AccountModel.Account), ...errorReplies(401, 404, 429) },
      detail: { tags: ["Account"], summary: "The caller's account" },
    })
    .patch(
      "/account",
      async ({ principal, body }) => {
        const data = await patchAccount(platform.db, principal.accountId, body);
        await platform.credentials.invalidateAccount(principal.accountId);
        return { ok: true as const, data };
      },
      {
        scope: "account",
        idempotent: true,
        parse: "json",
        body: AccountModel.Patch,
        response: { 200: DataReply(AccountModel.Account), ...errorReplies(400, 401, 403, 404, 409, 415, 422, 429) },
        detail: {
          tags: ["Account"],
          summary: "Edit the self-service settings",
          description: "Only sent fields change. id, status, parent_id and billing fields cannot be set (400).",
        },
      },
    )
    .get(
      "/accounts",
      async ({ principal, query }) =>
        ({ ok: true as const, ...(await listSubaccounts(platform.db, principal.accountId, { limit: query.limit ?? DEFAULT_PAGE_SIZE, cursor: query.cursor })) }),
      {
        scope: "accounts",
        query: PageQuery,
        response: { 200: ListReply(AccountModel.Account), ...errorReplies(400, 401, 403, 429) },
        detail: { tags: ["Account"], summary: "Subaccounts under management (resellers only)" },
      },
    );
}
