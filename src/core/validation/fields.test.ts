import { describe, expect, test } from "bun:test";
import { E164_PATTERN, isRealDate, normalizeE164 } from "./fields.ts";

describe("field helpers", () => {
  test("normalizeE164 strips what people type and refuses what is not E.164", () => {
    expect(normalizeE164("+1 (415) 555-0123")).toBe("14155550123");
    expect(normalizeE164("0033 1 23 45 67 89")).toBe("33123456789");
    expect(normalizeE164("14155550123")).toBe("14155550123");
    for (const bad of ["", "+0123456789", "12345", "1".repeat(16), "abc", "+1 415 555 012x"]) expect(normalizeE164(bad)).toBeNull();
  });
  test("normalizeE164 drops the national trunk 0 written after the country code: (0), or a bare 0 where no number of that code begins with 0", () => {
    expect(normalizeE164("+44 (0)20 7123 0000")).toBe("442071230000");
    expect(normalizeE164("0044 (0)20 7123 0000")).toBe("442071230000");
    expect(normalizeE164("+44(0)2071230000")).toBe("442071230000");
    expect(normalizeE164("+4402071230000")).toBe("442071230000");
    expect(normalizeE164("004402071230000")).toBe("442071230000");
    expect(normalizeE164("+49 (0)30 123456")).toBe("4930123456");
    expect(normalizeE164("+263 (0)4 123456")).toBe("2634123456");
    // Italy, the Vatican and San Marino dial the 0 from abroad too: it stays, written (0) or not.
    expect(normalizeE164("+39 06 6981 2345")).toBe("390669812345");
    expect(normalizeE164("+39 (0)6 6981 2345")).toBe("390669812345");
    expect(normalizeE164("+378 0549 123456")).toBe("3780549123456");
    // A (0) at the start is no trunk prefix after a country code: a national number, not E.164.
    expect(normalizeE164("(0)20 7123 0000")).toBeNull();
  });
  test("E.164 is 7 to 15 digits: the shortest numbers (Niue, Saint Helena, Tokelau) have 7", () => {
    expect(normalizeE164("+683 4002")).toBe("6834002");
    expect(normalizeE164("+290 1234")).toBe("2901234");
    expect(normalizeE164("+12345")).toBeNull();
    expect(normalizeE164("123456")).toBeNull();
    expect(new RegExp(E164_PATTERN).test("6834002")).toBe(true);
    expect(new RegExp(E164_PATTERN).test("1".repeat(16))).toBe(false);
  });
  test("isRealDate", () => {
    expect(isRealDate("2024-02-29")).toBe(true);
    expect(isRealDate("2025-02-29")).toBe(false);
    expect(isRealDate("2025-04-31")).toBe(false);
  });
});
