/**
 * The public API's request quota: a fixed window per API key (per IP for requests without one),
 * held in the live store so every instance counts against the same window.
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

/**
 * Counts one request. `accountLimit` (the account's override) replaces the platform default.
 * @example await consumeRequestQuota(live, { requests: 100, windowSec: 60 }, { bucket: { kind: "ip", ip } })
 */
export async function consumeRequestQuota(
  live: LiveStore,
  defaults: { requests: number; windowSec: number },
  request: { bucket: QuotaBucket; accountLimit?: number | null },
): Promise<Quota> {
  const limit = request.accountLimit ?? defaults.requests;
  const hit = await live.hitWindow(quotaKey(request.bucket), limit, defaults.windowSec * 1000);
  return { allowed: hit.allowed, limit, remaining: hit.remaining, resetSec: Math.max(1, Math.ceil(hit.resetMs / 1000)) };
}
