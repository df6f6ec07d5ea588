/**
 * SIP digest response computation (RFC 2617 / RFC 2069, MD5 and MD5-sess), from a stored HA1.
 * Pure functions: no store, no clock.
 */

function md5hex(text: string): string {
  return new Bun.CryptoHasher("md5").update(text).digest("hex");
}

/** The digest parameters that enter the response. */
export interface DigestParams {
  method: string;
  /** The digest uri as sent in the Authorization header (not the Request-URI). */
  uri: string;
  nonce: string;
  /** "auth" or absent (RFC 2069 form). */
  qop?: string;
  nc?: string;
  cnonce?: string;
  /** "MD5" (default) or "MD5-sess". */
  algorithm?: string;
}

/**
 * The expected `response` for a stored HA1 (lower-case hex).
 * @example expectedResponse(ha1, { method: "REGISTER", uri: "sip:acme.example.com", nonce, qop: "auth", nc: "00000001", cnonce })
 */
export function expectedResponse(storedHa1: string, p: DigestParams): string {
  const sess = (p.algorithm ?? "MD5").toLowerCase() === "md5-sess";
  const ha1 = sess ? md5hex(`${storedHa1}:${p.nonce}:${p.cnonce ?? ""}`) : storedHa1;
  const ha2 = md5hex(`${p.method}:${p.uri}`);
  return p.qop ? md5hex(`${ha1}:${p.nonce}:${p.nc}:${p.cnonce}:${p.qop}:${ha2}`) : md5hex(`${ha1}:${p.nonce}:${ha2}`);
}

/**
 * Compares two hex digests in time independent of where they differ. Both are hashed first so
 * the comparison also takes the same time whatever the lengths.
 */
export function digestEquals(a: string, b: string): boolean {
  const ha = new Bun.CryptoHasher("sha256").update(a.toLowerCase()).digest();
  const hb = new Bun.CryptoHasher("sha256").update(b.toLowerCase()).digest();
  let diff = a.length ^ b.length;
  for (let i = 0; i < ha.length; i++) diff |= ha[i]! ^ hb[i]!;
  return diff === 0;
}
