/** Generation and hashing of API key secrets. */

const BASE62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

/** Random base62 text of `length` characters, without modulo bias. */
export function randomBase62(length: number): string {
  let out = "";
  while (out.length < length) {
    for (const byte of crypto.getRandomValues(new Uint8Array(length * 2))) {
      if (byte < 248) out += BASE62[byte % 62]; // 248 = 4 * 62: bytes above it would bias the draw.
      if (out.length === length) break;
    }
  }
  return out;
}

/** A new API key secret: `sk_` and 48 base62 characters (~285 bits), distinct in shape from ids. */
export function newApiKeySecret(): string {
  return `sk_${randomBase62(48)}`;
}

/** True when `value` has the shape of an API key secret (cheap check before any lookup). */
export function looksLikeApiKeySecret(value: string): boolean {
  return value.length === 51 && value.startsWith("sk_") && /^[0-9A-Za-z]+$/.test(value.slice(3));
}

/**
 * SHA-256 of a secret, hex. A key is high-entropy random, so a fast hash is the right tool here (as for
 * session tokens); passwords, which are not, use Argon2id.
 */
export function hashApiKeySecret(secret: string): string {
  return new Bun.CryptoHasher("sha256").update(secret).digest("hex");
}
