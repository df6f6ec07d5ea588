import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync, mkdirSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createFsObjectStore } from "./fs-object-store.ts";
import { validateObjectKey, type ObjectStore } from "./object-store.ts";

let dir = "";
let root = "";
let store: ObjectStore;

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "parley-obj-"));
  root = join(dir, "objects"); // does not exist yet: the store creates it on first write
  store = createFsObjectStore(root);
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const text = (stream: ReadableStream<Uint8Array>): Promise<string> => new Response(stream).text();
const bytesOf = async (stream: ReadableStream<Uint8Array>): Promise<Uint8Array> =>
  new Uint8Array(await new Response(stream).arrayBuffer());

function streamOf(chunks: Uint8Array[], failAfter?: number): ReadableStream<Uint8Array> {
  let sent = 0;
  return new ReadableStream<Uint8Array>({
    pull(controller) {
      if (failAfter !== undefined && sent === failAfter) {
        controller.error(new Error("upstream hung up"));
        return;
      }
      const chunk = chunks[sent++];
      if (chunk) controller.enqueue(chunk);
      else controller.close();
    },
  });
}

/** Every file under the store's folder for `key`, hidden ones included. */
function filesBeside(key: string): string[] {
  const folder = join(root, ...key.split("/").slice(0, -1));
  return existsSync(folder) ? readdirSync(folder).sort() : [];
}

describe("put / get / head / delete", () => {
  test("round trips a string with an explicit content type", async () => {
    const key = "acc_A/media/med_1.txt";
    expect(await store.put(key, "héllo wörld", { contentType: "text/plain; charset=utf-8" })).toEqual({
      key,
      size: 13,
    });
    expect(await store.head(key)).toEqual({ key, size: 13, contentType: "text/plain; charset=utf-8" });
    const object = await store.get(key);
    expect(object?.size).toBe(13);
    expect(object?.contentType).toBe("text/plain; charset=utf-8");
    expect(await text(object!.stream())).toBe("héllo wörld");
    expect(await object!.blob().text()).toBe("héllo wörld");
    expect(object!.blob().type).toBe("text/plain; charset=utf-8");

    expect(await store.delete(key)).toBe(true);
    expect(await store.get(key)).toBeNull();
    expect(await store.head(key)).toBeNull();
    expect(await store.delete(key)).toBe(false);
    expect(filesBeside(key)).toEqual([]); // sidecar gone too
  });

  test("round trips bytes, an ArrayBuffer and a Blob, deriving the content type from the extension", async () => {
    const bytes = crypto.getRandomValues(new Uint8Array(70_000));
    await store.put("acc_A/recordings/rec_1.wav", bytes);
    const object = await store.get("acc_A/recordings/rec_1.wav");
    expect(object?.contentType).toBe("audio/x-wav");
    expect(await bytesOf(object!.stream())).toEqual(bytes);

    // A view into a larger buffer stores only the viewed bytes.
    const view = bytes.subarray(100, 200);
    expect((await store.put("acc_A/x/view.bin", view)).size).toBe(100);
    expect(await bytesOf((await store.get("acc_A/x/view.bin"))!.stream())).toEqual(view);

    await store.put("acc_A/x/ab.bin", bytes.slice(0, 10).buffer);
    expect((await store.head("acc_A/x/ab.bin"))?.size).toBe(10);

    await store.put("acc_A/x/blob", new Blob(["<p>hi</p>"], { type: "text/html" }));
    const blobInfo = await store.head("acc_A/x/blob");
    expect(blobInfo?.size).toBe(9);
    expect(blobInfo?.contentType).toMatch(/^text\/html/); // Bun appends ";charset=utf-8" to text Blob types
    await store.put("acc_A/x/untyped", new Blob(["?"]));
    expect((await store.head("acc_A/x/untyped"))?.contentType).toBe("application/octet-stream");
  });

  test("round trips a ReadableStream of many chunks", async () => {
    const chunks = Array.from({ length: 50 }, (_, i) => new Uint8Array(1000).fill(i));
    const result = await store.put("acc_B/voicemail/vm_1.mp3", streamOf(chunks), { contentType: "audio/mpeg" });
    expect(result.size).toBe(50_000);
    const object = await store.get("acc_B/voicemail/vm_1.mp3");
    const back = await bytesOf(object!.stream());
    expect(back.length).toBe(50_000);
    expect(back[0]).toBe(0);
    expect(back[49_999]).toBe(49);
    expect(object?.contentType).toBe("audio/mpeg");
  });

  test("overwriting replaces content and content type, and leaves no stray files", async () => {
    const key = "acc_C/fax/fax_1.pdf";
    await store.put(key, "first version", { contentType: "application/x-custom" });
    await store.put(key, "second");
    expect(await store.head(key)).toEqual({ key, size: 6, contentType: "application/pdf" });
    expect(await text((await store.get(key))!.stream())).toBe("second");
    expect(filesBeside(key)).toEqual(["fax_1.pdf"]);
  });

  test("an empty object is still an object", async () => {
    await store.put("acc_C/empty.txt", "");
    expect((await store.head("acc_C/empty.txt"))?.size).toBe(0);
    expect(await text((await store.get("acc_C/empty.txt"))!.stream())).toBe("");
  });

  test("missing keys give null, including below an existing object and at a folder", async () => {
    expect(await store.get("acc_Z/nothing.wav")).toBeNull();
    expect(await store.head("acc_Z/nothing.wav")).toBeNull();
    expect(await store.get("acc_C/empty.txt/below")).toBeNull();
    expect(await store.get("acc_A")).toBeNull();
    expect(await store.delete("acc_A")).toBe(false);
  });

  test("a key clashing with a folder or under an object is refused cleanly", async () => {
    await expect(store.put("acc_A", "x")).rejects.toThrow(/already a folder/);
    await expect(store.put("acc_C/empty.txt/below", "x")).rejects.toThrow(/already a folder|is an object/);
    expect(filesBeside("acc_A/x").filter((f) => f.endsWith(".tmp"))).toEqual([]);
  });
});

