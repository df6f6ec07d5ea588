/**
 * The realtime event stream over real WebSockets: tickets (single use, expiry, kinds), account
 * isolation, filters, heartbeats, resume without gaps or duplicates, slow consumers, fan-out.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { failingPublishes, heldPublishes } from "../../test/support/live.ts";
import { connect as tcpConnect, type Socket } from "node:net";
import type { Platform } from "../core/platform.ts";
import { createEventBus, eventChannel, type PlatformEvent } from "../core/events/bus.ts";
import { openLiveStore } from "../core/live/index.ts";
import type { LiveStore } from "../core/live/live-store.ts";
import { createPublicApp } from "../public/app.ts";
import { identityRoutes } from "../public/routes/identity.ts";
import { eventRoutes } from "../public/routes/events.ts";
import { keyRoutes } from "../public/routes/keys.ts";
import { createApiKey } from "../core/auth/auth.service.ts";
import { revokeApiKey } from "../core/auth/auth.store.ts";
import { accounts } from "../core/accounts/accounts.schema.ts";
import { eq } from "drizzle-orm";
import { keyWithScopes, seedConsoleUser, seedTenant, storeKind, testPlatform } from "../../test/support/platform.ts";
import { createConsoleApp } from "../console/app.ts";
import { mintTicket } from "../core/tickets/tickets.service.ts";
import { SESSION_TOKEN_TTL_SEC } from "../core/auth/session-tokens.ts";
import { call } from "../../test/support/http.ts";
import { createRealtimeApp, type RealtimeOptions } from "./app.ts";
import { EventHub } from "./event-hub.ts";
import { CLOSE, MAX_CLIENT_MESSAGE_BYTES, STREAM_PATH } from "./stream-protocol.ts";
import { RESUME_BURST } from "./event-stream.ts";
import { StreamConnection, type StreamMessage } from "./ws-test-client.ts";

let platform: Platform;
let api: ReturnType<typeof createPublicApp>;
const servers: Array<{ stop(): unknown }> = [];

beforeAll(async () => {
  platform = await testPlatform();
  api = createPublicApp(platform, [identityRoutes, eventRoutes, keyRoutes]);
}, 60_000);
afterAll(async () => {
  for (const s of servers) await s.stop();
  await platform.close();
});

/** A listening realtime host; returns its base ws:// URL and its stream handle. */
function realtime(options: RealtimeOptions = {}, on: Platform = platform) {
  const app = createRealtimeApp(on, { heartbeatMs: 60_000, ...options }).listen({ hostname: "127.0.0.1", port: 0 });
  servers.push(app);
  const port = app.server!.port!;
  return { base: `ws://127.0.0.1:${port}`, port, stream: app.decorator.eventStream };
}

let host: ReturnType<typeof realtime>;
beforeAll(() => {
  host = realtime();
});

async function ticket(key: string, body?: unknown): Promise<{ ticket: string; kind: string; url: string; expires_in: number }> {
  const r = await call(api, "POST", "/v1/events/ticket", { key, ...(body === undefined ? {} : { body }) });
  expect(r.status).toBe(200);
  return r.body.data;
}

/** Opens the stream with a fresh ticket of `key` on `at`, and waits for `ready`. */
async function open(key: string, query = "", at = host): Promise<StreamConnection> {
  const t = await ticket(key);
  const conn = new StreamConnection(`${at.base}/v1/events/stream?ticket=${t.ticket}${query}`);
  await conn.next("ready");
  return conn;
}

/**
 * Connects with `query` (e.g. `?ticket=…`) on `at` and expects the ticket refused (4401) before any
 * message; returns the close reason.
 */
async function refusedAt(query: string, at = host): Promise<string> {
  const conn = new StreamConnection(`${at.base}/v1/events/stream${query}`);
  const closed = await conn.closed;
  expect(closed.code).toBe(CLOSE.ticketRefused);
  expect(conn.messages).toEqual([]);
  return closed.reason;
}

const testEvent = (accountId: string, message: string) => platform.events.emit(accountId, "test", { message, webhook_id: null, ts: Date.now() });

const callStarted = (accountId: string, n: number) =>
  platform.events.emit(accountId, "call.started", {
    callId: `call_${n}`,
    direction: "inbound",
    from: "14155550123",
    to: "14155550100",
    number_id: null,
    ts: Date.now(),
  });

const callEnded = (accountId: string) =>
  platform.events.emit(accountId, "call.ended", {
    callId: "call_x",
    direction: "inbound",
    answered: 1,
    billsec: 3,
    hangup_cause: "NORMAL_CLEARING",
    queue_id: null,
    agent_id: null,
    ts: Date.now(),
  });

/** The public id of an event (what the stream sends and takes back). */
const pub = (event: PlatformEvent) => platform.events.ids.encode(event.id, event.ts);
/** The sequence numbers behind the public ids of the stream's event messages (each checked to be an evt_ id). */
const ids = (ms: StreamMessage[]) =>
  ms
    .filter((m) => m.type === "event")
    .map((m) => {
      expect(m.id).toMatch(/^evt_[0-9A-HJKMNP-TV-Z]{26}$/);
      return platform.events.ids.decode(m.id as string)!;
    });

describe(`realtime host [${storeKind}]`, () => {
  test("still serves the wallboard page and its config beside the stream", async () => {
    const http = host.base.replace(/^ws/, "http");
    const page = await fetch(`${http}/`);
    expect(page.status).toBe(200);
    expect(await page.text()).toContain("<div id=\"root\">");
    const config = await (await fetch(`${http}/config.json`)).json();
    expect(config.realtimeUrl).toBe(platform.config.urls.realtime);
    // A plain GET of the stream (no upgrade) is told what it is.
    const plain = await fetch(`${http}/v1/events/stream?ticket=x`);
    expect(plain.status).toBe(400);
    expect(await plain.json()).toMatchObject({ ok: false, error: "validation_failed", details: [{ path: "/headers/upgrade", message: expect.stringContaining("WebSocket") }] });
  });
});

