/** The media use cases where the object store and the database must stay in step. */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Platform } from "../platform.ts";
import { seedTenant, storeKind, testPlatform } from "../../../test/support/platform.ts";
import { AppError } from "../errors/app-error.ts";
import type { ObjectStore } from "../objects/object-store.ts";
import { createLogger } from "../log/logger.ts";
import { buildWav } from "./audio-fixtures.ts";
import { deleteMedia, getMedia, listMedia, openMedia, uploadFormat, uploadMedia, type MediaDeps } from "./media.service.ts";

let platform: Platform;
let logLines: string[];

beforeAll(async () => {
  platform = await testPlatform();
});
afterAll(() => platform.close());

function deps(objects: ObjectStore = platform.objects): MediaDeps {
  logLines = [];
  return { db: platform.db, objects, log: createLogger({ level: "debug", write: (l: string) => void logLines.push(l) }) };
}

async function keysOf(accountId: string): Promise<string[]> {
  const keys: string[] = [];
  for await (const key of platform.objects.list(`${accountId}/`)) keys.push(key);
  return keys;
}

const wav = () => buildWav({ code: 7, frames: 8000 });

async function errorOf(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error("expected a rejection");
}

describe(`media service [${storeKind}]`, () => {
  test("a row that cannot be written takes its object with it", async () => {
    const t = await seedTenant(platform);
    // 201 characters passes no route, but the table's CHECK is the last line: the insert fails after the put.
    const error = await errorOf(uploadMedia(deps(), t.accountId, { name: "n".repeat(201), kind: "prompt", format: "wav", bytes: wav() }));
    expect(error).not.toBeInstanceOf(AppError);
    expect(await keysOf(t.accountId)).toEqual([]);
    expect((await listMedia(platform.db, t.accountId, { limit: 10 })).data).toEqual([]);
  });

  test("an object that cannot be stored leaves no row", async () => {
    const t = await seedTenant(platform);
    const failing: ObjectStore = { ...platform.objects, put: async () => Promise.reject(new Error("disk full")) };
    const error = await errorOf(uploadMedia(deps(failing), t.accountId, { name: "x", kind: "prompt", format: "wav", bytes: wav() }));
    expect((error as Error).message).toBe("disk full");
    expect((await listMedia(platform.db, t.accountId, { limit: 10 })).data).toEqual([]);
  });

  test("invalid audio is refused before anything is written", async () => {
    const t = await seedTenant(platform);
    let puts = 0;
    const counting: ObjectStore = { ...platform.objects, put: async (...args) => (puts++, platform.objects.put(...args)) };
    const error = await errorOf(uploadMedia(deps(counting), t.accountId, { name: "x", kind: "prompt", format: "mp3", bytes: wav() }));
    expect(error).toBeInstanceOf(AppError);
    expect((error as AppError).toBody()).toMatchObject({
      error: "validation_failed",
      details: [{ path: "/body", message: "not a valid MP3 file: it is a WAV file: upload it with format=wav." }],
    });
    expect(puts).toBe(0);
  });

  test("delete: the row goes even when the object store fails; the orphan is logged", async () => {
    const t = await seedTenant(platform);
    const media = await uploadMedia(deps(), t.accountId, { name: "x", kind: "moh", format: "wav", bytes: wav() });
    const failing: ObjectStore = { ...platform.objects, delete: async () => Promise.reject(new Error("unreachable")) };
    const d = deps(failing);
    await deleteMedia(d, t.accountId, media.id);
    expect(((await errorOf(getMedia(platform.db, t.accountId, media.id))) as AppError).status).toBe(404);
    expect(logLines.join("\n")).toContain("media object not removed after delete");
    expect(await keysOf(t.accountId)).toEqual([media.object_key]);
  });

  test("a row whose object is missing: 404 on open, and logged", async () => {
    const t = await seedTenant(platform);
    const media = await uploadMedia(deps(), t.accountId, { name: "x", kind: "moh", format: "wav", bytes: wav() });
    await platform.objects.delete(media.object_key);
    const d = deps();
    const error = (await errorOf(openMedia(d, t.accountId, media.id))) as AppError;
    expect(error.status).toBe(404);
    expect(logLines.join("\n")).toContain("media object missing");
  });

  test("uploadFormat: content type and format must agree", () => {
    expect(uploadFormat("audio/wav", undefined)).toBe("wav");
    expect(uploadFormat("Audio/X-WAV; foo=bar", "wav")).toBe("wav");
    expect(uploadFormat("audio/mpeg", undefined)).toBe("mp3");
    expect(uploadFormat("application/octet-stream", "mp3")).toBe("mp3");
    expect(() => uploadFormat("application/octet-stream", undefined)).toThrow(AppError);
    expect(() => uploadFormat("audio/mpeg", "wav")).toThrow("The request is not valid.");
    const unsupported = (() => {
      try {
        uploadFormat("audio/ogg", "wav");
      } catch (error) {
        return error as AppError;
      }
    })();
    expect(unsupported?.status).toBe(415);
  });
});
