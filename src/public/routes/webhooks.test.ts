/** /v1/webhooks: happy paths, errors and security; the test endpoint and the delivery log against a real HTTPS receiver. */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { sql } from "drizzle-orm";
import type { Platform } from "../../core/platform.ts";
import { createPublicApp } from "../app.ts";
import { identityRoutes } from "./identity.ts";
import { webhookRoutes } from "./webhooks.ts";
import { keyWithScopes, seedTenant, storeKind, testPlatform, type Tenant } from "../../../test/support/platform.ts";
import { call, type Json } from "../../../test/support/http.ts";
import { startDeliveryWorker } from "../../core/webhooks/delivery-worker.ts";
import { startTestReceiver, type TestReceiver } from "../../core/webhooks/delivery-test-receiver.ts";

let platform: Platform;
let app: ReturnType<typeof createPublicApp>;

beforeAll(async () => {
  platform = await testPlatform();
  app = createPublicApp(platform, [identityRoutes, webhookRoutes]);
});
afterAll(() => platform.close());

/** A public IP literal: passes the SSRF guard without any DNS lookup. */
const HOOK = "https://93.184.216.34/parley/hook";

const detailPaths = (r: { body: Json }) => (r.body.details as Json[]).map((d) => d.path);

async function create(t: Tenant, body: Json = { url: HOOK }): Promise<Json> {
  const r = await call(app, "POST", "/v1/webhooks", { key: t.key, body });
  expect(r.status, JSON.stringify(r.body)).toBe(201);
  return r.body.data;
}

async function list(t: Tenant, query = ""): Promise<Json[]> {
  const r = await call(app, "GET", `/v1/webhooks?limit=500${query}`, { key: t.key });
  expect(r.status).toBe(200);
  return r.body.data;
}

async function storedRows(accountId: string): Promise<Json[]> {
  const r = await platform.db.execute(sql`select * from webhook_subscription where account_id = ${accountId} order by id`);
  return (Array.isArray(r) ? r : (r as { rows: Json[] }).rows) as Json[];
}

