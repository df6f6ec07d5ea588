/** Queries on bans and the allowlist. The only file of this capability that touches drizzle. */
import { and, asc, desc, eq, gte, inArray, like, lt, ne, notInArray, or, sql, type SQL } from "drizzle-orm";
import type { DbOrTx } from "../db/db.ts";
import { likePrefix } from "../db/sql-text.ts";
import { securityAllow, securityBans, type SecurityAllowRow, type SecurityBanRow } from "./security.schema.ts";

/** Every allowlist entry, in address order (the list is small: operator and carrier ranges). */
export function listAllow(db: DbOrTx): Promise<SecurityAllowRow[]> {
  return db.select().from(securityAllow).orderBy(asc(securityAllow.address));
}

/** Adds an entry; an existing one keeps its note unless a new note is given. Returns the row. */
export async function upsertAllow(db: DbOrTx, row: SecurityAllowRow): Promise<SecurityAllowRow> {
  const [written] = await db
    .insert(securityAllow)
    .values(row)
    .onConflictDoUpdate({ target: securityAllow.address, set: { note: sql`coalesce(excluded.note, ${securityAllow.note})` } })
    .returning();
  return written!;
}

/** Removes an entry; true when it existed. */
export async function deleteAllow(db: DbOrTx, address: string): Promise<boolean> {
  const gone = await db.delete(securityAllow).where(eq(securityAllow.address, address)).returning({ address: securityAllow.address });
  return gone.length > 0;
}

/** The rows of `node` for these addresses. */
export function bansOfNode(db: DbOrTx, node: string, ips: string[]): Promise<SecurityBanRow[]> {
  if (ips.length === 0) return Promise.resolve([]);
  return db.select().from(securityBans).where(and(eq(securityBans.node, node), inArray(securityBans.ip, ips)));
}

/** Active bans of these addresses held by other nodes than `node`. */
export function activeBansElsewhere(db: DbOrTx, node: string, ips: string[]): Promise<Array<{ ip: string; node: string }>> {
  if (ips.length === 0) return Promise.resolve([]);
  return db
    .select({ ip: securityBans.ip, node: securityBans.node })
    .from(securityBans)
    .where(and(ne(securityBans.node, node), eq(securityBans.status, "active"), inArray(securityBans.ip, ips)));
}

/** Rows per statement: each row is 10 parameters, and a statement may carry at most 65,535. */
const BANS_PER_STATEMENT = 2_000;

/** Inserts or replaces the rows (by address and node), in statements of BANS_PER_STATEMENT rows. */
export async function writeBans(db: DbOrTx, rows: SecurityBanRow[]): Promise<void> {
  for (let at = 0; at < rows.length; at += BANS_PER_STATEMENT) await writeBanChunk(db, rows.slice(at, at + BANS_PER_STATEMENT));
}

async function writeBanChunk(db: DbOrTx, rows: SecurityBanRow[]): Promise<void> {
  await db
    .insert(securityBans)
    .values(rows)
    .onConflictDoUpdate({
      target: [securityBans.ip, securityBans.node],
      set: {
        status: sql`excluded.status`,
        reason: sql`excluded.reason`,
        hits: sql`excluded.hits`,
        ban_count: sql`excluded.ban_count`,
        last_seen: sql`excluded.last_seen`,
        expires_at: sql`excluded.expires_at`,
        flagged: sql`excluded.flagged`,
      },
    });
}

/** Marks flagged every row of these addresses (a repeat offender is flagged on every node's row). */
export async function flagAddresses(db: DbOrTx, ips: string[]): Promise<void> {
  if (ips.length === 0) return;
  await db.update(securityBans).set({ flagged: 1 }).where(inArray(securityBans.ip, ips));
}

/** The node's active bans that its latest snapshot no longer carries: expired. */
export async function expireMissing(db: DbOrTx, node: string, stillBanned: string[]): Promise<void> {
  const conditions: SQL[] = [eq(securityBans.node, node), eq(securityBans.status, "active")];
  if (stillBanned.length) conditions.push(sql`${securityBans.ip} not in (${sql.join(stillBanned.map((ip) => sql`${ip}`), sql`, `)})`);
  await db.update(securityBans).set({ status: "expired" }).where(and(...conditions));
}

/**
 * Active bans whose deadline passed, or whose node has sent no report since `silentBefore`: expired. A
 * node's last report is the latest last_seen of its rows, not each row's own: a partial snapshot leaves
 * out bans the node still holds (Kamailio walks its table in one order, so the same ones each time).
 */
export async function expireStale(db: DbOrTx, now: number, silentBefore: number): Promise<void> {
  const reporting = db.selectDistinct({ node: securityBans.node }).from(securityBans).where(gte(securityBans.last_seen, silentBefore));
  await db
    .update(securityBans)
    .set({ status: "expired" })
    .where(
      and(
        eq(securityBans.status, "active"),
        or(and(sql`${securityBans.expires_at} is not null`, lt(securityBans.expires_at, now + 1)), notInArray(securityBans.node, reporting)),
      ),
    );
}

/** Active bans (every node); the caller matches them against a range. */
export function activeBans(db: DbOrTx): Promise<Array<{ ip: string; node: string }>> {
  return db.select({ ip: securityBans.ip, node: securityBans.node }).from(securityBans).where(eq(securityBans.status, "active"));
}

/** Marks these addresses' active bans lifted, on every node. */
export async function liftBans(db: DbOrTx, ips: string[]): Promise<number> {
  if (ips.length === 0) return 0;
  const lifted = await db
    .update(securityBans)
    .set({ status: "lifted" })
    .where(and(eq(securityBans.status, "active"), inArray(securityBans.ip, ips)))
    .returning({ ip: securityBans.ip });
  return lifted.length;
}

/** Bans, most recently seen first. */
export function listBans(db: DbOrTx, filter: { status?: string; ipPrefix?: string; flagged?: 0 | 1; limit: number }): Promise<SecurityBanRow[]> {
  const conditions: SQL[] = [];
  if (filter.status) conditions.push(eq(securityBans.status, filter.status));
  if (filter.ipPrefix) conditions.push(like(securityBans.ip, likePrefix(filter.ipPrefix)));
  if (filter.flagged !== undefined) conditions.push(eq(securityBans.flagged, filter.flagged));
  return db
    .select()
    .from(securityBans)
    .where(conditions.length ? and(...conditions) : undefined)
    .orderBy(desc(securityBans.last_seen), asc(securityBans.ip), asc(securityBans.node))
    .limit(filter.limit);
}
