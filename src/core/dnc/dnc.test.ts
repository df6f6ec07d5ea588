/** isOnDnc: the check the call path makes, with expiry. */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Platform } from "../platform.ts";
import { seedTenant, storeKind, testPlatform } from "../../../test/support/platform.ts";
import { addEntries } from "./dnc.store.ts";
import { addToDnc, isOnDnc, lookupDnc, removeFromDnc } from "./dnc.service.ts";
import { nowSeconds } from "../db/columns.ts";

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

  test("a number listed again keeps the later expiry (never the latest), with the newer reason when that extends it", async () => {
    const t = await seedTenant(platform);
    const soon = nowSeconds() + 3600;
    const later = soon + 86_400;
    expect(await addToDnc(platform.db, t.accountId, { numbers: ["+447700900555", "+447700900556"], expires_at: soon, reason: "asked on a call" })).toEqual({ added: 2, already_listed: 0 });
    // Without an expiry: a permanent opt-out, whatever expiry the entry had.
    expect(await addToDnc(platform.db, t.accountId, { numbers: ["+447700900555"], reason: "permanent opt-out" })).toEqual({ added: 0, already_listed: 1 });
    expect((await lookupDnc(platform.db, t.accountId, "447700900555")).entry).toMatchObject({ expires_at: null, reason: "permanent opt-out" });
    expect(await isOnDnc(platform.db, t.accountId, "447700900555", soon + 10)).toBe(true);
    // A later expiry extends; an earlier one (or one added to a permanent entry) changes nothing.
    await addToDnc(platform.db, t.accountId, { numbers: ["+447700900556"], expires_at: later, reason: "extended" });
    expect((await lookupDnc(platform.db, t.accountId, "447700900556")).entry).toMatchObject({ expires_at: later, reason: "extended" });
    await addToDnc(platform.db, t.accountId, { numbers: ["+447700900556", "+447700900555"], expires_at: soon, reason: "shorter" });
    expect((await lookupDnc(platform.db, t.accountId, "447700900556")).entry).toMatchObject({ expires_at: later, reason: "extended" });
    expect((await lookupDnc(platform.db, t.accountId, "447700900555")).entry).toMatchObject({ expires_at: null, reason: "permanent opt-out" });
    // Extended without a reason: the reason it had stays.
    await addToDnc(platform.db, t.accountId, { numbers: ["+447700900556"] });
    expect((await lookupDnc(platform.db, t.accountId, "447700900556")).entry).toMatchObject({ expires_at: null, reason: "extended" });
  });

  test("7-digit E.164 numbers (Niue, Saint Helena) can be listed, as the router dials them", async () => {
    const t = await seedTenant(platform);
    expect(await addToDnc(platform.db, t.accountId, { numbers: ["+683 4002", "+290 1234"] })).toEqual({ added: 2, already_listed: 0 });
    expect(await isOnDnc(platform.db, t.accountId, "6834002", nowSeconds())).toBe(true);
  });
});