describe(`/v1/webhooks happy [${storeKind}]`, () => {
  test("create without a secret returns a generated one once; the row keeps only a secret-store ref", async () => {
    const t = await seedTenant(platform);
    const w = await create(t, { url: HOOK, events: "call.ended, call.started,call.ended", description: "CRM sync" });
    expect(w).toEqual({
      id: expect.stringMatching(/^wh_[0-9A-Z]{26}$/),
      url: HOOK,
      events: ["call.started", "call.ended"],
      description: "CRM sync",
      status: "active",
      has_secret: 1,
      created_at: expect.any(Number),
      updated_at: expect.any(Number),
      secret: expect.stringMatching(/^whsec_[A-Za-z0-9+/]{43}=$/),
    });
    const [row] = await storedRows(t.accountId);
    expect(row!.secret_ref).toMatch(/^sec_/);
    expect(JSON.stringify(row)).not.toContain(w.secret);
    expect(await platform.secrets.reveal(platform.db, t.accountId, row!.secret_ref)).toBe(w.secret);
    const listed = await list(t);
    expect(listed).toEqual([{ ...w, secret: undefined }].map(({ secret: _, ...rest }) => rest));
    expect(JSON.stringify(listed)).not.toContain("sec_");
    expect(JSON.stringify(listed)).not.toContain("whsec_");
  });

  test("a given secret is stored and never echoed; events default to *; an array of names works", async () => {
    const t = await seedTenant(platform);
    const secret = "my-own-signing-secret-0123";
    const w = await create(t, { url: HOOK, secret });
    expect(w.secret).toBeUndefined();
    expect(w.events).toEqual(["*"]);
    expect(w.description).toBeNull();
    expect(w.has_secret).toBe(1);
    const [row] = await storedRows(t.accountId);
    expect(await platform.secrets.reveal(platform.db, t.accountId, row!.secret_ref)).toBe(secret);
    const arr = await create(t, { url: HOOK, events: ["fax.failed", "fax.sent", "fax.failed"] });
    expect(arr.events).toEqual(["fax.sent", "fax.failed"]);
    expect((await create(t, { url: HOOK, events: ["*"] })).events).toEqual(["*"]);
  });

  test("list filters by event (subscriptions on * included) and pages with limit=2", async () => {
    const t = await seedTenant(platform);
    const all = await create(t, { url: HOOK });
    const calls = await create(t, { url: HOOK, events: "call.ended" });
    const fax = await create(t, { url: HOOK, events: "fax.sent" });
    const more = [await create(t, { url: HOOK, events: "test" }), await create(t, { url: HOOK, events: "call.ended,test" })];
    expect((await list(t, "&event=call.ended")).map((w) => w.id)).toEqual([all.id, calls.id, more[1]!.id]);
    expect((await list(t, "&event=fax.sent")).map((w) => w.id)).toEqual([all.id, fax.id]);
    const seen: string[] = [];
    let cursor: string | undefined;
    let pages = 0;
    do {
      const r = await call(app, "GET", `/v1/webhooks?limit=2${cursor ? `&cursor=${cursor}` : ""}`, { key: t.key });
      expect(r.status).toBe(200);
      expect((r.body.data as Json[]).length).toBeLessThanOrEqual(2);
      seen.push(...(r.body.data as Json[]).map((w) => w.id));
      cursor = r.body.next_cursor;
      pages++;
    } while (cursor);
    expect(pages).toBe(3);
    expect(seen).toEqual([all.id, calls.id, fax.id, more[0]!.id, more[1]!.id]);
  });

  test("DELETE with a body { id } and DELETE /{id} both remove the row and its secret", async () => {
    const t = await seedTenant(platform);
    const a = await create(t);
    const b = await create(t);
    const refs = (await storedRows(t.accountId)).map((r) => r.secret_ref as string);
    // The two forms mixed up (a path naming one, a body naming the other) are refused: nothing goes.
    const mixed = await call(app, "DELETE", `/v1/webhooks/${b.id}`, { key: t.key, body: { id: a.id } });
    expect(mixed.status).toBe(400);
    expect(mixed.body.details).toEqual([{ path: "", message: "This route takes no body: its path names what it deletes." }]);
    expect((await list(t)).length).toBe(2);
    expect((await call(app, "DELETE", `/v1/webhooks/${b.id}`, { key: t.key, body: {} })).status).not.toBe(400);
    expect((await call(app, "DELETE", "/v1/webhooks", { key: t.key, body: { id: a.id } })).body).toEqual({ ok: true });
    expect(await list(t)).toEqual([]);
    for (const ref of refs) expect(await platform.secrets.reveal(platform.db, t.accountId, ref)).toBeNull();
    expect((await call(app, "DELETE", `/v1/webhooks/${b.id}`, { key: t.key })).status).toBe(404);
  });

  test("the event catalog lists every event with a description and a full sample delivery body", async () => {
    const t = await seedTenant(platform);
    const r = await call(app, "GET", "/v1/webhooks/events", { key: t.key });
    expect(r.status).toBe(200);
    const names = (r.body.data as Json[]).map((e) => e.name);
    expect(names).toEqual([
      "call.started", "call.answered", "call.ended", "agent.state", "message.received", "message.status", "recording.available",
      "fax.received", "fax.sent", "fax.failed", "campaign.started", "campaign.completed", "campaign.contact", "test",
    ]);
    const ended = (r.body.data as Json[]).find((e) => e.name === "call.ended")!;
    expect(ended.sample).toEqual({
      event: "call.ended",
      account_id: expect.stringMatching(/^acc_/),
      ts: expect.any(Number),
      data: { callId: expect.any(String), direction: "inbound", answered: 1, billsec: expect.any(Number), hangup_cause: expect.any(String), queue_id: expect.any(String), agent_id: expect.any(String), ts: expect.any(Number) },
    });
    // Events of features the platform does not have yet say so; those it sends do not.
    const unsent = (r.body.data as Json[]).filter((e) => /Not emitted yet/.test(e.description)).map((e) => e.name);
    expect(unsent).toEqual(["message.received", "message.status", "recording.available", "fax.received", "fax.sent", "fax.failed", "campaign.started", "campaign.completed", "campaign.contact"]);
  });

  test("an Idempotency-Key replay of a create returns the same id and secret without a second row", async () => {
    const t = await seedTenant(platform);
    const headers = { "idempotency-key": "webhook-create-1" };
    const first = await call(app, "POST", "/v1/webhooks", { key: t.key, body: { url: HOOK }, headers });
    const again = await call(app, "POST", "/v1/webhooks", { key: t.key, body: { url: HOOK }, headers });
    expect(first.status).toBe(201);
    expect(again.status).toBe(201);
    expect(again.headers.get("idempotency-replayed")).toBe("true");
    expect(again.body.data.id).toBe(first.body.data.id);
    expect(again.body.data.secret).toBe(first.body.data.secret);
    expect(await storedRows(t.accountId)).toHaveLength(1);
  });

  test("with WEBHOOK_ALLOW_PRIVATE=1 a loopback https URL is accepted; without it the same URL is refused", async () => {
    const t = await seedTenant(platform);
    const refused = await call(app, "POST", "/v1/webhooks", { key: t.key, body: { url: "https://127.0.0.1/hook" } });
    expect(refused.status).toBe(400);
    expect(detailPaths(refused)).toEqual(["/url"]);
    const dev = await testPlatform({ env: { WEBHOOK_ALLOW_PRIVATE: "1" } });
    const devApp = createPublicApp(dev, [identityRoutes, webhookRoutes]);
    const accepted = await call(devApp, "POST", "/v1/webhooks", { key: t.key, body: { url: "https://127.0.0.1/hook" } });
    expect(accepted.status).toBe(201);
    expect(accepted.body.data.url).toBe("https://127.0.0.1/hook");
    await dev.close();
  });
});

