/**
 * GET, POST /v1/media; GET, DELETE /v1/media/{id}; GET /v1/media/{id}/play and /download.
 *
 * The upload is the one public route whose body is not JSON: the raw audio file, with name, kind and
 * format in the query string. The host lets it through as a raw-body route (its content types and a
 * size ceiling checked before anything is read); this module reads the body itself, counting bytes
 * as they arrive, after the credential is checked and before the Idempotency-Key is looked at, so a
 * retried upload is recognised by a digest of its bytes.
 */
import { Elysia, t } from "elysia";
import { Type as T } from "@sinclair/typebox";
import type { Platform } from "../../core/platform.ts";
import { AppError, validationFailed } from "../../core/errors/app-error.ts";
import { MediaModel } from "../../core/media/media.model.ts";
import {
  MEDIA_MAX_BYTES,
  deleteMedia,
  getMedia,
  listMedia,
  openMedia,
  uploadFormat,
  uploadMedia,
  type MediaDeps,
} from "../../core/media/media.service.ts";
import { decideRange } from "../../core/media/byte-range.ts";
import type { StoredObject } from "../../core/objects/object-store.ts";
import { DEFAULT_PAGE_SIZE } from "../../core/pagination/pagination.ts";
import { PageQuery } from "../../http/page-query.ts";
import { apiModels } from "../../http/api-models.ts";
import { DataReply, ERROR_DESCRIPTIONS, ListReply, OkReply, errorReplies } from "../../http/reply-models.ts";
import { apiAccess } from "../plugins/api-access.ts";

export interface MediaRouteOptions {
  /** Largest upload in bytes; default MEDIA_MAX_BYTES (50 MiB). Tests set a small one. */
  maxBytes?: number;
}

/** The raw upload as the handler receives it. Serialises to its size and SHA-256 for the Idempotency-Key fingerprint. */
class UploadedAudio {
  constructor(readonly bytes: Uint8Array) {}
  toJSON() {
    return { size: this.bytes.byteLength, sha256: new Bun.CryptoHasher("sha256").update(this.bytes).digest("hex") };
  }
}

/** Reads a request body, refusing (413) as soon as it passes `maxBytes`, whatever Content-Length claimed. */
async function readBodyWithin(request: Request, maxBytes: number): Promise<Uint8Array> {
  const tooLarge = () => new AppError("payload_too_large", `The file is larger than ${maxBytes} bytes, the limit for media uploads.`);
  if (Number(request.headers.get("content-length") ?? "0") > maxBytes) throw tooLarge();
  if (!request.body) return new Uint8Array();
  const reader = request.body.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.byteLength;
    if (total > maxBytes) {
      await reader.cancel().catch(() => {}); // the refusal stands whether or not the stream closes cleanly
      throw tooLarge();
    }
    chunks.push(value);
  }
  if (chunks.length === 1) return chunks[0]!;
  const bytes = new Uint8Array(total);
  let offset = 0;
  for (const chunk of chunks) {
    bytes.set(chunk, offset);
    offset += chunk.byteLength;
  }
  return bytes;
}