describe(`realtime stream: tickets [${storeKind}]`, () => {
  test("a ticket opens the stream once and carries the account's events in the documented shape", async () => {
    const t = await seedTenant(platform);
    const minted = await ticket(t.key);
    expect(minted.kind).toBe("events");
    expect(minted.expires_in).toBe(60);
    expect(minted.url).toBe(`${platform.config.urls.realtime.replace(/^http/, "ws")}/v1/events/stream?ticket=${encodeURIComponent(minted.ticket)}`);
    const conn = new StreamConnection(`${host.base}/v1/events/stream?ticket=${minted.ticket}`);
    const ready = await conn.next("ready");
    expect(ready).toEqual({ type: "ready", kind: "events", account_id: t.accountId, events: "*", heartbeat_sec: 60, last_event_id: null });
    const emitted = await testEvent(t.accountId, "hello");
    await conn.until(() => conn.events().length === 1);
    expect(conn.events()[0]).toEqual({ type: "event", id: pub(emitted), event: "test", account_id: t.accountId, data: emitted.data, ts: emitted.ts });
    conn.close();

    expect(await refusedAt(`?ticket=${minted.ticket}`)).toContain("already used");
  });

  test("an expired ticket is refused, and spent", async () => {
    const t = await seedTenant(platform);
    const later = realtime({ clock: () => Date.now() + 61_000 });
    const minted = await ticket(t.key);
    expect(await refusedAt(`?ticket=${minted.ticket}`, later)).toContain("expired");
    await refusedAt(`?ticket=${minted.ticket}`);
  });

  test("a ticket past its validity in the live store's own time is refused as expired, not as unknown", async () => {
    const t = await seedTenant(platform);
    // Valid for one second by the store's clock (Redis's TTL in scale-out), presented after it.
    const { ticket: short } = await mintTicket(platform.live, { accountId: t.accountId, kind: "events", scopes: ["events"], ttlSec: 1 });
    await Bun.sleep(1200);
    expect(await refusedAt(`?ticket=${short}`)).toBe("ticket_refused: expired; tickets are valid for 60 s");
    expect(await refusedAt(`?ticket=${short}`)).toContain("already used");
  });

  test("missing, malformed and invented tickets are refused with 4401", async () => {
    const t = await seedTenant(platform);
    const forged = `rt1.${t.accountId}.${"A".repeat(43)}`;
    for (const query of ["", "?ticket=nope", `?ticket=${forged}`]) await refusedAt(query);
  });

  test("a bad events filter is refused with 4400 before the ticket is spent", async () => {
    const t = await seedTenant(platform);
    const minted = await ticket(t.key);
    const bad = new StreamConnection(`${host.base}/v1/events/stream?ticket=${minted.ticket}&events=call.started,call.exploded`);
    expect(await bad.closed).toEqual({ code: CLOSE.badRequest, reason: expect.stringContaining("call.exploded") });
    // Nothing named, or * beside names: refused as POST /v1/webhooks refuses them, not read as every event.
    for (const [events, says] of [["", "no event named"], ["*,test", "send it alone"], [",", "no event named"], ["test,", "empty event name"], [",test", "empty event name"]] as const) {
      const refused = new StreamConnection(`${host.base}/v1/events/stream?ticket=${minted.ticket}&events=${events}`);
      expect(await refused.closed, events).toEqual({ code: CLOSE.badRequest, reason: expect.stringContaining(says) });
    }
    // *,* is every event, as POST /v1/webhooks reads it.
    const good = new StreamConnection(`${host.base}/v1/events/stream?ticket=${minted.ticket}&events=*,*`);
    expect((await good.next("ready")).account_id).toBe(t.accountId);
    good.close();
  });

  test("a parameter the stream does not take, a NUL, or a ticket given twice is a 4400 (not an HTTP status) before the ticket is spent", async () => {
    const t = await seedTenant(platform);
    const minted = await ticket(t.key);
    for (const [query, says] of [
      [`&event=call.ended`, 'unknown query parameter "event"'],
      [`&last_event=x`, 'unknown query parameter "last_event"'],
      [`&events=call.ended%00`, "NUL"],
      [`&x%00=1`, "NUL"],
      [`&ticket=${minted.ticket}`, "ticket is given more than once"],
    ] as const) {
      const refused = new StreamConnection(`${host.base}/v1/events/stream?ticket=${minted.ticket}${query}`);
      expect(await refused.closed, query).toEqual({ code: CLOSE.badRequest, reason: expect.stringContaining(says) });
    }
    // events may repeat: its values are one list.
    const good = new StreamConnection(`${host.base}/v1/events/stream?ticket=${minted.ticket}&events=test&events=call.ended`);
    expect((await good.next("ready")).events).toEqual(["test", "call.ended"]);
    good.close();
    // A NUL in any other URL of the host is still a 400, an upgrade asked for or not.
    const http = host.base.replace(/^ws/, "http");
    expect((await fetch(`${http}/healthz?x=%00`)).status).toBe(400);
    expect((await fetch(`${http}/healthz?x=%00`, { headers: { upgrade: "websocket", connection: "upgrade" } })).status).toBe(400);
  });

  test("a wallboard-scoped credential mints a wallboard ticket: the stream sends it calls and agents only, live and on resume (no message bodies, faxes, recordings, campaigns or test events)", async () => {
    const t = await seedTenant(platform);
    const wallboardKey = await keyWithScopes(platform, t.accountId, ["wallboard"]);
    const minted = await ticket(wallboardKey);
    expect(minted.kind).toBe("wallboard");
    const conn = new StreamConnection(`${host.base}/v1/events/stream?ticket=${minted.ticket}`);
    expect((await conn.next("ready")).kind).toBe("wallboard");
    const hidden = await platform.events.emit(t.accountId, "message.received", {
      message_id: "msg_1", conversation_id: "cv_1", channel_id: "ch_1", from: "14155557788", to: "14155557799", body: "your code is 123456", ts: Date.now(),
    });
    await testEvent(t.accountId, "not for the wallboard");
    const shown = await callStarted(t.accountId, 9);
    await conn.until(() => ids(conn.messages).includes(shown.id));
    expect(conn.events().map((m) => m.event)).toEqual(["call.started"]);
    conn.close();
    // On resume too: from before the hidden ones, only the call comes back.
    const again = new StreamConnection(`${host.base}/v1/events/stream?ticket=${(await ticket(wallboardKey)).ticket}&last_event_id=${pub(hidden)}`);
    await again.next("ready");
    const later = await callStarted(t.accountId, 10);
    await again.until(() => ids(again.messages).includes(later.id));
    expect(ids(again.messages)).toEqual([shown.id, later.id]);
    again.close();
    expect((await ticket(t.key, { kind: "wallboard" })).kind).toBe("wallboard");
  });

  test("403 without events or wallboard scope, 403 naming the kind asked for, 401 without a credential, 400 for a bad body", async () => {
    const t = await seedTenant(platform);
    const cdrOnly = await keyWithScopes(platform, t.accountId, ["cdr"]);
    const r = await call(api, "POST", "/v1/events/ticket", { key: cdrOnly });
    expect(r.status).toBe(403);
    expect(r.body).toMatchObject({ ok: false, error: "forbidden", need: "events" });
    const eventsOnly = await keyWithScopes(platform, t.accountId, ["events"]);
    const asked = await call(api, "POST", "/v1/events/ticket", { key: eventsOnly, body: { kind: "wallboard" } });
    expect(asked.status).toBe(403);
    expect(asked.body).toMatchObject({ error: "forbidden", need: "wallboard" });
    expect((await call(api, "POST", "/v1/events/ticket")).status).toBe(401);
    // An Idempotency-Key another key of the account used does not hand its ticket to a key without the scope.
    const headers = { "idempotency-key": `shared-${crypto.randomUUID()}` };
    const first = await call(api, "POST", "/v1/events/ticket", { key: t.key, headers });
    expect(first.status).toBe(200);
    const replay = await call(api, "POST", "/v1/events/ticket", { key: cdrOnly, headers });
    expect(replay.status).toBe(403);
    expect(replay.body).toMatchObject({ ok: false, error: "forbidden", need: "events" });
    expect(JSON.stringify(replay.body)).not.toContain(first.body.data.ticket);
    const bad = await call(api, "POST", "/v1/events/ticket", { key: t.key, body: { kind: "everything" } });
    expect(bad.status).toBe(400);
    expect(bad.body.error).toBe("validation_failed");
    // A body that does not parse, is not an object or names an unknown field mints nothing.
    for (const body of ["{", "null", '"x"', "[]", '{"kinds":"events"}']) {
      const r = await call(api, "POST", "/v1/events/ticket", { key: t.key, body });
      expect(r.status, body).toBe(400);
      expect(r.body.error).toBe("validation_failed");
    }
  });
});

