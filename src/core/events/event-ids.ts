/**
 * The public ids of events: `evt_` and 26 Crockford base32 characters, like every other id
 * (SPEC.md section 1.5: prefixed, time-ordered, opaque), over 16 bytes:
 *
 * - 6 bytes: the event's time in epoch ms, rounded down to its second (the place and unit of the
 *   time in every other id, a UUIDv7's). Ids sort as strings by that second.
 * - 10 bytes: the event's place in the platform-wide sequence, enciphered with a key derived from the
 *   master key (a 4-round Feistel network over two 40-bit halves, HMAC-SHA256 as its round function).
 *
 * Inside the platform an event's id is its sequence number: stored, published and resumed from as a
 * number. Only replies and stream messages carry the public form, and only the platform can turn it
 * back into the number. So an account cannot count the events of the whole platform by comparing its
 * own ids (the plain sequence showed every other account's volume between two of its events).
 * A sequence number has at most 53 bits: the 27 top bits of a deciphered block are zero, which rejects
 * all but one in 2^27 of made-up ids (and one that passes only resumes the caller's own stream from
 * some point).
 */
import { decodeCrockford128, encodeCrockford128, ID_PREFIXES } from "../ids/ids.ts";

export const EVENT_ID_PREFIX = `${ID_PREFIXES.event}_`;
const ROUNDS = 4;
const HALF = 5;
/** The high half of a block is a sequence number's bits above 40: fewer than 2^13 for a safe integer. */
const MAX_HIGH = 2 ** 13;
/** Public ids remembered per codec (events are encoded again by every socket and list that shows them). */
const CACHE = 8192;

export interface EventIdCodec {
  /**
   * The public id of the event with sequence number `seq` at `tsMs` (epoch ms).
   * @example ids.encode(8812, 1764000000123) // "evt_01KAZS7SR0…"
   */
  encode(seq: number, tsMs: number): string;
  /** The sequence number of a public id; null when it is not one this platform issued. */
  decode(text: string): number | null;
}

/** The key of event ids, derived from the master key so every instance computes the same ids. */
export function deriveEventIdKey(masterKey: Uint8Array): Uint8Array {
  return new Uint8Array(new Bun.CryptoHasher("sha256", masterKey).update("parley/event-ids/v1").digest());
}

/** A codec for `key` (32 bytes from deriveEventIdKey). */
export function createEventIdCodec(key: Uint8Array): EventIdCodec {
  const input = new Uint8Array(1 + HALF);
  /** HMAC(key) with nothing hashed yet: each round copies it (the key's pads are set up once). */
  const keyed = new Bun.CryptoHasher("sha256", key);
  /** out ^= F(round, half): the first 5 bytes of HMAC(key, round ‖ half). */
  function mix(round: number, half: Uint8Array, out: Uint8Array): void {
    input[0] = round;
    input.set(half, 1);
    const digest = keyed.copy().update(input).digest();
    for (let i = 0; i < HALF; i++) out[i]! ^= digest[i]!;
  }
  const cache = new Map<number, string>();

  return {
    encode(seq, tsMs) {
      const hit = cache.get(seq);
      if (hit !== undefined) return hit;
      if (!Number.isSafeInteger(seq) || seq < 0) throw new RangeError(`not an event sequence number: ${seq}`);
      const bytes = new Uint8Array(16);
      const view = new DataView(bytes.buffer);
      // The second only: the deliveries log knows no finer time (created_at), and must give the same id.
      const ms = Math.max(0, Math.floor(tsMs / 1000)) * 1000;
      view.setUint16(0, Math.floor(ms / 2 ** 32));
      view.setUint32(2, ms >>> 0);
      let left = bytes.subarray(6, 6 + HALF);
      let right = bytes.subarray(6 + HALF, 16);
      writeUint40(left, Math.floor(seq / 2 ** 40));
      writeUint40(right, seq % 2 ** 40);
      // (L, R) → (R, L ^ F(R)); the halves swap roles each round, so they alternate in place.
      for (let round = 0; round < ROUNDS; round++) {
        mix(round, right, left);
        [left, right] = [right, left];
      }
      // An even number of rounds leaves the halves where they started.
      const id = EVENT_ID_PREFIX + encodeCrockford128(bytes);
      cache.set(seq, id);
      if (cache.size > CACHE) cache.delete(cache.keys().next().value!);
      return id;
    },
    decode(text) {
      if (typeof text !== "string" || !text.startsWith(EVENT_ID_PREFIX)) return null;
      const bytes = decodeCrockford128(text.slice(EVENT_ID_PREFIX.length));
      if (!bytes) return null;
      let left = bytes.subarray(6, 6 + HALF);
      let right = bytes.subarray(6 + HALF, 16);
      for (let round = ROUNDS - 1; round >= 0; round--) {
        [left, right] = [right, left];
        mix(round, right, left);
      }
      const high = readUint40(left);
      if (high >= MAX_HIGH) return null;
      return high * 2 ** 40 + readUint40(right);
    },
  };
}

function writeUint40(out: Uint8Array, value: number): void {
  for (let i = HALF - 1; i >= 0; i--) {
    out[i] = value % 256;
    value = Math.floor(value / 256);
  }
}

function readUint40(bytes: Uint8Array): number {
  let value = 0;
  for (let i = 0; i < HALF; i++) value = value * 256 + bytes[i]!;
  return value;
}
