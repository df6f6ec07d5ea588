/**
 * GET, POST, DELETE /v1/webhooks; DELETE /v1/webhooks/{id}; GET /v1/webhooks/events (the event catalog);
 * POST /v1/webhooks/test; GET /v1/webhooks/deliveries (the delivery log).
 */
import { Elysia } from "elysia";
import { Type as T } from "@sinclair/typebox";
import type { Platform } from "../../core/platform.ts";
import { WebhookModel } from "../../core/webhooks/webhooks.model.ts";
import { MAX_WEBHOOKS_PER_ACCOUNT, createWebhook, deleteWebhook, listWebhooks } from "../../core/webhooks/webhooks.service.ts";
import { eventCatalog } from "../../core/webhooks/event-catalog.ts";
import { DeliveryModel } from "../../core/webhooks/delivery.model.ts";
import { fireTestEvent, listDeliveries } from "../../core/webhooks/delivery.service.ts";
import { DEFAULT_PAGE_SIZE } from "../../core/pagination/pagination.ts";
import { apiModels } from "../../http/api-models.ts";
import { DataReply, ListReply, OkReply, errorReplies } from "../../http/reply-models.ts";
import { apiAccess } from "../plugins/api-access.ts";
import { NoQuery } from "../../http/page-query.ts";
import { optionalBody } from "../../http/optional-body.ts";

const IdParams = T.Object({ id: T.String({ maxLength: 64, description: "wh_… id." }) });

export function webhookRoutes(platform: Platform) {
  const tags = ["Webhooks"];
  return new Elysia({ name: "routes-webhooks", prefix: "/v1/webhooks", normalize: false })
    .use(apiModels)
    .use(apiAccess(platform))
    .get(
      "",
      async ({ principal, query }) =>
        ({ ok: true as const, ...(await listWebhooks(platform.db, principal.accountId, { ...query, limit: query.limit ?? DEFAULT_PAGE_SIZE })) }),
      {
        scope: "webhooks",
        query: WebhookModel.ListQuery,
        response: { 200: ListReply(WebhookModel.Webhook), ...errorReplies(400, 401, 403, 429) },
        detail: {
          tags,
          summary: "List webhook subscriptions (without secrets)",
          description: "In creation order, keyset-paginated. Filter event=<name>: subscriptions that receive it, those on * included.",
        },
      },
    )
    .post(
      "",
      async ({ principal, body, status }) =>
        status(201, { ok: true as const, data: await createWebhook(platform.db, platform.secrets, principal.accountId, body, { allowPrivate: platform.config.webhookAllowPrivate }) }),
      {
        scope: "webhooks",
        idempotent: true,
        parse: "json",
        body: WebhookModel.Create,
        response: { 201: DataReply(WebhookModel.Created), ...errorReplies(400, 401, 403, 409, 413, 415, 422, 429) },
        detail: {
          tags,
          summary: "Subscribe a URL to events",
          description:
            "url must be https://, carry no user:password, and its host must resolve only to public addresses (loopback, private, link-local, " +
            "CGNAT, multicast and unspecified addresses are refused with 400 /url). events: comma-separated names or a JSON array, default *; " +
            "unknown names are a 400 /events. Without secret, one is generated (whsec_…) and returned in this reply only; a secret you send is never echoed " +
            `(not blank, no control characters, at least 16 bytes of key, else 400 /secret). An account has at most ${MAX_WEBHOOKS_PER_ACCOUNT} subscriptions (409 beyond).`,
        },
      },
    )
    .delete(
      "",
      async ({ principal, body }) => {
        await deleteWebhook(platform.db, platform.secrets, principal.accountId, body.id);
        return { ok: true as const };
      },
      {
        scope: "webhooks",
        idempotent: true,
        parse: "json",
        body: WebhookModel.Remove,
        response: { 200: OkReply, ...errorReplies(400, 401, 403, 404, 409, 413, 415, 422, 429) },
        detail: { tags, summary: "Remove a subscription (body { id })", description: "Its signing secret is removed with it. Same as DELETE /v1/webhooks/{id}." },
      },
    )
    .delete(
      "/:id",
      async ({ principal, params }) => {
        await deleteWebhook(platform.db, platform.secrets, principal.accountId, params.id);
        return { ok: true as const };
      },
      {
        scope: "webhooks",
        idempotent: true,
        params: IdParams,
        response: { 200: OkReply, ...errorReplies(400, 401, 403, 404, 409, 422, 429) },
        detail: { tags, summary: "Remove a subscription", description: "Its signing secret is removed with it." },
      },
    )
    .get("/events", () => ({ ok: true as const, data: eventCatalog() }), {
      scope: "webhooks",
      query: NoQuery,
      response: { 200: DataReply(T.Array(WebhookModel.CatalogEntry)), ...errorReplies(400, 401, 403, 429) },
      detail: {
        tags,
        summary: "The event catalog",
        description:
          "Every event a subscription can name, what fires it, and a sample delivery body { event, account_id, data, ts } (ts in epoch milliseconds). " +
          "Deliveries are POSTed with content-type application/json, x-service-event: <event> and x-service-signature: sha256=<hex HMAC of the raw body>.",
      },
    })
    .post(
      "/test",
      async ({ principal, body, status }) =>
        status(202, { ok: true as const, data: await fireTestEvent(platform.events, principal.accountId, body) }),
      {
        scope: "webhooks",
        idempotent: true,
        ...optionalBody(DeliveryModel.Test),
        response: { 202: DataReply(DeliveryModel.TestResult), ...errorReplies(400, 401, 403, 404, 409, 413, 415, 422, 429) },
        detail: {
          tags,
          summary: "Fire a test event",
          description:
            "Emits a `test` event { message, webhook_id, ts } for this account. Without a body (or with {}), it is delivered to every active " +
            "subscription receiving test (events naming test, or *); with { webhook_id }, to that subscription only, whatever its events " +
            "(404 when it is not this account's, 409 when disabled). Replies 202 at once with the event id and how many deliveries were planned; " +
            "follow them in GET /v1/webhooks/deliveries.",
        },
      },
    )
    .get(
      "/deliveries",
      async ({ principal, query }) =>
        ({ ok: true as const, ...(await listDeliveries(platform.db, platform.events.ids, principal.accountId, { ...query, limit: query.limit ?? DEFAULT_PAGE_SIZE })) }),
      {
        scope: "webhooks",
        query: DeliveryModel.ListQuery,
        response: { 200: ListReply(DeliveryModel.Delivery), ...errorReplies(400, 401, 403, 429) },
        detail: {
          tags,
          summary: "The delivery log",
          description:
            "One entry per (event, subscription), newest first, keyset-paginated. Filters: webhook_id, event, failed=1 (only failed), failed=0 (all but the failed). " +
            "status: pending, retrying, delivered, failed; attempts (at most 3), last_status (HTTP code of the last attempt), last_error. " +
            "Finished entries (delivered or failed) are kept 7 days; those still to be attempted stay until they finish.",
        },
      },
    );
}
