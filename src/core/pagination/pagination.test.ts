/** keysetPage: SPEC.md's rule, every full page carries next_cursor; a reply without one is the last. */
import { describe, expect, test } from "bun:test";
import { decodeCursor, keysetPage, toPage } from "./pagination.ts";

const rows = (n: number) => Array.from({ length: n }, (_, i) => ({ id: `us_${String(i).padStart(26, "0")}` }));

describe("keysetPage", () => {
  test("a full page carries the cursor of its last row, also when nothing follows", () => {
    const page = keysetPage(rows(3), 3, (r) => r.id, (r) => `after:${r.id}`);
    expect(page).toEqual({ data: rows(3).map((r) => r.id), next_cursor: `after:${rows(3)[2]!.id}` });
  });

  test("a page short of the limit, and an empty one, are the last: no cursor", () => {
    expect(keysetPage(rows(2), 3, (r) => r.id, () => "x")).toEqual({ data: rows(2).map((r) => r.id) });
    expect(keysetPage([], 3, (r: { id: string }) => r.id, () => "x")).toEqual({ data: [] });
  });

  test("toPage's cursor is one decodeCursor reads back as the last id", () => {
    const page = toPage(rows(2), 2, (r) => r.id);
    expect(decodeCursor(page.next_cursor, "us")).toBe(rows(2)[1]!.id);
  });

  test("a cursor of another list, or not of ours, is a 400 naming the cursor", () => {
    const cursor = toPage(rows(2), 2, (r) => r.id).next_cursor;
    for (const [bad, message] of [
      [cursor, "from another list"],
      ["bm90IGEgY3Vyc29y", "Not a cursor this API issued"],
      [Buffer.from("c1:us_short").toString("base64url"), "Not a cursor this API issued"],
      // Not an id at all (U is not a Crockford character), even with a prefix: not "another list".
      [Buffer.from(`c1:dev_${"U".repeat(26)}`).toString("base64url"), "Not a cursor this API issued"],
    ] as const) {
      let thrown: unknown = null;
      try {
        decodeCursor(bad, "dev");
      } catch (error) {
        thrown = error;
      }
      expect(thrown).toMatchObject({ status: 400, code: "validation_failed", extra: { details: [{ path: "/query/cursor", message: expect.stringContaining(message) }] } });
    }
    expect(decodeCursor(undefined, "dev")).toBeNull();
    expect(decodeCursor("", "dev")).toBeNull();
  });
});
