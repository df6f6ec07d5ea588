/** Text the databases can keep as it is: the check every host runs on bodies, and services on text they parse themselves. */

/** A text neither database can keep as it is: a NUL, or a lone UTF-16 surrogate (not Unicode text). */
const unstorable = (text: string) => text.includes("\u0000") || !text.isWellFormed();

/**
 * Where a parsed body holds a NUL character or a lone UTF-16 surrogate (in a text or a key), as a
 * JSON pointer; null when nowhere. Neither PostgreSQL nor PGlite can store a NUL in text or JSON,
 * nor a lone surrogate in JSON (text would get U+FFFD instead), so such a value would fail deep
 * inside a write (a 500) or change on the way, instead of being refused up front. Only plain data is
 * walked (raw uploads are bytes).
 */
export function unstorableTextPath(value: unknown, path: string): string | null {
  // An explicit stack, not recursion: a body nested deeper than the call stack is refused, not a 500.
  const stack: Array<[unknown, string]> = [[value, path]];
  while (stack.length) {
    const [item, at] = stack.pop()!;
    if (typeof item === "string") {
      if (unstorable(item)) return at;
    } else if (Array.isArray(item)) {
      for (let i = item.length - 1; i >= 0; i--) stack.push([item[i], `${at}/${i}`]);
    } else if (item !== null && typeof item === "object") {
      const proto = Object.getPrototypeOf(item);
      if (proto !== Object.prototype && proto !== null) continue; // bytes, files, dates: not text
      const entries = Object.entries(item);
      for (const [key] of entries) if (unstorable(key)) return at;
      for (let i = entries.length - 1; i >= 0; i--) stack.push([entries[i]![1], `${at}/${entries[i]![0]}`]);
    }
  }
  return null;
}

export const NUL_MESSAGE = "Text may not contain a NUL character (\\u0000, %00) nor a lone UTF-16 surrogate (not Unicode text).";
