/**
 * Webhook delivery against a real HTTPS receiver (self-signed, trusted through WEBHOOK_CA_FILE):
 * planning in the emitting transaction, both signature schemes verified by their reference
 * libraries, the retry schedule and fail-fast rules, timeouts, the lease of a crashed worker, per
 * subscription concurrency, the SSRF re-check, and retention.
 */
import { eventually } from "../../../test/support/eventually.ts";
import { startBlackhole } from "../../../test/support/blackhole.ts";
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { sql } from "drizzle-orm";
import { verify as verifyGithubStyle } from "@octokit/webhooks-methods";
import { Webhook } from "standardwebhooks";
import type { Platform } from "../platform.ts";
import { rawRows } from "../db/migrate.ts";
import { seedTenant, storeKind, testPlatform, type Tenant } from "../../../test/support/platform.ts";
import { createWebhook, deleteWebhook } from "./webhooks.service.ts";
import { fireTestEvent } from "./delivery.service.ts";
import { exchangeDeliveries, listDeliveryRows, outcomeColumns, releaseClaims, type AttemptRecord } from "./delivery.store.ts";
import type { WebhookDeliveryRow } from "./delivery.schema.ts";
import { startDeliveryWorker, sweepFinishedWebhooks, webhookEndpoint, type DeliveryWorkerOptions } from "./delivery-worker.ts";
import { standardWebhookKey } from "./delivery-signing.ts";
import { startTestReceiver, type TestReceiver } from "./delivery-test-receiver.ts";
import { listLogs } from "../logs/logs.service.ts";

let platform: Platform;
let receiver: TestReceiver;

beforeAll(async () => {
  receiver = await startTestReceiver();
  platform = await testPlatform({ env: { WEBHOOK_ALLOW_PRIVATE: "1", WEBHOOK_CA_FILE: receiver.caFile } });
});
afterAll(async () => {
  await platform.close();
  await receiver.stop();
});

/** Runs `fn` with a worker of this platform (fast polling, short timeout), stopping it afterwards. */
async function withWorker<T>(fn: () => Promise<T>, options: DeliveryWorkerOptions = {}): Promise<T> {
  const worker = startDeliveryWorker(platform, { pollMs: 100, timeoutMs: 2000, ...options });
  try {
    return await fn();
  } finally {
    await worker.stop();
  }
}

let pathCounter = 0;
/** A fresh receiver path, so tests never see each other's requests. */
const freshPath = (label: string) => `/${label}-${++pathCounter}-${Math.random().toString(36).slice(2, 8)}`;

async function subscribe(t: Tenant, path: string, body: { events?: string; secret?: string } = {}) {
  const created = await createWebhook(platform.db, platform.secrets, t.accountId, { url: receiver.url(path), ...body }, { allowPrivate: true });
  // Not through the API (which waits for this itself): the next event must see the subscription in
  // the subscriptions' cache.
  await platform.configCache.settle();
  return created;
}

async function deliveries(accountId: string): Promise<WebhookDeliveryRow[]> {
  return listDeliveryRows(platform.db, accountId, {}, null, 1000);
}

/** The receiver holds every request to `paths` until the returned function is called (then answers 200). */
function holdRequests(paths: string[]): () => void {
  let release!: () => void;
  const gate = new Promise<void>((resolve) => (release = resolve));
  for (const path of paths) {
    receiver.on(path, async () => {
      await gate;
      return new Response("finally");
    });
  }
  return release;
}

/** Waits until every delivery of the account is settled (delivered or failed). */
async function settled(accountId: string, count: number, timeoutMs = 15_000): Promise<WebhookDeliveryRow[]> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const rows = await deliveries(accountId);
    if (rows.length >= count && rows.every((r) => r.status === "delivered" || r.status === "failed")) {
      // A final outcome leaves nothing in the work queue (it is removed in the statement that records it).
      expect(await rawRows(platform.db, sql`select id from webhook_delivery_due where account_id = ${accountId}`)).toHaveLength(0);
      return rows;
    }
    if (Date.now() > deadline) throw new Error(`deliveries not settled: ${JSON.stringify(rows.map((r) => [r.status, r.attempts, r.last_error]))}`);
    await Bun.sleep(50);
  }
}

