/** /v1/media: raw uploads measured on the way in, streamed with Range on the way out; errors and security. */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { sql } from "drizzle-orm";
import { createConfig, lintFromString } from "@redocly/openapi-core";
import type { Platform } from "../../core/platform.ts";
import { createPublicApp } from "../app.ts";
import { identityRoutes } from "./identity.ts";
import { mediaRoutes } from "./media.ts";
import { keyWithScopes, seedTenant, storeKind, testPlatform, type Tenant } from "../../../test/support/platform.ts";
import { call, type Json } from "../../../test/support/http.ts";
import { rawRows } from "../../core/db/migrate.ts";
import { newId } from "../../core/ids/ids.ts";
import { nowSeconds } from "../../core/db/columns.ts";
import { buildWav, garbage, mp3Frames, xingFrame } from "../../core/media/audio-fixtures.ts";
import { isIdempotencyHook } from "../plugins/api-access.ts";

const MAX = 64 * 1024;
let platform: Platform;
let app: ReturnType<typeof createPublicApp>;

beforeAll(async () => {
  platform = await testPlatform();
  app = createPublicApp(platform, [identityRoutes, (p) => mediaRoutes(p, { maxBytes: MAX })]);
});
afterAll(() => platform.close());

/** One second of 8 kHz μ-law with a recognisable ramp of sample values, so byte ranges can be checked. */
function welcomeWav(frames = 8000): Uint8Array {
  const wav = buildWav({ code: 7, sampleRate: 8000, frames });
  const dataStart = wav.length - frames - (frames % 2);
  for (let i = 0; i < frames; i++) wav[dataStart + i] = i % 251;
  return wav;
}

const mp3File = () => new Uint8Array([...xingFrame({}, 100), ...mp3Frames(100)]);

interface RawReply {
  status: number;
  headers: Headers;
  bytes: Uint8Array;
  body: Json;
}

async function send(method: string, path: string, init: { key?: string; headers?: Record<string, string>; body?: Uint8Array } = {}): Promise<RawReply> {
  const headers: Record<string, string> = { ...init.headers };
  if (init.key) headers["x-api-key"] = init.key;
  const response = await app.handle(new Request(`http://localhost${path}`, { method, headers, body: init.body as BodyInit | undefined }));
  const bytes = new Uint8Array(await response.arrayBuffer());
  let body: Json = {};
  if ((response.headers.get("content-type") ?? "").startsWith("application/json")) body = JSON.parse(new TextDecoder().decode(bytes));
  return { status: response.status, headers: response.headers, bytes, body };
}

function upload(key: string, bytes: Uint8Array, query: string, headers: Record<string, string> = {}): Promise<RawReply> {
  return send("POST", `/v1/media?${query}`, { key, headers: { "content-type": "audio/wav", ...headers }, body: bytes });
}

async function mediaRowCount(accountId: string): Promise<number> {
  const rows = await rawRows<{ n: number | string }>(platform.db, sql`select count(*) as n from media_file where account_id = ${accountId}`);
  return Number(rows[0]!.n);
}

async function storedKeys(accountId: string): Promise<string[]> {
  const keys: string[] = [];
  for await (const key of platform.objects.list(`${accountId}/media/`)) keys.push(key);
  return keys;
}

