/**
 * The country of an E.164 number, from its ITU-T country calling code: what outbound routes
 * (match_country), caller-ID rules and geo policies compare against. A code shared by several
 * territories resolves by number range where the territory has ranges of its own (+44 1534 and
 * Jersey's mobile ranges → JE, +358 18 → AX, +39 06 698 → VA, +599 3/4/7 → BQ …), else to the main
 * country (+44 → GB, +39 → IT); the North American Numbering Plan (+1) by area code (Canada and the
 * Caribbean), +7 by its next digit (Kazakhstan's 6/7 ranges). A country the router never detects is
 * refused where a policy names it (`undetectableCountry`), rather than silently never matching.
 */
const CODES: Record<string, string> = Object.fromEntries(
  (
    "20 EG,27 ZA,30 GR,31 NL,32 BE,33 FR,34 ES,36 HU,39 IT,40 RO,41 CH,43 AT,44 GB,45 DK,46 SE,47 NO,48 PL,49 DE," +
    "51 PE,52 MX,53 CU,54 AR,55 BR,56 CL,57 CO,58 VE,60 MY,61 AU,62 ID,63 PH,64 NZ,65 SG,66 TH,81 JP,82 KR,84 VN," +
    "86 CN,90 TR,91 IN,92 PK,93 AF,94 LK,95 MM,98 IR," +
    "211 SS,212 MA,213 DZ,216 TN,218 LY,220 GM,221 SN,222 MR,223 ML,224 GN,225 CI,226 BF,227 NE,228 TG,229 BJ," +
    "230 MU,231 LR,232 SL,233 GH,234 NG,235 TD,236 CF,237 CM,238 CV,239 ST,240 GQ,241 GA,242 CG,243 CD,244 AO," +
    "245 GW,246 IO,248 SC,249 SD,250 RW,251 ET,252 SO,253 DJ,254 KE,255 TZ,256 UG,257 BI,258 MZ,260 ZM,261 MG," +
    "247 SH,262 RE,263 ZW,264 NA,265 MW,266 LS,267 BW,268 SZ,269 KM,290 SH,291 ER,297 AW,298 FO,299 GL," +
    "350 GI,351 PT,352 LU,353 IE,354 IS,355 AL,356 MT,357 CY,358 FI,359 BG,370 LT,371 LV,372 EE,373 MD,374 AM," +
    "375 BY,376 AD,377 MC,378 SM,379 VA,380 UA,381 RS,382 ME,385 HR,386 SI,387 BA,389 MK,420 CZ,421 SK,423 LI," +
    "500 FK,501 BZ,502 GT,503 SV,504 HN,505 NI,506 CR,507 PA,508 PM,509 HT,590 GP,591 BO,592 GY,593 EC,594 GF," +
    "595 PY,596 MQ,597 SR,598 UY,599 CW,670 TL,672 NF,673 BN,674 NR,675 PG,676 TO,677 SB,678 VU,679 FJ,680 PW," +
    "681 WF,682 CK,683 NU,685 WS,686 KI,687 NC,688 TV,689 PF,690 TK,691 FM,692 MH,850 KP,852 HK,853 MO,855 KH," +
    "856 LA,880 BD,886 TW,960 MV,961 LB,962 JO,963 SY,964 IQ,965 KW,966 SA,967 YE,968 OM,970 PS,971 AE,972 IL," +
    "973 BH,974 QA,975 BT,976 MN,977 NP,992 TJ,993 TM,994 AZ,995 GE,996 KG,998 UZ"
  )
    .split(",")
    .map((pair) => pair.split(" ") as [string, string]),
);

/** NANP area codes outside the United States. */
const NANP: Record<string, string> = Object.fromEntries(
  [
    ..."204 226 236 249 250 257 263 289 306 343 354 365 367 368 382 403 416 418 428 431 437 438 450 460 468 474 506 514 519 548 579 581 584 587 600 604 613 639 647 672 683 705 709 742 753 778 780 782 807 819 825 867 873 879 902 905"
      .split(" ")
      .map((npa) => [npa, "CA"]),
    ..."242 BS,246 BB,264 AI,268 AG,284 VG,340 VI,345 KY,441 BM,473 GD,649 TC,658 JM,876 JM,664 MS,670 MP,671 GU,684 AS,721 SX,758 LC,767 DM,784 VC,787 PR,939 PR,809 DO,829 DO,849 DO,868 TT,869 KN"
      .split(",")
      .map((pair) => pair.split(" ")),
  ],
);

