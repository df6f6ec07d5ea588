/** GET, POST /v1/extensions; GET, POST, PATCH, DELETE /v1/extensions/{id}. */
import { Elysia, t } from "elysia";
import { Type as T } from "@sinclair/typebox";
import type { Platform } from "../../core/platform.ts";
import { ExtensionModel } from "../../core/extensions/extensions.model.ts";
import { createExtension, deleteExtension, getExtension, listExtensions, updateExtension } from "../../core/extensions/extensions.service.ts";
import { DEFAULT_PAGE_SIZE } from "../../core/pagination/pagination.ts";
import { PageQuery } from "../../http/page-query.ts";
import { apiModels } from "../../http/api-models.ts";
import { DataReply, ListReply, OkReply, errorReplies } from "../../http/reply-models.ts";
import { apiAccess } from "../plugins/api-access.ts";

const ListQuery = t.Object(
  {
    ...PageQuery.properties,
    q: t.Optional(t.String({ pattern: "^[0-9*#]{1,16}$", description: "Only extensions whose digits start with these (0-9, * and #; send # as %23)." })),
    dest_kind: t.Optional(ExtensionModel.DestKind),
    dest_id: t.Optional(t.String({ minLength: 1, maxLength: 64, description: "Only extensions routed to this target id (or feature code)." })),
    schedule_id: t.Optional(t.String({ minLength: 1, maxLength: 64, description: "Only extensions on this schedule." })),
  },
  { additionalProperties: false },
);

const IdParams = T.Object({ id: T.String({ maxLength: 64, description: "ext_… id." }) });

const WRITE_RULES =
  "digits are unique in the account: 409 with field digits. A destination is required: dest_kind, and dest_id unless dest_kind is hangup; " +
  "dest_kind feature takes a feature code as dest_id (voicemail_main, call_pickup, …). Every target and schedule_id must exist in this account " +
  "(400 naming the field otherwise); an extension cannot route to itself. closed_dest_* and holiday_dest_* need a schedule_id. " +
  "Digits that are one of the platform's emergency numbers (EMERGENCY_NUMBERS, default 911 and 112) are a 400: dialled, they always go out as an emergency call.";

const UPDATE_DESCRIPTION =
  `Only sent fields change; null clears a nullable field. Routing fields are merged onto the stored extension and checked as a whole: ` +
  `a new <slot>_kind sent without <slot>_id clears the old id (so { "closed_dest_kind": null } clears that slot). ${WRITE_RULES}`;

export function extensionRoutes(platform: Platform) {
  const rules = { emergencyNumbers: platform.config.routing.emergencyNumbers };
  const tags = ["Extensions"];
  const updateOptions = {
    scope: "extensions",
    idempotent: true,
    parse: "json",
    params: IdParams,
    body: ExtensionModel.Patch,
    response: { 200: DataReply(ExtensionModel.Extension), ...errorReplies(400, 401, 403, 404, 409, 415, 422, 429) },
  } as const;
  return new Elysia({ name: "routes-extensions", prefix: "/v1/extensions", normalize: false })
    .use(apiModels)
    .use(apiAccess(platform))
    .get(
      "",
      async ({ principal, query }) => {
        const { limit, cursor, ...filters } = query;
        return { ok: true as const, ...(await listExtensions(platform.db, principal.accountId, filters, { limit: limit ?? DEFAULT_PAGE_SIZE, cursor })) };
      },
      {
        scope: "extensions",
        query: ListQuery,
        response: { 200: ListReply(ExtensionModel.Extension), ...errorReplies(400, 401, 403, 429) },
        detail: {
          tags,
          summary: "List extensions",
          description:
            "In creation order, keyset-paginated (limit, cursor). Filters, combined with and: q = digits prefix; " +
            "dest_kind and dest_id (extensions routed to a target); schedule_id.",
        },
      },
    )
    .post(
      "",
      async ({ principal, body, status }) => status(201, { ok: true as const, data: await createExtension(platform.db, principal.accountId, body, rules) }),
      {
        scope: "extensions",
        idempotent: true,
        parse: "json",
        body: ExtensionModel.Create,
        response: { 201: DataReply(ExtensionModel.Extension), ...errorReplies(400, 401, 403, 409, 415, 422, 429) },
        detail: { tags, summary: "Add an extension", description: WRITE_RULES },
      },
    )
    .get("/:id", async ({ principal, params }) => ({ ok: true as const, data: await getExtension(platform.db, principal.accountId, params.id) }), {
      scope: "extensions",
      params: IdParams,
      response: { 200: DataReply(ExtensionModel.Extension), ...errorReplies(400, 401, 403, 404, 429) },
      detail: { tags, summary: "An extension" },
    })
    .patch(
      "/:id",
      async ({ principal, params, body }) => ({ ok: true as const, data: await updateExtension(platform.db, principal.accountId, params.id, body, rules) }),
      { ...updateOptions, detail: { tags, summary: "Update an extension", description: UPDATE_DESCRIPTION } },
    )
    .post(
      "/:id",
      async ({ principal, params, body }) => ({ ok: true as const, data: await updateExtension(platform.db, principal.accountId, params.id, body, rules) }),
      { ...updateOptions, detail: { tags, summary: "Update an extension (same as PATCH)", description: UPDATE_DESCRIPTION } },
    )
    .delete(
      "/:id",
      async ({ principal, params }) => {
        await deleteExtension(platform.db, principal.accountId, params.id);
        return { ok: true as const };
      },
      {
        scope: "extensions",
        idempotent: true,
        params: IdParams,
        response: { 200: OkReply, ...errorReplies(400, 401, 403, 404, 409, 422, 429) },
        detail: {
          tags,
          summary: "Delete an extension",
          description: "409 with used_by when a number, another extension, a ring group, a queue or the account's DID default still routes to it: point those elsewhere first.",
        },
      },
    );
}
