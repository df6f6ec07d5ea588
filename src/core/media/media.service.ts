/**
 * Use cases on media files: upload (measure, store the bytes, record the row), read, list, open for
 * streaming, delete. Each takes the account explicitly; none knows about HTTP.
 */
import type { Db, DbOrTx } from "../db/db.ts";
import { nowSeconds } from "../db/columns.ts";
import { AppError, notFound, validationFailed } from "../errors/app-error.ts";
import { newId } from "../ids/ids.ts";
import type { Logger } from "../log/logger.ts";
import type { ObjectStore, StoredObject } from "../objects/object-store.ts";
import { decodeCursor, toPage } from "../pagination/pagination.ts";
import { assertNotInUse } from "../routing/references.ts";
import { AudioProbeError, probeAudio } from "./audio-probe.ts";
import type { MediaFileRow } from "./media.schema.ts";
import type { MediaModel } from "./media.model.ts";
import { deleteMediaFile, findMediaFile, insertMediaFile, listMediaFiles } from "./media.store.ts";

/** Largest media upload, bytes (50 MiB: about 55 minutes of 8 kHz μ-law, 26 minutes of 128 kbps MP3). */
export const MEDIA_MAX_BYTES = 50 * 1024 * 1024;

/** The content type each format is stored and served with. */
export const MEDIA_CONTENT_TYPES: Record<MediaModel.Format, string> = { wav: "audio/wav", mp3: "audio/mpeg" };

/** Body content types an upload may carry, and the format each implies (null: the `format` parameter decides). */
export const UPLOAD_CONTENT_TYPES: Record<string, MediaModel.Format | null> = {
  "audio/wav": "wav",
  "audio/x-wav": "wav",
  "audio/wave": "wav",
  "audio/mpeg": "mp3",
  "application/octet-stream": null,
};

/** What the media use cases need: the database, the object store, and a log for cleanup failures. */
export interface MediaDeps {
  db: Db;
  objects: ObjectStore;
  log: Logger;
}

/** Maps a row to the API shape (every field, fixed order). */
export function toMediaFile(row: MediaFileRow): MediaModel.MediaFile {
  return {
    id: row.id,
    name: row.name,
    kind: row.kind as MediaModel.Kind,
    format: row.format as MediaModel.Format,
    content_type: row.content_type,
    object_key: row.object_key,
    size_bytes: row.size_bytes,
    duration_ms: row.duration_ms,
    sample_rate: row.sample_rate,
    channels: row.channels,
    created_at: row.created_at,
  };
}

/**
 * The format of an upload, from its body's content type and the optional `format` parameter: they
 * must agree, and a generic `application/octet-stream` body needs the parameter.
 * @example uploadFormat("audio/x-wav", undefined) // "wav"
 */
export function uploadFormat(contentType: string, declared: MediaModel.Format | undefined): MediaModel.Format {
  const type = contentType.split(";")[0]!.trim().toLowerCase();
  if (!(type in UPLOAD_CONTENT_TYPES)) {
    throw new AppError("unsupported_media_type", `Send the audio as one of: ${Object.keys(UPLOAD_CONTENT_TYPES).join(", ")}.`);
  }
  const implied = UPLOAD_CONTENT_TYPES[type];
  if (implied && declared && implied !== declared) {
    throw validationFailed([{ path: "/query/format", message: `The body is sent as ${type} but format is ${declared}.` }]);
  }
  const format = declared ?? implied;
  if (!format) throw validationFailed([{ path: "/query/format", message: "Required when the body is application/octet-stream: wav or mp3." }]);
  return format;
}

/** The object store key of a media file: one folder per account, so an account's objects can be listed or moved together. */
export function mediaObjectKey(accountId: string, id: string, format: MediaModel.Format): string {
  return `${accountId}/media/${id}.${format}`;
}

/**
 * Measures and stores an uploaded file. The audio must parse as the declared format (400 on `/body`
 * otherwise); its duration, sample rate and channels come from the bytes. The object is written
 * first and the row after it, so a row never points at nothing; if the row cannot be written the
 * object is removed again.
 * @example await uploadMedia(deps, accountId, { name: "Welcome", kind: "prompt", format: "wav", bytes })
 */