/**
 * Territories inside another country's calling code, by number range (country code included): their
 * own area codes, and the mobile and non-geographic ranges allocated to their operators, after
 * libphonenumber's metadata and the regulators' allocations (Ofcom's for the Crown Dependencies).
 * Ranges a territory shares with its main country (Åland's and Svalbard's mobiles are Finland's and
 * Norway's, Western Sahara's Morocco's, Mayotte's toll-free France's) stay the main country's.
 */
const TERRITORY_RANGES: Record<string, string> = Object.fromEntries(
  [
    // Jersey: 01534; mobiles 07509, 07700 3/7/8, 07797 7–9, 07829, 07937; its personal, free, premium and shared-cost ranges.
    "441534 447509 4477003 4477007 4477008 4477977 4477978 4477979 447829 447937 44701511 44800735 44800781 44808901 " +
      "44871206 44900665 44900669 44901810 44907107 44907155 44844405 44844442 44844469 44844703 44845041 44845800 44870002 JE",
    // Guernsey: 01481; mobiles 07781, 07839, 07911 1/7.
    "441481 447781 447839 4479111 4479117 GG",
    // Isle of Man: 01624; mobiles 07457 6, 07524, 07624, 07924; its free, premium and UAN ranges.
    "441624 4474576 447524 447624 447924 44808162 448440406 448440906 44872299 44845624 44870624 44900624 44901624 " +
      "44906624 44907624 44308162 443440406 443440906 44345624 44370624 44372299 IM",
    // Åland: 018. Vatican City: 06 698 in Rome's numbering. Svalbard: 79.
    "35818 AX",
    "3906698 VA",
    "4779 SJ",
    // Caribbean Netherlands in +599 (Sint Eustatius 3, Saba 4, Bonaire 7); Curaçao is 9.
    "5993 5994 5997 BQ",
    // Mayotte in +262: 269 (fixed), 639 (mobile).
    "262269 262639 YT",
    // Cocos (Keeling) and Christmas Islands in +61: 08 9162, 08 9164.
    "6189162 CC",
    "6189164 CX",
    // Western Sahara in +212: 0528 8, 0528 9.
    "2125288 2125289 EH",
  ].flatMap((line) => {
    const parts = line.split(" ");
    const country = parts.pop()!;
    return parts.map((prefix) => [prefix, country]);
  }),
);
const TERRITORY_PREFIX_LENGTHS = [...new Set(Object.keys(TERRITORY_RANGES).map((p) => p.length))].sort((a, b) => b - a);

/**
 * Countries a policy may name that no number ever resolves to, and why: each refused where a geo
 * policy, an outbound route or a caller-ID rule names it (it would never match).
 */
const UNDETECTABLE: Record<string, string> = {
  BL: "Saint Barthélemy shares +590 with Guadeloupe (GP) and Saint Martin, and their ranges are not told apart: list GP, which is all of +590",
  MF: "Saint Martin (French part) shares +590 with Guadeloupe (GP) and Saint Barthélemy, and their ranges are not told apart: list GP, which is all of +590",
  GS: "South Georgia and the South Sandwich Islands share +500 with the Falkland Islands (FK), with no range of their own: list FK",
  PN: "Pitcairn has no numbering of its own (it is reached through satellite networks: ZZ, numbers of no country)",
  AQ: "Antarctica has no numbering of its own (its bases use their operators' countries' numbers, or satellite networks: ZZ)",
  BV: "Bouvet Island is uninhabited: no number is in it",
  HM: "Heard Island and McDonald Islands are uninhabited: no number is in them",
  TF: "the French Southern Territories have no numbering of their own (satellite networks: ZZ)",
  UM: "the United States Minor Outlying Islands have no numbering of their own (US numbers, or satellite networks: ZZ)",
};

