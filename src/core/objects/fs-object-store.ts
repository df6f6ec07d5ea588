/**
 * The embedded object store: one file per object under a root directory (`DATA_DIR/objects`).
 *
 * Layout for key `acc_X/media/med_Y.wav`:
 *   root/acc_X/media/med_Y.wav                 the content
 *   root/acc_X/media/.med_Y.wav.meta.json      `{ "contentType": … }`, only when one was given
 *   root/acc_X/media/.med_Y.wav.<uuid>.tmp     a put in progress (or one cut short by a crash)
 * Keys never have a segment starting with `.` (see validateObjectKey), so the hidden files can
 * never collide with, or be listed as, an object.
 */
import type { FileHandle } from "node:fs/promises";
import { mkdir, open, readdir, readFile, rename, stat, unlink } from "node:fs/promises";
import { basename, dirname, join, resolve, sep } from "node:path";
import {
  validateObjectKey,
  type ByteRange,
  type ObjectBody,
  type ObjectInfo,
  type ObjectStore,
  type StoredObject,
} from "./object-store.ts";

/**
 * An object store on the local filesystem under `root` (created on first write). Puts are atomic
 * (temp file in the same directory, fsync, rename) and last-writer-wins. Content types given at put
 * time live in a hidden sidecar; otherwise they are derived from the key's extension.
 *
 * Reads are not snapshots: `get` reads size and type, the content is read when streamed, so an
 * object replaced or deleted in between is read as it is then (or the stream errors). Callers
 * serving a recording never race with its replacement in practice, and pinning an open file per
 * `get` would leak descriptors whenever a caller never reads.
 */
export function createFsObjectStore(root: string): ObjectStore {
  const base = resolve(root);

  /** The file for a validated key; refuses anything that would land outside `base` as a last guard. */
  function pathFor(key: string): string {
    validateObjectKey(key);
    const path = join(base, ...key.split("/"));
    if (!path.startsWith(base + sep)) throw new Error("Invalid object key: it resolves outside the store.");
    return path;
  }

  async function head(key: string): Promise<ObjectInfo | null> {
    const path = pathFor(key);
    const size = await fileSize(path);
    if (size === null) return null;
    return { key, size, contentType: await readContentType(path) };
  }

  async function* walk(dirKey: string, prefix: string): AsyncGenerator<string> {
    let entries;
    try {
      entries = await readdir(dirKey ? pathFor(dirKey) : base, { withFileTypes: true });
    } catch (error) {
      if (isMissing(error)) return;
      throw error;
    }
    // Sorting directories as `name/` makes a depth-first walk come out in plain key order
    // (`a.txt` < `a/b`), which is the order S3 lists in.
    const children = entries
      .filter((e) => !e.name.startsWith(".") && (e.isFile() || e.isDirectory()))
      .map((e) => ({ name: e.name, isDir: e.isDirectory(), sortKey: e.isDirectory() ? `${e.name}/` : e.name }))
      .sort((a, b) => (a.sortKey < b.sortKey ? -1 : a.sortKey > b.sortKey ? 1 : 0));
    for (const child of children) {
      const key = dirKey ? `${dirKey}/${child.name}` : child.name;
      if (!isValidKey(key)) continue; // something put there by hand that no caller could address
      if (child.isDir) {
        if (`${key}/`.startsWith(prefix)) yield* walk(key, prefix);
      } else if (key.startsWith(prefix)) {
        yield key;
      }
    }
  }

  return {
    async put(key, body, opts) {
      const path = pathFor(key);
      const contentType = opts?.contentType ?? (body instanceof Blob && body.type ? body.type : undefined);
      if (contentType !== undefined) validateContentType(contentType);
      const dir = dirname(path);
      const name = basename(path);
      const temp = join(dir, `.${name}.${crypto.randomUUID()}.tmp`);
      const metaTemp = contentType === undefined ? null : join(dir, `.${name}.${crypto.randomUUID()}.meta.tmp`);
      try {
        await mkdir(dir, { recursive: true });
        const size = await writeDurably(temp, body);
        if (metaTemp) await writeDurably(metaTemp, JSON.stringify({ contentType }));
        await rename(temp, path);
        // The two renames are back to back; a crash between them can at worst pair the new content
        // with the previous content type, never expose partial content.
        if (metaTemp) await rename(metaTemp, metaPathOf(path));
        else await removeIfPresent(metaPathOf(path));
        return { key, size };
      } catch (error) {
        // Best effort: a cleanup failure must not hide why the put failed.
        await removeIfPresent(temp).catch(() => {});
        if (metaTemp) await removeIfPresent(metaTemp).catch(() => {});
        const code = (error as NodeJS.ErrnoException | null)?.code; // a stream may error with anything
        if (code === "ENOTDIR" || code === "EEXIST" || code === "EISDIR") {
          throw new Error(
            "Cannot store the object: its key is already a folder of other keys, or one of its folders is an object.",
            { cause: error },
          );
        }
        throw error;
      }
    },

    async get(key) {
      const info = await head(key);
      if (!info) return null;
      const path = pathFor(key);
      const object: StoredObject = {
        ...info,
        stream(range?: ByteRange) {
          const [start, endExclusive] = resolveRange(range, info.size);
          return Bun.file(path).slice(start, endExclusive).stream();
        },
        blob() {
          return Bun.file(path, { type: info.contentType });
        },
      };
      return object;
    },

    head,

    async delete(key) {
      const path = pathFor(key);
      if ((await fileSize(path)) === null) return false;
      try {
        await unlink(path);
      } catch (error) {
        if (isMissing(error)) return false; // deleted concurrently
        throw error;
      }
      // Empty folders are left in place: removing them would race with a put that has just
      // created the folder and is about to open its temp file there.
      await removeIfPresent(metaPathOf(path));
      return true;
    },

    list(prefix) {
      if (prefix !== "") validateObjectKey(prefix.endsWith("/") ? prefix.slice(0, -1) : prefix);
      const slash = prefix.lastIndexOf("/");
      return walk(slash === -1 ? "" : prefix.slice(0, slash), prefix);
    },
  };
}

