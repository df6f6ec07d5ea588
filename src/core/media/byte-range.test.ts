/** decideRange: RFC 9110 byte ranges against a file of known size. */
import { describe, expect, test } from "bun:test";
import { decideRange } from "./byte-range.ts";

describe("decideRange", () => {
  const size = 1000;

  test("no header, or one to ignore, means the whole file", () => {
    for (const header of [null, undefined, "", "items=0-5", "bytes=", "bytes=abc", "bytes=5-2", "bytes=-", "bytes=0-1,5-6", "bytes=1.5-2"]) {
      expect(decideRange(header, size), String(header)).toEqual({ kind: "full" });
    }
  });

  test("closed, open-ended and suffix ranges", () => {
    expect(decideRange("bytes=0-99", size)).toEqual({ kind: "partial", start: 0, end: 99 });
    expect(decideRange("bytes=0-0", size)).toEqual({ kind: "partial", start: 0, end: 0 });
    expect(decideRange("bytes=990-", size)).toEqual({ kind: "partial", start: 990, end: 999 });
    expect(decideRange("bytes=-100", size)).toEqual({ kind: "partial", start: 900, end: 999 });
    expect(decideRange(" Bytes = 10-19 ", size)).toEqual({ kind: "partial", start: 10, end: 19 });
  });

  test("ends past the file are clamped; a suffix longer than the file is the whole file", () => {
    expect(decideRange("bytes=500-5000", size)).toEqual({ kind: "partial", start: 500, end: 999 });
    expect(decideRange("bytes=-5000", size)).toEqual({ kind: "partial", start: 0, end: 999 });
    expect(decideRange("bytes=0-99999999999999999999", size)).toEqual({ kind: "partial", start: 0, end: 999 });
  });

  test("a start at or past the end, or an empty suffix, is unsatisfiable", () => {
    expect(decideRange("bytes=1000-", size)).toEqual({ kind: "unsatisfiable" });
    expect(decideRange("bytes=1000-1000", size)).toEqual({ kind: "unsatisfiable" });
    expect(decideRange("bytes=2000-3000", size)).toEqual({ kind: "unsatisfiable" });
    expect(decideRange("bytes=-0", size)).toEqual({ kind: "unsatisfiable" });
  });
});
