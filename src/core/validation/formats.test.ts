import { describe, expect, test } from "bun:test";
import { isCountryCode, isLanguageTag, isTimeZone } from "./formats.ts";

describe("formats", () => {
  test("time zones", () => {
    for (const tz of ["UTC", "Europe/Paris", "America/Argentina/Buenos_Aires", "Etc/GMT+5"]) expect(isTimeZone(tz)).toBe(true);
    for (const tz of ["+01:00", "Mars/Olympus", "europe paris", "", "EST5EDT;drop"]) expect(isTimeZone(tz)).toBe(false);
  });
  test("countries", () => {
    expect(isCountryCode("US")).toBe(true);
    expect(isCountryCode("FR")).toBe(true);
    expect(isCountryCode("us")).toBe(false);
    expect(isCountryCode("XX")).toBe(false);
    expect(isCountryCode("USA")).toBe(false);
  });
  test("languages", () => {
    for (const l of ["en-US", "fr", "pt-BR", "zh-Hans-CN", "es-419"]) expect(isLanguageTag(l)).toBe(true);
    for (const l of ["EN-us", "english", "en_US", "", "en-USA"]) expect(isLanguageTag(l)).toBe(false);
  });
});
