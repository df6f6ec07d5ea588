/**
 * The OpenAPI 3.0 document of a host, generated from the routes' own TypeBox schemas (no
 * hand-written duplicate) and normalized to what OpenAPI 3.0 allows: JSON Schema's `const` becomes a
 * one-value `enum`, enums carry the type of their values, `$id` is dropped, and `anyOf [X, null]`
 * becomes X with `nullable: true`.
 */
import type { AnyElysia } from "elysia";
import { toOpenAPISchema } from "@elysiajs/openapi";

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
type JsonObject = { [key: string]: Json };

function isObject(value: Json | undefined): value is JsonObject {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function typeOfValue(value: Json): string {
  if (typeof value === "number") return Number.isInteger(value) ? "integer" : "number";
  if (typeof value === "boolean") return "boolean";
  return "string";
}

/** Rewrites one schema (and everything under it) into OpenAPI 3.0 form. */
export function toOpenApi30Schema(node: Json): Json {
  if (Array.isArray(node)) return node.map(toOpenApi30Schema);
  if (!isObject(node)) return node;
  const out: JsonObject = {};
  for (const [key, value] of Object.entries(node)) {
    if (key === "$id" || key === "$schema") continue;
    out[key] = toOpenApi30Schema(value);
  }
  // OpenAPI 3.0 has no patternProperties: a map with one key pattern becomes additionalProperties,
  // and the pattern moves into the description (request validation still enforces it).
  if (isObject(out.patternProperties)) {
    const entries = Object.entries(out.patternProperties);
    delete out.patternProperties;
    if (entries.length === 1) {
      const [pattern, valueSchema] = entries[0]!;
      out.additionalProperties = valueSchema as Json;
      const note = `Keys match ${pattern}.`;
      out.description = typeof out.description === "string" ? `${out.description} ${note}` : note;
    }
  }
  if ("const" in out) {
    const value = out.const as Json;
    delete out.const;
    out.enum = [value];
    out.type = typeOfValue(value);
  }
  if (Array.isArray(out.enum) && out.enum.length > 0) {
    const types = new Set(out.enum.filter((v) => v !== null).map(typeOfValue));
    if (types.size === 1) out.type = [...types][0]!;
  }
  for (const combiner of ["anyOf", "oneOf"] as const) {
    const options = out[combiner];
    if (!Array.isArray(options)) continue;
    const nonNull = options.filter((o) => !(isObject(o) && o.type === "null"));
    if (nonNull.length === options.length) continue;
    delete out[combiner];
    out.nullable = true;
    if (nonNull.length === 1 && isObject(nonNull[0])) Object.assign(out, nonNull[0]);
    else out[combiner] = nonNull;
  }
  // A union of literals of one type reads better, and lints clean, as a single enum.
  for (const combiner of ["anyOf", "oneOf"] as const) {
    const options = out[combiner];
    if (!Array.isArray(options) || options.length === 0) continue;
    if (options.every((o) => isObject(o) && Array.isArray(o.enum) && o.enum.length === 1 && Object.keys(o).every((k) => k === "enum" || k === "type"))) {
      const values = options.flatMap((o) => (o as { enum: Json[] }).enum);
      const types = new Set(values.map(typeOfValue));
      if (types.size === 1) {
        delete out[combiner];
        out.enum = values;
        out.type = [...types][0]!;
      }
    }
  }
  return out;
}

export interface DocumentOptions {
  info: JsonObject;
  servers?: Json[];
  components?: JsonObject;
  security?: Json[];
  tags?: Json[];
  /** Paths left out of the document (probes, the document itself). */
  excludePaths?: string[];
  /** Extra component schemas (JSON Schema, converted like the routes'). */
  schemas?: JsonObject;
  /** Top-level `x-webhooks` (what we POST to subscribers; OpenAPI 3.1's `webhooks`). */
  webhooks?: JsonObject;
  /** The Idempotency-Key header every POST, PATCH and DELETE takes (a parameter object). */
  writeHeader?: JsonObject;
}

const WRITE_METHODS = new Set(["post", "put", "patch", "delete"]);

/**
 * What every operation says beyond Elysia's own: the write header on writes, 413/415 where a body is
 * read (the host refuses a body over its limit, or of another type, before the route runs), the scope
 * in words, and the other media types a route declares.
 */
function completeOperations(paths: JsonObject, options: DocumentOptions, errorSchema: Json | undefined): void {
  for (const item of Object.values(paths)) {
    if (!isObject(item)) continue;
    for (const [method, operation] of Object.entries(item)) {
      if (!isObject(operation)) continue;
      if (options.writeHeader && WRITE_METHODS.has(method)) {
        const parameters = Array.isArray(operation.parameters) ? operation.parameters : [];
        const name = String(options.writeHeader.name).toLowerCase();
        if (!parameters.some((p) => isObject(p) && p.in === "header" && String(p.name).toLowerCase() === name)) {
          operation.parameters = [...parameters, options.writeHeader];
        }
      }
      const responses = operation.responses;
      if (isObject(responses) && isObject(operation.requestBody) && errorSchema) {
        for (const [status, description] of [["413", "The body is larger than the host takes."], ["415", "The body is not of a media type this route takes."]] as const) {
          responses[status] ??= { description, content: { "application/json": { schema: errorSchema } } };
        }
      }
      // The scope a route needs (its access macro's x-required-scope), in words where a reader looks.
      const scope = operation["x-required-scope"];
      if (typeof scope === "string") {
        const needs = scope === "any" ? "Any valid credential (no scope needed)." : `Scope: ${scope}.`;
        operation.description = typeof operation.description === "string" && operation.description ? `${needs} ${operation.description}` : needs;
        const forbidden = isObject(responses) ? responses["403"] : undefined;
        // A route taking one of several scopes names the first as need.
        if (isObject(forbidden) && scope !== "any") forbidden.description = `The credential lacks the scope ${scope} (error forbidden, need: "${scope.split(" or ")[0]}").`;
      }
      // Other media types of the success reply, declared by the route (detail "x-also-returns":
      // GET /v1/calls?format=csv), listed beside its JSON rather than as one more JSON shape.
      const extra = operation["x-also-returns"];
      delete operation["x-also-returns"];
      const ok = isObject(responses) ? responses["200"] : undefined;
      if (isObject(extra) && isObject(ok)) {
        const json = isObject(ok.content) && isObject(ok.content["application/json"]) ? ok.content["application/json"] : null;
        // The JSON reply is the union's other member: the CSV text is not JSON.
        if (json && isObject(json.schema) && Array.isArray(json.schema.anyOf)) {
          const types = new Set(Object.values(extra).map((m) => (isObject(m) && isObject(m.schema) ? m.schema.type : null)));
          const rest = json.schema.anyOf.filter((o) => !(isObject(o) && types.has(o.type as Json)));
          if (rest.length === 1) json.schema = rest[0]!;
        }
        ok.content = { ...(isObject(ok.content) ? ok.content : {}), ...extra };
      }
    }
  }
}

/**
 * Elysia writes a whole number read from a query string as `anyOf: [numeric string (default 0),
 * integer]`: a generated client then types it as a string and may send its default, 0, which the
 * route refuses. The parameter is the integer (query values are text on the wire anyway).
 */
function plainQueryNumber(schema: Json): Json {
  if (!isObject(schema) || !Array.isArray(schema.anyOf) || schema.anyOf.length !== 2) return schema;
  const text = schema.anyOf.find((o) => isObject(o) && o.type === "string" && (o.format === "integer" || o.format === "numeric"));
  const number = schema.anyOf.find((o) => isObject(o) && (o.type === "integer" || o.type === "number"));
  if (!text || !isObject(number)) return schema;
  const { anyOf: _, ...rest } = schema;
  return { ...rest, ...number };
}

/**
 * A route whose JSON body is optional (optionalBody) reads it in the host's own parse hook, so Elysia
 * knows no media type for it and documents a required body with no content: it is the route's
 * schema, as JSON, and it may be left out.
 */
function optionalJsonBodies(app: AnyElysia, paths: JsonObject): void {
  for (const route of app.routes) {
    const body = (route.hooks as { body?: unknown } | undefined)?.body;
    if (!body || typeof body !== "object") continue;
    const path = route.path.replace(/:(\w+)/g, "{$1}");
    const operation = (paths[path] as JsonObject | undefined)?.[route.method.toLowerCase()];
    if (!isObject(operation) || !isObject(operation.requestBody)) continue;
    const requestBody = operation.requestBody;
    if (!isObject(requestBody.content) || Object.keys(requestBody.content).length > 0) continue;
    requestBody.content = { "application/json": { schema: JSON.parse(JSON.stringify(body)) as Json } };
    requestBody.required = false;
  }
}

/** Builds the normalized document of `app`. Call after every route is registered. */
export function buildOpenApiDocument(app: AnyElysia, options: DocumentOptions): JsonObject {
  const { paths, components } = toOpenAPISchema(app, { paths: options.excludePaths ?? [] }, undefined, undefined, "3.0.3");
  optionalJsonBodies(app, paths as unknown as JsonObject);
  for (const item of Object.values(paths as unknown as JsonObject)) {
    if (!isObject(item)) continue;
    for (const operation of Object.values(item)) {
      if (!isObject(operation) || !Array.isArray(operation.parameters)) continue;
      for (const parameter of operation.parameters) {
        if (isObject(parameter) && parameter.in === "query") parameter.schema = plainQueryNumber(parameter.schema ?? null);
      }
    }
  }
  const schemas = { ...((components.schemas ?? {}) as JsonObject), ...(options.schemas ?? {}) };
  completeOperations(paths as unknown as JsonObject, options, schemas.Error ? { $ref: "#/components/schemas/Error" } : undefined);
  const doc: JsonObject = {
    openapi: "3.0.3",
    info: options.info,
    ...(options.servers ? { servers: options.servers } : {}),
    ...(options.tags ? { tags: options.tags } : {}),
    ...(options.security ? { security: options.security } : {}),
    paths: paths as unknown as Json,
    ...(options.webhooks ? { "x-webhooks": options.webhooks } : {}),
    components: { ...(options.components ?? {}), schemas },
  };
  return toOpenApi30Schema(doc) as JsonObject;
}
