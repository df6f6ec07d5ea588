/**
 * The one event bus. Producers emit inside the transaction of the change that caused the event
 * (outbox): the event row (and its webhook deliveries) commit or roll back with that change, so a
 * crash can neither lose nor invent an event. After commit the bus publishes the events on the live
 * store's pub/sub (every instance's WebSocket hubs hear them) and wakes local listeners (the delivery
 * worker). Publishing is best effort; the table is the truth, so consumers that missed a publish
 * catch up from it (stream resume, delivery polling).
 */
import { and, asc, eq, gt, inArray, sql } from "drizzle-orm";
import { resultRows, type Db, type Tx } from "../db/db.ts";
import { rawRows } from "../db/migrate.ts";
import type { LiveStore } from "../live/live-store.ts";
import { accountKey } from "../live/live-store.ts";
import type { Logger } from "../log/logger.ts";
import type { EventName, EventPayload } from "../webhooks/event-catalog.ts";
import { events } from "./events.schema.ts";
import type { EventIdCodec } from "./event-ids.ts";

/** An event as written, published and streamed. */
export interface PlatformEvent {
  /**
   * Its number in the platform-wide sequence: the stream's resume cursor inside the platform. Never
   * shown as such: replies and stream messages carry `bus.ids.encode(id, ts)` (event-ids.ts).
   */
  id: number;
  account_id: string;
  event: EventName;
  data: Record<string, unknown>;
  /** Epoch ms. */
  ts: number;
}

/** Writes one event in the caller's transaction. */
export type Emit = <E extends EventName>(accountId: string, event: E, data: EventPayload<E>, ts?: number) => Promise<PlatformEvent>;

/** One event to write with `EmitMany`. */
export interface EventInput<E extends EventName = EventName> {
  accountId: string;
  event: E;
  data: EventPayload<E>;
  /** Epoch ms (default now). */
  ts?: number;
}

/** Writes several events in the caller's transaction with one insert; returned in the order given. */
export type EmitMany = (list: EventInput[]) => Promise<PlatformEvent[]>;

/**
 * Called in the emitting transaction with the events one emit wrote (one event, or the events of one
 * EmitMany, so a planner can work on them as a set): webhook deliveries are planned here. What a plan
 * needs that does not depend on the events' ids (the subscriptions of their accounts) it reads in
 * `read`, which runs beside the events' insert (pipelined: one round trip less per emit); `plan`
 * gets its result.
 */
export interface EventPlanner {
  read?(tx: Tx, accountIds: string[]): Promise<unknown>;
  plan(tx: Tx, events: PlatformEvent[], read: unknown): Promise<void>;
}

export interface EventBus {
  /**
   * Runs `fn` in one transaction; the events it emits commit with it, then are published.
   * @example await bus.transaction(async (tx, emit) => { await saveCdr(tx, cdr); await emit(acc, "call.ended", data); })
   */
  transaction<T>(fn: (tx: Tx, emit: Emit, emitMany: EmitMany) => Promise<T>): Promise<T>;
  /** One event in a transaction of its own. */
  emit<E extends EventName>(accountId: string, event: E, data: EventPayload<E>, ts?: number): Promise<PlatformEvent>;
  /** Adds a planner run for every emitted event inside its transaction. */
  addPlanner(planner: EventPlanner): void;
  /** Local listener for committed events of any account (after commit; best effort). */
  onCommitted(listener: (events: PlatformEvent[]) => void): () => void;
  /** Live events of one account, from every instance (via the live store's pub/sub). */
  subscribe(accountId: string, handler: (event: PlatformEvent) => void): Promise<() => Promise<void>>;
  /** Stored events of one account with id > afterId, oldest first (resume). */
  since(accountId: string, afterId: number, limit: number, names?: EventName[]): Promise<PlatformEvent[]>;
  /** The public ids of events (`evt_…`) and back. */
  ids: EventIdCodec;
}

/** How long stored events stay readable for stream resume (deliveries keep their own rows). */
export const EVENT_RETENTION_DAYS = 7;

/**
 * Deletes events older than the retention, except those a delivery still waits on. Returns how many.
 * Run periodically (the server's maintenance job); batched so it never holds long locks.
 */
export async function sweepEvents(db: Db, options: { now?: number; retentionDays?: number; batch?: number } = {}): Promise<number> {
  const cutoff = (options.now ?? Date.now()) - (options.retentionDays ?? EVENT_RETENTION_DAYS) * 86_400_000;
  const batch = options.batch ?? 5_000;
  let removed = 0;
  for (;;) {
    const rows = await db.execute(sql`
      delete from ${events} where (account_id, id) in (
        select e.account_id, e.id from ${events} e
        where e.ts < ${cutoff}
          and not exists (select 1 from webhook_delivery d
                          where d.account_id = e.account_id and d.event_id = e.id and d.status in ('pending','retrying'))
        limit ${batch})
      returning id`);
    const count = resultRows(rows).length;
    removed += count;
    if (count < batch) return removed;
  }
}

