/** /v1/voicemails: happy paths, errors and security. */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { sql } from "drizzle-orm";
import type { Platform } from "../../core/platform.ts";
import { newId } from "../../core/ids/ids.ts";
import { rawRows } from "../../core/db/migrate.ts";
import { verifyVoicemailPin } from "../../core/voicemail/voicemail.service.ts";
import { createPublicApp } from "../app.ts";
import { identityRoutes } from "./identity.ts";
import { voicemailRoutes } from "./voicemails.ts";
import { keyWithScopes, seedTenant, storeKind, testPlatform, type Tenant } from "../../../test/support/platform.ts";
import { call, type CallOptions, type Json } from "../../../test/support/http.ts";

let platform: Platform;
let app: ReturnType<typeof createPublicApp>;
const logLines: string[] = [];
/** Every reply body of this file, to prove no PIN ever left in one. */
const replies: string[] = [];

beforeAll(async () => {
  platform = await testPlatform({ logLines, logLevel: "debug" });
  app = createPublicApp(platform, [identityRoutes, voicemailRoutes]);
});
afterAll(() => platform.close());

async function api(method: string, path: string, options: CallOptions = {}) {
  const reply = await call(app, method, path, options);
  replies.push(reply.text);
  return reply;
}

async function createBox(t: Tenant, body: Json = {}): Promise<Json> {
  const r = await api("POST", "/v1/voicemails", { key: t.key, body: { name: "Box", ...body } });
  expect(r.status).toBe(201);
  return r.body.data;
}

async function boxCount(accountId: string): Promise<number> {
  const [row] = await rawRows<{ n: number | string }>(platform.db, sql`select count(*) as n from voicemail where account_id = ${accountId}`);
  return Number(row?.n);
}

async function storedRow(accountId: string, id: string): Promise<Json | undefined> {
  const [row] = await rawRows<Json>(platform.db, sql`select * from voicemail where account_id = ${accountId} and id = ${id}`);
  return row;
}

async function secretRow(accountId: string, ref: string): Promise<Json | undefined> {
  const [row] = await rawRows<Json>(platform.db, sql`select * from secret where account_id = ${accountId} and id = ${ref}`);
  return row;
}

async function insertMediaFile(accountId: string): Promise<string> {
  const id = newId("med");
  await platform.db.execute(
    sql`insert into media_file (account_id, id, name, kind, object_key, format, content_type, size_bytes, duration_ms, created_at)
        values (${accountId}, ${id}, 'greeting', 'greeting', ${`${accountId}/media/${id}.wav`}, 'wav', 'audio/wav', 1000, 500, 0)`,
  );
  return id;
}

const FIELDS = ["created_at", "greeting_media_id", "has_pin", "id", "language", "max_message_sec", "name", "notify_email", "quota_mb", "skip_instructions", "updated_at"];

