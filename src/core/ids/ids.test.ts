import { describe, expect, test } from "bun:test";
import { encodeCrockford128, isId, newId } from "./ids.ts";

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
});
