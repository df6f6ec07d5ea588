/**
 * The one event bus. Producers emit inside the transaction of the change that caused the event
 * (outbox): the event row (and its webhook deliveries) commit or roll back with that change, so a
 * crash can neither lose nor invent an event. After commit the bus publishes the events on the live
 * store's pub/sub (every instance's WebSocket hubs hear them) and wakes local listeners (the delivery
 * worker). Each publish is recorded, in one step with it, in the account's publication log (the order
 * its live subscribers got events in), which a resume reads to find the events before its point that
 * the client had not seen. Publishing is best effort; the table is the truth, so consumers that missed
 * a publish catch up from it (stream resume, delivery polling), and each instance publishes the events
 * of the accounts it streams that were committed and never published (the repair, RepairOptions).
 */
import { sql, type SQL } from "drizzle-orm";
import { resultRows, type Db, type Tx } from "../db/db.ts";
import { rawRows } from "../db/migrate.ts";
import { rawJson } from "../db/sql-text.ts";
import { newId, type IdPrefix } from "../ids/ids.ts";
import type { LiveStore, PublicationLog } from "../live/live-store.ts";
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
  /** The events this planner acts on (default: every event); it is not called for others. */
  names?: readonly EventName[];
  /** The same plan written in SQL, for `EventBus.statement`. A planner without it cannot plan there. */
  statement?: StatementPlan;
}

/**
 * A planner's plan as part of the one statement of `EventBus.statement`, which must write exactly what
 * `plan` would. It may read the statement's CTEs `ev_in` (the events given: account_id, name, data,
 * ts), `ev` (those inserted: account_id, id, name, data, ts) and `ev_pool` (fresh ids with `idPrefix`:
 * id, and n counting from 1). Only one planner may have a SQL form (the pool is its own).
 */
export interface StatementPlan {
  /** The prefix of the ids the plan takes from `ev_pool`. */
  idPrefix: IdPrefix;
  /** A select of (account_id, n): how many ids the plan may take at most for the events of `ev_in`, per account. */
  need: SQL;
  /** CTEs (`name as (…), …`, names starting with `plan_`) writing the plan, taking the ids of `ev_pool` numbered 1 to what they use. */
  ctes: SQL;
  /** A select of one column: the ids of the events the plan wrote something for. */
  planned: SQL;
  /** After commit, with the events `planned` named. */
  markPlanned(events: PlatformEvent[]): void;
}

/** What `EventBus.statement` writes: the caller's CTEs and events, all committed by one statement. */
export interface StatementSpec {
  /**
   * The caller's CTEs (`name as (…), …`, names not starting with `ev` or `plan_`). Each must write only
   * where `gate` holds: it does not when the statement was given too few ids for the plan, which then
   * writes nothing and runs again with enough.
   */
  ctes(gate: SQL): SQL;
  /** The events, each with a key `keep` can test (say the id of the row that caused it). */
  events: Array<EventInput & { key: string }>;
  /** A condition on `i` (a row of `ev_in`: account_id, key, name) for writing that event, which may read the caller's CTEs. */
  keep: SQL;
  /** A scalar subquery over the caller's CTEs: the statement's result (a JSON value). */
  result: SQL;
}

