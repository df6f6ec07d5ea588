/**
 * Field schemas shared by every resource, written once: flags, E.164 numbers, digits, times, dates,
 * ids, nullable wrappers. Request models compose these; nothing re-declares a pattern inline.
 */
import { Type as T, type TSchema } from "@sinclair/typebox";
import "./formats.ts";

/** `X | null`. */
export const Nullable = <S extends TSchema>(schema: S) => T.Union([schema, T.Null()]);

/** SPEC.md: booleans are the integers 0 and 1. */
export const Flag = (description?: string) =>
  T.Union([T.Literal(0), T.Literal(1)], { description: description ?? "Boolean as the integer 0 or 1." });

/** A whole number ≥ 0 (limits, ceilings, seconds). */
export const NonNegative = (options: { maximum?: number; description?: string } = {}) => T.Integer({ minimum: 0, ...options });

/** The latest instant a timestamp field takes, 9999-12-31T23:59:59Z: anything later is a mistake, and in ms would overflow the database's bigint. */
export const MAX_EPOCH_SEC = 253_402_300_799;
export const MAX_EPOCH_MS = MAX_EPOCH_SEC * 1000 + 999;

/** An instant in epoch seconds (query or body), from 0 to {@link MAX_EPOCH_SEC}. */
export const EpochSec = (description: string) => T.Integer({ minimum: 0, maximum: MAX_EPOCH_SEC, description });

/** An instant in epoch milliseconds, from 0 to {@link MAX_EPOCH_MS}. */
/** An IP address (no port), as the edge reports where a request came from. */
export const IpAddress = (description: string) => T.String({ format: "ip-text", maxLength: 64, description });

export const EpochMs = (description: string) => T.Integer({ minimum: 0, maximum: MAX_EPOCH_MS, description });

/** A whole number ≥ 1. */
export const Positive = (options: { maximum?: number; description?: string } = {}) => T.Integer({ minimum: 1, ...options });

/**
 * E.164 without the leading +: country code and subscriber number, 7–15 digits, no leading 0. ITU-T
 * E.164 allows at most 15; the shortest numbers in service have 7 (Niue's, Saint Helena's and
 * Tokelau's 4-digit numbers after a 3-digit code). The one bound the router, the lists and every
 * stored number use.
 */
export const E164_PATTERN = "^[1-9][0-9]{6,14}$";
const E164_RE = new RegExp(E164_PATTERN);
export const E164 = (description = "E.164 number without the leading +, e.g. 14155550123.") =>
  T.String({ pattern: E164_PATTERN, description });

/**
 * Calling codes whose national trunk prefix is 0 and whose numbers never begin with 0 after the code:
 * "+44 020 7123 0000" can only mean +44 20 7123 0000 (people write the 0 they dial at home), and
 * carriers reach that number with it. Elsewhere a 0 after the code may be part of the number (Italy's,
 * San Marino's, Côte d'Ivoire's), or the trunk prefix is not 0 (Spain, Norway, Russia…): left as written.
 */
const TRUNK_ZERO_CODES = new Set([
  "20", "27", "31", "32", "33", "41", "43", "44", "46", "49", "54", "55", "61", "62", "63", "64", "66", "81", "82", "84", "86", "90", "91", "92",
  "234", "254", "353", "358", "971", "972",
]);

/** Codes after which a 0 is part of the number even when written "(0)": Italy (and the Vatican in +39), San Marino. */
const KEEPS_ZERO_CODES = ["39", "378"];

/**
 * A number in international form after its + or 00 (country code first), as digits: visual
 * separators dropped, and the national trunk prefix written after the country code dropped: "(0)"
 * wherever it follows digits (kept as 0 for the codes that dial it from abroad, Italy's and San
 * Marino's), and a bare 0 right after a code of `TRUNK_ZERO_CODES`. Not a check: the result may be no
 * E.164 number.
 * @example internationalDigits("44 (0)20 7123 0000") // "442071230000"; internationalDigits("4402071230000") // "442071230000"
 */
export function internationalDigits(text: string): string {
  const bare = text.replace(/[\s().-]/g, "");
  const withoutZero = text.replace(/([0-9][\s.-]*)\(\s*0\s*\)/, "$1").replace(/[\s().-]/g, "");
  const digits = KEEPS_ZERO_CODES.some((code) => bare.startsWith(`${code}0`)) ? bare : withoutZero;
  return withoutTrunkZero(digits);
}

