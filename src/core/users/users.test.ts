/** Users at the service level: deletes racing device creation. */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { sql } from "drizzle-orm";
import type { Platform } from "../platform.ts";
import { rawRows } from "../db/migrate.ts";
import { seedTenant, storeKind, testPlatform } from "../../../test/support/platform.ts";
import { createDevice } from "../devices/devices.service.ts";
import { createUser, deleteUser } from "./users.service.ts";

let platform: Platform;

beforeAll(async () => {
  platform = await testPlatform();
});
afterAll(() => platform.close());

describe(`deleteUser [${storeKind}]`, () => {
  test("a device created while its user is being deleted never outlives the user", async () => {
    const t = await seedTenant(platform);
    for (let i = 0; i < 20; i++) {
      const user = await createUser(platform.db, t.accountId, { username: `u${i}` });
      // Both may win: the device is then either refused (400, no user) or deleted with the user.
      await Promise.allSettled([
        createDevice(platform.db, t.accountId, { user_id: user.id, password: "s3cret-pass" }),
        deleteUser(platform.db, t.accountId, user.id),
      ]);
    }
    const orphans = await rawRows<{ n: number }>(
      platform.db,
      sql`select count(*)::int as n from device d where d.account_id = ${t.accountId} and not exists (select 1 from app_user u where u.account_id = d.account_id and u.id = d.user_id)`,
    );
    expect(orphans[0]!.n).toBe(0);
    const strayCredentials = await rawRows<{ n: number }>(
      platform.db,
      sql`select count(*)::int as n from device_credential c where c.account_id = ${t.accountId} and not exists (select 1 from device d where d.account_id = c.account_id and d.id = c.device_id)`,
    );
    expect(strayCredentials[0]!.n).toBe(0);
    expect((await rawRows<{ n: number }>(platform.db, sql`select count(*)::int as n from app_user where account_id = ${t.accountId}`))[0]!.n).toBe(0);
  });
});
