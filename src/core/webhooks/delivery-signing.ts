/**
 * The two signatures every signed delivery carries, over the exact bytes POSTed:
 *
 * - `x-service-signature: sha256=<hex>`: HMAC-SHA256 of the raw body, keyed by the subscription's
 *   secret as text (UTF-8), the GitHub style SPEC.md section 6 fixes. `@octokit/webhooks-methods`
 *   `verify(secret, body, header)` checks it.
 * - Standard Webhooks (`webhook-id`, `webhook-timestamp`, `webhook-signature: v1,<base64>`): HMAC-SHA256
 *   of `<id>.<timestamp>.<body>`. The key is derived from the secret the way the `standardwebhooks`
 *   libraries do: a `whsec_` secret is base64 after the prefix and the key is those bytes (our
 *   generated secrets are such), so receivers pass the secret unchanged to `new Webhook(secret)`.
 *   Any other secret (a client-chosen one) is used as its UTF-8 bytes; receivers pass
 *   `new Webhook(new TextEncoder().encode(secret), { format: "raw" })`.
 */

const WHSEC = "whsec_";
const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/;

/**
 * The Standard Webhooks signing key of a subscription secret.
 * @example standardWebhookKey("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw") // the 24 decoded bytes
 */
export function standardWebhookKey(secret: string): Uint8Array {
  if (secret.startsWith(WHSEC)) {
    const encoded = secret.slice(WHSEC.length);
    const unpadded = encoded.replace(/=+$/, "");
    // Exactly what a strict base64 decoder (the standardwebhooks libraries use one) accepts:
    // standard alphabet, padding only at the end and only to a multiple of 4.
    const wellFormed =
      BASE64.test(encoded) && unpadded.length % 4 !== 1 && (encoded.length === unpadded.length || encoded.length % 4 === 0);
    if (wellFormed) {
      const bytes = Buffer.from(unpadded, "base64");
      // Re-encoding must give the same text, else stray low bits were dropped and a strict
      // decoder would disagree with us about the key.
      if (bytes.length > 0 && bytes.toString("base64").replace(/=+$/, "") === unpadded) return new Uint8Array(bytes);
    }
  }
  return new Uint8Array(Buffer.from(secret, "utf8"));
}

/** The two signatures of one subscription's deliveries, keyed once per secret. */
export interface DeliverySigner {
  /** `sha256=<hex HMAC-SHA256(body)>` keyed by the secret's UTF-8 bytes (header x-service-signature). */
  service(body: string): string;
  /** `v1,<base64 HMAC-SHA256("id.timestamp.body")>` (header webhook-signature). */
  standard(id: string, timestampSec: number, body: string): string;
}

/**
 * The signer of a subscription secret. Each key's HMAC state is set up once and copied per signature
 * (Bun's native HMAC: the same bytes as node:crypto's createHmac, at a fraction of the cost per call).
 * @example deliverySigner("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw").service('{"event":"test"}') // "sha256=…"
 */
export function deliverySigner(secret: string): DeliverySigner {
  const service = new Bun.CryptoHasher("sha256", secret);
  const standard = new Bun.CryptoHasher("sha256", standardWebhookKey(secret));
  return {
    service: (body) => `sha256=${service.copy().update(body).digest("hex")}`,
    standard: (id, timestampSec, body) => `v1,${standard.copy().update(`${id}.${timestampSec}.`).update(body).digest("base64")}`,
  };
}