describe(`/v1/media happy [${storeKind}]`, () => {
  test("upload → get → play → play a range → download → delete → 404", async () => {
    const t = await seedTenant(platform);
    const wav = welcomeWav();
    const created = await upload(t.key, wav, "name=Welcome&kind=prompt");
    expect(created.status).toBe(201);
    const media = created.body.data;
    expect(media.id).toMatch(/^med_[0-9A-Z]{26}$/);
    expect(media).toEqual({
      id: media.id,
      name: "Welcome",
      kind: "prompt",
      format: "wav",
      content_type: "audio/wav",
      object_key: `${t.accountId}/media/${media.id}.wav`,
      size_bytes: wav.length,
      duration_ms: 1000,
      sample_rate: 8000,
      channels: 1,
      created_at: expect.any(Number),
    });
    expect(Math.abs(media.created_at - nowSeconds())).toBeLessThan(60);

    const got = await call(app, "GET", `/v1/media/${media.id}`, { key: t.key });
    expect(got.status).toBe(200);
    expect(got.body.data).toEqual(media);

    const full = await send("GET", `/v1/media/${media.id}/play`, { key: t.key });
    expect(full.status).toBe(200);
    expect(full.bytes).toEqual(wav);
    expect(full.headers.get("content-type")).toBe("audio/wav");
    expect(full.headers.get("accept-ranges")).toBe("bytes");
    expect(full.headers.get("content-length")).toBe(String(wav.length));
    expect(full.headers.get("content-disposition")).toBe('inline; filename="Welcome.wav"');
    expect(full.headers.get("ratelimit-limit")).toBeTruthy();

    const part = await send("GET", `/v1/media/${media.id}/play`, { key: t.key, headers: { range: "bytes=100-199" } });
    expect(part.status).toBe(206);
    expect(part.headers.get("content-range")).toBe(`bytes 100-199/${wav.length}`);
    expect(part.headers.get("content-length")).toBe("100");
    expect(part.headers.get("accept-ranges")).toBe("bytes");
    expect(part.headers.get("content-type")).toBe("audio/wav");
    expect(part.bytes).toEqual(wav.subarray(100, 200));

    const download = await send("GET", `/v1/media/${media.id}/download`, { key: t.key });
    expect(download.status).toBe(200);
    expect(download.headers.get("content-disposition")).toBe('attachment; filename="Welcome.wav"');
    expect(download.bytes).toEqual(wav);

    expect(await storedKeys(t.accountId)).toEqual([media.object_key]);
    const deleted = await call(app, "DELETE", `/v1/media/${media.id}`, { key: t.key });
    expect(deleted.status).toBe(200);
    expect(deleted.body).toEqual({ ok: true });
    expect((await call(app, "GET", `/v1/media/${media.id}`, { key: t.key })).status).toBe(404);
    expect((await send("GET", `/v1/media/${media.id}/play`, { key: t.key })).status).toBe(404);
    expect((await call(app, "DELETE", `/v1/media/${media.id}`, { key: t.key })).status).toBe(404);
    expect(await storedKeys(t.accountId)).toEqual([]);
    expect(await platform.objects.head(media.object_key)).toBeNull();
  });

  test("ranges: open-ended, suffix, clamped end, several (whole file), unsatisfiable (416), If-Range", async () => {
    const t = await seedTenant(platform);
    const wav = welcomeWav(1000);
    const id = (await upload(t.key, wav, "name=ramp&kind=moh")).body.data.id;
    const size = wav.length;
    const range = (value: string, extra: Record<string, string> = {}) =>
      send("GET", `/v1/media/${id}/download`, { key: t.key, headers: { range: value, ...extra } });

    const open = await range(`bytes=${size - 10}-`);
    expect(open.status).toBe(206);
    expect(open.headers.get("content-range")).toBe(`bytes ${size - 10}-${size - 1}/${size}`);
    expect(open.bytes).toEqual(wav.subarray(size - 10));

    const suffix = await range("bytes=-7");
    expect(suffix.status).toBe(206);
    expect(suffix.bytes).toEqual(wav.subarray(size - 7));

    const clamped = await range(`bytes=5-${size + 500}`);
    expect(clamped.status).toBe(206);
    expect(clamped.headers.get("content-range")).toBe(`bytes 5-${size - 1}/${size}`);
    expect(clamped.bytes).toEqual(wav.subarray(5));

    const first = await range("bytes=0-0");
    expect(first.bytes).toEqual(wav.subarray(0, 1));

    const several = await range("bytes=0-1,5-6");
    expect(several.status).toBe(200);
    expect(several.bytes).toEqual(wav);

    const malformed = await range("bytes=abc");
    expect(malformed.status).toBe(200);

    for (const value of [`bytes=${size}-`, `bytes=${size + 10}-${size + 20}`, "bytes=-0"]) {
      const beyond = await range(value);
      expect(beyond.status).toBe(416);
      expect(beyond.headers.get("content-range")).toBe(`bytes */${size}`);
      expect(beyond.body).toMatchObject({ ok: false, error: "range_not_satisfiable" });
    }

    const etag = (await range("bytes=0-0")).headers.get("etag")!;
    expect(etag).toBe(`"${id}"`);
    expect((await range("bytes=0-9", { "if-range": etag })).status).toBe(206);
    const stale = await range("bytes=0-9", { "if-range": '"something-else"' });
    expect(stale.status).toBe(200);
    expect(stale.bytes).toEqual(wav);
  });

  test("MP3 as application/octet-stream with format=mp3: measured, served as audio/mpeg", async () => {
    const t = await seedTenant(platform);
    const mp3 = mp3File();
    const created = await upload(t.key, mp3, "name=Hold%20music&kind=moh&format=mp3", { "content-type": "application/octet-stream" });
    expect(created.status).toBe(201);
    expect(created.body.data).toMatchObject({
      format: "mp3",
      content_type: "audio/mpeg",
      duration_ms: 2612, // 100 frames × 1152 samples / 44.1 kHz
      sample_rate: 44100,
      channels: 2,
      size_bytes: mp3.length,
      object_key: `${t.accountId}/media/${created.body.data.id}.mp3`,
    });
    const play = await send("GET", `/v1/media/${created.body.data.id}/play`, { key: t.key });
    expect(play.headers.get("content-type")).toBe("audio/mpeg");
    expect(play.bytes).toEqual(mp3);
    const download = await send("GET", `/v1/media/${created.body.data.id}/download`, { key: t.key });
    expect(download.headers.get("content-disposition")).toBe('attachment; filename="Hold music.mp3"');
    // audio/mpeg implies mp3 and x-wav implies wav without a format parameter.
    expect((await upload(t.key, mp3, "name=a&kind=moh", { "content-type": "audio/mpeg" })).status).toBe(201);
    expect((await upload(t.key, welcomeWav(), "name=b&kind=prompt", { "content-type": "audio/x-wav" })).status).toBe(201);
    expect((await upload(t.key, welcomeWav(), "name=c&kind=prompt&format=wav", { "content-type": "audio/wave; charset=binary" })).status).toBe(201);
  });

  test("file names: an extension already there is not doubled; non-ASCII names get filename*", async () => {
    const t = await seedTenant(platform);
    const a = (await upload(t.key, welcomeWav(), "name=greeting.WAV&kind=greeting")).body.data.id;
    expect((await send("GET", `/v1/media/${a}/download`, { key: t.key })).headers.get("content-disposition")).toBe('attachment; filename="greeting.WAV"');
    const b = (await upload(t.key, welcomeWav(), `name=${encodeURIComponent('Bienvenue "à" vous')}&kind=greeting`)).body.data.id;
    expect((await send("GET", `/v1/media/${b}/download`, { key: t.key })).headers.get("content-disposition")).toBe(
      `attachment; filename="Bienvenue ___ vous.wav"; filename*=UTF-8''Bienvenue%20%22%C3%A0%22%20vous.wav`,
    );
  });

  test("list: filters by kind, format and name prefix; paginates with limit=2", async () => {
    const t = await seedTenant(platform);
    const ids: string[] = [];
    for (const [name, kind] of [["Main menu", "prompt"], ["main hours", "prompt"], ["Jazz", "moh"], ["Hello", "greeting"], ["50%_off", "announcement"]]) {
      ids.push((await upload(t.key, welcomeWav(800), `name=${encodeURIComponent(name!)}&kind=${kind}`)).body.data.id);
    }
    ids.push((await upload(t.key, mp3File(), "name=Main%20mp3&kind=moh", { "content-type": "audio/mpeg" })).body.data.id);
    const names = async (query: string) =>
      ((await call(app, "GET", `/v1/media${query}`, { key: t.key })).body.data as Json[]).map((m) => m.name as string);
    expect(await names("?kind=prompt")).toEqual(["Main menu", "main hours"]);
    expect(await names("?kind=moh")).toEqual(["Jazz", "Main mp3"]);
    expect(await names("?format=mp3")).toEqual(["Main mp3"]);
    expect(await names("?q=MAIN")).toEqual(["Main menu", "main hours", "Main mp3"]);
    expect(await names("?q=main&kind=moh")).toEqual(["Main mp3"]);
    expect(await names(`?q=${encodeURIComponent("50%")}`)).toEqual(["50%_off"]);
    expect(await names(`?q=${encodeURIComponent("%")}`)).toEqual([]); // a literal %, not a wildcard
    expect(await names("?q=_")).toEqual([]);

    const seen: string[] = [];
    let cursor: string | undefined;
    let pages = 0;
    do {
      const page = await call(app, "GET", `/v1/media?limit=2${cursor ? `&cursor=${cursor}` : ""}`, { key: t.key });
      expect(page.status).toBe(200);
      expect((page.body.data as Json[]).length).toBeLessThanOrEqual(2);
      seen.push(...(page.body.data as Json[]).map((m) => m.id as string));
      cursor = page.body.next_cursor;
      pages++;
    } while (cursor);
    // Six files in pages of two: three full pages (each with next_cursor, SPEC.md), then an empty one.
    expect(seen.length).toBe(6);
    expect(pages).toBe(4);
    expect(seen).toEqual(ids);
  });

  test("an Idempotency-Key replay returns the same media file and stores nothing twice; other bytes with that key are 422", async () => {
    const t = await seedTenant(platform);
    const wav = welcomeWav();
    const headers = { "idempotency-key": "upload-1" };
    const first = await upload(t.key, wav, "name=Welcome&kind=prompt", headers);
    expect(first.status).toBe(201);
    expect(first.headers.get("idempotency-replayed")).toBeNull();
    const again = await upload(t.key, wav, "name=Welcome&kind=prompt", headers);
    expect(again.status).toBe(201);
    expect(again.headers.get("idempotency-replayed")).toBe("true");
    expect(again.body.data.id).toBe(first.body.data.id);
    expect(await mediaRowCount(t.accountId)).toBe(1);
    expect((await storedKeys(t.accountId)).length).toBe(1);
    // Same key and query, different audio: the key is being reused for another request.
    const other = welcomeWav();
    other[other.length - 1] = 7;
    const reused = await upload(t.key, other, "name=Welcome&kind=prompt", headers);
    expect(reused.status).toBe(422);
    expect(reused.body.error).toBe("idempotency_key_reused");
    expect(await mediaRowCount(t.accountId)).toBe(1);
  });
});