function metaPathOf(path: string): string {
  return join(dirname(path), `.${basename(path)}.meta.json`);
}

/** The size of a regular file, or null when there is none at `path`. */
async function fileSize(path: string): Promise<number | null> {
  try {
    const info = await stat(path);
    return info.isFile() ? info.size : null;
  } catch (error) {
    if (isMissing(error)) return null;
    throw error;
  }
}

async function readContentType(path: string): Promise<string> {
  try {
    const meta: unknown = JSON.parse(await readFile(metaPathOf(path), "utf8"));
    if (meta && typeof meta === "object" && "contentType" in meta && typeof meta.contentType === "string") {
      return meta.contentType;
    }
  } catch {
    // No sidecar (the usual case) or an unreadable one: a wrong guess beats an unreadable object.
  }
  return Bun.file(path).type;
}

/** Writes `body` to a new file at `path` and fsyncs it, so a rename after this publishes whole content. */
async function writeDurably(path: string, body: ObjectBody): Promise<number> {
  const handle = await open(path, "wx", 0o600);
  try {
    let size = 0;
    if (typeof body === "string") size = await writeAll(handle, new TextEncoder().encode(body));
    else if (body instanceof Uint8Array) size = await writeAll(handle, body);
    else if (body instanceof ArrayBuffer) size = await writeAll(handle, new Uint8Array(body));
    else size = await writeStream(handle, body instanceof Blob ? body.stream() : body);
    await handle.sync();
    return size;
  } finally {
    await handle.close();
  }
}

async function writeStream(handle: FileHandle, stream: ReadableStream<Uint8Array>): Promise<number> {
  const reader = stream.getReader();
  let size = 0;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return size;
      if (!(value instanceof Uint8Array)) throw new TypeError("Object streams must yield Uint8Array chunks.");
      size += await writeAll(handle, value);
    }
  } catch (error) {
    // Stop the producer too when the failure was ours (disk full, bad chunk).
    await reader.cancel(error).catch(() => {});
    throw error;
  } finally {
    reader.releaseLock();
  }
}

async function writeAll(handle: FileHandle, bytes: Uint8Array): Promise<number> {
  let offset = 0;
  while (offset < bytes.byteLength) {
    const { bytesWritten } = await handle.write(bytes, offset, bytes.byteLength - offset);
    offset += bytesWritten;
  }
  return bytes.byteLength;
}

/** `[start, endExclusive)` for a range request, clamped to `size`. */
function resolveRange(range: ByteRange | undefined, size: number): [number, number] {
  if (!range) return [0, size];
  const { start, end } = range;
  if (!Number.isSafeInteger(start) || start < 0) throw new RangeError("Range start must be a non-negative integer.");
  if (end !== undefined && (!Number.isSafeInteger(end) || end < start)) {
    throw new RangeError("Range end must be an integer not below the start.");
  }
  const endExclusive = Math.min(end === undefined ? size : end + 1, size);
  return [Math.min(start, endExclusive), endExclusive];
}

// Content types end up in response headers; refuse anything that could split one.
function validateContentType(value: string): void {
  if (value.length === 0 || value.length > 255 || /[\u0000-\u001f\u007f]/.test(value)) {
    throw new Error("Invalid content type.");
  }
}

function isValidKey(key: string): boolean {
  try {
    validateObjectKey(key);
    return true;
  } catch {
    return false;
  }
}

// unlink rather than rm({ force }): Bun 1.4's rm reports EFAULT instead of ENOTDIR when a folder
// on the path is a file, which `force` then does not swallow.
async function removeIfPresent(path: string): Promise<void> {
  try {
    await unlink(path);
  } catch (error) {
    if (!isMissing(error)) throw error;
  }
}

function isMissing(error: unknown): boolean {
  const code = (error as NodeJS.ErrnoException | null)?.code;
  return code === "ENOENT" || code === "ENOTDIR";
}
