/** GET /v1/whoami and GET /v1/scopes. */
import { Elysia } from "elysia";
import { Type as T } from "@sinclair/typebox";
import type { Platform } from "../../core/platform.ts";
import { AuthModel } from "../../core/auth/auth.model.ts";
import { SCOPE_CATALOG } from "../../core/auth/scopes.ts";
import { apiModels } from "../../http/api-models.ts";
import { errorReplies } from "../../http/reply-models.ts";
import { apiAccess } from "../plugins/api-access.ts";

export function identityRoutes(platform: Platform) {
  return new Elysia({ name: "routes-identity", prefix: "/v1", normalize: false })
    .use(apiModels)
    .use(apiAccess(platform))
    .get(
      "/whoami",
      ({ principal }) => ({ accountId: principal.accountId, scopes: principal.scopes, via: principal.via }),
      {
        scope: "any",
        response: { 200: AuthModel.Whoami, ...errorReplies(401, 429) },
        detail: { tags: ["Identity"], summary: "Who the credential belongs to", description: "via is key for an API key, token for a session token." },
      },
    )
    .get("/scopes", () => ({ ok: true as const, data: SCOPE_CATALOG.map((s) => ({ name: s.name, description: s.description })) }), {
      response: { 200: T.Object({ ok: T.Literal(true), data: T.Array(AuthModel.ScopeEntry) }) },
      detail: { tags: ["Identity"], summary: "Catalog of grantable scopes", security: [] },
    });
}
