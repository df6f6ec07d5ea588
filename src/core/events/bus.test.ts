/** The event bus's live fan-out: what one transaction emits reaches subscribers whole and in order. */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Platform } from "../platform.ts";
import { seedTenant, storeKind, testPlatform } from "../../../test/support/platform.ts";
import type { PlatformEvent } from "./bus.ts";

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
