import { describe, expect, test } from "bun:test";
import { captureGroupCount, regexProblem } from "./regex-safety.ts";

describe("regexProblem", () => {
  test("accepts the patterns number transforms are made of", () => {
    for (const ok of [
      "^0(\\d{9,10})$",
      "^(44\\d+)$",
      "^\\+?1?(\\d{10})$",
      "^(?:00|\\+)(\\d+)$",
      "^(\\d{3})+$", // a fixed count inside is not ambiguous
      "^(?<area>\\d{3})(?<line>\\d{7})$",
      "^[+*]+(\\d)$", // quantifier characters inside a class are literals
      "^(a|b)+$",
      "^(\\d+)?$", // an optional group may contain a repetition
      "^(?=\\d)(\\d+)$",
      "\\(+\\d+\\)+",
    ]) {
      expect(regexProblem(ok), ok).toBeNull();
    }
  });

  test("refuses nested quantifiers, broken syntax and long patterns", () => {
    for (const bad of ["^(\\d+)+$", "(a*)*", "^((\\d)+x)*$", "(?:\\d+){2,}", "(x{1,3})+", "^(?<n>\\d*)+$", "((a+))+"]) {
      expect(regexProblem(bad), bad).toContain("Nested quantifiers");
    }
    expect(regexProblem("^(\\d+$")).toContain("Not a valid regular expression");
    expect(regexProblem("[")).toContain("Not a valid regular expression");
    expect(regexProblem("1".repeat(201))).toContain("At most 200");
    expect(regexProblem("1".repeat(200))).toBeNull();
  });

  test("answers at once: the pattern is inspected, never run against input", () => {
    const start = performance.now();
    expect(regexProblem("^(\\d+)+$")).not.toBeNull();
    expect(performance.now() - start).toBeLessThan(50);
  });

  test("counts capture groups", () => {
    expect(captureGroupCount("^0(\\d+)$")).toBe(1);
    expect(captureGroupCount("^(?:00)(\\d)(\\d)$")).toBe(2);
    expect(captureGroupCount("^\\d+$")).toBe(0);
  });
});
