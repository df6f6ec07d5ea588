/** CAC acquisition: all or none, and nothing left taken when a step fails. */
import { describe, expect, test } from "bun:test";
import { createMemoryLiveStore } from "../live/memory-live-store.ts";
import type { LiveStore } from "../live/live-store.ts";
import type { CacSlot } from "../routing/route-types.ts";
import { acquireSlots, cacSnapshot } from "./cac.service.ts";

const TTL = 60_000;
const slots = (userLimit: number): CacSlot[] => [
  { level: "account_out", id: "acc_cac", limit: 10 },
  { level: "user", id: "us_cac", limit: userLimit },
];

describe("acquireSlots", () => {
  test("takes every slot or none, and reports the slot at its limit", async () => {
    const live = createMemoryLiveStore();
    expect(await acquireSlots(live, "acc_cac", "call_1", slots(1), TTL)).toEqual({ ok: true });
    const refused = await acquireSlots(live, "acc_cac", "call_2", slots(1), TTL);
    expect(refused).toEqual({ ok: false, refused: slots(1)[1]!, active: 1 });
    // The account slot was not taken by the refused call.
    const snapshot = await cacSnapshot(live, "acc_cac");
    expect(snapshot.map((c) => [c.level, c.active, c.call_ids])).toEqual([
      ["account_out", 1, ["call_1"]],
      ["user", 1, ["call_1"]],
    ]);
    await live.close();
  });

  test("a failed bookkeeping write gives back the slots it took, and the error surfaces", async () => {
    const store = createMemoryLiveStore();
    const failing = new Proxy(store, {
      get: (target, prop) => (prop === "expire" ? () => Promise.reject(new Error("live store down")) : Reflect.get(target, prop)),
    }) as LiveStore;
    await expect(acquireSlots(failing, "acc_cac", "call_1", slots(1), TTL)).rejects.toThrow("live store down");
    // Nothing is held: the next call gets the user's only slot.
    expect(await acquireSlots(store, "acc_cac", "call_2", slots(1), TTL)).toEqual({ ok: true });
    await store.close();
  });
});
