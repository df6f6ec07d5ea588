/** /v1/conferences: happy paths, errors and security. */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { sql } from "drizzle-orm";
import type { Platform } from "../../core/platform.ts";
import { newId } from "../../core/ids/ids.ts";
import { rawRows } from "../../core/db/migrate.ts";
import { createPublicApp } from "../app.ts";
import { identityRoutes } from "./identity.ts";
import { conferenceRoutes } from "./conferences.ts";
import { keyWithScopes, seedTenant, storeKind, testPlatform, type Tenant } from "../../../test/support/platform.ts";
import { call, type CallOptions, type Json } from "../../../test/support/http.ts";

let platform: Platform;
let app: ReturnType<typeof createPublicApp>;
const logLines: string[] = [];
/** Every reply body of this file, to prove no PIN ever left in one. */
const replies: string[] = [];

beforeAll(async () => {
  platform = await testPlatform({ logLines, logLevel: "debug" });
  app = createPublicApp(platform, [identityRoutes, conferenceRoutes]);
});
afterAll(() => platform.close());

async function api(method: string, path: string, options: CallOptions = {}) {
  const reply = await call(app, method, path, options);
  replies.push(reply.text);
  return reply;
}

async function createRoom(t: Tenant, body: Json = {}): Promise<Json> {
  const r = await api("POST", "/v1/conferences", { key: t.key, body: { name: "Room", ...body } });
  expect(r.status).toBe(201);
  return r.body.data;
}

async function roomCount(accountId: string): Promise<number> {
  const [row] = await rawRows<{ n: number | string }>(platform.db, sql`select count(*) as n from conference where account_id = ${accountId}`);
  return Number(row?.n);
}

async function storedRow(accountId: string, id: string): Promise<Json | undefined> {
  const [row] = await rawRows<Json>(platform.db, sql`select * from conference where account_id = ${accountId} and id = ${id}`);
  return row;
}

async function secretCount(accountId: string): Promise<number> {
  return (await rawRows<Json>(platform.db, sql`select id from secret where account_id = ${accountId}`)).length;
}

/** The PINs the room holds, decrypted from the secret store (null when unset). */
async function storedPins(accountId: string, id: string): Promise<{ pin: string | null; admin: string | null }> {
  const row = await storedRow(accountId, id);
  const reveal = async (ref: string | null) => (ref ? platform.secrets.reveal(platform.db, accountId, ref) : null);
  return { pin: await reveal(row?.pin_secret_ref ?? null), admin: await reveal(row?.admin_pin_secret_ref ?? null) };
}

async function insertMediaFile(accountId: string): Promise<string> {
  const id = newId("med");
  await platform.db.execute(
    sql`insert into media_file (account_id, id, name, kind, object_key, format, content_type, size_bytes, duration_ms, created_at)
        values (${accountId}, ${id}, 'music', 'moh', ${`${accountId}/media/${id}.mp3`}, 'mp3', 'audio/mpeg', 1000, 500, 0)`,
  );
  return id;
}

const FIELDS = ["announce_join_leave", "created_at", "has_admin_pin", "has_pin", "id", "max_members", "moh_media_id", "name", "record", "updated_at", "wait_for_admin"];