describe(`/v1/media errors [${storeKind}]`, () => {
  let t: Tenant;
  beforeAll(async () => {
    t = await seedTenant(platform);
  });

  const expectNothingStored = async () => {
    expect(await mediaRowCount(t.accountId)).toBe(0);
    expect(await storedKeys(t.accountId)).toEqual([]);
  };

  test("garbage, or audio of another format than declared: 400 on /body, nothing stored", async () => {
    const bad = await upload(t.key, garbage(5000), "name=x&kind=prompt");
    expect(bad.status).toBe(400);
    expect(bad.body.error).toBe("validation_failed");
    expect(bad.body.details).toEqual([{ path: "/body", message: expect.stringMatching(/^not a valid WAV file: /) }]);
    const mp3AsWav = await upload(t.key, mp3File(), "name=x&kind=prompt");
    expect(mp3AsWav.body.details[0].message).toContain("It looks like an MP3 file");
    const garbageMp3 = await upload(t.key, garbage(5000), "name=x&kind=prompt", { "content-type": "audio/mpeg" });
    expect(garbageMp3.status).toBe(400);
    expect(garbageMp3.body.details).toEqual([{ path: "/body", message: "not a valid MP3 file: no MPEG Layer III frame sync was found." }]);
    const adpcm = buildWav({ code: 0x11, bitsPerSample: 4, frames: 100, blockAlign: 256, byteRate: 4055 });
    const refused = await upload(t.key, adpcm, "name=x&kind=prompt");
    expect(refused.status).toBe(400);
    expect(refused.body.details[0].message).toContain("unsupported WAV encoding IMA ADPCM");
    const truncated = welcomeWav().subarray(0, 4000);
    expect((await upload(t.key, truncated, "name=x&kind=prompt")).body.details[0].message).toContain("truncated");
    await expectNothingStored();
  });

  test("an empty body: 400 on /body", async () => {
    const empty = await upload(t.key, new Uint8Array(), "name=x&kind=prompt");
    expect(empty.status).toBe(400);
    expect(empty.body.details).toEqual([{ path: "/body", message: expect.stringContaining("empty") }]);
    await expectNothingStored();
  });

  test("a body over the limit: 413, whether Content-Length says so or the bytes just keep coming", async () => {
    const big = buildWav({ code: 7, frames: MAX }); // MAX samples plus the header: just over the limit
    const declared = await upload(t.key, big, "name=x&kind=prompt");
    expect(declared.status).toBe(413);
    expect(declared.body.error).toBe("payload_too_large");
    // A chunked body without Content-Length is counted as it is read.
    const chunks = [big.subarray(0, 30_000), big.subarray(30_000)];
    const stream = new ReadableStream<Uint8Array>({
      pull(controller) {
        const next = chunks.shift();
        if (next) controller.enqueue(next);
        else controller.close();
      },
    });
    const response = await app.handle(
      new Request("http://localhost/v1/media?name=x&kind=prompt", {
        method: "POST",
        headers: { "x-api-key": t.key, "content-type": "audio/wav" },
        body: stream,
        duplex: "half",
      } as RequestInit),
    );
    expect(response.status).toBe(413);
    await expectNothingStored();
  });

  test("content types: not audio → 415; the Content-Type and format must agree; octet-stream needs format", async () => {
    const wav = welcomeWav();
    for (const type of ["application/json", "text/plain", "multipart/form-data; boundary=x"]) {
      const r = await upload(t.key, wav, "name=x&kind=prompt", { "content-type": type });
      expect(r.status).toBe(415);
      expect(r.body.error).toBe("unsupported_media_type");
    }
    const mismatch = await upload(t.key, wav, "name=x&kind=prompt&format=mp3");
    expect(mismatch.status).toBe(400);
    expect(mismatch.body.details).toEqual([{ path: "/query/format", message: "The body is sent as audio/wav but format is mp3." }]);
    const octet = await upload(t.key, wav, "name=x&kind=prompt", { "content-type": "application/octet-stream" });
    expect(octet.status).toBe(400);
    expect(octet.body.details[0].path).toBe("/query/format");
    await expectNothingStored();
  });

  test("query parameters: required, bounded, enumerated, and nothing unknown (duration_ms is measured, not taken)", async () => {
    const wav = welcomeWav();
    const cases: Array<[string, string]> = [
      ["kind=prompt", "/query/name"],
      ["name=&kind=prompt", "/query/name"],
      [`name=${"n".repeat(201)}&kind=prompt`, "/query/name"],
      ["name=x", "/query/kind"],
      ["name=x&kind=ringtone", "/query/kind"],
      ["name=x&kind=prompt&format=ogg", "/query/format"],
      ["name=x&kind=prompt&duration_ms=5000", "/query/duration_ms"],
      ["name=x&kind=prompt&sample_rate=8000", "/query/sample_rate"],
    ];
    for (const [query, path] of cases) {
      const r = await upload(t.key, wav, query);
      expect(r.status, query).toBe(400);
      expect(r.body.error).toBe("validation_failed");
      expect((r.body.details as Json[]).map((d) => d.path), query).toContain(path);
    }
    for (const [query, path] of [["kind=jingle", "/query/kind"], ["format=ogg", "/query/format"], ["limit=abc", "/query/limit"], ["sort=name", "/query/sort"], ["cursor=nope", "/query/cursor"]]) {
      const r = await call(app, "GET", `/v1/media?${query}`, { key: t.key });
      expect(r.status, query!).toBe(400);
      expect((r.body.details as Json[]).map((d) => d.path), query!).toContain(path!);
    }
    // Out of range is refused too (PageQuery's own range; its error path is the shared mapper's business).
    expect((await call(app, "GET", "/v1/media?limit=0", { key: t.key })).status).toBe(400);
    expect((await call(app, "GET", "/v1/media?limit=501", { key: t.key })).status).toBe(400);
    await expectNothingStored();
  });

  test("an unknown id: 404 on every route", async () => {
    const id = newId("med");
    expect((await call(app, "GET", `/v1/media/${id}`, { key: t.key })).status).toBe(404);
    expect((await send("GET", `/v1/media/${id}/play`, { key: t.key })).status).toBe(404);
    expect((await send("GET", `/v1/media/${id}/download`, { key: t.key })).status).toBe(404);
    const del = await call(app, "DELETE", `/v1/media/${id}`, { key: t.key });
    expect(del.status).toBe(404);
    expect(del.body.error).toBe("not_found");
  });

  test("deleting a file a voicemail box greets with: 409 naming the box; nothing removed", async () => {
    const owner = await seedTenant(platform);
    const media = (await upload(owner.key, welcomeWav(), "name=Greeting&kind=greeting")).body.data;
    const vm = newId("vm");
    await rawRows(
      platform.db,
      sql`insert into voicemail (account_id, id, name, greeting_media_id, created_at, updated_at) values (${owner.accountId}, ${vm}, ${"Sales"}, ${media.id}, ${nowSeconds()}, ${nowSeconds()})`,
    );
    const refused = await call(app, "DELETE", `/v1/media/${media.id}`, { key: owner.key });
    expect(refused.status).toBe(409);
    expect(refused.body).toMatchObject({ ok: false, error: "conflict", used_by: [{ kind: "voicemail", id: vm }] });
    expect((await call(app, "GET", `/v1/media/${media.id}`, { key: owner.key })).status).toBe(200);
    expect(await platform.objects.head(media.object_key)).not.toBeNull();
    // Once the box stops using it, it can go.
    await rawRows(platform.db, sql`update voicemail set greeting_media_id = null where account_id = ${owner.accountId} and id = ${vm}`);
    expect((await call(app, "DELETE", `/v1/media/${media.id}`, { key: owner.key })).status).toBe(200);
  });
});

