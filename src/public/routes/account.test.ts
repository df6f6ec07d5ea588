/** /v1/account and /v1/accounts: happy paths, errors and security. */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Platform } from "../../core/platform.ts";
import { createPublicApp } from "../app.ts";
import { keyWithScopes, seedTenant, storeKind, testPlatform } from "../../../test/support/platform.ts";
import { call, type Json } from "../../../test/support/http.ts";
import { sql } from "drizzle-orm";
import { rawRows } from "../../core/db/migrate.ts";
import { isTimeZone } from "../../core/validation/formats.ts";

let platform: Platform;
let app: ReturnType<typeof createPublicApp>;

beforeAll(async () => {
  platform = await testPlatform();
  app = createPublicApp(platform);
});
afterAll(() => platform.close());

describe(`/v1/account [${storeKind}]`, () => {
  test("GET shows the account with SPEC.md's defaults", async () => {
    const t = await seedTenant(platform, { name: "Acme Support" });
    const r = await call(app, "GET", "/v1/account", { key: t.key });
    expect(r.status).toBe(200);
    expect(r.body.ok).toBe(true);
    expect(r.body.data).toMatchObject({
      id: t.accountId,
      name: "Acme Support",
      status: "active",
      timezone: "UTC",
      language: "en-US",
      tone_country: "US",
      recording_retention_days: null,
      allow_free_caller_id: 0,
      is_reseller: 0,
      parent_id: null,
      max_in: null,
      max_out: null,
      max_dialer: null,
    });
  });

  test("PATCH changes only the fields sent", async () => {
    const t = await seedTenant(platform);
    const r = await call(app, "PATCH", "/v1/account", {
      key: t.key,
      body: { timezone: "America/New_York", recording_retention_days: 0, allow_free_caller_id: 1 },
    });
    expect(r.status).toBe(200);
    expect(r.body.data).toMatchObject({ timezone: "America/New_York", recording_retention_days: 0, allow_free_caller_id: 1, language: "en-US" });
    const r2 = await call(app, "PATCH", "/v1/account", { key: t.key, body: { language: "fr-FR", voice_gender: "male", tone_country: "FR", name: "Renamed", recording_retention_days: null } });
    expect(r2.body.data).toMatchObject({ timezone: "America/New_York", language: "fr-FR", voice_gender: "male", tone_country: "FR", name: "Renamed", recording_retention_days: null });
  });

  test("PATCH refuses admin-only and unknown fields with 400 naming the field, and changes nothing", async () => {
    const t = await seedTenant(platform);
    const before = (await call(app, "GET", "/v1/account", { key: t.key })).text;
    const cases: Array<[Json, string]> = [
      [{ status: "closed" }, "/status"],
      [{ parent_id: "acc_x" }, "/parent_id"],
      [{ id: "acc_y" }, "/id"],
      [{ max_in: 999 }, "/max_in"],
      [{ rate_limit_requests: 1e6 }, "/rate_limit_requests"],
      [{ is_reseller: 1 }, "/is_reseller"],
      [{ timezone: "Mars/Olympus" }, "/timezone"],
      [{ timezone: "+01:00" }, "/timezone"],
      [{ language: "english" }, "/language"],
      [{ tone_country: "XX" }, "/tone_country"],
      [{ tone_country: "us" }, "/tone_country"],
      [{ voice_gender: "robot" }, "/voice_gender"],
      [{ recording_retention_days: -1 }, "/recording_retention_days"],
      [{ recording_retention_days: "30" }, "/recording_retention_days"],
      [{ allow_free_caller_id: true }, "/allow_free_caller_id"],
      [{ allow_free_caller_id: 2 }, "/allow_free_caller_id"],
      [{ name: "" }, "/name"],
      [{ name: "ok", status: "suspended" }, "/status"],
    ];
    for (const [body, path] of cases) {
      const r = await call(app, "PATCH", "/v1/account", { key: t.key, body });
      expect(r.status, JSON.stringify(body)).toBe(400);
      expect(r.body.error).toBe("validation_failed");
      expect((r.body.details as Json[]).map((d) => d.path), JSON.stringify(body)).toContain(path);
    }
    expect((await call(app, "PATCH", "/v1/account", { key: t.key, body: {} })).status).toBe(400);
    expect((await call(app, "GET", "/v1/account", { key: t.key })).text).toBe(before);
  });

  test("a zone the runtime knows but the database does not (an old alias) is a 400, never a later 500 from usage or balance", async () => {
    const t = await seedTenant(platform);
    const zone = "US/Pacific-New";
    const [row] = await rawRows<{ ok: boolean }>(platform.db, sql`select exists (select 1 from pg_timezone_names where name = ${zone}) as ok`);
    const r = await call(app, "PATCH", "/v1/account", { key: t.key, body: { timezone: zone } });
    if (isTimeZone(zone) && !row!.ok) {
      expect(r.status).toBe(400);
      expect((r.body.details as Json[]).map((d) => d.path)).toEqual(["/timezone"]);
    } else expect(r.status).toBe(200);
    for (const path of ["/v1/usage?daily=1", "/v1/balance"]) expect((await call(app, "GET", path, { key: t.key })).status, path).toBe(200);
  });

  test("security: 401 without credential, 403 without the account scope, own account only", async () => {
    const t = await seedTenant(platform);
    const other = await seedTenant(platform, { name: "Other" });
    expect((await call(app, "GET", "/v1/account")).status).toBe(401);
    const cdr = await keyWithScopes(platform, t.accountId, ["cdr"]);
    const r = await call(app, "PATCH", "/v1/account", { key: cdr, body: { name: "x" } });
    expect(r.status).toBe(403);
    expect(r.body.need).toBe("account");
    // The account comes from the credential; a path or query cannot point elsewhere.
    const q = await call(app, "GET", `/v1/account?account_id=${other.accountId}`, { key: t.key });
    expect(q.body.data?.id ?? t.accountId).toBe(t.accountId);
    await call(app, "PATCH", "/v1/account", { key: t.key, body: { name: "Mine" } });
    expect((await call(app, "GET", "/v1/account", { key: other.key })).body.data.name).toBe("Other");
  });
});

describe(`/v1/accounts [${storeKind}]`, () => {
  test("a reseller lists its own subaccounts, page by page", async () => {
    const reseller = await seedTenant(platform, { is_reseller: 1 });
    const children: string[] = [];
    for (let i = 0; i < 3; i++) children.push((await seedTenant(platform, { parent_id: reseller.accountId })).accountId);
    await seedTenant(platform); // not a child
    const p1 = await call(app, "GET", "/v1/accounts?limit=2", { key: reseller.key });
    expect(p1.status).toBe(200);
    expect((p1.body.data as Json[]).length).toBe(2);
    const p2 = await call(app, "GET", `/v1/accounts?limit=2&cursor=${p1.body.next_cursor}`, { key: reseller.key });
    expect(p2.body.next_cursor).toBeUndefined();
    const ids = [...(p1.body.data as Json[]), ...(p2.body.data as Json[])].map((a) => a.id);
    expect(ids).toEqual(children);
  });

  test("a non-reseller gets 403; a child does not see its siblings", async () => {
    const plain = await seedTenant(platform);
    const r = await call(app, "GET", "/v1/accounts", { key: plain.key });
    expect(r.status).toBe(403);
    expect(r.body.error).toBe("forbidden");
    const cdr = await keyWithScopes(platform, plain.accountId, ["cdr"]);
    expect((await call(app, "GET", "/v1/accounts", { key: cdr })).body.need).toBe("accounts");
  });
});
