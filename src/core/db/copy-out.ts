/**
 * PostgreSQL's COPY TO STDOUT as a byte stream: the server formats the rows (CSV quoting in C, no
 * per-value work in the driver), the driver hands over one message per row, and rows are packed
 * into large chunks here, so a million-row export costs little more than `psql \copy`.
 *
 * COPY takes no bind parameters, so the query's parameters are written into its text as literals
 * (strings quoted with '' doubling, which the connection's standard_conforming_strings=on makes
 * exact; finite numbers as they are; anything else is refused). The stream holds a connection of
 * its own until the COPY ends, honours back-pressure (the socket pauses while the reader is behind)
 * and, when the reader cancels, cancels the statement and frees the connection.
 */
import type { Sql } from "postgres";
import type { SQL } from "drizzle-orm";
import { PgDialect } from "drizzle-orm/pg-core";
import { Stream, type Readable } from "node:stream";

/** Bytes per chunk handed to the reader. */
const CHUNK = 256 * 1024;
/** Chunks the stream buffers ahead of its reader. */
const AHEAD = 4;

const dialect = new PgDialect();

/** A literal for a COPY statement's text; throws on values that have none. */
function literal(value: unknown): string {
  if (value === null || value === undefined) return "null";
  if (typeof value === "number" && Number.isFinite(value)) return String(value);
  if (typeof value === "bigint") return String(value);
  if (typeof value === "string" && !value.includes("\u0000")) return `'${value.replace(/'/g, "''")}'`;
  throw new TypeError(`no COPY literal for a ${typeof value}`);
}

/** The text of `query` with its parameters written in as literals. */
export function inlineSql(query: SQL): string {
  const built = dialect.sqlToQuery(query);
  // $n placeholders only ever appear where drizzle put a parameter: our SQL has no dollar-quoting.
  return built.sql.replace(/\$(\d+)/g, (_, n: string) => literal(built.params[Number(n) - 1]));
}

/** Options of {@link copyCsvOut}. */
export interface CsvOutOptions {
  /** The first line's text (column names), without its line end. */
  header: string;
  /** Line end of every line (COPY writes \n; CSV as RFC 4180 wants it is \r\n). */
  lineEnd: "\n" | "\r\n";
}

/**
 * Streams `COPY (query) TO STDOUT WITH (FORMAT csv)` through `client`, header line first.
 *
 * The export reserves one of `client`'s connections for itself and gives it back only once the COPY
 * has ended: postgres.js would otherwise pipeline another statement onto a connection that is
 * copying (failing it with COPY_IN_PROGRESS) whenever every connection of the pool is busy. Exports
 * beyond the pool's size wait for a connection.
 * @example new Response(copyCsvOut(client, sql`select id, name from account`, { header: "id,name", lineEnd: "\r\n" }))
 */
export function copyCsvOut(client: Sql, query: SQL, options: CsvOutOptions): ReadableStream<Uint8Array> {
  const text = `copy (${inlineSql(query)}) to stdout with (format csv)`;
  const end = Buffer.from(options.lineEnd);
  let chunk = Buffer.allocUnsafe(CHUNK);
  let used = chunk.write(`${options.header}${options.lineEnd}`);
  let source: Readable | null = null;
  let statement: ReturnType<Sql["unsafe"]> | null = null;
  let cancelled = false;

  return new ReadableStream<Uint8Array>(
    {
      async start(controller) {
        const connection = await client.reserve();
        if (cancelled) return connection.release();
        statement = connection.unsafe(text);
        // The driver hands the stream over through a promise, but when the statement fails in the
        // same network read that began the COPY, it destroys the stream before a promise callback
        // could listen: that 'error' would go unheard and be thrown. The listener goes on as the
        // driver resolves the statement (Query.resolve, postgres 3.4.x; copy-out.test.ts fails
        // with an uncaught error without it).
        const driven = statement as unknown as { resolve: (value: unknown) => void };
        const handOver = driven.resolve;
        driven.resolve = (value) => {
          driven.resolve = handOver;
          if (value instanceof Stream) {
            value.on("error", (error: Error) => {
              if (!cancelled) controller.error(error);
            });
            // Ended or failed, the COPY is over on this connection: statements after it are safe.
            value.on("close", () => connection.release());
          }
          handOver(value);
        };
        try {
          source = (await statement.readable()) as unknown as Readable;
        } catch (error) {
          connection.release();
          if (!cancelled) controller.error(error);
          return;
        }
        const flush = () => {
          if (!used) return;
          controller.enqueue(chunk.subarray(0, used));
          chunk = Buffer.allocUnsafe(CHUNK);
          used = 0;
        };
        // One message per row, its \n last (a CSV value's own line breaks sit inside quotes).
        source.on("data", (row: Buffer) => {
          if (cancelled) return;
          const body = row.length - 1;
          if (used + body + end.length > chunk.length) {
            flush();
            if (body + end.length > chunk.length) chunk = Buffer.allocUnsafe(body + end.length);
          }
          used += row.copy(chunk, used, 0, body);
          used += end.copy(chunk, used);
          if (used === chunk.length) flush();
          if ((controller.desiredSize ?? 1) <= 0) source!.pause();
        });
        source.on("end", () => {
          if (cancelled) return;
          flush();
          controller.close();
        });
        if (cancelled) void stop();
      },
      pull() {
        source?.resume();
      },
      cancel() {
        cancelled = true;
        void stop();
      },
    },
    { highWaterMark: AHEAD },
  );

  /**
   * The reader left: cancel the statement, then let the rest drain so the COPY ends and the
   * connection goes back to the pool. The cancel is delivered first (the driver's promise settles
   * once the server has signalled the backend): draining first could finish the COPY before the
   * cancel arrived, and the cancel would then stop whatever statement the connection ran next.
   */
  async function stop(): Promise<void> {
    if (!source || !statement) return;
    try {
      await statement.cancel();
    } catch {
      // Already finished, or the cancel could not be sent: draining ends the COPY either way.
    }
    source.resume();
  }
}