/** The pub/sub channel of one account's events. */
export function eventChannel(accountId: string): string {
  return accountKey(accountId, "events");
}

function toEvent(row: typeof events.$inferSelect): PlatformEvent {
  return { id: row.id, account_id: row.account_id, event: row.name as EventName, data: row.data as Record<string, unknown>, ts: row.ts };
}

export function createEventBus(deps: { db: Db; live: LiveStore; log: Logger; ids: EventIdCodec }): EventBus {
  const { db, live, log, ids } = deps;
  const planners: EventPlanner[] = [];
  const listeners = new Set<(events: PlatformEvent[]) => void>();

  /** The events of `list` written with one insert, planned, and queued for publishing after commit. */
  async function write(tx: Tx, sink: PlatformEvent[], list: EventInput[]): Promise<PlatformEvent[]> {
    if (!list.length) return [];
    const now = Date.now();
    // A fixed text with the events as one JSON parameter (no query building per emit, one prepared
    // statement whatever their number); ids are drawn in the order given.
    const input = JSON.stringify(list.map((e) => ({ account_id: e.accountId, name: e.event, data: e.data, ts: e.ts ?? now })));
    const inserting = rawRows<{ account_id: string; id: number | string; name: string; data: unknown; ts: number | string }>(
      tx,
      sql`insert into event (account_id, name, data, ts)
          select account_id, name, data, ts
          from rows from (jsonb_to_recordset(${input}::jsonb) as (account_id text, name text, data jsonb, ts bigint)) with ordinality as t(account_id, name, data, ts, n)
          order by n
          returning account_id, id, name, data, ts`,
    );
    const accountIds = [...new Set(list.map((e) => e.accountId))];
    const [rows, ...reads] = await Promise.all([inserting, ...planners.map((p) => (p.read ? p.read(tx, accountIds) : undefined))]);
    // Sorted by id, the events are in the order of `list`.
    const emitted = rows
      .map((r) => toEvent({ account_id: r.account_id, id: Number(r.id), name: r.name, data: r.data, ts: Number(r.ts) }))
      .sort((a, b) => a.id - b.id);
    for (const [i, planner] of planners.entries()) await planner.plan(tx, emitted, reads[i]);
    sink.push(...emitted);
    return emitted;
  }

  async function published(batch: PlatformEvent[]): Promise<void> {
    if (!batch.length) return;
    for (const listener of listeners) {
      try {
        listener(batch);
      } catch (error) {
        log.error("event listener failed", { error: String(error) });
      }
    }
    // One message per account: the event, or the account's events of the transaction as an array
    // (a batch of dialog events is one publish, not one per event).
    const byAccount = new Map<string, PlatformEvent[]>();
    for (const e of batch) {
      const list = byAccount.get(e.account_id);
      if (list) list.push(e);
      else byAccount.set(e.account_id, [e]);
    }
    for (const [accountId, list] of byAccount) {
      const message = JSON.stringify(list.length === 1 ? list[0] : list);
      live.publish(eventChannel(accountId), message).catch((error) => log.warn("event publish failed", { error: String(error) }));
    }
  }

  const bus: EventBus = {
    ids,
    async transaction(fn) {
      const sink: PlatformEvent[] = [];
      const result = await db.transaction((tx) =>
        fn(
          tx as Tx,
          async (accountId, event, data, ts) => (await write(tx as Tx, sink, [{ accountId, event, data, ...(ts !== undefined ? { ts } : {}) }]))[0]!,
          (list) => write(tx as Tx, sink, list),
        ),
      );
      await published(sink);
      return result;
    },
    emit(accountId, event, data, ts) {
      return bus.transaction((_tx, emit) => emit(accountId, event, data, ts));
    },
    addPlanner(planner) {
      planners.push(planner);
    },
    onCommitted(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    subscribe(accountId, handler) {
      return live.subscribe(eventChannel(accountId), (message) => {
        let parsed: PlatformEvent | PlatformEvent[];
        try {
          parsed = JSON.parse(message) as PlatformEvent | PlatformEvent[];
        } catch (error) {
          log.warn("bad event message", { error: String(error) });
          return;
        }
        for (const event of Array.isArray(parsed) ? parsed : [parsed]) {
          try {
            handler(event);
          } catch (error) {
            log.warn("event handler failed", { error: String(error) });
          }
        }
      });
    },
    async since(accountId, afterId, limit, names) {
      const where = [eq(events.account_id, accountId), gt(events.id, afterId)];
      if (names?.length) where.push(inArray(events.name, names));
      const rows = await db.select().from(events).where(and(...where)).orderBy(asc(events.id)).limit(limit);
      return rows.map(toEvent);
    },
  };
  return bus;
}
