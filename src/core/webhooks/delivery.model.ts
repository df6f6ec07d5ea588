/** TypeBox models of the webhook delivery log and the test endpoint. */
import { Type as T, type Static } from "@sinclair/typebox";
import { t } from "elysia";
import { IdOf, Nullable } from "../validation/fields.ts";
import { PageQuery, FlagQuery } from "../../http/page-query.ts";

export namespace DeliveryModel {
  export const Status = T.Union([T.Literal("pending"), T.Literal("retrying"), T.Literal("delivered"), T.Literal("failed")], {
    description:
      "pending: not attempted yet; retrying: an attempt failed with a network error, 429 or 5xx and another is scheduled; " +
      "delivered: a 2xx reply; failed: any other reply (3xx, 4xx), three failed attempts, or the subscription is gone or disabled.",
  });
  export type Status = Static<typeof Status>;

  /** One (event, subscription) delivery and the outcome of its attempts. */
  export const Delivery = T.Object(
    {
      id: T.String({ description: "whd_… id; also the webhook-id header of every attempt (stable across retries)." }),
      webhook_id: T.String({ description: "wh_… of the subscription." }),
      event: T.String({ description: "Event name." }),
      event_id: IdOf("evt", "Id of the event (evt_…): the id the realtime stream gives it; the test endpoint returns it."),
      status: Status,
      attempts: T.Integer({ minimum: 0, maximum: 3, description: "Attempts made (at most 3)." }),
      last_status: Nullable(T.Integer({ description: "HTTP status of the last attempt; null when it got no reply (network error, timeout)." })),
      last_error: Nullable(T.String({ description: "Why the last attempt failed, shortly; null once delivered." })),
      created_at: T.Integer({ description: "Epoch seconds: when the event was emitted." }),
      updated_at: T.Integer({ description: "Epoch seconds: the last attempt (or creation)." }),
      delivered_at: Nullable(T.Integer({ description: "Epoch seconds of the successful attempt." })),
    },
    { additionalProperties: false },
  );
  export type Delivery = Static<typeof Delivery>;

  /** GET /v1/webhooks/deliveries query. */
  export const ListQuery = t.Object(
    {
      ...PageQuery.properties,
      webhook_id: t.Optional(t.String({ minLength: 1, maxLength: 64, description: "Only deliveries to this subscription (wh_…)." })),
      event: t.Optional(t.String({ minLength: 1, maxLength: 64, description: "Only deliveries of this event name." })),
      failed: t.Optional(FlagQuery("1: only failed deliveries; 0: all but the failed ones.")),
    },
    { additionalProperties: false },
  );

  /** POST /v1/webhooks/test body (optional). */
  export const Test = T.Object(
    {
      webhook_id: T.Optional(
        T.String({
          minLength: 1,
          maxLength: 64,
          description:
            "Send the test to this subscription only (wh_…), whatever events it subscribes to. Omitted: to every active subscription receiving test (its events name test, or *).",
        }),
      ),
    },
    { additionalProperties: false },
  );
  export type Test = Static<typeof Test>;

  export const TestResult = T.Object(
    {
      event_id: IdOf("evt", "Id of the test event (evt_…); its deliveries carry it (GET /v1/webhooks/deliveries)."),
      deliveries: T.Integer({ minimum: 0, description: "Deliveries planned: one per receiving subscription." }),
    },
    { additionalProperties: false },
  );
  export type TestResult = Static<typeof TestResult>;
}