/** Digits in E.164 order without the 0 written right after a code of `TRUNK_ZERO_CODES` ("4402071230000" → "442071230000"). */
export function withoutTrunkZero(digits: string): string {
  for (const length of [2, 3]) {
    if (digits[length] === "0" && TRUNK_ZERO_CODES.has(digits.slice(0, length))) return digits.slice(0, length) + digits.slice(length + 1);
  }
  return digits;
}

/**
 * Normalizes what people type for a phone number to E.164 without +: strips spaces, dots, dashes,
 * parentheses and a leading + or 00, and the national trunk prefix written after the country code
 * ("+44 (0)20 …", "+44 020 …": see `internationalDigits`). Returns null when the result is not E.164.
 * @example normalizeE164("+1 (415) 555-0123") // "14155550123"
 * @example normalizeE164("+44 (0)20 7123 0000") // "442071230000"
 */
export function normalizeE164(input: string): string | null {
  let text = input.trim();
  if (text.startsWith("+")) text = text.slice(1);
  else if (text.replace(/[\s().-]/g, "").startsWith("00")) text = text.replace(/^[\s().-]*0[\s().-]*0/, "");
  const digits = internationalDigits(text);
  return E164_RE.test(digits) ? digits : null;
}

/** A number as typed by a person: digits with optional +, spaces, dots, dashes, parentheses. Normalize it. */
export const PhoneInput = (description = "Phone number; +, spaces, dots, dashes and parentheses are ignored. Stored as E.164 without +.") =>
  T.String({ minLength: 1, maxLength: 32, pattern: "^\\+?[0-9\\s().-]+$", description });

/** DTMF digits: 0-9, * and #. */
export const Digits = (options: { minLength?: number; maxLength?: number; description?: string } = {}) =>
  T.String({ pattern: "^[0-9*#]+$", minLength: options.minLength ?? 1, maxLength: options.maxLength ?? 32, ...(options.description ? { description: options.description } : {}) });

/** One DTMF key. */
export const DtmfKey = () => T.String({ pattern: "^[0-9*#]$", description: "One key: 0-9, * or #." });

/** HH:MM, 00:00–24:00 (24:00 closes a day). */
export const HourMinute = () => T.String({ pattern: "^(([01][0-9]|2[0-3]):[0-5][0-9]|24:00)$", description: "HH:MM, 24-hour clock." });

/** YYYY-MM-DD (checked as a real date by `isRealDate`). */
export const CalendarDate = () => T.String({ pattern: "^[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])$", description: "YYYY-MM-DD." });

/** True when a YYYY-MM-DD string names a day that exists (not 2025-02-30). */
export function isRealDate(value: string): boolean {
  const [y, m, d] = value.split("-").map(Number);
  const date = new Date(Date.UTC(y!, m! - 1, d!));
  return date.getUTCFullYear() === y && date.getUTCMonth() === m! - 1 && date.getUTCDate() === d;
}

/** An IANA time zone. */
export const TimeZone = (description = "IANA time zone name, e.g. Europe/Paris.") => T.String({ format: "iana-timezone", description });

/** ISO 3166-1 alpha-2 country, upper case. */
export const Country = (description = "ISO 3166-1 alpha-2 country code, upper case.") => T.String({ format: "iso-country", description });

/** BCP 47 language tag. */
export const Language = (description = "BCP 47 language tag, e.g. en-US.") => T.String({ format: "bcp47", description });

/** An id of the given prefix (shape only; existence is checked by the service). */
export const IdOf = (prefix: string, description?: string) =>
  T.String({ pattern: `^${prefix}_[0-9A-HJKMNP-TV-Z]{26}$`, description: description ?? `${prefix}_… id.` });

/** A PIN as a caller types it on the keypad: 4–12 digits, a string so leading zeros survive. */
export const Pin = (description = "4–12 digits, as a string. Write-only: replies only say whether one is set.") =>
  T.String({ pattern: "^[0-9]{4,12}$", description });

/** A human name or label. */
export const Name = (maxLength = 200) => T.String({ minLength: 1, maxLength });

/**
 * Text that goes into a SIP header as a caller's display name (or in front of one): one line, no
 * control characters (a line break would end the header and start another), at most 40 characters.
 */
export const CallerNameText = (options: { minLength?: number; description: string }) =>
  T.String({ minLength: options.minLength ?? 1, maxLength: 40, pattern: "^[^\\u0000-\\u001f\\u007f]*$", description: options.description });
