/** The configuration cache of the call path: kept between calls, dropped as the account's configuration changes. */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createHash, randomUUID } from "node:crypto";
import { eq } from "drizzle-orm";
import type { Platform } from "../platform.ts";
import { seedTenant, storeKind, testPlatform } from "../../../test/support/platform.ts";
import { eventually } from "../../../test/support/eventually.ts";
import { createUser, updateUser } from "../users/users.service.ts";
import { createDevice, updateDevice } from "../devices/devices.service.ts";
import { createExtension } from "../extensions/extensions.service.ts";
import { defaultRealm } from "../devices/realm.ts";
import { accounts } from "../accounts/accounts.schema.ts";
import { authenticateDigestForRoute, digestAuthDeps } from "../sip-auth/sip-auth.service.ts";
import { startConfigCache } from "./config-cache.ts";
import { deviceOwners, existingAccountIds, existingUserKeys } from "../presence/presence.store.ts";
import { defaultRatePlans } from "../rates/rates.service.ts";
import { insertRatePlan } from "../rates/rates.store.ts";
import { activeSubscriptions } from "../webhooks/delivery.store.ts";
import { createWebhook } from "../webhooks/webhooks.service.ts";
import { newId } from "../ids/ids.ts";
import { nowSeconds } from "../db/columns.ts";

let platform: Platform;
/** A second instance on the same stores (PostgreSQL + Redis: another process would be the same). */
let other: Platform;

beforeAll(async () => {
  platform = await testPlatform();
  other = await testPlatform();
});
afterAll(async () => {
  await other.close();
  await platform.close();
});

const md5 = (text: string) => createHash("md5").update(text).digest("hex");
/** The digest a phone computes from its password (a fresh nonce each time: no replay). */
function digest(realm: string, password: string) {
  const uri = `sip:1002@${realm}`;
  const nonce = randomUUID();
  const cnonce = randomUUID().slice(0, 8);
  const ha1 = md5(`1001:${realm}:${password}`);
  const response = md5(`${ha1}:${nonce}:00000001:${cnonce}:auth:${md5(`INVITE:${uri}`)}`);
  return { username: "1001", realm, nonce, uri, response, method: "INVITE", qop: "auth" as const, nc: "00000001", cnonce, opaque: "" };
}

async function seed(on: Platform) {
  const t = await seedTenant(on);
  const caller = await createUser(on.db, t.accountId, { username: "1001" });
  const device = await createDevice(on.db, t.accountId, { user_id: caller.id, password: "pw-1001-long" });
  // Written straight to the database (not through the API, which settles for us): every instance's
  // cache is told before the test reads (a read while changes are told is not kept).
  await platform.configCache.settle();
  await other.configCache.settle();
  return { accountId: t.accountId, userId: caller.id, deviceId: device.id, realm: defaultRealm(t.accountId) };
}

/** The outcome of an INVITE's digest and routing context read as POST /route reads them. */
async function route(on: Platform, realm: string, password: string, to: string) {
  try {
    const { result, device } = await authenticateDigestForRoute(digestAuthDeps(on), digest(realm, password), to);
    return { ok: result.ok, extension: device!.extension?.digits ?? null, callerStatus: device!.caller?.status ?? null };
  } catch (error) {
    return { error: (error as { code?: string }).code };
  }
}