describe(`realtime stream: delivery [${storeKind}]`, () => {
  test("an account never receives another account's events", async () => {
    const a = await seedTenant(platform);
    const b = await seedTenant(platform);
    const connA = await open(a.key);
    const connB = await open(b.key);
    for (let i = 0; i < 5; i++) await testEvent(b.accountId, `b${i}`);
    const markA = await testEvent(a.accountId, "a-marker");
    const markB = await testEvent(b.accountId, "b-marker");
    await connA.until(() => ids(connA.messages).includes(markA.id));
    await connB.until(() => ids(connB.messages).includes(markB.id));
    expect(connA.events().map((m) => m.account_id)).toEqual([a.accountId]);
    expect(connA.events().map((m) => m.data.message)).toEqual(["a-marker"]);
    expect(connB.events().map((m) => m.data.message)).toEqual(["b0", "b1", "b2", "b3", "b4", "b-marker"]);
    connA.close();
    connB.close();
  });

  test("events= filters by type, and a subscribe message changes the filter", async () => {
    const t = await seedTenant(platform);
    const conn = await open(t.key, "&events=call.started,call.ended");
    expect(conn.messages[0]!.events).toEqual(["call.started", "call.ended"]);
    await testEvent(t.accountId, "filtered out");
    await callStarted(t.accountId, 1);
    await callEnded(t.accountId);
    await conn.until(() => conn.events().length === 2);
    conn.send({ type: "subscribe", events: ["test"] });
    expect(await conn.next("subscribed")).toEqual({ type: "subscribed", events: ["test"] });
    await callStarted(t.accountId, 2);
    const last = await testEvent(t.accountId, "now wanted");
    await conn.until(() => ids(conn.messages).includes(last.id));
    expect(conn.events().map((m) => m.event)).toEqual(["call.started", "call.ended", "test"]);

    conn.send({ type: "subscribe", events: ["call.nope"] });
    const error = await conn.next("error");
    expect(error.error).toBe("bad_filter");
    conn.send("not json");
    await conn.until(() => conn.messages.filter((m) => m.type === "error").length === 2);
    expect(conn.messages.filter((m) => m.type === "error")[1]!.error).toBe("bad_message");
    // An empty list, * beside names, or a resume from a bare sequence number or an id the platform did
    // not issue, is not understood: an error frame, the connection stays open and the filter is kept.
    conn.send({ type: "subscribe", events: [] });
    conn.send({ type: "subscribe", events: ["*", "test"] });
    conn.send({ type: "resume", last_event_id: last.id });
    conn.send({ type: "resume", last_event_id: `evt_${"7".repeat(26)}` });
    await conn.until(() => conn.messages.filter((m) => m.type === "error").length === 6);
    expect(conn.messages.filter((m) => m.type === "error").slice(2).map((m) => m.error)).toEqual(["bad_message", "bad_filter", "bad_message", "bad_message"]);
    // Still only test events: a call.started now is filtered out, the test event after it comes.
    await callStarted(t.accountId, 3);
    const after = await testEvent(t.accountId, "filter kept");
    await conn.until(() => ids(conn.messages).includes(after.id));
    expect(conn.events().map((m) => m.event)).toEqual(["call.started", "call.ended", "test", "test"]);
    conn.close();
  });

  test("client messages are small: an event name over 64 characters is a bad_message, never echoed; a message over 16 KiB closes 1009", async () => {
    const t = await seedTenant(platform);
    const conn = await open(t.key, "");
    conn.send({ type: "subscribe", events: ["x".repeat(65)] });
    const error = await conn.next("error");
    expect(error.error).toBe("bad_message");
    expect(JSON.stringify(error).length).toBeLessThan(1000);
    // Before, a 10 MiB name was parsed, and echoed back whole in a bad_filter error.
    conn.send({ type: "subscribe", events: ["x".repeat(MAX_CLIENT_MESSAGE_BYTES)] });
    expect((await conn.closed).code).toBe(1009);
  });

  test("an account's open sockets on an instance are bounded: one more closes 4429 too_many_sockets; other accounts are not affected", async () => {
    const t = await seedTenant(platform);
    const other = await seedTenant(platform);
    const small = realtime({ maxSocketsPerAccount: 2 });
    const first = await open(t.key, "", small);
    const second = await open(t.key, "", small);
    const third = new StreamConnection(`${small.base}/v1/events/stream?ticket=${(await ticket(t.key)).ticket}`);
    const refused = await third.closed;
    expect(refused.code).toBe(4429);
    expect(refused.reason).toStartWith("too_many_sockets:");
    const elsewhere = await open(other.key, "", small);
    elsewhere.close();
    // One closed: room for another.
    first.close();
    await first.closed;
    await Bun.sleep(50);
    const again = await open(t.key, "", small);
    again.close();
    second.close();
  });

  test("a malformed WebSocket handshake is a 400 with the error body naming the header (was plain text, or a bare 426)", async () => {
    const raw = async (headers: string) => {
      const socket: Socket = tcpConnect(host.port, "127.0.0.1");
      await new Promise<void>((resolve) => socket.once("connect", () => resolve()));
      let text = "";
      const done = new Promise<string>((resolve) => {
        socket.on("data", (chunk) => {
          text += chunk.toString("latin1");
          const head = text.indexOf("\r\n\r\n");
          const length = /content-length: (\d+)/i.exec(text)?.[1];
          if (head >= 0 && length !== undefined && text.length >= head + 4 + Number(length)) resolve(text);
        });
        socket.on("end", () => resolve(text));
      });
      socket.write(`GET /v1/events/stream?ticket=x HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n${headers}\r\n`);
      const reply = await done;
      socket.destroy();
      const status = Number(reply.slice(9, 12));
      const body = JSON.parse(reply.slice(reply.indexOf("\r\n\r\n") + 4));
      return { status, body, head: reply.slice(0, reply.indexOf("\r\n\r\n")).toLowerCase() };
    };
    const noKey = await raw("Sec-WebSocket-Version: 13\r\n");
    expect(noKey.status).toBe(400);
    expect(noKey.body).toMatchObject({ ok: false, error: "validation_failed", details: [{ path: "/headers/sec-websocket-key" }] });
    const oldVersion = await raw(`Sec-WebSocket-Key: ${Buffer.from(new Uint8Array(16)).toString("base64")}\r\nSec-WebSocket-Version: 8\r\n`);
    expect(oldVersion.status).toBe(400);
    expect(oldVersion.body.details).toEqual([{ path: "/headers/sec-websocket-version", message: "Only version 13 is spoken." }]);
    expect(oldVersion.head).toContain("sec-websocket-version: 13");
  });

  test("heartbeats arrive every heartbeat interval; a pong is accepted silently", async () => {
    const t = await seedTenant(platform);
    const fast = realtime({ heartbeatMs: 100 });
    const conn = await open(t.key, "", fast);
    expect(conn.messages[0]!.heartbeat_sec).toBe(0.1);
    await conn.until((ms) => ms.filter((m) => m.type === "ping").length >= 2);
    const ping = conn.messages.find((m) => m.type === "ping")!;
    expect(typeof ping.ts).toBe("number");
    conn.send({ type: "pong" });
    await conn.until((ms) => ms.filter((m) => m.type === "ping").length >= 4);
    expect(conn.messages.some((m) => m.type === "error")).toBe(false);
    conn.close();
  });

  test("when the live feed may have lost events (the live store reconnected), the account's sockets are closed to resume", async () => {
    const t = await seedTenant(platform);
    // The bus as the hub sees it, keeping the gap callbacks the live store would call after a reconnect.
    const gaps: Array<() => void> = [];
    const bus = Object.create(platform.events) as typeof platform.events;
    bus.subscribe = (accountId, handler, onGap) => {
      if (onGap) gaps.push(onGap);
      return platform.events.subscribe(accountId, handler, onGap);
    };
    const own = realtime({ hub: new EventHub(bus, platform.log) });
    const conn = await open(t.key, "", own);
    const e = await testEvent(t.accountId, "before");
    await conn.until(() => ids(conn.messages).includes(e.id));
    expect(gaps).toHaveLength(1);
    gaps[0]!();
    const closed = await conn.closed;
    expect(closed.code).toBe(1011);
    expect(closed.reason).toStartWith("interrupted:");
  });

  test("an event another instance could not publish reaches the open sockets from the repair (nothing sent twice, no reconnect)", async () => {
    const t = await seedTenant(platform);
    const conn = await open(t.key, "");
    const before = await testEvent(t.accountId, "before");
    await conn.until(() => ids(conn.messages).includes(before.id));
    // Another instance whose live-store connection fails for its first publish.
    const flaky = failingPublishes(platform.live, 1);
    const other = createEventBus({ db: platform.db, live: flaky, log: platform.log, ids: platform.events.ids });
    const lost = await other.emit(t.accountId, "test", { message: "not published", webhook_id: null, ts: Date.now() });
    // A later event from this instance arrives first; the lost one follows once this instance's repair
    // reads it twice (every 2 s) and finds it still unpublished.
    const later = await testEvent(t.accountId, "later");
    await conn.until(() => ids(conn.messages).includes(lost.id), 10_000);
    const seen = ids(conn.messages);
    for (const e of [before, lost, later]) expect(seen.filter((id) => id === e.id)).toHaveLength(1);
    expect(await Promise.race([conn.closed.then(() => "closed"), Bun.sleep(100).then(() => "open")])).toBe("open");
    // A client that had resumed from "later" would get it too (it went out after "later").
    expect((await platform.events.since(t.accountId, later.id, 10)).map((e) => e.id)).toEqual([lost.id]);
    conn.close();
  }, 20_000);

  test("the instance subscribes once per account and unsubscribes when the account's last socket closes", async () => {
    const t = await seedTenant(platform);
    const hub = new EventHub(platform.events, platform.log);
    const own = realtime({ hub });
    const first = await open(t.key, "", own);
    const second = await open(t.key, "", own);
    expect(hub.subscribedAccounts()).toEqual([t.accountId]);
    expect(hub.listenerCount(t.accountId)).toBe(2);
    const e = await testEvent(t.accountId, "both");
    await first.until(() => ids(first.messages).includes(e.id));
    await second.until(() => ids(second.messages).includes(e.id));
    first.close();
    await first.closed;
    await Bun.sleep(50);
    expect(hub.subscribedAccounts()).toEqual([t.accountId]);
    second.close();
    await second.closed;
    const deadline = Date.now() + 5000;
    while (hub.subscribedAccounts().length && Date.now() < deadline) await Bun.sleep(20);
    expect(hub.subscribedAccounts()).toEqual([]);
    expect(own.stream.connections()).toBe(0);
  });
});

