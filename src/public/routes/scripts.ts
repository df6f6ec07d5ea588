/** GET, POST /v1/scripts; GET, POST, DELETE /v1/scripts/{id}; GET /v1/scripts/{id}/render. */
import { Elysia } from "elysia";
import { Type as T } from "@sinclair/typebox";
import type { Platform } from "../../core/platform.ts";
import { ScriptModel } from "../../core/scripts/scripts.model.ts";
import { createScript, deleteScript, getScript, listScripts, renderScript, updateScript } from "../../core/scripts/scripts.service.ts";
import { DEFAULT_PAGE_SIZE } from "../../core/pagination/pagination.ts";
import { apiModels } from "../../http/api-models.ts";
import { DataReply, ListReply, OkReply, errorReplies } from "../../http/reply-models.ts";
import { apiAccess } from "../plugins/api-access.ts";

const IdParams = T.Object({ id: T.String({ maxLength: 64, description: "scr_… id." }) });

export function scriptRoutes(platform: Platform) {
  const tags = ["Scripts"];
  return new Elysia({ name: "routes-scripts", prefix: "/v1/scripts", normalize: false })
    .use(apiModels)
    .use(apiAccess(platform))
    .get(
      "",
      async ({ principal, query }) =>
        ({ ok: true as const, ...(await listScripts(platform.db, principal.accountId, { ...query, limit: query.limit ?? DEFAULT_PAGE_SIZE })) }),
      {
        scope: "scripts",
        query: ScriptModel.ListQuery,
        response: { 200: ListReply(ScriptModel.Summary), ...errorReplies(400, 401, 403, 429) },
        detail: {
          tags,
          summary: "List scripts (without bodies)",
          description: "Filters: q (name prefix, any case), content_type. Items carry body_bytes instead of the body; GET one script for it.",
        },
      },
    )
    .post("", async ({ principal, body, status }) => status(201, { ok: true as const, data: await createScript(platform.db, principal.accountId, body) }), {
      scope: "scripts",
      idempotent: true,
      parse: "json",
      body: ScriptModel.Create,
      response: { 201: DataReply(ScriptModel.Script), ...errorReplies(400, 401, 403, 409, 413, 415, 422, 429) },
      detail: { tags, summary: "Create a script", description: "The body is at most 256 KiB of UTF-8; a JSON script must parse. version starts at 1." },
    })
    .get("/:id", async ({ principal, params }) => ({ ok: true as const, data: await getScript(platform.db, principal.accountId, params.id) }), {
      scope: "scripts",
      params: IdParams,
      response: { 200: DataReply(ScriptModel.Script), ...errorReplies(400, 401, 403, 404, 429) },
      detail: { tags, summary: "One script, with its body" },
    })
    .post(
      "/:id",
      async ({ principal, params, body }) => ({ ok: true as const, data: await updateScript(platform.db, principal.accountId, params.id, body) }),
      {
        scope: "scripts",
        idempotent: true,
        parse: "json",
        params: IdParams,
        body: ScriptModel.Update,
        response: { 200: DataReply(ScriptModel.Script), ...errorReplies(400, 401, 403, 404, 409, 413, 415, 422, 429) },
        detail: { tags, summary: "Update a script", description: "Only sent fields change; every update bumps version by one." },
      },
    )
    .delete(
      "/:id",
      async ({ principal, params }) => {
        await deleteScript(platform.db, principal.accountId, params.id);
        return { ok: true as const };
      },
      {
        scope: "scripts",
        idempotent: true,
        params: IdParams,
        response: { 200: OkReply, ...errorReplies(400, 401, 403, 404, 409, 422, 429) },
        detail: { tags, summary: "Delete a script" },
      },
    )
    .get(
      "/:id/render",
      async ({ principal, params, set }) => {
        const script = await renderScript(platform.db, principal.accountId, params.id);
        const headers: Record<string, string> = {};
        for (const [k, v] of Object.entries(set.headers)) if (v !== undefined) headers[k] = String(v);
        headers["content-type"] = `${script.contentType}; charset=utf-8`;
        headers["x-content-type-options"] = "nosniff";
        headers["cache-control"] = "private, no-cache";
        headers["etag"] = `"${params.id}.${script.version}"`;
        // Opened directly in a browser, HTML from a tenant must not run script on this origin.
        if (script.contentType === "text/html") headers["content-security-policy"] = "sandbox";
        return new Response(script.body, { status: 200, headers });
      },
      {
        scope: "scripts",
        params: IdParams,
        response: { 200: T.String({ description: "The body, raw, with its content_type as Content-Type." }), ...errorReplies(400, 401, 403, 404, 429) },
        detail: {
          tags,
          summary: "The script body, raw",
          description:
            "Served with the script's content_type (charset utf-8) for the client to render; ETag is the id and version. text/html comes with " +
            "Content-Security-Policy: sandbox and every type with X-Content-Type-Options: nosniff, so a browser opening it directly runs no script.",
        },
      },
    );
}
