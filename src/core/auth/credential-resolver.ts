/**
 * Turns a request's credential into a Principal, on the hot path of every authed request.
 *
 * API keys are cached briefly per instance (hash → key). The cache is never the only copy of
 * anything: a revoke deletes the lookup row in the database first, then tells every instance over the
 * live store's pub/sub to drop the entry, and entries expire after CACHE_TTL_MS regardless, so a
 * missed message cannot keep a revoked key alive for longer than that.
 */
import type { DbOrTx } from "../db/db.ts";
import type { LiveStore } from "../live/live-store.ts";
import { findAccount } from "../accounts/accounts.store.ts";
import { AppError } from "../errors/app-error.ts";
import { findApiKeyByHash, isApiKeyActive } from "./auth.store.ts";
import type { Principal } from "./principal.ts";
import { hashApiKeySecret, looksLikeApiKeySecret } from "./secrets-format.ts";
import type { SessionTokens } from "./session-tokens.ts";

const CACHE_TTL_MS = 30_000;
const CACHE_MAX = 20_000;
const INVALIDATE_CHANNEL = "parley:auth:invalidate";

interface CachedKey {
  accountId: string;
  keyId: string;
  scopes: string[];
  until: number;
  /** The last answer built from this entry, reused while its account gate is the same object. */
  resolved?: ResolvedPrincipal;
  gate?: AccountGate;
}

/** The credential behind a realtime ticket: its account, the API key (if one), the session's expiry (if one). */
export interface StreamCredential {
  accountId: string;
  keyId?: string;
  /** Epoch ms. */
  expiresAt?: number;
}

/** What the rate limiter and others need to know of an account on every request. */
export interface AccountGate {
  status: string;
  /** Per-account override of the request limit; null = platform default. */
  rateLimitRequests: number | null;
  until: number;
}

/** A resolved principal with its account's rate-limit override, so the hot path reads the account once. */
export interface ResolvedPrincipal {
  principal: Principal;
  rateLimitRequests: number | null;
}

export interface CredentialResolver {
  /** The principal of an API key secret; throws 401 for an unknown or revoked key or an inactive account. */
  fromApiKey(secret: string): Promise<ResolvedPrincipal>;
  /**
   * The principal of an API key when this instance holds it and its active account fresh in cache,
   * without waiting for anything; undefined when only fromApiKey can tell (it may still succeed).
   */
  cachedApiKey(secret: string): ResolvedPrincipal | undefined;
  /** The principal of a session token; throws 401 for a bad or expired one or an inactive account. */
  fromBearer(token: string): Promise<ResolvedPrincipal>;
  /** The account's status and rate-limit override (cached like keys). */
  accountGate(accountId: string): Promise<AccountGate | null>;
  /**
   * Why a credential seen earlier (the one that minted a realtime ticket) no longer stands, or null
   * when it does: past its expiry (a session token's), its account not active, or (an API key) the key
   * revoked. Reads the database, not the caches.
   */
  credentialEnded(credential: StreamCredential): Promise<string | null>;
  /**
   * Calls `listener` whenever a key or an account is invalidated, on this instance or another (a key
   * revoked, an account changed); returns the unsubscribe. A message may arrive twice.
   */
  onInvalidate(listener: (kind: "key" | "account", id: string) => void): () => void;
  /** Drops a revoked key everywhere (this instance at once, others through pub/sub). */
  invalidateKey(keyId: string): Promise<void>;
  /** Drops an account's cached state everywhere (after a status or limit change). */
  invalidateAccount(accountId: string): Promise<void>;
  close(): Promise<void>;
}

function bounded<K, V>(map: Map<K, V>, key: K, value: V): void {
  if (map.size >= CACHE_MAX) {
    const oldest = map.keys().next();
    if (!oldest.done) map.delete(oldest.value);
  }
  map.set(key, value);
}