describe(`/v1/voicemails happy [${storeKind}]`, () => {
  test("create with defaults, get, list, update, delete", async () => {
    const t = await seedTenant(platform);
    const created = await api("POST", "/v1/voicemails", { key: t.key, body: { name: "Front desk" } });
    expect(created.status).toBe(201);
    const box = created.body.data;
    expect(Object.keys(box).sort()).toEqual(FIELDS);
    expect(box).toMatchObject({
      name: "Front desk",
      greeting_media_id: null,
      skip_instructions: 0,
      quota_mb: 100,
      notify_email: null,
      has_pin: 0,
      max_message_sec: 300,
      language: null,
    });
    expect(box.id).toMatch(/^vm_[0-9A-Z]{26}$/);

    expect((await api("GET", `/v1/voicemails/${box.id}`, { key: t.key })).body).toEqual({ ok: true, data: box });
    const list = await api("GET", "/v1/voicemails", { key: t.key });
    expect(list.body).toEqual({ ok: true, data: [box] });

    const patched = await api("PATCH", `/v1/voicemails/${box.id}`, { key: t.key, body: { quota_mb: 500, notify_email: "desk@example.com", language: "fr-FR" } });
    expect(patched.status).toBe(200);
    expect(patched.body.data).toMatchObject({ name: "Front desk", quota_mb: 500, notify_email: "desk@example.com", language: "fr-FR", max_message_sec: 300 });
    const posted = await api("POST", `/v1/voicemails/${box.id}`, { key: t.key, body: { skip_instructions: 1, notify_email: null } });
    expect(posted.status).toBe(200);
    expect(posted.body.data).toMatchObject({ skip_instructions: 1, notify_email: null, quota_mb: 500 });
    expect((await api("GET", `/v1/voicemails/${box.id}`, { key: t.key })).body.data).toEqual(posted.body.data);

    expect((await api("DELETE", `/v1/voicemails/${box.id}`, { key: t.key })).body).toEqual({ ok: true });
    expect((await api("GET", `/v1/voicemails/${box.id}`, { key: t.key })).status).toBe(404);
    expect(await boxCount(t.accountId)).toBe(0);
  });

  test("create with every field", async () => {
    const t = await seedTenant(platform);
    const media = await insertMediaFile(t.accountId);
    const body = {
      name: "Support",
      greeting_media_id: media,
      skip_instructions: 1,
      quota_mb: 10240,
      notify_email: "support@example.com",
      pin: "0042",
      max_message_sec: 3600,
      language: "pt-BR",
    };
    const box = await createBox(t, body);
    const { pin: _pin, ...shown } = body;
    expect(box).toMatchObject({ ...shown, has_pin: 1 });
    const low = await createBox(t, { quota_mb: 1, max_message_sec: 10 });
    expect(low).toMatchObject({ quota_mb: 1, max_message_sec: 10 });
  });

  test("POST on the collection creates without id (201) and updates with one (200)", async () => {
    const t = await seedTenant(platform);
    const created = await api("POST", "/v1/voicemails", { key: t.key, body: { name: "Sales", quota_mb: 200 } });
    expect(created.status).toBe(201);
    const id = created.body.data.id;
    const updated = await api("POST", "/v1/voicemails", { key: t.key, body: { id, name: "Sales team", pin: "5566" } });
    expect(updated.status).toBe(200);
    expect(updated.body.data).toMatchObject({ id, name: "Sales team", quota_mb: 200, has_pin: 1, created_at: created.body.data.created_at });
    expect(await boxCount(t.accountId)).toBe(1);
    // An update needs no name; only the fields sent change.
    const touched = await api("POST", "/v1/voicemails", { key: t.key, body: { id, max_message_sec: 60 } });
    expect(touched.status).toBe(200);
    expect(touched.body.data).toMatchObject({ name: "Sales team", max_message_sec: 60, has_pin: 1 });
    expect(await verifyVoicemailPin(platform.db, platform.secrets, t.accountId, id, "5566")).toBe(true);
  });

  test("the PIN is kept encrypted, replaced, removed, and never shown, logged or stored in the row", async () => {
    const t = await seedTenant(platform);
    const pin = "480213975326";
    const newPin = "917364028551";
    const box = await createBox(t, { pin });
    expect(box.has_pin).toBe(1);
    const row = await storedRow(t.accountId, box.id);
    expect(row?.pin_secret_ref).toMatch(/^sec_/);
    expect(JSON.stringify(row)).not.toContain(pin);
    const ref = row!.pin_secret_ref as string;
    const secret = await secretRow(t.accountId, ref);
    expect(JSON.stringify(secret)).not.toContain(pin);
    expect(await platform.secrets.reveal(platform.db, t.accountId, ref)).toBe(pin);
    expect(await verifyVoicemailPin(platform.db, platform.secrets, t.accountId, box.id, pin)).toBe(true);

    const changed = await api("PATCH", `/v1/voicemails/${box.id}`, { key: t.key, body: { pin: newPin } });
    expect(changed.body.data.has_pin).toBe(1);
    expect(await verifyVoicemailPin(platform.db, platform.secrets, t.accountId, box.id, newPin)).toBe(true);
    expect(await verifyVoicemailPin(platform.db, platform.secrets, t.accountId, box.id, pin)).toBe(false);
    const after = await storedRow(t.accountId, box.id);
    expect(JSON.stringify(after)).not.toContain(newPin);
    expect(JSON.stringify(await secretRow(t.accountId, after!.pin_secret_ref))).not.toContain(newPin);

    // Other edits leave the PIN alone.
    await api("PATCH", `/v1/voicemails/${box.id}`, { key: t.key, body: { name: "Renamed" } });
    expect(await verifyVoicemailPin(platform.db, platform.secrets, t.accountId, box.id, newPin)).toBe(true);

    const removed = await api("PATCH", `/v1/voicemails/${box.id}`, { key: t.key, body: { pin: null } });
    expect(removed.body.data.has_pin).toBe(0);
    expect((await storedRow(t.accountId, box.id))?.pin_secret_ref).toBeNull();
    expect(await secretRow(t.accountId, after!.pin_secret_ref)).toBeUndefined();
    expect(await verifyVoicemailPin(platform.db, platform.secrets, t.accountId, box.id, newPin)).toBe(false);

    // Replies (including a failed write that carried the PIN) and logs never hold it.
    await api("POST", "/v1/voicemails", { key: t.key, body: { pin, quota_mb: 0 } });
    await api("POST", "/v1/voicemails", { key: t.key, body: { name: "x", pin, greeting_media_id: "med_00000000000000000000000000" } });
    await Bun.sleep(20); // The access log is written after the response, on a later turn of the event loop.
    expect(logLines.some((l) => l.includes(`/v1/voicemails/${box.id}`))).toBe(true);
    for (const text of [...replies, ...logLines]) {
      expect(text).not.toContain(pin);
      expect(text).not.toContain(newPin);
      expect(text).not.toContain("pin_secret_ref");
      expect(text).not.toContain(ref);
    }
  });

  test("deleting a box removes its PIN secret", async () => {
    const t = await seedTenant(platform);
    const box = await createBox(t, { pin: "1234" });
    const ref = (await storedRow(t.accountId, box.id))!.pin_secret_ref as string;
    expect(await secretRow(t.accountId, ref)).toBeDefined();
    expect((await api("DELETE", `/v1/voicemails/${box.id}`, { key: t.key })).status).toBe(200);
    expect(await secretRow(t.accountId, ref)).toBeUndefined();
  });

  test("an Idempotency-Key replay of a create returns the same box and makes no second row", async () => {
    const t = await seedTenant(platform);
    const headers = { "idempotency-key": `vm-${Date.now()}` };
    const first = await api("POST", "/v1/voicemails", { key: t.key, body: { name: "Once", pin: "2468" }, headers });
    expect(first.status).toBe(201);
    const again = await api("POST", "/v1/voicemails", { key: t.key, body: { name: "Once", pin: "2468" }, headers });
    expect(again.status).toBe(201);
    expect(again.headers.get("idempotency-replayed")).toBe("true");
    expect(again.body).toEqual(first.body);
    expect(await boxCount(t.accountId)).toBe(1);
    // The same key with another body is refused.
    const other = await api("POST", "/v1/voicemails", { key: t.key, body: { name: "Twice" }, headers });
    expect(other.status).toBe(422);
    expect(await boxCount(t.accountId)).toBe(1);
  });

  test("pagination walks every box once with limit=2; q filters by name prefix in any case", async () => {
    const t = await seedTenant(platform);
    const names = ["Sales east", "sales west", "Support", "50%_off", "500 club"];
    const ids: string[] = [];
    for (const name of names) ids.push((await createBox(t, { name })).id);
    const seen: string[] = [];
    let cursor: string | undefined;
    let pages = 0;
    do {
      const page = await api("GET", `/v1/voicemails?limit=2${cursor ? `&cursor=${cursor}` : ""}`, { key: t.key });
      expect(page.status).toBe(200);
      expect((page.body.data as Json[]).length).toBeLessThanOrEqual(2);
      seen.push(...(page.body.data as Json[]).map((b) => b.id as string));
      cursor = page.body.next_cursor;
      pages++;
    } while (cursor);
    expect(pages).toBe(3);
    expect(seen).toEqual(ids);

    const named = async (q: string) =>
      ((await api("GET", `/v1/voicemails?q=${encodeURIComponent(q)}`, { key: t.key })).body.data as Json[]).map((b) => b.name);
    expect(await named("SALES")).toEqual(["Sales east", "sales west"]);
    expect(await named("s")).toEqual(["Sales east", "sales west", "Support"]);
    // Wildcards in q match literally.
    expect(await named("50%")).toEqual(["50%_off"]);
    expect(await named("_")).toEqual([]);
    expect(await named("nothing")).toEqual([]);
    const firstSales = await api("GET", "/v1/voicemails?q=sales&limit=1", { key: t.key });
    expect((firstSales.body.data as Json[]).map((b) => b.name)).toEqual(["Sales east"]);
    const secondSales = await api("GET", `/v1/voicemails?q=sales&limit=1&cursor=${firstSales.body.next_cursor}`, { key: t.key });
    expect((secondSales.body.data as Json[]).map((b) => b.name)).toEqual(["sales west"]);
    const afterSales = await api("GET", `/v1/voicemails?q=sales&limit=1&cursor=${secondSales.body.next_cursor}`, { key: t.key });
    expect(afterSales.body).toEqual({ ok: true, data: [] });
  });
});

