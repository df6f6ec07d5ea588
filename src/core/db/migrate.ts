/**
 * Applies the SQL migrations drizzle-kit generated into `drizzle/`, embedded in the program through
 * `drizzle/index.ts` so the compiled binary carries them. Safe to run from many instances at once:
 * the whole run holds a PostgreSQL advisory lock inside one transaction.
 */
import { sql } from "drizzle-orm";
import type { Db, DbOrTx } from "./db.ts";

/** One migration file: its tag (file name without .sql) and its SQL text. */
export interface Migration {
  tag: string;
  sql: string;
}

/** Arbitrary constant naming Parley's migration lock among a database's advisory locks. */
const MIGRATION_LOCK = 7_215_011;

/** Rows of a raw query, whichever driver ran it (PGlite returns `{ rows }`, postgres.js an array). */
export async function rawRows<T>(db: DbOrTx, query: ReturnType<typeof sql>): Promise<T[]> {
  const result: unknown = await db.execute(query);
  if (Array.isArray(result)) return result as T[];
  return ((result as { rows?: T[] }).rows ?? []) as T[];
}

function hashOf(text: string): string {
  return new Bun.CryptoHasher("sha256").update(text).digest("hex");
}

/**
 * Applies every migration not yet applied, in order, in one transaction. Refuses to run when an
 * applied migration's text has changed since (a migration is never edited once shipped).
 * @returns the tags applied by this call.
 */
export async function migrate(db: Db, migrations: Migration[]): Promise<string[]> {
  return db.transaction(async (tx) => {
    await tx.execute(sql`select pg_advisory_xact_lock(${MIGRATION_LOCK})`);
    await tx.execute(
      sql`create table if not exists parley_migration (tag text primary key, hash text not null, applied_at bigint not null)`,
    );
    const applied = new Map(
      (await rawRows<{ tag: string; hash: string }>(tx, sql`select tag, hash from parley_migration`)).map((r) => [r.tag, r.hash]),
    );
    const done: string[] = [];
    for (const migration of migrations) {
      const hash = hashOf(migration.sql);
      const seen = applied.get(migration.tag);
      if (seen !== undefined) {
        if (seen !== hash) throw new Error(`Migration ${migration.tag} was changed after it was applied.`);
        continue;
      }
      for (const statement of migration.sql.split("--> statement-breakpoint")) {
        if (statement.trim()) await tx.execute(sql.raw(statement));
      }
      await tx.execute(
        sql`insert into parley_migration (tag, hash, applied_at) values (${migration.tag}, ${hash}, ${Math.floor(Date.now() / 1000)})`,
      );
      done.push(migration.tag);
    }
    return done;
  });
}
