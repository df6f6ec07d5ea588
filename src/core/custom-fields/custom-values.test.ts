/** validateCustomValues and mergeCustomValues: the rules every record's custom object follows. */
import { describe, expect, test } from "bun:test";
import { mergeCustomValues, validateCustomValues, type CustomFieldDef } from "./custom-values.ts";

const FIELDS: CustomFieldDef[] = [
  { key: "note", type: "text", options: null, required: 0 },
  { key: "score", type: "number", options: null, required: 0 },
  { key: "vip", type: "boolean", options: null, required: 0 },
  { key: "since", type: "date", options: null, required: 0 },
  { key: "tier", type: "select", options: ["gold", "silver"], required: 0 },
  { key: "account_no", type: "text", options: null, required: 1 },
];

const paths = (values: Record<string, unknown>, mode: "create" | "update" = "create") =>
  validateCustomValues(FIELDS, values, "/custom", mode).map((d) => d.path);

describe("validateCustomValues", () => {
  test("accepts a value of the right type for each field", () => {
    expect(paths({ note: "", score: -1.5, vip: 0, since: "2024-02-29", tier: "silver", account_no: "A" })).toEqual([]);
  });

  test("one detail per unknown key, wrong type or missing required value", () => {
    expect(paths({ note: 1, score: "1", vip: true, since: "2023-02-29", tier: "bronze", extra: 1 })).toEqual([
      "/custom/note",
      "/custom/score",
      "/custom/vip",
      "/custom/since",
      "/custom/tier",
      "/custom/extra",
      "/custom/account_no",
    ]);
    expect(paths({ note: "x".repeat(4001), account_no: "A" })).toEqual(["/custom/note"]);
    expect(paths({ since: "2024-1-01", account_no: "A" })).toEqual(["/custom/since"]);
  });

  test("create: null means absent; a required field must have a value", () => {
    expect(paths({ note: null, account_no: "A" })).toEqual([]);
    expect(paths({ account_no: null })).toEqual(["/custom/account_no"]);
  });

  test("update: only sent keys are checked; a required value cannot be removed", () => {
    expect(paths({ note: null }, "update")).toEqual([]);
    expect(paths({}, "update")).toEqual([]);
    expect(paths({ account_no: null }, "update")).toEqual(["/custom/account_no"]);
  });

  test("keys are escaped as JSON-pointer segments", () => {
    expect(validateCustomValues([], { "a/b~c": 1 }, "/custom").map((d) => d.path)).toEqual(["/custom/a~1b~0c"]);
  });
});

describe("mergeCustomValues", () => {
  test("sets sent keys, removes nulls, keeps the rest", () => {
    expect(mergeCustomValues({ a: 1, b: "x" }, { a: null, c: "y" })).toEqual({ b: "x", c: "y" });
    expect(mergeCustomValues({}, { a: null })).toEqual({});
  });
});
