/** /v1/queues, its members and its in-queue options: happy paths, errors and security. */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { sql } from "drizzle-orm";
import type { Platform } from "../../core/platform.ts";
import { newId } from "../../core/ids/ids.ts";
import { rawRows } from "../../core/db/migrate.ts";
import { nowSeconds } from "../../core/db/columns.ts";
import { createPublicApp } from "../app.ts";
import { identityRoutes } from "./identity.ts";
import { queueRoutes } from "./queues.ts";
import { keyWithScopes, seedTenant, storeKind, testPlatform, type Tenant } from "../../../test/support/platform.ts";
import { call, type Json } from "../../../test/support/http.ts";

let platform: Platform;
let app: ReturnType<typeof createPublicApp>;

beforeAll(async () => {
  platform = await testPlatform();
  app = createPublicApp(platform, [identityRoutes, queueRoutes]);
});
afterAll(() => platform.close());

// Rows of other capabilities, inserted directly so these tests depend only on their tables.
async function insertUser(accountId: string, isAgent: 0 | 1 = 1): Promise<string> {
  const id = newId("us");
  const now = nowSeconds();
  await platform.db.execute(
    sql`insert into app_user (account_id, id, username, display_name, is_agent, created_at, updated_at) values (${accountId}, ${id}, ${id.slice(-10).toLowerCase()}, ${"Agent " + id.slice(-4)}, ${isAgent}, ${now}, ${now})`,
  );
  return id;
}

async function insertMedia(accountId: string): Promise<string> {
  const id = newId("med");
  await platform.db.execute(
    sql`insert into media_file (account_id, id, name, kind, object_key, format, content_type, size_bytes, duration_ms, created_at) values (${accountId}, ${id}, ${"Hold music"}, ${"moh"}, ${`${accountId}/media/${id}.wav`}, ${"wav"}, ${"audio/wav"}, ${1024}, ${1000}, ${nowSeconds()})`,
  );
  return id;
}

async function insertSchedule(accountId: string): Promise<string> {
  const id = newId("sch");
  const now = nowSeconds();
  await platform.db.execute(sql`insert into time_schedule (account_id, id, name, created_at, updated_at) values (${accountId}, ${id}, ${`Hours ${id}`}, ${now}, ${now})`);
  return id;
}

async function createQueue(t: Tenant, body: Json = {}): Promise<Json> {
  const r = await call(app, "POST", "/v1/queues", { key: t.key, body: { name: `Queue ${newId("q").slice(-8)}`, ...body } });
  expect(r.status).toBe(201);
  return r.body.data;
}

function paths(r: { body: Json }): string[] {
  return (r.body.details as Json[]).map((d) => d.path as string);
}

const SLOT_PREFIXES = ["timeout_dest", "abandon_dest", "no_agents_dest", "queue_full_dest", "ewt_dest", "closed_dest", "holiday_dest"];

const QUEUE_FIELDS = [
  "id",
  "name",
  "strategy",
  "agent_ring_timeout_sec",
  "max_wait_sec",
  "wrap_up_sec",
  "max_no_answer",
  "announce_position",
  "announce_first_sec",
  "announce_interval_sec",
  "moh_mode",
  "moh_media_id",
  "language",
  "max_queued",
  "ewt_threshold_sec",
  "ewt_aht_sec",
  "schedule_id",
  ...SLOT_PREFIXES.flatMap((p) => [`${p}_kind`, `${p}_id`]),
  "created_at",
  "updated_at",
].sort();

