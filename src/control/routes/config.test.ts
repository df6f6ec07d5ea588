/** POST /admin/config/plan, POST /admin/config/apply, GET /admin/config/export on the control host. */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Platform } from "../../core/platform.ts";
import { createControlApp } from "../app.ts";
import { configRoutes } from "./config.ts";
import { storeKind, TEST_ADMIN_TOKEN, testPlatform } from "../../../test/support/platform.ts";
import { call, type Json } from "../../../test/support/http.ts";
import { REALISTIC_ENV, realisticYaml, seedConfigAccount, snapshotAccount } from "../../core/config-file/config-file.fixture.ts";

/** Exactly how the control host mounts the module (createControlApp(...).use(configRoutes(...))). */
const mount = (p: Platform) => createControlApp(p).use(configRoutes(p));

let platform: Platform;
let app: ReturnType<typeof mount>;
const headers = { "x-admin-token": TEST_ADMIN_TOKEN };
const savedEnv = process.env.CARRIER_PASSWORD;

beforeAll(async () => {
  platform = await testPlatform();
  app = mount(platform);
  // ${VAR} secrets are read from the control host's environment.
  process.env.CARRIER_PASSWORD = REALISTIC_ENV.CARRIER_PASSWORD;
});
afterAll(async () => {
  if (savedEnv === undefined) delete process.env.CARRIER_PASSWORD;
  else process.env.CARRIER_PASSWORD = savedEnv;
  await platform.close();
});

const detailPaths = (body: Json) => (body.details as Array<{ path: string }>).map((d) => d.path);

describe(`admin config endpoints: happy [${storeKind}]`, () => {
  test("plan, apply, export, and re-apply of the export (YAML and JSON)", async () => {
    const seed = await seedConfigAccount(platform);
    const content = realisticYaml(seed);

    const plan = await call(app, "POST", "/admin/config/plan", { headers, body: { account_id: seed.accountId, content } });
    expect(plan.status).toBe(200);
    expect(plan.body.data.changes).toBe(24);
    expect(plan.body.data.resources.trunks.create.map((c: Json) => c.key)).toEqual(["carrier-a", "office-pbx"]);
    expect(await snapshotAccount(platform, seed.accountId)).not.toContain("carrier-a"); // a plan writes nothing

    const apply = await call(app, "POST", "/admin/config/apply", { headers, body: { account_id: seed.accountId, format: "yaml", content } });
    expect(apply.status).toBe(200);
    expect(apply.body.data.applied).toBe(1);
    expect(apply.body.data.plan).toEqual(plan.body.data);
    expect(apply.text).not.toContain(REALISTIC_ENV.CARRIER_PASSWORD);

    for (const format of ["yaml", "json"] as const) {
      const exported = await call(app, "GET", `/admin/config/export?account_id=${seed.accountId}&format=${format}`, { headers });
      expect(exported.status).toBe(200);
      expect(exported.body.data).toMatchObject({ account_id: seed.accountId, format });
      expect(exported.text).not.toContain(REALISTIC_ENV.CARRIER_PASSWORD);
      const again = await call(app, "POST", "/admin/config/apply", { headers, body: { account_id: seed.accountId, format, content: exported.body.data.content } });
      expect(again.status).toBe(200);
      expect(again.body.data).toMatchObject({ applied: 0, plan: { changes: 0 } });
    }
    const yamlByDefault = await call(app, "GET", `/admin/config/export?account_id=${seed.accountId}`, { headers });
    expect(yamlByDefault.body.data.format).toBe("yaml");
    expect(yamlByDefault.body.data.content).toContain("name: carrier-a");
  });
});