describe(`realtime stream: resume [${storeKind}]`, () => {
  test("reconnecting with last_event_id replays what was missed, then continues live, without gaps or duplicates", async () => {
    const t = await seedTenant(platform);
    const first = await open(t.key);
    const seenEvents: PlatformEvent[] = [];
    for (let i = 0; i < 3; i++) seenEvents.push(await testEvent(t.accountId, `before ${i}`));
    const seen = seenEvents.map((e) => e.id);
    await first.until(() => first.events().length === 3);
    expect(ids(first.messages)).toEqual(seen);
    first.close();
    await first.closed;

    const missed: number[] = [];
    for (let i = 0; i < 4; i++) missed.push((await testEvent(t.accountId, `missed ${i}`)).id);
    // A bare sequence number is not an event id: refused before the ticket is spent.
    const bare = new StreamConnection(`${host.base}/v1/events/stream?ticket=${(await ticket(t.key)).ticket}&last_event_id=${seen[2]}`);
    expect((await bare.closed).code).toBe(4400);
    const second = await open(t.key, `&last_event_id=${pub(seenEvents[2]!)}`);
    expect(second.messages[0]!.last_event_id).toBe(pub(seenEvents[2]!));
    await second.until(() => second.events().length === 4);
    const live = await testEvent(t.accountId, "live");
    await second.until(() => ids(second.messages).includes(live.id));
    expect(ids(second.messages)).toEqual([...missed, live.id]);
    second.close();
  });

  // PostgreSQL: two transactions emit at once (PGlite runs one transaction at a time, so ids always
  // commit in order there).
  test.skipIf(!storeKind.startsWith("postgres"))("an event committed after a later one (a smaller id, a slower transaction) is replayed on resume from the later one", async () => {
    const t = await seedTenant(platform);
    const first = await open(t.key);
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    let written!: (id: number) => void;
    const slowId = new Promise<number>((resolve) => (written = resolve));
    // The slow transaction takes its id first and commits last.
    const slow = platform.events.transaction(async (_tx, emit) => {
      written((await emit(t.accountId, "test", { message: "slow", webhook_id: null, ts: Date.now() })).id);
      await gate;
    });
    const id = await slowId;
    const fast = await testEvent(t.accountId, "fast");
    expect(fast.id).toBeGreaterThan(id);
    await first.until(() => first.events().length === 1);
    expect(ids(first.messages)).toEqual([fast.id]);
    first.close();
    await first.closed;
    release();
    await slow;
    // Resumed from the last event it saw, the client gets the one committed after it, once.
    const second = await open(t.key, `&last_event_id=${pub(fast)}`);
    await second.until(() => second.events().length >= 1);
    const later = await testEvent(t.accountId, "later");
    await second.until(() => ids(second.messages).includes(later.id));
    expect(ids(second.messages)).toEqual([id, later.id]);
    second.close();
  });

  test("an event another instance published after a later one (a slow publish) is sent on a resume from the later one", async () => {
    const t = await seedTenant(platform);
    const first = await open(t.key);
    const slowInstance = heldPublishes(platform.live);
    const other = createEventBus({ db: platform.db, live: slowInstance.live, log: platform.log, ids: platform.events.ids });
    // Committed first, published last.
    const slow = await other.emit(t.accountId, "test", { message: "slow", webhook_id: null, ts: Date.now() });
    const fast = await testEvent(t.accountId, "fast");
    await first.until(() => ids(first.messages).includes(fast.id));
    expect(ids(first.messages)).toEqual([fast.id]);
    first.close();
    await first.closed;
    // Published while the client was away; it resumes from the last event it got.
    let published!: () => void;
    const heard = new Promise<void>((resolve) => (published = resolve));
    const stop = await platform.events.subscribe(t.accountId, (e) => e.id === slow.id && published());
    slowInstance.release();
    await heard;
    await stop();
    const second = await open(t.key, `&last_event_id=${pub(fast)}`);
    await second.until(() => ids(second.messages).includes(slow.id));
    const later = await testEvent(t.accountId, "later");
    await second.until(() => ids(second.messages).includes(later.id));
    expect(ids(second.messages)).toEqual([slow.id, later.id]);
    second.close();
  });

  test("events emitted while a resume reads the store arrive exactly once (the seam)", async () => {
    const t = await seedTenant(platform);
    const beforeEvents: PlatformEvent[] = [];
    for (let i = 0; i < 20; i++) beforeEvents.push(await testEvent(t.accountId, `old ${i}`));
    const before = beforeEvents.map((e) => e.id);
    const resumeFrom = before[4]!;
    // Emit continuously while the socket opens, subscribes and backfills.
    const during: number[] = [];
    let stop = false;
    const producer = (async () => {
      for (let i = 0; !stop && i < 100; i++) during.push((await testEvent(t.accountId, `during ${i}`)).id);
    })();
    const conn = await open(t.key, `&last_event_id=${pub(beforeEvents[4]!)}`);
    await conn.until(() => conn.events().length >= 20);
    stop = true;
    await producer;
    const final = await testEvent(t.accountId, "final");
    await conn.until(() => ids(conn.messages).includes(final.id));
    const got = ids(conn.messages);
    const expected = [...before.filter((id) => id > resumeFrom), ...during, final.id];
    expect(new Set(got).size).toBe(got.length);
    expect([...got].sort((x, y) => x - y)).toEqual(expected);
    conn.close();
  });

  test("more missed events than the replay bound: the first ones, then a resync hint, then live", async () => {
    const t = await seedTenant(platform);
    const bounded = realtime({ backfillLimit: 5 });
    const start = await testEvent(t.accountId, "start");
    const missedEvents: PlatformEvent[] = [];
    for (let i = 0; i < 8; i++) missedEvents.push(await testEvent(t.accountId, `missed ${i}`));
    const missed = missedEvents.map((e) => e.id);
    const conn = await open(t.key, `&last_event_id=${pub(start)}`, bounded);
    const resync = await conn.next("resync");
    expect(resync).toEqual({ type: "resync", reason: "too_many_missed", last_event_id: pub(missedEvents[4]!), limit: 5 });
    expect(ids(conn.messages)).toEqual(missed.slice(0, 5));
    const live = await testEvent(t.accountId, "live");
    await conn.until(() => ids(conn.messages).includes(live.id));
    conn.close();
  });

  test("events before the resume point it missed do not count against the replay bound: all of them, then the first ones after it, then a resync naming the last of those", async () => {
    const t = await seedTenant(platform);
    const bounded = realtime({ backfillLimit: 3 });
    // After the account's first event, three another instance committed and never published (it
    // stopped), then one published.
    await testEvent(t.accountId, "first");
    const stopped = createEventBus({ db: platform.db, live: heldPublishes(platform.live).live, log: platform.log, ids: platform.events.ids });
    const lost: PlatformEvent[] = [];
    for (let i = 0; i < 3; i++) lost.push(await stopped.emit(t.accountId, "test", { message: `lost ${i}`, webhook_id: null, ts: Date.now() }));
    const point = await testEvent(t.accountId, "seen");
    const after: PlatformEvent[] = [];
    for (let i = 0; i < 5; i++) after.push(await testEvent(t.accountId, `after ${i}`));
    const conn = await open(t.key, `&last_event_id=${pub(point)}`, bounded);
    const resync = await conn.next("resync");
    // Before, the earlier ones took the bound and the resync named an event before the resume point.
    expect(resync).toEqual({ type: "resync", reason: "too_many_missed", last_event_id: pub(after[2]!), limit: 3 });
    expect(ids(conn.messages)).toEqual([...lost, ...after.slice(0, 3)].map((e) => e.id));
    conn.close();
  });

  test("a resume message replays after the given id, skipping events already sent", async () => {
    const t = await seedTenant(platform);
    const before = await testEvent(t.accountId, "before");
    const old = await testEvent(t.accountId, "old");
    const old2 = await testEvent(t.accountId, "old2");
    const conn = await open(t.key);
    const live = await testEvent(t.accountId, "live");
    await conn.until(() => ids(conn.messages).includes(live.id));
    conn.send({ type: "resume", last_event_id: pub(before) });
    await conn.until(() => ids(conn.messages).includes(old2.id));
    const after = await testEvent(t.accountId, "after");
    await conn.until(() => ids(conn.messages).includes(after.id));
    expect(ids(conn.messages)).toEqual([live.id, old.id, old2.id, after.id]);
    conn.close();
  });
});

