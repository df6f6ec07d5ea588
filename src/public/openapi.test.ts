/** GET /v1/openapi.json: a valid OpenAPI 3.0 document that describes every route. */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createConfig, lintFromString } from "@redocly/openapi-core";
import type { Platform } from "../core/platform.ts";
import { createPublicApp } from "./app.ts";
import { testPlatform } from "../../test/support/platform.ts";
import { call, type Json } from "../../test/support/http.ts";

let platform: Platform;
let app: ReturnType<typeof createPublicApp>;
let doc: Json;

beforeAll(async () => {
  platform = await testPlatform();
  app = createPublicApp(platform);
  doc = (await call(app, "GET", "/v1/openapi.json")).body;
});
afterAll(() => platform.close());

describe("OpenAPI document", () => {
  test("is open and OpenAPI 3.0 with both security schemes", async () => {
    expect(doc.openapi).toMatch(/^3\.0\./);
    expect(doc.components.securitySchemes.apiKey).toEqual(expect.objectContaining({ type: "apiKey", in: "header", name: "x-api-key" }));
    expect(doc.components.securitySchemes.bearer).toEqual(expect.objectContaining({ type: "http", scheme: "bearer", bearerFormat: "JWT" }));
  });

  test("passes the Redocly linter with no errors", async () => {
    const config = await createConfig({ extends: ["recommended"] });
    const problems = await lintFromString({ source: JSON.stringify(doc), absoluteRef: "/openapi.json", config });
    const errors = problems.filter((p) => p.severity === "error").map((p) => `${p.ruleId} ${p.message} ${p.location[0]?.pointer}`);
    expect(errors).toEqual([]);
    // The only warnings allowed: open endpoints that have no 4xx reply at all.
    const warnings = problems.filter((p) => p.severity === "warn" && p.ruleId !== "operation-4xx-response");
    expect(warnings.map((p) => `${p.ruleId} ${p.message}`)).toEqual([]);
  });

  test("lists every /v1 route of the app, with its error replies", async () => {
    const routes = app.routes.filter((r) => r.path.startsWith("/v1") && r.path !== "/v1/openapi.json" && r.method !== "OPTIONS");
    expect(routes.length).toBeGreaterThan(5);
    for (const route of routes) {
      const path = route.path.replace(/:(\w+)/g, "{$1}");
      const op = doc.paths[path]?.[route.method.toLowerCase()];
      expect(op, `${route.method} ${path}`).toBeDefined();
      expect(op.responses["200"] ?? op.responses["201"] ?? op.responses["202"], `${route.method} ${path}`).toBeDefined();
      const open = Array.isArray(op.security) && op.security.length === 0;
      if (!open) {
        expect(op.responses["401"], `${route.method} ${path} 401`).toBeDefined();
        expect(op.responses["401"].content["application/json"].schema.$ref).toBe("#/components/schemas/Error");
      }
    }
  });

  test("write bodies are described, with their fields", async () => {
    const patch = doc.paths["/v1/account"].patch.requestBody.content["application/json"].schema;
    expect(Object.keys(patch.properties)).toEqual(expect.arrayContaining(["timezone", "language", "recording_retention_days"]));
    expect(patch.additionalProperties).toBe(false);
    expect(doc.paths["/v1/account"].patch.requestBody.content["application/x-www-form-urlencoded"]).toBeUndefined();
  });
});