describe(`/v1/webhooks errors [${storeKind}]`, () => {
  test("400 for every bad field on create, and nothing is written", async () => {
    const t = await seedTenant(platform);
    const cases: Array<[Json, string, RegExp?]> = [
      [{}, "/url"],
      [{ url: "" }, "/url"],
      [{ url: 5 }, "/url"],
      [{ url: "http://93.184.216.34/hook" }, "/url", /https/],
      [{ url: "https://user:pw@93.184.216.34/hook" }, "/url", /user name or password/],
      [{ url: `https://93.184.216.34/${"a".repeat(2048)}` }, "/url"],
      [{ url: "https://127.0.0.1/hook" }, "/url", /loopback/],
      [{ url: "https://localhost/hook" }, "/url", /loopback/],
      [{ url: "https://[::1]/hook" }, "/url", /loopback/],
      [{ url: "https://[::ffff:10.0.0.1]/hook" }, "/url", /private/],
      [{ url: "https://169.254.169.254/latest" }, "/url", /metadata/],
      [{ url: "https://192.168.0.10/hook" }, "/url", /private/],
      [{ url: "https://100.64.0.1/hook" }, "/url", /carrier-grade/],
      [{ url: "https://no-such-host.invalid/hook" }, "/url", /does not resolve/],
      [{ url: HOOK, events: "call.ended,call.exploded" }, "/events", /call\.exploded/],
      [{ url: HOOK, events: ["nope"] }, "/events", /nope/],
      // A text or a list is accepted: the message is the one of the form the value has.
      [{ url: HOOK, events: "" }, "/events", /string length greater or equal to 1/],
      [{ url: HOOK, events: [] }, "/events", /array length to be greater or equal to 1/],
      [{ url: HOOK, events: "*,test" }, "/events"],
      // An empty name is a typo, not fewer events; an empty #fragment is a fragment.
      [{ url: HOOK, events: "test," }, "/events", /empty event name/],
      [{ url: HOOK, events: "call.started,,call.ended" }, "/events", /empty event name/],
      [{ url: HOOK, events: ["test", " "] }, "/events", /empty event name/],
      [{ url: "https://93.184.216.34/hook#" }, "/url", /fragment/],
      // What the URL parser would drop silently is refused: the stored URL is the one sent.
      [{ url: "https://93.184.216.34/a\tb\nc" }, "/url", /tabs or line breaks/],
      [{ url: " https://93.184.216.34/hook" }, "/url", /spaces at either end/],
      [{ url: "https://93.184.216.34/hook " }, "/url", /spaces at either end/],
      [{ url: HOOK, events: 3 }, "/events", /Expected string or array\./],
      [{ url: HOOK, secret: "short" }, "/secret"],
      [{ url: HOOK, secret: "x".repeat(257) }, "/secret"],
      [{ url: HOOK, description: "x".repeat(501) }, "/description"],
      [{ url: HOOK, status: "disabled" }, "/status"],
    ];
    for (const [body, path, message] of cases) {
      const r = await call(app, "POST", "/v1/webhooks", { key: t.key, body });
      expect(r.status, JSON.stringify(body).slice(0, 80)).toBe(400);
      expect(r.body.error).toBe("validation_failed");
      expect(detailPaths(r), JSON.stringify(body).slice(0, 80)).toContain(path);
      if (message) expect(JSON.stringify(r.body.details), JSON.stringify(body).slice(0, 80)).toMatch(message);
    }
    expect(await storedRows(t.accountId)).toEqual([]);
    expect(await list(t)).toEqual([]);
  });

  test("409 past 50 subscriptions of an account, and nothing is written; a copy (a secret being rotated) counts as one", async () => {
    const t = await seedTenant(platform);
    await create(t, { url: HOOK, events: "call.ended,call.started" });
    await create(t, { url: HOOK, events: ["call.started", "call.ended"] });
    for (let i = 2; i < 50; i++) await create(t, { url: `${HOOK}/${i}` });
    const over = await call(app, "POST", "/v1/webhooks", { key: t.key, body: { url: `${HOOK}/50` } });
    expect(over.status).toBe(409);
    expect(over.body).toMatchObject({ ok: false, error: "conflict", limit: 50 });
    expect(await storedRows(t.accountId)).toHaveLength(50);
    // Another account has its own 50.
    await create(await seedTenant(platform), { url: HOOK });
  });

  test("400 for a secret that is blank, holds a control character, gives a key under 16 bytes, or is a whsec_ one not in canonical padded base64", async () => {
    const t = await seedTenant(platform);
    // Spare low bits in the last character, or no padding: Standard Webhooks libraries decode those
    // differently (some drop the bits, some refuse), so receivers could not verify alike.
    const spareBits = "whsec_AAAAAAAAAAAAAAAAAAAAAB==";
    const unpadded = `whsec_${Buffer.alloc(16, 7).toString("base64").replace(/=+$/, "")}`;
    for (const secret of [" ".repeat(16), "tab\tinside-secret-1", "line\nbreak-in-secret", "whsec_AAAAAAAAAA==", spareBits, unpadded, "whsec_not base64 at all, but long"]) {
      const r = await call(app, "POST", "/v1/webhooks", { key: t.key, body: { url: HOOK, secret } });
      expect(r.status, secret).toBe(400);
      expect(detailPaths(r)).toEqual(["/secret"]);
    }
    expect(await storedRows(t.accountId)).toHaveLength(0);
    // 16 characters of plain text (any script), and a whsec_ secret of 24 bytes, are fine.
    await create(t, { url: HOOK, secret: "plain-secret-123" });
    await create(t, { url: `${HOOK}/3`, secret: "zoë-secret-zoë-secret" });
    await create(t, { url: `${HOOK}/2`, secret: `whsec_${Buffer.alloc(24, 7).toString("base64")}` });
  });

  test("400 for a bad list filter or cursor and a bad delete body; 404 for an unknown id", async () => {
    const t = await seedTenant(platform);
    expect(detailPaths(await call(app, "GET", "/v1/webhooks?event=call.exploded", { key: t.key }))).toEqual(["/query/event"]);
    expect((await call(app, "GET", "/v1/webhooks?cursor=bogus", { key: t.key })).status).toBe(400);
    expect((await call(app, "GET", "/v1/webhooks?limit=0", { key: t.key })).status).toBe(400);
    expect(detailPaths(await call(app, "DELETE", "/v1/webhooks", { key: t.key, body: {} }))).toContain("/id");
    expect((await call(app, "DELETE", "/v1/webhooks", { key: t.key, body: { id: "wh_06F3ZK1W8N9Q2R4T6V8X0Y2Z4A" } })).status).toBe(404);
  });
});