describe(`realtime stream: message floods [${storeKind}]`, () => {
  test("a client that keeps sending resume messages is closed (4429 too_many_messages): each one reads the store", async () => {
    const t = await seedTenant(platform);
    const first = await testEvent(t.accountId, "first");
    // Each resume replays these (they are skipped as already sent, after being read again).
    await platform.events.transaction((_tx, _emit, emitMany) =>
      emitMany(Array.from({ length: 300 }, (_, i) => ({ accountId: t.accountId, event: "test" as const, data: { message: `m${i}`, webhook_id: null, ts: Date.now() } }))),
    );
    const conn = await open(t.key);
    for (let i = 0; i <= RESUME_BURST; i++) conn.send({ type: "resume", last_event_id: pub(first) });
    const closed = await conn.closed;
    expect(closed).toEqual({ code: 4429, reason: expect.stringMatching(/^too_many_messages: more than 10 resume messages a minute/) });
    // The burst's resumes were answered (their events were sent once, then skipped as already sent).
    expect(conn.events().length).toBe(300);
  });

  // PostgreSQL: a resume takes round trips there, so messages sent at once wait (PGlite answers each
  // before the next arrives).
  test.skipIf(!storeKind.startsWith("postgres"))("messages sent faster than they are handled wait 16 deep at most, then the client is closed", async () => {
    const t = await seedTenant(platform);
    const conn = await open(t.key);
    const from = pub(await testEvent(t.accountId, "x"));
    for (let i = 0; i < 200; i++) conn.send({ type: "resume", last_event_id: from });
    const closed = await conn.closed;
    expect(closed).toEqual({ code: 4429, reason: expect.stringMatching(/^too_many_messages: more than 16 messages waiting/) });
  });
});