describe(`/v1/conferences happy [${storeKind}]`, () => {
  test("create with defaults, get, list, update by POST and PATCH, delete", async () => {
    const t = await seedTenant(platform);
    const created = await api("POST", "/v1/conferences", { key: t.key, body: { name: "Weekly" } });
    expect(created.status).toBe(201);
    const room = created.body.data;
    expect(Object.keys(room).sort()).toEqual(FIELDS);
    expect(room).toMatchObject({
      name: "Weekly",
      has_pin: 0,
      has_admin_pin: 0,
      max_members: 50,
      moh_media_id: null,
      record: 0,
      wait_for_admin: 0,
      announce_join_leave: 1,
    });
    expect(room.id).toMatch(/^conf_[0-9A-Z]{26}$/);
    expect((await api("GET", `/v1/conferences/${room.id}`, { key: t.key })).body).toEqual({ ok: true, data: room });
    expect((await api("GET", "/v1/conferences", { key: t.key })).body).toEqual({ ok: true, data: [room] });

    const posted = await api("POST", `/v1/conferences/${room.id}`, { key: t.key, body: { max_members: 10, record: 1 } });
    expect(posted.status).toBe(200);
    expect(posted.body.data).toMatchObject({ name: "Weekly", max_members: 10, record: 1, announce_join_leave: 1 });
    const patched = await api("PATCH", `/v1/conferences/${room.id}`, { key: t.key, body: { announce_join_leave: 0, name: "Weekly sync" } });
    expect(patched.status).toBe(200);
    expect(patched.body.data).toMatchObject({ name: "Weekly sync", max_members: 10, record: 1, announce_join_leave: 0 });
    expect((await api("GET", `/v1/conferences/${room.id}`, { key: t.key })).body.data).toEqual(patched.body.data);

    expect((await api("DELETE", `/v1/conferences/${room.id}`, { key: t.key })).body).toEqual({ ok: true });
    expect((await api("GET", `/v1/conferences/${room.id}`, { key: t.key })).status).toBe(404);
    expect(await roomCount(t.accountId)).toBe(0);
  });

  test("create with every field", async () => {
    const t = await seedTenant(platform);
    const moh = await insertMediaFile(t.accountId);
    const room = await createRoom(t, {
      name: "Board",
      pin: "1357",
      admin_pin: "0246810",
      max_members: 1000,
      moh_media_id: moh,
      record: 1,
      wait_for_admin: 1,
      announce_join_leave: 0,
    });
    expect(room).toMatchObject({
      name: "Board",
      has_pin: 1,
      has_admin_pin: 1,
      max_members: 1000,
      moh_media_id: moh,
      record: 1,
      wait_for_admin: 1,
      announce_join_leave: 0,
    });
    expect(await storedPins(t.accountId, room.id)).toEqual({ pin: "1357", admin: "0246810" });
    expect((await createRoom(t, { max_members: 2 })).max_members).toBe(2);
  });

  test("POST on the collection creates without id (201) and updates with one (200)", async () => {
    const t = await seedTenant(platform);
    const created = await api("POST", "/v1/conferences", { key: t.key, body: { name: "Standup", max_members: 12 } });
    expect(created.status).toBe(201);
    const id = created.body.data.id;
    const updated = await api("POST", "/v1/conferences", { key: t.key, body: { id, admin_pin: "9876", wait_for_admin: 1 } });
    expect(updated.status).toBe(200);
    expect(updated.body.data).toMatchObject({ id, name: "Standup", max_members: 12, has_admin_pin: 1, wait_for_admin: 1, created_at: created.body.data.created_at });
    expect(await roomCount(t.accountId)).toBe(1);
    expect(await storedPins(t.accountId, id)).toEqual({ pin: null, admin: "9876" });
  });

  test("PINs are kept encrypted, replaced, removed, and never shown, logged or stored in the row", async () => {
    const t = await seedTenant(platform);
    const pin = "731906428155";
    const adminPin = "580264913377";
    const room = await createRoom(t, { pin, admin_pin: adminPin });
    expect(room).toMatchObject({ has_pin: 1, has_admin_pin: 1 });
    const row = (await storedRow(t.accountId, room.id))!;
    expect(row.pin_secret_ref).toMatch(/^sec_/);
    expect(row.admin_pin_secret_ref).toMatch(/^sec_/);
    expect(row.pin_secret_ref).not.toBe(row.admin_pin_secret_ref);
    const secrets = await rawRows<Json>(platform.db, sql`select * from secret where account_id = ${t.accountId}`);
    expect(secrets.length).toBe(2);
    for (const text of [JSON.stringify(row), JSON.stringify(secrets)]) {
      expect(text).not.toContain(pin);
      expect(text).not.toContain(adminPin);
    }
    expect(await storedPins(t.accountId, room.id)).toEqual({ pin, admin: adminPin });

    // A new PIN replaces the old under the same ref; the other PIN is untouched.
    const changed = await api("PATCH", `/v1/conferences/${room.id}`, { key: t.key, body: { pin: "112233" } });
    expect(changed.body.data).toMatchObject({ has_pin: 1, has_admin_pin: 1 });
    expect(await storedPins(t.accountId, room.id)).toEqual({ pin: "112233", admin: adminPin });
    expect((await storedRow(t.accountId, room.id))!.pin_secret_ref).toBe(row.pin_secret_ref);

    // null removes a PIN and its secret.
    const cleared = await api("PATCH", `/v1/conferences/${room.id}`, { key: t.key, body: { admin_pin: null } });
    expect(cleared.body.data).toMatchObject({ has_pin: 1, has_admin_pin: 0 });
    expect((await storedRow(t.accountId, room.id))!.admin_pin_secret_ref).toBeNull();
    expect(await secretCount(t.accountId)).toBe(1);

    // Refused writes that carried PINs do not echo them.
    await api("POST", "/v1/conferences", { key: t.key, body: { name: "x", pin, admin_pin: pin } });
    await api("POST", "/v1/conferences", { key: t.key, body: { name: "x", pin: adminPin, max_members: 1 } });
    await Bun.sleep(20); // The access log is written after the response, on a later turn of the event loop.
    expect(logLines.some((l) => l.includes(`/v1/conferences/${room.id}`))).toBe(true);
    for (const text of [...replies, ...logLines]) {
      expect(text).not.toContain(pin);
      expect(text).not.toContain(adminPin);
      expect(text).not.toContain("secret_ref");
      expect(text).not.toContain(row.pin_secret_ref);
    }
  });

  test("deleting a room removes both PIN secrets", async () => {
    const t = await seedTenant(platform);
    const room = await createRoom(t, { pin: "1234", admin_pin: "4321" });
    expect(await secretCount(t.accountId)).toBe(2);
    expect((await api("DELETE", `/v1/conferences/${room.id}`, { key: t.key })).status).toBe(200);
    expect(await secretCount(t.accountId)).toBe(0);
  });

  test("an Idempotency-Key replay of a create returns the same room and makes no second row", async () => {
    const t = await seedTenant(platform);
    const headers = { "idempotency-key": `conf-${Date.now()}` };
    const body = { name: "Once", pin: "2468", admin_pin: "8642" };
    const first = await api("POST", "/v1/conferences", { key: t.key, body, headers });
    expect(first.status).toBe(201);
    const again = await api("POST", "/v1/conferences", { key: t.key, body, headers });
    expect(again.status).toBe(201);
    expect(again.headers.get("idempotency-replayed")).toBe("true");
    expect(again.body).toEqual(first.body);
    expect(await roomCount(t.accountId)).toBe(1);
    expect(await secretCount(t.accountId)).toBe(2);
  });

  test("pagination walks every room once with limit=2; q filters by name prefix in any case", async () => {
    const t = await seedTenant(platform);
    const names = ["Team alpha", "team beta", "Town hall", "100% sync", "Board"];
    const ids: string[] = [];
    for (const name of names) ids.push((await createRoom(t, { name })).id);
    const seen: string[] = [];
    let cursor: string | undefined;
    let pages = 0;
    do {
      const page = await api("GET", `/v1/conferences?limit=2${cursor ? `&cursor=${cursor}` : ""}`, { key: t.key });
      expect(page.status).toBe(200);
      expect((page.body.data as Json[]).length).toBeLessThanOrEqual(2);
      seen.push(...(page.body.data as Json[]).map((r) => r.id as string));
      cursor = page.body.next_cursor;
      pages++;
    } while (cursor);
    expect(pages).toBe(3);
    expect(seen).toEqual(ids);
    const named = async (q: string) =>
      ((await api("GET", `/v1/conferences?q=${encodeURIComponent(q)}`, { key: t.key })).body.data as Json[]).map((r) => r.name);
    expect(await named("TEAM")).toEqual(["Team alpha", "team beta"]);
    expect(await named("t")).toEqual(["Team alpha", "team beta", "Town hall"]);
    expect(await named("100%")).toEqual(["100% sync"]);
    expect(await named("%")).toEqual([]);
  });
});

