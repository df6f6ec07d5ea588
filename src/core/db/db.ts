/**
 * The relational store: one drizzle pg-core schema over either PGlite (embedded default, one process)
 * or PostgreSQL through postgres.js (scale-out). Everything above this file sees only `Db`.
 */
import type { PgDatabase, PgQueryResultHKT, PgTransaction } from "drizzle-orm/pg-core";
import type { ExtractTablesWithRelations, SQL } from "drizzle-orm";
import type { CsvOutOptions } from "./copy-out.ts";

/** A drizzle handle on either store. Domain code never learns which one it got. */
export type Db = PgDatabase<PgQueryResultHKT, Record<string, never>>;

/** A transaction handle; pass it down instead of the outer `Db` while a transaction is open. */
export type Tx = PgTransaction<PgQueryResultHKT, Record<string, never>, ExtractTablesWithRelations<Record<string, never>>>;

/** Either a database or an open transaction: what store functions take. */
export type DbOrTx = Db | Tx;

/** An opened relational store with its lifecycle. */
export interface Database {
  /** The drizzle handle. */
  db: Db;
  /**
   * PostgreSQL only: a separate small pool for work-queue scans (the webhook delivery claims), its
   * connections set to walk indexes in order (bitmap and sequential scans off), so a claim is one
   * statement whatever the table statistics say and queue work never waits for API connections.
   * Absent on PGlite: callers set the same planner options in a transaction there.
   */
  queue?: Db;
  /**
   * PostgreSQL only: streams a query's rows as CSV by COPY TO STDOUT (see copy-out.ts), on a small
   * pool of its own so long exports never hold API connections. Absent on PGlite: callers page.
   */
  copyCsv?: (query: SQL, options: CsvOutOptions) => ReadableStream<Uint8Array>;
  /** `pglite` for the embedded default, `postgres` for PostgreSQL. */
  kind: "pglite" | "postgres";
  /**
   * Listens on a notification channel (NOTIFY): `onNotify` gets each payload after its transaction
   * committed, in commit order; `onListen` is called each time the listen is (re)established, after
   * which no notification is missed (notifications sent while it was down are lost: drop what they
   * would have told about). PGlite delivers a notification before the committing query resolves;
   * PostgreSQL on a connection of its own, a moment after. Resolves to the function that stops it.
   */
  listen(channel: string, onNotify: (payload: string) => void, onListen: () => void): Promise<() => Promise<void>>;
  /** Runs `select 1`; throws when the store is unreachable. Used by /readyz. */
  ping(): Promise<void>;
  /** Closes connections (PGlite flushes to DATA_DIR). */
  close(): Promise<void>;
}

/** The rows of a raw `db.execute(sql…)` result, whichever store answered (postgres.js: an array; PGlite: `{ rows }`). */
export function resultRows<R>(result: unknown): R[] {
  return (Array.isArray(result) ? result : (result as { rows: R[] }).rows) as R[];
}
