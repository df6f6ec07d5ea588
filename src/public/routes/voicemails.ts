/** GET, POST /v1/voicemails; GET, POST, PATCH, DELETE /v1/voicemails/{id}. */
import { Elysia, t } from "elysia";
import { Type as T } from "@sinclair/typebox";
import type { Platform } from "../../core/platform.ts";
import { VoicemailModel } from "../../core/voicemail/voicemail.model.ts";
import {
  deleteVoicemail,
  getVoicemail,
  listVoicemails,
  updateVoicemail,
  upsertVoicemail,
} from "../../core/voicemail/voicemail.service.ts";
import { DEFAULT_PAGE_SIZE } from "../../core/pagination/pagination.ts";
import { PageQuery } from "../../http/page-query.ts";
import { apiModels } from "../../http/api-models.ts";
import { DataReply, ListReply, OkReply, errorReplies } from "../../http/reply-models.ts";
import { apiAccess } from "../plugins/api-access.ts";

const ListQuery = t.Object(
  {
    ...PageQuery.properties,
    q: t.Optional(t.String({ minLength: 1, maxLength: 200, description: "Only boxes whose name starts with this text (any case)." })),
  },
  { additionalProperties: false },
);

const ItemParams = T.Object({ id: T.String({ maxLength: 64, description: "vm_… id." }) });

export function voicemailRoutes(platform: Platform) {
  const tags = ["Voicemail"];
  const update = {
    scope: "voicemail",
    idempotent: true,
    parse: "json",
    params: ItemParams,
    body: VoicemailModel.Patch,
    response: { 200: DataReply(VoicemailModel.Voicemail), ...errorReplies(400, 401, 403, 404, 409, 415, 422, 429) },
  } as const;
  const updateDescription =
    "Only the fields sent change. `pin` replaces the PIN; `pin: null` removes it. The reply shows has_pin, never the PIN.";
  const applyUpdate = async ({ principal, params, body }: { principal: { accountId: string }; params: { id: string }; body: VoicemailModel.Patch }) => ({
    ok: true as const,
    data: await updateVoicemail(platform.db, platform.secrets, principal.accountId, params.id, body),
  });
  return new Elysia({ name: "routes-voicemails", prefix: "/v1/voicemails", normalize: false })
    .use(apiModels)
    .use(apiAccess(platform))
    .get(
      "",
      async ({ principal, query }) => ({
        ok: true as const,
        ...(await listVoicemails(platform.db, principal.accountId, { limit: query.limit ?? DEFAULT_PAGE_SIZE, cursor: query.cursor, q: query.q })),
      }),
      {
        scope: "voicemail",
        query: ListQuery,
        response: { 200: ListReply(VoicemailModel.Voicemail), ...errorReplies(400, 401, 403, 429) },
        detail: {
          tags,
          summary: "List voicemail boxes",
          description: "In creation order, keyset-paginated (limit, cursor). Filter: q = name prefix, any case.",
        },
      },
    )
    .post(
      "",
      async ({ principal, body, status }) => {
        const { created, box } = await upsertVoicemail(platform.db, platform.secrets, principal.accountId, body);
        return created ? status(201, { ok: true as const, data: box }) : status(200, { ok: true as const, data: box });
      },
      {
        scope: "voicemail",
        idempotent: true,
        parse: "json",
        body: VoicemailModel.Upsert,
        response: {
          200: DataReply(VoicemailModel.Voicemail),
          201: DataReply(VoicemailModel.Voicemail),
          ...errorReplies(400, 401, 403, 404, 409, 415, 422, 429),
        },
        detail: {
          tags,
          summary: "Create or update a voicemail box",
          description:
            "Without `id`: creates a box (201; name required). With the `id` of a box of this account: updates it with the fields sent (200). " +
            "An `id` this account does not have: 404. `pin` (4–12 digits, a string) is stored encrypted and never returned; replies show has_pin.",
        },
      },
    )
    .get("/:id", async ({ principal, params }) => ({ ok: true as const, data: await getVoicemail(platform.db, principal.accountId, params.id) }), {
      scope: "voicemail",
      params: ItemParams,
      response: { 200: DataReply(VoicemailModel.Voicemail), ...errorReplies(401, 403, 404, 429) },
      detail: { tags, summary: "Get a voicemail box" },
    })
    .post("/:id", applyUpdate, { ...update, detail: { tags, summary: "Update a voicemail box", description: updateDescription } })
    .patch("/:id", applyUpdate, { ...update, detail: { tags, summary: "Update a voicemail box (same as POST on the item)", description: updateDescription } })
    .delete(
      "/:id",
      async ({ principal, params }) => {
        await deleteVoicemail(platform.db, platform.secrets, principal.accountId, params.id);
        return { ok: true as const };
      },
      {
        scope: "voicemail",
        idempotent: true,
        params: ItemParams,
        response: { 200: OkReply, ...errorReplies(401, 403, 404, 409, 422, 429) },
        detail: {
          tags,
          summary: "Delete a voicemail box",
          description: "Removes the box and its PIN. 409 with used_by while a number, extension, user or other route still points to it.",
        },
      },
    );
}
