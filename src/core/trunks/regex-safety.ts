/**
 * Number transforms run user-written regular expressions on every call, so a pattern that
 * backtracks exponentially ((a+)+ on a long non-matching input) would stall call routing. This is a
 * deliberately simple guard, not a full ReDoS analysis: it refuses a group repeated a variable number of times
 * (`*`, `+`, `{n,}`, `{n,m}`) that itself contains such a repetition, which is the shape of every classic catastrophic pattern.
 */

/** Longest pattern accepted. */
export const MAX_REGEX_LENGTH = 200;

/**
 * Why `source` is not acceptable as a transform pattern, or null when it is.
 * @example regexProblem("^0(\\d+)$") // null
 * @example regexProblem("^(\\d+)+$") // "Nested quantifiers …"
 */
export function regexProblem(source: string): string | null {
  if (source.length > MAX_REGEX_LENGTH) return `At most ${MAX_REGEX_LENGTH} characters.`;
  try {
    new RegExp(source);
  } catch (error) {
    return `Not a valid regular expression: ${(error as Error).message}.`;
  }
  if (hasNestedQuantifier(source)) {
    return "Nested quantifiers such as (a+)+ can take exponential time; repeat a group only when nothing inside it repeats.";
  }
  return null;
}

/** Number of capture groups of a valid pattern. */
export function captureGroupCount(source: string): number {
  return new RegExp(`${source}|`).exec("")!.length - 1;
}

/** Length of a variable repetition (`*`, `+`, `{n,}`, `{n,m}` with m > n) at `i`, or 0. */
function repeatAt(source: string, i: number): number {
  const c = source[i];
  if (c === "*" || c === "+") return 1;
  if (c === "{") {
    const m = /^\{(\d+)(,(\d*))?\}/.exec(source.slice(i));
    if (!m) return 0;
    // {n} and {n,n} repeat a fixed number of times: no choice, so nothing to backtrack over.
    if (m[2] === undefined) return 0;
    if (m[3] === "" || Number(m[3]) > Number(m[1])) return m[0].length;
  }
  return 0;
}

function hasNestedQuantifier(source: string): boolean {
  // One frame per open group: does anything inside it repeat?
  const stack: boolean[] = [false];
  for (let i = 0; i < source.length; i++) {
    const c = source[i];
    if (c === "\\") {
      i++; // the escaped character is a plain atom
      continue;
    }
    if (c === "[") {
      // Skip the class: a quantifier character inside it is a literal.
      i++;
      if (source[i] === "^") i++;
      if (source[i] === "]") i++;
      while (i < source.length && source[i] !== "]") {
        if (source[i] === "\\") i++;
        i++;
      }
      continue;
    }
    if (c === "(") {
      stack.push(false);
      if (source[i + 1] === "?") {
        // (?: (?= (?! (?<= (?<! (?<name>: the ? is syntax, not a quantifier.
        if (source[i + 2] === "<" && source[i + 3] !== "=" && source[i + 3] !== "!") {
          const close = source.indexOf(">", i);
          i = close > 0 ? close : i + 2;
        } else {
          i += source[i + 2] === "<" ? 3 : 2;
        }
      }
      continue;
    }
    if (c === ")") {
      const innerRepeats = stack.pop() ?? false;
      const repeat = repeatAt(source, i + 1);
      if (repeat && innerRepeats) return true;
      if (stack.length === 0) stack.push(false);
      if (innerRepeats || repeat) stack[stack.length - 1] = true;
      if (repeat) i += repeat;
      continue;
    }
    const repeat = repeatAt(source, i);
    if (repeat) {
      stack[stack.length - 1] = true;
      i += repeat - 1;
    }
  }
  return false;
}
