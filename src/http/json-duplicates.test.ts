import { describe, expect, test } from "bun:test";
import { jsonTextProblem, MAX_JSON_DEPTH } from "./json-duplicates.ts";

const duplicateMemberPath = (text: string) => {
  const found = jsonTextProblem(text);
  return found?.kind === "twice" ? found.path : null;
};

describe("duplicateMemberPath", () => {
  test("no member named twice in one object: null, however names repeat across objects and arrays", () => {
    for (const text of ['{"a":1}', '{"a":1,"b":2}', '[{"a":1},{"a":2}]', '{"a":{"a":1},"b":[{"a":1,"b":2},{"a":3}]}', '"x,y"', "[1,2,3]", '{"a":"},\\"a\\":"}', "{}", "[]"]) {
      expect(duplicateMemberPath(text)).toBeNull();
    }
  });

  test("the path of the second member of a name already seen in its object", () => {
    expect(duplicateMemberPath('{"accountId":"a","accountId":"b"}')).toBe("/accountId");
    expect(duplicateMemberPath('{"a":1,"b":{"c":1,"c":2}}')).toBe("/b/c");
    expect(duplicateMemberPath('{"list":[{"x":1},{"y":1,"y":2}]}')).toBe("/list/1/y");
    expect(duplicateMemberPath(' { "a" : [ 1 , 2 ] , "a" : 3 } ')).toBe("/a");
  });

  test("names are compared decoded (escapes), and written as JSON Pointer tokens", () => {
    expect(duplicateMemberPath('{"a":1,"\\u0061":2}')).toBe("/a");
    expect(duplicateMemberPath('{"a/b":1,"a\\/b":2}')).toBe("/a~1b");
    expect(duplicateMemberPath('{"x~y":{"q\\"":1,"q\\"":2}}')).toBe('/x~0y/q"');
  });

  test("nesting deeper than MAX_JSON_DEPTH is found where it goes too deep, at any size; strings do not count", () => {
    const nested = (depth: number) => `{"x":${"[".repeat(depth - 1)}${"]".repeat(depth - 1)}}`;
    expect(jsonTextProblem(nested(MAX_JSON_DEPTH))).toBeNull();
    expect(jsonTextProblem(nested(MAX_JSON_DEPTH + 1))).toEqual({ path: `/x${"/0".repeat(MAX_JSON_DEPTH - 1)}`, kind: "deep" });
    expect(jsonTextProblem(`[${"[".repeat(100_000)}${"]".repeat(100_000)}]`)?.kind).toBe("deep");
    expect(jsonTextProblem(JSON.stringify({ s: "[".repeat(1000) }))).toBeNull();
  });
});
