/** GET, POST /v1/schedules; GET, POST, PATCH, DELETE /v1/schedules/{id}. */
import { Elysia, t } from "elysia";
import { Type as T } from "@sinclair/typebox";
import type { Platform } from "../../core/platform.ts";
import { ScheduleModel } from "../../core/schedules/schedules.model.ts";
import { createSchedule, getSchedule, listSchedulePage, patchSchedule, removeSchedule } from "../../core/schedules/schedules.service.ts";
import { DEFAULT_PAGE_SIZE } from "../../core/pagination/pagination.ts";
import { PageQuery } from "../../http/page-query.ts";
import { apiModels } from "../../http/api-models.ts";
import { DataReply, ListReply, OkReply, errorReplies } from "../../http/reply-models.ts";
import { apiAccess } from "../plugins/api-access.ts";

const ListQuery = t.Object(
  {
    ...PageQuery.properties,
    q: t.Optional(t.String({ minLength: 1, maxLength: 200, description: "Only schedules whose name starts with this (any case)." })),
  },
  { additionalProperties: false },
);

const IdParams = T.Object({ id: T.String({ maxLength: 64, description: "sch_… id." }) });

const UPDATE_DESCRIPTION =
  "Only sent fields change. rules, when sent, replaces the whole rule set (send [] to remove every rule); " +
  "when absent, the rules stay. A bad rule is a 400 naming it (/rules/3/end_time) and nothing changes. 409 when the name is taken.";

export function scheduleRoutes(platform: Platform) {
  const tags = ["Schedules"];
  const updateOptions = {
    scope: "schedules",
    idempotent: true,
    parse: "json",
    params: IdParams,
    body: ScheduleModel.Patch,
    response: { 200: DataReply(ScheduleModel.Schedule), ...errorReplies(400, 401, 403, 404, 409, 415, 422, 429) },
  } as const;
  return new Elysia({ name: "routes-schedules", prefix: "/v1/schedules", normalize: false })
    .use(apiModels)
    .use(apiAccess(platform))
    .get(
      "",
      async ({ principal, query }) =>
        ({
          ok: true as const,
          ...(await listSchedulePage(platform.db, principal.accountId, { limit: query.limit ?? DEFAULT_PAGE_SIZE, cursor: query.cursor, q: query.q })),
        }),
      {
        scope: "schedules",
        query: ListQuery,
        response: { 200: ListReply(ScheduleModel.ScheduleSummary), ...errorReplies(400, 401, 403, 429) },
        detail: {
          tags,
          summary: "List schedules",
          description: "In creation order, keyset-paginated (limit, cursor). Filter: q = name prefix (any case). Items carry rule_count, not the rules: GET a schedule for them.",
        },
      },
    )
    .post(
      "",
      async ({ principal, body, status }) => status(201, { ok: true as const, data: await createSchedule(platform.db, principal.accountId, body) }),
      {
        scope: "schedules",
        idempotent: true,
        parse: "json",
        body: ScheduleModel.Create,
        response: { 201: DataReply(ScheduleModel.Schedule), ...errorReplies(400, 401, 403, 409, 415, 422, 429) },
        detail: {
          tags,
          summary: "Create a schedule",
          description: "name is unique per account, whatever the case (409 with field name). timezone null or absent = the account's time zone. rules are kept in the order sent.",
        },
      },
    )
    .get("/:id", async ({ principal, params }) => ({ ok: true as const, data: await getSchedule(platform.db, principal.accountId, params.id) }), {
      scope: "schedules",
      params: IdParams,
      response: { 200: DataReply(ScheduleModel.Schedule), ...errorReplies(401, 403, 404, 429) },
      detail: { tags, summary: "A schedule with its rules" },
    })
    .patch(
      "/:id",
      async ({ principal, params, body }) => ({ ok: true as const, data: await patchSchedule(platform.db, principal.accountId, params.id, body) }),
      { ...updateOptions, detail: { tags, summary: "Update a schedule", description: UPDATE_DESCRIPTION } },
    )
    .post(
      "/:id",
      async ({ principal, params, body }) => ({ ok: true as const, data: await patchSchedule(platform.db, principal.accountId, params.id, body) }),
      { ...updateOptions, detail: { tags, summary: "Update a schedule (same as PATCH)", description: UPDATE_DESCRIPTION } },
    )
    .delete(
      "/:id",
      async ({ principal, params }) => {
        await removeSchedule(platform.db, principal.accountId, params.id);
        return { ok: true as const };
      },
      {
        scope: "schedules",
        idempotent: true,
        params: IdParams,
        response: { 200: OkReply, ...errorReplies(401, 403, 404, 409, 422, 429) },
        detail: {
          tags,
          summary: "Delete a schedule and its rules",
          description: "409 with used_by when a number, extension, ring group or queue still uses it: point those elsewhere first.",
        },
      },
    );
}
