/** CAC acquisition: all or none, recorded for snapshots in the same step, and nothing held when it fails. */
import { describe, expect, test } from "bun:test";
import { createMemoryLiveStore } from "../live/memory-live-store.ts";
import { accountKey } from "../live/live-store.ts";
import type { CacSlot } from "../routing/route-types.ts";
import { acquireSlots, cacSnapshot, releaseSlots, renewSlots, resetCac } from "./cac.service.ts";
import type { LiveStore } from "../live/live-store.ts";

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

  test("a snapshot shows each slot with the limit last asked for, a refused call's too", async () => {
    const live = createMemoryLiveStore();
    expect(await acquireSlots(live, "acc_cac", "call_1", slots(2), TTL)).toEqual({ ok: true });
    expect(await acquireSlots(live, "acc_cac", "call_2", slots(2), TTL)).toEqual({ ok: true });
    // The user's ceiling was lowered to 1 while two calls last: the snapshot says why the next is refused.
    expect(await acquireSlots(live, "acc_cac", "call_3", slots(1), TTL)).toEqual({ ok: false, refused: slots(1)[1]!, active: 2 });
    const user = (await cacSnapshot(live, "acc_cac")).find((c) => c.level === "user");
    expect(user).toEqual({ level: "user", id: "us_cac", limit: 1, active: 2, call_ids: ["call_1", "call_2"] });
    await live.close();
  });

  test("a call in and out through one trunk holds two of its channels: taken, listed, renewed and given back together", async () => {
    const live = createMemoryLiveStore();
    const trunk = (limit: number): CacSlot[] => [
      { level: "trunk", id: "trk_both", limit },
      { level: "account_out", id: "acc_cac", limit: 10 },
      { level: "trunk", id: "trk_both", limit, leg: "out" },
    ];
    expect(await acquireSlots(live, "acc_cac", "call_1", trunk(3), TTL)).toEqual({ ok: true });
    // One channel left: a call needing two is refused at its leg out, with nothing taken.
    expect(await acquireSlots(live, "acc_cac", "call_2", trunk(3), TTL)).toEqual({ ok: false, refused: trunk(3)[2]!, active: 3 });
    expect((await cacSnapshot(live, "acc_cac")).map((c) => [c.level, c.active, c.call_ids])).toEqual([
      ["account_out", 1, ["call_1"]],
      ["trunk", 2, ["call_1", "call_1"]],
    ]);
    await renewSlots(live, "acc_cac", "call_1", trunk(3), 2 * TTL);
    const deadline = Date.now() + 2 * TTL;
    for (const member of ["call_1", "call_1:out"]) expect(Math.abs((await live.zscore(accountKey("acc_cac", "cac", "slot", "trunk", "trk_both"), member))! - deadline)).toBeLessThan(2_000);
    await releaseSlots(live, "acc_cac", "call_1", trunk(3));
    expect(await cacSnapshot(live, "acc_cac")).toEqual([]);
    await live.close();
  });

  test("when the slots' index cannot be written, the error surfaces and nothing is held", async () => {
    const live = createMemoryLiveStore();
    const index = accountKey("acc_cac", "cac", "slots");
    await live.set(index, "not a set");
    await expect(acquireSlots(live, "acc_cac", "call_1", slots(1), TTL)).rejects.toThrow(/WRONGTYPE/);
    await live.del(index);
    // Nothing is held: the next call gets the user's only slot.
    expect(await acquireSlots(live, "acc_cac", "call_2", slots(1), TTL)).toEqual({ ok: true });
    await live.close();
  });

  test("a call admitted on a new slot while a reset runs stays visible and resettable (the reset drops only what it read)", async () => {
    const base = createMemoryLiveStore();
    const userSlot: CacSlot = { level: "user", id: "us_race", limit: 1 };
    let raced = false;
    // Another instance admits a call right after the reset read the account's slot names.
    const live: LiveStore = new Proxy(base, {
      get(target, prop, receiver) {
        if (prop === "smembers") {
          return async (key: string) => {
            const names = await target.smembers(key);
            if (!raced) {
              raced = true;
              expect(await acquireSlots(target, "acc_race", "call_new", [userSlot], TTL)).toEqual({ ok: true });
            }
            return names;
          };
        }
        const value = Reflect.get(target, prop, receiver);
        return typeof value === "function" ? value.bind(target) : value;
      },
    });
    expect(await acquireSlots(base, "acc_race", "call_old", [{ level: "account_out", id: "acc_race", limit: 5 }], TTL)).toEqual({ ok: true });
    expect(await resetCac(live, "acc_race")).toEqual({ counters: 1, calls: 1 });
    // Before, the whole registry was deleted: the new call still counted, but GET /cac did not show it
    // and a reset could not clear it.
    expect((await cacSnapshot(base, "acc_race")).map((c) => [c.level, c.id, c.active])).toEqual([["user", "us_race", 1]]);
    expect(await resetCac(base, "acc_race")).toEqual({ counters: 1, calls: 1 });
    expect(await acquireSlots(base, "acc_race", "call_after", [userSlot], TTL)).toEqual({ ok: true });
  });
  test("a call admitted to a slot right after the reset cleared it is still listed: GET /cac shows it, the next reset clears it", async () => {
    const base = createMemoryLiveStore();
    const slot: CacSlot = { level: "user", id: "us_after", limit: 3 };
    let raced = false;
    // The admission lands just after the reset deleted the slot's counter.
    const live = new Proxy(base, {
      get(target, prop, receiver) {
        if (prop === "del") {
          return async (...keys: string[]) => {
            await target.del(...keys);
            if (!raced) {
              raced = true;
              expect(await acquireSlots(target, "acc_after", "call_new", [slot], TTL)).toEqual({ ok: true });
            }
          };
        }
        const value = Reflect.get(target, prop, receiver);
        return typeof value === "function" ? value.bind(target) : value;
      },
    });
    expect(await acquireSlots(base, "acc_after", "call_old", [slot], TTL)).toEqual({ ok: true });
    expect(await resetCac(live, "acc_after")).toEqual({ counters: 1, calls: 1 });
    // Before, the slot's name was unlisted after its counter was deleted: the new call counted, unseen.
    expect((await cacSnapshot(base, "acc_after")).map((c) => [c.level, c.id, c.call_ids])).toEqual([["user", "us_after", ["call_new"]]]);
    expect(await resetCac(base, "acc_after")).toEqual({ counters: 1, calls: 1 });
    expect(await cacSnapshot(base, "acc_after")).toEqual([]);
  });
});