export async function uploadMedia(deps: MediaDeps, accountId: string, upload: MediaModel.Upload): Promise<MediaModel.MediaFile> {
  if (upload.bytes.byteLength === 0) throw validationFailed([{ path: "/body", message: "The body is empty: send the audio file as the request body." }]);
  let info;
  try {
    info = probeAudio(upload.bytes, upload.format);
  } catch (error) {
    if (error instanceof AudioProbeError) throw validationFailed([{ path: "/body", message: error.message }], "The audio file is not valid.");
    throw error;
  }
  const id = newId("med");
  const key = mediaObjectKey(accountId, id, upload.format);
  const contentType = MEDIA_CONTENT_TYPES[upload.format];
  await deps.objects.put(key, upload.bytes, { contentType });
  try {
    const row = await deps.db.transaction((tx) =>
      insertMediaFile(tx, {
        account_id: accountId,
        id,
        name: upload.name,
        kind: upload.kind,
        object_key: key,
        format: upload.format,
        content_type: contentType,
        size_bytes: upload.bytes.byteLength,
        duration_ms: info.duration_ms,
        sample_rate: info.sample_rate,
        channels: info.channels,
        created_at: nowSeconds(),
      }),
    );
    return toMediaFile(row);
  } catch (error) {
    await deps.objects.delete(key).catch((cleanup: unknown) => {
      // The row failure is what the caller must see; an orphaned object only costs space.
      deps.log.error("media object not removed after a failed insert", { object_key: key, error: String(cleanup) });
    });
    throw error;
  }
}

/** One media file of the account (404 for another account's id). */
export async function getMedia(db: DbOrTx, accountId: string, id: string): Promise<MediaModel.MediaFile> {
  const row = await findMediaFile(db, accountId, id);
  if (!row) throw notFound("media file");
  return toMediaFile(row);
}

/** The account's media files, keyset-paginated, optionally narrowed by kind, format and name prefix. */
export async function listMedia(
  db: DbOrTx,
  accountId: string,
  page: { limit: number; cursor?: string },
  filter: MediaModel.ListFilter = {},
): Promise<{ data: MediaModel.MediaFile[]; next_cursor?: string }> {
  const rows = await listMediaFiles(db, accountId, filter, decodeCursor(page.cursor, "med"), page.limit);
  return toPage(rows, page.limit, toMediaFile);
}

/**
 * A media file and its stored bytes, for play and download. A row whose object has gone missing
 * is logged (it should never happen) and answered as 404.
 */
export async function openMedia(
  deps: MediaDeps,
  accountId: string,
  id: string,
): Promise<{ media: MediaModel.MediaFile; object: StoredObject }> {
  const media = await getMedia(deps.db, accountId, id);
  const object = await deps.objects.get(media.object_key);
  if (!object) {
    deps.log.error("media object missing", { account_id: accountId, media_id: id, object_key: media.object_key });
    throw new AppError("not_found", "The media file's audio is missing from storage.");
  }
  return { media, object };
}

/**
 * Deletes a media file: refused (409, `used_by`) while a greeting, music on hold or prompt refers to
 * it; then the row goes, then the stored bytes. If removing the bytes fails the deletion still
 * stands (the row is gone), and the orphaned object is logged.
 */
export async function deleteMedia(deps: MediaDeps, accountId: string, id: string): Promise<void> {
  const row = await deps.db.transaction(async (tx) => {
    const found = await findMediaFile(tx, accountId, id);
    if (!found) throw notFound("media file");
    await assertNotInUse(tx, accountId, "media", id);
    if (!(await deleteMediaFile(tx, accountId, id))) throw notFound("media file");
    return found;
  });
  try {
    await deps.objects.delete(row.object_key);
  } catch (error) {
    // The media file is deleted as far as anyone can see; the bytes left behind only cost space.
    deps.log.error("media object not removed after delete", { object_key: row.object_key, error: String(error) });
  }
}
