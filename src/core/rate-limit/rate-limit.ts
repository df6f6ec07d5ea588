/**
 * The public API's request quota: a fixed window per API key (per IP for requests without one),
 * held in the live store so every instance counts against the same window.
 *
 * Quota leasing: with Redis, an instance takes a small lease of several requests from the shared
 * window in one atomic step and spends it locally, instead of one round trip per request. The shared
 * count includes every leased request, so all instances together never admit more than the limit; what
 * a lease can cost is under-use, at most (lease − 1) requests per instance per window, so leases stay
 * at 2% of the limit (1 for small limits: exact), capped at 100. A window found exhausted is remembered
 * until it resets, so a client hammering past its limit costs no round trips either.
 */
import { accountKey, type LiveStore } from "../live/live-store.ts";

export type QuotaBucket = { kind: "key"; accountId: string; keyId: string } | { kind: "ip"; ip: string };

export interface Quota {
  allowed: boolean;
  limit: number;
  remaining: number;
  /** Seconds until the window resets (at least 1). */
  resetSec: number;
}

/** The live-store key of a bucket; a key's counter lives in its account's hash slot. */
export function quotaKey(bucket: QuotaBucket): string {
  return bucket.kind === "key" ? accountKey(bucket.accountId, "rl", bucket.keyId) : `{ip:${bucket.ip}}:rl`;
}

/** How many requests one lease takes from the shared window. */
export function leaseSize(limit: number, store: LiveStore["kind"]): number {
  if (store === "memory") return 1; // One process: the store is local, a lease would save nothing.
  return Math.max(1, Math.min(100, Math.floor(limit / 50)));
}

interface Lease {
  /** Requests left in this lease (0 with `exhausted`: the whole window is spent). */
  tokens: number;
  exhausted: boolean;
  limit: number;
  /** The shared count when the lease was taken. */
  sharedCount: number;
  resetAt: number;
}

const MAX_LEASES = 50_000;

export interface RequestQuota {
  /**
   * Counts one request of `bucket`. `accountLimit` (the account's override) replaces the default.
   * @example await quota.consume({ kind: "ip", ip: "203.0.113.7" })
   */
  consume(bucket: QuotaBucket, accountLimit?: number | null): Promise<Quota>;
}

export function createRequestQuota(live: LiveStore, defaults: { requests: number; windowSec: number }): RequestQuota {
  const leases = new Map<string, Lease>();
  const windowMs = defaults.windowSec * 1000;
  const quota = (lease: Lease, allowed: boolean, now: number): Quota => ({
    allowed,
    limit: lease.limit,
    remaining: lease.exhausted ? 0 : Math.max(0, lease.limit - lease.sharedCount) + lease.tokens,
    resetSec: Math.max(1, Math.ceil((lease.resetAt - now) / 1000)),
  });
  const prune = (now: number) => {
    for (const [key, lease] of leases) if (lease.resetAt <= now) leases.delete(key);
    if (leases.size >= MAX_LEASES) leases.clear(); // Only costs round trips, never correctness.
  };

  return {
    async consume(bucket, accountLimit) {
      const limit = accountLimit ?? defaults.requests;
      const key = quotaKey(bucket);
      const now = Date.now();
      const held = leases.get(key);
      if (held && held.resetAt > now && held.limit === limit) {
        if (held.exhausted) return quota(held, false, now);
        if (held.tokens > 0) {
          held.tokens--;
          return quota(held, true, now);
        }
      }
      const size = leaseSize(limit, live.kind);
      const hit = await live.hitWindow(key, limit, windowMs, size);
      // Of the `size` requests just counted, those below the limit are ours to spend.
      const granted = Math.max(0, Math.min(size, limit - (hit.count - size)));
      const lease: Lease = {
        tokens: Math.max(0, granted - 1),
        exhausted: granted === 0,
        limit,
        sharedCount: hit.count,
        resetAt: now + hit.resetMs,
      };
      if (size > 1 || lease.exhausted) {
        if (leases.size >= MAX_LEASES) prune(now);
        leases.set(key, lease);
      } else {
        leases.delete(key);
      }
      return quota(lease, granted > 0, now);
    },
  };
}
