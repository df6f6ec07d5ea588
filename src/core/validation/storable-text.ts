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
  if (typeof value === "string") return unstorable(value) ? path : null;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const found = unstorableTextPath(value[i], `${path}/${i}`);
      if (found !== null) return found;
    }
    return null;
  }
  if (value === null || typeof value !== "object") return null;
  const proto = Object.getPrototypeOf(value);
  if (proto !== Object.prototype && proto !== null) return null; // bytes, files, dates: not text
  for (const [key, item] of Object.entries(value)) {
    if (unstorable(key)) return path;
    const found = unstorableTextPath(item, `${path}/${key}`);
    if (found !== null) return found;
  }
  return null;
}

export const NUL_MESSAGE = "Text may not contain a NUL character (\\u0000, %00) nor a lone UTF-16 surrogate (not Unicode text).";