describe(`/v1/conferences errors [${storeKind}]`, () => {
  test("400 naming the field for every bad value; nothing is created", async () => {
    const t = await seedTenant(platform);
    const cases: Array<[Json, string]> = [
      [{}, "/name"],
      [{ max_members: 10 }, "/name"],
      [{ name: "" }, "/name"],
      [{ name: "r", max_members: 1 }, "/max_members"],
      [{ name: "r", max_members: 1001 }, "/max_members"],
      [{ name: "r", max_members: "50" }, "/max_members"],
      [{ name: "r", record: 2 }, "/record"],
      [{ name: "r", wait_for_admin: "1" }, "/wait_for_admin"],
      [{ name: "r", announce_join_leave: false }, "/announce_join_leave"],
      [{ name: "r", pin: "123" }, "/pin"],
      [{ name: "r", pin: 12345 }, "/pin"],
      [{ name: "r", admin_pin: "1234567890123" }, "/admin_pin"],
      [{ name: "r", admin_pin: "12#4" }, "/admin_pin"],
      [{ name: "r", moh_media_id: "music.mp3" }, "/moh_media_id"],
      [{ name: "r", moh_media_id: "med_00000000000000000000000000" }, "/moh_media_id"],
      [{ name: "r", pin: "4444", admin_pin: "4444" }, "/admin_pin"],
      [{ name: "r", wait_for_admin: 1 }, "/wait_for_admin"],
      [{ name: "r", wait_for_admin: 1, pin: "1234" }, "/wait_for_admin"],
      [{ name: "r", wait_for_admin: 1, admin_pin: null }, "/wait_for_admin"],
      [{ name: "r", has_pin: 1 }, "/has_pin"],
      [{ name: "r", admin_pin_secret_ref: "sec_00000000000000000000000000" }, "/admin_pin_secret_ref"],
    ];
    for (const [body, path] of cases) {
      const r = await api("POST", "/v1/conferences", { key: t.key, body });
      expect(r.status, JSON.stringify(body)).toBe(400);
      expect(r.body.error).toBe("validation_failed");
      expect((r.body.details as Json[]).map((d) => d.path), JSON.stringify(body)).toContain(path);
    }
    expect(await roomCount(t.accountId)).toBe(0);
    expect(await secretCount(t.accountId)).toBe(0);
  });

  test("PIN rules hold against the stored PINs on update, and a refused update changes nothing", async () => {
    const t = await seedTenant(platform);
    const room = await createRoom(t, { pin: "1111", admin_pin: "2222", wait_for_admin: 1 });
    const refused: Array<[Json, string]> = [
      [{ admin_pin: "1111" }, "/admin_pin"],
      [{ pin: "2222" }, "/pin"],
      [{ admin_pin: null }, "/admin_pin"],
      [{ pin: "3333", admin_pin: "3333" }, "/admin_pin"],
      [{ pin: "5555", moh_media_id: "med_00000000000000000000000000" }, "/moh_media_id"],
      [{ max_members: 0 }, "/max_members"],
      [{ id: room.id }, "/id"],
    ];
    for (const [body, path] of refused) {
      for (const method of ["PATCH", "POST"]) {
        const r = await api(method, `/v1/conferences/${room.id}`, { key: t.key, body });
        expect(r.status, `${method} ${JSON.stringify(body)}`).toBe(400);
        expect((r.body.details as Json[]).map((d) => d.path), JSON.stringify(body)).toContain(path);
      }
    }
    expect((await api("PATCH", `/v1/conferences/${room.id}`, { key: t.key, body: {} })).status).toBe(400);
    expect((await api("GET", `/v1/conferences/${room.id}`, { key: t.key })).body.data).toEqual(room);
    expect(await storedPins(t.accountId, room.id)).toEqual({ pin: "1111", admin: "2222" });

    // Swapping the two PINs in one write is allowed; so is dropping the admin PIN together with the wait.
    const swapped = await api("PATCH", `/v1/conferences/${room.id}`, { key: t.key, body: { pin: "2222", admin_pin: "1111" } });
    expect(swapped.status).toBe(200);
    expect(await storedPins(t.accountId, room.id)).toEqual({ pin: "2222", admin: "1111" });
    const open = await api("PATCH", `/v1/conferences/${room.id}`, { key: t.key, body: { wait_for_admin: 0, admin_pin: null, pin: null } });
    expect(open.status).toBe(200);
    expect(open.body.data).toMatchObject({ has_pin: 0, has_admin_pin: 0, wait_for_admin: 0 });
    expect(await secretCount(t.accountId)).toBe(0);
    // Waiting for an admin on a room without one is refused; with an admin PIN sent alongside, accepted.
    expect((await api("PATCH", `/v1/conferences/${room.id}`, { key: t.key, body: { wait_for_admin: 1 } })).body.details).toEqual([
      { path: "/wait_for_admin", message: expect.any(String) },
    ]);
    const waiting = await api("PATCH", `/v1/conferences/${room.id}`, { key: t.key, body: { wait_for_admin: 1, admin_pin: "7777" } });
    expect(waiting.body.data).toMatchObject({ wait_for_admin: 1, has_admin_pin: 1 });
  });

  test("a music file of another account is refused like a missing one", async () => {
    const t = await seedTenant(platform);
    const other = await seedTenant(platform);
    const theirs = await insertMediaFile(other.accountId);
    const r = await api("POST", "/v1/conferences", { key: t.key, body: { name: "r", moh_media_id: theirs } });
    expect(r.status).toBe(400);
    expect(r.body.details).toEqual([{ path: "/moh_media_id", message: "No such media file in this account." }]);
  });

  test("create-or-update with an id this account does not have is a 404", async () => {
    const t = await seedTenant(platform);
    const other = await seedTenant(platform);
    const theirs = await createRoom(other, { name: "Theirs", pin: "9999" });
    for (const id of [theirs.id, "conf_00000000000000000000000000", "nope"]) {
      const r = await api("POST", "/v1/conferences", { key: t.key, body: { id, name: "Hijack", pin: "1234" } });
      expect(r.status).toBe(404);
      expect(r.body.error).toBe("not_found");
    }
    expect(await roomCount(t.accountId)).toBe(0);
    expect(await secretCount(t.accountId)).toBe(0);
    expect((await api("GET", `/v1/conferences/${theirs.id}`, { key: other.key })).body.data).toEqual(theirs);
    expect(await storedPins(other.accountId, theirs.id)).toEqual({ pin: "9999", admin: null });
  });

  test("409 naming the user when the account's DID default routes to the room", async () => {
    const t = await seedTenant(platform);
    const room = await createRoom(t, { pin: "1234" });
    await platform.db.execute(sql`update account set did_default_dest_kind = 'conference', did_default_dest_id = ${room.id} where id = ${t.accountId}`);
    const r = await api("DELETE", `/v1/conferences/${room.id}`, { key: t.key });
    expect(r.status).toBe(409);
    expect(r.body.used_by).toEqual([{ kind: "account", id: t.accountId }]);
    expect(await storedPins(t.accountId, room.id)).toEqual({ pin: "1234", admin: null });
    await platform.db.execute(sql`update account set did_default_dest_kind = null, did_default_dest_id = null where id = ${t.accountId}`);
    expect((await api("DELETE", `/v1/conferences/${room.id}`, { key: t.key })).status).toBe(200);
  });

  test("409 while a number routes to the room", async () => {
    const t = await seedTenant(platform);
    const room = await createRoom(t);
    const numberId = newId("num");
    const e164 = `1555${String(Date.now()).slice(-7)}`;
    await platform.db.execute(
      sql`insert into number (account_id, id, e164, dest_kind, dest_id, created_at, updated_at) values (${t.accountId}, ${numberId}, ${e164}, 'conference', ${room.id}, 0, 0)`,
    );
    const r = await api("DELETE", `/v1/conferences/${room.id}`, { key: t.key });
    expect(r.status).toBe(409);
    expect(r.body.used_by).toEqual([{ kind: "number", id: numberId }]);
    expect((await api("GET", `/v1/conferences/${room.id}`, { key: t.key })).status).toBe(200);
  });

  test("400 for bad list queries; 404 for an unknown room on every item route", async () => {
    const t = await seedTenant(platform);
    for (const query of ["cursor=garbage", "limit=0", "limit=501", "q=", "colour=red"]) {
      const r = await api("GET", `/v1/conferences?${query}`, { key: t.key });
      expect(r.status, query).toBe(400);
    }
    const id = "conf_00000000000000000000000000";
    for (const [method, body] of [["GET", undefined], ["PATCH", { name: "x" }], ["POST", { name: "x" }], ["DELETE", undefined]] as const) {
      expect((await api(method, `/v1/conferences/${id}`, { key: t.key, body })).status, method).toBe(404);
    }
  });
});

