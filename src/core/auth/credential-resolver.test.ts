/** The credential cache: what it keeps, and that a revocation racing a lookup is never kept. */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Platform } from "../platform.ts";
import type { DbOrTx } from "../db/db.ts";
import { seedTenant, storeKind, testPlatform } from "../../../test/support/platform.ts";
import { createCredentialResolver } from "./credential-resolver.ts";
import { revokeKey } from "./auth.service.ts";
import { adminPatchAccount } from "../accounts/accounts.service.ts";

let platform: Platform;
beforeAll(async () => {
  platform = await testPlatform();
});
afterAll(() => platform.close());

/**
 * The database with one query's reply held back (a slow PostgreSQL reply): `hold(n)` holds the reply
 * of the n-th query awaited after it (1: the next) until `release()`.
 */
function slowDatabase(db: DbOrTx) {
  let gate: Promise<void> | null = null;
  let skip = 0;
  let release = () => {};
  let heldOne = () => {};
  const wrap = <T extends object>(target: T): T =>
    new Proxy(target, {
      get(object, name) {
        const value = Reflect.get(object, name);
        if (name === "then" && typeof value === "function") {
          const waiting = gate && skip-- === 0 ? gate : null;
          return (resolve: (v: unknown) => void, reject: (e: unknown) => void) =>
            (value as (a: (v: unknown) => void, b: (e: unknown) => void) => unknown).call(
              object,
              async (result: unknown) => {
                if (waiting) {
                  heldOne();
                  await waiting;
                }
                resolve(result);
              },
              reject,
            );
        }
        if (typeof value !== "function") return value;
        return (...args: unknown[]) => {
          const out = (value as (...a: unknown[]) => unknown).apply(object, args);
          return out !== null && typeof out === "object" ? wrap(out) : out;
        };
      },
    });
  return {
    db: wrap(db),
    hold(nth: number) {
      skip = nth - 1;
      const held = new Promise<void>((resolve) => (heldOne = resolve));
      gate = new Promise<void>((resolve) => (release = resolve));
      return {
        held,
        release: () => {
          gate = null;
          release();
        },
      };
    },
  };
}

describe(`credential cache [${storeKind}]`, () => {
  test("a key revoked while its lookup was being read is not kept: the next request is refused", async () => {
    const t = await seedTenant(platform);
    const slow = slowDatabase(platform.db);
    const resolver = await createCredentialResolver({ db: slow.db, live: platform.live, tokens: platform.tokens });
    try {
      // The key's lookup reads its hash's row, then the key: the key's reply is held.
      const hold = slow.hold(2);
      const inFlight = resolver.fromApiKey(t.key);
      await hold.held;
      // DELETE /v1/keys/{id}: revoked, then dropped from every instance's cache (this one's too).
      await revokeKey(platform.db, t.accountId, t.keyId);
      await resolver.invalidateKey(t.keyId);
      hold.release();
      // The request that was in flight began before the revocation: its answer stands.
      await inFlight;
      expect(resolver.cachedApiKey(t.key)).toBeUndefined();
      await expect(resolver.fromApiKey(t.key)).rejects.toMatchObject({ code: "unauthorized" });
    } finally {
      await resolver.close();
    }
  });

  test("an account suspended while its status was being read is not kept as active", async () => {
    const t = await seedTenant(platform);
    const slow = slowDatabase(platform.db);
    const resolver = await createCredentialResolver({ db: slow.db, live: platform.live, tokens: platform.tokens });
    try {
      const hold = slow.hold(1);
      const inFlight = resolver.accountGate(t.accountId);
      await hold.held;
      await adminPatchAccount(platform.db, t.accountId, { status: "suspended" });
      await resolver.invalidateAccount(t.accountId);
      hold.release();
      expect((await inFlight)?.status).toBe("active");
      expect((await resolver.accountGate(t.accountId))?.status).toBe("suspended");
    } finally {
      await resolver.close();
    }
  });
});
