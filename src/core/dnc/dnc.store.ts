/** Queries on the do-not-call list. The only file of this capability that touches drizzle. */
import { and, asc, eq, gt, inArray, isNull, like, or, sql, type SQL } from "drizzle-orm";
import type { DbOrTx } from "../db/db.ts";
import { dncEntries, type DncEntryRow } from "./dnc.schema.ts";

// 6 parameters a row: 1,000 rows stay far below PostgreSQL's 65,535 parameters a statement.
const CHUNK = 1000;

/** Entries that count at `now`: no expiry, or an expiry still ahead. */
function activeAt(now: number): SQL {
  return or(isNull(dncEntries.expires_at), gt(dncEntries.expires_at, now))!;
}

/** The entry of `e164` if it counts at `now`. */
export async function findActiveEntry(db: DbOrTx, accountId: string, e164: string, now: number): Promise<DncEntryRow | null> {
  const [row] = await db
    .select()
    .from(dncEntries)
    .where(and(eq(dncEntries.account_id, accountId), eq(dncEntries.e164, e164), activeAt(now)))
    .limit(1);
  return row ?? null;
}

/** Entries after `afterE164`, in number order. */
export async function listEntries(
  db: DbOrTx,
  accountId: string,
  filter: { digitsPrefix?: string; source?: string; includeExpired: boolean; now: number },
  afterE164: string | null,
  limit: number,
): Promise<DncEntryRow[]> {
  const conditions: SQL[] = [eq(dncEntries.account_id, accountId)];
  if (filter.digitsPrefix) conditions.push(like(dncEntries.e164, `${filter.digitsPrefix}%`));
  if (filter.source) conditions.push(eq(dncEntries.source, filter.source));
  if (!filter.includeExpired) conditions.push(activeAt(filter.now));
  if (afterE164) conditions.push(gt(dncEntries.e164, afterE164));
  return db
    .select()
    .from(dncEntries)
    .where(and(...conditions))
    .orderBy(asc(dncEntries.e164))
    .limit(limit);
}

/**
 * Lists numbers (distinct, normalized). A number listed already keeps the later expiry of its entry
 * and this one, no expiry counting as the latest (a permanent opt-out never lapses for an earlier
 * expiring entry); when this one's is later, the entry takes it with this call's source, time and
 * reason (the entry's reason stays when this one gives none). An expired entry is replaced. Returns
 * how many were not listed (or only expired) before this call. Call inside a transaction.
 */
export async function addEntries(
  db: DbOrTx,
  accountId: string,
  numbers: string[],
  entry: { reason: string | null; source: string; expires_at: number | null; created_at: number },
): Promise<number> {
  const now = entry.created_at;
  const expired = sql`(${dncEntries.expires_at} is not null and ${dncEntries.expires_at} <= ${now})`;
  let added = 0;
  for (let i = 0; i < numbers.length; i += CHUNK) {
    const chunk = numbers.slice(i, i + CHUNK);
    // Read under the transaction's own view, before the write: which numbers count as listed already.
    const listed = await db
      .select({ e164: dncEntries.e164 })
      .from(dncEntries)
      .where(and(eq(dncEntries.account_id, accountId), inArray(dncEntries.e164, chunk), activeAt(now)));
    added += chunk.length - listed.length;
    const rows = chunk.map((e164) => ({ account_id: accountId, e164, ...entry }));
    await db
      .insert(dncEntries)
      .values(rows)
      .onConflictDoUpdate({
        target: [dncEntries.account_id, dncEntries.e164],
        set: {
          reason: sql`case when ${expired} then excluded.reason else coalesce(excluded.reason, ${dncEntries.reason}) end`,
          source: sql`excluded.source`,
          expires_at: sql`excluded.expires_at`,
          created_at: sql`excluded.created_at`,
        },
        // Only an entry this one outlasts changes: an expired one, or one that ends before this one.
        setWhere: sql`${expired} or (${dncEntries.expires_at} is not null and (excluded.expires_at is null or excluded.expires_at > ${dncEntries.expires_at}))`,
      });
  }
  return added;
}

/** Removes numbers; returns how many of them counted at `now` (expired ones go too, uncounted). Call inside a transaction. */
export async function removeEntries(db: DbOrTx, accountId: string, numbers: string[], now: number): Promise<number> {
  let removed = 0;
  for (let i = 0; i < numbers.length; i += CHUNK) {
    const gone = await db
      .delete(dncEntries)
      .where(and(eq(dncEntries.account_id, accountId), inArray(dncEntries.e164, numbers.slice(i, i + CHUNK))))
      .returning({ expires_at: dncEntries.expires_at });
    removed += gone.filter((r) => r.expires_at === null || r.expires_at > now).length;
  }
  return removed;
}
