/**
 * Duplicate member names in a JSON text. `JSON.parse` keeps the last of them in silence, so
 * `{"accountId":"a","accountId":"b"}` acted on b; a request body is refused instead, as a query
 * parameter or form field given twice is.
 */

/** Reads a JSON string starting at the quote at `start`: its decoded value and the index after it. */
function readString(text: string, start: number): { value: string; end: number } {
  let i = start + 1;
  let escaped = false;
  for (;;) {
    const c = text.charCodeAt(i);
    if (c === 34 /* " */) break;
    if (c === 92 /* \ */) {
      escaped = true;
      i += 2;
    } else i++;
  }
  const raw = text.slice(start, i + 1);
  return { value: escaped ? (JSON.parse(raw) as string) : raw.slice(1, -1), end: i + 1 };
}

/** A JSON Pointer token (RFC 6901). */
const pointerToken = (name: string) => name.replace(/~/g, "~0").replace(/\//g, "~1");

interface Frame {
  /** Member names seen so far (objects); null for an array. */
  names: Set<string> | null;
  /** The member name or element index being read, for the path. */
  at: string;
  /** Objects: the next string is a member name. */
  expectName: boolean;
  index: number;
}

/** Deepest nesting of arrays and objects a request body may have: no request needs more, and walks of deeper values (the stores' JSON parsers among them) run out of stack. */
export const MAX_JSON_DEPTH = 64;

/** What a refusal says of a member (or a query parameter) given twice. */
export const GIVEN_TWICE = "Given more than once; send one value.";
/** What a refusal says of JSON nested deeper than MAX_JSON_DEPTH. */
export const TOO_DEEP = `Nested too deep: arrays and objects may be nested at most ${MAX_JSON_DEPTH} levels.`;

/** What makes a valid JSON text unfit as a request body: a member given twice, or nesting deeper than MAX_JSON_DEPTH. */
export interface JsonTextProblem {
  /** JSON Pointer of the member given twice, or of the value whose child nests too deep. */
  path: string;
  kind: "twice" | "deep";
}

/**
 * The first problem of a valid JSON text as a request body (it is scanned after `JSON.parse`
 * accepted it), in one pass; null when none.
 * @example jsonTextProblem('{"a":1,"b":{"c":1,"c":2}}') // { path: "/b/c", kind: "twice" }
 */
export function jsonTextProblem(text: string): JsonTextProblem | null {
  return scanJson(text);
}

function scanJson(text: string): JsonTextProblem | null {
  const stack: Frame[] = [];
  const path = () => stack.map((f) => `/${f.at}`).join("");
  for (let i = 0; i < text.length; ) {
    const c = text.charCodeAt(i);
    if (c === 34 /* " */) {
      const { value, end } = readString(text, i);
      const top = stack[stack.length - 1];
      if (top?.names && top.expectName) {
        top.at = pointerToken(value);
        if (top.names.has(value)) return { path: path(), kind: "twice" };
        top.names.add(value);
        top.expectName = false;
      }
      i = end;
      continue;
    }
    if (c === 123 /* { */ || c === 91 /* [ */) {
      if (stack.length === MAX_JSON_DEPTH) return { path: path(), kind: "deep" };
      stack.push(c === 123 ? { names: new Set(), at: "", expectName: true, index: 0 } : { names: null, at: "0", expectName: false, index: 0 });
    }
    else if (c === 125 /* } */ || c === 93 /* ] */) stack.pop();
    else if (c === 44 /* , */) {
      const top = stack[stack.length - 1]!;
      if (top.names) top.expectName = true;
      else top.at = String(++top.index);
    }
    i++;
  }
  return null;
}