describe(`/v1/media security [${storeKind}]`, () => {
  let owner: Tenant;
  let mediaId: string;
  beforeAll(async () => {
    owner = await seedTenant(platform);
    mediaId = (await upload(owner.key, welcomeWav(), "name=Secret%20prompt&kind=prompt")).body.data.id;
  });

  test("401 without a credential, before the body is looked at", async () => {
    expect((await call(app, "GET", "/v1/media")).status).toBe(401);
    expect((await call(app, "GET", `/v1/media/${mediaId}`)).status).toBe(401);
    expect((await send("GET", `/v1/media/${mediaId}/play`)).status).toBe(401);
    expect((await send("GET", `/v1/media/${mediaId}/download`)).status).toBe(401);
    expect((await call(app, "DELETE", `/v1/media/${mediaId}`)).status).toBe(401);
    const anonymous = await send("POST", "/v1/media?name=x&kind=prompt", { headers: { "content-type": "audio/wav" }, body: garbage(100) });
    expect(anonymous.status).toBe(401);
    expect(anonymous.body.error).toBe("unauthorized");
    // Without Content-Length the size is only known by reading: a stranger gets 401, not a read of the body (413).
    const endless = new ReadableStream<Uint8Array>({
      pull(controller) {
        controller.enqueue(new Uint8Array(16 * 1024));
      },
    });
    const unread = await app.handle(
      new Request("http://localhost/v1/media?name=x&kind=prompt", {
        method: "POST",
        headers: { "content-type": "audio/wav" },
        body: endless,
        duplex: "half",
      } as RequestInit),
    );
    expect(unread.status).toBe(401);
  });

  test("403 without the media scope, naming it", async () => {
    const other = await keyWithScopes(platform, owner.accountId, ["recordings", "keys"]);
    const replies = [
      await call(app, "GET", "/v1/media", { key: other }),
      await call(app, "GET", `/v1/media/${mediaId}`, { key: other }),
      await send("GET", `/v1/media/${mediaId}/play`, { key: other }),
      await send("GET", `/v1/media/${mediaId}/download`, { key: other }),
      await call(app, "DELETE", `/v1/media/${mediaId}`, { key: other }),
      await upload(other, welcomeWav(), "name=x&kind=prompt"),
    ];
    for (const r of replies) {
      expect(r.status).toBe(403);
      expect(r.body).toMatchObject({ ok: false, error: "forbidden", need: "media" });
    }
    expect(await mediaRowCount(owner.accountId)).toBe(1);
    const scoped = await keyWithScopes(platform, owner.accountId, ["media"]);
    expect((await call(app, "GET", `/v1/media/${mediaId}`, { key: scoped })).status).toBe(200);
  });

  test("another account's media file is 404 everywhere and never listed", async () => {
    const stranger = await seedTenant(platform);
    expect((await call(app, "GET", `/v1/media/${mediaId}`, { key: stranger.key })).status).toBe(404);
    expect((await send("GET", `/v1/media/${mediaId}/play`, { key: stranger.key })).status).toBe(404);
    expect((await send("GET", `/v1/media/${mediaId}/play`, { key: stranger.key, headers: { range: "bytes=0-9" } })).status).toBe(404);
    expect((await send("GET", `/v1/media/${mediaId}/download`, { key: stranger.key })).status).toBe(404);
    expect((await call(app, "DELETE", `/v1/media/${mediaId}`, { key: stranger.key })).status).toBe(404);
    expect((await call(app, "GET", "/v1/media", { key: stranger.key })).body.data).toEqual([]);
    // Still there for its owner.
    expect((await call(app, "GET", `/v1/media/${mediaId}`, { key: owner.key })).status).toBe(200);
    expect((await send("GET", `/v1/media/${mediaId}/play`, { key: owner.key })).status).toBe(200);
  });
});

