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
/** Public ids remembered per codec, twice over (events are encoded again by every socket and list that shows them). */
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
  // One block and one round input, reused: encoding allocates nothing but its text (it runs once per
  // event the delivery worker sends, and per event a socket or list shows).
  const block = new Uint8Array(16);
  const input = new Uint8Array(1 + HALF);
  /** A round's HMAC (Bun writes a digest only into 64 bytes or more). */
  const digest = new Uint8Array(64);
  /** HMAC(key) with nothing hashed yet: each round copies it (the key's pads are set up once). */
  const keyed = new Bun.CryptoHasher("sha256", key);
  /** block[into…] ^= F(round, block[from…]): the first 5 bytes of HMAC(key, round ‖ half). */
  function mix(round: number, from: number, into: number): void {
    input[0] = round;
    for (let i = 0; i < HALF; i++) input[1 + i] = block[from + i]!;
    keyed.copy().update(input).digest(digest);
    for (let i = 0; i < HALF; i++) block[into + i]! ^= digest[i]!;
  }
  // Two generations, the older dropped whole when the newer fills: no per-insert eviction (deleting a
  // Map's first key each time left the engine stepping over ever more removed entries).
  let cache = new Map<number, string>();
  let older = new Map<number, string>();

  return {
    encode(seq, tsMs) {
      const hit = cache.get(seq) ?? older.get(seq);
      if (hit !== undefined) return hit;
      if (!Number.isSafeInteger(seq) || seq < 0) throw new RangeError(`not an event sequence number: ${seq}`);
      // The second only: the deliveries log knows no finer time (created_at), and must give the same id.
      const ms = Math.max(0, Math.floor(tsMs / 1000)) * 1000;
      const high = Math.floor(ms / 2 ** 32);
      const low = ms >>> 0;
      block[0] = (high >>> 8) & 255;
      block[1] = high & 255;
      block[2] = low >>> 24;
      block[3] = (low >>> 16) & 255;
      block[4] = (low >>> 8) & 255;
      block[5] = low & 255;
      writeUint40(block, LEFT, Math.floor(seq / 2 ** 40));
      writeUint40(block, RIGHT, seq % 2 ** 40);
      // (L, R) → (R, L ^ F(R)); the halves swap roles each round, so they alternate in place. An even
      // number of rounds leaves them where they started.
      for (let round = 0; round < ROUNDS; round++) {
        if (round % 2 === 0) mix(round, RIGHT, LEFT);
        else mix(round, LEFT, RIGHT);
      }
      const id = EVENT_ID_PREFIX + encodeCrockford128(block);
      if (cache.size >= CACHE) {
        older = cache;
        cache = new Map();
      }
      cache.set(seq, id);
      return id;
    },
    decode(text) {
      if (typeof text !== "string" || !text.startsWith(EVENT_ID_PREFIX)) return null;
      const bytes = decodeCrockford128(text.slice(EVENT_ID_PREFIX.length));
      if (!bytes) return null;
      block.set(bytes);
      for (let round = ROUNDS - 1; round >= 0; round--) {
        if (round % 2 === 0) mix(round, RIGHT, LEFT);
        else mix(round, LEFT, RIGHT);
      }
      const high = readUint40(block, LEFT);
      if (high >= MAX_HIGH) return null;
      return high * 2 ** 40 + readUint40(block, RIGHT);
    },
  };
}

/** Where the two halves of the enciphered part start in a block. */
const LEFT = 6;
const RIGHT = 6 + HALF;

function writeUint40(out: Uint8Array, at: number, value: number): void {
  for (let i = HALF - 1; i >= 0; i--) {
    out[at + i] = value % 256;
    value = Math.floor(value / 256);
  }
}

function readUint40(bytes: Uint8Array, at: number): number {
  let value = 0;
  for (let i = 0; i < HALF; i++) value = value * 256 + bytes[at + i]!;
  return value;
}
