/**
 * TypeBox validation errors as the API's error details ({ path, message }), with messages a client
 * can act on. Every place that checks a body against a schema itself (not through Elysia) uses
 * errorDetails, so its 400 reads like Elysia's.
 */
import { formatMessage } from "./formats.ts";

/** A TypeBox message that only says the value is of another type. */
const TYPE_MISMATCH = /^Expected (string|array|number|integer|boolean|object|null)$/;

/** What readableMessage reads of a TypeBox ValueError (Elysia's validation errors are those). */
export interface SchemaError {
  message?: string;
  path?: string;
  schema?: unknown;
  errors?: Iterable<SchemaError>[];
}

/**
 * TypeBox's message, made plain where it is cryptic: for a union, the error of the member whose type
 * the value has (a string too long where a string or a list is accepted says so), else the types
 * accepted, a string with a format (the coercible text form of a number or a boolean) left unnamed.
 */

export function readableMessage(e: SchemaError): string {
  if (e.message === "Unexpected property") return "This field cannot be set here.";
  if (e.message === "Expected union value") {
    const anyOf = (e.schema as { anyOf?: Array<{ type?: string; format?: string; const?: unknown }> } | undefined)?.anyOf ?? [];
    // A choice of values (format=json|csv): every value allowed, not only the first member's.
    const choices = anyOf.filter((s) => s.const !== undefined).map((s) => JSON.stringify(s.const).replaceAll('"', "'"));
    if (choices.length > 1 && choices.length === anyOf.filter((s) => s.type !== "null").length) {
      return `Expected one of ${choices.slice(0, -1).join(", ")} or ${choices.at(-1)}.`;
    }
    const coercion = (s: { type?: string; format?: string } | undefined) => s?.type === "string" && s.format !== undefined;
    const variants = e.errors ?? [];
    for (let i = 0; i < variants.length; i++) {
      if (coercion(anyOf[i])) continue;
      // The first error of each member says enough.
      const [first] = variants[i]!;
      // A member that is a union itself (the coercible number of a form-taking host) is read the same way.
      const message = first?.message === "Expected union value" ? readableMessage(first) : first?.message;
      if (message && message !== "Invalid value." && !TYPE_MISMATCH.test(message)) return message;
    }
    const members = anyOf.filter((s) => s.type !== "null" && !coercion(s));
    const types = [...new Set(members.map((s) => s.type).filter((t): t is string => Boolean(t)))];
    if (types.length === 1) return `Expected ${types[0]}.`;
    if (types.length > 1) return `Expected ${types.slice(0, -1).join(", ")} or ${types.at(-1)}.`;
    return "Invalid value.";
  }
  return formatMessage(e.message ?? "Invalid value.");
}

/** One detail per path (its first error), paths under `prefix`, at most `max`. */
export function errorDetails(errors: Iterable<SchemaError>, prefix = "", max = 20): Array<{ path: string; message: string }> {
  const details: Array<{ path: string; message: string }> = [];
  const seen = new Set<string>();
  for (const e of errors) {
    const path = `${prefix}${e.path ?? ""}`;
    if (seen.has(path)) continue;
    seen.add(path);
    details.push({ path, message: readableMessage(e) });
    if (details.length >= max) break;
  }
  return details;
}
