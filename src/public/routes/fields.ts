/** GET, POST /v1/fields; GET, POST, DELETE /v1/fields/{id}. */
import { Elysia } from "elysia";
import { Type as T } from "@sinclair/typebox";
import type { Platform } from "../../core/platform.ts";
import { CustomFieldModel } from "../../core/custom-fields/custom-fields.model.ts";
import { createField, deleteField, getField, listFields, updateField } from "../../core/custom-fields/custom-fields.service.ts";
import { DEFAULT_PAGE_SIZE } from "../../core/pagination/pagination.ts";
import { apiModels } from "../../http/api-models.ts";
import { DataReply, ListReply, OkReply, errorReplies } from "../../http/reply-models.ts";
import { apiAccess } from "../plugins/api-access.ts";

const IdParams = T.Object({ id: T.String({ maxLength: 64, description: "fld_… id." }) });

export function fieldRoutes(platform: Platform) {
  const tags = ["Custom fields"];
  return new Elysia({ name: "routes-fields", prefix: "/v1/fields", normalize: false })
    .use(apiModels)
    .use(apiAccess(platform))
    .get(
      "",
      async ({ principal, query }) =>
        ({ ok: true as const, ...(await listFields(platform.db, principal.accountId, { ...query, limit: query.limit ?? DEFAULT_PAGE_SIZE })) }),
      {
        scope: "fields",
        query: CustomFieldModel.ListQuery,
        response: { 200: ListReply(CustomFieldModel.Field), ...errorReplies(400, 401, 403, 429) },
        detail: { tags, summary: "List custom fields", description: "Filter: entity (contact or call). Creation order, keyset-paginated." },
      },
    )
    .post("", async ({ principal, body, status }) => status(201, { ok: true as const, data: await createField(platform.db, principal.accountId, body) }), {
      scope: "fields",
      idempotent: true,
      parse: "json",
      body: CustomFieldModel.Create,
      response: { 201: DataReply(CustomFieldModel.Field), ...errorReplies(400, 401, 403, 409, 415, 422, 429) },
      detail: {
        tags,
        summary: "Define a custom field",
        description: "key is unique per account and entity (409). A select field needs 1–100 options; other types take none.",
      },
    })
    .get("/:id", async ({ principal, params }) => ({ ok: true as const, data: await getField(platform.db, principal.accountId, params.id) }), {
      scope: "fields",
      params: IdParams,
      response: { 200: DataReply(CustomFieldModel.Field), ...errorReplies(400, 401, 403, 404, 429) },
      detail: { tags, summary: "One custom field" },
    })
    .post(
      "/:id",
      async ({ principal, params, body }) => ({ ok: true as const, data: await updateField(platform.db, principal.accountId, params.id, body) }),
      {
        scope: "fields",
        idempotent: true,
        parse: "json",
        params: IdParams,
        body: CustomFieldModel.Update,
        response: { 200: DataReply(CustomFieldModel.Field), ...errorReplies(400, 401, 403, 404, 409, 415, 422, 429) },
        detail: {
          tags,
          summary: "Update a custom field",
          description:
            "Only sent fields change; entity cannot. Changing key or type while contacts hold values for the field is a 409. " +
            "Changing a select field to another type drops its options.",
        },
      },
    )
    .delete(
      "/:id",
      async ({ principal, params }) => {
        await deleteField(platform.db, principal.accountId, params.id);
        return { ok: true as const };
      },
      {
        scope: "fields",
        idempotent: true,
        params: IdParams,
        response: { 200: OkReply, ...errorReplies(400, 401, 403, 404, 409, 422, 429) },
        detail: { tags, summary: "Delete a custom field", description: "Every contact's value for it is removed with it." },
      },
    );
}
