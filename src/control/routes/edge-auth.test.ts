/** POST /auth over a real socket (the edge paths are address-gated): digest forms, statuses, replay, failure counter. */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createHash, randomUUID } from "node:crypto";
import { eq } from "drizzle-orm";
import type { Platform } from "../../core/platform.ts";
import { seedTenant, storeKind, testPlatform } from "../../../test/support/platform.ts";
import { createUser, updateUser } from "../../core/users/users.service.ts";
import { createDevice, updateDevice } from "../../core/devices/devices.service.ts";
import { defaultRealm } from "../../core/devices/realm.ts";
import { accounts } from "../../core/accounts/accounts.schema.ts";
import { AUTH_FAIL_KEY, authFailures } from "../../core/sip-auth/sip-auth.service.ts";
import { globalKey } from "../../core/live/live-store.ts";
import { applyConfig } from "../../core/config-file/applier.ts";
import { sipTrunks } from "../../core/trunks/trunks.schema.ts";
import { edgeAuthRoutes } from "./edge-auth.ts";
import { listenControl, type ControlClient } from "./control-listener.fixture.ts";

const md5 = (text: string) => createHash("md5").update(text).digest("hex");
const PASSWORD = "s3cret-pass";

let platform: Platform;
let client: ControlClient;

beforeAll(async () => {
  platform = await testPlatform();
  client = listenControl(platform, [edgeAuthRoutes]);
});
afterAll(async () => {
  await client.stop();
  await platform.close();
});

interface Seeded {
  accountId: string;
  userId: string;
  deviceId: string;
  realm: string;
}

async function seedDevice(options: { username?: string; webrtc?: boolean; transport?: "udp" | "tcp" | "tls" | "wss" } = {}): Promise<Seeded> {
  const t = await seedTenant(platform);
  const user = await createUser(platform.db, t.accountId, { username: options.username ?? "1001" });
  const device = await createDevice(platform.db, t.accountId, {
    user_id: user.id,
    password: PASSWORD,
    ...(options.webrtc ? { transport: "wss" as const } : {}),
    ...(options.transport ? { transport: options.transport } : {}),
  });
  return { accountId: t.accountId, userId: user.id, deviceId: device.id, realm: defaultRealm(t.accountId) };
}

/** A digest Authorization as a phone computes it from the password, independently of the code under test. */
function digest(
  s: { realm: string },
  opts: { username?: string; password?: string; method?: string; uri?: string; qop?: boolean; sess?: boolean; nonce?: string; nc?: string; cnonce?: string } = {},
) {
  const username = opts.username ?? "1001";
  const method = opts.method ?? "REGISTER";
  const uri = opts.uri ?? `sip:${s.realm}`;
  const nonce = opts.nonce ?? randomUUID();
  const cnonce = opts.cnonce ?? randomUUID().slice(0, 8);
  const nc = opts.nc ?? "00000001";
  let ha1 = md5(`${username}:${s.realm}:${opts.password ?? PASSWORD}`);
  if (opts.sess) ha1 = md5(`${ha1}:${nonce}:${cnonce}`);
  const ha2 = md5(`${method}:${uri}`);
  const qop = opts.qop ?? true;
  const response = qop ? md5(`${ha1}:${nonce}:${nc}:${cnonce}:auth:${ha2}`) : md5(`${ha1}:${nonce}:${ha2}`);
  return {
    username,
    realm: s.realm,
    nonce,
    uri,
    response,
    method,
    ...(qop ? { qop: "auth", nc, cnonce } : {}),
    ...(opts.sess ? { algorithm: "MD5-sess", ...(qop ? {} : { cnonce }) } : {}),
  };
}

/**
 * A source address no other test (nor a run of the suite minutes before, on a shared Redis: failure
 * counts last 10 minutes) counts failures for: one of 16 million, not of 250.
 */
const uniqueIp = () => `10.${Math.floor(Math.random() * 256)}.${Math.floor(Math.random() * 256)}.${Math.floor(Math.random() * 254) + 1}`;
const uniqueV6 = () => `2001:db8::${Math.floor(Math.random() * 0xffff).toString(16)}`;