describe(`configuration cache [${storeKind}]`, () => {
  test("an INVITE's credential and routing context are kept, and dropped by every change to the account", async () => {
    expect(platform.configCache.active).toBe(true);
    const s = await seed(platform);
    const before = platform.configCache.size;
    expect(await route(platform, s.realm, "pw-1001-long", "300")).toEqual({ ok: true, extension: null, callerStatus: "active" });
    expect(platform.configCache.size).toBe(before + 1);
    // Kept: the second call reads nothing (the entry is the same object, frozen for everyone).
    expect(await route(platform, s.realm, "pw-1001-long", "300")).toEqual({ ok: true, extension: null, callerStatus: "active" });
    expect(platform.configCache.size).toBe(before + 1);

    // A new extension: the next call to 300 reaches it.
    await createExtension(platform.db, s.accountId, { digits: "300", dest_kind: "hangup" });
    await platform.configCache.settle();
    expect(await route(platform, s.realm, "pw-1001-long", "300")).toMatchObject({ ok: true, extension: "300" });

    // A new password: the old one fails at once, the new one passes.
    await updateDevice(platform.db, s.accountId, s.deviceId, { password: "pw-1001-changed" });
    await platform.configCache.settle();
    expect(await route(platform, s.realm, "pw-1001-long", "300")).toEqual({ error: "unauthorized" });
    expect(await route(platform, s.realm, "pw-1001-changed", "300")).toMatchObject({ ok: true });

    // A disabled user, a suspended account: refused at once, and again allowed once restored.
    await updateUser(platform.db, s.accountId, s.userId, { status: "disabled" });
    await platform.configCache.settle();
    expect(await route(platform, s.realm, "pw-1001-changed", "300")).toEqual({ error: "forbidden" });
    await updateUser(platform.db, s.accountId, s.userId, { status: "active" });
    await platform.db.update(accounts).set({ status: "suspended" }).where(eq(accounts.id, s.accountId));
    await platform.configCache.settle();
    expect(await route(platform, s.realm, "pw-1001-changed", "300")).toEqual({ error: "forbidden" });
    await platform.db.update(accounts).set({ status: "active" }).where(eq(accounts.id, s.accountId));
    await platform.configCache.settle();
    expect(await route(platform, s.realm, "pw-1001-changed", "300")).toMatchObject({ ok: true, extension: "300", callerStatus: "active" });
  });

  test("a change to one account leaves another's entries; an unknown identity is not kept", async () => {
    const a = await seed(platform);
    const b = await seed(platform);
    await route(platform, a.realm, "pw-1001-long", "300");
    await route(platform, b.realm, "pw-1001-long", "300");
    const held = platform.configCache.size;
    await createExtension(platform.db, b.accountId, { digits: "301", dest_kind: "hangup" });
    await platform.configCache.settle();
    expect(platform.configCache.size).toBe(held - 1);
    expect(await route(platform, "nowhere.example", "pw-1001-long", "300")).toEqual({ error: "unauthorized" });
    expect(platform.configCache.size).toBe(held - 1);
  });

  test("a change made by another instance is seen by this one", async () => {
    const s = await seed(platform);
    expect(await route(platform, s.realm, "pw-1001-long", "300")).toMatchObject({ ok: true, extension: null });
    await createExtension(other.db, s.accountId, { digits: "300", dest_kind: "hangup" });
    // Told over the database's notifications: PGlite at once, PostgreSQL a moment after the commit.
    await eventually(async () => expect(await route(platform, s.realm, "pw-1001-long", "300")).toMatchObject({ ok: true, extension: "300" }));
  });

  test("listeners hear each change of an account's configuration (this instance's by settle(), another's a moment after), until they unsubscribe", async () => {
    const s = await seed(platform);
    const heard: Array<string | null> = [];
    const stop = platform.configCache.onChange((accountId) => heard.push(accountId));
    await createExtension(platform.db, s.accountId, { digits: "310", dest_kind: "hangup" });
    await platform.configCache.settle();
    expect(heard).toContain(s.accountId);
    heard.length = 0;
    await createExtension(other.db, s.accountId, { digits: "311", dest_kind: "hangup" });
    await eventually(async () => expect(heard).toContain(s.accountId));
    stop();
    heard.length = 0;
    await createExtension(platform.db, s.accountId, { digits: "312", dest_kind: "hangup" });
    await platform.configCache.settle();
    expect(heard).toEqual([]);
  });

  test("per-row answers for a batch are read once for the rows not held, not-found answers kept too, and dropped by their account's change", async () => {
    const a = await seed(platform);
    const b = await seed(platform);
    const loaded: string[][] = [];
    const load = async (missing: Array<{ account_id: string; id: string }>) => {
      loaded.push(missing.map((m) => m.id));
      return new Map(missing.filter((m) => m.id !== "nobody").map((m) => [`${m.account_id}\u0000${m.id}`, { id: m.id }]));
    };
    const refs = [
      { account_id: a.accountId, id: "u1" },
      { account_id: a.accountId, id: "nobody" },
      { account_id: b.accountId, id: "u1" },
      { account_id: a.accountId, id: "u1" },
    ];
    const first = await platform.configCache.readEach("test\u0000", refs, load);
    expect([...first.keys()]).toEqual([`${a.accountId}\u0000u1`, `${b.accountId}\u0000u1`]);
    expect(loaded).toEqual([["u1", "nobody", "u1"]]);
    // All held, the not-found one too: nothing is read.
    expect([...(await platform.configCache.readEach("test\u0000", refs, load)).keys()]).toEqual([...first.keys()]);
    expect(loaded.length).toBe(1);
    // Account b changes: its row is read again, a's are still held.
    await createExtension(platform.db, b.accountId, { digits: "302", dest_kind: "hangup" });
    await platform.configCache.settle();
    await platform.configCache.readEach("test\u0000", refs, load);
    expect(loaded.slice(1)).toEqual([["u1"]]);
  });

  test("a dialog batch's reads through the cache (accounts, users, device owners, default plans, subscriptions) see each change on the next read", async () => {
    const s = await seed(platform);
    const cache = platform.configCache;
    const userKey = (id: string) => `${s.accountId}\u0000${id}`;
    // Before: an account not yet created, a user not yet made, no plan, no subscription (all kept as such).
    const later = `acc_${randomUUID().replaceAll("-", "").slice(0, 20)}`;
    expect(await existingAccountIds(platform.db, [s.accountId, later], cache)).toEqual(new Set([s.accountId]));
    expect(await existingUserKeys(platform.db, [{ account_id: s.accountId, id: s.userId }], cache)).toEqual(new Map([[userKey(s.userId), { is_agent: 0 }]]));
    expect(await deviceOwners(platform.db, [{ account_id: s.accountId, id: s.deviceId }], cache)).toEqual(new Map([[userKey(s.deviceId), { user_id: s.userId, is_agent: 0 }]]));
    expect(await defaultRatePlans(platform.db, [s.accountId], cache)).toEqual(new Map());
    expect(await activeSubscriptions(platform.db, [s.accountId], cache)).toEqual([]);

    // Changes, each through the database (triggers tell every instance).
    await platform.db.insert(accounts).values({ id: later, name: "later", created_at: nowSeconds(), updated_at: nowSeconds() });
    await updateUser(platform.db, s.accountId, s.userId, { is_agent: 1 });
    const planId = newId("rp");
    await insertRatePlan(platform.db, { account_id: s.accountId, id: planId, name: "Retail", currency: "EUR", is_default: 1, rates: [], created_at: nowSeconds(), updated_at: nowSeconds() });
    const hook = await createWebhook(platform.db, platform.secrets, s.accountId, { url: "https://127.0.0.1:9/hook", events: "call.ended" }, { allowPrivate: true });
    await cache.settle();

    expect(await existingAccountIds(platform.db, [s.accountId, later], cache)).toEqual(new Set([s.accountId, later]));
    expect(await existingUserKeys(platform.db, [{ account_id: s.accountId, id: s.userId }], cache)).toEqual(new Map([[userKey(s.userId), { is_agent: 1 }]]));
    expect(await deviceOwners(platform.db, [{ account_id: s.accountId, id: s.deviceId }], cache)).toEqual(new Map([[userKey(s.deviceId), { user_id: s.userId, is_agent: 1 }]]));
    expect((await defaultRatePlans(platform.db, [s.accountId], cache)).get(s.accountId)?.id).toBe(planId);
    expect(await activeSubscriptions(platform.db, [s.accountId], cache)).toEqual([{ account_id: s.accountId, id: hook.id, events: ["call.ended"] }]);
    // Another instance sees them too, a moment after the commit.
    await eventually(async () => expect((await activeSubscriptions(other.db, [s.accountId], other.configCache)).map((w) => w.id)).toEqual([hook.id]));
  });

  test("bounded: entries past the cap push the oldest out, and an account whose entries all went is forgotten too", async () => {
    const cache = platform.configCache;
    const load = async (missing: Array<{ account_id: string; id: string }>) => new Map(missing.map((m) => [`${m.account_id}\u0000${m.id}`, m.id]));
    // Many more accounts than the cache holds entries (each read keeps one entry for its account).
    for (let i = 0; i < 30; i++) {
      const refs = Array.from({ length: 1000 }, (_, j) => ({ account_id: `acc_bound_${i}_${j}`, id: "x" }));
      await cache.readEach("bound\u0000", refs, load);
    }
    expect(cache.size).toBeLessThanOrEqual(20_000);
    expect(cache.accounts).toBeLessThanOrEqual(cache.size);
  });

  test("a cached context cannot be changed by a caller; a stopped cache keeps nothing", async () => {
    const s = await seed(platform);
    await route(platform, s.realm, "pw-1001-long", "300");
    const { device } = await authenticateDigestForRoute(digestAuthDeps(platform), digest(s.realm, "pw-1001-long"), "300");
    expect(() => {
      (device!.caller as { status: string }).status = "disabled";
    }).toThrow();
    expect(device!.caller?.status).toBe("active");

    const cache = await startConfigCache(platform.database, platform.log);
    expect(cache.active).toBe(true);
    await cache.stop();
    expect(cache.active).toBe(false);
    let reads = 0;
    const load = async () => {
      reads += 1;
      return { account: s.accountId };
    };
    await cache.read("k", load, (v) => v.account);
    await cache.read("k", load, (v) => v.account);
    expect([reads, cache.size]).toEqual([2, 0]);
  });

  test("a listen that stops answering (a dropped connection, told nothing) empties the cache and serves nothing until confirmed again", async () => {
    // A stand-in PostgreSQL whose notifications can be lost: the real server cannot be made to drop
    // a listen silently on demand. Only the cache's own bookkeeping is under test here.
    let delivering = true;
    let onNotify: (payload: string) => void = () => {};
    const tokenIn = (value: unknown, seen = new Set<unknown>()): string | undefined => {
      if (typeof value === "string") return value.startsWith("~sync:") ? value : undefined;
      if (!value || typeof value !== "object" || seen.has(value)) return undefined;
      seen.add(value);
      for (const inner of Object.values(value)) {
        const found = tokenIn(inner, seen);
        if (found) return found;
      }
      return undefined;
    };
    const fake = {
      ...platform.database,
      kind: "postgres" as const,
      db: { execute: async (query: unknown) => void (delivering && queueMicrotask(() => onNotify(tokenIn(query)!))) } as unknown as Platform["db"],
      listen: async (_channel: string, notify: (payload: string) => void, onListen: () => void) => {
        onNotify = notify;
        onListen();
        return async () => {};
      },
    };
    let clock = 1_000_000;
    const cache = await startConfigCache(fake, platform.log, { heartbeatMs: 20, maxUnconfirmedMs: 3_000, now: () => clock });
    let reads = 0;
    const load = async () => {
      reads += 1;
      return { account: "acc_x" };
    };
    try {
      await cache.read("k", load, (v) => v.account);
      await cache.read("k", load, (v) => v.account);
      expect([reads, cache.size, cache.active]).toEqual([1, 1, true]);
      // Confirmed by a notification that came back: still served 2 s later.
      clock += 2_000;
      await cache.settle();
      clock += 2_000;
      await cache.read("k", load, (v) => v.account);
      expect(reads).toBe(1);
      // Notifications lost from here: past 3 s unconfirmed, emptied and read through, not kept.
      delivering = false;
      clock += 3_500;
      expect(cache.active).toBe(false);
      await cache.read("k", load, (v) => v.account);
      await cache.read("k", load, (v) => v.account);
      expect([reads, cache.size]).toEqual([3, 0]);
      // Its heartbeat comes back again: confirmed, kept again.
      delivering = true;
      await eventually(() => expect(cache.active).toBe(true));
      await cache.read("k", load, (v) => v.account);
      await cache.read("k", load, (v) => v.account);
      expect([reads, cache.size]).toEqual([4, 1]);
    } finally {
      await cache.stop();
    }
  });
});