describe(`/v1/queues happy [${storeKind}]`, () => {
  test("create with defaults; GET shows members and options; the list shows KPIs", async () => {
    const t = await seedTenant(platform);
    const before = nowSeconds();
    const created = await call(app, "POST", "/v1/queues", { key: t.key, body: { name: "Support" } });
    expect(created.status).toBe(201);
    const q = created.body.data;
    expect(q.id).toMatch(/^q_[0-9A-Z]{26}$/);
    expect(q).toMatchObject({
      name: "Support",
      strategy: "longest_idle",
      agent_ring_timeout_sec: 20,
      max_wait_sec: null,
      wrap_up_sec: 0,
      max_no_answer: 0,
      announce_position: 0,
      announce_first_sec: 30,
      announce_interval_sec: 60,
      moh_mode: "stream",
      moh_media_id: null,
      language: null,
      max_queued: null,
      ewt_threshold_sec: null,
      ewt_aht_sec: null,
      schedule_id: null,
      members: [],
      options: [],
    });
    for (const p of SLOT_PREFIXES) expect([q[`${p}_kind`], q[`${p}_id`]]).toEqual([null, null]);
    expect(q.created_at).toBeGreaterThanOrEqual(before);
    expect(Object.keys(q).sort()).toEqual([...QUEUE_FIELDS, "members", "options"].sort());

    const got = await call(app, "GET", `/v1/queues/${q.id}`, { key: t.key });
    expect(got.status).toBe(200);
    expect(got.body.data).toEqual(q);

    const list = await call(app, "GET", "/v1/queues", { key: t.key });
    expect(list.status).toBe(200);
    expect(list.body.next_cursor).toBeUndefined();
    expect(list.body.data.length).toBe(1);
    const item = list.body.data[0];
    expect(Object.keys(item).sort()).toEqual([...QUEUE_FIELDS, "kpis"].sort());
    const { kpis, ...settings } = item;
    const { members: _m, options: _o, ...qSettings } = q;
    expect(settings).toEqual(qSettings);
    // No call records exist yet: honest zeros and nulls over the default 24-hour window.
    expect(kpis).toMatchObject({ calls_offered: 0, calls_answered: 0, calls_abandoned: 0, avg_wait_sec: null, service_level_pct: null });
    expect(Math.abs(kpis.since - (nowSeconds() - 86400))).toBeLessThanOrEqual(5);
    const since = await call(app, "GET", "/v1/queues?since=1700000000", { key: t.key });
    expect(since.body.data[0].kpis.since).toBe(1700000000);
  });

  test("create with every setting: slots, schedule, hold music, deflect rules", async () => {
    const t = await seedTenant(platform);
    const overflow = await createQueue(t, { name: "Overflow" });
    const agent = await insertUser(t.accountId);
    const media = await insertMedia(t.accountId);
    const schedule = await insertSchedule(t.accountId);
    const body = {
      name: "Sales",
      strategy: "top_down",
      agent_ring_timeout_sec: 15,
      max_wait_sec: 600,
      wrap_up_sec: 30,
      max_no_answer: 3,
      announce_position: 1,
      announce_first_sec: 10,
      announce_interval_sec: 0,
      moh_mode: "file",
      moh_media_id: media,
      language: "fr-FR",
      timeout_dest_kind: "queue",
      timeout_dest_id: overflow.id,
      abandon_dest_kind: "hangup",
      abandon_dest_id: null,
      no_agents_dest_kind: "user",
      no_agents_dest_id: agent,
      max_queued: 20,
      queue_full_dest_kind: "queue",
      queue_full_dest_id: overflow.id,
      ewt_threshold_sec: 300,
      ewt_aht_sec: 180,
      ewt_dest_kind: "queue",
      ewt_dest_id: overflow.id,
      schedule_id: schedule,
      closed_dest_kind: "hangup",
      holiday_dest_kind: "queue",
      holiday_dest_id: overflow.id,
    };
    const r = await call(app, "POST", "/v1/queues", { key: t.key, body });
    expect(r.status).toBe(201);
    expect(r.body.data).toMatchObject({ ...body, closed_dest_id: null });
    const got = await call(app, "GET", `/v1/queues/${r.body.data.id}`, { key: t.key });
    expect(got.body.data).toMatchObject(body);
  });

  test("PATCH and POST on the item change only the sent fields; a slot empties with its kind", async () => {
    const t = await seedTenant(platform);
    const other = await createQueue(t);
    const q = await createQueue(t, { name: "Billing", wrap_up_sec: 15, timeout_dest_kind: "queue", timeout_dest_id: other.id, max_wait_sec: 120 });
    const patched = await call(app, "PATCH", `/v1/queues/${q.id}`, { key: t.key, body: { strategy: "ring_all", announce_position: 1 } });
    expect(patched.status).toBe(200);
    expect(patched.body.data).toMatchObject({ name: "Billing", strategy: "ring_all", announce_position: 1, wrap_up_sec: 15, timeout_dest_id: other.id });
    expect(patched.body.data.members).toEqual([]);
    const posted = await call(app, "POST", `/v1/queues/${q.id}`, { key: t.key, body: { name: "Billing EU", timeout_dest_kind: null } });
    expect(posted.status).toBe(200);
    expect(posted.body.data).toMatchObject({ name: "Billing EU", strategy: "ring_all", timeout_dest_kind: null, timeout_dest_id: null, max_wait_sec: 120 });
    const hangup = await call(app, "PATCH", `/v1/queues/${q.id}`, { key: t.key, body: { timeout_dest_kind: "queue", timeout_dest_id: other.id } });
    expect(hangup.body.data.timeout_dest_id).toBe(other.id);
    const toHangup = await call(app, "PATCH", `/v1/queues/${q.id}`, { key: t.key, body: { timeout_dest_kind: "hangup" } });
    expect(toHangup.body.data).toMatchObject({ timeout_dest_kind: "hangup", timeout_dest_id: null });
    expect((await call(app, "GET", `/v1/queues/${q.id}`, { key: t.key })).body.data).toEqual(toHangup.body.data);
  });

  test("members: add, update sent fields only, ordered by tier then position, remove, filter the list", async () => {
    const t = await seedTenant(platform);
    const q = await createQueue(t);
    const other = await createQueue(t);
    const [a, b, c, d] = [await insertUser(t.accountId), await insertUser(t.accountId), await insertUser(t.accountId), await insertUser(t.accountId)];
    const added = await call(app, "POST", `/v1/queues/${q.id}/members`, { key: t.key, body: { user_id: a } });
    expect(added.status).toBe(201);
    expect(added.body.data).toMatchObject({ user_id: a, tier_level: 1, position: 0, delay_sec: 0, mode: "static" });
    expect(Object.keys(added.body.data).sort()).toEqual(["created_at", "delay_sec", "mode", "position", "tier_level", "user_id"]);
    await call(app, "POST", `/v1/queues/${q.id}/members`, { key: t.key, body: { user_id: b, tier_level: 2, position: 1 } });
    await call(app, "POST", `/v1/queues/${q.id}/members`, { key: t.key, body: { user_id: c, tier_level: 1, position: 5, mode: "dynamic", delay_sec: 10 } });
    await call(app, "POST", `/v1/queues/${q.id}/members`, { key: t.key, body: { user_id: d, tier_level: 2, position: 0 } });
    // An update changes only what was sent: a moves behind c in tier 1, keeping its mode.
    const updated = await call(app, "POST", `/v1/queues/${q.id}/members`, { key: t.key, body: { user_id: a, position: 9 } });
    expect(updated.status).toBe(200);
    expect(updated.body.data).toMatchObject({ user_id: a, tier_level: 1, position: 9, mode: "static", created_at: added.body.data.created_at });

    const list = await call(app, "GET", `/v1/queues/${q.id}/members`, { key: t.key });
    expect(list.status).toBe(200);
    expect((list.body.data as Json[]).map((m) => [m.user_id, m.tier_level, m.position])).toEqual([
      [c, 1, 5],
      [a, 1, 9],
      [d, 2, 0],
      [b, 2, 1],
    ]);
    expect((list.body.data as Json[]).find((m) => m.user_id === c)).toMatchObject({ mode: "dynamic", delay_sec: 10 });
    const detail = await call(app, "GET", `/v1/queues/${q.id}`, { key: t.key });
    expect(detail.body.data.members).toEqual(list.body.data);

    await call(app, "POST", `/v1/queues/${other.id}/members`, { key: t.key, body: { user_id: d } });
    const ofD = await call(app, "GET", `/v1/queues?user_id=${d}`, { key: t.key });
    expect((ofD.body.data as Json[]).map((x) => x.id)).toEqual([q.id, other.id]);
    const ofA = await call(app, "GET", `/v1/queues?user_id=${a}`, { key: t.key });
    expect((ofA.body.data as Json[]).map((x) => x.id)).toEqual([q.id]);

    expect((await call(app, "DELETE", `/v1/queues/${q.id}/members/${a}`, { key: t.key })).body).toEqual({ ok: true });
    const after = await call(app, "GET", `/v1/queues/${q.id}/members`, { key: t.key });
    expect((after.body.data as Json[]).map((m) => m.user_id)).toEqual([c, d, b]);
    expect((await call(app, "GET", `/v1/queues?user_id=${a}`, { key: t.key })).body.data).toEqual([]);
  });

  test("options: set, replace, keypad order, delete by every spelling of * and #", async () => {
    const t = await seedTenant(platform);
    const q = await createQueue(t);
    const other = await createQueue(t);
    const media = await insertMedia(t.accountId);
    const one = await call(app, "POST", `/v1/queues/${q.id}/options`, {
      key: t.key,
      body: { digit: "1", action: "route", dest_kind: "queue", dest_id: other.id, stay_in_queue: 1, prompt_media_id: media, label: "Sales" },
    });
    expect(one.status).toBe(201);
    expect(one.body.data).toEqual({
      digit: "1",
      action: "route",
      dest_kind: "queue",
      dest_id: other.id,
      webhook_url: null,
      has_webhook_secret: 0,
      stay_in_queue: 1,
      prompt_media_id: media,
      label: "Sales",
    });
    // Replacing a key's option replaces every field: unsent ones go back to their defaults.
    const replaced = await call(app, "POST", `/v1/queues/${q.id}/options`, { key: t.key, body: { digit: "1", action: "deflect", dest_kind: "queue", dest_id: other.id } });
    expect(replaced.status).toBe(200);
    expect(replaced.body.data).toMatchObject({ action: "deflect", stay_in_queue: 0, prompt_media_id: null, label: null });
    for (const digit of ["#", "0", "*", "9"]) {
      const r = await call(app, "POST", `/v1/queues/${q.id}/options`, { key: t.key, body: { digit, action: "hangup" } });
      expect(r.status).toBe(201);
    }
    const detail = await call(app, "GET", `/v1/queues/${q.id}`, { key: t.key });
    expect((detail.body.data.options as Json[]).map((o) => o.digit)).toEqual(["0", "1", "9", "*", "#"]);

    expect((await call(app, "DELETE", `/v1/queues/${q.id}/options/%2A`, { key: t.key })).body).toEqual({ ok: true });
    expect((await call(app, "DELETE", `/v1/queues/${q.id}/options/%23`, { key: t.key })).status).toBe(200);
    expect((await call(app, "DELETE", `/v1/queues/${q.id}/options/9`, { key: t.key })).status).toBe(200);
    let left = (await call(app, "GET", `/v1/queues/${q.id}`, { key: t.key })).body.data.options as Json[];
    expect(left.map((o) => o.digit)).toEqual(["0", "1"]);
    for (const digit of ["*", "#"]) await call(app, "POST", `/v1/queues/${q.id}/options`, { key: t.key, body: { digit, action: "hangup" } });
    expect((await call(app, "DELETE", `/v1/queues/${q.id}/options/star`, { key: t.key })).status).toBe(200);
    expect((await call(app, "DELETE", `/v1/queues/${q.id}/options/HASH`, { key: t.key })).status).toBe(200);
    left = (await call(app, "GET", `/v1/queues/${q.id}`, { key: t.key })).body.data.options as Json[];
    expect(left.map((o) => o.digit)).toEqual(["0", "1"]);
  });

  test("the webhook secret is write-only: never in a reply or a queue row, kept or dropped as asked", async () => {
    const t = await seedTenant(platform);
    const q = await createQueue(t);
    const secret = `whsec-${crypto.randomUUID()}`;
    const replies: string[] = [];
    const set = await call(app, "POST", `/v1/queues/${q.id}/options`, {
      key: t.key,
      body: { digit: "5", action: "webhook", webhook_url: "https://crm.example.com/hooks/callback", webhook_secret: secret, stay_in_queue: 1 },
    });
    replies.push(set.text);
    expect(set.status).toBe(201);
    expect(set.body.data).toMatchObject({ digit: "5", action: "webhook", webhook_url: "https://crm.example.com/hooks/callback", has_webhook_secret: 1 });
    expect(Object.keys(set.body.data)).not.toContain("webhook_secret_ref");

    const [row] = await rawRows<{ webhook_secret_ref: string }>(platform.db, sql`select webhook_secret_ref from in_queue_option where account_id = ${t.accountId} and queue_id = ${q.id}`);
    const ref = row!.webhook_secret_ref;
    expect(ref).toMatch(/^sec_/);
    expect(await platform.secrets.reveal(platform.db, t.accountId, ref)).toBe(secret);

    // Omitted: a webhook option keeps its secret.
    const relabel = await call(app, "POST", `/v1/queues/${q.id}/options`, { key: t.key, body: { digit: "5", action: "webhook", webhook_url: "https://crm.example.com/v2", label: "Callback" } });
    replies.push(relabel.text);
    expect(relabel.status).toBe(200);
    expect(relabel.body.data.has_webhook_secret).toBe(1);
    expect(await platform.secrets.reveal(platform.db, t.accountId, ref)).toBe(secret);
    const rotated = `rotated-${crypto.randomUUID()}`;
    const rotate = await call(app, "POST", `/v1/queues/${q.id}/options`, { key: t.key, body: { digit: "5", action: "webhook", webhook_url: "https://crm.example.com/v2", webhook_secret: rotated } });
    replies.push(rotate.text);
    expect(await platform.secrets.reveal(platform.db, t.accountId, ref)).toBe(rotated);

    for (const [method, path] of [
      ["GET", `/v1/queues/${q.id}`],
      ["GET", "/v1/queues"],
      ["GET", `/v1/queues/${q.id}/members`],
      ["PATCH", `/v1/queues/${q.id}`],
    ] as const) {
      const r = await call(app, method, path, { key: t.key, body: method === "PATCH" ? { wrap_up_sec: 5 } : undefined });
      expect(r.status).toBe(200);
      replies.push(r.text);
    }
    const rows = await rawRows<Json>(
      platform.db,
      sql`select q.*, o.* from queue q left join in_queue_option o on o.account_id = q.account_id and o.queue_id = q.id where q.account_id = ${t.accountId}`,
    );
    for (const text of [...replies, JSON.stringify(rows)]) {
      expect(text).not.toContain(secret);
      expect(text).not.toContain(rotated);
    }
    for (const text of replies) expect(text).not.toContain(ref);

    // null removes the secret; switching the key to another action removes it too.
    const cleared = await call(app, "POST", `/v1/queues/${q.id}/options`, { key: t.key, body: { digit: "5", action: "webhook", webhook_url: "https://crm.example.com/v2", webhook_secret: null } });
    expect(cleared.body.data.has_webhook_secret).toBe(0);
    expect(await platform.secrets.reveal(platform.db, t.accountId, ref)).toBeNull();
    await call(app, "POST", `/v1/queues/${q.id}/options`, { key: t.key, body: { digit: "6", action: "webhook", webhook_url: "https://x.example.com/", webhook_secret: secret } });
    const [six] = await rawRows<{ webhook_secret_ref: string }>(platform.db, sql`select webhook_secret_ref from in_queue_option where account_id = ${t.accountId} and digit = '6'`);
    const hung = await call(app, "POST", `/v1/queues/${q.id}/options`, { key: t.key, body: { digit: "6", action: "hangup" } });
    expect(hung.body.data).toMatchObject({ has_webhook_secret: 0, webhook_url: null });
    expect(await platform.secrets.reveal(platform.db, t.accountId, six!.webhook_secret_ref)).toBeNull();

    // Deleting the option removes its secret.
    await call(app, "POST", `/v1/queues/${q.id}/options`, { key: t.key, body: { digit: "7", action: "webhook", webhook_url: "https://x.example.com/", webhook_secret: secret } });
    const [seven] = await rawRows<{ webhook_secret_ref: string }>(platform.db, sql`select webhook_secret_ref from in_queue_option where account_id = ${t.accountId} and digit = '7'`);
    expect((await call(app, "DELETE", `/v1/queues/${q.id}/options/7`, { key: t.key })).status).toBe(200);
    expect(await platform.secrets.reveal(platform.db, t.accountId, seven!.webhook_secret_ref)).toBeNull();
  });

  test("delete removes the queue, its members, its options and their secrets", async () => {
    const t = await seedTenant(platform);
    const q = await createQueue(t);
    const agent = await insertUser(t.accountId);
    await call(app, "POST", `/v1/queues/${q.id}/members`, { key: t.key, body: { user_id: agent } });
    await call(app, "POST", `/v1/queues/${q.id}/options`, { key: t.key, body: { digit: "2", action: "webhook", webhook_url: "https://a.example.com/", webhook_secret: "0123456789abcdef0123" } });
    const [opt] = await rawRows<{ webhook_secret_ref: string }>(platform.db, sql`select webhook_secret_ref from in_queue_option where account_id = ${t.accountId} and queue_id = ${q.id}`);
    const r = await call(app, "DELETE", `/v1/queues/${q.id}`, { key: t.key });
    expect(r.status).toBe(200);
    expect(r.body).toEqual({ ok: true });
    expect((await call(app, "GET", `/v1/queues/${q.id}`, { key: t.key })).status).toBe(404);
    const left = await rawRows<{ n: number }>(
      platform.db,
      sql`select (select count(*) from agent_queue_assignment where account_id = ${t.accountId})::int + (select count(*) from in_queue_option where account_id = ${t.accountId})::int as n`,
    );
    expect(Number(left[0]!.n)).toBe(0);
    expect(await platform.secrets.reveal(platform.db, t.accountId, opt!.webhook_secret_ref)).toBeNull();
    expect((await call(app, "DELETE", `/v1/queues/${q.id}`, { key: t.key })).status).toBe(404);
  });

  test("list: name-prefix filter and pagination through every page with limit=2", async () => {
    const t = await seedTenant(platform);
    const names = ["Sales EU", "sales US", "Support", "Sal_es", "Billing"];
    const ids: string[] = [];
    for (const name of names) ids.push((await createQueue(t, { name })).id);
    const sales = await call(app, "GET", "/v1/queues?q=SALES", { key: t.key });
    expect((sales.body.data as Json[]).map((q) => q.name)).toEqual(["Sales EU", "sales US"]);
    // _ and % are literal characters of the prefix, not wildcards.
    expect(((await call(app, "GET", "/v1/queues?q=Sal_", { key: t.key })).body.data as Json[]).map((q) => q.name)).toEqual(["Sal_es"]);
    expect((await call(app, "GET", "/v1/queues?q=%25", { key: t.key })).body.data).toEqual([]);

    const seen: string[] = [];
    let cursor: string | undefined;
    let pages = 0;
    do {
      const page = await call(app, "GET", `/v1/queues?limit=2${cursor ? `&cursor=${cursor}` : ""}`, { key: t.key });
      expect(page.status).toBe(200);
      expect(page.body.data.length).toBeLessThanOrEqual(2);
      for (const q of page.body.data as Json[]) {
        seen.push(q.id);
        expect(q.kpis.calls_offered).toBe(0);
      }
      cursor = page.body.next_cursor;
      pages++;
    } while (cursor);
    expect(pages).toBe(3);
    expect(seen).toEqual(ids);
  });

  test("an Idempotency-Key replay of a create returns the first reply and adds no second queue", async () => {
    const t = await seedTenant(platform);
    const headers = { "idempotency-key": `create-${crypto.randomUUID()}` };
    const first = await call(app, "POST", "/v1/queues", { key: t.key, body: { name: "Once" }, headers });
    expect(first.status).toBe(201);
    const again = await call(app, "POST", "/v1/queues", { key: t.key, body: { name: "Once" }, headers });
    expect(again.status).toBe(201);
    expect(again.headers.get("idempotency-replayed")).toBe("true");
    expect(again.body).toEqual(first.body);
    const list = await call(app, "GET", "/v1/queues", { key: t.key });
    expect(list.body.data.length).toBe(1);
  });
});

