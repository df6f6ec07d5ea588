/** Operator endpoints to bootstrap tenants: accounts, API keys, console users (x-admin-token). */
import { Elysia } from "elysia";
import type { Platform } from "../../core/platform.ts";
import { AccountModel } from "../../core/accounts/accounts.model.ts";
import { adminPatchAccount, createAccount, getAccount } from "../../core/accounts/accounts.service.ts";
import { AuthModel } from "../../core/auth/auth.model.ts";
import { createApiKey, createConsoleUser } from "../../core/auth/auth.service.ts";
import { validationFailed, AppError } from "../../core/errors/app-error.ts";
import { apiModels } from "../../http/api-models.ts";
import { DataReply, errorReplies } from "../../http/reply-models.ts";
import { Type as T } from "@sinclair/typebox";

/** POST /admin/keys reply: { id, secret, label, scopes } as the operator contract says. */
const AdminKeyReply = T.Object({ id: T.String(), secret: T.String(), label: T.Union([T.String(), T.Null()]), scopes: T.Array(T.String()) });

export function adminRoutes(platform: Platform) {
  const { db } = platform;
  return new Elysia({ name: "routes-admin", prefix: "/admin", normalize: false })
    .use(apiModels)
    .post("/accounts", async ({ body, status }) => status(201, { ok: true as const, data: await createAccount(db, body) }), {
      parse: "json",
      body: AccountModel.AdminCreate,
      response: { 201: DataReply(AccountModel.Account), ...errorReplies(400, 401, 415) },
    })
    .get("/accounts/:id", async ({ params }) => ({ ok: true as const, data: await getAccount(db, params.id) }), {
      params: T.Object({ id: T.String({ maxLength: 64 }) }),
      response: { 200: DataReply(AccountModel.Account), ...errorReplies(400, 401, 404) },
    })
    .patch(
      "/accounts/:id",
      async ({ params, body }) => {
        const data = await adminPatchAccount(db, params.id, body);
        // Keys, tokens and streams of a suspended or closed account stop at once, on every instance.
        await platform.credentials.invalidateAccount(params.id);
        return { ok: true as const, data };
      },
      {
      parse: "json",
      params: T.Object({ id: T.String({ maxLength: 64 }) }),
      body: AccountModel.AdminPatch,
      response: { 200: DataReply(AccountModel.Account), ...errorReplies(400, 401, 404, 409, 415) },
      },
    )
    .post(
      "/keys",
      async ({ body, status }) => {
        try {
          const data = await createApiKey(db, { accountId: body.account_id, label: body.label, scopes: body.scopes, grantorScopes: null });
          return status(201, { ok: true as const, data: { id: data.id, secret: data.secret, label: data.label, scopes: data.scopes } });
        } catch (error) {
          if (error instanceof AppError && error.code === "not_found") throw validationFailed([{ path: "/account_id", message: "No such account." }]);
          throw error;
        }
      },
      {
        parse: "json",
        body: AuthModel.AdminCreateKey,
        response: { 201: DataReply(AdminKeyReply), ...errorReplies(400, 401, 415) },
      },
    )
    .post("/console-users", async ({ body, status }) => status(201, { ok: true as const, data: await createConsoleUser(db, body) }), {
      parse: "json",
      body: AuthModel.AdminCreateConsoleUser,
      response: { 201: DataReply(AuthModel.ConsoleUser), ...errorReplies(400, 401, 409, 415) },
    });
}
