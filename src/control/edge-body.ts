/**
 * Edge request bodies arrive as form or JSON with the same field names (DESIGN.md section 4).
 * Form fields are all text, and edge configs fill absent values with empty strings, so before
 * validation (Elysia's transform stage): optional fields sent empty are dropped, and in form bodies
 * the fields a schema types as integers are read as integers when they are plain decimal numbers
 * (anything else stays a string and fails validation with a clear message).
 */
import type { TSchema } from "@sinclair/typebox";

type Properties = Record<string, TSchema & { type?: string; anyOf?: TSchema[] }>;

function isIntegerLike(schema: TSchema & { type?: string; anyOf?: TSchema[] }): boolean {
  if (schema.type === "integer" || schema.type === "number") return true;
  return Array.isArray(schema.anyOf) && schema.anyOf.some((s) => (s as { type?: string }).type === "integer" || (s as { type?: string }).type === "number");
}

/** The preparation of one body schema (or several, for a body whose shape depends on a field). */
export function edgeBodyPreparer(...schemas: TSchema[]) {
  const integers = new Set<string>();
  const required = new Set<string>();
  for (const schema of schemas) {
    const props = ((schema as { properties?: Properties }).properties ?? {}) as Properties;
    for (const [name, prop] of Object.entries(props)) if (isIntegerLike(prop)) integers.add(name);
    for (const name of (schema as { required?: string[] }).required ?? []) required.add(name);
  }
  return function prepare(body: unknown, request: Pick<Request, "headers">): void {
    if (body === null || typeof body !== "object" || Array.isArray(body)) return;
    const record = body as Record<string, unknown>;
    const form = (request.headers.get("content-type") ?? "").toLowerCase().startsWith("application/x-www-form-urlencoded");
    for (const [name, value] of Object.entries(record)) {
      if (value === "" && !required.has(name)) {
        delete record[name];
        continue;
      }
      if (form && integers.has(name) && typeof value === "string" && /^-?\d{1,15}$/.test(value)) record[name] = Number(value);
    }
  };
}
