import { describe, expect, test } from "bun:test";
import { decodeCrockford128, encodeCrockford128 } from "../ids/ids.ts";
import { createEventIdCodec, deriveEventIdKey } from "./event-ids.ts";

// Fixed keys: every assertion below is deterministic.
const key = deriveEventIdKey(new Uint8Array(32).fill(7));
const otherKey = deriveEventIdKey(new Uint8Array(32).fill(8));
const TS = Date.UTC(2026, 10, 25, 12, 0, 0, 123);
const SHAPE = /^evt_[0-9A-HJKMNP-TV-Z]{26}$/;

describe("event ids", () => {
  test("a public id reads back as its sequence number, up to the largest safe integer", () => {
    const ids = createEventIdCodec(key);
    for (const seq of [0, 1, 2, 255, 8812, 2 ** 32, 2 ** 40 - 1, 2 ** 40, 2 ** 52 + 12345, Number.MAX_SAFE_INTEGER]) {
      const id = ids.encode(seq, TS);
      expect(id).toMatch(SHAPE);
      expect(ids.decode(id)).toBe(seq);
      // Another codec with the same key (another instance) reads it too, and writes the same id.
      expect(createEventIdCodec(key).decode(id)).toBe(seq);
      expect(createEventIdCodec(key).encode(seq, TS)).toBe(id);
    }
  });

  test("an id never changes across versions (a client resumes after an upgrade with the id it kept)", () => {
    // Written by the first version of the codec; any change to the cipher or the layout breaks these.
    const pinned: Array<[number, string]> = [
      [0, "evt_01M8997DG09S3VB8MKQ8PQ9314"],
      [8812, "evt_01M8997DG0KJ94W851ZN03X1CY"],
      [2 ** 40 + 5, "evt_01M8997DG0MN68DCJHPGBTDS0A"],
      [Number.MAX_SAFE_INTEGER, "evt_01M8997DG03MVJ156HQ73QFV1E"],
    ];
    const ids = createEventIdCodec(key);
    for (const [seq, id] of pinned) {
      expect(ids.encode(seq, TS)).toBe(id);
      expect(ids.decode(id)).toBe(seq);
    }
  });

  test("ids sort by their event's second; within a second they show nothing of the sequence", () => {
    const ids = createEventIdCodec(key);
    const sameSecond = Array.from({ length: 200 }, (_, i) => ids.encode(1000 + i, TS + (i % 800)));
    expect(new Set(sameSecond).size).toBe(200);
    // The leading characters (the second) are shared; the sequence's order is not the ids' order.
    expect(new Set(sameSecond.map((id) => id.slice(0, 14))).size).toBe(1);
    expect([...sameSecond].sort()).not.toEqual(sameSecond);
    // Consecutive numbers differ all over the enciphered part, not in the last character.
    const [a, b] = [ids.encode(5000, TS), ids.encode(5001, TS)];
    const differing = [...a.slice(14)].filter((c, i) => c !== b.slice(14)[i]).length;
    expect(differing).toBeGreaterThan(6);
    // The time sits where every other id has it (a UUIDv7's 48-bit epoch ms), rounded down to the second.
    const time = decodeCrockford128(a.slice(4))!.subarray(0, 6);
    expect(time.reduce((n, byte) => n * 256 + byte, 0)).toBe(Math.floor(TS / 1000) * 1000);
    // A later second sorts later whatever the numbers.
    expect(ids.encode(1, TS + 1000) > ids.encode(999_999, TS)).toBe(true);
    expect(ids.encode(1, TS + 86_400_000) > ids.encode(2 ** 50, TS + 1000)).toBe(true);
  });

  test("only ids of this key are accepted", () => {
    const ids = createEventIdCodec(key);
    const id = ids.encode(424242, TS);
    expect(createEventIdCodec(otherKey).decode(id)).toBeNull();
    for (const bad of ["424242", "", "evt_", "evt_0", `EVT_${id.slice(4)}`, id.toLowerCase(), id.slice(0, -1), `${id}0`, `whd_${id.slice(4)}`, `evt_${"Z".repeat(26)}`]) {
      expect(ids.decode(bad)).toBeNull();
    }
    // Any one character of the enciphered part changed: refused.
    for (let i = 14; i < id.length; i++) {
      const changed = id.slice(0, i) + (id[i] === "0" ? "1" : "0") + id.slice(i + 1);
      expect(ids.decode(changed)).toBeNull();
    }
    expect(() => ids.encode(-1, TS)).toThrow(RangeError);
    expect(() => ids.encode(1.5, TS)).toThrow(RangeError);
    expect(() => ids.encode(2 ** 53, TS)).toThrow(RangeError);
  });

  test("Crockford base32 of 16 bytes reads back; 130-bit texts and other alphabets do not", () => {
    const bytes = crypto.getRandomValues(new Uint8Array(16));
    expect(decodeCrockford128(encodeCrockford128(bytes))).toEqual(bytes);
    expect(decodeCrockford128("7ZZZZZZZZZZZZZZZZZZZZZZZZZ")).toEqual(new Uint8Array(16).fill(255));
    expect(decodeCrockford128("8ZZZZZZZZZZZZZZZZZZZZZZZZZ")).toBeNull();
    expect(decodeCrockford128("0000000000000000000000000I")).toBeNull();
  });
});
