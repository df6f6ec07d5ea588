/** GET, POST /v1/ring-groups; GET, POST, PATCH, DELETE /v1/ring-groups/{id}. */
import { Elysia, t } from "elysia";
import { Type as T } from "@sinclair/typebox";
import type { Platform } from "../../core/platform.ts";
import { RingGroupModel } from "../../core/ring-groups/ring-groups.model.ts";
import { createRingGroup, getRingGroup, listRingGroupPage, patchRingGroup, removeRingGroup } from "../../core/ring-groups/ring-groups.service.ts";
import { DEFAULT_PAGE_SIZE } from "../../core/pagination/pagination.ts";
import { PageQuery } from "../../http/page-query.ts";
import { apiModels } from "../../http/api-models.ts";
import { DataReply, ListReply, OkReply, errorReplies } from "../../http/reply-models.ts";
import { apiAccess } from "../plugins/api-access.ts";

const ListQuery = t.Object(
  {
    ...PageQuery.properties,
    q: t.Optional(t.String({ minLength: 1, maxLength: 200, description: "Only ring groups whose name starts with this (any case)." })),
    user_id: t.Optional(t.String({ pattern: "^us_[0-9A-HJKMNP-TV-Z]{26}$", description: "Only ring groups that have this user (us_…) as a member." })),
    device_id: t.Optional(t.String({ pattern: "^dev_[0-9A-HJKMNP-TV-Z]{26}$", description: "Only ring groups that have this device (dev_…) as a member." })),
  },
  { additionalProperties: false },
);

const IdParams = T.Object({ id: T.String({ maxLength: 64, description: "rg_… id." }) });

const WRITE_RULES =
  "Every route target (exit_dest, closed_dest, holiday_dest), the schedule, the music on hold and each member must exist in this account (400 naming the field). " +
  "closed_dest and holiday_dest apply only with a schedule_id; a group cannot route to itself. 409 when the name is taken.";

const UPDATE_DESCRIPTION =
  "Only sent fields change; the result is checked as a whole. members, when sent, replaces the whole member set (send [] to remove everyone); when absent, the members stay. " +
  WRITE_RULES;

export function ringGroupRoutes(platform: Platform) {
  const tags = ["Ring groups"];
  const updateOptions = {
    scope: "ringgroups",
    idempotent: true,
    parse: "json",
    params: IdParams,
    body: RingGroupModel.Patch,
    response: { 200: DataReply(RingGroupModel.RingGroup), ...errorReplies(400, 401, 403, 404, 409, 415, 422, 429) },
  } as const;
  return new Elysia({ name: "routes-ring-groups", prefix: "/v1/ring-groups", normalize: false })
    .use(apiModels)
    .use(apiAccess(platform))
    .get(
      "",
      async ({ principal, query }) =>
        ({
          ok: true as const,
          ...(await listRingGroupPage(platform.db, principal.accountId, {
            limit: query.limit ?? DEFAULT_PAGE_SIZE,
            cursor: query.cursor,
            q: query.q,
            user_id: query.user_id,
            device_id: query.device_id,
          })),
        }),
      {
        scope: "ringgroups",
        query: ListQuery,
        response: { 200: ListReply(RingGroupModel.RingGroupSummary), ...errorReplies(400, 401, 403, 429) },
        detail: {
          tags,
          summary: "List ring groups",
          description:
            "In creation order, keyset-paginated (limit, cursor). Filters: q = name prefix (any case); user_id / device_id = groups with that member. " +
            "Items carry member_count, not the members: GET a group for them.",
        },
      },
    )
    .post(
      "",
      async ({ principal, body, status }) => status(201, { ok: true as const, data: await createRingGroup(platform.db, principal.accountId, body) }),
      {
        scope: "ringgroups",
        idempotent: true,
        parse: "json",
        body: RingGroupModel.Create,
        response: { 201: DataReply(RingGroupModel.RingGroup), ...errorReplies(400, 401, 403, 409, 415, 422, 429) },
        detail: {
          tags,
          summary: "Create a ring group",
          description: `Defaults: strategy ring_all, ring_timeout_sec 20, no members. Members ring in the order sent. ${WRITE_RULES}`,
        },
      },
    )
    .get("/:id", async ({ principal, params }) => ({ ok: true as const, data: await getRingGroup(platform.db, principal.accountId, params.id) }), {
      scope: "ringgroups",
      params: IdParams,
      response: { 200: DataReply(RingGroupModel.RingGroup), ...errorReplies(401, 403, 404, 429) },
      detail: { tags, summary: "A ring group with its members" },
    })
    .patch(
      "/:id",
      async ({ principal, params, body }) => ({ ok: true as const, data: await patchRingGroup(platform.db, principal.accountId, params.id, body) }),
      { ...updateOptions, detail: { tags, summary: "Update a ring group", description: UPDATE_DESCRIPTION } },
    )
    .post(
      "/:id",
      async ({ principal, params, body }) => ({ ok: true as const, data: await patchRingGroup(platform.db, principal.accountId, params.id, body) }),
      { ...updateOptions, detail: { tags, summary: "Update a ring group (same as PATCH)", description: UPDATE_DESCRIPTION } },
    )
    .delete(
      "/:id",
      async ({ principal, params }) => {
        await removeRingGroup(platform.db, principal.accountId, params.id);
        return { ok: true as const };
      },
      {
        scope: "ringgroups",
        idempotent: true,
        params: IdParams,
        response: { 200: OkReply, ...errorReplies(401, 403, 404, 409, 422, 429) },
        detail: {
          tags,
          summary: "Delete a ring group and its members",
          description: "409 with used_by when a number, extension, queue, another ring group or the account's DID default still routes to it.",
        },
      },
    );
}
