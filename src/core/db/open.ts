import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { sql } from "drizzle-orm";
import type { Sql } from "postgres";
import type { Database, Db } from "./db.ts";
import { copyCsvOut } from "./copy-out.ts";

/** Where the relational data lives: a PostgreSQL URL, a PGlite directory, or PGlite in memory. */
export type DatabaseLocation =
  | { kind: "postgres"; url: string; maxConnections?: number }
  | { kind: "pglite"; dataDir: string | null };

/**
 * postgres.js options for a PostgreSQL URL, with libpq's form of a Unix socket understood:
 * `postgres://user@/db?host=/var/run/postgresql` (a `host` parameter naming a directory) connects to
 * that directory's socket for the URL's port. On one machine a socket costs the client and the server
 * markedly less per query than TCP over loopback. Any other URL is passed as it is.
 * @example postgresTarget("postgres://postgres@/parley?host=/var/run/postgresql") // { url: "postgres://postgres@localhost:5432/parley", path: "/var/run/postgresql/.s.PGSQL.5432" }
 */
export function postgresTarget(url: string): { url: string; path?: string } {
  const q = url.indexOf("?");
  if (q < 0) return { url };
  const params = new URLSearchParams(url.slice(q + 1));
  const dir = params.get("host");
  if (!dir?.startsWith("/")) return { url };
  params.delete("host");
  // scheme://[user[:password]@][host][:port]/database: an empty host (libpq's usual socket form) is
  // given a placeholder, since URL parsers refuse user info without a host; the socket decides.
  const scheme = url.indexOf("://") + 3;
  const slash = url.indexOf("/", scheme);
  const authorityEnd = slash < 0 || slash > q ? q : slash;
  const at = url.lastIndexOf("@", authorityEnd) + 1 || scheme;
  const hostPort = url.slice(at, authorityEnd);
  const port = /:(\d+)$/.exec(hostPort)?.[1] ?? "5432";
  const host = hostPort.replace(/:\d+$/, "") || "localhost";
  const rest = params.toString();
  const base = `${url.slice(0, at)}${host}:${port}${url.slice(authorityEnd, q)}`;
  return { url: rest ? `${base}?${rest}` : base, path: `${dir.replace(/\/+$/, "")}/.s.PGSQL.${port}` };
}

/**
 * The client drizzle talks through, with every statement that has parameters prepared (a named
 * statement, parsed and planned once per connection, then planned again only when PostgreSQL finds a
 * custom plan worth it). Drizzle sends its queries unnamed, so PostgreSQL parsed and planned each
 * one on every execution: under the call path that planning took as long as executing (an insert
 * planned 46 µs, the subscriptions read of every emitted event 58 µs for 4 µs of work).
 * Transactions and savepoints hand out clients of their own, which get the same treatment. A URL
 * with `?prepare=false` (for a pooler that cannot keep named statements) turns it off.
 */
function preparing(client: Sql): Sql {
  if ((client.options as { prepare?: boolean }).prepare === false) return client;
  const wrap = (target: Sql): Sql =>
    new Proxy(target, {
      get(t, prop, receiver) {
        if (prop === "unsafe") {
          return (query: string, args: unknown[] = [], options: Record<string, unknown> = {}) =>
            t.unsafe(query, args as never, args.length ? { ...options, prepare: true } : options);
        }
        if (prop === "begin" || prop === "savepoint") {
          return (...rest: unknown[]) => {
            const callback = rest.pop() as (inner: Sql) => unknown;
            const open = Reflect.get(t, prop, receiver) as (...a: unknown[]) => unknown;
            return open(...rest, (inner: Sql) => callback(wrap(inner)));
          };
        }
        return Reflect.get(t, prop, receiver);
      },
    });
  return wrap(client);
}

/**
 * Opens the relational store. PGlite's runtime files are loaded through `pglite-assets.ts` so that
 * the compiled single binary carries them.
 */
export async function openDatabase(location: DatabaseLocation): Promise<Database> {
  if (location.kind === "postgres") {
    const { url, path } = postgresTarget(location.url);
    const socket = path ? { path } : {};
    const { default: postgres } = await import("postgres");
    const { drizzle } = await import("drizzle-orm/postgres-js");
    const client = postgres(url, {
      ...socket,
      max: location.maxConnections ?? 16,
      onnotice: () => {}, // NOTICEs (e.g. "relation already exists, skipping") are not errors.
      connection: { application_name: "parley" },
    });
    const db = drizzle(preparing(client)) as unknown as Db;
    // Connects on first use (only instances running a delivery worker open it). Its one statement
    // (the delivery exchange) keeps a generic plan: planning it per call cost PostgreSQL a third as
    // much as running it (bench:webhooks), and with bitmap and sequential scans off the plan is the
    // same index walk for any batch.
    const queueClient = postgres(url, {
      ...socket,
      max: 2,
      onnotice: () => {},
      // No JIT: the claim's estimates (a skip scan, a limit per subscription) can pass jit_above_cost,
      // and compiling took 7–25 ms for a statement that runs in a fraction of one.
      connection: { application_name: "parley-queue", enable_bitmapscan: "off", enable_seqscan: "off", plan_cache_mode: "force_generic_plan", jit: "off" },
    });
    // Exports (COPY TO STDOUT) hold a connection while their reader reads; at most 4 at once, the
    // rest wait for one. Literals are written into COPY's text: quoting is exact with standard strings.
    const exportClient = postgres(url, {
      ...socket,
      max: 4,
      idle_timeout: 60,
      onnotice: () => {},
      connection: { application_name: "parley-export", standard_conforming_strings: "on" },
    });
    return {
      db,
      queue: drizzle(preparing(queueClient)) as unknown as Db,
      copyCsv: (query, options) => copyCsvOut(exportClient, query, options),
      kind: "postgres",
      // postgres.js listens on a connection of its own, re-established (and onListen called again) after a drop.
      listen: async (channel, onNotify, onListen) => {
        const { unlisten } = await client.listen(channel, onNotify, onListen);
        return unlisten;
      },
      ping: async () => void (await client`select 1`),
      close: async () => {
        await Promise.all([client.end({ timeout: 5 }), queueClient.end({ timeout: 5 }), exportClient.end({ timeout: 5 })]);
      },
    };
  }
  const { PGlite } = await import("@electric-sql/pglite");
  const { drizzle } = await import("drizzle-orm/pglite");
  const { pgliteAssets } = await import("./pglite-assets.ts");
  let dataDir: string | undefined;
  if (location.dataDir) {
    mkdirSync(location.dataDir, { recursive: true });
    dataDir = join(location.dataDir, "pg");
  }
  const pg = await PGlite.create({ dataDir, ...(await pgliteAssets()) });
  const db = drizzle(pg) as unknown as Db;
  return {
    db,
    kind: "pglite",
    listen: async (channel, onNotify, onListen) => {
      const unlisten = await pg.listen(channel, onNotify);
      onListen();
      return unlisten;
    },
    ping: async () => void (await db.execute(sql`select 1`)),
    close: () => pg.close(),
  };
}
