/** isOnDnc: the check the call path makes, with expiry. */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Platform } from "../platform.ts";
import { seedTenant, storeKind, testPlatform } from "../../../test/support/platform.ts";
import { addEntries } from "./dnc.store.ts";
import { addToDnc, isOnDnc, removeFromDnc } from "./dnc.service.ts";

let platform: Platform;

beforeAll(async () => {
  platform = await testPlatform();
});
afterAll(() => platform.close());

describe(`isOnDnc [${storeKind}]`, () => {
  test("true while listed, false once expired, removed, or in another account", async () => {
    const t = await seedTenant(platform);
    const other = await seedTenant(platform);
    const now = 1_800_000_000;
    await platform.db.transaction((tx) => addEntries(tx, t.accountId, ["14155550100"], { reason: null, source: "api", expires_at: now + 60, created_at: now }));
    await addToDnc(platform.db, t.accountId, { numbers: ["+1 415 555 0101"] });
    expect(await isOnDnc(platform.db, t.accountId, "14155550100", now)).toBe(true);
    expect(await isOnDnc(platform.db, t.accountId, "14155550100", now + 59)).toBe(true);
    expect(await isOnDnc(platform.db, t.accountId, "14155550100", now + 60)).toBe(false);
    expect(await isOnDnc(platform.db, t.accountId, "14155550101", now + 10 ** 9)).toBe(true);
    expect(await isOnDnc(platform.db, other.accountId, "14155550101", now)).toBe(false);
    await removeFromDnc(platform.db, t.accountId, { numbers: ["14155550101"] });
    expect(await isOnDnc(platform.db, t.accountId, "14155550101", now)).toBe(false);
  });
});