describe(`webhook delivery [${storeKind}]`, () => {
  test("events emitted together (emitMany) are planned together: each to the subscriptions of its own account that receive it", async () => {
    const a = await seedTenant(platform);
    const b = await seedTenant(platform);
    const all = await subscribe(a, freshPath("many-all"));
    const ended = await subscribe(a, freshPath("many-ended"), { events: "call.ended" });
    const other = await subscribe(b, freshPath("many-b"), { events: "call.answered" });
    const ts = Date.now();
    const base = { direction: "inbound" as const, queue_id: null, agent_id: null, ts };
    const emitted = await platform.events.transaction((_tx, _emit, emitMany) =>
      emitMany([
        { accountId: a.accountId, event: "call.answered", data: { callId: "call_1", wait_sec: 0, ...base }, ts },
        { accountId: b.accountId, event: "call.answered", data: { callId: "call_2", wait_sec: 0, ...base }, ts },
        { accountId: a.accountId, event: "call.ended", data: { callId: "call_1", answered: 1, billsec: 3, hangup_cause: "NORMAL_CLEARING", ...base }, ts },
        { accountId: b.accountId, event: "call.ended", data: { callId: "call_2", answered: 1, billsec: 3, hangup_cause: "NORMAL_CLEARING", ...base }, ts },
      ]),
    );
    // In the order given, with increasing ids.
    expect(emitted.map((e) => [e.account_id, e.event, (e.data as { callId: string }).callId])).toEqual([
      [a.accountId, "call.answered", "call_1"],
      [b.accountId, "call.answered", "call_2"],
      [a.accountId, "call.ended", "call_1"],
      [b.accountId, "call.ended", "call_2"],
    ]);
    expect(emitted.map((e) => e.id)).toEqual([...emitted.map((e) => e.id)].sort((x, y) => x - y));
    const planned = (rows: WebhookDeliveryRow[]) => rows.map((r) => `${r.webhook_id} ${r.event}`).sort();
    expect(planned(await deliveries(a.accountId))).toEqual([`${all.id} call.answered`, `${all.id} call.ended`, `${ended.id} call.ended`].sort());
    expect(planned(await deliveries(b.accountId))).toEqual([`${other.id} call.answered`]);
  });

  test("a commit that planned deliveries wakes the worker (no poll needed); one that planned none is not delivered anywhere", async () => {
    const t = await seedTenant(platform);
    const path = freshPath("woken");
    await subscribe(t, path, { events: "test" });
    // A poll far beyond the test: only the wake-up after the commit can find the delivery.
    const worker = startDeliveryWorker(platform, { pollMs: 600_000, timeoutMs: 2000 });
    try {
      // The worker's first scan (at start) is over before anything is planned.
      await eventually(async () => expect(worker.stats().exchanges).toBeGreaterThanOrEqual(1), 5000, 10);
      await platform.events.emit(t.accountId, "call.started", { callId: "call_x", direction: "inbound", from: "1", to: "2", number_id: null, ts: Date.now() });
      await fireTestEvent(platform.events, t.accountId, {});
      const rows = await settled(t.accountId, 1);
      expect(rows.map((r) => [r.event, r.status])).toEqual([["test", "delivered"]]);
    } finally {
      await worker.stop();
    }
    expect(receiver.at(path)).toHaveLength(1);
  });

  test("a test event reaches the subscription once, with the exact body and both signatures valid", async () => {
    const t = await seedTenant(platform);
    const path = freshPath("signed");
    const hook = await subscribe(t, path);
    const fired = await fireTestEvent(platform.events, t.accountId, {});
    expect(fired.deliveries).toBe(1);
    const [row] = await withWorker(() => settled(t.accountId, 1));
    expect(row).toMatchObject({ status: "delivered", attempts: 1, last_status: 200, last_error: null, webhook_id: hook.id, event: "test" });
    // The stored sequence number is the test event's public id, as the deliveries log shows it.
    expect(fired.event_id).toMatch(/^evt_[0-9A-HJKMNP-TV-Z]{26}$/);
    expect(row!.event_id).toBe(platform.events.ids.decode(fired.event_id)!);
    expect(platform.events.ids.encode(row!.event_id, row!.created_at * 1000)).toBe(fired.event_id);
    expect(row!.delivered_at).toEqual(expect.any(Number));

    const [req] = receiver.at(path);
    expect(receiver.at(path)).toHaveLength(1);
    const body = JSON.parse(req!.body);
    expect(Object.keys(body)).toEqual(["event", "account_id", "data", "ts"]);
    expect(body).toEqual({ event: "test", account_id: t.accountId, data: { message: expect.any(String), webhook_id: null, ts: body.ts }, ts: expect.any(Number) });
    expect(body.ts).toBeGreaterThan(1_600_000_000_000); // epoch ms
    expect(req!.headers["content-type"]).toBe("application/json");
    expect(req!.headers["x-service-event"]).toBe("test");
    expect(req!.headers["webhook-id"]).toBe(row!.id);
    // The event's own id, the same in every subscription's copy (the deliveries log and the stream show it).
    expect(req!.headers["x-service-event-id"]).toBe(fired.event_id);
    expect(req!.headers["host"]).toBe(`localhost:${receiver.port}`);

    // Both schemes, checked by their reference implementations with the secret as the user got it.
    expect(req!.headers["x-service-signature"]).toMatch(/^sha256=[0-9a-f]{64}$/);
    expect(await verifyGithubStyle(hook.secret!, req!.body, req!.headers["x-service-signature"]!)).toBe(true);
    expect(await verifyGithubStyle("whsec_wrong", req!.body, req!.headers["x-service-signature"]!)).toBe(false);
    const payload = new Webhook(hook.secret!).verify(req!.body, req!.headers);
    expect(payload).toEqual(body);
    expect(() => new Webhook(`whsec_${Buffer.alloc(32, 7).toString("base64")}`).verify(req!.body, req!.headers)).toThrow();
    // A tampered body fails both.
    const tampered = req!.body.replace('"test"', '"tesT"');
    expect(await verifyGithubStyle(hook.secret!, tampered, req!.headers["x-service-signature"]!)).toBe(false);
    expect(() => new Webhook(hook.secret!).verify(tampered, req!.headers)).toThrow();
  });

  test("a secret the client chose signs too: octokit with the text, standardwebhooks with its bytes (raw format)", async () => {
    const t = await seedTenant(platform);
    const path = freshPath("own-secret");
    const secret = "my-own-signing-secret-ü-123";
    await subscribe(t, path, { secret });
    await fireTestEvent(platform.events, t.accountId, {});
    await withWorker(() => settled(t.accountId, 1));
    const [req] = receiver.at(path);
    expect(await verifyGithubStyle(secret, req!.body, req!.headers["x-service-signature"]!)).toBe(true);
    expect(new Webhook(new TextEncoder().encode(secret), { format: "raw" }).verify(req!.body, req!.headers)).toMatchObject({ event: "test" });
  });

  test("503 three times: attempts spaced ≥ 0.5 s then ≥ 2 s, same webhook-id, recorded failed with attempts=3", async () => {
    const t = await seedTenant(platform);
    const path = freshPath("down");
    receiver.on(path, () => new Response("down", { status: 503 }));
    await subscribe(t, path);
    await fireTestEvent(platform.events, t.accountId, {});
    const [row] = await withWorker(() => settled(t.accountId, 1));
    expect(row).toMatchObject({ status: "failed", attempts: 3, last_status: 503, last_error: "HTTP 503", delivered_at: null });
    const seen = receiver.at(path);
    expect(seen).toHaveLength(3);
    expect(new Set(seen.map((r) => r.headers["webhook-id"]))).toEqual(new Set([row!.id]));
    expect(seen[1]!.at - seen[0]!.at).toBeGreaterThanOrEqual(500);
    expect(seen[2]!.at - seen[1]!.at).toBeGreaterThanOrEqual(2000);
    // The account's log says it gave up (GET /v1/logs), without the URL.
    const warnings = (await listLogs(platform.db, t.accountId, { level: "warn" })).data;
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatchObject({
      level: "warn",
      source: "webhook",
      call_id: null,
      message: `Webhook ${row!.webhook_id}: test not delivered after 3 attempts: HTTP 503.`,
      data: { delivery_id: row!.id, webhook_id: row!.webhook_id, event: "test", attempts: 3, last_status: 503 },
    });
    expect(JSON.stringify(warnings[0])).not.toContain(path);
  });

  test("400 and 404 fail fast: one attempt, no retry", async () => {
    for (const code of [400, 404]) {
      const t = await seedTenant(platform);
      const path = freshPath(`client-${code}`);
      receiver.on(path, () => new Response("no", { status: code }));
      await subscribe(t, path);
      await fireTestEvent(platform.events, t.accountId, {});
      const [row] = await withWorker(async () => {
        const rows = await settled(t.accountId, 1);
        await Bun.sleep(700); // a retry, if one were wrongly scheduled, would come after 0.5 s
        return rows;
      });
      expect(row).toMatchObject({ status: "failed", attempts: 1, last_status: code, last_error: `HTTP ${code}` });
      expect(receiver.at(path)).toHaveLength(1);
      expect((await listLogs(platform.db, t.accountId, { level: "warn" })).data.map((l) => l.message)).toEqual([
        `Webhook ${row!.webhook_id}: test not delivered after 1 attempt: HTTP ${code}.`,
      ]);
    }
  });

  test("a redirect is not followed and fails fast", async () => {
    const t = await seedTenant(platform);
    const path = freshPath("moved");
    const target = freshPath("moved-target");
    receiver.on(path, () => new Response(null, { status: 302, headers: { location: receiver.url(target) } }));
    await subscribe(t, path);
    await fireTestEvent(platform.events, t.accountId, {});
    const [row] = await withWorker(() => settled(t.accountId, 1));
    expect(row).toMatchObject({ status: "failed", attempts: 1, last_status: 302 });
    expect(row!.last_error).toMatch(/redirect/);
    expect(receiver.at(target)).toHaveLength(0);
  });

  test("any reply is read to its end or cut off: small, large, and streamed without a length", async () => {
    const t = await seedTenant(platform);
    const big = "x".repeat(1024 * 1024);
    const chunk = new TextEncoder().encode(big.slice(0, 64 * 1024));
    const replies: Record<string, () => Response> = {
      small: () => new Response("ok"),
      large: () => new Response(big),
      // Endless: only the worker's cut-off (64 KiB read) ends it; the attempt's timeout is a minute,
      // longer than `settled` waits, so a worker reading replies to their end never settles here.
      streamed: () =>
        new Response(
          new ReadableStream({
            pull(controller) {
              controller.enqueue(chunk);
            },
          }),
        ),
      "large-503": () => new Response(big, { status: 503 }),
    };
    const paths = Object.keys(replies).map((label) => {
      const path = freshPath(`reply-${label}`);
      receiver.on(path, (_r, n) => (label === "large-503" && n > 1 ? new Response("ok") : replies[label]!()));
      return path;
    });
    for (const path of paths) await subscribe(t, path);
    for (let i = 0; i < 3; i++) await fireTestEvent(platform.events, t.accountId, {});
    const rows = await withWorker(() => settled(t.accountId, 12), { timeoutMs: 60_000 });
    expect(rows.filter((r) => r.status === "delivered")).toHaveLength(12);
    // Each (event, subscription) once, but the 503 one twice: its first reply was read and retried.
    for (const path of paths) expect(receiver.at(path)).toHaveLength(path.includes("large-503") ? 4 : 3);
  });

  test("503 then 200 is delivered on the second attempt; 429 is retried too", async () => {
    for (const code of [503, 429]) {
      const t = await seedTenant(platform);
      const path = freshPath(`flaky-${code}`);
      receiver.on(path, (_r, n) => new Response(null, { status: n === 1 ? code : 200 }));
      await subscribe(t, path);
      await fireTestEvent(platform.events, t.accountId, {});
      const [row] = await withWorker(() => settled(t.accountId, 1));
      expect(row).toMatchObject({ status: "delivered", attempts: 2, last_status: 200, last_error: null });
      expect(receiver.at(path)).toHaveLength(2);
      // Delivered in the end: nothing to warn about.
      expect((await listLogs(platform.db, t.accountId, { level: "warn" })).data).toEqual([]);
    }
  });

  test("an endpoint slower than the timeout is retried, then recorded as timed out", async () => {
    const t = await seedTenant(platform);
    const path = freshPath("slow");
    receiver.on(path, async () => {
      await Bun.sleep(1500);
      return new Response("late");
    });
    await subscribe(t, path);
    await fireTestEvent(platform.events, t.accountId, {});
    const [row] = await withWorker(() => settled(t.accountId, 1), { timeoutMs: 300 });
    expect(row).toMatchObject({ status: "failed", attempts: 3, last_status: null });
    expect(row!.last_error).toMatch(/timeout/);
  });

  test("a refused connection is a network failure: retried, then failed with a short reason and no URL", async () => {
    const t = await seedTenant(platform);
    const dead = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } });
    const port = dead.port;
    dead.stop(true);
    await createWebhook(platform.db, platform.secrets, t.accountId, { url: `https://127.0.0.1:${port}/secret-path?token=abc` }, { allowPrivate: true });
    await fireTestEvent(platform.events, t.accountId, {});
    const [row] = await withWorker(() => settled(t.accountId, 1));
    expect(row).toMatchObject({ status: "failed", attempts: 3, last_status: null, last_error: "connection refused" });
  });

  test("a host whose first address drops packets is delivered at its next address, within the attempt", async () => {
    const t = await seedTenant(platform);
    const path = freshPath("two-addresses");
    await subscribe(t, path);
    // localhost resolves to a dead address first (broken IPv6, a round-robin node down), then the receiver.
    const hole = await startBlackhole("127.0.0.2", receiver.port);
    try {
      await fireTestEvent(platform.events, t.accountId, {});
      const [row] = await withWorker(() => settled(t.accountId, 1), { resolveHost: async () => ["127.0.0.2", "127.0.0.1"] });
      expect(row).toMatchObject({ status: "delivered", attempts: 1 });
      expect(receiver.at(path)).toHaveLength(1);
    } finally {
      await hole.stop();
    }
  });

  test("each attempt re-checks the address: a loopback target is refused without any request when private targets are not allowed", async () => {
    const t = await seedTenant(platform);
    const path = freshPath("ssrf");
    await subscribe(t, path); // saved while allowed (or before the name changed)
    await fireTestEvent(platform.events, t.accountId, {});
    const [row] = await withWorker(() => settled(t.accountId, 1), { allowPrivate: false });
    // No request left: no attempt is counted, and the account's log says so.
    expect(row).toMatchObject({ status: "failed", attempts: 0, last_status: null });
    expect(row!.last_error).toMatch(/refused: the host resolves to an address that is not public: loopback/);
    expect(receiver.at(path)).toHaveLength(0);
    expect((await listLogs(platform.db, t.accountId, { level: "warn" })).data[0]!.message).toContain("not delivered without an attempt");
  });

  test("an event emitted in a rolled-back transaction is never planned nor delivered", async () => {
    const t = await seedTenant(platform);
    const path = freshPath("rollback");
    await subscribe(t, path);
    await expect(
      platform.events.transaction(async (_tx, emit) => {
        await emit(t.accountId, "test", { message: "rolled back", webhook_id: null, ts: Date.now() });
        throw new Error("abort the change");
      }),
    ).rejects.toThrow("abort the change");
    const kept = await fireTestEvent(platform.events, t.accountId, {});
    const rows = await withWorker(() => settled(t.accountId, 1));
    expect(rows.map((r) => r.event_id)).toEqual([platform.events.ids.decode(kept.event_id)!]);
    expect(receiver.at(path).map((r) => JSON.parse(r.body).data.message)).toEqual(["This is a test event from Parley."]);
  });

  test("planning: only active subscriptions receiving the event; a targeted test reaches its one subscription whatever its events", async () => {
    const t = await seedTenant(platform);
    const all = await subscribe(t, freshPath("all"));
    const ended = await subscribe(t, freshPath("ended"), { events: "call.ended" });
    const off = await subscribe(t, freshPath("off"));
    await platform.db.execute(sql`update webhook_subscription set status = 'disabled' where account_id = ${t.accountId} and id = ${off.id}`);
    // Written straight to the database: wait until the subscriptions' cache is told (the API does this itself).
    await platform.configCache.settle();

    const broad = await fireTestEvent(platform.events, t.accountId, {});
    expect(broad.deliveries).toBe(1);
    const targeted = await fireTestEvent(platform.events, t.accountId, { webhook_id: ended.id });
    expect(targeted.deliveries).toBe(1);
    await platform.events.emit(t.accountId, "call.ended", {
      callId: "call_1", direction: "inbound", answered: 1, billsec: 30, hangup_cause: "NORMAL_CLEARING", queue_id: null, agent_id: null, ts: Date.now(),
    });
    const rows = await deliveries(t.accountId);
    const got = rows.map((r) => `${r.event}→${r.webhook_id === all.id ? "all" : r.webhook_id === ended.id ? "ended" : "off"}`).sort();
    expect(got).toEqual(["call.ended→all", "call.ended→ended", "test→all", "test→ended"]);
    await expect(fireTestEvent(platform.events, t.accountId, { webhook_id: off.id })).rejects.toMatchObject({ status: 409 });
    await expect(fireTestEvent(platform.events, t.accountId, { webhook_id: "wh_NOPE" })).rejects.toMatchObject({ status: 404 });
  });

  test("a subscription removed before its delivery ran is recorded failed, with no request", async () => {
    const t = await seedTenant(platform);
    const path = freshPath("removed");
    const hook = await subscribe(t, path);
    await fireTestEvent(platform.events, t.accountId, {});
    await deleteWebhook(platform.db, platform.secrets, t.accountId, hook.id);
    const [row] = await withWorker(() => settled(t.accountId, 1));
    expect(row).toMatchObject({ status: "failed", attempts: 0, last_error: "the subscription was removed" });
    expect(receiver.at(path)).toHaveLength(0);
    expect((await listLogs(platform.db, t.accountId, { level: "warn" })).data.map((l) => l.message)).toEqual([
      `Webhook ${hook.id}: test not delivered without an attempt: the subscription was removed.`,
    ]);
  });

  for (const how of ["deleted", "disabled"] as const) {
    test(`a subscription ${how} while its claimed deliveries wait here gets no request once the change is seen`, async () => {
      const t = await seedTenant(platform);
      const path = freshPath(`gone-${how}`);
      receiver.on(path, async () => {
        await Bun.sleep(700);
        return new Response("ok");
      });
      const hook = await subscribe(t, path);
      for (let i = 0; i < 6; i++) await fireTestEvent(platform.events, t.accountId, {});
      const rows = await withWorker(
        async () => {
          await receiver.until(() => receiver.at(path).length >= 1, 5000, "the first request");
          if (how === "deleted") await deleteWebhook(platform.db, platform.secrets, t.accountId, hook.id);
          else await rawRows(platform.db, sql`update webhook_subscription set status = 'disabled' where account_id = ${t.accountId} and id = ${hook.id}`);
          // What the API does after every change (host-base.ts): this instance has heard of it.
          await platform.configCache.settle();
          return settled(t.accountId, 6);
        },
        { perSubscription: 1, timeoutMs: 3000 },
      );
      // The one in flight only: the next attempt (0.7 s later, within the claim's freshness interval)
      // finds the change.
      expect(receiver.at(path).length).toBe(1);
      const gone = rows.filter((r) => r.status === "failed");
      expect(gone.length).toBeGreaterThanOrEqual(4);
      for (const r of gone) expect(r).toMatchObject({ attempts: 0, last_error: how === "deleted" ? "the subscription was removed" : "the subscription is disabled" });
    });
  }

  test("a subscription removed between attempts: failed, the last attempt's status kept, no further request", async () => {
    const t = await seedTenant(platform);
    const path = freshPath("removed-later");
    receiver.on(path, () => new Response("down", { status: 503 }));
    const hook = await subscribe(t, path);
    await fireTestEvent(platform.events, t.accountId, {});
    const [row] = await withWorker(
      async () => {
        for (const deadline = Date.now() + 10_000; ; await Bun.sleep(20)) {
          const [r] = await deliveries(t.accountId);
          if (r?.status === "retrying") break;
          if (Date.now() > deadline) throw new Error("the first attempt was not recorded");
        }
        await deleteWebhook(platform.db, platform.secrets, t.accountId, hook.id);
        return settled(t.accountId, 1);
      },
      { retryDelaysMs: [1000, 1000] },
    );
    expect(row).toMatchObject({ status: "failed", attempts: 1, last_status: 503, last_error: "the subscription was removed" });
    expect(receiver.at(path)).toHaveLength(1);
    // The account log's line says the same as the delivery: the last attempt's status.
    const [line] = (await listLogs(platform.db, t.accountId, { level: "warn" })).data;
    expect(line).toMatchObject({ message: `Webhook ${hook.id}: test not delivered after 1 attempt: the subscription was removed.` });
    expect(line!.data).toMatchObject({ attempts: 1, last_status: 503 });
  });

  test("a claim left by a crashed worker is taken again after its lease, and delivered once", async () => {
    const t = await seedTenant(platform);
    const path = freshPath("lease");
    await subscribe(t, path);
    await fireTestEvent(platform.events, t.accountId, {});
    const leaseEnd = Date.now() + 1200;
    await platform.db.execute(sql`update webhook_delivery_due set claimed_until = ${leaseEnd}, claim_token = 'crashed' where account_id = ${t.accountId}`);
    const [row] = await withWorker(async () => {
      await Bun.sleep(500);
      expect(receiver.at(path)).toHaveLength(0); // still leased to the dead worker
      return settled(t.accountId, 1);
    });
    // The dead worker's claim counts as an attempt: its POST may have gone out.
    expect(row).toMatchObject({ status: "delivered", attempts: 2, last_error: null });
    // Its queue entry went with the recorded outcome.
    expect(await rawRows(platform.db, sql`select id from webhook_delivery_due where account_id = ${t.accountId}`)).toHaveLength(0);
    expect(receiver.at(path)).toHaveLength(1);
    expect(receiver.at(path)[0]!.at).toBeGreaterThanOrEqual(leaseEnd);
  });

  /**
   * A delivery whose `attempts` were recorded (503 each), then claimed by a worker that died with the
   * claim, leased until `leaseEnd`; the worker's outcome once another worker takes it, and its path.
   */
  async function afterLostClaim(label: string, attempts: number, leaseEnd: number): Promise<{ t: Tenant; path: string; row: WebhookDeliveryRow }> {
    const t = await seedTenant(platform);
    const path = freshPath(label);
    await subscribe(t, path);
    await fireTestEvent(platform.events, t.accountId, {});
    await platform.db.execute(sql`update webhook_delivery set status = 'retrying', attempts = ${attempts}, last_status = 503, last_error = 'HTTP 503' where account_id = ${t.accountId}`);
    await platform.db.execute(
      sql`update webhook_delivery_due set attempts = ${attempts}, claimed_until = ${leaseEnd}, claim_token = 'crashed' where account_id = ${t.accountId}`,
    );
    const [row] = await withWorker(() => settled(t.accountId, 1));
    return { t, path, row: row! };
  }

  test("a third attempt whose worker died before recording it is never followed by a fourth: failed, no request", async () => {
    // Two attempts recorded, then a third claimed by a worker that died with it.
    const { t, path, row } = await afterLostClaim("lost-third", 2, Date.now() + 300);
    expect(receiver.at(path)).toHaveLength(0);
    expect(row).toMatchObject({ status: "failed", attempts: 3, last_status: null });
    expect(row.last_error).toContain("outcome of its last attempt was lost");
    const [line] = (await listLogs(platform.db, t.accountId, { level: "warn" })).data;
    expect(line!.message).toBe(`Webhook ${row.webhook_id}: test not delivered after 3 attempts: the outcome of its last attempt was lost (the worker making it stopped or lost its claim).`);
  });

  test("claims lost again and again never count past the third attempt", async () => {
    // Three attempts counted, and the claim that was to record the delivery failed lost as well.
    const { path, row } = await afterLostClaim("lost-again", 3, Date.now() - 1);
    expect(receiver.at(path)).toHaveLength(0);
    expect(row).toMatchObject({ status: "failed", attempts: 3 });
  });

  test("two workers on one database deliver each (event, subscription) exactly once", async () => {
    const t = await seedTenant(platform);
    const paths = [freshPath("pair-a"), freshPath("pair-b")];
    for (const p of paths) await subscribe(t, p);
    const fired = 60;
    // A receiver that takes 20 ms a request, so neither worker can drain the backlog before the
    // other has started.
    for (const p of paths) receiver.on(p, async () => (await Bun.sleep(20), new Response("ok")));
    // Planned first, so both workers start on the same backlog of fired × 2 deliveries; each claims
    // at most 16 × its concurrency at a time.
    await Promise.all(Array.from({ length: fired }, () => fireTestEvent(platform.events, t.accountId, {})));
    const first = startDeliveryWorker(platform, { pollMs: 50, timeoutMs: 2000, concurrency: 2 });
    const second = startDeliveryWorker(platform, { pollMs: 50, timeoutMs: 2000, concurrency: 2 });
    try {
      await settled(t.accountId, fired * 2, 30_000);
    } finally {
      await Promise.all([first.stop(), second.stop()]);
    }
    // Both took part: no duplicate below is the claims' doing, not one worker doing everything.
    expect(first.stats().claimed).toBeGreaterThan(0);
    expect(second.stats().claimed).toBeGreaterThan(0);
    expect(first.stats().claimed + second.stats().claimed).toBe(fired * 2);
    for (const p of paths) {
      const ids = receiver.at(p).map((r) => r.headers["webhook-id"]);
      expect(ids).toHaveLength(fired);
      expect(new Set(ids).size).toBe(fired);
    }
    const rows = await deliveries(t.accountId);
    expect(rows.filter((r) => r.status === "delivered" && r.attempts === 1)).toHaveLength(fired * 2);
  });

  test("under a backlog, outcomes are gathered into few exchanges (gatherMs), each delivery made and recorded once", async () => {
    const t = await seedTenant(platform);
    const paths = [freshPath("gather-a"), freshPath("gather-b")];
    for (const p of paths) await subscribe(t, p);
    const fired = 500;
    // Planned before any worker runs: the worker starts with a backlog of fired × 2.
    await platform.events.transaction(async (_tx, emit) => {
      for (let i = 0; i < fired; i++) await emit(t.accountId, "test", { message: `backlog ${i}`, ts: Date.now(), webhook_id: null });
    });
    const worker = startDeliveryWorker(platform, { pollMs: 100, concurrency: 4, gatherMs: 1000 });
    let stats: ReturnType<typeof worker.stats>;
    try {
      await settled(t.accountId, fired * 2, 30_000);
      stats = worker.stats();
    } finally {
      await worker.stop();
    }
    expect(stats.recorded).toBe(fired * 2);
    expect(stats.claimed).toBe(fired * 2);
    // Each exchange waits while the buffer (16 jobs a slot) drains to two rounds, so it records
    // ~50 (20–25 exchanges here); back to back (gatherMs 0) a few each (PGlite: 260 exchanges; PostgreSQL: 36).
    expect(stats.exchanges).toBeLessThanOrEqual((fired * 2) / 30);
    for (const p of paths) {
      const ids = receiver.at(p).map((r) => r.headers["webhook-id"]);
      expect(ids).toHaveLength(fired);
      expect(new Set(ids).size).toBe(fired);
    }
  });

  test("a slow endpoint does not hold up another subscription (per-subscription concurrency)", async () => {
    const t = await seedTenant(platform);
    const slow = freshPath("per-sub-slow");
    const fast = freshPath("per-sub-fast");
    const release = holdRequests([slow]);
    await subscribe(t, slow);
    await subscribe(t, fast);
    for (let i = 0; i < 10; i++) await fireTestEvent(platform.events, t.accountId, {});
    await withWorker(
      async () => {
        // Every fast delivery completes while all slow ones are still stuck at the receiver.
        await receiver.until(() => receiver.at(fast).length === 10, 10_000, "fast deliveries");
        expect(receiver.at(slow).length).toBeLessThanOrEqual(2);
        release();
        await settled(t.accountId, 20);
      },
      { concurrency: 4, perSubscription: 2, timeoutMs: 10_000 },
    );
    expect(receiver.at(slow)).toHaveLength(10);
  });

  test("one subscription's backlog does not fill the claims ahead of another's newer delivery", async () => {
    const t = await seedTenant(platform);
    const slow = freshPath("backlog-slow");
    const fast = freshPath("backlog-fast");
    const release = holdRequests([slow]);
    const a = await subscribe(t, slow);
    // More than the worker holds in all (16 per slot: 64): oldest first across subscriptions, one
    // claim took them all and the newer delivery waited for the whole backlog.
    for (let i = 0; i < 100; i++) await fireTestEvent(platform.events, t.accountId, { webhook_id: a.id });
    const b = await subscribe(t, fast);
    await fireTestEvent(platform.events, t.accountId, { webhook_id: b.id });
    await withWorker(
      async () => {
        await receiver.until(() => receiver.at(fast).length === 1, 10_000, "the other subscription's delivery");
        expect(receiver.at(slow).length).toBeLessThanOrEqual(2);
        release();
        await settled(t.accountId, 101, 30_000);
      },
      { concurrency: 4, perSubscription: 2, timeoutMs: 10_000 },
    );
    expect(receiver.at(slow)).toHaveLength(100);
  }, 60_000);

  test("endpoints that hold every slot do not make another subscription wait for its first attempt", async () => {
    const t = await seedTenant(platform);
    const slowPaths = [freshPath("slots-slow"), freshPath("slots-slow"), freshPath("slots-slow")];
    const release = holdRequests(slowPaths);
    for (const path of slowPaths) {
      const w = await subscribe(t, path);
      for (let i = 0; i < 5; i++) await fireTestEvent(platform.events, t.accountId, { webhook_id: w.id });
    }
    const fast = freshPath("slots-fast");
    const w = await subscribe(t, fast);
    await fireTestEvent(platform.events, t.accountId, { webhook_id: w.id });
    await withWorker(
      async () => {
        // Two slow subscriptions take the 4 slots (2 each); the third and the fast one start one each beyond them.
        await receiver.until(() => receiver.at(fast).length === 1, 10_000, "the fast subscription's delivery");
        expect(slowPaths.map((p) => receiver.at(p).length).reduce((x, y) => x + y, 0)).toBeLessThanOrEqual(5);
        release();
        await settled(t.accountId, 16, 30_000);
      },
      { concurrency: 4, perSubscription: 2, timeoutMs: 10_000 },
    );
    for (const path of slowPaths) expect(receiver.at(path)).toHaveLength(5);
  }, 60_000);

  test("a slow endpoint's jobs are not claimed so far ahead that their lease runs out before their attempt", async () => {
    const t = await seedTenant(platform);
    const path = freshPath("paced");
    receiver.on(path, async () => (await Bun.sleep(200), new Response("ok")));
    await subscribe(t, path);
    for (let i = 0; i < 12; i++) await fireTestEvent(platform.events, t.accountId, {});
    // One attempt at a time, 200 ms each; a job may wait 1 s for its attempt (a 2.4 s lease, less
    // the 0.4 s timeout and a second). Holding 16 (a slot's buffer), the 6th onwards were left to
    // their lease and claimed again after it (18 claims).
    const worker = startDeliveryWorker(platform, { pollMs: 100, timeoutMs: 400, leaseMs: 2400, concurrency: 1, perSubscription: 1 });
    try {
      await settled(t.accountId, 12, 30_000);
    } finally {
      await worker.stop();
    }
    expect(worker.stats().claimed).toBe(12);
    expect(receiver.at(path)).toHaveLength(12);
    // Claims given back unattempted count nothing.
    expect((await deliveries(t.accountId)).map((d) => d.attempts)).toEqual(Array(12).fill(1));
  }, 60_000);

  test("an attempt whose reads before the POST took so long that the POST could outlive the claim is left to the next claim: delivered once", async () => {
    const t = await seedTenant(platform);
    const path = freshPath("slow-reads");
    receiver.on(path, async () => (await Bun.sleep(350), new Response("ok")));
    await subscribe(t, path, { secret: "whsec_" + Buffer.from("k".repeat(32)).toString("base64") });
    await fireTestEvent(platform.events, t.accountId, {});
    // The first reveal of the signing secret takes 2.2 s of the 2.4 s lease: a POST then (up to 0.4 s)
    // would end after the claim, when the delivery is claimed and sent again.
    const reveal = platform.secrets.reveal;
    let slow = true;
    platform.secrets.reveal = async (...args: Parameters<typeof reveal>) => {
      if (slow) {
        slow = false;
        await Bun.sleep(2200);
      }
      return reveal.apply(platform.secrets, args);
    };
    const worker = startDeliveryWorker(platform, { pollMs: 100, timeoutMs: 400, leaseMs: 2400, concurrency: 1, perSubscription: 1, secretCacheMs: 0 });
    try {
      await settled(t.accountId, 1, 30_000);
      await Bun.sleep(1000);
    } finally {
      await worker.stop();
      platform.secrets.reveal = reveal;
    }
    expect(receiver.at(path)).toHaveLength(1);
    expect((await deliveries(t.accountId)).map((d) => [d.status, d.attempts])).toEqual([["delivered", 1]]);
  }, 60_000);

  test("a slot one subscription frees is offered to another subscription first", async () => {
    const t = await seedTenant(platform);
    const paths = { first: freshPath("turn-first"), second: freshPath("turn-second") };
    const gates: Record<string, Array<() => void>> = { first: [], second: [] };
    for (const name of ["first", "second"] as const) {
      receiver.on(paths[name], async () => {
        await new Promise<void>((resolve) => gates[name]!.push(resolve));
        return new Response("ok");
      });
    }
    const count = (name: "first" | "second") => receiver.at(paths[name]).length;
    const a = await subscribe(t, paths.first);
    for (let i = 0; i < 4; i++) await fireTestEvent(platform.events, t.accountId, { webhook_id: a.id });
    await subscribe(t, paths.second);
    for (let i = 0; i < 4; i++) await fireTestEvent(platform.events, t.accountId, {});
    await withWorker(
      async () => {
        // One subscription takes both slots (the claim's order says which: the first, as a rule);
        // the other, with nothing in flight, starts one beyond them. Nothing more starts.
        await receiver.until(() => count("first") + count("second") === 3, 5000, "both slots taken, and one more");
        const [busy, other] = count("first") === 2 ? (["first", "second"] as const) : (["second", "first"] as const);
        expect([count(busy), count(other)]).toEqual([2, 1]);
        // Both attempts of the busy one end: one attempt in flight, a slot free. It goes to the other
        // subscription first (the busy one was served last); then the busy one, with nothing in
        // flight, starts one beyond the slots. Served in the walk's order instead, the busy one would
        // have taken both (4 and 1).
        for (const release of gates[busy]!.splice(0)) release();
        await receiver.until(() => count("first") + count("second") === 5, 5000, "the freed slot taken");
        expect([count(busy), count(other)]).toEqual([3, 2]);
        for (let n = 0; n < 100 && count("first") + count("second") < 12; n++) {
          for (const name of ["first", "second"] as const) for (const release of gates[name]!.splice(0)) release();
          await Bun.sleep(20);
        }
        for (const name of ["first", "second"] as const) for (const release of gates[name]!.splice(0)) release();
        await settled(t.accountId, 12);
      },
      { concurrency: 2, perSubscription: 2, timeoutMs: 5000 },
    );
  }, 30_000);

  test("retention: finished deliveries older than 7 days are removed; newer ones and those still to attempt stay", async () => {
    const t = await seedTenant(platform);
    const path = freshPath("retention");
    const hook = await subscribe(t, path);
    const day = 86400;
    const now = Math.floor(Date.now() / 1000);
    const rows = [
      { id: "whd_OLDDELIVERED0000000000000", status: "delivered", created: now - 8 * day, delivered_at: now - 8 * day },
      { id: "whd_NEWDELIVERED0000000000000", status: "delivered", created: now - 6 * day, delivered_at: now - 6 * day },
      { id: "whd_OLDFAILED0000000000000000", status: "failed", created: now - 9 * day, delivered_at: null },
      { id: "whd_NEWFAILED0000000000000000", status: "failed", created: now - day, delivered_at: null },
      { id: "whd_OLDRETRYING00000000000000", status: "retrying", created: now - 9 * day, delivered_at: null },
    ];
    for (const [i, r] of rows.entries()) {
      await platform.db.execute(sql`insert into webhook_delivery (account_id, id, webhook_id, event_id, event, status, attempts, created_at, updated_at, delivered_at)
        values (${t.accountId}, ${r.id}, ${hook.id}, ${-1 - i}, 'test', ${r.status}, 1, ${r.created}, ${r.created}, ${r.delivered_at})`);
    }
    // Still to attempt (its queue entry is far in the future, so no worker here takes it).
    await platform.db.execute(sql`insert into webhook_delivery_due (account_id, id, webhook_id, event_id, attempts, next_attempt_at)
      values (${t.accountId}, 'whd_OLDRETRYING00000000000000', ${hook.id}, -5, 1, ${Date.now() + 365 * day * 1000})`);
    expect(await sweepFinishedWebhooks(platform)).toBeGreaterThanOrEqual(2);
    const left = await rawRows<{ id: string }>(platform.db, sql`select id from webhook_delivery where account_id = ${t.accountId} order by id`);
    expect(left.map((r) => r.id).sort()).toEqual(["whd_NEWDELIVERED0000000000000", "whd_NEWFAILED0000000000000000", "whd_OLDRETRYING00000000000000"]);
    await platform.db.execute(sql`delete from webhook_delivery_due where account_id = ${t.accountId}`);
  });
  test("one exchange records delivered outcomes (columns) and retries and failures (JSON) together, each only under its own claim", async () => {
    const t = await seedTenant(platform);
    // No worker runs here: the test claims and records by hand.
    const hook = await subscribe(t, freshPath("exchange"));
    for (let i = 0; i < 4; i++) await fireTestEvent(platform.events, t.accountId, {});
    const now = Date.now();
    const claim = await exchangeDeliveries(platform.database, {
      records: [], now, limit: 1000, leaseUntil: now + 60_000, token: "claim-a", skipWebhooks: [], caps: {}, defaultCap: 1000, maxAttempts: 3,
    });
    // Rows of other tests' accounts due meanwhile are given back untouched (a lease given back counts no attempt).
    await releaseClaims(platform.db, claim.claimed.filter((d) => d.account_id !== t.accountId).map((d) => ({ account_id: d.account_id, id: d.id, token: "claim-a" })));
    const mine = claim.claimed.filter((d) => d.account_id === t.accountId);
    expect(mine).toHaveLength(4);
    expect(mine.every((d) => d.webhook_id === hook.id && d.event?.name === "test")).toBe(true);
    const [delivered, retrying, failed, lost] = mine.map((d) => d.id) as [string, string, string, string];
    const at = Date.now();
    const base = { account_id: t.accountId, token: "claim-a", updated_at: Math.floor(at / 1000) };
    const records: AttemptRecord[] = [
      { ...base, id: delivered, status: "delivered", attempts: 1, last_status: 204, last_error: null, next_attempt_at: at, delivered_at: Math.floor(at / 1000) },
      { ...base, id: retrying, status: "retrying", attempts: 1, last_status: 503, last_error: 'HTTP 503, "busy"', next_attempt_at: at + 500, delivered_at: null },
      {
        ...base, id: failed, status: "failed", attempts: 1, last_status: 410, last_error: "HTTP 410", next_attempt_at: at, delivered_at: null,
        log: { id: `log_${Math.random().toString(36).slice(2)}`, message: "given up", data: { delivery_id: failed, last_status: 410 } },
      },
      // Made under a claim this row no longer has: not recorded.
      { ...base, id: lost, token: "claim-b", status: "delivered", attempts: 1, last_status: 200, last_error: null, next_attempt_at: at, delivered_at: Math.floor(at / 1000) },
    ];
    const result = await exchangeDeliveries(platform.database, {
      records, now: at, limit: 0, leaseUntil: 0, token: "claim-c", skipWebhooks: [], caps: {}, defaultCap: 10, maxAttempts: 3,
    });
    expect([...result.recorded].sort()).toEqual([delivered, retrying, failed].sort());
    const rows = new Map((await deliveries(t.accountId)).map((r) => [r.id, r]));
    expect(rows.get(delivered)).toMatchObject({ status: "delivered", attempts: 1, last_status: 204, last_error: null, delivered_at: Math.floor(at / 1000) });
    expect(rows.get(retrying)).toMatchObject({ status: "retrying", attempts: 1, last_status: 503, last_error: 'HTTP 503, "busy"' });
    expect(rows.get(failed)).toMatchObject({ status: "failed", attempts: 1, last_status: 410, last_error: "HTTP 410" });
    expect(rows.get(lost)).toMatchObject({ status: "pending", attempts: 0 });
    const due = await rawRows<{ id: string; next_attempt_at: number | string; claim_token: string | null }>(
      platform.db,
      sql`select id, next_attempt_at, claim_token from webhook_delivery_due where account_id = ${t.accountId} order by id`,
    );
    expect(due.map((d) => d.id).sort()).toEqual([retrying, lost].sort());
    expect(due.find((d) => d.id === retrying)).toMatchObject({ claim_token: null });
    expect(Number(due.find((d) => d.id === retrying)!.next_attempt_at)).toBe(at + 500);
    expect(due.find((d) => d.id === lost)).toMatchObject({ claim_token: "claim-a" });
    const logged = await rawRows<{ message: string }>(platform.db, sql`select message from account_log where account_id = ${t.accountId} and source = 'webhook' and level = 'warn'`);
    expect(logged.map((l) => l.message)).toEqual(["given up"]);
    await platform.db.execute(sql`delete from webhook_delivery_due where account_id = ${t.accountId}`);
  });
});