describe(`/v1/voicemails errors [${storeKind}]`, () => {
  test("400 naming the field for every bad value; nothing is created", async () => {
    const t = await seedTenant(platform);
    const cases: Array<[Json, string]> = [
      [{}, "/name"],
      [{ quota_mb: 50 }, "/name"],
      [{ name: "" }, "/name"],
      [{ name: "x".repeat(201) }, "/name"],
      [{ name: 5 }, "/name"],
      [{ name: "b", quota_mb: 0 }, "/quota_mb"],
      [{ name: "b", quota_mb: 10241 }, "/quota_mb"],
      [{ name: "b", quota_mb: "100" }, "/quota_mb"],
      [{ name: "b", quota_mb: 1.5 }, "/quota_mb"],
      [{ name: "b", max_message_sec: 9 }, "/max_message_sec"],
      [{ name: "b", max_message_sec: 3601 }, "/max_message_sec"],
      [{ name: "b", skip_instructions: 2 }, "/skip_instructions"],
      [{ name: "b", skip_instructions: true }, "/skip_instructions"],
      [{ name: "b", notify_email: "not-an-email" }, "/notify_email"],
      [{ name: "b", pin: "123" }, "/pin"],
      [{ name: "b", pin: "1234567890123" }, "/pin"],
      [{ name: "b", pin: "12a4" }, "/pin"],
      [{ name: "b", pin: "12*4" }, "/pin"],
      [{ name: "b", pin: 1234 }, "/pin"],
      [{ name: "b", language: "english" }, "/language"],
      [{ name: "b", greeting_media_id: "greeting.wav" }, "/greeting_media_id"],
      [{ name: "b", greeting_media_id: "med_00000000000000000000000000" }, "/greeting_media_id"],
      [{ name: "b", has_pin: 1 }, "/has_pin"],
      [{ name: "b", pin_secret_ref: "sec_00000000000000000000000000" }, "/pin_secret_ref"],
      [{ name: "b", account_id: "acc_00000000000000000000000000" }, "/account_id"],
    ];
    for (const [body, path] of cases) {
      const r = await api("POST", "/v1/voicemails", { key: t.key, body });
      expect(r.status, JSON.stringify(body)).toBe(400);
      expect(r.body.error).toBe("validation_failed");
      expect((r.body.details as Json[]).map((d) => d.path), JSON.stringify(body)).toContain(path);
    }
    expect(await boxCount(t.accountId)).toBe(0);
    expect(((await rawRows<Json>(platform.db, sql`select id from secret where account_id = ${t.accountId}`)).length)).toBe(0);
  });

  test("a greeting of another account is refused like a missing one", async () => {
    const t = await seedTenant(platform);
    const other = await seedTenant(platform);
    const theirs = await insertMediaFile(other.accountId);
    const r = await api("POST", "/v1/voicemails", { key: t.key, body: { name: "b", greeting_media_id: theirs } });
    expect(r.status).toBe(400);
    expect(r.body.details).toEqual([{ path: "/greeting_media_id", message: "No such media file in this account." }]);
  });

  test("a refused update changes nothing, the PIN included", async () => {
    const t = await seedTenant(platform);
    const box = await createBox(t, { pin: "1111", quota_mb: 300 });
    const bad = await api("PATCH", `/v1/voicemails/${box.id}`, {
      key: t.key,
      body: { pin: "2222", quota_mb: 400, greeting_media_id: "med_00000000000000000000000000" },
    });
    expect(bad.status).toBe(400);
    expect((await api("GET", `/v1/voicemails/${box.id}`, { key: t.key })).body.data).toEqual(box);
    expect(await verifyVoicemailPin(platform.db, platform.secrets, t.accountId, box.id, "1111")).toBe(true);
    expect(await verifyVoicemailPin(platform.db, platform.secrets, t.accountId, box.id, "2222")).toBe(false);
    for (const [body, path] of [[{ quota_mb: 0 }, "/quota_mb"], [{ pin: "1" }, "/pin"], [{ name: null }, "/name"], [{ id: box.id }, "/id"]] as const) {
      const r = await api("PATCH", `/v1/voicemails/${box.id}`, { key: t.key, body });
      expect(r.status).toBe(400);
      expect((r.body.details as Json[]).map((d) => d.path)).toContain(path);
    }
    const empty = await api("PATCH", `/v1/voicemails/${box.id}`, { key: t.key, body: {} });
    expect(empty.status).toBe(400);
  });

  test("create-or-update with an id this account does not have is a 404", async () => {
    const t = await seedTenant(platform);
    const other = await seedTenant(platform);
    const theirs = await createBox(other, { name: "Theirs", pin: "9999" });
    for (const id of [theirs.id, "vm_00000000000000000000000000", "nope"]) {
      const r = await api("POST", "/v1/voicemails", { key: t.key, body: { id, name: "Hijack", pin: "1234" } });
      expect(r.status).toBe(404);
      expect(r.body.error).toBe("not_found");
    }
    expect(await boxCount(t.accountId)).toBe(0);
    expect((await api("GET", `/v1/voicemails/${theirs.id}`, { key: other.key })).body.data).toEqual(theirs);
    expect(await verifyVoicemailPin(platform.db, platform.secrets, other.accountId, theirs.id, "9999")).toBe(true);
  });

  test("409 naming the user when the account's DID default routes to the box", async () => {
    const t = await seedTenant(platform);
    const box = await createBox(t, { pin: "1234" });
    await platform.db.execute(sql`update account set did_default_dest_kind = 'voicemail', did_default_dest_id = ${box.id} where id = ${t.accountId}`);
    const r = await api("DELETE", `/v1/voicemails/${box.id}`, { key: t.key });
    expect(r.status).toBe(409);
    expect(r.body.error).toBe("conflict");
    expect(r.body.used_by).toEqual([{ kind: "account", id: t.accountId }]);
    expect((await api("GET", `/v1/voicemails/${box.id}`, { key: t.key })).status).toBe(200);
    expect(await verifyVoicemailPin(platform.db, platform.secrets, t.accountId, box.id, "1234")).toBe(true);
    await platform.db.execute(sql`update account set did_default_dest_kind = null, did_default_dest_id = null where id = ${t.accountId}`);
    expect((await api("DELETE", `/v1/voicemails/${box.id}`, { key: t.key })).status).toBe(200);
  });

  test("409 while a number routes to the box", async () => {
    const t = await seedTenant(platform);
    const box = await createBox(t);
    const numberId = newId("num");
    const e164 = `1555${String(Date.now()).slice(-7)}`;
    await platform.db.execute(
      sql`insert into number (account_id, id, e164, dest_kind, dest_id, created_at, updated_at) values (${t.accountId}, ${numberId}, ${e164}, 'voicemail', ${box.id}, 0, 0)`,
    );
    const r = await api("DELETE", `/v1/voicemails/${box.id}`, { key: t.key });
    expect(r.status).toBe(409);
    expect(r.body.used_by).toEqual([{ kind: "number", id: numberId }]);
    await platform.db.execute(sql`delete from number where account_id = ${t.accountId} and id = ${numberId}`);
    expect((await api("DELETE", `/v1/voicemails/${box.id}`, { key: t.key })).status).toBe(200);
  });

  test("409 while a user has the box as default mailbox", async () => {
    const t = await seedTenant(platform);
    const box = await createBox(t);
    const userId = newId("us");
    await platform.db.execute(
      sql`insert into app_user (account_id, id, username, display_name, voicemail_id, created_at, updated_at) values (${t.accountId}, ${userId}, '1001', 'Ann', ${box.id}, 0, 0)`,
    );
    const r = await api("DELETE", `/v1/voicemails/${box.id}`, { key: t.key });
    expect(r.status).toBe(409);
    expect(r.body.used_by).toEqual([{ kind: "user", id: userId }]);
    expect((await api("GET", `/v1/voicemails/${box.id}`, { key: t.key })).status).toBe(200);
  });

  test("400 for bad list queries", async () => {
    const t = await seedTenant(platform);
    for (const query of ["cursor=garbage", "limit=0", "limit=501", "limit=abc", "q=", `q=${"a".repeat(201)}`, "colour=red"]) {
      const r = await api("GET", `/v1/voicemails?${query}`, { key: t.key });
      expect(r.status, query).toBe(400);
      expect(r.body.error).toBe("validation_failed");
    }
  });

  test("404 for an unknown box on every item route", async () => {
    const t = await seedTenant(platform);
    const id = "vm_00000000000000000000000000";
    for (const [method, body] of [["GET", undefined], ["PATCH", { name: "x" }], ["POST", { name: "x" }], ["DELETE", undefined]] as const) {
      const r = await api(method, `/v1/voicemails/${id}`, { key: t.key, body });
      expect(r.status, method).toBe(404);
    }
  });
});

