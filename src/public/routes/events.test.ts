/** GET /v1/logs and the account log: recording (in transactions too), filters, paging, isolation, retention. */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Platform } from "../../core/platform.ts";
import { createPublicApp } from "../app.ts";
import { identityRoutes } from "./identity.ts";
import { eventRoutes, streamUrl } from "./events.ts";
import { installEventLogs, recordLog, sweepLogs } from "../../core/logs/logs.service.ts";
import { keyWithScopes, seedTenant, storeKind, testPlatform, type Tenant } from "../../../test/support/platform.ts";
import { call, type Json } from "../../../test/support/http.ts";

let platform: Platform;
let app: ReturnType<typeof createPublicApp>;

beforeAll(async () => {
  platform = await testPlatform();
  installEventLogs(platform.events);
  installEventLogs(platform.events); // twice on purpose: must still write one line per test event
  app = createPublicApp(platform, [identityRoutes, eventRoutes]);
}, 60_000);
afterAll(() => platform.close());

async function logs(t: Tenant, query = ""): Promise<Json[]> {
  const r = await call(app, "GET", `/v1/logs${query}`, { key: t.key });
  expect(r.status).toBe(200);
  return r.body.data as Json[];
}

/** Five lines of increasing age order: debug, info (call A), warn, error (call A), info. */
async function seedLines(t: Tenant): Promise<string[]> {
  const written: string[] = [];
  const lines = [
    { level: "debug", source: "flow", message: "Node entered" },
    { level: "info", source: "flow", message: "Played greeting", callId: "call_A" },
    { level: "warn", source: "edge", message: "Slow /route reply" },
    { level: "error", source: "flow", message: "Dial failed", callId: "call_A", data: { sip_code: 503 } },
    { level: "info", source: "platform", message: "Config applied" },
  ] as const;
  for (const line of lines) written.push(await recordLog(platform.db, { accountId: t.accountId, ...line }));
  return written;
}

describe(`/v1/logs happy [${storeKind}]`, () => {
  test("lists the account's lines newest first with every field", async () => {
    const t = await seedTenant(platform);
    const ids = await seedLines(t);
    const data = await logs(t);
    expect(data.map((l) => l.id)).toEqual([...ids].reverse());
    expect(data[1]).toEqual({
      id: ids[3],
      ts: expect.any(Number),
      level: "error",
      source: "flow",
      message: "Dial failed",
      call_id: "call_A",
      data: { sip_code: 503 },
    });
    expect(data[0]!.call_id).toBeNull();
  });

  test("level means that level and above; call_id narrows to one call; filters combine", async () => {
    const t = await seedTenant(platform);
    await seedLines(t);
    expect((await logs(t, "?level=warn")).map((l) => l.level)).toEqual(["error", "warn"]);
    expect((await logs(t, "?level=info")).map((l) => l.level)).toEqual(["info", "error", "warn", "info"]);
    expect((await logs(t, "?level=debug")).length).toBe(5);
    expect((await logs(t, "?call_id=call_A")).map((l) => l.message)).toEqual(["Dial failed", "Played greeting"]);
    expect((await logs(t, "?call_id=call_A&level=error")).map((l) => l.message)).toEqual(["Dial failed"]);
    expect(await logs(t, "?call_id=call_B")).toEqual([]);
  });

  test("source narrows to one producer, and combines with the others", async () => {
    const t = await seedTenant(platform);
    await seedLines(t);
    expect((await logs(t, "?source=flow")).map((l) => l.message)).toEqual(["Dial failed", "Played greeting", "Node entered"]);
    expect((await logs(t, "?source=flow&level=info&call_id=call_A")).map((l) => l.message)).toEqual(["Dial failed", "Played greeting"]);
    expect((await logs(t, "?source=edge")).map((l) => l.message)).toEqual(["Slow /route reply"]);
    expect(await logs(t, "?source=webhook")).toEqual([]);
  });

  test("keyset pages: a full page carries next_cursor, the last page none, no line twice", async () => {
    const t = await seedTenant(platform);
    const ids = await seedLines(t);
    const seen: string[] = [];
    const pages: Array<{ size: number; cursor: boolean }> = [];
    let cursor: string | undefined;
    for (let page = 0; page < 5; page++) {
      const r = await call(app, "GET", `/v1/logs?limit=2${cursor ? `&cursor=${cursor}` : ""}`, { key: t.key });
      seen.push(...(r.body.data as Json[]).map((l) => l.id as string));
      cursor = r.body.next_cursor;
      pages.push({ size: r.body.data.length, cursor: cursor !== undefined });
      if (!cursor) break;
    }
    // Five lines in pages of two: two full pages with a cursor, then the last one without.
    expect(pages).toEqual([
      { size: 2, cursor: true },
      { size: 2, cursor: true },
      { size: 1, cursor: false },
    ]);
    expect(seen).toEqual([...ids].reverse());
  });

  test("a line recorded in a transaction commits and rolls back with it", async () => {
    const t = await seedTenant(platform);
    await expect(
      platform.events.transaction(async (tx) => {
        await recordLog(tx, { accountId: t.accountId, level: "info", source: "flow", message: "rolled back" });
        throw new Error("the change failed");
      }),
    ).rejects.toThrow("the change failed");
    await platform.events.transaction(async (tx, emit) => {
      await recordLog(tx, { accountId: t.accountId, level: "info", source: "flow", message: "committed" });
      await emit(t.accountId, "call.started", { callId: "call_1", direction: "inbound", from: "1", to: "2", number_id: null, ts: Date.now() });
    });
    expect((await logs(t)).map((l) => l.message)).toEqual(["committed"]);
  });

  test("a test event writes one info line from the webhook source", async () => {
    const t = await seedTenant(platform);
    const event = await platform.events.emit(t.accountId, "test", { message: "ping", webhook_id: null, ts: Date.now() });
    await platform.events.emit(t.accountId, "call.ended", {
      callId: "call_1",
      direction: "inbound",
      answered: 0,
      billsec: 0,
      hangup_cause: "NO_ANSWER",
      queue_id: null,
      agent_id: null,
      ts: Date.now(),
    });
    const data = await logs(t);
    expect(data).toEqual([
      { id: expect.any(String), ts: event.ts, level: "info", source: "webhook", message: "Test event fired.", call_id: null, data: { event_id: platform.events.ids.encode(event.id, event.ts), webhook_id: null } },
    ]);
  });
});