describe(`admin config endpoints: errors [${storeKind}]`, () => {
  test("a route to an unknown trunk name is a 400 with the path in the file, and nothing is written", async () => {
    const seed = await seedConfigAccount(platform);
    const content = realisticYaml(seed).replace("trunk: office-pbx", "trunk: office-pbx-2");
    const before = await snapshotAccount(platform, seed.accountId);
    for (const path of ["/admin/config/plan", "/admin/config/apply"]) {
      const r = await call(app, "POST", path, { headers, body: { account_id: seed.accountId, content } });
      expect(r.status, path).toBe(400);
      expect(r.body.error).toBe("validation_failed");
      expect(r.body.details).toEqual([{ path: "/outbound_routes/2/trunk", message: "No trunk named 'office-pbx-2' in this file." }]);
    }
    expect(await snapshotAccount(platform, seed.accountId)).toBe(before);
  });

  test("bad requests: unparseable content, bad body fields, unknown account", async () => {
    const seed = await seedConfigAccount(platform);
    const cases: Array<[Json, string]> = [
      [{ account_id: seed.accountId, content: "version: [1" }, ""],
      [{ account_id: seed.accountId, format: "json", content: "version: 1" }, ""],
      [{ account_id: seed.accountId, content: "version: 2" }, "/version"],
      [{ account_id: seed.accountId, format: "xml", content: "version: 1" }, "/format"],
      [{ account_id: seed.accountId }, "/content"],
      [{ content: "version: 1" }, "/account_id"],
      [{ account_id: seed.accountId, content: "version: 1", extra: 1 }, "/extra"],
      [{ account_id: "acc_nope", content: "version: 1" }, "/account_id"],
    ];
    for (const [body, path] of cases) {
      for (const endpoint of ["/admin/config/plan", "/admin/config/apply"]) {
        const r = await call(app, "POST", endpoint, { headers, body });
        expect(r.status, `${endpoint} ${JSON.stringify(body)}`).toBe(400);
        expect(detailPaths(r.body), `${endpoint} ${JSON.stringify(body)}`).toContain(path);
      }
    }
    const unknown = await call(app, "GET", "/admin/config/export?account_id=acc_nope", { headers });
    expect(unknown.status).toBe(400);
    expect(detailPaths(unknown.body)).toEqual(["/query/account_id"]);
    const badFormat = await call(app, "GET", `/admin/config/export?account_id=${seed.accountId}&format=xml`, { headers });
    expect(badFormat.status).toBe(400);
    expect(detailPaths(badFormat.body)).toContain("/query/format");
  });

  test("claiming another account's SIP domain is a 409 naming the field", async () => {
    const a = await seedConfigAccount(platform);
    const b = await seedConfigAccount(platform);
    await call(app, "POST", "/admin/config/apply", { headers, body: { account_id: a.accountId, content: realisticYaml(a) } });
    const content = realisticYaml(b).replace(`acme-${b.tag}.example.net`, `acme-${a.tag}.example.net`);
    const r = await call(app, "POST", "/admin/config/apply", { headers, body: { account_id: b.accountId, content } });
    expect(r.status).toBe(409);
    expect(r.body).toMatchObject({ ok: false, error: "conflict", field: "/sip_domains/1/domain" });
  });
});

describe(`admin config endpoints: security [${storeKind}]`, () => {
  test("every endpoint needs the exact x-admin-token", async () => {
    const seed = await seedConfigAccount(platform);
    const before = await snapshotAccount(platform, seed.accountId);
    for (const h of [{}, { "x-admin-token": "wrong" }] as Array<Record<string, string>>) {
      for (const [method, path] of [["POST", "/admin/config/plan"], ["POST", "/admin/config/apply"], ["GET", `/admin/config/export?account_id=${seed.accountId}`]] as const) {
        const r = await call(app, method, path, { headers: h, body: method === "POST" ? { account_id: seed.accountId, content: realisticYaml(seed) } : undefined });
        expect(r.status, `${method} ${path}`).toBe(401);
        expect(r.text).not.toContain("carrier-a");
      }
    }
    expect(await snapshotAccount(platform, seed.accountId)).toBe(before);
  });
});
