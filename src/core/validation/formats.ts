/**
 * String formats the API validates beyond what JSON Schema knows: IANA time zones, ISO 3166 alpha-2
 * countries, BCP 47 language tags. Registered once with TypeBox, so request validation (Elysia compiles
 * with TypeBox) and domain code agree, and OpenAPI shows the format name.
 */
import { FormatRegistry } from "@sinclair/typebox";
import { parseIp } from "../net/cidr.ts";

// ISO 3166-1 alpha-2, officially assigned codes.
const COUNTRIES = new Set(
  ("AD AE AF AG AI AL AM AO AQ AR AS AT AU AW AX AZ BA BB BD BE BF BG BH BI BJ BL BM BN BO BQ BR BS BT BV BW BY BZ " +
    "CA CC CD CF CG CH CI CK CL CM CN CO CR CU CV CW CX CY CZ DE DJ DK DM DO DZ EC EE EG EH ER ES ET FI FJ FK FM FO FR " +
    "GA GB GD GE GF GG GH GI GL GM GN GP GQ GR GS GT GU GW GY HK HM HN HR HT HU ID IE IL IM IN IO IQ IR IS IT JE JM JO " +
    "JP KE KG KH KI KM KN KP KR KW KY KZ LA LB LC LI LK LR LS LT LU LV LY MA MC MD ME MF MG MH MK ML MM MN MO MP MQ MR " +
    "MS MT MU MV MW MX MY MZ NA NC NE NF NG NI NL NO NP NR NU NZ OM PA PE PF PG PH PK PL PM PN PR PS PT PW PY QA RE RO " +
    "RS RU RW SA SB SC SD SE SG SH SI SJ SK SL SM SN SO SR SS ST SV SX SY SZ TC TD TF TG TH TJ TK TL TM TN TO TR TT TV " +
    "TW TZ UA UG UM US UY UZ VA VC VE VG VI VN VU WF WS YE YT ZA ZM ZW").split(" "),
);

/** Every officially assigned ISO 3166-1 alpha-2 code, upper case. */
export const ISO_COUNTRIES: ReadonlySet<string> = COUNTRIES;

/** True for an officially assigned ISO 3166-1 alpha-2 code (upper case). */
export function isCountryCode(value: string): boolean {
  return COUNTRIES.has(value);
}

const TZ_SHAPE = /^(UTC|[A-Z][A-Za-z_]+(\/[A-Za-z0-9_+\-]+){1,2})$/;
const tzCache = new Map<string, boolean>();

/** True for an IANA zone name the runtime knows (`Europe/Paris`, `UTC`); offsets like `+01:00` are not zones. */
export function isTimeZone(value: string): boolean {
  const cached = tzCache.get(value);
  if (cached !== undefined) return cached;
  let ok = TZ_SHAPE.test(value);
  if (ok) {
    try {
      new Intl.DateTimeFormat("en", { timeZone: value });
    } catch {
      ok = false; // RangeError: the runtime's tz database does not know this zone.
    }
  }
  if (tzCache.size < 1000) tzCache.set(value, ok);
  return ok;
}

const LANG_SHAPE = /^[a-z]{2,3}(-[A-Z][a-z]{3})?(-([A-Z]{2}|\d{3}))?$/;

/** True for a BCP 47 tag in canonical case: language, optional script, optional region (`en-US`, `pt-BR`). */
export function isLanguageTag(value: string): boolean {
  if (!LANG_SHAPE.test(value)) return false;
  try {
    return Intl.getCanonicalLocales(value)[0] === value;
  } catch {
    return false; // RangeError: structurally invalid tag.
  }
}

FormatRegistry.Set("iana-timezone", isTimeZone);
// An IPv4 or IPv6 address (IPv4-mapped, [bracketed] and %zone forms included), never with a port.
FormatRegistry.Set("ip-text", (v) => parseIp(v.trim()) !== null);
FormatRegistry.Set("iso-country", isCountryCode);
FormatRegistry.Set("bcp47", isLanguageTag);
FormatRegistry.Set("email", (v) => /^[^\s@]+@[^\s@]+$/.test(v) && v.length <= 254);
// A SIP or SIPS URI as the edge sends bindings (RFC 3261 19.1): a scheme, then no whitespace, angle
// brackets, quotes or control characters (what would let it break out of a header the edge builds
// from it, or a log line that shows it).
const SIP_URI = /^sips?:[^\s<>"\u0000-\u001f\u007f]+$/i;
FormatRegistry.Set("sip-uri", (v) => SIP_URI.test(v));
// A REGISTER's Contact: a SIP URI, or * (every binding, with expires 0).
FormatRegistry.Set("sip-contact", (v) => v === "*" || SIP_URI.test(v));

// A whole number in a query string (Elysia's t.Integer takes text in this format, then Number() of
// it): decimal digits only. Elysia's own check took anything Number() reads as whole (0x3, 0b11, 1e1,
// "3.", " 3 "), so those were read as other numbers than the text says. Set here, whichever of the
// two modules loads first (Elysia sets its own only when none is set).
FormatRegistry.Set("integer", (v) => /^-?[0-9]{1,16}$/.test(v));

/** What a failed format says, where TypeBox's "Expected string to match 'x' format" says too little. */
const FORMAT_MESSAGES: Record<string, string> = {
  "ip-text": "Not an IP address (an address without a port).",
  "sip-uri": "Not a SIP URI (sip: or sips:, without spaces, angle brackets, quotes or control characters).",
  "sip-contact": "Not a SIP URI (sip: or sips:, without spaces, angle brackets, quotes or control characters), nor *.",
};

/** A validation message, made plain for the formats above that have a message of their own. */
export function formatMessage(message: string): string {
  const name = /^Expected string to match '([^']+)' format$/.exec(message)?.[1];
  return (name !== undefined ? FORMAT_MESSAGES[name] : undefined) ?? message;
}
