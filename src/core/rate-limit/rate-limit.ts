/**
 * The public API's request quota: a fixed window per API key (per IP for requests without one),
 * held in the live store so every instance counts against the same window.
 *
 * Quota leasing: with Redis, an instance takes a small lease of several requests from the shared
 * window in one atomic step and spends it locally, instead of one round trip per request. The shared
 * count includes every leased request, so all instances together never admit more than the limit; what
 * a lease can cost is under-use, at most two leases per instance per window (the one being spent and
 * the next, fetched ahead when half is spent so requests never wait for it), so leases stay at 1% of
 * the limit (1 below 200, the default of 100 included: exact, no leasing), capped at 1,000. Each fetch
 * is a Redis round trip that costs this process tens of microseconds of CPU, so leases are sized to make
 * it rare at the request rates that high limits allow. One fetch per key is in flight at a
 * time: concurrent requests that find the lease empty wait for that fetch instead of each taking a
 * lease of its own. A window found exhausted is remembered until it resets, so a client hammering past
 * its limit costs no round trips either.
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
  return Math.max(1, Math.min(1000, Math.floor(limit / 100)));
}

interface Lease {
  /** Requests left in this lease (0 with `exhausted`: the whole window is spent). */
  tokens: number;
  exhausted: boolean;
  limit: number;
  /** The shared count when the lease was last topped up. */
  sharedCount: number;
  resetAt: number;
  /** The top-up in flight, if any (one per key at a time). */
  loading: Promise<void> | null;
}

const MAX_LEASES = 50_000;

export interface RequestQuota {
  /**
   * Counts one request of `bucket`. `accountLimit` (the account's override) replaces the default.
   * @example await quota.consume({ kind: "ip", ip: "203.0.113.7" })
   */
  consume(bucket: QuotaBucket, accountLimit?: number | null): Promise<Quota>;
  /**
   * The same, answered from the lease in hand without waiting; null when only `consume` can answer
   * (nothing was counted then).
   */
  tryConsume(bucket: QuotaBucket, accountLimit?: number | null): Quota | null;
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
  const remember = (key: string, lease: Lease, now: number) => {
    if (leases.size >= MAX_LEASES) {
      for (const [k, l] of leases) if (l.resetAt <= now && !l.loading) leases.delete(k);
      if (leases.size >= MAX_LEASES) leases.clear(); // Only costs round trips, never correctness.
    }
    leases.set(key, lease);
  };

  /** Counts `size` requests in the shared window and adds those below the limit to `lease`. */
  const topUp = async (key: string, lease: Lease, size: number): Promise<void> => {
    const now = Date.now();
    const hit = await live.hitWindow(key, lease.limit, windowMs, size);
    // Of the `size` requests just counted, those below the limit are ours to spend.
    const granted = Math.max(0, Math.min(size, lease.limit - (hit.count - size)));
    const resetAt = now + hit.resetMs;
    // Tokens left from an earlier window are not this window's to spend.
    const sameWindow = lease.resetAt > now && Math.abs(resetAt - lease.resetAt) < 1000;
    lease.tokens = (sameWindow ? lease.tokens : 0) + granted;
    lease.exhausted = lease.tokens === 0;
    lease.sharedCount = hit.count;
    lease.resetAt = resetAt;
  };
  const load = (key: string, lease: Lease, size: number): Promise<void> =>
    (lease.loading = topUp(key, lease, size).finally(() => {
      lease.loading = null;
    }));

  /** Spends from the lease in hand: a Quota, or null when a round trip (or a wait for one) is needed. */
  const spend = (key: string, limit: number, size: number, now: number): Quota | null => {
    const lease = leases.get(key);
    if (!lease || lease.limit !== limit || (!lease.loading && lease.resetAt <= now)) return null;
    if (lease.exhausted && !lease.loading) return quota(lease, false, now);
    if (lease.tokens <= 0) return null;
    lease.tokens--;
    // Half spent: fetch the next lease now, so no request waits for it.
    if (size > 1 && !lease.loading && lease.tokens <= size / 2) load(key, lease, size).catch(() => {});
    return quota(lease, true, now);
  };

  return {
    tryConsume(bucket, accountLimit) {
      const limit = accountLimit ?? defaults.requests;
      return spend(quotaKey(bucket), limit, leaseSize(limit, live.kind), Date.now());
    },
    async consume(bucket, accountLimit) {
      const limit = accountLimit ?? defaults.requests;
      const key = quotaKey(bucket);
      const size = leaseSize(limit, live.kind);
      for (;;) {
        const now = Date.now();
        const spent = spend(key, limit, size, now);
        if (spent) return spent;
        let lease = leases.get(key);
        if (lease?.loading) {
          await lease.loading.catch(() => {});
          continue;
        }
        if (lease && (lease.resetAt <= now || lease.limit !== limit)) lease = undefined;
        if (size === 1) {
          // Exact counting: one round trip per request, never a shared wait; only an exhausted
          // window is remembered.
          const single: Lease = { tokens: 0, exhausted: false, limit, sharedCount: 0, resetAt: 0, loading: null };
          await topUp(key, single, 1);
          const allowed = single.tokens > 0;
          if (!allowed) remember(key, single, now);
          single.tokens = 0;
          return quota(single, allowed, now);
        }
        const fresh: Lease = lease ?? { tokens: 0, exhausted: false, limit, sharedCount: 0, resetAt: 0, loading: null };
        if (!lease) remember(key, fresh, now);
        await load(key, fresh, size);
      }
    },
  };
}
