/**
 * A client generated from GET /v1/openapi.json (openapi-typescript) type-checks a program that uses
 * it (openapi-fetch), and the same program runs against the API: the document is precise enough to
 * build real clients from.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import openapiTS, { astToString } from "openapi-typescript";
import type { Platform } from "../core/platform.ts";
import { createPublicApp } from "./app.ts";
import { seedTenant, testPlatform } from "../../test/support/platform.ts";

let platform: Platform;
let app: ReturnType<typeof createPublicApp>;
const dir = mkdtempSync(join(import.meta.dir, "..", "..", ".client-test-"));

beforeAll(async () => {
  platform = await testPlatform();
  app = createPublicApp(platform);
});
afterAll(async () => {
  await platform.close();
  rmSync(dir, { recursive: true, force: true });
});

/** The program a client developer would write. It must compile against the generated types. */
const PROGRAM = `
import createClient from "openapi-fetch";
import type { paths } from "./parley-api";

export async function tour(baseUrl: string, apiKey: string, fetcher: typeof fetch) {
  const api = createClient<paths>({ baseUrl, headers: { "x-api-key": apiKey }, fetch: fetcher });
  const who = await api.GET("/v1/whoami");
  if (!who.data) throw new Error("whoami failed");
  const via: "key" | "token" = who.data.via;
  const account = await api.GET("/v1/account");
  const tz: string | undefined = account.data?.data.timezone;
  const patched = await api.PATCH("/v1/account", { body: { timezone: "Europe/Paris", recording_retention_days: 90 } });
  const key = await api.POST("/v1/keys", { body: { label: "from the generated client", scopes: ["cdr"] } });
  const secret: string | undefined = key.data?.data.secret;
  const page = await api.GET("/v1/keys", { params: { query: { limit: 2 } } });
  const next: string | undefined = page.data?.next_cursor;
  const revoked = await api.DELETE("/v1/keys/{id}", { params: { path: { id: key.data!.data.id } } });
  const refused = await api.PATCH("/v1/account", { body: { timezone: "Mars/Olympus" } });
  const code: string | undefined = refused.error?.error;
  return { via, tz, patchedTz: patched.data?.data.timezone, secret, next, revoked: revoked.data?.ok, code };
}
`;

describe("a client generated from the OpenAPI document", () => {
  test("type-checks a program that uses it, and the program runs", async () => {
    const doc = await (await app.handle(new Request("http://localhost/v1/openapi.json"))).json();
    const ast = await openapiTS(doc as Parameters<typeof openapiTS>[0]);
    writeFileSync(join(dir, "parley-api.d.ts"), astToString(ast));
    writeFileSync(join(dir, "program.ts"), PROGRAM);
    writeFileSync(
      join(dir, "tsconfig.json"),
      JSON.stringify({
        compilerOptions: { strict: true, noEmit: true, target: "ESNext", module: "ESNext", moduleResolution: "bundler", lib: ["ESNext", "DOM"], skipLibCheck: true, types: [] },
        files: ["program.ts", "parley-api.d.ts"],
      }),
    );
    const tsc = Bun.spawnSync([join(import.meta.dir, "..", "..", "node_modules", ".bin", "tsc"), "-p", dir], { stdout: "pipe", stderr: "pipe" });
    expect(tsc.stdout.toString() + tsc.stderr.toString()).toBe("");
    expect(tsc.exitCode).toBe(0);

    // A program that misuses the API must NOT compile: the types carry real information.
    writeFileSync(join(dir, "program.ts"), PROGRAM.replace('timezone: "Europe/Paris"', "timezone: 42").replace('"/v1/whoami"', '"/v1/whoami"'));
    const bad = Bun.spawnSync([join(import.meta.dir, "..", "..", "node_modules", ".bin", "tsc"), "-p", dir], { stdout: "pipe" });
    expect(bad.exitCode).not.toBe(0);
    expect(bad.stdout.toString()).toContain("is not assignable to type 'string'");

    writeFileSync(join(dir, "program.ts"), PROGRAM);
    const { tour } = await import(join(dir, "program.ts"));
    const t = await seedTenant(platform);
    const fetcher = (input: Request | string | URL, init?: RequestInit) => app.handle(new Request(input, init));
    const result = await tour("http://localhost", t.key, fetcher);
    expect(result).toMatchObject({ via: "key", tz: "UTC", patchedTz: "Europe/Paris", revoked: true, code: "validation_failed" });
    expect(result.secret).toMatch(/^sk_/);
  }, 60_000);
});