describe(`/v1/queues errors [${storeKind}]`, () => {
  test("400 for every bad field of a create, with its path; nothing is written", async () => {
    const t = await seedTenant(platform);
    const theirs = await seedTenant(platform);
    const foreignQueue = await createQueue(theirs);
    const foreignMedia = await insertMedia(theirs.accountId);
    const cases: Array<[Json, string]> = [
      [{}, "/name"],
      [{ name: "" }, "/name"],
      [{ name: "x".repeat(201) }, "/name"],
      [{ name: "A", strategy: "fastest" }, "/strategy"],
      [{ name: "A", agent_ring_timeout_sec: 4 }, "/agent_ring_timeout_sec"],
      [{ name: "A", agent_ring_timeout_sec: 301 }, "/agent_ring_timeout_sec"],
      [{ name: "A", agent_ring_timeout_sec: "20" }, "/agent_ring_timeout_sec"],
      [{ name: "A", agent_ring_timeout_sec: 20.5 }, "/agent_ring_timeout_sec"],
      [{ name: "A", max_wait_sec: 9 }, "/max_wait_sec"],
      [{ name: "A", max_wait_sec: 86401 }, "/max_wait_sec"],
      [{ name: "A", wrap_up_sec: -1 }, "/wrap_up_sec"],
      [{ name: "A", wrap_up_sec: 3601 }, "/wrap_up_sec"],
      [{ name: "A", max_no_answer: 101 }, "/max_no_answer"],
      [{ name: "A", announce_position: true }, "/announce_position"],
      [{ name: "A", announce_first_sec: -5 }, "/announce_first_sec"],
      [{ name: "A", announce_interval_sec: 3601 }, "/announce_interval_sec"],
      [{ name: "A", moh_mode: "radio" }, "/moh_mode"],
      [{ name: "A", moh_media_id: "med_nope" }, "/moh_media_id"],
      [{ name: "A", language: "english" }, "/language"],
      [{ name: "A", max_queued: 0 }, "/max_queued"],
      [{ name: "A", ewt_threshold_sec: 0 }, "/ewt_threshold_sec"],
      [{ name: "A", ewt_aht_sec: 0 }, "/ewt_aht_sec"],
      [{ name: "A", schedule_id: "sch_x" }, "/schedule_id"],
      [{ name: "A", timeout_dest_kind: "feature", timeout_dest_id: "park" }, "/timeout_dest_kind"],
      [{ name: "A", color: "blue" }, "/color"],
      [{ name: "A", id: "q_01M00000000000000000000000" }, "/id"],
      // Rules the service checks on the whole queue.
      [{ name: "A", timeout_dest_id: foreignQueue.id }, "/timeout_dest_kind"],
      [{ name: "A", timeout_dest_kind: "queue" }, "/timeout_dest_id"],
      [{ name: "A", timeout_dest_kind: "queue", timeout_dest_id: foreignQueue.id }, "/timeout_dest_id"],
      [{ name: "A", abandon_dest_kind: "queue", abandon_dest_id: "q_01M00000000000000000000000" }, "/abandon_dest_id"],
      [{ name: "A", no_agents_dest_kind: "user", no_agents_dest_id: "q_01M00000000000000000000000" }, "/no_agents_dest_id"],
      [{ name: "A", abandon_dest_kind: "hangup", abandon_dest_id: "x" }, "/abandon_dest_id"],
      [{ name: "A", queue_full_dest_kind: "hangup" }, "/max_queued"],
      [{ name: "A", ewt_dest_kind: "hangup", ewt_aht_sec: 60 }, "/ewt_threshold_sec"],
      [{ name: "A", closed_dest_kind: "hangup" }, "/schedule_id"],
      [{ name: "A", holiday_dest_kind: "hangup" }, "/schedule_id"],
      [{ name: "A", moh_mode: "file" }, "/moh_media_id"],
      [{ name: "A", moh_media_id: foreignMedia }, "/moh_media_id"],
      [{ name: "A", schedule_id: "sch_01M00000000000000000000000" }, "/schedule_id"],
    ];
    for (const [body, path] of cases) {
      const r = await call(app, "POST", "/v1/queues", { key: t.key, body });
      expect(r.status, JSON.stringify(body)).toBe(400);
      expect(r.body.error).toBe("validation_failed");
      expect(paths(r), JSON.stringify(body)).toContain(path);
    }
    expect((await call(app, "GET", "/v1/queues", { key: t.key })).body.data).toEqual([]);
  });

  test("max_wait_sec without timeout_dest is allowed (the call then hangs up)", async () => {
    const t = await seedTenant(platform);
    const q = await createQueue(t, { max_wait_sec: 300 });
    expect(q).toMatchObject({ max_wait_sec: 300, timeout_dest_kind: null });
  });

  test("400 on update: the queue is checked as a whole, may not route to itself, and stays unchanged", async () => {
    const t = await seedTenant(platform);
    const schedule = await insertSchedule(t.accountId);
    const q = await createQueue(t, { max_queued: 5, queue_full_dest_kind: "hangup", schedule_id: schedule, closed_dest_kind: "hangup", ewt_threshold_sec: 60, ewt_dest_kind: "hangup" });
    const cases: Array<[Json, string]> = [
      [{}, ""],
      [{ max_queued: null }, "/max_queued"],
      [{ schedule_id: null }, "/schedule_id"],
      [{ ewt_threshold_sec: null }, "/ewt_threshold_sec"],
      [{ moh_mode: "file" }, "/moh_media_id"],
      [{ name: null }, "/name"],
      [{ abandon_dest_kind: "queue", abandon_dest_id: q.id }, "/abandon_dest_id"],
      [{ timeout_dest_kind: "queue", timeout_dest_id: q.id }, "/timeout_dest_id"],
      [{ holiday_dest_kind: "queue", holiday_dest_id: q.id }, "/holiday_dest_id"],
    ];
    for (const [body, path] of cases) {
      for (const method of ["PATCH", "POST"]) {
        const r = await call(app, method, `/v1/queues/${q.id}`, { key: t.key, body });
        expect(r.status, `${method} ${JSON.stringify(body)}`).toBe(400);
        if (path) expect(paths(r)).toContain(path);
      }
    }
    const self = await call(app, "PATCH", `/v1/queues/${q.id}`, { key: t.key, body: { abandon_dest_kind: "queue", abandon_dest_id: q.id } });
    expect(self.body.details).toContainEqual({ path: "/abandon_dest_id", message: "A queue cannot route to itself." });
    const { members: _m, options: _o, ...settings } = q;
    const { members: _m2, options: _o2, ...now } = (await call(app, "GET", `/v1/queues/${q.id}`, { key: t.key })).body.data;
    expect(now).toEqual(settings);
  });

  test("409 for a taken name (whatever the case) on create and rename", async () => {
    const t = await seedTenant(platform);
    await createQueue(t, { name: "Support" });
    const q = await createQueue(t, { name: "Sales" });
    const dup = await call(app, "POST", "/v1/queues", { key: t.key, body: { name: "support" } });
    expect(dup.status).toBe(409);
    expect(dup.body).toMatchObject({ error: "conflict", field: "name" });
    const rename = await call(app, "PATCH", `/v1/queues/${q.id}`, { key: t.key, body: { name: "SUPPORT" } });
    expect(rename.status).toBe(409);
    expect(rename.body.field).toBe("name");
    expect((await call(app, "GET", `/v1/queues/${q.id}`, { key: t.key })).body.data.name).toBe("Sales");
    // Another account may use the same name.
    const other = await seedTenant(platform);
    expect((await call(app, "POST", "/v1/queues", { key: other.key, body: { name: "Support" } })).status).toBe(201);
  });

  test("409 deleting a queue another queue or an option routes to; it works once they change", async () => {
    const t = await seedTenant(platform);
    const target = await createQueue(t);
    const viaSlot = await createQueue(t, { no_agents_dest_kind: "queue", no_agents_dest_id: target.id });
    const viaOption = await createQueue(t);
    await call(app, "POST", `/v1/queues/${viaOption.id}/options`, { key: t.key, body: { digit: "3", action: "route", dest_kind: "queue", dest_id: target.id } });
    const r = await call(app, "DELETE", `/v1/queues/${target.id}`, { key: t.key });
    expect(r.status).toBe(409);
    expect(r.body.error).toBe("conflict");
    expect(r.body.used_by).toEqual(expect.arrayContaining([{ kind: "queue", id: viaSlot.id }, { kind: "queue", id: viaOption.id }]));
    expect((await call(app, "GET", `/v1/queues/${target.id}`, { key: t.key })).status).toBe(200);
    await call(app, "PATCH", `/v1/queues/${viaSlot.id}`, { key: t.key, body: { no_agents_dest_kind: null } });
    await call(app, "DELETE", `/v1/queues/${viaOption.id}/options/3`, { key: t.key });
    expect((await call(app, "DELETE", `/v1/queues/${target.id}`, { key: t.key })).status).toBe(200);
  });

  test("400 for bad members: another account's user, a non-agent, bad tiers and modes", async () => {
    const t = await seedTenant(platform);
    const theirs = await seedTenant(platform);
    const q = await createQueue(t);
    const foreign = await insertUser(theirs.accountId);
    const notAgent = await insertUser(t.accountId, 0);
    const agent = await insertUser(t.accountId);
    const foreignReply = await call(app, "POST", `/v1/queues/${q.id}/members`, { key: t.key, body: { user_id: foreign } });
    expect(foreignReply.status).toBe(400);
    expect(foreignReply.body.details).toEqual([{ path: "/user_id", message: "No such user in this account." }]);
    const cases: Array<[Json, string]> = [
      [{ user_id: notAgent }, "/user_id"],
      [{ user_id: "us_01M00000000000000000000000" }, "/user_id"],
      [{ user_id: "nobody" }, "/user_id"],
      [{}, "/user_id"],
      [{ user_id: agent, tier_level: 0 }, "/tier_level"],
      [{ user_id: agent, tier_level: 11 }, "/tier_level"],
      [{ user_id: agent, position: -1 }, "/position"],
      [{ user_id: agent, delay_sec: -1 }, "/delay_sec"],
      [{ user_id: agent, mode: "sometimes" }, "/mode"],
      [{ user_id: agent, queue_id: q.id }, "/queue_id"],
    ];
    for (const [body, path] of cases) {
      const r = await call(app, "POST", `/v1/queues/${q.id}/members`, { key: t.key, body });
      expect(r.status, JSON.stringify(body)).toBe(400);
      expect(paths(r)).toContain(path);
    }
    expect((await call(app, "GET", `/v1/queues/${q.id}/members`, { key: t.key })).body.data).toEqual([]);
    expect((await call(app, "DELETE", `/v1/queues/${q.id}/members/${agent}`, { key: t.key })).status).toBe(404);
    expect((await call(app, "POST", `/v1/queues/q_01M00000000000000000000000/members`, { key: t.key, body: { user_id: agent } })).status).toBe(404);
  });

  test("400 for bad options: what each action takes and refuses", async () => {
    const t = await seedTenant(platform);
    const q = await createQueue(t);
    const other = await createQueue(t);
    const cases: Array<[Json, string]> = [
      [{ action: "route" }, "/digit"],
      [{ digit: "10", action: "hangup" }, "/digit"],
      [{ digit: "A", action: "hangup" }, "/digit"],
      [{ digit: "1", action: "transfer" }, "/action"],
      [{ digit: "1" }, "/action"],
      [{ digit: "1", action: "route" }, "/dest_kind"],
      [{ digit: "1", action: "deflect" }, "/dest_kind"],
      [{ digit: "1", action: "route", dest_kind: "queue" }, "/dest_id"],
      [{ digit: "1", action: "route", dest_kind: "queue", dest_id: "q_01M00000000000000000000000" }, "/dest_id"],
      [{ digit: "1", action: "route", dest_kind: "queue", dest_id: q.id }, "/dest_id"],
      [{ digit: "1", action: "webhook" }, "/webhook_url"],
      [{ digit: "1", action: "webhook", webhook_url: "http://crm.example.com/" }, "/webhook_url"],
      [{ digit: "1", action: "webhook", webhook_url: "https://user:pw@crm.example.com/" }, "/webhook_url"],
      [{ digit: "1", action: "webhook", webhook_url: "https://ok.example.com/", webhook_secret: "short" }, "/webhook_secret"],
      [{ digit: "1", action: "route", dest_kind: "queue", dest_id: other.id, webhook_url: "https://ok.example.com/" }, "/webhook_url"],
      [{ digit: "1", action: "hangup", webhook_secret: "0123456789abcdef0123" }, "/webhook_secret"],
      [{ digit: "1", action: "hangup", dest_kind: "queue", dest_id: other.id }, "/dest_kind"],
      [{ digit: "1", action: "hangup", stay_in_queue: 1 }, "/stay_in_queue"],
      [{ digit: "1", action: "deflect", dest_kind: "queue", dest_id: other.id, stay_in_queue: 1 }, "/stay_in_queue"],
      [{ digit: "1", action: "hangup", prompt_media_id: "med_01M00000000000000000000000" }, "/prompt_media_id"],
      [{ digit: "1", action: "hangup", label: "" }, "/label"],
      [{ digit: "1", action: "hangup", webhook_secret_ref: "sec_x" }, "/webhook_secret_ref"],
    ];
    for (const [body, path] of cases) {
      const r = await call(app, "POST", `/v1/queues/${q.id}/options`, { key: t.key, body });
      expect(r.status, JSON.stringify(body)).toBe(400);
      expect(paths(r), JSON.stringify(body)).toContain(path);
    }
    expect((await call(app, "GET", `/v1/queues/${q.id}`, { key: t.key })).body.data.options).toEqual([]);
    const badDigit = await call(app, "DELETE", `/v1/queues/${q.id}/options/x`, { key: t.key });
    expect(badDigit.status).toBe(400);
    expect(paths(badDigit)).toEqual(["/params/digit"]);
    expect((await call(app, "DELETE", `/v1/queues/${q.id}/options/12`, { key: t.key })).status).toBe(400);
    expect((await call(app, "DELETE", `/v1/queues/${q.id}/options/4`, { key: t.key })).status).toBe(404);
    expect((await call(app, "POST", `/v1/queues/q_01M00000000000000000000000/options`, { key: t.key, body: { digit: "1", action: "hangup" } })).status).toBe(404);
  });

  test("400 for bad list queries", async () => {
    const t = await seedTenant(platform);
    for (const query of ["limit=0", "limit=501", "cursor=garbage", "since=-1", "since=abc", "q=", "unknown=1"]) {
      const r = await call(app, "GET", `/v1/queues?${query}`, { key: t.key });
      expect(r.status, query).toBe(400);
      expect(r.body.error).toBe("validation_failed");
    }
  });
});

