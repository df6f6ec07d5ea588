/**
 * Blob storage for recordings, voicemail, media and faxes. One interface; the filesystem store is the
 * embedded default, an S3 store will sit behind the same interface for scale-out.
 *
 * Keys are relative, slash-separated paths such as `acc_X/media/med_Y.wav`. They are built by
 * server code, never taken verbatim from a request, but they are still validated on every call
 * because a key becomes a filesystem path.
 */

/** Anything `put` can store. Strings are stored as UTF-8. */
export type ObjectBody = Blob | ArrayBuffer | Uint8Array | ReadableStream<Uint8Array> | string;

/** A byte range; `end` is inclusive and defaults to the last byte (as in an HTTP Range header). */
export interface ByteRange {
  start: number;
  end?: number;
}

/** What `head` returns. */
export interface ObjectInfo {
  key: string;
  /** Bytes. */
  size: number;
  contentType: string;
}

/** An object found by `get`; reading its content is deferred to `stream` or `blob`. */
export interface StoredObject extends ObjectInfo {
  /** The content, or only `range` of it (clamped to the object's size). */
  stream(range?: ByteRange): ReadableStream<Uint8Array>;
  /** The whole content as a lazily read Blob typed with `contentType`. */
  blob(): Blob;
}

export interface ObjectStore {
  /**
   * Stores `body` under `key`, replacing any object there. Atomic: readers see the old object or
   * the whole new one, and a failed put (including a stream that errors midway) stores nothing.
   * Without `contentType`, a Blob's own type is used, else one derived from the key's extension.
   */
  put(key: string, body: ObjectBody, opts?: { contentType?: string }): Promise<{ key: string; size: number }>;
  /** The object under `key`, or null when there is none. */
  get(key: string): Promise<StoredObject | null>;
  /** Size and content type of the object under `key`, or null when there is none. */
  head(key: string): Promise<ObjectInfo | null>;
  /** Deletes the object under `key`. False when there was none. */
  delete(key: string): Promise<boolean>;
  /** Every key starting with `prefix` (a plain string prefix, as in S3), in lexicographic order. */
  list(prefix: string): AsyncIterable<string>;
}

/** The longest key accepted, in characters. */
export const MAX_OBJECT_KEY_LENGTH = 512;

// C0 controls (NUL included), DEL and C1 controls: invisible in logs and unsafe in paths and headers.
const CONTROL_CHARS = /[\u0000-\u001f\u007f-\u009f]/;

/**
 * Throws an Error unless `key` is a safe object key: non-empty, at most 512 characters, relative,
 * `/`-separated, with no backslash, no control character (NUL included), no empty segment, and no
 * segment starting with `.` (which rules out `.` and `..`). The rules are the same for every store,
 * so a key accepted by one is accepted by all; the filesystem store relies on the last rule to keep
 * its temporary and sidecar files (which start with `.`) out of the key space.
 */
export function validateObjectKey(key: string): void {
  const problem = objectKeyProblem(key);
  if (problem) throw new Error(`Invalid object key ${describeKey(key)}: ${problem}.`);
}

function objectKeyProblem(key: string): string | null {
  if (typeof key !== "string" || key.length === 0) return "it is empty";
  if (key.length > MAX_OBJECT_KEY_LENGTH) return `it is longer than ${MAX_OBJECT_KEY_LENGTH} characters`;
  if (CONTROL_CHARS.test(key)) return "it contains a control character";
  if (key.includes("\\")) return "it contains a backslash";
  if (key.startsWith("/")) return "it is an absolute path";
  for (const segment of key.split("/")) {
    if (segment === "") return "it has an empty path segment";
    if (segment === "." || segment === "..") return `it has a '${segment}' segment`;
    if (segment.startsWith(".")) return "a path segment starts with '.'";
  }
  return null;
}

// Keys are not secret, but a hostile one may be huge or full of control characters.
function describeKey(key: string): string {
  if (typeof key !== "string") return String(key);
  const shown = key.length > 80 ? `${key.slice(0, 80)}…` : key;
  return JSON.stringify(shown);
}
