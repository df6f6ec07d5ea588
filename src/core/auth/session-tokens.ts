/**
 * Console session tokens: stateless HS256 JWTs (jose) carrying account, console user and scopes.
 * Any standard JWT library verifies them with the same secret.
 */
import { SignJWT, jwtVerify, errors as joseErrors } from "jose";

/** 12 hours, as SPEC.md fixes. */
export const SESSION_TOKEN_TTL_SEC = 43_200;
const ISSUER = "parley";

/** The claims Parley puts in a session token. */
export interface SessionClaims {
  /** Console user id (cu_…). */
  sub: string;
  /** Account id (acc_…). */
  acc: string;
  scopes: string[];
  /** Epoch seconds the token expires at (set by verify; issue sets it from the TTL). */
  exp?: number;
}

export interface SessionTokens {
  issue(claims: SessionClaims): Promise<string>;
  /** The claims of a valid, unexpired token; null for anything else. */
  verify(token: string): Promise<SessionClaims | null>;
}

export function createSessionTokens(secret: string): SessionTokens {
  const key = new TextEncoder().encode(secret);
  return {
    async issue(claims) {
      return new SignJWT({ acc: claims.acc, scopes: claims.scopes })
        .setProtectedHeader({ alg: "HS256", typ: "JWT" })
        .setSubject(claims.sub)
        .setIssuer(ISSUER)
        .setIssuedAt()
        .setExpirationTime(`${SESSION_TOKEN_TTL_SEC}s`)
        .sign(key);
    },
    async verify(token) {
      try {
        const { payload } = await jwtVerify(token, key, { algorithms: ["HS256"], issuer: ISSUER });
        const { sub, acc, scopes, exp } = payload;
        if (typeof sub !== "string" || typeof acc !== "string" || !Array.isArray(scopes)) return null;
        if (!scopes.every((s): s is string => typeof s === "string")) return null;
        return typeof exp === "number" ? { sub, acc, scopes, exp } : { sub, acc, scopes };
      } catch (error) {
        // A bad, expired or forged token is an ordinary 401, not a fault; anything else is a bug.
        if (error instanceof joseErrors.JOSEError) return null;
        throw error;
      }
    },
  };
}