describe(`/v1/queues security [${storeKind}]`, () => {
  test("401 without a credential, whatever the body", async () => {
    expect((await call(app, "GET", "/v1/queues")).status).toBe(401);
    const r = await call(app, "POST", "/v1/queues", { body: { nonsense: true } });
    expect(r.status).toBe(401);
    expect(r.body.error).toBe("unauthorized");
    expect((await call(app, "GET", "/v1/queues", { key: "sk_wrong" })).status).toBe(401);
  });

  test("403 naming the queues scope on every route", async () => {
    const t = await seedTenant(platform);
    const q = await createQueue(t);
    const agent = await insertUser(t.accountId);
    const cdr = await keyWithScopes(platform, t.accountId, ["cdr", "users"]);
    const routes: Array<[string, string, Json?]> = [
      ["GET", "/v1/queues"],
      ["POST", "/v1/queues", { name: "X" }],
      ["GET", `/v1/queues/${q.id}`],
      ["PATCH", `/v1/queues/${q.id}`, { name: "X" }],
      ["POST", `/v1/queues/${q.id}`, { name: "X" }],
      ["DELETE", `/v1/queues/${q.id}`],
      ["GET", `/v1/queues/${q.id}/members`],
      ["POST", `/v1/queues/${q.id}/members`, { user_id: agent }],
      ["DELETE", `/v1/queues/${q.id}/members/${agent}`],
      ["POST", `/v1/queues/${q.id}/options`, { digit: "1", action: "hangup" }],
      ["DELETE", `/v1/queues/${q.id}/options/1`],
    ];
    for (const [method, path, body] of routes) {
      const r = await call(app, method, path, { key: cdr, body });
      expect(r.status, `${method} ${path}`).toBe(403);
      expect(r.body.need).toBe("queues");
    }
    const scoped = await keyWithScopes(platform, t.accountId, ["queues"]);
    expect((await call(app, "GET", `/v1/queues/${q.id}`, { key: scoped })).status).toBe(200);
    expect((await call(app, "GET", `/v1/queues/${q.id}`, { key: t.key })).body.data.name).toBe(q.name);
  });

  test("another account's queue is a 404 on every route, absent from the list, and unchanged", async () => {
    const mine = await seedTenant(platform);
    const theirs = await seedTenant(platform);
    const q = await createQueue(theirs, { name: "Theirs" });
    const theirAgent = await insertUser(theirs.accountId);
    await call(app, "POST", `/v1/queues/${q.id}/members`, { key: theirs.key, body: { user_id: theirAgent } });
    await call(app, "POST", `/v1/queues/${q.id}/options`, { key: theirs.key, body: { digit: "1", action: "hangup" } });
    const myAgent = await insertUser(mine.accountId);
    const routes: Array<[string, string, Json?]> = [
      ["GET", `/v1/queues/${q.id}`],
      ["PATCH", `/v1/queues/${q.id}`, { name: "Mine now" }],
      ["POST", `/v1/queues/${q.id}`, { name: "Mine now" }],
      ["DELETE", `/v1/queues/${q.id}`],
      ["GET", `/v1/queues/${q.id}/members`],
      ["POST", `/v1/queues/${q.id}/members`, { user_id: myAgent }],
      ["DELETE", `/v1/queues/${q.id}/members/${theirAgent}`],
      ["POST", `/v1/queues/${q.id}/options`, { digit: "2", action: "hangup" }],
      ["DELETE", `/v1/queues/${q.id}/options/1`],
    ];
    for (const [method, path, body] of routes) {
      const r = await call(app, method, path, { key: mine.key, body });
      expect(r.status, `${method} ${path}`).toBe(404);
      expect(r.body.error).toBe("not_found");
    }
    expect((await call(app, "GET", "/v1/queues", { key: mine.key })).body.data).toEqual([]);
    expect((await call(app, "GET", `/v1/queues?user_id=${theirAgent}`, { key: mine.key })).body.data).toEqual([]);
    const still = await call(app, "GET", `/v1/queues/${q.id}`, { key: theirs.key });
    expect(still.body.data).toMatchObject({ name: "Theirs" });
    expect((still.body.data.members as Json[]).map((m) => m.user_id)).toEqual([theirAgent]);
    expect((still.body.data.options as Json[]).map((o) => o.digit)).toEqual(["1"]);
  });
});