/** Creates the resolver and subscribes it to invalidations. */
export async function createCredentialResolver(deps: {
  db: DbOrTx;
  live: LiveStore;
  tokens: SessionTokens;
}): Promise<CredentialResolver> {
  // Keyed by the secret itself, so a cached request costs no hashing. The secrets are in this
  // process's memory anyway (they arrive in every request); they are never written anywhere.
  const keys = new Map<string, CachedKey>();
  const accounts = new Map<string, AccountGate>();
  const unauthorized = (message: string) => new AppError("unauthorized", message);
  const listeners = new Set<(kind: "key" | "account", id: string) => void>();

  /**
   * Bumped by every invalidation: a database read begun before one may hold what it revoked, so its
   * answer serves the request it was made for but is not kept (else a key revoked, or an account
   * suspended, while a cache miss was being read stayed good here for CACHE_TTL_MS).
   */
  let generation = 0;
  const drop = (message: string) => {
    const [kind, id] = message.split(" ");
    if (!id || (kind !== "key" && kind !== "account")) return;
    generation++;
    if (kind === "key") {
      for (const [secret, entry] of keys) if (entry.keyId === id) keys.delete(secret);
    } else {
      accounts.delete(id);
    }
    for (const listener of listeners) listener(kind, id);
  };
  const unsubscribe = await deps.live.subscribe(INVALIDATE_CHANNEL, drop);

  const accountGate = async (accountId: string): Promise<AccountGate | null> => {
    const now = Date.now();
    const hit = accounts.get(accountId);
    if (hit && hit.until > now) return hit;
    const before = generation;
    const row = await findAccount(deps.db, accountId);
    if (!row) return null;
    const gate = { status: row.status, rateLimitRequests: row.rate_limit_requests, until: now + CACHE_TTL_MS };
    if (generation === before) bounded(accounts, accountId, gate);
    return gate;
  };

  const requireActive = async (accountId: string): Promise<AccountGate> => {
    const now = Date.now();
    const hit = accounts.get(accountId);
    const gate = hit && hit.until > now ? hit : await accountGate(accountId);
    if (!gate) throw unauthorized("Invalid credential.");
    if (gate.status !== "active") throw unauthorized(`This account is ${gate.status}.`);
    return gate;
  };

  /** The (shared, never mutated) answer for a cached key whose account is active. */
  const answer = (entry: CachedKey, gate: AccountGate): ResolvedPrincipal => {
    if (entry.resolved && entry.gate === gate) return entry.resolved;
    entry.gate = gate;
    // Frozen: every request of this key gets this very object, so a change would leak between them.
    const principal = Object.freeze({ accountId: entry.accountId, scopes: Object.freeze([...entry.scopes]) as string[], via: "key" as const, keyId: entry.keyId });
    return (entry.resolved = Object.freeze({ principal, rateLimitRequests: gate.rateLimitRequests }));
  };

  return {
    cachedApiKey(secret) {
      const entry = keys.get(secret);
      if (!entry) return undefined;
      const now = Date.now();
      if (entry.until <= now) return undefined;
      const gate = accounts.get(entry.accountId);
      if (!gate || gate.until <= now || gate.status !== "active") return undefined;
      return answer(entry, gate);
    },
    async fromApiKey(secret) {
      const now = Date.now();
      let entry = keys.get(secret);
      if (!entry || entry.until <= now) {
        if (!looksLikeApiKeySecret(secret)) throw unauthorized("Invalid API key.");
        const before = generation;
        const row = await findApiKeyByHash(deps.db, hashApiKeySecret(secret));
        if (!row) {
          keys.delete(secret);
          throw unauthorized("Invalid API key.");
        }
        entry = { accountId: row.account_id, keyId: row.id, scopes: row.scopes, until: now + CACHE_TTL_MS };
        if (generation === before) bounded(keys, secret, entry);
      }
      return answer(entry, await requireActive(entry.accountId));
    },
    async fromBearer(token) {
      const claims = await deps.tokens.verify(token);
      if (!claims) throw unauthorized("Invalid or expired session token.");
      const gate = await requireActive(claims.acc);
      return {
        principal: {
          accountId: claims.acc,
          scopes: claims.scopes,
          via: "token",
          consoleUserId: claims.sub,
          ...(claims.exp === undefined ? {} : { expiresAt: claims.exp * 1000 }),
        },
        rateLimitRequests: gate.rateLimitRequests,
      };
    },
    accountGate,
    async credentialEnded({ accountId, keyId, expiresAt }) {
      if (expiresAt !== undefined && Date.now() >= expiresAt) return "the console session that minted the ticket expired";
      const account = await findAccount(deps.db, accountId);
      if (account?.status !== "active") return `the account is ${account?.status ?? "gone"}`;
      if (keyId !== undefined && !(await isApiKeyActive(deps.db, accountId, keyId))) return "the API key that minted the ticket was revoked";
      return null;
    },
    onInvalidate(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    async invalidateKey(keyId) {
      drop(`key ${keyId}`);
      await deps.live.publish(INVALIDATE_CHANNEL, `key ${keyId}`);
    },
    async invalidateAccount(accountId) {
      drop(`account ${accountId}`);
      await deps.live.publish(INVALIDATE_CHANNEL, `account ${accountId}`);
    },
    async close() {
      await unsubscribe();
    },
  };
}
