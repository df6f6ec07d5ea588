/**
 * Webhook delivery use cases: planning deliveries in the emitting transaction (the bus planner),
 * firing a test event, and reading the delivery log. The worker that POSTs is delivery-worker.ts.
 */
import type { DbOrTx, Tx } from "../db/db.ts";
import type { ConfigCache } from "../cache/config-cache.ts";
import { conflict, notFound, validationFailed } from "../errors/app-error.ts";
import type { EventBus, EventPlanner, PlatformEvent } from "../events/bus.ts";
import type { EventIdCodec } from "../events/event-ids.ts";
import { newId } from "../ids/ids.ts";
import { decodeCursor, toPage } from "../pagination/pagination.ts";
import { isEventName } from "./event-catalog.ts";
import type { DeliveryModel } from "./delivery.model.ts";
import type { WebhookDeliveryRow } from "./delivery.schema.ts";
import { activeSubscriptions, countDeliveriesOfEvent, deliveryPlanSql, insertDeliveries, listDeliveryRows, type NewDeliveryRow } from "./delivery.store.ts";
import { findWebhookStatus } from "./webhooks.store.ts";

/**
 * The bus planner: one `webhook_delivery` row per active subscription that receives the event (it
 * names the event or `*`), in the transaction that emits it; the events of one emit are planned
 * together (one read of their accounts' subscriptions, one insert). A `test` event naming a
 * `webhook_id` goes to that subscription only (if active), whatever its event list.
 */
/** Events for which deliveries were planned (the worker wakes for those only; others' commits cost it nothing). */
const withDeliveries = new WeakSet<PlatformEvent>();

/** Whether the planner planned deliveries of this (committed) event in this process. */
export function hasPlannedDeliveries(event: PlatformEvent): boolean {
  return withDeliveries.has(event);
}

export const planWebhookDeliveries: EventPlanner = webhookDeliveryPlanner();

/**
 * The planner, reading the accounts' subscriptions through `cache` when given (the platform's: one
 * statement less per emitting transaction; a subscription added, changed or removed drops its
 * account's entry).
 */
export function webhookDeliveryPlanner(cache?: ConfigCache): EventPlanner {
  return {
    // The subscriptions are read beside the events' insert (they need only the accounts).
    read: (tx: Tx, accountIds: string[]) => activeSubscriptions(tx, accountIds, cache),
    plan: (tx: Tx, events: PlatformEvent[], read: unknown) => planDeliveries(tx, events, read as Subscriptions),
    statement: {
      idPrefix: "whd",
      ...deliveryPlanSql,
      markPlanned(events) {
        for (const event of events) withDeliveries.add(event);
      },
    },
  };
}

type Subscriptions = Awaited<ReturnType<typeof activeSubscriptions>>;

async function planDeliveries(tx: Tx, events: PlatformEvent[], subscriptions: Subscriptions): Promise<void> {
  if (!subscriptions.length) return;
  const rows: NewDeliveryRow[] = [];
  for (const event of events) {
    const target = event.event === "test" && typeof event.data.webhook_id === "string" ? event.data.webhook_id : null;
    // The event's second: the deliveries log shows the event's public id from it (event-ids.ts).
    const now = Math.floor(event.ts / 1000);
    for (const s of subscriptions) {
      if (s.account_id !== event.account_id) continue;
      if (target !== null ? s.id !== target : !s.events.includes(event.event) && !s.events.includes("*")) continue;
      rows.push({
        account_id: event.account_id,
        id: newId("whd"),
        webhook_id: s.id,
        event_id: event.id,
        event: event.event,
        status: "pending",
        attempts: 0,
        created_at: now,
        updated_at: now,
      });
      withDeliveries.add(event);
    }
  }
  await insertDeliveries(tx, rows);
}

/**
 * Emits a `test` event for the account: to one subscription (`webhook_id`, 404 when it is not
 * this account's, 409 when disabled) or to every active subscription that receives `test`.
 */
export async function fireTestEvent(bus: EventBus, accountId: string, input: DeliveryModel.Test): Promise<DeliveryModel.TestResult> {
  const webhookId = input.webhook_id ?? null;
  return bus.transaction(async (tx, emit) => {
    if (webhookId !== null) {
      const status = await findWebhookStatus(tx, accountId, webhookId);
      if (status === null) throw notFound("webhook");
      if (status !== "active") throw conflict("This subscription is disabled; it receives no events.");
    }
    const ts = Date.now();
    const event = await emit(accountId, "test", { message: "This is a test event from Parley.", webhook_id: webhookId, ts }, ts);
    return { event_id: bus.ids.encode(event.id, event.ts), deliveries: await countDeliveriesOfEvent(tx, accountId, event.id) };
  });
}

function toDelivery(row: WebhookDeliveryRow, ids: EventIdCodec): DeliveryModel.Delivery {
  return {
    id: row.id,
    webhook_id: row.webhook_id,
    event: row.event,
    // created_at is the event's second (the planner sets it from the event's ts), as in its id.
    event_id: ids.encode(row.event_id, row.created_at * 1000),
    status: row.status as DeliveryModel.Status,
    attempts: row.attempts,
    last_status: row.last_status,
    last_error: row.last_error,
    created_at: row.created_at,
    updated_at: row.updated_at,
    delivered_at: row.delivered_at,
  };
}

/** The account's delivery log, newest first, keyset-paginated, with the log's filters. */
export async function listDeliveries(
  db: DbOrTx,
  ids: EventIdCodec,
  accountId: string,
  query: { limit: number; cursor?: string; webhook_id?: string; event?: string; failed?: "0" | "1" },
): Promise<{ data: DeliveryModel.Delivery[]; next_cursor?: string }> {
  if (query.event !== undefined && !isEventName(query.event)) {
    throw validationFailed([{ path: "/query/event", message: `Unknown event: ${query.event}. See GET /v1/webhooks/events.` }]);
  }
  const filter = { webhookId: query.webhook_id, event: query.event, failed: query.failed === undefined ? undefined : query.failed === "1" };
  const rows = await listDeliveryRows(db, accountId, filter, decodeCursor(query.cursor, "whd"), query.limit);
  return toPage(rows, query.limit, (row) => toDelivery(row, ids));
}
