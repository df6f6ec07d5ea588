/** Keypad spelling for dial-by-name. */
import { describe, expect, test } from "bun:test";
import { KEYPAD_DIGITS, KEYPAD_LETTERS, keypadDigits } from "./keypad.ts";

describe("keypadDigits", () => {
  test("maps every letter to its key", () => {
    expect(keypadDigits("abcdefghijklmnopqrstuvwxyz")).toBe("22233344455566677778889999");
    expect(keypadDigits("ABC")).toBe("222");
    expect(KEYPAD_LETTERS.length).toBe(KEYPAD_DIGITS.length);
  });

  test("drops what is not a letter", () => {
    expect(keypadDigits("O'Brien")).toBe("627436");
    expect(keypadDigits("Smith-Jones 2")).toBe("7648456637");
    expect(keypadDigits("")).toBe("");
  });
});
