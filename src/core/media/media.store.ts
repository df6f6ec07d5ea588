/** Queries on media files. The only file of this capability that touches drizzle. */
import { and, asc, eq, gt, ilike, type SQL } from "drizzle-orm";
import type { DbOrTx } from "../db/db.ts";
import { mediaFiles, type MediaFileRow } from "./media.schema.ts";
import type { MediaModel } from "./media.model.ts";
import { likePrefix } from "../db/sql-text.ts";

export type NewMediaFileRow = typeof mediaFiles.$inferInsert;

export async function insertMediaFile(db: DbOrTx, row: NewMediaFileRow): Promise<MediaFileRow> {
  const [created] = await db.insert(mediaFiles).values(row).returning();
  if (!created) throw new Error("insert returned no row");
  return created;
}

export async function findMediaFile(db: DbOrTx, accountId: string, id: string): Promise<MediaFileRow | null> {
  const [row] = await db
    .select()
    .from(mediaFiles)
    .where(and(eq(mediaFiles.account_id, accountId), eq(mediaFiles.id, id)))
    .limit(1);
  return row ?? null;
}

/** An account's media files after `afterId`, in id (creation) order, narrowed by `filter`. */
export async function listMediaFiles(
  db: DbOrTx,
  accountId: string,
  filter: MediaModel.ListFilter,
  afterId: string | null,
  limit: number,
): Promise<MediaFileRow[]> {
  const conditions: SQL[] = [eq(mediaFiles.account_id, accountId)];
  if (filter.kind) conditions.push(eq(mediaFiles.kind, filter.kind));
  if (filter.format) conditions.push(eq(mediaFiles.format, filter.format));
  if (filter.q) conditions.push(ilike(mediaFiles.name, likePrefix(filter.q)));
  if (afterId) conditions.push(gt(mediaFiles.id, afterId));
  return db
    .select()
    .from(mediaFiles)
    .where(and(...conditions))
    .orderBy(asc(mediaFiles.id))
    .limit(limit);
}

/** Deletes one media file row. False when there was none in this account. */
export async function deleteMediaFile(db: DbOrTx, accountId: string, id: string): Promise<boolean> {
  const rows = await db
    .delete(mediaFiles)
    .where(and(eq(mediaFiles.account_id, accountId), eq(mediaFiles.id, id)))
    .returning({ id: mediaFiles.id });
  return rows.length > 0;
}
