/** The event bus's live fan-out: what one transaction emits reaches subscribers whole and in order. */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { failingPublishes } from "../../../test/support/live.ts";
import type { Platform } from "../platform.ts";
import { seedTenant, storeKind, testPlatform } from "../../../test/support/platform.ts";
import { sql } from "drizzle-orm";
import { createEventBus, type PlatformEvent } from "./bus.ts";

let platform: Platform;

beforeAll(async () => {
  platform = await testPlatform();
});
afterAll(() => platform.close());

describe(`event bus: live fan-out [${storeKind}]`, () => {
  test("the events of one transaction reach a subscriber of their account in order, one account's not another's", async () => {
    const a = await seedTenant(platform);
    const b = await seedTenant(platform);
    const gotA: PlatformEvent[] = [];
    const gotB: PlatformEvent[] = [];
    const stopA = await platform.events.subscribe(a.accountId, (e) => gotA.push(e));
    const stopB = await platform.events.subscribe(b.accountId, (e) => gotB.push(e));
    try {
      const test = (accountId: string, message: string) => ({ accountId, event: "test" as const, data: { message, webhook_id: null, ts: Date.now() } });
      // Three events of A and one of B in one transaction (A's are published together), then one more of A alone.
      const emitted = await platform.events.transaction((_tx, _emit, emitMany) => emitMany([test(a.accountId, "1"), test(b.accountId, "b"), test(a.accountId, "2"), test(a.accountId, "3")]));
      const alone = await platform.events.emit(a.accountId, "test", { message: "4", webhook_id: null, ts: Date.now() });
      const deadline = Date.now() + 5000;
      while ((gotA.length < 4 || gotB.length < 1) && Date.now() < deadline) await Bun.sleep(10);
      expect(gotA.map((e) => (e.data as { message: string }).message)).toEqual(["1", "2", "3", "4"]);
      expect(gotA.map((e) => e.id)).toEqual([...emitted.filter((e) => e.account_id === a.accountId).map((e) => e.id), alone.id]);
      expect(gotB.map((e) => (e.data as { message: string }).message)).toEqual(["b"]);
      expect(gotB[0]).toEqual(emitted[1]!);
    } finally {
      await stopA();
      await stopB();
    }
  });
});

describe(`event bus: resume [${storeKind}]`, () => {
  // PostgreSQL: another transaction stays open meanwhile (PGlite runs one at a time).
  test.skipIf(!storeKind.startsWith("postgres"))("a long-open transaction elsewhere does not make events committed long before the resume point count as late", async () => {
    const t = await seedTenant(platform);
    const message = (e: PlatformEvent) => (e.data as { message: string }).message;
    const emit = (text: string) => platform.events.emit(t.accountId, "test", { message: text, webhook_id: null, ts: Date.now() });
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    let opened!: () => void;
    const open = new Promise<void>((resolve) => (opened = resolve));
    // A write transaction (it holds a transaction id) that touches no event and stays open.
    const held = platform.db.transaction(async (tx) => {
      await tx.execute(sql`select pg_current_xact_id()`);
      opened();
      await gate;
    });
    try {
      await open;
      for (let i = 0; i < 20; i++) await emit(`seen ${i}`);
      const last = await emit("last seen");
      for (let i = 0; i < 3; i++) await emit(`missed ${i}`);
      // Exactly the events after the resume point: none of those committed before it came back.
      expect((await platform.events.since(t.accountId, last.id, 100)).map(message)).toEqual(["missed 0", "missed 1", "missed 2"]);
    } finally {
      release();
      await held;
    }
  });
});

describe(`event bus: unpublished events [${storeKind}]`, () => {
  test("when a publish fails, the account's subscribers (every instance's) are told of the gap once publishing works again, so they resume", async () => {
    const a = await seedTenant(platform);
    // The live store as one instance sees it when its own connection fails: publishing throws (twice).
    const flaky = failingPublishes(platform.live, 2);
    const bus = createEventBus({ db: platform.db, live: flaky, log: platform.log, ids: platform.events.ids });
    const got: PlatformEvent[] = [];
    let gaps = 0;
    let from: number | undefined;
    // Another instance's subscriber: on the store itself.
    const stop = await platform.events.subscribe(a.accountId, (e) => got.push(e), (first) => {
      gaps++;
      from = first;
    });
    try {
      const lost = await bus.emit(a.accountId, "test", { message: "lost", webhook_id: null, ts: Date.now() });
      // The event never reached it; the notice does, after the notice's own first try failed too.
      const deadline = Date.now() + 5000;
      while (gaps === 0 && Date.now() < deadline) await Bun.sleep(20);
      expect(gaps).toBe(1);
      // The notice names the first event that was not published: subscribers replay from it.
      expect(from).toBe(lost.id);
      expect(got).toEqual([]);
      // Published again normally: events flow, no more notices.
      await bus.emit(a.accountId, "test", { message: "later", webhook_id: null, ts: Date.now() });
      const until = Date.now() + 5000;
      while (got.length === 0 && Date.now() < until) await Bun.sleep(20);
      expect(got.map((e) => (e.data as { message: string }).message)).toEqual(["later"]);
      await Bun.sleep(1200);
      expect(gaps).toBe(1);
    } finally {
      await stop();
    }
  });
});
