/** countryOfE164: calling codes of every length, NANP by area code, +7 split. */
import { describe, expect, test } from "bun:test";
import { NO_COUNTRY, countryOfE164, geoCountryOf, undetectableCountry } from "./country-codes.ts";
import { ISO_COUNTRIES } from "../validation/formats.ts";

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
  test("territories that share a calling code are told apart by their number ranges", () => {
    // Crown Dependencies in +44: their area codes and mobile ranges (Ofcom's allocations).
    expect(countryOfE164("441534123456")).toBe("JE");
    expect(countryOfE164("447797712345")).toBe("JE");
    expect(countryOfE164("447700312345")).toBe("JE");
    expect(countryOfE164("441481256789")).toBe("GG");
    expect(countryOfE164("447781123456")).toBe("GG");
    expect(countryOfE164("447911123456")).toBe("GG");
    expect(countryOfE164("441624756789")).toBe("IM");
    expect(countryOfE164("447624123456")).toBe("IM");
    expect(countryOfE164("447924123456")).toBe("IM");
    // The rest of +44 (Ofcom's drama range 07700 900 too) is GB.
    expect(countryOfE164("447700900123")).toBe("GB");
    expect(countryOfE164("447797123456")).toBe("GB");
    expect(countryOfE164("442071230000")).toBe("GB");
    expect(countryOfE164("3581812345")).toBe("AX");
    expect(countryOfE164("358401234567")).toBe("FI");
    expect(countryOfE164("390669812345")).toBe("VA");
    expect(countryOfE164("390612345678")).toBe("IT");
    expect(countryOfE164("4779123456")).toBe("SJ");
    expect(countryOfE164("4722123456")).toBe("NO");
    expect(countryOfE164("5997151234")).toBe("BQ");
    expect(countryOfE164("5999461234")).toBe("CW");
    expect(countryOfE164("262269601234")).toBe("YT");
    expect(countryOfE164("262639012345")).toBe("YT");
    expect(countryOfE164("262262123456")).toBe("RE");
    expect(countryOfE164("61891621234")).toBe("CC");
    expect(countryOfE164("61891641234")).toBe("CX");
    expect(countryOfE164("61212345678")).toBe("AU");
    expect(countryOfE164("212528812345")).toBe("EH");
    expect(countryOfE164("212522123456")).toBe("MA");
    expect(countryOfE164("2476123")).toBe("SH"); // Ascension Island
  });
  test("every country a policy may name is one the router detects, or is refused with a reason", () => {
    for (const code of ["BL", "MF", "PN", "AQ", "BV", "GS", "HM", "TF", "UM"]) expect(undetectableCountry(code), code).toBeString();
    for (const code of ["GB", "JE", "GG", "IM", "AX", "VA", "SJ", "BQ", "YT", "CC", "CX", "EH", "SH", "US", "ZZ"]) expect(undetectableCountry(code), code).toBeNull();
    expect(undetectableCountry("MF")).toContain("GP");
    // Every ISO country is one of the two, with a reason of its own when refused.
    const refused = [...ISO_COUNTRIES].filter((code) => undetectableCountry(code) !== null);
    expect(refused.sort()).toEqual(["AQ", "BL", "BV", "GS", "HM", "MF", "PN", "TF", "UM"]);
  });
  test("numbers of no country (international networks and services) are ZZ to a geo policy", () => {
    for (const e164 of ["881612345678", "870772001234", "80012345678", "979123456789", "882345678901"]) {
      expect(countryOfE164(e164), e164).toBeNull();
      expect(geoCountryOf(e164), e164).toBe(NO_COUNTRY);
    }
    expect(NO_COUNTRY).toBe("ZZ");
    expect(geoCountryOf("442071230000")).toBe("GB");
  });
  test("unassigned codes and non-numbers are null", () => {
    expect(countryOfE164("8081234567")).toBeNull(); // 80x is not a country code
    expect(countryOfE164("0441234")).toBeNull();
    expect(countryOfE164("abc")).toBeNull();
  });
});