describe(`/v1/logs errors and security [${storeKind}]`, () => {
  test("400 for a bad level, limit or cursor; nothing else changes", async () => {
    const t = await seedTenant(platform);
    for (const q of ["?level=fatal", "?limit=501", "?limit=0", "?cursor=abc", "?verbose=1", "?source=kernel", "?source="]) {
      const r = await call(app, "GET", `/v1/logs${q}`, { key: t.key });
      expect(r.status).toBe(400);
      expect(r.body.error).toBe("validation_failed");
    }
  });

  test("401 without a credential, 403 without scope cdr", async () => {
    const t = await seedTenant(platform);
    expect((await call(app, "GET", "/v1/logs")).status).toBe(401);
    const key = await keyWithScopes(platform, t.accountId, ["events"]);
    const r = await call(app, "GET", "/v1/logs", { key });
    expect(r.status).toBe(403);
    expect(r.body).toMatchObject({ error: "forbidden", need: "cdr" });
    const cdr = await keyWithScopes(platform, t.accountId, ["cdr"]);
    expect((await call(app, "GET", "/v1/logs", { key: cdr })).status).toBe(200);
  });

  test("an account sees only its own lines, even with another account's call_id or cursor", async () => {
    const a = await seedTenant(platform);
    const b = await seedTenant(platform);
    await seedLines(a);
    expect(await logs(b)).toEqual([]);
    expect(await logs(b, "?call_id=call_A")).toEqual([]);
    const page = await call(app, "GET", "/v1/logs?limit=1", { key: a.key });
    expect(await logs(b, `?cursor=${page.body.next_cursor}`)).toEqual([]);
  });
});

describe(`account log retention [${storeKind}]`, () => {
  test("the sweep drops lines older than 7 days and trims an account to its newest N", async () => {
    const old = await seedTenant(platform);
    const busy = await seedTenant(platform);
    const quiet = await seedTenant(platform);
    const now = Date.now();
    await recordLog(platform.db, { accountId: old.accountId, level: "info", source: "flow", message: "8 days ago", ts: now - 8 * 86_400_000 });
    await recordLog(platform.db, { accountId: old.accountId, level: "info", source: "flow", message: "6 days ago", ts: now - 6 * 86_400_000 });
    const busyIds: string[] = [];
    for (let i = 0; i < 6; i++) busyIds.push(await recordLog(platform.db, { accountId: busy.accountId, level: "info", source: "flow", message: `line ${i}` }));
    for (let i = 0; i < 3; i++) await recordLog(platform.db, { accountId: quiet.accountId, level: "info", source: "flow", message: `q ${i}` });
    // A cap far above what other suites write, so only this test's busy account is over it.
    const before = (await logs(busy)).length;
    expect(before).toBe(6);
    const swept = await sweepLogs(platform.db, { now, maxRowsPerAccount: 1000 });
    expect(swept.expired).toBeGreaterThanOrEqual(1);
    expect((await logs(old)).map((l) => l.message)).toEqual(["6 days ago"]);
    await sweepLogs(platform.db, { now, maxRowsPerAccount: 4 });
    expect((await logs(busy)).map((l) => l.id)).toEqual(busyIds.slice(2).reverse());
    expect((await logs(quiet)).length).toBe(3);
  });
});

describe("the ticket's stream URL", () => {
  test("is REALTIME_URL's scheme as ws(s), its host, and its path (a proxy's prefix) in front of the stream's", () => {
    const at = (realtime: string) => streamUrl({ config: { urls: { realtime } } } as unknown as Pick<Platform, "config">, "tkt_1");
    expect(at("https://example.com/realtime/")).toBe("wss://example.com/realtime/v1/events/stream?ticket=tkt_1");
    expect(at("https://example.com/realtime")).toBe("wss://example.com/realtime/v1/events/stream?ticket=tkt_1");
    expect(at("http://127.0.0.1:8082")).toBe("ws://127.0.0.1:8082/v1/events/stream?ticket=tkt_1");
    expect(at("https://rt.example.com/?x=1#y")).toBe("wss://rt.example.com/v1/events/stream?ticket=tkt_1");
  });
});