describe(`/v1/webhooks security [${storeKind}]`, () => {
  test("401 without a credential; 403 without the webhooks scope", async () => {
    const t = await seedTenant(platform);
    const w = await create(t);
    expect((await call(app, "GET", "/v1/webhooks")).status).toBe(401);
    expect((await call(app, "GET", "/v1/webhooks/events")).status).toBe(401);
    expect((await call(app, "POST", "/v1/webhooks", { body: { url: HOOK } })).status).toBe(401);
    const other = await keyWithScopes(platform, t.accountId, ["contacts"]);
    const attempts: Array<[string, string, unknown]> = [
      ["GET", "/v1/webhooks", undefined],
      ["GET", "/v1/webhooks/events", undefined],
      ["POST", "/v1/webhooks", { url: HOOK }],
      ["DELETE", "/v1/webhooks", { id: w.id }],
      ["DELETE", `/v1/webhooks/${w.id}`, undefined],
    ];
    for (const [m, p, body] of attempts) {
      const r = await call(app, m, p, { key: other, body });
      expect(r.status, `${m} ${p}`).toBe(403);
      expect(r.body.need).toBe("webhooks");
    }
    expect(await storedRows(t.accountId)).toHaveLength(1);
  });

  test("another account's subscription is invisible and a 404 to delete (both forms); its secret survives", async () => {
    const mine = await seedTenant(platform);
    const theirs = await seedTenant(platform);
    const w = await create(theirs);
    expect(await list(mine)).toEqual([]);
    expect((await call(app, "DELETE", "/v1/webhooks", { key: mine.key, body: { id: w.id } })).status).toBe(404);
    expect((await call(app, "DELETE", `/v1/webhooks/${w.id}`, { key: mine.key })).status).toBe(404);
    const [row] = await storedRows(theirs.accountId);
    expect(row!.id).toBe(w.id);
    expect(await platform.secrets.reveal(platform.db, theirs.accountId, row!.secret_ref)).toBe(w.secret);
  });
});

