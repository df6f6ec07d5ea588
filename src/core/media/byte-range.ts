/**
 * The HTTP Range header (RFC 9110 section 14) reduced to what serving one stored file needs: a single
 * byte range, or "send it all", or "unsatisfiable". Pure, so recordings and voicemail can serve their
 * audio the same way.
 */

/** What to send for a Range header against a file of a known size. */
export type RangeDecision =
  /** No usable Range header: send the whole file with 200. */
  | { kind: "full" }
  /** Send bytes `start`..`end` (inclusive) with 206. */
  | { kind: "partial"; start: number; end: number }
  /** No byte of the range exists: 416 with `Content-Range: bytes *\/size`. */
  | { kind: "unsatisfiable" };

const RANGE_SPEC = /^(\d*)-(\d*)$/;

/**
 * Decides what a Range header asks of a file of `size` bytes (size ≥ 1). As RFC 9110 allows, a header
 * that is malformed, names another unit, or asks for several ranges is ignored (the whole file is
 * sent): a client asking for several ranges can always handle the whole file.
 * @example decideRange("bytes=0-99", 1000) // { kind: "partial", start: 0, end: 99 }
 * @example decideRange("bytes=-100", 1000) // { kind: "partial", start: 900, end: 999 }
 * @example decideRange("bytes=1000-", 1000) // { kind: "unsatisfiable" }
 */
export function decideRange(header: string | null | undefined, size: number): RangeDecision {
  if (!header) return { kind: "full" };
  const match = /^\s*bytes\s*=\s*(.+)$/i.exec(header);
  if (!match) return { kind: "full" };
  const specs = match[1]!.split(",").map((s) => s.trim()).filter((s) => s !== "");
  if (specs.length !== 1) return { kind: "full" };
  const spec = RANGE_SPEC.exec(specs[0]!);
  if (!spec) return { kind: "full" };
  const [, first, last] = spec;
  if (first === "" && last === "") return { kind: "full" };
  if (first === "") {
    // A suffix: the last N bytes (all of them when N ≥ size); "-0" asks for nothing.
    const length = Number(last);
    if (length === 0) return { kind: "unsatisfiable" };
    return { kind: "partial", start: Math.max(0, size - length), end: size - 1 };
  }
  const start = Number(first);
  if (last !== "" && Number(last) < start) return { kind: "full" }; // invalid: ignored, as RFC 9110 says
  if (start >= size) return { kind: "unsatisfiable" };
  return { kind: "partial", start, end: last === "" ? size - 1 : Math.min(Number(last), size - 1) };
}
