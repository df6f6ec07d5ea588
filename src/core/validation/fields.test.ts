import { describe, expect, test } from "bun:test";
import { isRealDate, normalizeE164 } from "./fields.ts";

describe("field helpers", () => {
  test("normalizeE164 strips what people type and refuses what is not E.164", () => {
    expect(normalizeE164("+1 (415) 555-0123")).toBe("14155550123");
    expect(normalizeE164("0033 1 23 45 67 89")).toBe("33123456789");
    expect(normalizeE164("14155550123")).toBe("14155550123");
    for (const bad of ["", "+0123456789", "12345", "1".repeat(16), "abc", "+1 415 555 012x"]) expect(normalizeE164(bad)).toBeNull();
  });
  test("isRealDate", () => {
    expect(isRealDate("2024-02-29")).toBe(true);
    expect(isRealDate("2025-02-29")).toBe(false);
    expect(isRealDate("2025-04-31")).toBe(false);
  });
});