describe(`POST /auth [${storeKind}]`, () => {
  test("qop=auth digest: 200 with exactly the account context", async () => {
    const s = await seedDevice();
    const r = await client.post("/auth", digest(s));
    expect(r.status).toBe(200);
    expect(r.body).toEqual({ ok: true, account_id: s.accountId, user_id: s.userId, device_id: s.deviceId, webrtc: 0 });
  });

  test("form body with the same field names; webrtc 1 for a WebRTC device", async () => {
    const s = await seedDevice({ webrtc: true });
    const r = await client.post("/auth", { ...digest(s), source_ip: uniqueIp(), transport: "wss", user_agent: "JsSIP 3.10" }, "form");
    expect(r.status).toBe(200);
    expect(r.body).toEqual({ ok: true, account_id: s.accountId, user_id: s.userId, device_id: s.deviceId, webrtc: 1 });
  });

  test("a device configured for TLS authenticates only over TLS or WSS, one for WSS only over a WebSocket (403 otherwise, not counted as a failure); others over any", async () => {
    const tls = await seedDevice({ transport: "tls" });
    const ip = uniqueIp();
    await platform.live.del(AUTH_FAIL_KEY(ip));
    for (const transport of ["udp", "tcp", "ws", undefined]) {
      const r = await client.post("/auth", { ...digest(tls), source_ip: ip, ...(transport ? { transport } : {}) });
      expect(r.status, String(transport)).toBe(403);
    }
    // The right password over the wrong transport is not a guess: nothing counted towards a ban.
    expect(await authFailures(platform.live, ip)).toBe(0);
    expect((await client.post("/auth", { ...digest(tls), transport: "TLS" })).status).toBe(200);
    expect((await client.post("/auth", { ...digest(tls), transport: "wss" })).status).toBe(200);
    // A browser's credential: over a WebSocket (WS too: a proxy in front of the edge may end the TLS), not elsewhere.
    const web = await seedDevice({ transport: "wss" });
    expect((await client.post("/auth", { ...digest(web), transport: "udp" })).status).toBe(403);
    expect((await client.post("/auth", { ...digest(web), transport: "tls" })).status).toBe(403);
    expect((await client.post("/auth", { ...digest(web), transport: "ws" })).status).toBe(200);
    expect((await client.post("/auth", { ...digest(web), transport: "wss" })).status).toBe(200);
    const plain = await seedDevice({ transport: "tcp" });
    expect((await client.post("/auth", { ...digest(plain), transport: "udp" })).status).toBe(200);
    expect((await client.post("/auth", digest(plain))).status).toBe(200);
  });

  test("RFC 2069 form (no qop), and empty optional fields as an edge config sends them", async () => {
    const s = await seedDevice();
    expect((await client.post("/auth", digest(s, { qop: false }))).status).toBe(200);
    const r = await client.post("/auth", { ...digest(s, { qop: false }), qop: "", nc: "", cnonce: "", algorithm: "", opaque: "" }, "form");
    expect(r.status).toBe(200);
    expect(r.body.device_id).toBe(s.deviceId);
  });

  test("the digest uri is the one sent, whatever the method (INVITE to another URI)", async () => {
    const s = await seedDevice();
    const r = await client.post("/auth", digest(s, { method: "INVITE", uri: "sip:127.0.0.1:5080" }));
    expect(r.status).toBe(200);
    // The same response presented for another uri fails.
    const d = digest(s, { method: "INVITE", uri: "sip:127.0.0.1:5080" });
    expect((await client.post("/auth", { ...d, uri: "sip:2000@127.0.0.1" })).status).toBe(401);
  });

  test("username with the domain (user@realm) is verified against ha1b", async () => {
    const s = await seedDevice();
    const r = await client.post("/auth", digest(s, { username: `1001@${s.realm}` }));
    expect(r.status).toBe(200);
    expect(r.body.device_id).toBe(s.deviceId);
  });

  test("MD5-sess with and without qop; another algorithm is 400", async () => {
    const s = await seedDevice();
    expect((await client.post("/auth", digest(s, { sess: true }))).status).toBe(200);
    expect((await client.post("/auth", digest(s, { sess: true, qop: false }))).status).toBe(200);
    const sha = await client.post("/auth", { ...digest(s), algorithm: "SHA-256" });
    expect(sha.status).toBe(400);
    expect(sha.body.error).toBe("validation_failed");
    expect(sha.body.details.map((d: { path: string }) => d.path)).toContain("/algorithm");
  });

  test("wrong password and unknown user get the same 401 body", async () => {
    const s = await seedDevice();
    const wrong = await client.post("/auth", digest(s, { password: "not-the-password" }));
    const unknown = await client.post("/auth", digest(s, { username: "9999" }));
    const otherRealm = await client.post("/auth", digest({ realm: "nowhere.example.com" }));
    for (const r of [wrong, unknown, otherRealm]) {
      expect(r.status).toBe(401);
      expect(r.body).toEqual({ ok: false, error: "unauthorized", message: wrong.body.message });
    }
  });

  test("another tenant's same extension is a separate credential", async () => {
    const a = await seedDevice();
    const b = await seedDevice();
    const r = await client.post("/auth", digest(b));
    expect(r.body.account_id).toBe(b.accountId);
    // a's password hash does not open b's realm: the realm is part of the identity.
    const cross = digest(a);
    expect((await client.post("/auth", { ...cross, realm: b.realm })).status).toBe(401);
  });

  test("disabled device, disabled user, suspended or closed account: 403 with a generic message; wrong password stays 401", async () => {
    const dev = await seedDevice();
    await updateDevice(platform.db, dev.accountId, dev.deviceId, { status: "disabled" });
    const user = await seedDevice();
    await updateUser(platform.db, user.accountId, user.userId, { status: "disabled" });
    const susp = await seedDevice();
    await platform.db.update(accounts).set({ status: "suspended" }).where(eq(accounts.id, susp.accountId));
    const closed = await seedDevice();
    await platform.db.update(accounts).set({ status: "closed" }).where(eq(accounts.id, closed.accountId));
    const messages = new Set<string>();
    for (const s of [dev, user, susp, closed]) {
      const r = await client.post("/auth", digest(s));
      expect(r.status).toBe(403);
      expect(r.body.error).toBe("forbidden");
      expect(JSON.stringify(r.body)).not.toMatch(/disabled|suspended|closed|acc_|dev_|us_/);
      messages.add(r.body.message);
      // Without the password nobody learns the device exists or is disabled.
      expect((await client.post("/auth", digest(s, { password: "guess-guess" }))).status).toBe(401);
    }
    expect(messages.size).toBe(1);
    // Re-enabled: works again.
    await updateDevice(platform.db, dev.accountId, dev.deviceId, { status: "active" });
    expect((await client.post("/auth", digest(dev))).status).toBe(200);
  });

  test("a qop response cannot be replayed in the RFC 2069 form: a nonce with a colon is a 400", async () => {
    const s = await seedDevice();
    const first = digest(s, { nonce: "nonce-forms-1", nc: "00000001", cnonce: "abcd1234" });
    expect((await client.post("/auth", first)).status).toBe(200);
    // MD5(HA1:N:nc:C:auth:HA2) is also the RFC 2069 response for the nonce "N:nc:C:auth".
    const { qop: _qop, nc: _nc, cnonce: _cnonce, ...bare } = first as typeof first & { qop?: string; nc?: string; cnonce?: string };
    const forged = await client.post("/auth", { ...bare, nonce: "nonce-forms-1:00000001:abcd1234:auth" });
    expect(forged.status).toBe(400);
    expect(forged.body.details.map((d: { path: string }) => d.path)).toEqual(["/nonce"]);
    for (const nonce of ['a"b', "a b", "a\u0001b"]) expect((await client.post("/auth", digest(s, { nonce }))).status, nonce).toBe(400);
  });

  test("a replayed (nonce, nc, cnonce) is refused; the next nc of the same nonce passes", async () => {
    const s = await seedDevice();
    const first = digest(s, { nonce: "nonce-replay-1", nc: "00000001", cnonce: "abcd1234" });
    expect((await client.post("/auth", first)).status).toBe(200);
    const again = await client.post("/auth", first);
    expect(again.status).toBe(401);
    expect(again.body.error).toBe("unauthorized");
    expect((await client.post("/auth", digest(s, { nonce: "nonce-replay-1", nc: "00000002", cnonce: "abcd1234" }))).status).toBe(200);
    // RFC 2069 (no nc/cnonce): a nonce is good once.
    const plain = digest(s, { qop: false, nonce: "nonce-replay-2" });
    expect((await client.post("/auth", plain)).status).toBe(200);
    expect((await client.post("/auth", plain)).status).toBe(401);
    // The response without qop covers neither nc nor cnonce: made-up ones make no new request of it.
    for (const extra of [{ nc: "00000001", cnonce: "x1" }, { nc: "00000002", cnonce: "x2" }, { cnonce: "x3" }]) {
      expect((await client.post("/auth", { ...plain, ...extra })).status, JSON.stringify(extra)).toBe(401);
    }
  });

  test("a failed attempt does not burn the nonce for the real device", async () => {
    const s = await seedDevice();
    const nonce = "nonce-not-burnt";
    expect((await client.post("/auth", digest(s, { nonce, nc: "00000001", cnonce: "c0ffee00", password: "wrong-one" }))).status).toBe(401);
    expect((await client.post("/auth", digest(s, { nonce, nc: "00000001", cnonce: "c0ffee00" }))).status).toBe(200);
  });

  test("failures are counted per source IP under globalKey('authfail', ip) with a 10-minute expiry; successes are not", async () => {
    const s = await seedDevice();
    const ip = uniqueIp();
    const v6 = uniqueV6();
    await platform.live.del(AUTH_FAIL_KEY(ip), AUTH_FAIL_KEY(v6));
    expect(AUTH_FAIL_KEY(ip)).toBe(globalKey("authfail", ip));
    expect(await authFailures(platform.live, ip)).toBe(0);
    expect((await client.post("/auth", { ...digest(s), source_ip: ip })).status).toBe(200);
    expect(await authFailures(platform.live, ip)).toBe(0);
    await client.post("/auth", { ...digest(s, { password: "nope-nope" }), source_ip: ip });
    await client.post("/auth", { ...digest(s, { username: "4242" }), source_ip: ip }, "form");
    const replay = digest(s);
    await client.post("/auth", { ...replay, source_ip: ip });
    await client.post("/auth", { ...replay, source_ip: ip });
    expect(await authFailures(platform.live, ip)).toBe(3);
    const ttl = await platform.live.ttl(AUTH_FAIL_KEY(ip));
    expect(ttl).toBeGreaterThan(9 * 60_000);
    expect(ttl).toBeLessThanOrEqual(10 * 60_000);
    await client.post("/auth", { ...digest(s, { password: "nope-nope" }), source_ip: v6 });
    expect(await authFailures(platform.live, v6)).toBe(1);
    // Counted under the address's one spelling (the ban records read it so): Kamailio writes IPv6 in
    // full and in capitals, and a dual-stack socket maps IPv4 into IPv6.
    const full = `2001:DB8:0:0:0:0:0:${(Math.floor(Math.random() * 0xfff) + 1).toString(16).toUpperCase()}`;
    // Another address than `ip` (whose count the last check reads).
    let mapped = uniqueIp();
    while (mapped === ip) mapped = uniqueIp();
    await platform.live.del(AUTH_FAIL_KEY(mapped));
    await client.post("/auth", { ...digest(s, { password: "nope-nope" }), source_ip: full });
    await client.post("/auth", { ...digest(s, { password: "nope-nope" }), source_ip: `::ffff:${mapped}` });
    expect(await authFailures(platform.live, full.toLowerCase().replace(/:0:0:0:0:0:/, "::"))).toBe(1);
    expect(await authFailures(platform.live, mapped)).toBe(1);
    // A malformed request is not an authentication failure.
    await client.post("/auth", { ...digest(s), response: "zz", source_ip: ip });
    expect(await authFailures(platform.live, ip)).toBe(3);
  });

  test("malformed input: 400 validation_failed naming the field, nothing counted", async () => {
    const s = await seedDevice();
    const ip = uniqueIp();
    await platform.live.del(AUTH_FAIL_KEY(ip));
    // Sent from `ip`, so a failure would be counted against it (only the /source_ip case cannot be).
    const good = { ...digest(s), source_ip: ip };
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ ...good, response: "not-hex" }, "/response"],
      [{ ...good, username: "" }, "/username"],
      [{ ...good, nc: "1" }, "/nc"],
      [{ ...good, qop: "auth-int" }, "/qop"],
      [{ ...good, nc: undefined }, "/nc"],
      [{ ...good, cnonce: undefined }, "/cnonce"],
      [{ ...good, method: "REG ISTER" }, "/method"],
      [{ ...good, source_ip: "not-an-ip" }, "/source_ip"],
      [{ ...good, extra: "x" }, "/extra"],
      [{ realm: s.realm, source_ip: ip }, "/username"],
    ];
    for (const [body, path] of cases) {
      const r = await client.post("/auth", body);
      expect(r.status, JSON.stringify(body)).toBe(400);
      expect(r.body.error).toBe("validation_failed");
      expect(r.body.details.map((d: { path: string }) => d.path), JSON.stringify(body)).toContain(path);
    }
    expect(await authFailures(platform.live, ip)).toBe(0);
    // While a wrong password from the same address is counted.
    expect((await client.post("/auth", { ...digest(s, { password: "wrong-wrong" }), source_ip: ip })).status).toBe(401);
    expect(await authFailures(platform.live, ip)).toBe(1);
  });

  test("the gate: 403 from an address outside CONTROL_ALLOW, even with a right digest", async () => {
    const s = await seedDevice();
    const closed = await testPlatform({ env: { CONTROL_ALLOW: "10.255.0.0/16" } });
    const gated = listenControl(closed, [edgeAuthRoutes]);
    try {
      const r = await gated.post("/auth", digest(s));
      expect(r.status).toBe(403);
      expect(r.body).toMatchObject({ ok: false, error: "forbidden" });
      expect(JSON.stringify(r.body)).not.toContain("acc_");
    } finally {
      await gated.stop();
      await closed.close();
    }
  });
});

