/**
 * POST /admin/config/plan, POST /admin/config/apply, GET /admin/config/export (control host, behind
 * x-admin-token): the declarative config file of one account's config-managed resources over HTTP,
 * for operator tooling. Details of a bad file point into the file (`/trunks/2/proxy`), not into the body.
 */
import { Elysia } from "elysia";
import type { Platform } from "../../core/platform.ts";
import { AppError, validationFailed } from "../../core/errors/app-error.ts";
import { ConfigFileModel } from "../../core/config-file/config-file.model.ts";
import { detectFormat, parseConfigText } from "../../core/config-file/config-file.format.ts";
import { planConfig } from "../../core/config-file/planner.ts";
import { applyConfig } from "../../core/config-file/applier.ts";
import { exportConfigText } from "../../core/config-file/exporter.ts";
import { apiModels } from "../../http/api-models.ts";
import { DataReply, errorReplies } from "../../http/reply-models.ts";

/** An unknown account is a bad account_id in the request, like the other admin endpoints. */
async function forAccount<T>(run: () => Promise<T>, where = "/account_id"): Promise<T> {
  try {
    return await run();
  } catch (error) {
    if (error instanceof AppError && error.code === "not_found") throw validationFailed([{ path: where, message: "No such account." }]);
    throw error;
  }
}

export function configRoutes(platform: Platform) {
  const { db, secrets } = platform;
  const tags = ["Config"];
  const fileOf = (body: ConfigFileModel.Request) => parseConfigText(body.content, body.format ?? detectFormat(undefined, body.content));
  return new Elysia({ name: "routes-config", prefix: "/admin/config", normalize: false })
    .use(apiModels)
    .post("/plan", async ({ body }) => ({ ok: true as const, data: await forAccount(() => planConfig(db, body.account_id, fileOf(body), { secrets })) }), {
      parse: "json",
      body: ConfigFileModel.Request,
      response: { 200: DataReply(ConfigFileModel.Plan), ...errorReplies(400, 401, 409, 413, 415) },
      detail: {
        tags,
        summary: "Plan a config file",
        description:
          "What applying the file to account_id would create, update (field by field; secrets only as set/changed/removed) and delete. Writes nothing. 400 details point into the file; 409 when the file claims another account's SIP domain or deletes a forward still routed to.",
      },
    })
    .post(
      "/apply",
      async ({ body }) => ({ ok: true as const, data: await forAccount(() => applyConfig(db, secrets, body.account_id, fileOf(body))) }),
      {
        parse: "json",
        body: ConfigFileModel.Request,
        response: { 200: DataReply(ConfigFileModel.ApplyResult), ...errorReplies(400, 401, 409, 413, 415) },
        detail: {
          tags,
          summary: "Apply a config file",
          description:
            "Makes the account's config-managed resources match the file, in one transaction: resources missing from the file are deleted. A bad file changes nothing. Applying the same file again writes nothing (applied 0). ${VAR} secrets are read from the control host's environment.",
        },
      },
    )
    .get(
      "/export",
      async ({ query }) => {
        const format = query.format ?? "yaml";
        const content = await forAccount(() => exportConfigText(db, query.account_id, format), "/query/account_id");
        return { ok: true as const, data: { account_id: query.account_id, format, content } };
      },
      {
        query: ConfigFileModel.ExportQuery,
        response: { 200: DataReply(ConfigFileModel.Export), ...errorReplies(400, 401) },
        detail: { tags, summary: "Export an account's config file", description: "Stable order; stored secrets appear as <unchanged>. Applying it back changes nothing." },
      },
    );
}