/** `filename="…"` safe in a header, plus `filename*` (RFC 6266/8187) when the name is not plain ASCII. */
function dispositionFor(kind: "inline" | "attachment", media: MediaModel.MediaFile): string {
  const suffix = `.${media.format}`;
  const filename = media.name.toLowerCase().endsWith(suffix) ? media.name : `${media.name}${suffix}`;
  const ascii = filename.replace(/[^\x20-\x7e]|["\\]/g, "_");
  if (ascii === filename) return `${kind}; filename="${filename}"`;
  return `${kind}; filename="${ascii}"; filename*=UTF-8''${encodeURIComponent(filename).replace(/['()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`)}`;
}

/** The whole file (200), one range of it (206), or 416, with the headers a media player needs to seek. */
function streamMedia(request: Request, media: MediaModel.MediaFile, object: StoredObject, disposition: "inline" | "attachment"): Response {
  const etag = `"${media.id}"`; // an id's bytes never change: there is no update
  const lastModified = new Date(media.created_at * 1000).toUTCString();
  const headers: Record<string, string> = {
    "content-type": media.content_type,
    "accept-ranges": "bytes",
    "content-disposition": dispositionFor(disposition, media),
    etag,
    "last-modified": lastModified,
    "cache-control": "private",
  };
  const size = object.size;
  // If-Range: a range is only honoured while the client's copy is still this file.
  const ifRange = request.headers.get("if-range");
  const decision = ifRange !== null && ifRange !== etag && ifRange !== lastModified ? { kind: "full" as const } : decideRange(request.headers.get("range"), size);
  if (decision.kind === "unsatisfiable") {
    throw new AppError("range_not_satisfiable", `The range is outside the file (${size} bytes).`, {}, { "content-range": `bytes */${size}`, "accept-ranges": "bytes" });
  }
  if (decision.kind === "partial") {
    return new Response(object.stream({ start: decision.start, end: decision.end }), {
      status: 206,
      headers: { ...headers, "content-range": `bytes ${decision.start}-${decision.end}/${size}`, "content-length": String(decision.end - decision.start + 1) },
    });
  }
  return new Response(object.stream(), { status: 200, headers: { ...headers, "content-length": String(size) } });
}

const UploadQuery = t.Object(
  {
    name: t.String({ minLength: 1, maxLength: 200, description: "Display name, 1–200 characters; also the download file name." }),
    kind: MediaModel.Kind,
    format: t.Optional(
      t.Union([t.Literal("wav"), t.Literal("mp3")], {
        description: "wav or mp3. Optional when the Content-Type names it (audio/wav, audio/mpeg); required with application/octet-stream.",
      }),
    ),
  },
  { additionalProperties: false },
);

const ListQuery = t.Object(
  {
    ...PageQuery.properties,
    kind: t.Optional(MediaModel.Kind),
    format: t.Optional(MediaModel.Format),
    q: t.Optional(t.String({ minLength: 1, maxLength: 200, description: "Name prefix, case-insensitive." })),
  },
  { additionalProperties: false },
);

const IdParams = T.Object({ id: T.String({ maxLength: 64, description: "med_… id." }) });

const errorRef = (status: keyof typeof ERROR_DESCRIPTIONS) => ({
  description: ERROR_DESCRIPTIONS[status]!,
  content: { "application/json": { schema: { $ref: "#/components/schemas/Error" } } },
});

const binary = { schema: { type: "string" as const, format: "binary" } };
const audioContent = { "audio/wav": binary, "audio/mpeg": binary };

/** OpenAPI replies of play and download, which send audio rather than JSON. */
function audioReplies(what: string) {
  return {
    200: {
      description: `${what}: the whole file. Content-Length, Accept-Ranges: bytes, ETag.`,
      headers: { "Content-Disposition": { schema: { type: "string" as const } }, "Accept-Ranges": { schema: { type: "string" as const } } },
      content: audioContent,
    },
    206: {
      description: `${what}: the single byte range asked for with Range: bytes=…`,
      headers: { "Content-Range": { schema: { type: "string" as const }, description: "bytes start-end/size" } },
      content: audioContent,
    },
    401: errorRef(401),
    403: errorRef(403),
    404: errorRef(404),
    416: errorRef(416),
    429: errorRef(429),
  };
}

/** The media routes; `options.maxBytes` lowers the upload limit (tests). */
export function mediaRoutes(platform: Platform, options: MediaRouteOptions = {}) {
  const maxBytes = options.maxBytes ?? MEDIA_MAX_BYTES;
  const deps: MediaDeps = { db: platform.db, objects: platform.objects, log: platform.log.child({ module: "media" }) };
  const tags = ["Media"];
  return new Elysia({ name: "routes-media", prefix: "/v1/media", normalize: false })
    .use(apiModels)
    .use(apiAccess(platform))
    .get(
      "",
      async ({ principal, query }) => ({
        ok: true as const,
        ...(await listMedia(
          platform.db,
          principal.accountId,
          { limit: query.limit ?? DEFAULT_PAGE_SIZE, cursor: query.cursor },
          { kind: query.kind, format: query.format, q: query.q },
        )),
      }),
      {
        scope: "media",
        query: ListQuery,
        response: { 200: ListReply(MediaModel.MediaFile), ...errorReplies(400, 401, 403, 429) },
        detail: {
          tags,
          summary: "List media files",
          description: "Oldest first, keyset-paginated. Filters: kind, format, q (name prefix, case-insensitive).",
        },
      },
    )
    .post(
      "",
      async ({ principal, query, body, request, status }) => {
        if (!(body instanceof UploadedAudio)) throw new Error("the upload body was not read");
        const format = uploadFormat(request.headers.get("content-type") ?? "", query.format);
        const data = await uploadMedia(deps, principal.accountId, { name: query.name, kind: query.kind, format, bytes: body.bytes });
        return status(201, { ok: true as const, data });
      },
      {
        scope: "media",
        idempotent: true,
        parse: "none",
        query: UploadQuery,
        // Runs after the credential check and before the Idempotency-Key hook, which fingerprints `body`.
        async beforeHandle(context) {
          const bytes = await readBodyWithin(context.request, maxBytes);
          if (bytes.byteLength === 0) throw validationFailed([{ path: "/body", message: "The body is empty: send the audio file as the request body." }]);
          (context as { body: unknown }).body = new UploadedAudio(bytes);
        },
        response: { 201: DataReply(MediaModel.MediaFile), ...errorReplies(400, 401, 403, 409, 413, 415, 422, 429) },
        detail: {
          tags,
          summary: "Upload an audio file",
          description:
            `The body is the raw file (not JSON, not multipart), up to ${MEDIA_MAX_BYTES} bytes, sent as audio/wav, audio/x-wav, ` +
            "audio/wave, audio/mpeg or application/octet-stream; name and kind (and format, unless the Content-Type names it) go in " +
            "the query string. WAV must be PCM 8/16-bit, μ-law or A-law; MP3 must be MPEG Layer III. duration_ms, sample_rate and " +
            "channels are measured from the file: a file that does not parse as its format is refused with 400 on /body.",
          requestBody: {
            required: true,
            content: { "audio/wav": binary, "audio/x-wav": binary, "audio/wave": binary, "audio/mpeg": binary, "application/octet-stream": binary },
          },
        },
      },
    )
    .get("/:id", async ({ principal, params }) => ({ ok: true as const, data: await getMedia(platform.db, principal.accountId, params.id) }), {
      scope: "media",
      params: IdParams,
      response: { 200: DataReply(MediaModel.MediaFile), ...errorReplies(400, 401, 403, 404, 429) },
      detail: { tags, summary: "Get a media file's details" },
    })
    .delete(
      "/:id",
      async ({ principal, params }) => {
        await deleteMedia(deps, principal.accountId, params.id);
        return { ok: true as const };
      },
      {
        scope: "media",
        idempotent: true,
        params: IdParams,
        response: { 200: OkReply, ...errorReplies(400, 401, 403, 404, 409, 422, 429) },
        detail: {
          tags,
          summary: "Delete a media file",
          description: "Refused with 409 (used_by) while a voicemail greeting, a music-on-hold setting or a queue prompt uses it.",
        },
      },
    )
    .get(
      "/:id/play",
      async ({ principal, params, request }) => {
        const { media, object } = await openMedia(deps, principal.accountId, params.id);
        return streamMedia(request, media, object, "inline");
      },
      {
        scope: "media",
        params: IdParams,
        detail: {
          tags,
          summary: "Stream a media file for playback",
          description: "Content-Disposition: inline, with the file's audio content type. Supports Range (206) and If-Range for seeking.",
          responses: audioReplies("The audio"),
        },
      },
    )
    .get(
      "/:id/download",
      async ({ principal, params, request }) => {
        const { media, object } = await openMedia(deps, principal.accountId, params.id);
        return streamMedia(request, media, object, "attachment");
      },
      {
        scope: "media",
        params: IdParams,
        detail: {
          tags,
          summary: "Download a media file",
          description: 'Content-Disposition: attachment; filename="<name>.<format>". Supports Range (206) to resume.',
          responses: audioReplies("The file"),
        },
      },
    );
}