describe(`/v1/voicemails security [${storeKind}]`, () => {
  test("401 without a credential, before the body is looked at", async () => {
    expect((await api("GET", "/v1/voicemails")).status).toBe(401);
    expect((await api("POST", "/v1/voicemails", { body: { quota_mb: "nope" } })).status).toBe(401);
    expect((await api("DELETE", "/v1/voicemails/vm_00000000000000000000000000")).status).toBe(401);
  });

  test("403 naming the voicemail scope on every route", async () => {
    const t = await seedTenant(platform);
    const box = await createBox(t);
    const other = await keyWithScopes(platform, t.accountId, ["conferences", "numbers"]);
    const routes: Array<[string, string, Json | undefined]> = [
      ["GET", "/v1/voicemails", undefined],
      ["POST", "/v1/voicemails", { name: "x" }],
      ["GET", `/v1/voicemails/${box.id}`, undefined],
      ["POST", `/v1/voicemails/${box.id}`, { name: "x" }],
      ["PATCH", `/v1/voicemails/${box.id}`, { name: "x" }],
      ["DELETE", `/v1/voicemails/${box.id}`, undefined],
    ];
    for (const [method, path, body] of routes) {
      const r = await api(method, path, { key: other, body });
      expect(r.status, `${method} ${path}`).toBe(403);
      expect(r.body.need).toBe("voicemail");
    }
    const scoped = await keyWithScopes(platform, t.accountId, ["voicemail"]);
    expect((await api("GET", `/v1/voicemails/${box.id}`, { key: scoped })).status).toBe(200);
    expect((await api("GET", `/v1/voicemails/${box.id}`, { key: t.key })).body.data).toEqual(box);
  });

  test("another account's box is a 404 to read, update or delete, and absent from the list", async () => {
    const mine = await seedTenant(platform);
    const theirs = await seedTenant(platform);
    const box = await createBox(theirs, { name: "Private", pin: "8080" });
    for (const [method, body] of [["GET", undefined], ["PATCH", { pin: "1234" }], ["POST", { name: "Mine now" }], ["DELETE", undefined]] as const) {
      const r = await api(method, `/v1/voicemails/${box.id}`, { key: mine.key, body });
      expect(r.status, method).toBe(404);
    }
    expect(((await api("GET", "/v1/voicemails", { key: mine.key })).body.data as Json[]).length).toBe(0);
    expect((await api("GET", `/v1/voicemails/${box.id}`, { key: theirs.key })).body.data).toEqual(box);
    expect(await verifyVoicemailPin(platform.db, platform.secrets, theirs.accountId, box.id, "8080")).toBe(true);
    // Checking a PIN against the wrong account never matches.
    expect(await verifyVoicemailPin(platform.db, platform.secrets, mine.accountId, box.id, "8080")).toBe(false);
  });
});
