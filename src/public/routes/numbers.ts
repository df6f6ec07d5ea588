/** GET, POST /v1/numbers; GET, POST, PATCH, DELETE /v1/numbers/{id}. */
import { Elysia, t } from "elysia";
import { Type as T } from "@sinclair/typebox";
import type { Platform } from "../../core/platform.ts";
import { NumberModel } from "../../core/numbers/numbers.model.ts";
import { createNumber, deleteNumber, getNumber, listNumbers, updateNumber } from "../../core/numbers/numbers.service.ts";
import { DEFAULT_PAGE_SIZE } from "../../core/pagination/pagination.ts";
import { PageQuery } from "../../http/page-query.ts";
import { apiModels } from "../../http/api-models.ts";
import { DataReply, ListReply, OkReply, errorReplies } from "../../http/reply-models.ts";
import { apiAccess } from "../plugins/api-access.ts";

const ListQuery = t.Object(
  {
    ...PageQuery.properties,
    status: t.Optional(NumberModel.Status),
    dest_kind: t.Optional(NumberModel.DestKind),
    dest_id: t.Optional(t.String({ minLength: 1, maxLength: 64, description: "Only numbers routed to this target id." })),
    // An unencoded + arrives as a space (form decoding), so a leading space is taken for it.
    q: t.Optional(t.String({ pattern: "^[+ ]?[0-9]{1,15}$", description: "Only numbers whose e164 starts with these digits; a leading + is ignored." })),
    schedule_id: t.Optional(t.String({ minLength: 1, maxLength: 64, description: "Only numbers on this schedule." })),
  },
  { additionalProperties: false },
);

const IdParams = T.Object({ id: T.String({ maxLength: 64, description: "num_… id." }) });

const WRITE_RULES =
  "e164 is normalized from what people type (+1 (415) 555-0123 → 14155550123); anything that is not E.164 is a 400. " +
  "Each e164 exists once on the whole platform: 409 with field e164 when another number (in any account) has it. " +
  "A destination is required: dest_kind, and dest_id unless dest_kind is hangup. Every target and schedule_id must exist in this account " +
  "(400 naming the field otherwise). closed_dest_* and holiday_dest_* need a schedule_id.";

const UPDATE_DESCRIPTION =
  `Only sent fields change; null clears a nullable field. Routing fields are merged onto the stored number and checked as a whole: ` +
  `a new <slot>_kind sent without <slot>_id clears the old id (so { "closed_dest_kind": null } clears that slot). ${WRITE_RULES} ` +
  "A new e164 frees the old one at once.";

export function numberRoutes(platform: Platform) {
  const tags = ["Numbers"];
  const updateOptions = {
    scope: "numbers",
    idempotent: true,
    parse: "json",
    params: IdParams,
    body: NumberModel.Patch,
    response: { 200: DataReply(NumberModel.Number), ...errorReplies(400, 401, 403, 404, 409, 415, 422, 429) },
  } as const;
  return new Elysia({ name: "routes-numbers", prefix: "/v1/numbers", normalize: false })
    .use(apiModels)
    .use(apiAccess(platform))
    .get(
      "",
      async ({ principal, query }) => {
        const { limit, cursor, ...filters } = query;
        return { ok: true as const, ...(await listNumbers(platform.db, principal.accountId, filters, { limit: limit ?? DEFAULT_PAGE_SIZE, cursor })) };
      },
      {
        scope: "numbers",
        query: ListQuery,
        response: { 200: ListReply(NumberModel.Number), ...errorReplies(400, 401, 403, 429) },
        detail: {
          tags,
          summary: "List numbers",
          description:
            "In creation order, keyset-paginated (limit, cursor). Filters, combined with and: status; dest_kind and dest_id (numbers routed to a target); " +
            "q = e164 prefix (digits, leading + ignored); schedule_id.",
        },
      },
    )
    .post(
      "",
      async ({ principal, body, status }) => status(201, { ok: true as const, data: await createNumber(platform.db, principal.accountId, body) }),
      {
        scope: "numbers",
        idempotent: true,
        parse: "json",
        body: NumberModel.Create,
        response: { 201: DataReply(NumberModel.Number), ...errorReplies(400, 401, 403, 409, 415, 422, 429) },
        detail: {
          tags,
          summary: "Add a number (DID)",
          description: `Defaults: status active, fax_mode voice, allow_anonymous 1, max_channels null (unlimited). ${WRITE_RULES}`,
        },
      },
    )
    .get("/:id", async ({ principal, params }) => ({ ok: true as const, data: await getNumber(platform.db, principal.accountId, params.id) }), {
      scope: "numbers",
      params: IdParams,
      response: { 200: DataReply(NumberModel.Number), ...errorReplies(400, 401, 403, 404, 429) },
      detail: { tags, summary: "A number" },
    })
    .patch(
      "/:id",
      async ({ principal, params, body }) => ({ ok: true as const, data: await updateNumber(platform.db, principal.accountId, params.id, body) }),
      { ...updateOptions, detail: { tags, summary: "Update a number", description: UPDATE_DESCRIPTION } },
    )
    .post(
      "/:id",
      async ({ principal, params, body }) => ({ ok: true as const, data: await updateNumber(platform.db, principal.accountId, params.id, body) }),
      { ...updateOptions, detail: { tags, summary: "Update a number (same as PATCH)", description: UPDATE_DESCRIPTION } },
    )
    .delete(
      "/:id",
      async ({ principal, params }) => {
        await deleteNumber(platform.db, principal.accountId, params.id);
        return { ok: true as const };
      },
      {
        scope: "numbers",
        idempotent: true,
        params: IdParams,
        response: { 200: OkReply, ...errorReplies(400, 401, 403, 404, 409, 422, 429) },
        detail: { tags, summary: "Delete a number", description: "The e164 is free again at once, for any account." },
      },
    );
}
