/** GET, POST /v1/conferences; GET, POST, PATCH, DELETE /v1/conferences/{id}. Moderation (…/control) comes later. */
import { Elysia, t } from "elysia";
import { Type as T } from "@sinclair/typebox";
import type { Platform } from "../../core/platform.ts";
import { ConferenceModel } from "../../core/conferences/conferences.model.ts";
import {
  deleteConference,
  getConference,
  listConferences,
  updateConference,
  upsertConference,
} from "../../core/conferences/conferences.service.ts";
import { DEFAULT_PAGE_SIZE } from "../../core/pagination/pagination.ts";
import { PageQuery } from "../../http/page-query.ts";
import { apiModels } from "../../http/api-models.ts";
import { DataReply, ListReply, OkReply, errorReplies } from "../../http/reply-models.ts";
import { apiAccess } from "../plugins/api-access.ts";

const ListQuery = t.Object(
  {
    ...PageQuery.properties,
    q: t.Optional(t.String({ minLength: 1, maxLength: 200, description: "Only rooms whose name starts with this text (any case)." })),
  },
  { additionalProperties: false },
);

const ItemParams = T.Object({ id: T.String({ maxLength: 64, description: "conf_… id." }) });

export function conferenceRoutes(platform: Platform) {
  const tags = ["Conferences"];
  const update = {
    scope: "conferences",
    idempotent: true,
    parse: "json",
    params: ItemParams,
    body: ConferenceModel.Patch,
    response: { 200: DataReply(ConferenceModel.Conference), ...errorReplies(400, 401, 403, 404, 409, 415, 422, 429) },
  } as const;
  const updateDescription =
    "Only the fields sent change. `pin` / `admin_pin` replace a PIN; null removes it. admin_pin must differ from pin, and " +
    "wait_for_admin 1 needs an admin PIN (400). Replies show has_pin and has_admin_pin, never a PIN.";
  const applyUpdate = async ({ principal, params, body }: { principal: { accountId: string }; params: { id: string }; body: ConferenceModel.Patch }) => ({
    ok: true as const,
    data: await updateConference(platform.db, platform.secrets, principal.accountId, params.id, body),
  });
  return new Elysia({ name: "routes-conferences", prefix: "/v1/conferences", normalize: false })
    .use(apiModels)
    .use(apiAccess(platform))
    .get(
      "",
      async ({ principal, query }) => ({
        ok: true as const,
        ...(await listConferences(platform.db, principal.accountId, { limit: query.limit ?? DEFAULT_PAGE_SIZE, cursor: query.cursor, q: query.q })),
      }),
      {
        scope: "conferences",
        query: ListQuery,
        response: { 200: ListReply(ConferenceModel.Conference), ...errorReplies(400, 401, 403, 429) },
        detail: {
          tags,
          summary: "List conference rooms",
          description: "In creation order, keyset-paginated (limit, cursor). Filter: q = name prefix, any case.",
        },
      },
    )
    .post(
      "",
      async ({ principal, body, status }) => {
        const { created, room } = await upsertConference(platform.db, platform.secrets, principal.accountId, body);
        return created ? status(201, { ok: true as const, data: room }) : status(200, { ok: true as const, data: room });
      },
      {
        scope: "conferences",
        idempotent: true,
        parse: "json",
        body: ConferenceModel.Upsert,
        response: {
          200: DataReply(ConferenceModel.Conference),
          201: DataReply(ConferenceModel.Conference),
          ...errorReplies(400, 401, 403, 404, 409, 415, 422, 429),
        },
        detail: {
          tags,
          summary: "Create or update a conference room",
          description:
            "Without `id`: creates a room (201; name required). With the `id` of a room of this account: updates it with the fields sent (200). " +
            "An `id` this account does not have: 404. `pin` and `admin_pin` (4–12 digits, strings, different from each other) are stored " +
            "encrypted and never returned; replies show has_pin and has_admin_pin. wait_for_admin 1 needs an admin_pin.",
        },
      },
    )
    .get("/:id", async ({ principal, params }) => ({ ok: true as const, data: await getConference(platform.db, principal.accountId, params.id) }), {
      scope: "conferences",
      params: ItemParams,
      response: { 200: DataReply(ConferenceModel.Conference), ...errorReplies(401, 403, 404, 429) },
      detail: { tags, summary: "Get a conference room" },
    })
    .post("/:id", applyUpdate, { ...update, detail: { tags, summary: "Update a conference room", description: updateDescription } })
    .patch("/:id", applyUpdate, { ...update, detail: { tags, summary: "Update a conference room (same as POST on the item)", description: updateDescription } })
    .delete(
      "/:id",
      async ({ principal, params }) => {
        await deleteConference(platform.db, platform.secrets, principal.accountId, params.id);
        return { ok: true as const };
      },
      {
        scope: "conferences",
        idempotent: true,
        params: ItemParams,
        response: { 200: OkReply, ...errorReplies(401, 403, 404, 409, 422, 429) },
        detail: {
          tags,
          summary: "Delete a conference room",
          description: "Removes the room and its PINs. 409 with used_by while a number, extension or other route still points to it.",
        },
      },
    );
}
