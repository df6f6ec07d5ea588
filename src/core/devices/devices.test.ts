/** Device credentials at the service level: the digest hashes, the default realm, the edge's lookup. */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createHash } from "node:crypto";
import type { Platform } from "../platform.ts";
import { seedTenant, storeKind, testPlatform } from "../../../test/support/platform.ts";
import { createUser, updateUser } from "../users/users.service.ts";
import { createDevice, deleteDevice, findDigestCredential, updateDevice } from "./devices.service.ts";
import { digestHashes } from "./digest.ts";
import { defaultRealm } from "./realm.ts";

let platform: Platform;

beforeAll(async () => {
  platform = await testPlatform();
});
afterAll(() => platform.close());

const md5 = (text: string) => createHash("md5").update(text).digest("hex");

describe("digest hashes and realms", () => {
  test("ha1 and ha1b are MD5 of the RFC 2617 and Kamailio ha1b strings", () => {
    const h = digestHashes("1001", "acme.example.com", "pa:ss word");
    expect(h.ha1).toBe(md5("1001:acme.example.com:pa:ss word"));
    expect(h.ha1b).toBe(md5("1001@acme.example.com:acme.example.com:pa:ss word"));
    expect(h.ha1).toMatch(/^[0-9a-f]{32}$/);
    // RFC 2617 section 3.5's example: Mufasa / testrealm@host.com / Circle Of Life.
    expect(digestHashes("Mufasa", "testrealm@host.com", "Circle Of Life").ha1).toBe("939e7578ed9e3c518a452acee763bce9");
  });

  test("the default realm is the lower-cased account id under sip.parley.local", () => {
    expect(defaultRealm("acc_01JABCDEFGHJKMNPQRSTVWXYZ0")).toBe("acc_01jabcdefghjkmnpqrstvwxyz0.sip.parley.local");
  });
});

describe(`findDigestCredential [${storeKind}]`, () => {
  test("resolves (realm, auth_username) to the device, its hashes and the statuses the edge checks", async () => {
    const t = await seedTenant(platform);
    const user = await createUser(platform.db, t.accountId, { username: "1001" });
    const device = await createDevice(platform.db, t.accountId, { user_id: user.id, password: "s3cret-pass", transport: "wss" });
    const realm = defaultRealm(t.accountId);
    expect(await findDigestCredential(platform.db, realm, "1001")).toEqual({
      account_id: t.accountId,
      device_id: device.id,
      user_id: user.id,
      ...digestHashes("1001", realm, "s3cret-pass"),
      transport: "wss",
      is_webrtc: 1,
      device_status: "active",
      user_status: "active",
    });
    await updateUser(platform.db, t.accountId, user.id, { status: "disabled" });
    await updateDevice(platform.db, t.accountId, device.id, { status: "disabled" });
    expect(await findDigestCredential(platform.db, realm, "1001")).toMatchObject({ device_status: "disabled", user_status: "disabled" });
    // Digest usernames are case-sensitive, and the realm is part of the identity.
    expect(await findDigestCredential(platform.db, realm, "1001 ")).toBeNull();
    expect(await findDigestCredential(platform.db, defaultRealm((await seedTenant(platform)).accountId), "1001")).toBeNull();
  });

  test("follows a renamed identity and forgets a deleted device", async () => {
    const t = await seedTenant(platform);
    const user = await createUser(platform.db, t.accountId, { username: "1001" });
    const device = await createDevice(platform.db, t.accountId, { user_id: user.id, password: "s3cret-pass" });
    const realm = defaultRealm(t.accountId);
    await updateDevice(platform.db, t.accountId, device.id, { auth_username: "desk-1001", password: "n3w-secret" });
    expect(await findDigestCredential(platform.db, realm, "1001")).toBeNull();
    expect((await findDigestCredential(platform.db, realm, "desk-1001"))?.ha1).toBe(md5(`desk-1001:${realm}:n3w-secret`));
    await deleteDevice(platform.db, t.accountId, device.id);
    expect(await findDigestCredential(platform.db, realm, "desk-1001")).toBeNull();
  });
});