export interface EventBus {
  /**
   * Runs `fn` in one transaction; the events it emits commit with it, then are published.
   * @example await bus.transaction(async (tx, emit) => { await saveCdr(tx, cdr); await emit(acc, "call.ended", data); })
   */
  transaction<T>(fn: (tx: Tx, emit: Emit, emitMany: EmitMany) => Promise<T>): Promise<T>;
  /** One event in a transaction of its own. */
  emit<E extends EventName>(accountId: string, event: E, data: EventPayload<E>, ts?: number): Promise<PlatformEvent>;
  /**
   * Writes the caller's rows and the events they cause, with their plans, in one statement: one round
   * trip and no transaction to open and commit (the call path's writes). Planners must have a SQL form
   * for these events (throws otherwise). Returns the caller's `result` (parsed JSON) and the events
   * written, which are published.
   * @example const { result } = await bus.statement({ ctes: (gate) => sql`c as (insert … where ${gate} returning id)`, events, keep: sql`i.key in (select id from c)`, result: sql`(select json_agg(id) from c)` })
   */
  statement(spec: StatementSpec): Promise<{ result: unknown; events: PlatformEvent[] }>;
  /** Adds a planner run for every emitted event inside its transaction. */
  addPlanner(planner: EventPlanner): void;
  /** Local listener for committed events of any account (after commit; best effort). */
  onCommitted(listener: (events: PlatformEvent[]) => void): () => void;
  /**
   * Live events of one account, from every instance (via the live store's pub/sub). While any
   * subscription of an account is open here, this instance also publishes the account's events that
   * were committed and never published (the repair). `onGap`: some may have been missed, which ones
   * unknown (the live store's connection was lost and renewed; see LiveStore.subscribe).
   */
  subscribe(accountId: string, handler: (event: PlatformEvent) => void, onGap?: () => void): Promise<() => Promise<void>>;
  /**
   * Stored events of one account a client that saw event `afterId` may have missed, oldest first
   * (resume): those with a greater id, at most `limit` (the first ones), and those with a smaller id
   * that reached the account's live subscribers after it or never: published after it (the
   * publication log, at most REORDERED_MAX), never published (not in the log, above its floor), or
   * written by a transaction still running when `afterId` was written. The last two are looked for
   * among the account's LATE_WINDOW events before `afterId`; the client may have seen some (it dedupes
   * by id).
   */
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

/** How many of an account's events before a resume point are looked at for late commits (since()). */
export const LATE_WINDOW = 1000;

/**
 * The order in which an account's events were published (the order its live subscribers got them in):
 * what a resume needs to know which events before its point the client had not seen yet. It keeps the
 * account's latest PUBLICATION_LOG_MAX events for an hour after its last publish.
 */
export function publicationLog(accountId: string): PublicationLog {
  return { key: accountKey(accountId, "events", "order"), floorKey: accountKey(accountId, "events", "order-floor"), max: PUBLICATION_LOG_MAX, ttlMs: PUBLICATION_LOG_TTL_MS };
}
export const PUBLICATION_LOG_MAX = 10_000;
/**
 * A resume after more than the stream's replay bound (1,000) gets a resync anyway, and an account idle
 * this long has no order to keep: what it saw before is what the table says.
 */
const PUBLICATION_LOG_TTL_MS = 3_600_000;
/** At most this many events before a resume point published after it are replayed (see since()). */
const REORDERED_MAX = 1_000;

/**
 * The repair of events committed and never published (an instance killed between its commit and its
 * publish, or one that could not reach the live store, which logs it and goes on): each instance reads the new events of the
 * accounts it has live subscribers for, and publishes those the publication log still lacks a while
 * after it first read them (once: the log's check-and-append), at most REPAIR_PUBLISH_MAX per account
 * and pass.
 */
export interface RepairOptions {
  /** How often it reads. */
  intervalMs: number;
  /** How long an event read may wait for its own publish before the repair publishes it. */
  graceMs: number;
  /** It reads from the highest id it had read this long ago: transactions open longer are not looked at. */
  lagMs: number;
  /** Most new events, and most late commits, read per account and pass (the next pass goes on). */
  batch: number;
}
const REPAIR_DEFAULTS: RepairOptions = { intervalMs: 2_000, graceMs: 1_500, lagMs: 30_000, batch: 5_000 };
const REPAIR_MAX_SUSPECTS = 10_000;
const REPAIR_PUBLISH_MAX = 1_000;
const REPAIR_CHUNK = 100;

function toEvent(row: Pick<typeof events.$inferSelect, "account_id" | "id" | "name" | "data" | "ts">): PlatformEvent {
  return { id: row.id, account_id: row.account_id, event: row.name as EventName, data: row.data as Record<string, unknown>, ts: row.ts };
}

/** What `publishLogged` is given for events of one account: each event's id and its message. */
function logEntries(list: PlatformEvent[]): Array<{ id: number; message: string }> {
  return list.map((e) => ({ id: e.id, message: JSON.stringify(e) }));
}

export function createEventBus(deps: { db: Db; live: LiveStore; log: Logger; ids: EventIdCodec; repair?: Partial<RepairOptions> }): EventBus {
  const { db, live, log, ids } = deps;
  const repairOptions: RepairOptions = { ...REPAIR_DEFAULTS, ...deps.repair };
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
    const acting = planners.filter((p) => !p.names || list.some((e) => p.names!.includes(e.event)));
    const [rows, ...reads] = await Promise.all([inserting, ...acting.map((p) => (p.read ? p.read(tx, accountIds) : undefined))]);
    // Sorted by id, the events are in the order of `list`.
    const emitted = rows
      .map((r) => toEvent({ account_id: r.account_id, id: Number(r.id), name: r.name, data: r.data, ts: Number(r.ts) }))
      .sort((a, b) => a.id - b.id);
    for (const [i, planner] of acting.entries()) {
      const names = planner.names;
      await planner.plan(tx, names ? emitted.filter((e) => names.includes(e.event)) : emitted, reads[i]);
    }
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
      live.publishLogged(eventChannel(accountId), publicationLog(accountId), logEntries(list)).catch((error) => {
        // Not lost: the instances streaming the account publish it once they read it (the repair).
        log.warn("event publish failed: the repair publishes the events from the table", { account_id: accountId, error: String(error) });
      });
    }
  }

  /**
   * Ids the SQL plan took per event, per account, in the last statement of that account's events: the
   * next statement passes that many fresh ids (an account without subscriptions, none). Too few, and
   * the statement writes nothing and says how many it needs.
   */
  const idsPerEvent = new Map<string, number>();
  const MAX_STATEMENT_ATTEMPTS = 3;

  async function statement(spec: StatementSpec): Promise<{ result: unknown; events: PlatformEvent[] }> {
    const names = new Set(spec.events.map((e) => e.event));
    const acting = planners.filter((p) => !p.names || p.names.some((n) => names.has(n)));
    const blind = acting.find((p) => !p.statement);
    if (spec.events.length && blind) throw new Error("EventBus.statement: a planner of these events has no SQL form");
    const plan = spec.events.length ? acting.find((p) => p.statement)?.statement : undefined;
    const now = Date.now();
    const input = JSON.stringify(spec.events.map((e) => ({ account_id: e.accountId, key: e.key, name: e.event, data: e.data, ts: e.ts ?? now })));
    const perAccount = new Map<string, number>();
    for (const e of spec.events) perAccount.set(e.accountId, (perAccount.get(e.accountId) ?? 0) + 1);
    let wanted = 0;
    for (const [accountId, count] of perAccount) wanted += Math.ceil((idsPerEvent.get(accountId) ?? 0) * count);
    for (let attempt = 1; ; attempt++) {
      const pool = plan ? Array.from({ length: wanted }, () => newId(plan.idPrefix)) : [];
      const query = sql`with ev_in as (
            select account_id, key, name, data, ts, n
            from rows from (jsonb_to_recordset(${input}::jsonb) as (account_id text, key text, name text, data jsonb, ts bigint))
              with ordinality as t(account_id, key, name, data, ts, n)
          ), ev_need as (${plan ? plan.need : sql`select null::text as account_id, 0 as n where false`}
          ), ev_gate as (
            select coalesce((select sum(n) from ev_need), 0) <= ${pool.length} as ok
          ), ev_pool as (
            select id, n from jsonb_array_elements_text(${JSON.stringify(pool)}::jsonb) with ordinality as p(id, n)
          ), ${spec.ctes(sql`(select ok from ev_gate)`)}, ev as (
            insert into event (account_id, name, data, ts)
            select i.account_id, i.name, i.data, i.ts from ev_in i
            where (select ok from ev_gate) and ${spec.keep}
            order by i.n
            returning account_id, id, name, data, ts
          )${plan ? sql`, ${plan.ctes}` : sql``}
          select (select ok from ev_gate) as ok,
            (select coalesce(json_agg(json_build_array(account_id, n)), '[]') from ev_need) as need,
            (select coalesce(json_agg(id order by id), '[]') from ev) as ids,
            (select coalesce(json_agg(i.n order by i.n), '[]') from ev_in i where ${spec.keep}) as kept,
            ${plan ? sql`(select coalesce(json_agg(x), '[]') from (${plan.planned}) as planned(x))` : sql`'[]'::json`} as planned,
            ${spec.result} as result`;
      const [row] = await rawRows<{ ok: boolean; need: unknown; ids: unknown; kept: unknown; planned: unknown; result: unknown }>(db, query);
      if (!row) throw new Error("EventBus.statement: no result row");
      let needed = 0;
      for (const accountId of perAccount.keys()) idsPerEvent.delete(accountId);
      for (const [accountId, n] of rawJson<Array<[string, number]>>(row.need)) {
        needed += Number(n);
        if (idsPerEvent.size >= 10_000) idsPerEvent.clear();
        idsPerEvent.set(accountId, Number(n) / (perAccount.get(accountId) ?? 1));
      }
      if (!row.ok) {
        // A subscription came (or was first seen) since the last statement: nothing was written.
        if (attempt >= MAX_STATEMENT_ATTEMPTS) throw new Error("EventBus.statement: the plan kept needing more ids");
        wanted = needed;
        continue;
      }
      const kept = rawJson<number[]>(row.kept);
      const eventIds = rawJson<Array<number | string>>(row.ids);
      if (kept.length !== eventIds.length) throw new Error("EventBus.statement: events written and kept differ");
      const written = eventIds.map((id, i): PlatformEvent => {
        const given = spec.events[Number(kept[i]) - 1]!;
        return { id: Number(id), account_id: given.accountId, event: given.event, data: given.data as Record<string, unknown>, ts: given.ts ?? now };
      });
      if (plan) {
        const planned = new Set(rawJson<Array<number | string>>(row.planned).map(Number));
        plan.markPlanned(written.filter((e) => planned.has(e.id)));
      }
      await published(written);
      return { result: rawJson<unknown>(row.result), events: written };
    }
  }

  async function eventRows(query: SQL): Promise<PlatformEvent[]> {
    const rows = await rawRows<{ account_id: string; id: string | number; name: string; data: unknown; ts: string | number }>(db, query);
    return rows.map((r) => toEvent({ account_id: r.account_id, id: Number(r.id), name: r.name, data: rawJson(r.data), ts: Number(r.ts) }));
  }

  /** Accounts with live subscribers on this instance, and what the repair (RepairOptions) knows of each. */
  interface Watch {
    subscribers: number;
    /** The highest id read (null before the first pass). */
    maxId: number | null;
    /** The highest id read at each pass within the lag; the first is where the next read starts. */
    marks: Array<{ at: number; maxId: number }>;
    /** Ids read and not yet seen in the publication log, with when they were first read. */
    suspects: Map<number, number>;
    /** The snapshot of the last pass (pg_snapshot as text): the transactions it saw committed. */
    snapshot: string | null;
  }
  const watched = new Map<string, Watch>();
  let repairTimer: ReturnType<typeof setInterval> | null = null;
  let repairing = false;

  function watch(accountId: string): () => void {
    let entry = watched.get(accountId);
    if (!entry) {
      entry = { subscribers: 0, maxId: null, marks: [], suspects: new Map(), snapshot: null };
      watched.set(accountId, entry);
    }
    const w = entry;
    w.subscribers++;
    if (!repairTimer) {
      repairTimer = setInterval(() => void repairPass(), repairOptions.intervalMs);
      repairTimer.unref?.();
    }
    // A new account's first read marks where its repair starts: at once, not at the next tick.
    if (w.maxId === null) void repairPass();
    let done = false;
    return () => {
      if (done) return;
      done = true;
      if (--w.subscribers === 0 && watched.get(accountId) === w) watched.delete(accountId);
      if (!watched.size && repairTimer) {
        clearInterval(repairTimer);
        repairTimer = null;
      }
    };
  }

  /**
   * One repair pass over the watched accounts: reads the events each committed since the last pass
   * (new ids, from the highest read on; and smaller ids of transactions the account's last snapshot
   * did not see committed), then publishes those the log still lacks after the grace. A cut read of
   * new ids goes on from its last id next time; late commits past a cut are not read (more than
   * `batch` of one account's in one pass).
   */
  async function repairPass(): Promise<void> {
    if (repairing || !watched.size) return;
    repairing = true;
    try {
      const now = Date.now();
      const batch = repairOptions.batch;
      const input = JSON.stringify(
        [...watched].map(([accountId, w]) => ({ account_id: accountId, floor: w.marks[0]?.maxId ?? null, max_id: w.maxId, snap: w.snapshot })),
      );
      const rows = await rawRows<{ account_id: string; top: string | number | null; start: string | number | null; fresh: unknown; late: unknown; snapshot: string }>(
        db,
        sql`select w.account_id,
              (select max(e.id) from event e where e.account_id = w.account_id) as top,
              -- A new account's floor: its newest event older than the lag (by the events' own time).
              case when w.max_id is null then (select max(e.id) from event e where e.account_id = w.account_id and e.ts < ${now - repairOptions.lagMs}) end as start,
              (select coalesce(json_agg(n.id order by n.id), '[]'::json) from (
                 select e.id from event e where e.account_id = w.account_id and e.id > w.max_id
                 order by e.id limit ${batch}) n) as fresh,
              (select coalesce(json_agg(n.id order by n.id), '[]'::json) from (
                 select e.id from event e
                 where e.account_id = w.account_id and e.id > w.floor and e.id <= w.max_id
                   and not pg_visible_in_snapshot(e.txid::text::xid8, w.snap::pg_snapshot)
                 order by e.id limit ${batch}) n) as late,
              pg_current_snapshot()::text as snapshot
            from jsonb_to_recordset(${input}::jsonb) as w(account_id text, floor bigint, max_id bigint, snap text)`,
      );
      const checks: Array<Promise<void>> = [];
      for (const row of rows) {
        const w = watched.get(row.account_id);
        if (!w) continue;
        const fresh = rawJson<Array<number | string>>(row.fresh).map(Number);
        const late = rawJson<Array<number | string>>(row.late).map(Number);
        if (w.maxId === null) {
          // A new account: new ids from its newest on, late commits from its newest older than the lag.
          w.marks.push({ at: now - repairOptions.lagMs, maxId: Number(row.start ?? 0) });
          w.maxId = Number(row.top ?? 0);
        } else {
          for (const id of [...late, ...fresh]) if (!w.suspects.has(id)) w.suspects.set(id, now);
          w.maxId = fresh.length === batch ? fresh[fresh.length - 1]! : Math.max(w.maxId, Number(row.top ?? 0));
        }
        w.snapshot = row.snapshot;
        w.marks.push({ at: now, maxId: w.maxId });
        while (w.marks.length > 1 && w.marks[1]!.at <= now - repairOptions.lagMs) w.marks.shift();
        let dropped = 0;
        for (const id of w.suspects.keys()) {
          if (w.suspects.size <= REPAIR_MAX_SUSPECTS) break;
          w.suspects.delete(id);
          dropped++;
        }
        if (dropped) log.warn("the repair of unpublished events fell behind: events it will not publish", { account_id: row.account_id, count: dropped });
        if (w.suspects.size) checks.push(repairAccount(row.account_id, w, now));
      }
      await Promise.allSettled(checks).then((results) => {
        for (const r of results) if (r.status === "rejected") log.warn("the repair of unpublished events failed; it tries again", { error: String(r.reason) });
      });
    } catch (error) {
      log.warn("the repair of unpublished events failed; it tries again", { error: String(error) });
    } finally {
      repairing = false;
    }
  }

  async function repairAccount(accountId: string, w: Watch, now: number): Promise<void> {
    const order = publicationLog(accountId);
    const ids = [...w.suspects.keys()];
    // The log's floor does not matter here: these events were committed seconds ago, after any log
    // that expired, and one published and already trimmed (PUBLICATION_LOG_MAX publishes since) is published twice.
    const { logged } = await live.loggedAmong(order, ids);
    const due: number[] = [];
    ids.forEach((id, i) => {
      if (logged[i]) w.suspects.delete(id);
      else if (now - w.suspects.get(id)! >= repairOptions.graceMs) due.push(id);
    });
    // At most REPAIR_PUBLISH_MAX a pass, in messages of REPAIR_CHUNK (a socket sends a message whole).
    due.splice(REPAIR_PUBLISH_MAX);
    if (!due.length) return;
    const rows = await eventRows(
      sql`select e.account_id, e.id, e.name, e.data, e.ts from event e
          where e.account_id = ${accountId} and e.id = any(${sql.param(due)}::bigint[]) order by e.id`,
    );
    let published = 0;
    for (let i = 0; i < rows.length; i += REPAIR_CHUNK) {
      const chunk = rows.slice(i, i + REPAIR_CHUNK);
      published += (await live.publishLogged(eventChannel(accountId), order, logEntries(chunk))).length;
      for (const e of chunk) w.suspects.delete(e.id);
    }
    // Gone from the table (swept): nothing to publish.
    const found = new Set(rows.map((e) => e.id));
    for (const id of due) if (!found.has(id)) w.suspects.delete(id);
    if (published) {
      log.warn("published events that were committed and never published (an instance stopped, or lost the live store, between commit and publish)", { account_id: accountId, count: published });
    }
  }

  const bus: EventBus = {
    ids,
    statement,
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
    async subscribe(accountId, handler, onGap) {
      const unsubscribe = await live.subscribe(eventChannel(accountId), (message) => {
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
      }, onGap);
      const unwatch = watch(accountId);
      return async () => {
        unwatch();
        await unsubscribe();
      };
    },
    async since(accountId, afterId, limit, names) {
      const named = names?.length ? sql`and e.name = any(${sql.param(names)}::text[])` : sql``;
      const order = publicationLog(accountId);
      const [rows, reordered, before] = await Promise.all([
        // `limit` bounds the events after the point only: those before it (bounded by their windows)
        // must not push them out, or a resync would name a point before the resume point.
        eventRows(
          sql`select account_id, id, name, data, ts from (
              (select e.account_id, e.id, e.name, e.data, e.ts from event e
                where e.account_id = ${accountId} and e.id > ${afterId} ${named}
                order by e.id limit ${limit})
              union all
              (select e.account_id, e.id, e.name, e.data, e.ts from event e
                where e.account_id = ${accountId} and e.id in (
                    select w.id from (
                      select w.id, w.txid from event w where w.account_id = ${accountId} and w.id < ${afterId}
                      order by w.id desc limit ${LATE_WINDOW}) w,
                      (select c.txid, c.txid_xmin, c.snap from event c where c.account_id = ${accountId} and c.id = ${afterId}) c
                    -- Running when the resume point was written (not visible in its snapshot), not its own
                    -- transaction; rows older than the snapshot column go by its xmin.
                    where case when c.snap is null then w.txid >= c.txid_xmin
                               else w.txid <> c.txid and not pg_visible_in_snapshot(w.txid::text::xid8, c.snap) end)
                  ${named})
            ) missed
            order by id`,
        ),
        // Events before the resume point published after it: its subscribers got them later than it.
        live.loggedAfter(order, afterId, REORDERED_MAX, true),
        // The window first, then the filter: a rare name must not send the scan through all history.
        rawRows<{ id: string | number }>(
          db,
          sql`select e.id from (select id, name from event where account_id = ${accountId} and id < ${afterId} order by id desc limit ${LATE_WINDOW}) e
              where true ${named}`,
        ),
      ]);
      // Without the resume point in the log (published before the log began, or too long ago), the
      // order the client saw is unknown: the events after it and the late commits are all there is.
      if (reordered === null) return rows;
      const have = new Set(rows.map((e) => e.id));
      const extra = new Set(reordered.filter((id) => !have.has(id)));
      // Events before it that were never published (their instance stopped between commit and
      // publish): committed, above the log's floor, and not in it. Those on their way are sent twice.
      const unsure = before.map((r) => Number(r.id)).filter((id) => !have.has(id) && !extra.has(id));
      if (unsure.length) {
        const { floor, logged } = await live.loggedAmong(order, unsure);
        unsure.forEach((id, i) => {
          if (!logged[i] && floor !== null && id > floor) extra.add(id);
        });
      }
      if (!extra.size) return rows;
      const more = await eventRows(
        sql`select e.account_id, e.id, e.name, e.data, e.ts from event e
            where e.account_id = ${accountId} and e.id = any(${sql.param([...extra])}::bigint[]) ${named}`,
      );
      return [...rows, ...more].sort((a, b) => a.id - b.id);
    },
  };
  return bus;
}
