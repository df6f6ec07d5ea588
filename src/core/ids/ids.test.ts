import { describe, expect, test } from "bun:test";
import { decodeCrockford128, encodeCrockford128, isId, newId } from "./ids.ts";

describe("newId", () => {
  test("has the prefix and 26 Crockford characters", () => {
    const id = newId("acc");
    expect(id).toMatch(/^acc_[0-9A-HJKMNP-TV-Z]{26}$/);
    expect(isId(id, "acc")).toBe(true);
    expect(isId(id, "sk")).toBe(false);
  });

  test("sorts by creation time as a string", async () => {
    const ids: string[] = [];
    for (let i = 0; i < 50; i++) {
      ids.push(newId("q"));
      if (i % 10 === 0) await Bun.sleep(2);
    }
    expect([...ids].sort()).toEqual(ids);
    expect(new Set(ids).size).toBe(ids.length);
  });

  test("encodes all-zero and all-one values at the edges", () => {
    expect(encodeCrockford128(new Uint8Array(16))).toBe("0".repeat(26));
    expect(encodeCrockford128(new Uint8Array(16).fill(255))).toBe("7" + "Z".repeat(25));
  });

  test("encodes as the 128-bit number in base 32 would, and decodes back", () => {
    const ALPHABET = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";
    const reference = (bytes: Uint8Array) => {
      const value = BigInt(`0x${Buffer.from(bytes).toString("hex")}`);
      return value.toString(32).toUpperCase().padStart(26, "0").replace(/[0-9A-V]/g, (c) => ALPHABET[parseInt(c, 32)]!);
    };
    const samples = [new Uint8Array(16), new Uint8Array(16).fill(255), Uint8Array.from({ length: 16 }, (_, i) => 1 << i % 8)];
    for (let i = 0; i < 2000; i++) samples.push(crypto.getRandomValues(new Uint8Array(16)));
    for (const bytes of samples) {
      const text = encodeCrockford128(bytes);
      expect(text).toBe(reference(bytes));
      expect(decodeCrockford128(text)).toEqual(bytes);
    }
  });
});