describe(`realtime stream: slow consumers [${storeKind}]`, () => {
  test("a client that stops reading is closed instead of buffering without bound", async () => {
    const t = await seedTenant(platform);
    const small = realtime({ maxBufferedBytes: 64 * 1024 });
    const minted = await ticket(t.key);
    // A raw client that completes the upgrade and then never reads.
    const socket: Socket = tcpConnect(small.port, "127.0.0.1");
    await new Promise<void>((resolve) => socket.once("connect", () => resolve()));
    let handshake = "";
    const upgraded = new Promise<void>((resolve) =>
      socket.on("data", (chunk) => {
        handshake += chunk.toString("latin1");
        if (handshake.includes("\r\n\r\n") && handshake.includes('"ready"')) {
          socket.pause();
          resolve();
        }
      }),
    );
    socket.write(
      `GET /v1/events/stream?ticket=${minted.ticket} HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n` +
        `Sec-WebSocket-Key: ${Buffer.from(crypto.getRandomValues(new Uint8Array(16))).toString("base64")}\r\nSec-WebSocket-Version: 13\r\n\r\n`,
    );
    await upgraded;
    expect(small.stream.connections()).toBe(1);
    const big = "x".repeat(64 * 1024);
    const deadline = Date.now() + 20_000;
    for (let id = 1_000_000_000; small.stream.connections() > 0 && Date.now() < deadline; id++) {
      // Straight onto the account's channel: fast enough to outrun the socket's kernel buffers.
      await platform.live.publish(
        eventChannel(t.accountId),
        JSON.stringify({ id, account_id: t.accountId, event: "test", data: { message: big, webhook_id: null, ts: 0 }, ts: 0 }),
      );
      if (id % 20 === 0) await Bun.sleep(5);
    }
    expect(small.stream.connections()).toBe(0);
    socket.destroy();
  });
});

