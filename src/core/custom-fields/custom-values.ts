/**
 * Checks the `custom` object of a record (a contact, a call) against the account's custom fields.
 * Pure: the caller loads the fields once and passes them in, so every path reuses the same rules.
 */
import type { ErrorDetail } from "../errors/app-error.ts";
import { isRealDate } from "../validation/fields.ts";
import { MAX_TEXT_VALUE } from "./custom-fields.model.ts";

/** What validation needs to know about a field. */
export interface CustomFieldDef {
  key: string;
  type: "text" | "number" | "boolean" | "date" | "select";
  /** Allowed values of a select field; null otherwise. */
  options: string[] | null;
  /** 1 when a record must carry a value. */
  required: number;
}

/** A stored value: text, date and select are strings; number and boolean (0/1) are numbers. */
export type CustomValue = string | number;

/** The `custom` object of a stored record: never holds null (a null in a request removes the key). */
export type CustomValues = Record<string, CustomValue>;

const DATE_SHAPE = /^[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])$/;

/** Escapes a key for use as one JSON-pointer segment (RFC 6901). */
function pointerSegment(key: string): string {
  return key.replace(/~/g, "~0").replace(/\//g, "~1");
}

/** Why `value` does not fit `field`, or null when it does. */
function valueProblem(field: CustomFieldDef, value: unknown): string | null {
  switch (field.type) {
    case "text":
      if (typeof value !== "string") return "Expected a string.";
      return value.length > MAX_TEXT_VALUE ? `At most ${MAX_TEXT_VALUE} characters.` : null;
    case "number":
      return typeof value === "number" && Number.isFinite(value) ? null : "Expected a number.";
    case "boolean":
      return value === 0 || value === 1 ? null : "Expected 0 or 1.";
    case "date":
      return typeof value === "string" && DATE_SHAPE.test(value) && isRealDate(value) ? null : "Expected a date as YYYY-MM-DD.";
    case "select":
      if (typeof value !== "string" || !(field.options ?? []).includes(value)) {
        return `Expected one of: ${(field.options ?? []).join(", ")}.`;
      }
      return null;
  }
}

/**
 * Every problem of `values` against `fields`, as validation details under `basePath` (e.g. `/custom`).
 * An unknown key, a value of the wrong type, or a missing required value is one detail each.
 *
 * - `create`: the object is the whole set; a required field must have a non-null value; null means absent.
 * - `update`: the object is merged onto the stored one; a null removes a value, which a required field refuses;
 *   required fields that are not mentioned are not checked (a record made before the field became required stays valid).
 * @example validateCustomValues(fields, { tier: "gold" }, "/custom") // [] when tier is a select with option gold
 */
export function validateCustomValues(
  fields: readonly CustomFieldDef[],
  values: Record<string, unknown>,
  basePath: string,
  mode: "create" | "update" = "create",
): ErrorDetail[] {
  const byKey = new Map(fields.map((f) => [f.key, f]));
  const details: ErrorDetail[] = [];
  for (const [key, value] of Object.entries(values)) {
    const path = `${basePath}/${pointerSegment(key)}`;
    const field = byKey.get(key);
    if (!field) {
      details.push({ path, message: "No custom field has this key." });
      continue;
    }
    if (value === null) {
      if (field.required === 1) details.push({ path, message: "This custom field is required." });
      continue;
    }
    const problem = valueProblem(field, value);
    if (problem) details.push({ path, message: problem });
  }
  if (mode === "create") {
    for (const field of fields) {
      // A null for it was reported by the loop above.
      if (field.required === 1 && values[field.key] === undefined) {
        details.push({ path: `${basePath}/${pointerSegment(field.key)}`, message: "This custom field is required." });
      }
    }
  }
  return details;
}

/**
 * The stored `custom` object after applying `patch`: sent keys set, null removes. Validate first.
 * @example mergeCustomValues({ a: 1 }, { a: null, b: "x" }) // { b: "x" }
 */
export function mergeCustomValues(stored: CustomValues, patch: Record<string, unknown>): CustomValues {
  const out: CustomValues = { ...stored };
  for (const [key, value] of Object.entries(patch)) {
    if (value === null || value === undefined) delete out[key];
    else out[key] = value as CustomValue;
  }
  return out;
}
