import { bigint, check, index, integer, pgTable, primaryKey, smallint, text } from "drizzle-orm/pg-core";
import { sql } from "drizzle-orm";
import { epochSeconds } from "../db/columns.ts";

/**
 * Uploaded audio (SPEC.md: media_file). The bytes live in the object store under `object_key`; the row
 * holds what was measured from them when they were uploaded, never what the client claimed.
 */
export const mediaFiles = pgTable(
  "media_file",
  {
    account_id: text("account_id").notNull(),
    id: text("id").notNull(),
    name: text("name").notNull(),
    kind: text("kind").notNull(),
    /** `<account_id>/media/<id>.<format>`. */
    object_key: text("object_key").notNull(),
    format: text("format").notNull(),
    content_type: text("content_type").notNull(),
    size_bytes: bigint("size_bytes", { mode: "number" }).notNull(),
    duration_ms: integer("duration_ms").notNull(),
    /** Null only for a format whose probe cannot tell (none of today's). */
    sample_rate: integer("sample_rate"),
    channels: smallint("channels"),
    created_at: epochSeconds("created_at").notNull(),
  },
  (t) => [
    primaryKey({ columns: [t.account_id, t.id] }),
    index("media_file_kind_idx").on(t.account_id, t.kind, t.id),
    check("media_file_kind_chk", sql`${t.kind} in ('prompt','moh','greeting','announcement')`),
    check("media_file_format_chk", sql`${t.format} in ('wav','mp3')`),
    check("media_file_name_chk", sql`char_length(${t.name}) between 1 and 200`),
    check("media_file_size_chk", sql`${t.size_bytes} > 0`),
    check("media_file_duration_chk", sql`${t.duration_ms} >= 0`),
  ],
);

export type MediaFileRow = typeof mediaFiles.$inferSelect;

/**
 * Ordered sets of media (SPEC.md: media_playlist / media_playlist_item), e.g. a music-on-hold rotation.
 * SPEC.md lists no endpoint for them; the tables exist so flows and queues can refer to them.
 */
export const mediaPlaylists = pgTable(
  "media_playlist",
  {
    account_id: text("account_id").notNull(),
    id: text("id").notNull(),
    name: text("name").notNull(),
    created_at: epochSeconds("created_at").notNull(),
    updated_at: epochSeconds("updated_at").notNull(),
  },
  (t) => [primaryKey({ columns: [t.account_id, t.id] })],
);

/** One entry of a playlist; `position` orders the entries (0-based, unique within the playlist). */
export const mediaPlaylistItems = pgTable(
  "media_playlist_item",
  {
    account_id: text("account_id").notNull(),
    playlist_id: text("playlist_id").notNull(),
    position: integer("position").notNull(),
    media_id: text("media_id").notNull(),
  },
  (t) => [
    primaryKey({ columns: [t.account_id, t.playlist_id, t.position] }),
    // Finds the playlists a media file is in, for the in-use check before deleting it.
    index("media_playlist_item_media_idx").on(t.account_id, t.media_id),
    check("media_playlist_item_position_chk", sql`${t.position} >= 0`),
  ],
);