/** A second key on the account, with its id. */
const secondKey = (accountId: string) => createApiKey(platform.db, { accountId, label: "second", scopes: ["*"], grantorScopes: null });

describe(`realtime stream: the credential behind a socket [${storeKind}]`, () => {
  test("a ticket whose key is revoked before it is used opens nothing", async () => {
    const t = await seedTenant(platform);
    const minted = await ticket(t.key);
    const other = await secondKey(t.accountId);
    expect((await call(api, "DELETE", `/v1/keys/${t.keyId}`, { key: other.secret })).status).toBe(200);
    expect(await refusedAt(`?ticket=${minted.ticket}`)).toBe("ticket_refused: the API key that minted the ticket was revoked");
  });

  test("revoking a key closes its open sockets at once with 4403; another key's socket stays and keeps its events", async () => {
    const t = await seedTenant(platform);
    const other = await secondKey(t.accountId);
    const doomed = await open(t.key);
    const doomed2 = await open(t.key, "&events=test");
    const staying = await open(other.secret);
    expect((await call(api, "DELETE", `/v1/keys/${t.keyId}`, { key: other.secret })).status).toBe(200);
    for (const conn of [doomed, doomed2]) {
      const closed = await conn.closed;
      expect(closed.code).toBe(CLOSE.credentialRevoked);
      expect(closed.reason).toBe("credential_revoked: the API key that minted the ticket was revoked");
    }
    const emitted = await testEvent(t.accountId, "after the revocation");
    await staying.until(() => staying.events().length === 1);
    expect(ids(staying.messages)).toEqual([emitted.id]);
    expect(doomed.events()).toEqual([]);
    staying.close();
  });

  test("an account that stops being active loses its sockets; other accounts keep theirs", async () => {
    const t = await seedTenant(platform);
    const bystander = await seedTenant(platform);
    const conn = await open(t.key);
    const kept = await open(bystander.key);
    await platform.db.update(accounts).set({ status: "suspended" }).where(eq(accounts.id, t.accountId));
    await platform.credentials.invalidateAccount(t.accountId);
    expect(await conn.closed).toEqual({ code: CLOSE.credentialRevoked, reason: "credential_revoked: the account is suspended" });
    // Another change of an active account (its limits, say) closes nothing.
    await platform.credentials.invalidateAccount(bystander.accountId);
    const emitted = await testEvent(bystander.accountId, "still here");
    await kept.until(() => kept.events().length === 1);
    expect(ids(kept.messages)).toEqual([emitted.id]);
    kept.close();
  });

  test("a console session's socket ends when the session expires; a ticket of an expired session opens nothing", async () => {
    const t = await seedTenant(platform);
    // A ticket minted by a session token carries the token's expiry.
    const login = await call(createConsoleApp(platform), "POST", "/login", { body: await seedConsoleUser(platform, t.accountId) });
    const { principal } = await platform.credentials.fromBearer(login.body.token);
    expect(principal.expiresAt! - Date.now()).toBeGreaterThan((SESSION_TOKEN_TTL_SEC - 60) * 1000);
    expect(principal.expiresAt! - Date.now()).toBeLessThanOrEqual(SESSION_TOKEN_TTL_SEC * 1000);
    expect((await call(api, "POST", "/v1/events/ticket", { token: login.body.token })).status).toBe(200);

    const ending = await mintTicket(platform.live, { accountId: t.accountId, kind: "events", scopes: ["events"], credentialExpiresAt: Date.now() + 500 });
    const conn = new StreamConnection(`${host.base}/v1/events/stream?ticket=${ending.ticket}`);
    await conn.next("ready");
    const closed = await conn.closed;
    expect(closed.code).toBe(CLOSE.credentialRevoked);
    expect(closed.reason).toBe("credential_revoked: the console session that minted the ticket expired");

    const late = await mintTicket(platform.live, { accountId: t.accountId, kind: "events", scopes: ["events"], credentialExpiresAt: Date.now() - 1 });
    expect(await refusedAt(`?ticket=${late.ticket}`)).toBe("ticket_refused: the console session that minted the ticket expired");
  });

  test("a key revoked while its ticket is being redeemed (the check's reply still on its way) closes the socket at once", async () => {
    const t = await seedTenant(platform);
    const other = await secondKey(t.accountId);
    const minted = await ticket(t.key);
    // The redemption's credential check answers "still valid", then its reply takes a while (a slow
    // database), and the key is revoked meanwhile.
    const credentials = platform.credentials;
    const check = credentials.credentialEnded.bind(credentials);
    let checked!: () => void;
    const read = new Promise<void>((resolve) => (checked = resolve));
    let release!: () => void;
    const slow = new Promise<void>((resolve) => (release = resolve));
    let first = true;
    credentials.credentialEnded = async (credential) => {
      const ended = await check(credential);
      if (first) {
        first = false;
        checked();
        await slow;
      }
      return ended;
    };
    try {
      const conn = new StreamConnection(`${host.base}${STREAM_PATH}?ticket=${minted.ticket}`);
      await read;
      expect((await call(api, "DELETE", `/v1/keys/${t.keyId}`, { key: other.secret })).status).toBe(200);
      release();
      // Closed by the at-once check the revocation started, not by the periodic one (a minute away).
      expect(await conn.closed).toEqual({ code: CLOSE.credentialRevoked, reason: "credential_revoked: the API key that minted the ticket was revoked" });
    } finally {
      credentials.credentialEnded = check;
    }
  });

  test("without a revocation message (a lost one), the periodic check closes the socket", async () => {
    const t = await seedTenant(platform);
    const checking = realtime({ recheckMs: 200 });
    const conn = await open(t.key, "", checking);
    // Revoked in the database only: no instance is told.
    expect(await revokeApiKey(platform.db, t.accountId, t.keyId, Math.floor(Date.now() / 1000))).toBe(true);
    const closed = await conn.closed;
    expect(closed).toEqual({ code: CLOSE.credentialRevoked, reason: "credential_revoked: the API key that minted the ticket was revoked" });
  });
});

