/**
 * AES-256-GCM for the secret store. Pure functions: no I/O, no key lookup.
 *
 * Envelope (then base64): version (1 byte) ‖ IV (12 random bytes) ‖ ciphertext ‖ GCM tag (16).
 * The version byte names the master key, so a later rotation can re-encrypt row by row while old
 * rows stay readable. The AAD is `${accountId}:${secretId}`, which makes a row copied to another
 * account or id fail authentication instead of decrypting under the wrong owner.
 */
import { createCipheriv, createDecipheriv, randomBytes } from "node:crypto";

/** The key version new ciphertexts are written with. */
export const SECRET_KEY_VERSION = 1;

const IV_BYTES = 12;
const TAG_BYTES = 16;
const HEADER_BYTES = 1 + IV_BYTES;

/** The AAD that binds a stored secret to its owner and id. */
export function secretAad(accountId: string, secretId: string): string {
  return `${accountId}:${secretId}`;
}

/**
 * Encrypts `plaintext` under a 32-byte `key`, authenticating `aad` with it (use `secretAad`).
 * Every call draws a fresh IV, so encrypting the same value twice gives different ciphertexts.
 */
export function encryptSecret(key: Uint8Array, plaintext: string, aad: string): string {
  assertKey(key);
  const iv = randomBytes(IV_BYTES);
  const header = Buffer.concat([Buffer.of(SECRET_KEY_VERSION), iv]);
  const cipher = createCipheriv("aes-256-gcm", key, iv, { authTagLength: TAG_BYTES });
  // The header is authenticated too, so flipping the version byte cannot go unnoticed.
  cipher.setAAD(Buffer.concat([header, Buffer.from(aad, "utf8")]));
  const body = Buffer.concat([cipher.update(plaintext, "utf8"), cipher.final()]);
  return Buffer.concat([header, body, cipher.getAuthTag()]).toString("base64");
}

/**
 * Decrypts what `encryptSecret` produced with the same key and AAD. Throws when the key is wrong,
 * the AAD differs, or any byte was changed; the message says so without any key or secret material.
 */
export function decryptSecret(key: Uint8Array, ciphertext: string, aad: string): string {
  assertKey(key);
  const bytes = Buffer.from(ciphertext, "base64");
  if (bytes.length < HEADER_BYTES + TAG_BYTES) throw new Error("Secret ciphertext is malformed (too short).");
  const version = bytes[0];
  if (version !== SECRET_KEY_VERSION) throw new Error(`Secret ciphertext uses unknown key version ${version}.`);
  const iv = bytes.subarray(1, HEADER_BYTES);
  const tag = bytes.subarray(bytes.length - TAG_BYTES);
  const decipher = createDecipheriv("aes-256-gcm", key, iv, { authTagLength: TAG_BYTES });
  decipher.setAAD(Buffer.concat([bytes.subarray(0, HEADER_BYTES), Buffer.from(aad, "utf8")]));
  decipher.setAuthTag(tag);
  try {
    const body = bytes.subarray(HEADER_BYTES, bytes.length - TAG_BYTES);
    return Buffer.concat([decipher.update(body), decipher.final()]).toString("utf8");
  } catch {
    // node's own message is harmless, but replacing it keeps the contract independent of the runtime.
    throw new Error(
      "Secret could not be decrypted: wrong master key, or the ciphertext was altered or moved to another account or id.",
    );
  }
}

function assertKey(key: Uint8Array): void {
  if (key.byteLength !== 32) throw new Error("Secret key must be exactly 32 bytes.");
}
