/**
 * An HS256 JWT verifier written from RFC 7519 with node:crypto alone, so tests check our tokens with
 * an implementation that shares no code with the one that signed them (jose).
 */
import { createHmac, timingSafeEqual } from "node:crypto";

export function verifyHs256(token: string, secret: string): Record<string, unknown> {
  const [header, payload, signature] = token.split(".");
  if (!header || !payload || !signature) throw new Error("not a JWS compact token");
  const head = JSON.parse(Buffer.from(header, "base64url").toString()) as { alg?: string };
  if (head.alg !== "HS256") throw new Error(`alg ${head.alg}`);
  const expected = createHmac("sha256", secret).update(`${header}.${payload}`).digest();
  const given = Buffer.from(signature, "base64url");
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) throw new Error("bad signature");
  const claims = JSON.parse(Buffer.from(payload, "base64url").toString()) as Record<string, unknown>;
  if (typeof claims.exp !== "number" || claims.exp * 1000 < Date.now()) throw new Error("expired");
  return claims;
}