describe.skipIf(!process.env.TEST_REDIS_URL)(`realtime stream: two instances sharing PostgreSQL and Redis [${storeKind}]`, () => {
  let other: Platform;
  let otherLive: LiveStore;
  beforeAll(async () => {
    otherLive = await openLiveStore(process.env.TEST_REDIS_URL);
    other = await testPlatform({ live: otherLive });
  });
  afterAll(async () => {
    await other.close();
    await otherLive.close();
  });

  test("an event emitted on one instance reaches a socket on the other; a ticket is single-use across both", async () => {
    const t = await seedTenant(platform);
    const b = realtime({}, other);
    const minted = await ticket(t.key);
    const conn = new StreamConnection(`${b.base}/v1/events/stream?ticket=${minted.ticket}`);
    await conn.next("ready");
    const onA = await testEvent(t.accountId, "from instance A");
    const onB = await other.events.emit(t.accountId, "test", { message: "from instance B", webhook_id: null, ts: Date.now() });
    await conn.until(() => conn.events().length === 2);
    expect(ids(conn.messages).sort()).toEqual([onA.id, onB.id].sort());
    await refusedAt(`?ticket=${minted.ticket}`);
    conn.close();
  });

  test("a key revoked through one instance closes its socket on the other at once", async () => {
    const t = await seedTenant(platform);
    const spare = await secondKey(t.accountId);
    const b = realtime({}, other);
    const conn = await open(t.key, "", b);
    expect((await call(api, "DELETE", `/v1/keys/${t.keyId}`, { key: spare.secret })).status).toBe(200);
    expect((await conn.closed).code).toBe(CLOSE.credentialRevoked);
  });
});
