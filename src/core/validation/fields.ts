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

/** E.164 without the leading +: country code and subscriber number, 8–15 digits, no leading 0. */
export const E164_PATTERN = "^[1-9][0-9]{7,14}$";
export const E164 = (description = "E.164 number without the leading +, e.g. 14155550123.") =>
  T.String({ pattern: E164_PATTERN, description });

/**
 * Normalizes what people type for a phone number to E.164 without +: strips spaces, dots, dashes,
 * parentheses and a leading + or 00. Returns null when the result is not E.164.
 * @example normalizeE164("+1 (415) 555-0123") // "14155550123"
 */
export function normalizeE164(input: string): string | null {
  let digits = input.trim().replace(/[\s().-]/g, "");
  if (digits.startsWith("+")) digits = digits.slice(1);
  else if (digits.startsWith("00")) digits = digits.slice(2);
  return new RegExp(E164_PATTERN).test(digits) ? digits : null;
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
