/** GET, POST, DELETE /v1/keys and DELETE /v1/keys/{id}. */
import { Elysia } from "elysia";
import { Type as T } from "@sinclair/typebox";
import type { Platform } from "../../core/platform.ts";
import { AuthModel } from "../../core/auth/auth.model.ts";
import { createApiKey, listApiKeys, revokeKey } from "../../core/auth/auth.service.ts";
import { DEFAULT_PAGE_SIZE } from "../../core/pagination/pagination.ts";
import { PageQuery } from "../../http/page-query.ts";
import { apiModels } from "../../http/api-models.ts";
import { DataReply, ListReply, OkReply, errorReplies } from "../../http/reply-models.ts";
import { apiAccess } from "../plugins/api-access.ts";

export function keyRoutes(platform: Platform) {
  const revoke = async (accountId: string, keyId: string) => {
    await revokeKey(platform.db, accountId, keyId);
    await platform.credentials.invalidateKey(keyId);
    return { ok: true as const };
  };
  const tags = ["Keys"];
  return new Elysia({ name: "routes-keys", prefix: "/v1/keys", normalize: false })
    .use(apiModels)
    .use(apiAccess(platform))
    .get(
      "",
      async ({ principal, query }) =>
        ({ ok: true as const, ...(await listApiKeys(platform.db, principal.accountId, { limit: query.limit ?? DEFAULT_PAGE_SIZE, cursor: query.cursor })) }),
      {
        scope: "keys",
        query: PageQuery,
        response: { 200: ListReply(AuthModel.ApiKey), ...errorReplies(400, 401, 403, 429) },
        detail: { tags, summary: "List active API keys (no secrets)" },
      },
    )
    .post(
      "",
      async ({ principal, body, status }) =>
        status(201, {
          ok: true as const,
          data: await createApiKey(platform.db, { accountId: principal.accountId, label: body.label, scopes: body.scopes, grantorScopes: principal.scopes }),
        }),
      {
        scope: "keys",
        idempotent: true,
        parse: "json",
        body: AuthModel.CreateKey,
        response: { 201: DataReply(AuthModel.ApiKeyCreated), ...errorReplies(400, 401, 403, 409, 415, 422, 429) },
        detail: {
          tags,
          summary: "Mint an API key",
          description: "The secret is returned once. Scopes default to the caller's own; a credential cannot grant a scope it lacks (403).",
        },
      },
    )
    .delete("", async ({ principal, body }) => revoke(principal.accountId, body.id), {
      scope: "keys",
      idempotent: true,
      parse: "json",
      body: AuthModel.RevokeKey,
      response: { 200: OkReply, ...errorReplies(400, 401, 403, 404, 409, 415, 422, 429) },
      detail: { tags, summary: "Revoke an API key (id in the body)" },
    })
    .delete("/:id", async ({ principal, params }) => revoke(principal.accountId, params.id), {
      scope: "keys",
      idempotent: true,
      params: T.Object({ id: T.String({ maxLength: 64 }) }),
      response: { 200: OkReply, ...errorReplies(401, 403, 404, 409, 422, 429) },
      detail: { tags, summary: "Revoke an API key" },
    });
}
