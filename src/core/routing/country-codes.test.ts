/** countryOfE164: calling codes of every length, NANP by area code, +7 split. */
import { describe, expect, test } from "bun:test";
import { countryOfE164 } from "./country-codes.ts";

describe("countryOfE164", () => {
  test("resolves 1-, 2- and 3-digit calling codes", () => {
    expect(countryOfE164("442071230000")).toBe("GB");
    expect(countryOfE164("4930123456")).toBe("DE");
    expect(countryOfE164("33612345678")).toBe("FR");
    expect(countryOfE164("353861234567")).toBe("IE");
    expect(countryOfE164("35191234567")).toBe("PT");
    expect(countryOfE164("97150123456")).toBe("AE");
    expect(countryOfE164("2348012345678")).toBe("NG");
  });
  test("NANP by area code; +7 by its next digit", () => {
    expect(countryOfE164("14155550100")).toBe("US");
    expect(countryOfE164("14165550100")).toBe("CA");
    expect(countryOfE164("18765550100")).toBe("JM");
    expect(countryOfE164("17875550100")).toBe("PR");
    expect(countryOfE164("74951234567")).toBe("RU");
    expect(countryOfE164("77011234567")).toBe("KZ");
  });
  test("unassigned codes and non-numbers are null", () => {
    expect(countryOfE164("8081234567")).toBeNull(); // 80x is not a country code
    expect(countryOfE164("0441234")).toBeNull();
    expect(countryOfE164("abc")).toBeNull();
  });
});