describe("outcomeColumns", () => {
  const delivered: AttemptRecord = {
    account_id: "acc_01KBX4ZJ0Y2V8N3Q5R7T9W1Y3Z", id: "whd_01KBX4ZJ0Y2V8N3Q5R7T9W1Y40", token: "5f0c6d1e-8a4b-4f5e-9d3c-2b1a0f9e8d7c",
    status: "delivered", attempts: 2, last_status: 200, last_error: null, next_attempt_at: 1764300000123, updated_at: 1764300000, delivered_at: 1764300000,
  };

  test("a delivered outcome with nothing more to say goes as comma-separated columns", () => {
    const { plain, others } = outcomeColumns([delivered, { ...delivered, id: "whd_2", attempts: 1 }]);
    expect(plain).toEqual([
      `${delivered.account_id},${delivered.account_id}`, `${delivered.id},whd_2`, `${delivered.token},${delivered.token}`,
      "2,1", "200,200", "1764300000123,1764300000123", "1764300000,1764300000", "1764300000,1764300000",
    ]);
    expect(others).toBe("[]");
  });

  test("retries, failures, and anything a comma-separated list could not carry go as JSON", () => {
    const odd = { ...delivered, id: "whd_a,b" };
    const retry: AttemptRecord = { ...delivered, status: "retrying", last_status: 503, last_error: "HTTP 503", delivered_at: null };
    const { plain, others } = outcomeColumns([odd, retry]);
    expect(plain.every((column) => column === "")).toBe(true);
    const rows = JSON.parse(others) as unknown[][];
    expect(rows.map((r) => [r[1], r[3], r[6]])).toEqual([["whd_a,b", "delivered", null], [delivered.id, "retrying", "HTTP 503"]]);
  });
});