/**
 * What a geo policy names numbers of no country by (no ISO 3166-1 country is assigned ZZ): the
 * international networks and services (+800 freephone, +808, +870 Inmarsat, +878, +881 satellite
 * networks, +882/+883 international networks, +888, +979 international premium rate) and codes no
 * country holds. A denylist with ZZ refuses them; an allowlist without ZZ refuses them already.
 */
export const NO_COUNTRY = "ZZ";

/**
 * ISO 3166-1 alpha-2 country of an E.164 number (digits, no +), or null when no code matches.
 * @example countryOfE164("442071230000") // "GB"; countryOfE164("14165550100") // "CA"
 * @example countryOfE164("441534123456") // "JE"
 */
export function countryOfE164(e164: string): string | null {
  if (!/^[1-9][0-9]{2,14}$/.test(e164)) return null;
  if (e164.startsWith("1")) return NANP[e164.slice(1, 4)] ?? "US";
  if (e164.startsWith("7")) return e164[1] === "6" || e164[1] === "7" ? "KZ" : "RU";
  for (const length of TERRITORY_PREFIX_LENGTHS) {
    const territory = TERRITORY_RANGES[e164.slice(0, length)];
    if (territory) return territory;
  }
  return CODES[e164.slice(0, 2)] ?? CODES[e164.slice(0, 3)] ?? null;
}

/**
 * The country whose calling code an E.164 number is in, its territories' ranges included ("441534…",
 * Jersey's, is GB's +44), or null when no code matches.
 * @example callingCodeCountryOf("441534123456") // "GB"
 */
export function callingCodeCountryOf(e164: string): string | null {
  if (!/^[1-9][0-9]{2,14}$/.test(e164)) return null;
  if (e164.startsWith("1")) return NANP[e164.slice(1, 4)] ?? "US";
  if (e164.startsWith("7")) return e164[1] === "6" || e164[1] === "7" ? "KZ" : "RU";
  return CODES[e164.slice(0, 2)] ?? CODES[e164.slice(0, 3)] ?? null;
}

/**
 * How a rule naming a country (an outbound route's or a caller-ID rule's match_country) fits a number:
 * 2 when it names the number's own country (a territory's own: JE for a Jersey number), 1 when it names
 * the country whose calling code the number is in (GB for a Jersey number: a route or caller-ID for the
 * UK still serves the Crown Dependencies, as before they were told apart), 0 otherwise. Geo policies
 * compare the own country only (geoCountryOf): a JE denylist refuses Jersey, a GB one not.
 * @example countryFit("441534123456", "JE") // 2; countryFit("441534123456", "GB") // 1
 */
export function countryFit(e164: string, country: string): 0 | 1 | 2 {
  const own = countryOfE164(e164);
  if (own === country) return 2;
  return own !== null && callingCodeCountryOf(e164) === country ? 1 : 0;
}

/**
 * The country a geo policy compares an E.164 number against: its country, or NO_COUNTRY (ZZ).
 * @example geoCountryOf("881612345678") // "ZZ"
 */
export function geoCountryOf(e164: string): string {
  return countryOfE164(e164) ?? NO_COUNTRY;
}

/** Every country some number resolves to. */
const DETECTED = new Set<string>([...Object.values(CODES), ...Object.values(NANP), "US", "RU", "KZ", ...Object.values(TERRITORY_RANGES)]);

/**
 * Why a country named by a policy would never match a number (the router never resolves a number to
 * it), or null when it can: what the config file refuses a geo policy's, a route's or a caller-ID
 * rule's country for. NO_COUNTRY (ZZ) is null: geo policies take it (routes and rules do not).
 * @example undetectableCountry("MF") // "Saint Martin (French part) shares +590 …: list GP, …"; undetectableCountry("JE") // null
 */
export function undetectableCountry(code: string): string | null {
  if (code === NO_COUNTRY || DETECTED.has(code)) return null;
  return UNDETECTABLE[code] ?? `no number resolves to ${code}`;
}