describe("range reads", () => {
  const key = "acc_R/media/digits.txt";
  beforeAll(async () => {
    await store.put(key, "0123456789");
  });

  test("return exactly the requested bytes", async () => {
    const object = (await store.get(key))!;
    expect(await text(object.stream({ start: 0, end: 0 }))).toBe("0");
    expect(await text(object.stream({ start: 2, end: 5 }))).toBe("2345");
    expect(await text(object.stream({ start: 7 }))).toBe("789");
    expect(await text(object.stream({ start: 9, end: 9 }))).toBe("9");
    expect(await text(object.stream({ start: 8, end: 100 }))).toBe("89"); // clamped to the size
    expect(await text(object.stream({ start: 10 }))).toBe("");
    expect(await text(object.stream({ start: 50, end: 60 }))).toBe("");
  });

  test("refuse nonsense ranges", async () => {
    const object = (await store.get(key))!;
    expect(() => object.stream({ start: -1 })).toThrow(RangeError);
    expect(() => object.stream({ start: 5, end: 4 })).toThrow(RangeError);
    expect(() => object.stream({ start: 1.5 })).toThrow(RangeError);
  });

  test("work on binary content across a large file", async () => {
    const bytes = crypto.getRandomValues(new Uint8Array(300_000));
    await store.put("acc_R/media/big.bin", bytes);
    const object = (await store.get("acc_R/media/big.bin"))!;
    expect(await bytesOf(object.stream({ start: 123_456, end: 234_567 }))).toEqual(bytes.slice(123_456, 234_568));
  });
});

describe("list", () => {
  beforeAll(async () => {
    for (const key of ["acc_L/media/b.wav", "acc_L/media/a.wav", "acc_L/media.txt", "acc_L/rec/r1.wav", "acc_LX/other"]) {
      await store.put(key, key, { contentType: "text/plain" });
    }
  });

  const collect = async (prefix: string): Promise<string[]> => {
    const keys: string[] = [];
    for await (const key of store.list(prefix)) keys.push(key);
    return keys;
  };

  test("by folder prefix, in key order, never showing sidecars or temp files", async () => {
    writeFileSync(join(root, "acc_L", "media", ".a.wav.123.tmp"), "in progress");
    expect(await collect("acc_L/")).toEqual(["acc_L/media.txt", "acc_L/media/a.wav", "acc_L/media/b.wav", "acc_L/rec/r1.wav"]);
    expect(await collect("acc_L/media/")).toEqual(["acc_L/media/a.wav", "acc_L/media/b.wav"]);
  });

  test("by partial-name prefix, like S3", async () => {
    expect(await collect("acc_L/med")).toEqual(["acc_L/media.txt", "acc_L/media/a.wav", "acc_L/media/b.wav"]);
    expect(await collect("acc_L")).toEqual([
      "acc_L/media.txt",
      "acc_L/media/a.wav",
      "acc_L/media/b.wav",
      "acc_L/rec/r1.wav",
      "acc_LX/other",
    ]);
    expect(await collect("acc_L/media/b")).toEqual(["acc_L/media/b.wav"]);
  });

  test("nothing for unknown prefixes, and a full listing with an empty prefix", async () => {
    expect(await collect("acc_NONE/")).toEqual([]);
    expect(await collect("acc_L/media.txt/")).toEqual([]);
    const all = await collect("");
    expect(all).toContain("acc_LX/other");
    expect([...all].sort()).toEqual(all);
  });

  test("refuses bad prefixes", () => {
    expect(() => store.list("../")).toThrow(/Invalid object key/);
    expect(() => store.list("/abs")).toThrow(/Invalid object key/);
  });
});

