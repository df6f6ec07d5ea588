/**
 * /v1/queues: ACD queues with their members (agents) and in-queue DTMF options. One queue's reply
 * always carries its members and options; the list carries rolling KPIs instead.
 */
import { Elysia, t } from "elysia";
import { Type as T } from "@sinclair/typebox";
import type { Platform } from "../../core/platform.ts";
import { QueueModel } from "../../core/queues/queues.model.ts";
import {
  createQueue,
  deleteQueue,
  getQueue,
  listQueueMembers,
  listQueues,
  parseDigitParam,
  removeQueueMember,
  removeQueueOption,
  updateQueue,
  upsertQueueMember,
  upsertQueueOption,
} from "../../core/queues/queues.service.ts";
import { DEFAULT_KPI_WINDOW_SEC } from "../../core/queues/queue-kpis.ts";
import { validationFailed } from "../../core/errors/app-error.ts";
import { DEFAULT_PAGE_SIZE } from "../../core/pagination/pagination.ts";
import { EpochSecQuery, PageQuery } from "../../http/page-query.ts";
import { apiModels } from "../../http/api-models.ts";
import { DataReply, ListReply, OkReply, errorReplies } from "../../http/reply-models.ts";
import { apiAccess } from "../plugins/api-access.ts";

const QueueListQuery = t.Object(
  {
    ...PageQuery.properties,
    q: t.Optional(t.String({ minLength: 1, maxLength: 200, description: "Only queues whose name starts with this (case-insensitive)." })),
    user_id: t.Optional(t.String({ pattern: "^us_[0-9A-HJKMNP-TV-Z]{26}$", description: "Only queues this user (us_…) is a member of." })),
    since: t.Optional(EpochSecQuery(`Start of the KPI window, epoch seconds; default ${DEFAULT_KPI_WINDOW_SEC / 3600} hours ago.`)),
  },
  { additionalProperties: false },
);

const QueueParams = T.Object({ id: T.String({ maxLength: 64, description: "q_… id." }) });
const MemberParams = T.Object({ id: T.String({ maxLength: 64 }), userId: T.String({ maxLength: 64, description: "us_… id of the member." }) });
const OptionParams = T.Object({
  id: T.String({ maxLength: 64 }),
  digit: T.String({ maxLength: 16, description: "The key: 0-9, %2A or star for *, %23 or hash for #." }),
});

/** `{ ok: true, data: [...] }` without a cursor: a queue's members come in one piece. */
const MemberList = T.Object({ ok: T.Literal(true), data: T.Array(QueueModel.Member) });

const WRITE_ERRORS = [400, 401, 403, 404, 409, 415, 422, 429] as const;