describe("standardWebhookKey", () => {
  test("a whsec_ base64 secret gives its decoded bytes, exactly like the standardwebhooks library", () => {
    for (const bytes of [24, 32, 33]) {
      const raw = crypto.getRandomValues(new Uint8Array(bytes));
      const secret = `whsec_${Buffer.from(raw).toString("base64")}`;
      expect(Buffer.from(standardWebhookKey(secret)).equals(Buffer.from(raw))).toBe(true);
    }
  });

  test("anything else is its UTF-8 bytes (what receivers pass with format: raw)", () => {
    for (const secret of ["plain-secret-1234567", "whsec_not*base64!!!!", "whsec_abc-_def"]) {
      expect(Buffer.from(standardWebhookKey(secret)).toString("utf8")).toBe(secret);
    }
  });
});

describe("webhookEndpoint", () => {
  test("takes port, path and query from the URL; the Host header and SNI name stay the URL's", () => {
    const named = webhookEndpoint("https://hooks.example.com:8443/in/v1?x=1&y=%20");
    expect(named).toEqual({ host: "hooks.example.com", hostHeader: "hooks.example.com:8443", port: 8443, path: "/in/v1?x=1&y=%20", serverName: "hooks.example.com" });
  });

  test("the default port is 443 and left out of Host; an IPv6 URL host loses its brackets for DNS and SNI", () => {
    expect(webhookEndpoint("https://example.com")).toEqual({ host: "example.com", hostHeader: "example.com", port: 443, path: "/", serverName: "example.com" });
    expect(webhookEndpoint("https://[2001:db8::2]/hook")).toEqual({ host: "2001:db8::2", hostHeader: "[2001:db8::2]", port: 443, path: "/hook", serverName: null });
  });
});
