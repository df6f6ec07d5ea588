import { describe, expect, test } from "bun:test";
import { canonicalCidr } from "./cidr-text.ts";

describe("canonicalCidr", () => {
  test("one written form per range", () => {
    const cases: Array<[string, string]> = [
      ["10.1.2.3", "10.1.2.3/32"],
      ["10.0.0.0/8", "10.0.0.0/8"],
      [" 192.0.2.0/24 ", "192.0.2.0/24"],
      ["0.0.0.0/0", "0.0.0.0/0"],
      ["2001:DB8:0:0::/64", "2001:db8::/64"],
      ["2001:db8:0:0:1:0:0:1", "2001:db8::1:0:0:1/128"],
      ["2001:0:0:1:0:0:0:1", "2001:0:0:1::1/128"],
      ["::1", "::1/128"],
      ["::/0", "::/0"],
      ["fe80::", "fe80::/128"],
      ["1:2:3:4:5:6:7:8", "1:2:3:4:5:6:7:8/128"],
      ["1:0:3:4:5:6:7:8", "1:0:3:4:5:6:7:8/128"],
      ["::ffff:192.0.2.1", "192.0.2.1/32"],
    ];
    for (const [input, expected] of cases) expect(canonicalCidr(input), input).toEqual({ cidr: expected });
  });

  test("refuses what is not a range, and host bits below the prefix", () => {
    for (const bad of ["KP", "10.0.0.256", "10.0.0.0/33", "10.0.0.0/-1", "10.0.0.0/8x", "2001:db8::/129", "1:2:3", ""]) {
      expect("error" in canonicalCidr(bad), bad).toBe(true);
    }
    expect(canonicalCidr("10.0.0.1/8")).toEqual({ error: "'10.0.0.1/8' has host bits set below /8; the range is 10.0.0.0/8." });
  });
});
