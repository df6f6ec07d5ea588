/** The event bus's live fan-out: what one transaction emits reaches subscribers whole and in order. */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { failingPublishes, heldPublishes } from "../../../test/support/live.ts";
import type { Platform } from "../platform.ts";
import { seedTenant, storeKind, testPlatform } from "../../../test/support/platform.ts";
import { sql } from "drizzle-orm";
import { createEventBus, type EventBus, type PlatformEvent } from "./bus.ts";

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
  test("when an instance's publish fails, the instances streaming the account publish the event from the table, once", async () => {
    const a = await seedTenant(platform);
    // The live store as one instance sees it when its own connection fails: publishing throws.
    const flaky = failingPublishes(platform.live, 1);
    const bus = createEventBus({ db: platform.db, live: flaky, log: platform.log, ids: platform.events.ids });
    // Another instance with a socket of the account, repairing often (the default is every 2 s).
    const watcher = createEventBus({ db: platform.db, live: platform.live, log: platform.log, ids: platform.events.ids, repair: { intervalMs: 100, graceMs: 150 } });
    const got: PlatformEvent[] = [];
    const stop = await watcher.subscribe(a.accountId, (e) => got.push(e));
    try {
      await Bun.sleep(250);
      const lost = await bus.emit(a.accountId, "test", { message: "lost", webhook_id: null, ts: Date.now() });
      const deadline = Date.now() + 5000;
      while (got.length === 0 && Date.now() < deadline) await Bun.sleep(20);
      expect(got.map((e) => e.id)).toEqual([lost.id]);
      // Published again normally: events flow, the lost one is not sent again.
      const later = await bus.emit(a.accountId, "test", { message: "later", webhook_id: null, ts: Date.now() });
      const until = Date.now() + 5000;
      while (got.length < 2 && Date.now() < until) await Bun.sleep(20);
      await Bun.sleep(500);
      expect(got.map((e) => e.id)).toEqual([lost.id, later.id]);
    } finally {
      await stop();
    }
  });
});

describe(`event bus: publication order [${storeKind}]`, () => {
  const message = (e: PlatformEvent) => (e.data as { message: string }).message;
  const emitOn = (bus: EventBus, accountId: string, text: string) => bus.emit(accountId, "test", { message: text, webhook_id: null, ts: Date.now() });

  test("an event whose publish came after a later event's is replayed on a resume from the later one", async () => {
    const t = await seedTenant(platform);
    const got: PlatformEvent[] = [];
    const stop = await platform.events.subscribe(t.accountId, (e) => got.push(e));
    try {
      // Another instance commits first and publishes last (a slow publish).
      const slowInstance = heldPublishes(platform.live);
      const other = createEventBus({ db: platform.db, live: slowInstance.live, log: platform.log, ids: platform.events.ids });
      const slow = await emitOn(other, t.accountId, "slow");
      const fast = await emitOn(platform.events, t.accountId, "fast");
      expect(fast.id).toBeGreaterThan(slow.id);
      const until = async (n: number) => {
        const deadline = Date.now() + 5000;
        while (got.length < n && Date.now() < deadline) await Bun.sleep(10);
      };
      await until(1);
      slowInstance.release();
      await until(2);
      // Live, the smaller id came second.
      expect(got.map(message)).toEqual(["fast", "slow"]);
      // A client that saw "fast" and left missed "slow": the resume sends it. Before, nothing.
      expect((await platform.events.since(t.accountId, fast.id, 100)).map(message)).toEqual(["slow"]);
      // From "slow" (the last it got), nothing was missed but "fast" comes again (an id after it).
      expect((await platform.events.since(t.accountId, slow.id, 100)).map(message)).toEqual(["fast"]);
      // The name filter holds for these too.
      expect(await platform.events.since(t.accountId, fast.id, 100, ["call.ended"])).toEqual([]);
    } finally {
      await stop();
    }
  });

  test("an event never published (its instance stopped between commit and publish) is replayed on a resume from a later one", async () => {
    const t = await seedTenant(platform);
    const got: PlatformEvent[] = [];
    const stop = await platform.events.subscribe(t.accountId, (e) => got.push(e));
    try {
      const first = await emitOn(platform.events, t.accountId, "first");
      const stopped = createEventBus({ db: platform.db, live: heldPublishes(platform.live).live, log: platform.log, ids: platform.events.ids });
      await emitOn(stopped, t.accountId, "never published");
      const later = await emitOn(platform.events, t.accountId, "later");
      const deadline = Date.now() + 5000;
      while (got.length < 2 && Date.now() < deadline) await Bun.sleep(10);
      expect(got.map(message)).toEqual(["first", "later"]);
      expect((await platform.events.since(t.accountId, later.id, 100)).map(message)).toEqual(["never published"]);
      // "first" was published before "later": a client that saw "later" had it.
      expect((await platform.events.since(t.accountId, first.id, 100)).map(message)).toEqual(["never published", "later"]);
    } finally {
      await stop();
    }
  });

  test("the repair publishes an event never published to the subscribers that stay connected, once", async () => {
    const t = await seedTenant(platform);
    // This instance, repairing often (the default is every 2 s).
    const watcher = createEventBus({ db: platform.db, live: platform.live, log: platform.log, ids: platform.events.ids, repair: { intervalMs: 100, graceMs: 150 } });
    const got: PlatformEvent[] = [];
    const stop = await watcher.subscribe(t.accountId, (e) => got.push(e));
    // A second watching instance: the two repairs publish the event once between them.
    const second = createEventBus({ db: platform.db, live: platform.live, log: platform.log, ids: platform.events.ids, repair: { intervalMs: 100, graceMs: 150 } });
    const stopSecond = await second.subscribe(t.accountId, () => {});
    try {
      await Bun.sleep(250); // both have read the account once
      const before = await emitOn(platform.events, t.accountId, "before");
      const stopped = createEventBus({ db: platform.db, live: heldPublishes(platform.live).live, log: platform.log, ids: platform.events.ids });
      const lost = await emitOn(stopped, t.accountId, "never published");
      const after = await emitOn(platform.events, t.accountId, "after");
      const deadline = Date.now() + 5000;
      while (got.length < 3 && Date.now() < deadline) await Bun.sleep(20);
      await Bun.sleep(500);
      expect(got.map(message)).toEqual(["before", "after", "never published"]);
      expect(got.map((e) => e.id)).toEqual([before.id, after.id, lost.id]);
      // Published now: a resume from "after" sends it (it came after), from itself nothing before it.
      expect((await platform.events.since(t.accountId, after.id, 100)).map(message)).toEqual(["never published"]);
      expect((await platform.events.since(t.accountId, lost.id, 100)).map(message)).toEqual(["after"]);
    } finally {
      await stop();
      await stopSecond();
    }
  });
});