describe(`POST /auth, trunks that authenticate towards us [${storeKind}]`, () => {
  const TRUNK_PASSWORD = "pbx-in-s3cret";
  /** A tenant with a register trunk and a digest trunk (acl 192.0.2.0/24), through the config file. */
  async function seedTrunks(extra: Record<string, unknown> = {}) {
    const t = await seedTenant(platform);
    const tag = randomUUID().slice(0, 8);
    const names = { pbx: `pbx-${tag}`, carrier: `dg-${tag}` };
    await applyConfig(platform.db, platform.secrets, t.accountId, {
      version: 1,
      trunks: [
        { name: "office", role: "pbx", direction: "both", inbound_auth: "register", inbound_username: names.pbx, inbound_password: TRUNK_PASSWORD, ...extra },
        { name: "carrier-dg", direction: "inbound", inbound_auth: "digest", inbound_username: names.carrier, inbound_password: TRUNK_PASSWORD, acl: ["192.0.2.0/24"] },
        { name: "by-address", direction: "inbound", inbound_auth: "ip", inbound_username: `ip-${tag}`, inbound_password: TRUNK_PASSWORD, acl: ["100.64.77.0/24"] },
      ],
    });
    const ids = Object.fromEntries((await platform.db.select().from(sipTrunks).where(eq(sipTrunks.account_id, t.accountId))).map((r) => [r.name, r.id]));
    await platform.configCache.settle();
    return { accountId: t.accountId, names, ids, tag };
  }
  const trunkDigest = (username: string, opts: { method?: string; password?: string; realm?: string } = {}) =>
    digest({ realm: opts.realm ?? "any-realm.example" }, { username, password: opts.password ?? TRUNK_PASSWORD, method: opts.method ?? "INVITE" });

  test("a register trunk registers and a digest trunk calls with their inbound password, in whatever realm the edge challenged: 200 with the trunk", async () => {
    const s = await seedTrunks();
    const reg = await client.post("/auth", { ...trunkDigest(s.names.pbx, { method: "REGISTER" }), source_ip: "203.0.113.9" });
    expect(reg.status).toBe(200);
    expect(reg.body).toEqual({ ok: true, account_id: s.accountId, user_id: null, device_id: null, webrtc: 0, trunk_id: s.ids.office });
    const call = await client.post("/auth", { ...trunkDigest(s.names.carrier, { realm: "carrier.example" }), source_ip: "192.0.2.44" });
    expect(call.status).toBe(200);
    expect(call.body.trunk_id).toBe(s.ids["carrier-dg"]);
  });

  test("wrong password or unknown name: 401 counted; right password but not allowed (outside its acl, a digest trunk registering, an ip trunk, disabled, outbound only): 403", async () => {
    const s = await seedTrunks();
    const ip = uniqueIp();
    expect((await client.post("/auth", { ...trunkDigest(s.names.carrier, { password: "wrong" }), source_ip: ip })).status).toBe(401);
    expect((await client.post("/auth", { ...trunkDigest(`nobody-${s.tag}`), source_ip: ip })).status).toBe(401);
    expect(await authFailures(platform.live, ip)).toBe(2);
    const refused = async (body: object) => {
      const r = await client.post("/auth", body);
      expect(r.status).toBe(403);
      expect(r.body).toMatchObject({ ok: false, error: "forbidden" });
    };
    await refused({ ...trunkDigest(s.names.carrier), source_ip: "100.64.77.20" });
    await refused({ ...trunkDigest(s.names.carrier, { method: "REGISTER" }), source_ip: "192.0.2.9" });
    await refused({ ...trunkDigest(`ip-${s.tag}`), source_ip: "100.64.77.20" });
    expect(await authFailures(platform.live, "100.64.77.20")).toBe(0);

    const off = await seedTrunks({ status: "disabled" });
    await refused({ ...trunkDigest(off.names.pbx, { method: "REGISTER" }), source_ip: "203.0.113.9" });
    const outbound = await seedTrunks({ direction: "outbound", proxy: "pbx.example.com" });
    await refused({ ...trunkDigest(outbound.names.pbx), source_ip: "203.0.113.9" });
  });

  test("a trunk's replayed digest is refused", async () => {
    const s = await seedTrunks();
    const body = { ...trunkDigest(s.names.pbx), source_ip: "203.0.113.10" };
    expect((await client.post("/auth", body)).status).toBe(200);
    expect((await client.post("/auth", body)).status).toBe(401);
  });

  test("an inbound_username is one trunk's platform-wide: another account's file claiming it, new or changed, is a 409 naming the field", async () => {
    const s = await seedTrunks();
    const other = await seedTenant(platform);
    const claim = (name: string) => ({ version: 1, trunks: [{ name: "mine", direction: "inbound", inbound_auth: "digest", inbound_username: name, inbound_password: "x-password-1" }] });
    await expect(applyConfig(platform.db, platform.secrets, other.accountId, claim(s.names.pbx))).rejects.toMatchObject({ code: "conflict" });
    await applyConfig(platform.db, platform.secrets, other.accountId, claim(`free-${s.tag}`));
    await expect(applyConfig(platform.db, platform.secrets, other.accountId, claim(s.names.carrier))).rejects.toMatchObject({ code: "conflict" });
    // The account's own file may keep, move and free its names.
    await applyConfig(platform.db, platform.secrets, other.accountId, { version: 1 });
    await applyConfig(platform.db, platform.secrets, other.accountId, claim(`free-${s.tag}`));
    await platform.configCache.settle();
    const r = await client.post("/auth", { ...trunkDigest(`free-${s.tag}`, { password: "x-password-1" }), source_ip: "203.0.113.11" });
    expect(r.status).toBe(200);
    expect(r.body.account_id).toBe(other.accountId);
  });
});
