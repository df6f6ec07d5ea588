/**
 * Prefixed, time-ordered, opaque ids: `<prefix>_<26 chars of Crockford base32 of a UUIDv7>`.
 * Sorting ids as strings sorts them by creation time, which keyset pagination relies on.
 */

const CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";

/** Every id prefix in use. A new resource gets a new prefix here and in docs/api-conventions.md. */
export const ID_PREFIXES = {
  account: "acc",
  user: "us",
  consoleUser: "cu",
  device: "dev",
  apiKey: "sk",
  queue: "q",
  flow: "flow",
  number: "num",
  extension: "ext",
  ringGroup: "rg",
  schedule: "sch",
  voicemail: "vm",
  conference: "conf",
  media: "med",
  recording: "rec",
  call: "call",
  webhook: "wh",
  webhookDelivery: "whd",
  campaign: "cmp",
  contact: "ct",
  field: "fld",
  script: "scr",
  channel: "ch",
  conversation: "cv",
  message: "msg",
  template: "tpl",
  fax: "fax",
  team: "team",
  transcript: "tr",
  secret: "sec",
  request: "req",
  forward: "fwd",
  sipTrunk: "trk",
  outboundRoute: "ort",
  numberTransform: "ntr",
  callLimit: "cl",
  callerIdRule: "cir",
  aclRule: "acl",
  recordingRule: "rrl",
  phoneList: "pl",
  geoPolicy: "geo",
  mediaPlaylist: "mpl",
  dncEntry: "dnc",
  accountLog: "log",
  ratePlan: "rp",
  /** Events: not a newId but an enciphered sequence number (events/event-ids.ts). */
  event: "evt",
} as const;

export type IdPrefix = (typeof ID_PREFIXES)[keyof typeof ID_PREFIXES];

/**
 * Encodes 16 bytes as 26 Crockford base32 characters (the top two of the 130 bits are zero). Five bits
 * at a time through a small accumulator: several times cheaper than one BigInt of 128 bits, and every
 * new row's id passes here.
 */
export function encodeCrockford128(bytes: Uint8Array): string {
  let out = "";
  // The two zero bits above the 128 are already "in" the accumulator.
  let acc = 0;
  let bits = 2;
  for (let i = 0; i < 16; i++) {
    acc = (acc << 8) | bytes[i]!;
    bits += 8;
    while (bits >= 5) {
      bits -= 5;
      out += CROCKFORD[(acc >>> bits) & 31];
    }
    acc &= (1 << bits) - 1;
  }
  return out;
}

/** The 16 bytes of 26 Crockford base32 characters (upper case); null when the text is not such. */
export function decodeCrockford128(text: string): Uint8Array | null {
  if (!ID_BODY.test(text)) return null;
  // 26 characters hold 130 bits: the two above the 128 must be zero.
  const first = CROCKFORD.indexOf(text[0]!);
  if (first > 7) return null;
  const bytes = new Uint8Array(16);
  let acc = first;
  let bits = 3;
  let at = 0;
  for (let i = 1; i < 26; i++) {
    acc = (acc << 5) | CROCKFORD.indexOf(text[i]!);
    bits += 5;
    if (bits >= 8) {
      bits -= 8;
      bytes[at++] = (acc >>> bits) & 255;
      acc &= (1 << bits) - 1;
    }
  }
  return bytes;
}

/**
 * A new id with the given prefix.
 * @example newId("acc") // "acc_06F3ZK1W8N9Q2R4T6V8X0Y2Z4A"
 */
export function newId(prefix: IdPrefix): string {
  return `${prefix}_${encodeCrockford128(Bun.randomUUIDv7("buffer"))}`;
}

const ID_BODY = /^[0-9A-HJKMNP-TV-Z]{26}$/;

/** True when `value` has the shape of an id with `prefix`. Does not say whether it exists. */
export function isId(value: string, prefix: IdPrefix): boolean {
  return value.startsWith(`${prefix}_`) && ID_BODY.test(value.slice(prefix.length + 1));
}