describe(`/v1/webhooks/test and /v1/webhooks/deliveries [${storeKind}]`, () => {
  let receiver: TestReceiver;
  let dev: Platform;
  let devApp: ReturnType<typeof createPublicApp>;
  beforeAll(async () => {
    receiver = await startTestReceiver();
    dev = await testPlatform({ env: { WEBHOOK_ALLOW_PRIVATE: "1", WEBHOOK_CA_FILE: receiver.caFile } });
    devApp = createPublicApp(dev, [identityRoutes, webhookRoutes]);
  });
  afterAll(async () => {
    await dev.close();
    await receiver.stop();
  });

  let n = 0;
  async function hook(t: Tenant, path: string, events?: string): Promise<Json> {
    const r = await call(devApp, "POST", "/v1/webhooks", { key: t.key, body: { url: receiver.url(`${path}-${++n}`), ...(events ? { events } : {}) } });
    expect(r.status, JSON.stringify(r.body)).toBe(201);
    return r.body.data;
  }
  async function log(t: Tenant, query = ""): Promise<Json[]> {
    const r = await call(devApp, "GET", `/v1/webhooks/deliveries?limit=500${query}`, { key: t.key });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    return r.body.data;
  }
  async function drained(t: Tenant, count: number): Promise<Json[]> {
    const worker = startDeliveryWorker(dev, { pollMs: 100, timeoutMs: 2000 });
    try {
      const deadline = Date.now() + 15_000;
      for (;;) {
        const rows = await log(t);
        if (rows.length >= count && rows.every((d) => d.status === "delivered" || d.status === "failed")) return rows;
        if (Date.now() > deadline) throw new Error(`not drained: ${JSON.stringify(rows)}`);
        await Bun.sleep(50);
      }
    } finally {
      await worker.stop();
    }
  }

  test("POST /test without a body: 202 with the event id; every subscription receiving test gets it, and the log shows it", async () => {
    const t = await seedTenant(dev);
    const all = await hook(t, "/all");
    const some = await hook(t, "/some", "test,call.ended");
    await hook(t, "/ended", "call.ended");
    const r = await call(devApp, "POST", "/v1/webhooks/test", { key: t.key });
    expect(r.status, JSON.stringify(r.body)).toBe(202);
    expect(r.body).toEqual({ ok: true, data: { event_id: expect.stringMatching(/^evt_[0-9A-HJKMNP-TV-Z]{26}$/), deliveries: 2 } });
    const rows = await drained(t, 2);
    expect(rows.map((d) => d.webhook_id).sort()).toEqual([all.id, some.id].sort());
    for (const d of rows) {
      expect(d).toEqual({
        id: expect.stringMatching(/^whd_[0-9A-Z]{26}$/),
        webhook_id: expect.any(String),
        event: "test",
        event_id: r.body.data.event_id,
        status: "delivered",
        attempts: 1,
        last_status: 200,
        last_error: null,
        created_at: expect.any(Number),
        updated_at: expect.any(Number),
        delivered_at: expect.any(Number),
      });
    }
    const seen = receiver.requests.filter((q) => JSON.parse(q.body).account_id === t.accountId);
    expect(seen.map((q) => q.headers["webhook-id"]).sort()).toEqual(rows.map((d) => d.id).sort());
    // One delivery id per subscription, one event id in both (a receiver of both processes it once).
    expect(seen.map((q) => q.headers["x-service-event-id"])).toEqual([r.body.data.event_id, r.body.data.event_id]);
  });

  test("POST /test with an empty body (Content-Length: 0), typed JSON, form or not at all, works like no body", async () => {
    const t = await seedTenant(dev);
    await hook(t, "/empty-body");
    for (const type of ["application/json", "application/x-www-form-urlencoded", null]) {
      const headers: Record<string, string> = { "content-length": "0", ...(type ? { "content-type": type } : {}) };
      const r = await call(devApp, "POST", "/v1/webhooks/test", { key: t.key, body: "", headers });
      expect(r.status, `${type}: ${JSON.stringify(r.body)}`).toBe(202);
      expect(r.body.data.deliveries).toBe(1);
    }
    // A body that is there must still be JSON (or a form) the model takes.
    const bad = await call(devApp, "POST", "/v1/webhooks/test", { key: t.key, body: "nope", headers: { "content-type": "application/json" } });
    expect(bad.status).toBe(400);
  });

  test("POST /test { webhook_id } reaches that subscription only, even when it does not list test; {} works like no body", async () => {
    const t = await seedTenant(dev);
    await hook(t, "/other");
    const ended = await hook(t, "/only-ended", "call.ended");
    const r = await call(devApp, "POST", "/v1/webhooks/test", { key: t.key, body: { webhook_id: ended.id } });
    expect(r.status).toBe(202);
    expect(r.body.data.deliveries).toBe(1);
    const rows = await drained(t, 1);
    expect(rows.map((d) => d.webhook_id)).toEqual([ended.id]);
    const empty = await call(devApp, "POST", "/v1/webhooks/test", { key: t.key, body: {} });
    expect(empty.status).toBe(202);
    expect(empty.body.data.deliveries).toBe(1);
  });

  test("POST /test with a body that does not parse, is not an object or has unknown fields: 400, and no event fires", async () => {
    const t = await seedTenant(dev);
    await hook(t, "/strict");
    for (const body of ["{", "null", '"x"', "[]", '{"foo":1}', '{"webhook_id":7}']) {
      const r = await call(devApp, "POST", "/v1/webhooks/test", { key: t.key, body });
      expect(r.status, body).toBe(400);
      expect(r.body.error).toBe("validation_failed");
    }
    expect(await log(t)).toHaveLength(0);
  });

  test("an Idempotency-Key replay of POST /test fires no second event", async () => {
    const t = await seedTenant(dev);
    await hook(t, "/idem");
    const headers = { "idempotency-key": `test-${Date.now()}` };
    const first = await call(devApp, "POST", "/v1/webhooks/test", { key: t.key, headers });
    const again = await call(devApp, "POST", "/v1/webhooks/test", { key: t.key, headers });
    expect(first.status).toBe(202);
    expect(again.status).toBe(202);
    expect(again.headers.get("idempotency-replayed")).toBe("true");
    expect(again.body.data.event_id).toBe(first.body.data.event_id);
    expect(await log(t)).toHaveLength(1);
  });

  test("the log is newest first, keyset-paginated, and filters by webhook_id, event and failed (1 only failed, 0 all but)", async () => {
    const t = await seedTenant(dev);
    const ok = await hook(t, "/log-ok");
    const bad = await hook(t, "/log-bad");
    receiver.on(new URL(bad.url).pathname, () => new Response("nope", { status: 404 }));
    for (let i = 0; i < 3; i++) expect((await call(devApp, "POST", "/v1/webhooks/test", { key: t.key })).status).toBe(202);
    await dev.events.emit(t.accountId, "call.ended", {
      callId: "call_x", direction: "inbound", answered: 0, billsec: 0, hangup_cause: "NO_ANSWER", queue_id: null, agent_id: null, ts: Date.now(),
    });
    const rows = await drained(t, 8);
    expect(rows.map((d) => d.id)).toEqual(rows.map((d) => d.id).sort().reverse());
    expect(rows[0]!.event).toBe("call.ended");

    const failed = await log(t, "&failed=1");
    expect(failed).toHaveLength(4);
    expect(failed.every((d) => d.webhook_id === bad.id && d.status === "failed" && d.attempts === 1 && d.last_status === 404 && d.last_error === "HTTP 404")).toBe(true);
    const rest = await log(t, "&failed=0");
    expect(rest).toHaveLength(4);
    expect(rest.every((d) => d.status !== "failed")).toBe(true);
    expect(await log(t, "")).toHaveLength(8);
    expect((await log(t, `&webhook_id=${ok.id}`)).map((d) => d.webhook_id)).toEqual([ok.id, ok.id, ok.id, ok.id]);
    expect((await log(t, "&event=call.ended")).map((d) => d.event)).toEqual(["call.ended", "call.ended"]);
    expect(await log(t, `&event=test&webhook_id=${bad.id}&failed=1`)).toHaveLength(3);

    const pages: Json[] = [];
    let cursor: string | undefined;
    do {
      const r = await call(devApp, "GET", `/v1/webhooks/deliveries?limit=3${cursor ? `&cursor=${cursor}` : ""}`, { key: t.key });
      expect(r.status).toBe(200);
      pages.push(...r.body.data);
      cursor = r.body.next_cursor;
    } while (cursor);
    expect(pages.map((d) => d.id)).toEqual(rows.map((d) => d.id));
  });

  test("errors: 400 for an unknown field, a bad filter or cursor; 404 for an unknown webhook_id; 415 for a non-JSON body", async () => {
    const t = await seedTenant(dev);
    const extra = await call(devApp, "POST", "/v1/webhooks/test", { key: t.key, body: { webhook_id: "wh_x", extra: 1 } });
    expect(extra.status).toBe(400);
    expect(detailPaths(extra)).toContain("/extra");
    expect((await call(devApp, "POST", "/v1/webhooks/test", { key: t.key, body: { webhook_id: 5 } })).status).toBe(400);
    const missing = await call(devApp, "POST", "/v1/webhooks/test", { key: t.key, body: { webhook_id: "wh_06F3ZK1W8N9Q2R4T6V8X0Y2Z4A" } });
    expect(missing.status).toBe(404);
    expect(missing.body.error).toBe("not_found");
    expect((await call(devApp, "POST", "/v1/webhooks/test", { key: t.key, body: "webhook_id=x", headers: { "content-type": "application/x-www-form-urlencoded" } })).status).toBe(415);
    expect(detailPaths(await call(devApp, "GET", "/v1/webhooks/deliveries?event=call.exploded", { key: t.key }))).toEqual(["/query/event"]);
    expect((await call(devApp, "GET", "/v1/webhooks/deliveries?failed=yes", { key: t.key })).status).toBe(400);
    expect((await call(devApp, "GET", "/v1/webhooks/deliveries?cursor=bogus", { key: t.key })).status).toBe(400);
    expect((await call(devApp, "GET", "/v1/webhooks/deliveries?limit=501", { key: t.key })).status).toBe(400);
    expect(await log(t)).toEqual([]);
  });

  test("security: 401 without a credential, 403 without the scope; account B never sees nor fires at account A's subscriptions", async () => {
    const a = await seedTenant(dev);
    const b = await seedTenant(dev);
    const aHook = await hook(a, "/tenant-a");
    expect((await call(devApp, "POST", "/v1/webhooks/test", { key: a.key })).status).toBe(202);
    await drained(a, 1);
    expect((await call(devApp, "POST", "/v1/webhooks/test")).status).toBe(401);
    expect((await call(devApp, "GET", "/v1/webhooks/deliveries")).status).toBe(401);
    const noScope = await keyWithScopes(dev, a.accountId, ["dnc"]);
    for (const [m, p] of [["POST", "/v1/webhooks/test"], ["GET", "/v1/webhooks/deliveries"]] as const) {
      const r = await call(devApp, m, p, { key: noScope });
      expect(r.status, `${m} ${p}`).toBe(403);
      expect(r.body.need).toBe("webhooks");
    }
    expect(await log(b)).toEqual([]);
    expect(await log(b, `&webhook_id=${aHook.id}`)).toEqual([]);
    const aimed = await call(devApp, "POST", "/v1/webhooks/test", { key: b.key, body: { webhook_id: aHook.id } });
    expect(aimed.status).toBe(404);
    const fromB = await call(devApp, "POST", "/v1/webhooks/test", { key: b.key });
    expect(fromB.status).toBe(202);
    expect(fromB.body.data.deliveries).toBe(0);
    expect(await log(a)).toHaveLength(1);
  });
});
