/**
 * The account log: what producers (flow engine, webhook delivery, edge handlers, the platform) record
 * for an account, read back newest first by GET /v1/logs, and swept after 7 days or past a per-account
 * cap. Producers pass their transaction handle so a line commits with the change it describes.
 */
import type { DbOrTx } from "../db/db.ts";
import type { EventBus } from "../events/bus.ts";
import { newId } from "../ids/ids.ts";
import { decodeCursor, toPage } from "../pagination/pagination.ts";
import { LOG_LEVELS, LOG_PAGE_DEFAULT, type LogLevelName, type LogModel, type LogSource } from "./logs.model.ts";
import { accountsOverLogCap, deleteLogsBefore, insertLog, listLogRows, trimAccountLogs } from "./logs.store.ts";
import type { AccountLogRow } from "./logs.schema.ts";

/** Days a log line is kept. */
export const LOG_RETENTION_DAYS = 7;
/** Most lines kept per account (the newest win). */
export const LOG_MAX_ROWS_PER_ACCOUNT = 10_000;

/** One line to record. */
export interface LogEntry {
  accountId: string;
  level: LogLevelName;
  source: LogSource;
  /** A sentence for the account's operators: no secrets, no SQL, no stack. */
  message: string;
  /** call_… the line belongs to. */
  callId?: string | null;
  /** Structured details (JSON-serializable, no secrets). */
  data?: Record<string, unknown>;
  /** Epoch ms; default now. */
  ts?: number;
}

/**
 * Records one log line. Pass the transaction of the change it describes to make it atomic with it.
 * @example await platform.events.transaction(async (tx, emit) => { …; await recordLog(tx, { accountId, level: "info", source: "flow", message: "Played greeting", callId }); });
 */
export async function recordLog(db: DbOrTx, entry: LogEntry): Promise<string> {
  const id = newId("log");
  await insertLog(db, {
    account_id: entry.accountId,
    id,
    ts: entry.ts ?? Date.now(),
    level: entry.level,
    source: entry.source,
    message: entry.message,
    call_id: entry.callId ?? null,
    data: entry.data ?? {},
  });
  return id;
}

/** The levels at or above `level`. */
export function levelsFrom(level: LogLevelName): LogLevelName[] {
  return LOG_LEVELS.slice(LOG_LEVELS.indexOf(level));
}

function toEntry(row: AccountLogRow): LogModel.Entry {
  return {
    id: row.id,
    ts: row.ts,
    level: row.level as LogModel.Entry["level"],
    source: row.source as LogModel.Entry["source"],
    message: row.message,
    call_id: row.call_id,
    data: (row.data ?? {}) as Record<string, unknown>,
  };
}

/** GET /v1/logs: one account's lines, newest first, keyset-paginated. */
export async function listLogs(
  db: DbOrTx,
  accountId: string,
  query: { limit?: number; cursor?: string; level?: LogLevelName; call_id?: string; source?: LogSource },
): Promise<{ data: LogModel.Entry[]; next_cursor?: string }> {
  const limit = query.limit ?? LOG_PAGE_DEFAULT;
  const before = decodeCursor(query.cursor, "log");
  const rows = await listLogRows(
    db,
    accountId,
    {
      ...(query.level && query.level !== "debug" ? { levels: levelsFrom(query.level) } : {}),
      ...(query.call_id !== undefined ? { callId: query.call_id } : {}),
      ...(query.source !== undefined ? { source: query.source } : {}),
    },
    before,
    limit,
  );
  return toPage(rows, limit, toEntry);
}

/**
 * The retention sweep (the host schedules it, e.g. hourly): drops lines older than 7 days, then trims
 * every account to its newest `maxRowsPerAccount` lines.
 */
export async function sweepLogs(
  db: DbOrTx,
  options: { now?: number; retentionDays?: number; maxRowsPerAccount?: number } = {},
): Promise<{ expired: number; trimmed: number }> {
  const now = options.now ?? Date.now();
  const keep = options.maxRowsPerAccount ?? LOG_MAX_ROWS_PER_ACCOUNT;
  const expired = await deleteLogsBefore(db, now - (options.retentionDays ?? LOG_RETENTION_DAYS) * 86_400_000);
  let trimmed = 0;
  for (const accountId of await accountsOverLogCap(db, keep)) trimmed += await trimAccountLogs(db, accountId, keep);
  return { expired, trimmed };
}

const installed = new WeakSet<EventBus>();

/**
 * Records an `info` line for every `test` event, in the emitting transaction (a planner), so the
 * account can see in GET /v1/logs that its test fired. Installing twice on one bus is harmless.
 */
export function installEventLogs(bus: EventBus): void {
  if (installed.has(bus)) return;
  installed.add(bus);
  bus.addPlanner({
    names: ["test"],
    async plan(tx, events) {
      for (const event of events) {
        if (event.event !== "test") continue;
        const data = event.data as { webhook_id?: string | null; message?: string };
        await recordLog(tx, {
          accountId: event.account_id,
          level: "info",
          source: "webhook",
          message: data.webhook_id ? `Test event fired at webhook ${data.webhook_id}.` : "Test event fired.",
          data: { event_id: bus.ids.encode(event.id, event.ts), webhook_id: data.webhook_id ?? null },
          ts: event.ts,
        });
      }
    },
  });
}
