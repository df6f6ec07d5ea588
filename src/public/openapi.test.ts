/** GET /v1/openapi.json: a valid OpenAPI 3.0 document that describes every route. */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createConfig, lintFromString } from "@redocly/openapi-core";
import type { Platform } from "../core/platform.ts";
import { createPublicApp } from "./app.ts";
import { testPlatform } from "../../test/support/platform.ts";
import { call, type Json } from "../../test/support/http.ts";
import { EVENT_NAMES, eventCatalog } from "../core/webhooks/event-catalog.ts";

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

  test("every request body has its media type and schema; an optional one says so", async () => {
    const bodies: Array<[string, Json]> = [];
    for (const [path, item] of Object.entries<Json>(doc.paths)) {
      for (const [method, operation] of Object.entries<Json>(item)) if (operation.requestBody) bodies.push([`${method} ${path}`, operation.requestBody]);
    }
    expect(bodies.length).toBeGreaterThan(20);
    for (const [where, body] of bodies) expect(Object.keys(body.content ?? {}).length, where).toBeGreaterThan(0);
    const byName = (where: string): Json => bodies.find(([w]) => w === where)?.[1] ?? {};
    for (const where of ["post /v1/webhooks/test", "post /v1/events/ticket", "post /v1/cac/reset"]) {
      expect(byName(where).required, where).toBe(false);
      expect(byName(where).content["application/json"].schema.type, where).toBe("object");
    }
    expect(Object.keys(byName("post /v1/webhooks/test").content["application/json"].schema.properties)).toEqual(["webhook_id"]);
    expect(byName("post /v1/events/ticket").content["application/json"].schema.properties.kind.enum).toEqual(["events", "wallboard"]);
    expect(byName("post /v1/webhooks").required).toBe(true);
  });

  test("whole numbers in query strings are documented as integers, with no made-up default", async () => {
    const numbers: Array<[string, Json]> = [];
    for (const [path, item] of Object.entries<Json>(doc.paths)) {
      for (const [method, operation] of Object.entries<Json>(item)) {
        for (const parameter of operation.parameters ?? []) {
          if (parameter.in !== "query") continue;
          expect(JSON.stringify(parameter.schema), `${method} ${path} ${parameter.name}`).not.toContain('"format":"integer"');
          if (parameter.schema.type === "integer") numbers.push([`${method} ${path} ${parameter.name}`, parameter.schema]);
        }
      }
    }
    const limit = numbers.find(([where]) => where === "get /v1/logs limit")![1];
    expect(limit).toEqual({ type: "integer", minimum: 1, maximum: 500, description: expect.stringContaining("default 50") });
    expect(numbers.every(([, schema]) => schema.default === undefined)).toBe(true);
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

  test("each event's data has a schema, and x-webhooks describes what we POST for it (headers, body, example)", () => {
    expect(Object.keys(doc["x-webhooks"])).toEqual(EVENT_NAMES);
    const samples = new Map(eventCatalog().map((e) => [e.name, e.sample]));
    for (const name of EVENT_NAMES) {
      const post = doc["x-webhooks"][name].post;
      const media = post.requestBody.content["application/json"];
      const ref: string = media.schema.properties.data.$ref;
      const data = doc.components.schemas[ref.replace("#/components/schemas/", "")];
      expect(data, name).toMatchObject({ type: "object", additionalProperties: false });
      // The schema names exactly the fields the sample delivery carries.
      expect(Object.keys(data.properties).sort(), name).toEqual(Object.keys(samples.get(name)!.data).sort());
      expect(media.schema.properties.event.enum).toEqual([name]);
      expect(media.example).toEqual(samples.get(name));
      expect(post.parameters.map((p: Json) => p.name)).toEqual(["x-service-event", "x-service-event-id", "x-service-signature", "webhook-id", "webhook-timestamp", "webhook-signature"]);
    }
    expect(Object.keys(doc.components.schemas.EventData_call_ended.properties).sort()).toEqual(["agent_id", "answered", "billsec", "callId", "direction", "hangup_cause", "queue_id", "ts"]);
  });

  test("every write takes Idempotency-Key; every body may be refused 413 and 415; GET /v1/calls also answers text/csv", () => {
    let writes = 0;
    for (const [path, item] of Object.entries(doc.paths as Record<string, Record<string, Json>>)) {
      for (const [method, operation] of Object.entries(item)) {
        if (["post", "patch", "delete", "put"].includes(method)) {
          writes++;
          expect(operation.parameters?.filter((p: Json) => p.in === "header" && p.name === "Idempotency-Key"), `${method} ${path}`).toHaveLength(1);
        }
        if (operation.requestBody) expect(Object.keys(operation.responses), `${method} ${path}`).toEqual(expect.arrayContaining(["413", "415"]));
      }
    }
    expect(writes).toBeGreaterThan(40);
    const csv = doc.paths["/v1/calls"].get.responses["200"].content;
    expect(Object.keys(csv)).toEqual(["application/json", "text/csv"]);
    // The JSON reply is the list alone; the CSV text is its own media type, and the route's marker is gone.
    expect(csv["application/json"].schema.anyOf).toBeUndefined();
    expect(csv["text/csv"].schema.type).toBe("string");
    expect(JSON.stringify(doc)).not.toContain("x-also-returns");
    // The Idempotency-Key parameter is the core's schema (the one checkIdempotencyKey enforces).
    expect(doc.paths["/v1/keys"].post.parameters.find((p: Json) => p.name === "Idempotency-Key").schema).toMatchObject({ minLength: 1, maxLength: 255, pattern: "^[!-~]+$" });
  });

  test("every /v1 operation says the scope it needs, and its 403 names it", () => {
    for (const [path, item] of Object.entries(doc.paths as Record<string, Record<string, Json>>)) {
      if (!path.startsWith("/v1/")) continue;
      for (const [method, operation] of Object.entries(item)) {
        // Open routes (GET /v1, GET /v1/scopes) take no credential at all.
        if (Array.isArray(operation.security) && operation.security.length === 0) continue;
        expect(typeof operation["x-required-scope"], `${method} ${path}`).toBe("string");
        expect(operation.description, `${method} ${path}`).toMatch(/^(Scope: [a-z_.]+( or [a-z_.]+)*\.|Any valid credential)/);
      }
    }
    expect(doc.paths["/v1/live"].get["x-required-scope"]).toBe("cdr");
    expect(doc.paths["/v1/live/interactions"].get["x-required-scope"]).toBe("reports");
    expect(doc.paths["/v1/cac/reset"].post.responses["403"].description).toContain("cdr");
    expect(doc.paths["/v1/events/ticket"].post["x-required-scope"]).toBe("events or wallboard");
    expect(doc.paths["/v1/events/ticket"].post.responses["403"].description).toContain('need: "events"');
  });
});
