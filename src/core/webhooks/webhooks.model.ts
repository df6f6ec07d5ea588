/** TypeBox models of webhook subscriptions and the event catalog. */
import { Type as T, type Static } from "@sinclair/typebox";
import { t } from "elysia";
import { Flag, Nullable } from "../validation/fields.ts";
import { PageQuery } from "../../http/page-query.ts";
import { EVENT_NAMES } from "./event-catalog.ts";
import { MAX_WEBHOOK_URL_LENGTH } from "./url-safety.ts";

/** Most event names one subscription lists (the catalog is smaller; this only bounds the request). */
export const MAX_EVENTS_PER_WEBHOOK = 64;

export namespace WebhookModel {
  export const Status = T.Union([T.Literal("active"), T.Literal("disabled")], {
    description: "active: events are delivered; disabled: delivery skips the subscription.",
  });
  export type Status = Static<typeof Status>;

  /** One subscription as replies show it: never the secret, never its ref. */
  export const Webhook = T.Object(
    {
      id: T.String({ description: "wh_… id." }),
      url: T.String({ description: "The https:// URL events are POSTed to." }),
      events: T.Array(T.String(), { description: "Event names the subscription receives, or [\"*\"] for every event." }),
      description: Nullable(T.String()),
      status: Status,
      has_secret: Flag("1 when deliveries are signed (x-service-signature); always 1 for subscriptions made through the API."),
      created_at: T.Integer({ description: "Epoch seconds." }),
      updated_at: T.Integer({ description: "Epoch seconds." }),
    },
    { additionalProperties: false },
  );
  export type Webhook = Static<typeof Webhook>;

  /** The create reply: the subscription, plus the generated secret once when the request sent none. */
  export const Created = T.Object(
    {
      ...Webhook.properties,
      secret: T.Optional(
        T.String({ description: "Present only when the request sent no secret: the generated signing secret (whsec_…). Shown this once; store it." }),
      ),
    },
    { additionalProperties: false },
  );
  export type Created = Static<typeof Created>;

  /** POST /v1/webhooks. */
  export const Create = T.Object(
    {
      url: T.String({ minLength: 1, maxLength: MAX_WEBHOOK_URL_LENGTH, description: "Required; https:// only, no user:password, a host that resolves to public addresses." }),
      events: T.Optional(
        T.Union(
          [
            T.String({ minLength: 1, maxLength: 2000, description: "Comma-separated event names, or * for all." }),
            T.Array(T.String({ minLength: 1, maxLength: 64 }), { minItems: 1, maxItems: MAX_EVENTS_PER_WEBHOOK, description: "Event names, or [\"*\"]." }),
          ],
          { description: `Events to receive (default *): ${EVENT_NAMES.join(", ")}. See GET /v1/webhooks/events.` },
        ),
      ),
      secret: T.Optional(
        T.String({ minLength: 16, maxLength: 256, description: "HMAC-SHA256 signing secret, 16–256 characters; omitted = one is generated and returned once." }),
      ),
      description: T.Optional(Nullable(T.String({ maxLength: 500 }))),
    },
    { additionalProperties: false },
  );
  export type Create = Static<typeof Create>;

  /** DELETE /v1/webhooks body (SPEC.md section 4). */
  export const Remove = T.Object({ id: T.String({ minLength: 1, maxLength: 64, description: "wh_… id." }) }, { additionalProperties: false });
  export type Remove = Static<typeof Remove>;

  /** GET /v1/webhooks query. */
  export const ListQuery = t.Object(
    {
      ...PageQuery.properties,
      event: t.Optional(t.String({ minLength: 1, maxLength: 64, description: "Only subscriptions that receive this event (those subscribed to * included)." })),
    },
    { additionalProperties: false },
  );

  /** One catalog entry. `data` is described per event in the docs; here it is any object. */
  export const CatalogEntry = T.Object(
    {
      name: T.String({ description: "The event name to subscribe to." }),
      description: T.String({ description: "What fires it." }),
      sample: T.Object(
        {
          event: T.String(),
          account_id: T.String(),
          data: T.Record(T.String(), T.Unknown(), { description: "The event's payload; its fields depend on the event." }),
          ts: T.Integer({ description: "Epoch milliseconds when the event happened." }),
        },
        { additionalProperties: false, description: "A full delivery body as POSTed: { event, account_id, data, ts }." },
      ),
    },
    { additionalProperties: false },
  );
}