describe("key validation", () => {
  const bad = [
    "",
    "../etc/passwd",
    "/abs",
    "/",
    "a/../../b",
    "a/..",
    "..",
    ".",
    "a/./b",
    "a//b",
    "a/",
    "a\\b",
    "..\\..\\windows",
    "a\u0000b",
    "a\nb",
    "a\tb",
    "a\u007fb",
    "a\u0085b",
    "acc_X/.hidden",
    "acc_X/.med.wav.meta.json",
    "x".repeat(513),
  ];

  test("refuses every bad key with an Error", () => {
    for (const key of bad) expect(() => validateObjectKey(key)).toThrow(/Invalid object key/);
  });

  test("accepts ordinary keys up to 512 characters", () => {
    for (const key of ["acc_X/media/med_Y.wav", "a", "a.b/c-d_e/f g (1).pdf", "ünï/cødé.txt", "x".repeat(512), "a..b/c"]) {
      expect(() => validateObjectKey(key)).not.toThrow();
    }
  });

  test("every store operation refuses bad keys before touching the disk", async () => {
    for (const key of bad) {
      await expect(store.put(key, "x")).rejects.toThrow(/Invalid object key/);
      await expect(store.get(key)).rejects.toThrow(/Invalid object key/);
      await expect(store.head(key)).rejects.toThrow(/Invalid object key/);
      await expect(store.delete(key)).rejects.toThrow(/Invalid object key/);
    }
    expect(existsSync(join(dir, "etc"))).toBe(false);
    expect(existsSync(join(dir, "b"))).toBe(false);
  });

  test("refuses a content type that could split a header", async () => {
    await expect(store.put("acc_V/x.txt", "x", { contentType: "text/plain\r\nX-Evil: 1" })).rejects.toThrow(
      /content type/,
    );
    expect(await store.head("acc_V/x.txt")).toBeNull();
  });
});

describe("interrupted puts", () => {
  const chunk = new Uint8Array(4096).fill(7);

  test("a stream that errors midway leaves nothing under the final key", async () => {
    const key = "acc_I/recordings/rec_broken.wav";
    await expect(store.put(key, streamOf([chunk, chunk, chunk, chunk], 2), { contentType: "audio/wav" })).rejects.toThrow(
      "upstream hung up",
    );
    expect(await store.head(key)).toBeNull();
    expect(filesBeside(key)).toEqual([]); // temp and sidecar temp cleaned up
    const keys: string[] = [];
    for await (const k of store.list("acc_I/")) keys.push(k);
    expect(keys).toEqual([]);
  });

  test("a failed overwrite keeps the previous object intact", async () => {
    const key = "acc_I/recordings/rec_keep.wav";
    await store.put(key, "the good take", { contentType: "audio/wav" });
    await expect(store.put(key, streamOf([chunk, chunk], 1), { contentType: "audio/ogg" })).rejects.toThrow();
    expect(await store.head(key)).toEqual({ key, size: 13, contentType: "audio/wav" });
    expect(await text((await store.get(key))!.stream())).toBe("the good take");
    expect(filesBeside(key)).toEqual([".rec_keep.wav.meta.json", "rec_keep.wav"]);
  });

  test("a process killed midway through a put leaves only a hidden temp file, never the object", async () => {
    const key = "acc_I/recordings/rec_crash.wav";
    const script = `
      import { createFsObjectStore } from ${JSON.stringify(join(import.meta.dir, "fs-object-store.ts"))};
      let sent = 0;
      const body = new ReadableStream({
        pull(controller) {
          if (sent++ === 3) process.kill(process.pid, "SIGKILL");
          controller.enqueue(new Uint8Array(4096).fill(1));
        },
      });
      await createFsObjectStore(${JSON.stringify(root)}).put(${JSON.stringify(key)}, body, { contentType: "audio/wav" });
    `;
    const child = Bun.spawn([process.execPath, "-e", script], { stdout: "ignore", stderr: "ignore" });
    await child.exited;
    expect(child.signalCode).toBe("SIGKILL");
    expect(await store.head(key)).toBeNull();
    const left = filesBeside(key).filter((f) => f.startsWith(".rec_crash.wav."));
    expect(left.length).toBe(1); // the abandoned temp file, which list() never shows
    expect(left[0]).toEndWith(".tmp");
    for await (const k of store.list("acc_I/recordings/rec_crash")) throw new Error(`unexpected ${k}`);
  });

  test("a file placed by hand without a sidecar gets a type from its extension", async () => {
    mkdirSync(join(root, "acc_H"), { recursive: true });
    writeFileSync(join(root, "acc_H", "scan.tiff"), "II*");
    expect(await store.head("acc_H/scan.tiff")).toEqual({ key: "acc_H/scan.tiff", size: 3, contentType: "image/tiff" });
  });
});
