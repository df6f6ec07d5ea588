/**
 * The webhooks in the OpenAPI document: each event's `data` schema as a component
 * (`EventData_call_ended`, …) and, under `x-webhooks` (OpenAPI 3.1's `webhooks`), the request we POST
 * to a subscriber for it: its headers and its body { event, account_id, data, ts }.
 */
import { EVENT_NAMES, EventData, SAMPLE_ACCOUNT_ID, eventCatalog, type EventName } from "./event-catalog.ts";

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

/** The component name of an event's `data` schema. */
export const eventDataSchemaName = (name: EventName) => `EventData_${name.replace(/\./g, "_")}`;

const header = (name: string, description: string, required: boolean): Json => ({ name, in: "header", required, description, schema: { type: "string" } });

const HEADERS: Json[] = [
  header("x-service-event", "The event's name.", true),
  header("x-service-event-id", "The event's id (evt_…), the same in every subscription's delivery of it: deduplicate on it across subscriptions (a secret being rotated).", true),
  header("x-service-signature", "sha256=<hex HMAC-SHA256 of the raw body, keyed by the subscription's secret>; sent when the subscription has a secret.", false),
  header("webhook-id", "The delivery's id (whd_…), the same on every attempt: deduplicate on it (Standard Webhooks).", true),
  header("webhook-timestamp", "Epoch seconds of this attempt (Standard Webhooks); refuse old ones to stop replays.", true),
  header("webhook-signature", "v1,<base64 HMAC-SHA256 of `{webhook-id}.{webhook-timestamp}.{body}`> (Standard Webhooks); sent with a secret.", false),
];

/** Component schemas and `x-webhooks` for the document (the schemas are JSON Schema: TypeBox's). */
export function eventDocument(): { schemas: Record<string, Json>; webhooks: Record<string, Json> } {
  const schemas: Record<string, Json> = {};
  const webhooks: Record<string, Json> = {};
  const described = new Map(eventCatalog().map((e) => [e.name, e]));
  for (const name of EVENT_NAMES) {
    const schemaName = eventDataSchemaName(name);
    schemas[schemaName] = JSON.parse(JSON.stringify(EventData[name])) as Json;
    const entry = described.get(name)!;
    webhooks[name] = {
      post: {
        summary: entry.description,
        description:
          "POSTed to every active subscription that receives this event. Any 2xx is delivered; 429 and 5xx (and network errors, " +
          "5 s timeouts) are tried again after 0.5 s and 2 s (3 attempts in all); any other status fails at once. Redirects are not followed.",
        operationId: `webhook_${name.replace(/\./g, "_")}`,
        tags: ["Webhooks"],
        security: [],
        parameters: HEADERS,
        requestBody: {
          required: true,
          content: {
            "application/json": {
              schema: {
                type: "object",
                additionalProperties: false,
                required: ["event", "account_id", "data", "ts"],
                properties: {
                  event: { type: "string", enum: [name] },
                  account_id: { type: "string", description: "acc_… the event belongs to.", example: SAMPLE_ACCOUNT_ID },
                  data: { $ref: `#/components/schemas/${schemaName}` },
                  ts: { type: "integer", minimum: 0, description: "When it happened, epoch ms." },
                },
              },
              example: entry.sample as unknown as Json,
            },
          },
        },
        responses: { "200": { description: "Delivered (any 2xx)." } },
      },
    };
  }
  return { schemas, webhooks };
}