describe("/v1/media route wiring", () => {
  test("the upload and the delete carry the Idempotency-Key hooks; reads do not", () => {
    const mine = app.routes.filter((r) => r.path.startsWith("/v1/media"));
    const hasHook = (r: (typeof mine)[number]) => ((r.hooks as { afterHandle?: unknown[] }).afterHandle ?? []).some(isIdempotencyHook);
    expect(mine.filter(hasHook).map((r) => `${r.method} ${r.path}`).sort()).toEqual(["DELETE /v1/media/:id", "POST /v1/media"]);
  });
});

describe("/v1/media in the OpenAPI document", () => {
  test("documents the raw upload body and the audio replies, and lints clean", async () => {
    const doc = (await call(app, "GET", "/v1/openapi.json")).body;
    const post = doc.paths["/v1/media"].post;
    expect(Object.keys(post.requestBody.content)).toEqual(["audio/wav", "audio/x-wav", "audio/wave", "audio/mpeg", "application/octet-stream"]);
    expect(post.parameters.map((p: Json) => p.name).sort()).toEqual(["Idempotency-Key", "format", "kind", "name"]);
    expect(post.responses["201"]).toBeDefined();
    const play = doc.paths["/v1/media/{id}/play"].get;
    expect(Object.keys(play.responses).sort()).toEqual(["200", "206", "401", "403", "404", "416", "429"]);
    expect(play.responses["206"].content["audio/mpeg"].schema).toEqual({ type: "string", format: "binary" });
    expect(play.responses["401"].content["application/json"].schema.$ref).toBe("#/components/schemas/Error");
    const config = await createConfig({ extends: ["recommended"] });
    const problems = await lintFromString({ source: JSON.stringify(doc), absoluteRef: "/openapi.json", config });
    const mine = problems.filter((p) => (p.location[0]?.pointer ?? "").includes("~1v1~1media"));
    expect(mine.map((p) => `${p.severity} ${p.ruleId} ${p.message} ${p.location[0]?.pointer}`)).toEqual([]);
  });
});