describe(`/v1/conferences security [${storeKind}]`, () => {
  test("401 without a credential, before the body is looked at", async () => {
    expect((await api("GET", "/v1/conferences")).status).toBe(401);
    expect((await api("POST", "/v1/conferences", { body: { max_members: "nope" } })).status).toBe(401);
    expect((await api("PATCH", "/v1/conferences/conf_00000000000000000000000000", { body: {} })).status).toBe(401);
  });

  test("403 naming the conferences scope on every route", async () => {
    const t = await seedTenant(platform);
    const room = await createRoom(t);
    const other = await keyWithScopes(platform, t.accountId, ["voicemail"]);
    const routes: Array<[string, string, Json | undefined]> = [
      ["GET", "/v1/conferences", undefined],
      ["POST", "/v1/conferences", { name: "x" }],
      ["GET", `/v1/conferences/${room.id}`, undefined],
      ["POST", `/v1/conferences/${room.id}`, { name: "x" }],
      ["PATCH", `/v1/conferences/${room.id}`, { name: "x" }],
      ["DELETE", `/v1/conferences/${room.id}`, undefined],
    ];
    for (const [method, path, body] of routes) {
      const r = await api(method, path, { key: other, body });
      expect(r.status, `${method} ${path}`).toBe(403);
      expect(r.body.need).toBe("conferences");
    }
    const scoped = await keyWithScopes(platform, t.accountId, ["conferences"]);
    expect((await api("GET", `/v1/conferences/${room.id}`, { key: scoped })).body.data).toEqual(room);
  });

  test("another account's room is a 404 to read, update or delete, and absent from the list", async () => {
    const mine = await seedTenant(platform);
    const theirs = await seedTenant(platform);
    const room = await createRoom(theirs, { name: "Private", pin: "8080" });
    for (const [method, body] of [["GET", undefined], ["PATCH", { pin: "1234" }], ["POST", { name: "Mine now" }], ["DELETE", undefined]] as const) {
      expect((await api(method, `/v1/conferences/${room.id}`, { key: mine.key, body })).status, method).toBe(404);
    }
    expect(((await api("GET", "/v1/conferences", { key: mine.key })).body.data as Json[]).length).toBe(0);
    expect((await api("GET", `/v1/conferences/${room.id}`, { key: theirs.key })).body.data).toEqual(room);
    expect(await storedPins(theirs.accountId, room.id)).toEqual({ pin: "8080", admin: null });
  });
});