export function queueRoutes(platform: Platform) {
  const tags = ["Queues"];
  const update = async (accountId: string, id: string, body: QueueModel.Update) => ({
    ok: true as const,
    data: await updateQueue(platform.db, accountId, id, body),
  });
  const updateDoc = {
    tags,
    summary: "Update a queue",
    description:
      "Only sent fields change; the queue is then checked as a whole (the same rules as create). Sending a slot's *_kind as null or hangup without its *_id clears the id too. POST on the item does the same as PATCH.",
  };
  return new Elysia({ name: "routes-queues", prefix: "/v1/queues", normalize: false })
    .use(apiModels)
    .use(apiAccess(platform))
    .get(
      "",
      async ({ principal, query }) => ({
        ok: true as const,
        ...(await listQueues(platform.db, principal.accountId, {
          limit: query.limit ?? DEFAULT_PAGE_SIZE,
          cursor: query.cursor,
          q: query.q,
          userId: query.user_id,
          since: query.since,
        })),
      }),
      {
        scope: "queues",
        query: QueueListQuery,
        response: { 200: ListReply(QueueModel.QueueWithKpis), ...errorReplies(400, 401, 403, 429) },
        detail: {
          tags,
          summary: "List queues with rolling KPIs",
          description:
            "Keyset-paginated in creation order. Filters: q (name prefix, case-insensitive), user_id (queues the user is a member of). " +
            "Each queue carries kpis for calls since `since` (default: the last 24 hours). KPIs come from call records: until the call path writes them, counts are 0 and averages null.",
        },
      },
    )
    .post(
      "",
      async ({ principal, body, status }) => status(201, { ok: true as const, data: await createQueue(platform.db, principal.accountId, body) }),
      {
        scope: "queues",
        idempotent: true,
        parse: "json",
        body: QueueModel.Create,
        response: { 201: DataReply(QueueModel.QueueDetail), ...errorReplies(...WRITE_ERRORS) },
        detail: {
          tags,
          summary: "Create a queue",
          description:
            "name is required and unique in the account (409 field name). Rules (400 with the field's path): every *_dest target exists in this account and is not this queue; " +
            "queue_full_dest needs max_queued; ewt_dest needs ewt_threshold_sec; closed_dest and holiday_dest need schedule_id; moh_mode file needs moh_media_id; " +
            "moh_media_id and schedule_id exist in this account. max_wait_sec without timeout_dest is allowed: the call is hung up when the wait runs out.",
        },
      },
    )
    .get("/:id", async ({ principal, params }) => ({ ok: true as const, data: await getQueue(platform.db, principal.accountId, params.id) }), {
      scope: "queues",
      params: QueueParams,
      response: { 200: DataReply(QueueModel.QueueDetail), ...errorReplies(401, 403, 404, 429) },
      detail: { tags, summary: "One queue with its members and options", description: "Members by tier_level, then position; options in keypad order (0-9, *, #)." },
    })
    .patch("/:id", async ({ principal, params, body }) => update(principal.accountId, params.id, body), {
      scope: "queues",
      idempotent: true,
      parse: "json",
      params: QueueParams,
      body: QueueModel.Update,
      response: { 200: DataReply(QueueModel.QueueDetail), ...errorReplies(...WRITE_ERRORS) },
      detail: updateDoc,
    })
    .post("/:id", async ({ principal, params, body }) => update(principal.accountId, params.id, body), {
      scope: "queues",
      idempotent: true,
      parse: "json",
      params: QueueParams,
      body: QueueModel.Update,
      response: { 200: DataReply(QueueModel.QueueDetail), ...errorReplies(...WRITE_ERRORS) },
      detail: { ...updateDoc, summary: "Update a queue (same as PATCH)" },
    })
    .delete(
      "/:id",
      async ({ principal, params }) => {
        await deleteQueue(platform.db, platform.secrets, principal.accountId, params.id);
        return { ok: true as const };
      },
      {
        scope: "queues",
        idempotent: true,
        params: QueueParams,
        response: { 200: OkReply, ...errorReplies(401, 403, 404, 409, 422, 429) },
        detail: {
          tags,
          summary: "Delete a queue",
          description: "Deletes the queue with its members and options. 409 with used_by while anything (a number, extension, another queue, …) still routes to it.",
        },
      },
    )
    .get(
      "/:id/members",
      async ({ principal, params }) => ({ ok: true as const, data: await listQueueMembers(platform.db, principal.accountId, params.id) }),
      {
        scope: "queues",
        params: QueueParams,
        response: { 200: MemberList, ...errorReplies(401, 403, 404, 429) },
        detail: { tags, summary: "Members of a queue", description: "Every member, by tier_level then position (not paginated)." },
      },
    )
    .post(
      "/:id/members",
      async ({ principal, params, body, status }) => {
        const { member, created } = await upsertQueueMember(platform.db, principal.accountId, params.id, body);
        if (created) return status(201, { ok: true as const, data: member });
        return { ok: true as const, data: member };
      },
      {
        scope: "queues",
        idempotent: true,
        parse: "json",
        params: QueueParams,
        body: QueueModel.MemberUpsert,
        response: { 200: DataReply(QueueModel.Member), 201: DataReply(QueueModel.Member), ...errorReplies(...WRITE_ERRORS) },
        detail: {
          tags,
          summary: "Add or update one member",
          description:
            "201 when the user is added (unsent fields take their defaults), 200 when an existing member's sent fields change. The user must be an agent (is_agent 1) of this account: 400 /user_id otherwise.",
        },
      },
    )
    .delete(
      "/:id/members/:userId",
      async ({ principal, params }) => {
        await removeQueueMember(platform.db, principal.accountId, params.id, params.userId);
        return { ok: true as const };
      },
      {
        scope: "queues",
        idempotent: true,
        params: MemberParams,
        response: { 200: OkReply, ...errorReplies(401, 403, 404, 409, 422, 429) },
        detail: { tags, summary: "Remove a member", description: "404 when the user is not a member of the queue." },
      },
    )
    .post(
      "/:id/options",
      async ({ principal, params, body, status }) => {
        const { option, created } = await upsertQueueOption(platform.db, platform.secrets, principal.accountId, params.id, body);
        if (created) return status(201, { ok: true as const, data: option });
        return { ok: true as const, data: option };
      },
      {
        scope: "queues",
        idempotent: true,
        parse: "json",
        params: QueueParams,
        body: QueueModel.OptionUpsert,
        response: { 200: DataReply(QueueModel.Option), 201: DataReply(QueueModel.Option), ...errorReplies(...WRITE_ERRORS) },
        detail: {
          tags,
          summary: "Set the option of one key",
          description:
            "201 when the key had no option, 200 when its option is replaced (every field; unsent ones take their defaults). route and deflect need a destination; webhook needs an https webhook_url; hangup takes neither. " +
            "stay_in_queue 1 is refused for deflect and hangup. webhook_secret is write-only (replies show has_webhook_secret): omitted, a webhook option keeps its secret; null removes it.",
        },
      },
    )
    .delete(
      "/:id/options/:digit",
      async ({ principal, params }) => {
        const digit = parseDigitParam(params.digit);
        if (digit === null) throw validationFailed([{ path: "/params/digit", message: "One key: 0-9, %2A or star for *, %23 or hash for #." }]);
        await removeQueueOption(platform.db, platform.secrets, principal.accountId, params.id, digit);
        return { ok: true as const };
      },
      {
        scope: "queues",
        idempotent: true,
        params: OptionParams,
        response: { 200: OkReply, ...errorReplies(400, 401, 403, 404, 409, 422, 429) },
        detail: { tags, summary: "Remove the option of one key", description: "The key in the path: 0-9, * as %2A or star, # as %23 or hash." },
      },
    );
}
