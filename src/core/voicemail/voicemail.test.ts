/** Voicemail service edge cases: PIN verification and the PIN secret's life cycle, on the shared stores. */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { sql } from "drizzle-orm";
import type { Platform } from "../platform.ts";
import { rawRows } from "../db/migrate.ts";
import { seedTenant, storeKind, testPlatform } from "../../../test/support/platform.ts";
import { pinsMatch, writePinSecret } from "./pin-secret.ts";
import { createVoicemail, deleteVoicemail, updateVoicemail, upsertVoicemail, verifyVoicemailPin } from "./voicemail.service.ts";

let platform: Platform;

beforeAll(async () => {
  platform = await testPlatform();
});
afterAll(() => platform.close());

const refOf = async (accountId: string, id: string) =>
  (await rawRows<{ pin_secret_ref: string | null }>(platform.db, sql`select pin_secret_ref from voicemail where account_id = ${accountId} and id = ${id}`))[0]
    ?.pin_secret_ref ?? null;

describe(`verifyVoicemailPin [${storeKind}]`, () => {
  test("true only for the box's own PIN, exactly", async () => {
    const t = await seedTenant(platform);
    const box = await createVoicemail(platform.db, platform.secrets, t.accountId, { name: "Mine", pin: "0042" });
    const verify = (pin: string) => verifyVoicemailPin(platform.db, platform.secrets, t.accountId, box.id, pin);
    expect(await verify("0042")).toBe(true);
    for (const wrong of ["42", "00420", "0043", "", "0042 ", "004"]) expect(await verify(wrong)).toBe(false);
  });

  test("false for a box without a PIN, an unknown box, and another account's box", async () => {
    const t = await seedTenant(platform);
    const other = await seedTenant(platform);
    const open = await createVoicemail(platform.db, platform.secrets, t.accountId, { name: "Open" });
    expect(await verifyVoicemailPin(platform.db, platform.secrets, t.accountId, open.id, "1234")).toBe(false);
    expect(await verifyVoicemailPin(platform.db, platform.secrets, t.accountId, "vm_00000000000000000000000000", "1234")).toBe(false);
    const theirs = await createVoicemail(platform.db, platform.secrets, other.accountId, { name: "Theirs", pin: "1234" });
    expect(await verifyVoicemailPin(platform.db, platform.secrets, t.accountId, theirs.id, "1234")).toBe(false);
    expect(await verifyVoicemailPin(platform.db, platform.secrets, other.accountId, theirs.id, "1234")).toBe(true);
  });

  test("follows PIN changes made through upsert, and is false once the box is gone", async () => {
    const t = await seedTenant(platform);
    const { created, box } = await upsertVoicemail(platform.db, platform.secrets, t.accountId, { name: "B", pin: "1111" });
    expect(created).toBe(true);
    const again = await upsertVoicemail(platform.db, platform.secrets, t.accountId, { id: box.id, pin: "2222" });
    expect(again.created).toBe(false);
    expect(await verifyVoicemailPin(platform.db, platform.secrets, t.accountId, box.id, "2222")).toBe(true);
    expect(await verifyVoicemailPin(platform.db, platform.secrets, t.accountId, box.id, "1111")).toBe(false);
    const ref = await refOf(t.accountId, box.id);
    await deleteVoicemail(platform.db, platform.secrets, t.accountId, box.id);
    expect(await verifyVoicemailPin(platform.db, platform.secrets, t.accountId, box.id, "2222")).toBe(false);
    expect(await platform.secrets.reveal(platform.db, t.accountId, ref!)).toBeNull();
  });
});

describe(`PIN secrets [${storeKind}]`, () => {
  test("a box whose secret vanished gets a fresh one on the next PIN change", async () => {
    const t = await seedTenant(platform);
    const box = await createVoicemail(platform.db, platform.secrets, t.accountId, { name: "B", pin: "1111" });
    const ref = (await refOf(t.accountId, box.id))!;
    await platform.secrets.remove(platform.db, t.accountId, ref);
    expect(await verifyVoicemailPin(platform.db, platform.secrets, t.accountId, box.id, "1111")).toBe(false);
    await updateVoicemail(platform.db, platform.secrets, t.accountId, box.id, { pin: "3333" });
    const fresh = await refOf(t.accountId, box.id);
    expect(fresh).not.toBe(ref);
    expect(await verifyVoicemailPin(platform.db, platform.secrets, t.accountId, box.id, "3333")).toBe(true);
  });

  test("writePinSecret: absent keeps, a value replaces under the same ref, null removes", async () => {
    const t = await seedTenant(platform);
    const ref = await writePinSecret(platform.db, platform.secrets, t.accountId, null, "5555");
    expect(ref).toMatch(/^sec_/);
    expect(await writePinSecret(platform.db, platform.secrets, t.accountId, ref, undefined)).toBe(ref);
    expect(await writePinSecret(platform.db, platform.secrets, t.accountId, ref, "6666")).toBe(ref);
    expect(await platform.secrets.reveal(platform.db, t.accountId, ref!)).toBe("6666");
    expect(await writePinSecret(platform.db, platform.secrets, t.accountId, ref, null)).toBeNull();
    expect(await platform.secrets.reveal(platform.db, t.accountId, ref!)).toBeNull();
    expect(await writePinSecret(platform.db, platform.secrets, t.accountId, null, undefined)).toBeNull();
  });

  test("a create that fails after the PIN was stored leaves no secret behind", async () => {
    const t = await seedTenant(platform);
    // quota_mb out of range passes no schema here (service call), so the table's CHECK refuses the insert.
    await expect(createVoicemail(platform.db, platform.secrets, t.accountId, { name: "B", pin: "7777", quota_mb: 0 })).rejects.toThrow();
    expect((await rawRows(platform.db, sql`select id from secret where account_id = ${t.accountId}`)).length).toBe(0);
    expect((await rawRows(platform.db, sql`select id from voicemail where account_id = ${t.accountId}`)).length).toBe(0);
  });

  test("pinsMatch compares whole PINs", () => {
    expect(pinsMatch("1234", "1234")).toBe(true);
    expect(pinsMatch("1234", "12345")).toBe(false);
    expect(pinsMatch("1234", "1235")).toBe(false);
    expect(pinsMatch("0001", "1")).toBe(false);
  });
});