describe(`event bus: the repair of unpublished events [${storeKind}]`, () => {
  const message = (e: PlatformEvent) => (e.data as { message: string }).message;
  const fastRepair = (batch?: number) =>
    createEventBus({ db: platform.db, live: platform.live, log: platform.log, ids: platform.events.ids, repair: { intervalMs: 100, graceMs: 150, ...(batch ? { batch } : {}) } });
  const stoppedInstance = () => createEventBus({ db: platform.db, live: heldPublishes(platform.live).live, log: platform.log, ids: platform.events.ids });
  async function until(done: () => boolean, ms = 5000): Promise<void> {
    const deadline = Date.now() + ms;
    while (!done() && Date.now() < deadline) await Bun.sleep(20);
  }

  test("more unpublished events than a pass reads: later passes go on from where it stopped, and every one is published once", async () => {
    const t = await seedTenant(platform);
    const watcher = fastRepair(3);
    const got: PlatformEvent[] = [];
    const stop = await watcher.subscribe(t.accountId, (e) => got.push(e));
    try {
      await Bun.sleep(250);
      const stopped = stoppedInstance();
      const lost = await stopped.transaction((_tx, _emit, emitMany) =>
        emitMany(Array.from({ length: 10 }, (_, i) => ({ accountId: t.accountId, event: "test" as const, data: { message: `lost ${i}`, webhook_id: null, ts: Date.now() } }))),
      );
      await until(() => got.length >= 10);
      await Bun.sleep(400);
      expect(got.map((e) => e.id)).toEqual(lost.map((e) => e.id));
    } finally {
      await stop();
    }
  });

  test.skipIf(!storeKind.startsWith("postgres"))("an unpublished event of a transaction that took its id before the account was watched and committed after is published", async () => {
    const t = await seedTenant(platform);
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    let written!: (id: number) => void;
    const taken = new Promise<number>((resolve) => (written = resolve));
    const slow = stoppedInstance().transaction(async (_tx, emit) => {
      written((await emit(t.accountId, "test", { message: "early", webhook_id: null, ts: Date.now() })).id);
      await gate;
    });
    const earlyId = await taken;
    await platform.events.emit(t.accountId, "test", { message: "newer", webhook_id: null, ts: Date.now() });
    const watcher = fastRepair();
    const got: PlatformEvent[] = [];
    const stop = await watcher.subscribe(t.accountId, (e) => got.push(e));
    try {
      await Bun.sleep(300); // the first passes have read the account
      release();
      await slow;
      await until(() => got.some((e) => e.id === earlyId));
      await Bun.sleep(300);
      // Once. Before, a newly watched account's late commits were read only from its newest id on.
      expect(got.filter((e) => e.id === earlyId)).toHaveLength(1);
    } finally {
      release();
      await stop();
    }
  });

  // PostgreSQL: a transaction stays open across passes (PGlite runs one transaction at a time).
  test.skipIf(!storeKind.startsWith("postgres"))("an unpublished event of a transaction that took its id before a pass and committed after it is published", async () => {
    const t = await seedTenant(platform);
    const watcher = fastRepair();
    const got: PlatformEvent[] = [];
    const stop = await watcher.subscribe(t.accountId, (e) => got.push(e));
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    let written!: (id: number) => void;
    const taken = new Promise<number>((resolve) => (written = resolve));
    try {
      await Bun.sleep(250);
      // Its id first; it commits after a newer event was read by a pass; its publish never comes.
      const slow = stoppedInstance().transaction(async (_tx, emit) => {
        written((await emit(t.accountId, "test", { message: "late", webhook_id: null, ts: Date.now() })).id);
        await gate;
      });
      const lateId = await taken;
      const newer = await platform.events.emit(t.accountId, "test", { message: "newer", webhook_id: null, ts: Date.now() });
      expect(newer.id).toBeGreaterThan(lateId);
      await until(() => got.length >= 1);
      await Bun.sleep(300); // passes read past the late id
      release();
      await slow;
      await until(() => got.length >= 2);
      expect(got.map(message)).toEqual(["newer", "late"]);
      expect(got[1]!.id).toBe(lateId);
    } finally {
      release();
      await stop();
    }
  });
});
