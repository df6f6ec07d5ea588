/**
 * Phone keypad spelling for dial-by-name: each letter becomes the key it is printed on
 * (abc=2, def=3, ghi=4, jkl=5, mno=6, pqrs=7, tuv=8, wxyz=9). The SQL of the directory uses the same
 * two strings with `translate`, so the database and this function cannot disagree.
 */

/** Letters, in the order of `KEYPAD_DIGITS`. */
export const KEYPAD_LETTERS = "abcdefghijklmnopqrstuvwxyz";
/** The key of each letter of `KEYPAD_LETTERS`. */
export const KEYPAD_DIGITS = "22233344455566677778889999";

/**
 * A name spelled on the keypad; characters that are not a–z (after lower-casing) are dropped.
 * @example keypadDigits("O'Brien") // "627436"
 */
export function keypadDigits(name: string): string {
  let out = "";
  for (const ch of name.toLowerCase()) {
    const i = KEYPAD_LETTERS.indexOf(ch);
    if (i >= 0) out += KEYPAD_DIGITS[i];
  }
  return out;
}
