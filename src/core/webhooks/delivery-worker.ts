/**
 * The webhook delivery worker. Any number of processes run one each against the same database:
 * a worker claims due rows of the delivery queue (`webhook_delivery_due`) atomically (`FOR UPDATE
 * SKIP LOCKED` plus a lease),
 * makes one attempt per claim, and records the outcome under the claim it holds, so each
 * (event, subscription) is delivered once by us. A crashed worker's claims are taken again when
 * their lease runs out; the only duplicate a receiver can then see is a POST whose 2xx we got but
 * could not record before the crash (at-least-once; receivers dedupe on `webhook-id`).
 *
 * Each attempt checks the addresses of the subscription's host, refuses non-public ones (unless
 * WEBHOOK_ALLOW_PRIVATE) and connects to the very address it checked, with TLS still verifying the
 * certificate against the URL's host name (SNI and Host header from the URL), so a DNS answer that
 * changes between check and connect (rebinding) cannot redirect a delivery. A host's answer is
 * reused for at most `dnsCacheMs` (default 5 s; one lookup per host at a time): the check runs on
 * every attempt, against that answer, and a new lookup follows once it expires. Failed lookups are
 * not cached.
 *
 * Throughput: the database work is one statement per batch (exchangeDeliveries: record every
 * outcome queued so far and claim the next batch, one round trip and one commit), run while the
 * attempts of the previous batch are in flight, so slots never wait for the database: back to back
 * when little is buffered, gathering outcomes for up to `gatherMs` under a backlog (fewer, larger
 * exchanges);
 * claimed jobs wait per subscription (dispatch is O(subscriptions)); TLS connections are kept
 * alive per (host name, checked address, port) by the worker's own HTTPS client (https-pool.ts), or
 * by one its caller owns (`httpsPool`; its CAs are then the caller's, not `caFile`'s).
 */
import { randomUUID } from "node:crypto";
import { newId } from "../ids/ids.ts";
import { readFileSync } from "node:fs";
import { rootCertificates } from "node:tls";
import { isIP } from "node:net";
import type { Platform } from "../platform.ts";
import { describeError } from "../../http/describe-error.ts";
import { blockedReason, resolveHost } from "./url-safety.ts";
import { HttpsPool } from "./https-pool.ts";
import { deliverySigner, type DeliverySigner } from "./delivery-signing.ts";
import { hasPlannedDeliveries } from "./delivery.service.ts";
import { deleteFinishedBefore, exchangeDeliveries, releaseClaims, subscriptionForDelivery, type AttemptRecord, type ClaimedDelivery } from "./delivery.store.ts";

/** A claimed delivery waiting for, or holding, a slot of this worker. */
interface Job {
  delivery: ClaimedDelivery;
  token: string;
  /** Epoch ms when the claim's lease ends. */
  leaseEnd: number;
}

/** Tuning of one worker; every field has a production default. */
export interface DeliveryWorkerOptions {
  /** Attempts in flight at once in this process (default 64). */
  concurrency?: number;
  /**
   * Attempts in flight at once per subscription in this process, so a slow endpoint cannot hold up
   * the others (default 16). A subscription with none in flight may start one beyond `concurrency`
   * (up to twice it), so endpoints that hold every slot never make another wait for its first.
   */
  perSubscription?: number;
  /** Time limit of one attempt, DNS included, in ms (default 5000, SPEC.md section 8). */
  timeoutMs?: number;
  /** Wait before the 2nd and 3rd attempt, in ms (default [500, 2000], SPEC.md section 6); attempts = length + 1. */
  retryDelaysMs?: number[];
  /** Longest wait between scans for due rows (other instances' events, leases run out), in ms (default 1000). */
  pollMs?: number;
  /** How long a claim is held before another worker may take it, in ms (default 30000; must exceed timeoutMs). */
  leaseMs?: number;
  /** PEM file of extra trusted CAs (default config.webhookCaFile). */
  caFile?: string;
  /** Deliver to private and loopback addresses (default config.webhookAllowPrivate). */
  allowPrivate?: boolean;
  /** Finished (delivered or failed) deliveries older than this are deleted (default 7 days). */
  retentionDays?: number;
  /** How often the retention sweep runs, in ms (default 1 hour; the first run is a minute after start). */
  sweepEveryMs?: number;
  /** How long a decrypted signing secret is kept in memory, in ms (default 60000). */
  secretCacheMs?: number;
  /** How long a host's DNS answer is reused before it is resolved again, in ms (default 5000; 0 = every attempt). */
  dnsCacheMs?: number;
  /** Longest an exchange waits for more outcomes while a backlog is buffered, in ms (default 10; 0 = never waits). */
  gatherMs?: number;
  /** A host's addresses, in the order to try them (default: the system resolver's; tests give their own). */
  resolveHost?: (host: string) => Promise<string[]>;
  /**
   * The HTTPS client to post with, owned by the caller (not closed by stop()), so connections outlive
   * one worker (a benchmark restarting the worker each round measures it warm, as a running platform
   * is). Default: a pool of the worker's own with `caFile`'s CAs, closed by stop().
   */
  httpsPool?: HttpsPool;
}

/** What a worker has done since it started. */
export interface DeliveryWorkerStats {
  /** Database exchanges (each records outcomes and/or claims, in one statement). */
  exchanges: number;
  /** Outcomes recorded (attempts made and written). */
  recorded: number;
  /** Deliveries claimed. */
  claimed: number;
}

export interface DeliveryWorker {
  /** Scan for due deliveries now (the bus calls it after each commit). */
  wake(): void;
  /** Stops claiming, lets attempts in flight finish and records them. */
  stop(): Promise<void>;
  /** Counters since start. */
  stats(): DeliveryWorkerStats;
}

/** Sizes the default lease: a claim outlives HOLD + 2 attempt timeouts. */
const HOLD = 4;
/**
 * Claimed jobs a worker holds per slot (in flight and waiting), and at most per subscription per its
 * share, so claims come in large batches while a batch is in flight. A job that waited so long that
 * its attempt could outlive its lease is not attempted (another claim takes it after the lease).
 */
const BUFFER = 16;
/**
 * Jobs held for subscriptions that are full (they are not claimed for) do not take room from the
 * others, up to this many rounds of every slot in all.
 */
const HELD_MAX = 4 * BUFFER;
/** A subscription this worker has not timed yet holds at most this many rounds of its share. */
const NEW_SUBSCRIPTION_ROUNDS = 4;
/** How long a subscription's pace is used after its last attempt here, ms. */
const PACE_KEPT_MS = 60_000;
/** Most outcomes one exchange records; it takes every outcome queued while the previous exchange ran. */
const RECORD_BATCH = 1000;
/**
 * While more than GATHER_DEPTH rounds of claimed jobs wait here, an exchange waits for company: until
 * GATHER_RECORDS outcomes are queued, the buffer runs low, or `gatherMs` pass. Under a backlog that
 * makes exchanges fewer and larger (bench:webhooks: a fifth as many, a fifth less database time per
 * delivery); with little work waiting every exchange goes at once.
 */
const GATHER_DEPTH = 2;
const GATHER_RECORDS = 256;
/** Outcomes waiting to be written beyond which claiming pauses (a slow database slows claiming down). */
const RECORD_BACKLOG = 2 * RECORD_BATCH;
/**
 * The most deliveries a worker of `concurrency` slots can have POSTed with a 2xx but not yet recorded,
 * which a kill -9 makes us send again (at-least-once): outcomes queued (claiming pauses at
 * RECORD_BACKLOG, but jobs already claimed, up to HELD_MAX per slot, still finish), plus one exchange's
 * batch being written.
 */
export function maxUnrecordedDeliveries(concurrency: number): number {
  return RECORD_BACKLOG + HELD_MAX * concurrency + RECORD_BATCH;
}
/**
 * How old, at most, the subscription an attempt goes by may be (ms), when no change of its account was
 * told meanwhile (a told change makes it stale at once): a claimed job can wait here for most of its
 * lease, and a subscription deleted or disabled meanwhile must get nothing more, even when changes
 * cannot be heard (the configuration cache's listen lost). One read per subscription per interval,
 * whatever the number of its deliveries.
 */
const SUBSCRIPTION_FRESH_MS = 1000;
/** Most host names whose DNS answer is cached. */
const MAX_DNS_ENTRIES = 4096;
/** Most rows one claim takes. */
const MAX_CLAIM = 1000;
/** Most subscription URLs kept taken apart. */
const MAX_ENDPOINTS = 1024;
const USER_AGENT = "Parley-Webhooks/1";

type Outcome =
  | { kind: "delivered"; status: number }
  | { kind: "retry"; status: number | null; error: string }
  /** `unsent`: given up before any request left (an address that is not public): no attempt is counted. */
  | { kind: "fail"; status: number | null; error: string; unsent?: boolean };

/** A short, secret-free reason for a failed POST (codes only, never the URL). */
function networkReason(error: unknown, timeoutMs: number): string {
  const e = error as { name?: string; code?: string };
  if (e?.name === "TimeoutError" || e?.name === "AbortError") return `timeout after ${timeoutMs} ms`;
  const code = typeof e?.code === "string" ? e.code : "";
  if (code === "ECONNREFUSED") return "connection refused";
  if (code === "ECONNRESET") return "connection reset";
  if (code === "EBADREPLY") return "invalid HTTP reply";
  if (code.startsWith("ERR_TLS") || code === "EPROTO" || code === "TLS_HANDSHAKE_FAILED" || /CERT|SELF_SIGNED|UNABLE_TO/.test(code)) return `TLS error (${code})`;
  return code ? `network error (${code})` : "network error";
}

/** A subscription URL taken apart for delivery. */
export interface Endpoint {
  /** The host name or address, without IPv6 brackets (SNI, DNS, the SSRF check). */
  host: string;
  /** The Host header: the URL's host and port. */
  hostHeader: string;
  /** The URL's port (443 when it names none). */
  port: number;
  /** Path and query, as in the URL. */
  path: string;
  /** SNI and the certificate's name: the host, or null when the URL names an address. */
  serverName: string | null;
}

/**
 * Takes a subscription URL apart (validated https, no user info or fragment).
 * @example webhookEndpoint("https://hooks.example.com:8443/in?x=1") // { host: "hooks.example.com", hostHeader: "hooks.example.com:8443", port: 8443, path: "/in?x=1", serverName: "hooks.example.com" }
 */
export function webhookEndpoint(urlText: string): Endpoint {
  const url = new URL(urlText);
  const host = url.hostname.replace(/^\[|\]$/g, "");
  return {
    host,
    hostHeader: url.host,
    port: url.port ? Number(url.port) : 443,
    path: `${url.pathname}${url.search}`,
    serverName: isIP(host) ? null : host,
  };
}

/**
 * Starts the worker of this process.
 * @example const worker = startDeliveryWorker(platform); … await worker.stop();
 */
export function startDeliveryWorker(platform: Platform, options: DeliveryWorkerOptions = {}): DeliveryWorker {
  const { db, log, secrets } = platform;
  const concurrency = options.concurrency ?? 64;
  const perSubscription = Math.min(options.perSubscription ?? 16, concurrency);
  const timeoutMs = options.timeoutMs ?? 5000;
  const retryDelays = options.retryDelaysMs ?? [500, 2000];
  const maxAttempts = retryDelays.length + 1;
  const pollMs = options.pollMs ?? 1000;
  const leaseMs = Math.max(options.leaseMs ?? 30_000, timeoutMs * (HOLD + 2));
  const allowPrivate = options.allowPrivate ?? platform.config.webhookAllowPrivate;
  const retentionDays = options.retentionDays ?? 7;
  const secretCacheMs = options.secretCacheMs ?? 60_000;
  const dnsCacheMs = options.dnsCacheMs ?? 5000;
  const gatherMs = options.gatherMs ?? 10;
  const resolve = options.resolveHost ?? resolveHost;
  const stats: DeliveryWorkerStats = { exchanges: 0, recorded: 0, claimed: 0 };
  const caFile = options.caFile ?? platform.config.webhookCaFile;
  // Bun replaces its built-in CAs when `ca` is given, so the extra file is added to the bundled set.
  const ca = caFile ? [...rootCertificates, readFileSync(caFile, "utf8")] : undefined;

  let stopped = false;
  let inflight = 0;
  /** Per subscription: attempts in flight plus claimed jobs waiting here (not outcomes being written). */
  const queued = new Map<string, number>();
  const running = new Map<string, number>();
  /**
   * Per subscription: its attempts' recent duration, ms (a moving average), which sizes what it may
   * hold, and when it was last timed.
   */
  const pace = new Map<string, { ms: number; at: number }>();
  /** Claimed, not yet started, per subscription in claim order (a slot frees without a database round trip). */
  const waiting = new Map<string, Job[]>();
  let waitingCount = 0;
  const attempts = new Set<Promise<void>>();
  let kickQueued = false;
  const timers = new Set<ReturnType<typeof setTimeout>>();

  // ── TLS connections kept alive per (host name, address, port): SNI and the certificate check use
  // the URL's name while the connection goes to the address we checked.
  const ownPool = !options.httpsPool;
  const pool = options.httpsPool ?? new HttpsPool(ca ? { ca } : {});
  // ── DNS answers, reused for dnsCacheMs; one lookup per host at a time. The SSRF check still runs
  // on every attempt (on the cached answer), and the attempt connects to the address it checked.
  const dnsCache = new Map<string, { addresses: string[]; until: number }>();
  const dnsLookups = new Map<string, Promise<string[]>>();
  /** The host's addresses (empty when it does not resolve), or null when the lookup took longer than `ms`. */
  function addressesOf(host: string, ms: number): string[] | Promise<string[] | null> {
    const hit = dnsCache.get(host);
    if (hit && hit.until > Date.now()) return hit.addresses;
    let lookup = dnsLookups.get(host);
    if (!lookup) {
      lookup = resolve(host).then((addresses) => {
        dnsLookups.delete(host);
        if (addresses.length && dnsCacheMs > 0) {
          dnsCache.delete(host);
          dnsCache.set(host, { addresses, until: Date.now() + dnsCacheMs });
          if (dnsCache.size > MAX_DNS_ENTRIES) dnsCache.delete(dnsCache.keys().next().value as string);
        }
        return addresses;
      });
      dnsLookups.set(host, lookup);
    }
    let timer: ReturnType<typeof setTimeout> | undefined;
    const timeout = new Promise<null>((resolve) => (timer = setTimeout(() => resolve(null), ms)));
    return Promise.race([lookup, timeout]).finally(() => clearTimeout(timer));
  }

  // ── Signing secrets (and their Standard Webhooks keys), decrypted briefly.
  const secretCache = new Map<string, { value: DeliverySigner | null; until: number }>();
  /** The signer of a subscription's secret: at once when cached (no promise on the hot path), else after the read. */
  function secretOf(accountId: string, ref: string): DeliverySigner | null | Promise<DeliverySigner | null> {
    const key = `${accountId}:${ref}`;
    const hit = secretCache.get(key);
    if (hit && hit.until > Date.now()) return hit.value;
    return secrets.reveal(db, accountId, ref).then((text) => {
      const value = text === null ? null : deliverySigner(text);
      secretCache.set(key, { value, until: Date.now() + secretCacheMs });
      if (secretCache.size > 10_000) {
        const now = Date.now();
        for (const [k, v] of secretCache) if (v.until <= now) secretCache.delete(k);
      }
      return value;
    });
  }

  // Subscription URLs repeat across deliveries: each is taken apart once.
  const endpoints = new Map<string, Endpoint>();
  function endpointOf(urlText: string): Endpoint {
    let endpoint = endpoints.get(urlText);
    if (endpoint) return endpoint;
    endpoint = webhookEndpoint(urlText);
    if (endpoints.size >= MAX_ENDPOINTS) endpoints.delete(endpoints.keys().next().value as string);
    endpoints.set(urlText, endpoint);
    return endpoint;
  }

  // ── Subscriptions as they are now: what the claim read, while it is at most SUBSCRIPTION_FRESH_MS
  // old and no change of the account's configuration was told since (the configuration cache hears
  // of every committed change; the DELETE's reply waits until this instance has); then read again
  // (one read per subscription at a time). The interval alone bounds it while changes cannot be heard.
  interface SeenSubscription {
    value: ClaimedDelivery["subscription"];
    at: number;
    reading?: Promise<ClaimedDelivery["subscription"]>;
    /** Changes of the account told since the entry was made: a read begun before one is not trusted. */
    changes: number;
  }
  const seenSubscriptions = new Map<string, SeenSubscription>();
  /**
   * When a change was last told, per account (`""`: any account, a re-listen), in Date.now() ms: a
   * claim that read subscriptions before it does not make them fresh.
   */
  const changedAt = new Map<string, number>();
  const unwatch = platform.configCache.onChange((accountId) => {
    const at = Date.now();
    changedAt.delete(accountId ?? "");
    changedAt.set(accountId ?? "", at);
    if (changedAt.size > 10_000) for (const [k, t] of changedAt) if (t < at - 60_000) changedAt.delete(k);
    const prefix = accountId === null ? "" : `${accountId}\u0000`;
    for (const [key, seen] of seenSubscriptions) {
      if (!key.startsWith(prefix)) continue;
      seen.at = 0;
      seen.changes++;
      seen.reading = undefined;
    }
  });
  /** Whether the account's configuration changed at or after `at` (ms). */
  const changedSince = (accountId: string, at: number) => Math.max(changedAt.get(accountId) ?? 0, changedAt.get("") ?? 0) >= at;
  function sawSubscription(job: ClaimedDelivery, at: number): void {
    const key = `${job.account_id}\u0000${job.webhook_id}`;
    const seen = seenSubscriptions.get(key);
    if (seen && seen.at >= at) return;
    // Read by a claim that began before a change was told: what it read may be gone.
    const fresh = changedSince(job.account_id, at) ? 0 : at;
    if (seen) {
      if (fresh > 0) Object.assign(seen, { value: job.subscription, at: fresh });
    } else seenSubscriptions.set(key, { value: job.subscription, at: fresh, changes: 0 });
    if (seenSubscriptions.size > 10_000) {
      const old = Date.now() - 60_000;
      for (const [k, v] of seenSubscriptions) if (v.at < old && !v.reading) seenSubscriptions.delete(k);
    }
  }
  /** The subscription as it is now: at once while what was seen is fresh (no promise on the hot path), else after a read. */
  function currentSubscription(job: ClaimedDelivery): ClaimedDelivery["subscription"] | Promise<ClaimedDelivery["subscription"]> {
    const key = `${job.account_id}\u0000${job.webhook_id}`;
    let seen = seenSubscriptions.get(key);
    if (!seen) seenSubscriptions.set(key, (seen = { value: job.subscription, at: 0, changes: 0 }));
    if (Date.now() - seen.at < SUBSCRIPTION_FRESH_MS) return seen.value;
    const entry = seen;
    if (entry.reading) return entry.reading;
    const changes = entry.changes;
    const reading = subscriptionForDelivery(db, job.account_id, job.webhook_id).then(
      (value) => {
        if (entry.reading === reading) entry.reading = undefined;
        // A change told while the read ran (the read may have begun before its commit): read again.
        if (entry.changes !== changes) return currentSubscription(job);
        Object.assign(entry, { value, at: Date.now() });
        return value;
      },
      (error: unknown) => {
        if (entry.reading === reading) entry.reading = undefined;
        throw error;
      },
    );
    entry.reading = reading;
    return reading;
  }

  /** What to record of an attempt, or why none was made. */
  type AttemptResult = Outcome | { kind: "dead"; error: string } | { kind: "expired" };

  /** The outcome of a reply's status. */
  function statusOutcome(status: number): Outcome {
    if (status >= 200 && status < 300) return { kind: "delivered", status };
    if (status === 429 || status >= 500) return { kind: "retry", status, error: `HTTP ${status}` };
    if (status >= 300 && status < 400) return { kind: "fail", status, error: `HTTP ${status} (redirects are not followed)` };
    return { kind: "fail", status, error: `HTTP ${status}` };
  }

  /** An attempt's request headers (Host and Content-Length aside), signed when the subscription has a secret. */
  function headersOf(job: ClaimedDelivery, body: string, signer: DeliverySigner | null): string {
    const timestamp = Math.floor(Date.now() / 1000);
    const headers = `content-type: application/json\r\nuser-agent: ${USER_AGENT}\r\nx-service-event: ${job.event!.name}\r\nx-service-event-id: ${publicIdOf(job.event!)}\r\nwebhook-id: ${job.id}\r\nwebhook-timestamp: ${timestamp}\r\n`;
    if (signer === null) return headers;
    return `${headers}x-service-signature: ${signer.service(body)}\r\nwebhook-signature: ${signer.standard(job.id, timestamp, body)}\r\n`;
  }

  /**
   * One HTTP attempt of a claimed delivery. The usual case (the host's answer cached, one address)
   * is the POST's own promise, with no async frame around it: the worker's JavaScript thread is what
   * limits its rate (docs/decisions.md).
   */
  function post(job: ClaimedDelivery, endpoint: Endpoint, body: string, signer: DeliverySigner | null): Outcome | Promise<Outcome> {
    const deadline = Date.now() + timeoutMs;
    const answer = addressesOf(endpoint.host, timeoutMs);
    return Array.isArray(answer) ? postTo(job, endpoint, body, signer, deadline, answer) : answer.then((resolved) => postTo(job, endpoint, body, signer, deadline, resolved));
  }

  function postTo(job: ClaimedDelivery, endpoint: Endpoint, body: string, signer: DeliverySigner | null, deadline: number, resolved: string[] | null): Outcome | Promise<Outcome> {
    if (resolved === null) return { kind: "retry", status: null, error: `DNS timeout after ${timeoutMs} ms` };
    if (!resolved.length) return { kind: "retry", status: null, error: "host does not resolve" };
    const allowed = allowPrivate ? resolved : resolved.filter((a) => blockedReason(a) === null);
    if (!allowed.length) {
      return { kind: "fail", status: null, error: `refused: the host resolves to an address that is not public: ${blockedReason(resolved[0]!)}`, unsent: true };
    }
    if (allowed.length > 1) return postInTurn(job, endpoint, body, signer, deadline, allowed);
    const left = deadline - Date.now();
    if (left <= 0) return { kind: "retry", status: null, error: `timeout after ${timeoutMs} ms` };
    return pool
      .post({ address: allowed[0]!, port: endpoint.port, serverName: endpoint.serverName, hostHeader: endpoint.hostHeader, path: endpoint.path, headers: headersOf(job, body, signer), body, timeoutMs: left })
      .then(statusOutcome, (error: unknown): Outcome => ({ kind: "retry", status: null, error: networkReason(error, timeoutMs) }));
  }

  /** An attempt at a host with several addresses: in turn, while the connection fails before the request goes out. */
  async function postInTurn(job: ClaimedDelivery, endpoint: Endpoint, body: string, signer: DeliverySigner | null, deadline: number, allowed: string[]): Promise<Outcome> {
    let lastError: unknown = null;
    // Each attempt starts at another of the host's addresses, and an address that does not answer
    // gets its share of the time left, not all of it: a dead first address (broken IPv6, a round-robin
    // node down) would otherwise take every attempt's whole time.
    const first = job.attempts % allowed.length;
    const order = first === 0 ? allowed : [...allowed.slice(first), ...allowed.slice(0, first)];
    for (const [i, address] of order.entries()) {
      const left = deadline - Date.now();
      if (left <= 0) break;
      const others = order.length - i - 1;
      const headers = headersOf(job, body, signer);
      try {
        const status = await pool.post({
          address,
          port: endpoint.port,
          serverName: endpoint.serverName,
          hostHeader: endpoint.hostHeader,
          path: endpoint.path,
          headers,
          body,
          timeoutMs: left,
          ...(others > 0 ? { connectTimeoutMs: Math.floor(left / (others + 1)) } : {}),
        });
        return statusOutcome(status);
      } catch (error) {
        lastError = error;
        // Only a connection that failed before the request went out (refused, unreachable, its
        // certificate refused) moves on to the host's next address; anything else may have reached the receiver.
        if ((error as { sent?: boolean }).sent !== false) break;
      }
    }
    return { kind: "retry", status: null, error: lastError === null ? `timeout after ${timeoutMs} ms` : networkReason(lastError, timeoutMs) };
  }

  /**
   * Decides what to record for one claimed delivery (making the attempt when it can). A promise only
   * when something is waited for (a subscription or secret read, the POST).
   */
  function attempt(job: ClaimedDelivery, leaseEnd: number): AttemptResult | Promise<AttemptResult> {
    // Claims that lapsed unrecorded count as attempts (exchangeDeliveries): after the last one, none more.
    if (job.attempts >= maxAttempts) return { kind: "dead", error: "the outcome of its last attempt was lost (the worker making it stopped or lost its claim)" };
    const subscription = currentSubscription(job);
    return subscription instanceof Promise ? subscription.then((s) => attemptFor(job, leaseEnd, s)) : attemptFor(job, leaseEnd, subscription);
  }

  function attemptFor(job: ClaimedDelivery, leaseEnd: number, subscription: ClaimedDelivery["subscription"]): AttemptResult | Promise<AttemptResult> {
    if (!subscription) return { kind: "dead", error: "the subscription was removed" };
    if (subscription.status !== "active") return { kind: "dead", error: "the subscription is disabled" };
    if (!job.event) return { kind: "dead", error: "the event is no longer stored" };
    if (!subscription.secret_ref) return send(job, leaseEnd, subscription, null);
    const unreadable = (error: unknown) => {
      log.error("webhook secret unreadable", { delivery: job.id, error: describeError(error) });
      return null;
    };
    let signer: DeliverySigner | null | Promise<DeliverySigner | null>;
    try {
      signer = secretOf(job.account_id, subscription.secret_ref);
    } catch (error) {
      signer = unreadable(error);
    }
    return signer instanceof Promise
      ? signer.catch(unreadable).then((s) => send(job, leaseEnd, subscription, s))
      : send(job, leaseEnd, subscription, signer);
  }

  function send(job: ClaimedDelivery, leaseEnd: number, subscription: NonNullable<ClaimedDelivery["subscription"]>, signer: DeliverySigner | null): AttemptResult | Promise<AttemptResult> {
    // Never send unsigned what the subscriber expects signed.
    if (subscription.secret_ref && signer === null) return { kind: "retry", status: null, error: "signing secret unavailable" };
    // The reads above may have been slow (a database under load): a POST that could outlive the claim
    // is not started (another claim would send it again meanwhile); it is left to the next claim.
    if (leaseEnd - Date.now() < timeoutMs + 1000) return { kind: "expired" };
    return post(job, endpointOf(subscription.url), bodyOf(job.account_id, job.event!), signer);
  }

  /**
   * The body of an event's deliveries: the same bytes for every subscription, so written once per event
   * of a claim (its deliveries share the event object) and signed per subscription.
   */
  const bodies = new WeakMap<NonNullable<ClaimedDelivery["event"]>, string>();
  /**
   * The event's public id (`evt_…`, as the stream and the deliveries log show it): the same in every
   * subscription's delivery of the event, so a receiver with two subscriptions (a secret being rotated)
   * can process each event once. Written once per event of a claim.
   */
  const publicIds = new WeakMap<NonNullable<ClaimedDelivery["event"]>, string>();
  function publicIdOf(event: NonNullable<ClaimedDelivery["event"]>): string {
    let id = publicIds.get(event);
    if (id === undefined) publicIds.set(event, (id = platform.events.ids.encode(event.id, event.ts)));
    return id;
  }
  function bodyOf(accountId: string, event: NonNullable<ClaimedDelivery["event"]>): string {
    let body = bodies.get(event);
    if (body === undefined) {
      body = JSON.stringify({ event: event.name, account_id: accountId, data: event.data, ts: event.ts });
      bodies.set(event, body);
    }
    return body;
  }

  // ── The database side: one loop of exchanges, each ONE statement that records every outcome
  // queued so far and claims the next batch (exchangeDeliveries). Under load the loop runs back to
  // back: outcomes are written in batches of hundreds, and the next batch is claimed while the
  // current one is in flight, so slots never wait for the database. A claim takes the room left
  // (BUFFER × concurrency jobs waiting or in flight, not counting those of full subscriptions), of
  // each subscription at most what it may still hold (holdOf), and only when at least half a round
  // of room is free or less than one round waits, so claims stay large. Claiming pauses while more than
  // RECORD_BACKLOG outcomes wait, so claimed-but-unrecorded work (what a crash would send again)
  // stays bounded and a slow database slows claiming down.
  interface Pending {
    record: AttemptRecord;
    leaseEnd: number;
  }
  let toRecord: Pending[] = [];
  /** The exchange loop: running or not (one exchange in flight at a time: two only queue up in the database). */
  let syncing: Promise<void> | null = null;
  let again = false;
  /** Due rows may be waiting that we have not claimed (a wake-up, or the last claim filled up). */
  let dueLeft = true;
  /**
   * The last claim found nothing but rows of subscriptions we skip: wait for one of them to take
   * claims again (or a wake-up: new rows may be due).
   */
  let blocked = false;
  /** Wake-ups so far (so one arriving during an exchange is not lost). */
  let wakes = 0;

  /**
   * The most jobs a subscription may hold here (waiting and in flight): what its share of slots gets
   * through at its recent pace in half the time a job may wait for its attempt (the lease less an
   * attempt's time and a second), at least one round of its share and at most BUFFER rounds;
   * NEW_SUBSCRIPTION_ROUNDS before it has been timed. A slow endpoint holds little (its jobs are not
   * left waiting here until their lease runs out), a fast one enough for large claims.
   */
  const waitBudgetMs = (leaseMs - timeoutMs - 1000) / 2;
  function holdOf(webhookId: string): number {
    const ms = pace.get(webhookId)?.ms;
    const rounds = ms === undefined ? NEW_SUBSCRIPTION_ROUNDS : Math.floor(waitBudgetMs / Math.max(ms, 1));
    return perSubscription * Math.min(BUFFER, Math.max(1, rounds));
  }

  /**
   * Subscriptions that filled up (they held what they may): not claimed for until an eighth of that,
   * and at least one round of their share, has finished, so each claim for them is worth its scan.
   */
  const refilling = new Set<string>();
  function isFull(webhookId: string): boolean {
    const n = queued.get(webhookId) ?? 0;
    const hold = holdOf(webhookId);
    if (n >= hold) refilling.add(webhookId);
    else if (n <= hold - Math.max(perSubscription, Math.floor(hold / 8))) refilling.delete(webhookId);
    return refilling.has(webhookId);
  }

  /** The cap of a subscription this worker holds nothing of and has not timed lately. */
  const newCap = perSubscription * NEW_SUBSCRIPTION_ROUNDS;

  /**
   * What a claim may take now: `room` in all (0: nothing), of each subscription its cap (`caps`,
   * else `newCap`), skipping the full ones, from the `limit` oldest due rows of the others: what the
   * subscriptions it holds may take, and one new subscription's cap, so a claim does not read far more
   * rows than it can take.
   */
  function claimPlan(): { room: number; limit: number; caps: Record<string, number>; skip: string[] } {
    const caps: Record<string, number> = {};
    const skip: string[] = [];
    if (stopped || !dueLeft || blocked || toRecord.length >= RECORD_BACKLOG) return { room: 0, limit: 0, caps, skip };
    // Only jobs of subscriptions still claimed for take room: a full one's do not (up to HELD_MAX
    // rounds in all), so endpoints slow enough to fill up never hold up the claims of the others.
    let open = 0;
    let wanted = newCap;
    for (const [id, n] of queued) {
      if (isFull(id)) skip.push(id);
      else {
        open += n;
        caps[id] = holdOf(id) - n;
        wanted += caps[id];
      }
    }
    for (const id of refilling) if (!queued.has(id)) refilling.delete(id);
    const room = Math.min(MAX_CLAIM, BUFFER * concurrency - open, HELD_MAX * concurrency - waitingCount - inflight);
    if (!(room > 0 && (room >= concurrency / 2 || waitingCount < concurrency))) return { room: 0, limit: 0, caps, skip };
    // Subscriptions timed here lately but holding nothing now may take what they may hold.
    for (const [id, seen] of pace) {
      if (queued.has(id) || seen.at < Date.now() - PACE_KEPT_MS) continue;
      caps[id] = holdOf(id);
      wanted += caps[id];
    }
    return { room, limit: Math.min(room, wanted), caps, skip };
  }

  /** Starts the exchange loop when there is work (or has it look again, when it runs). */
  function kick(): void {
    if (syncing) {
      again = true;
      return;
    }
    if (!toRecord.length && !claimPlan().room) return;
    syncing = sync().finally(() => {
      syncing = null;
      if (again) {
        again = false;
        kick();
      }
    });
  }

  /** Ends a gathering wait early (enough outcomes, the buffer running low, a stop). */
  let gathered: (() => void) | null = null;
  function gatherDone(): boolean {
    return stopped || gatherMs <= 0 || toRecord.length >= GATHER_RECORDS || waitingCount < GATHER_DEPTH * concurrency;
  }

  async function sync(): Promise<void> {
    for (let first = true; ; first = false) {
      if (!first && !gatherDone()) {
        await new Promise<void>((resolve) => {
          const timer = setTimeout(() => {
            gathered = null;
            resolve();
          }, gatherMs);
          gathered = () => {
            clearTimeout(timer);
            gathered = null;
            resolve();
          };
        });
      }
      const { room, limit, caps, skip } = claimPlan();
      if (!toRecord.length && !room) return;
      const batch = toRecord.length <= RECORD_BATCH ? toRecord : toRecord.slice(0, RECORD_BATCH);
      toRecord = toRecord.length <= RECORD_BATCH ? [] : toRecord.slice(RECORD_BATCH);
      const now = Date.now();
      const token = randomUUID();
      const leaseEnd = now + leaseMs;
      const wakesBefore = wakes;
      let result: Awaited<ReturnType<typeof exchangeDeliveries>>;
      try {
        result = await exchangeDeliveries(platform.database, {
          records: batch.map((b) => b.record),
          now,
          limit,
          leaseUntil: leaseEnd,
          token,
          skipWebhooks: skip,
          caps,
          defaultCap: newCap,
          maxAttempts,
        });
      } catch (error) {
        log.error("webhook delivery exchange failed", { error: describeError(error), recording: batch.length, claiming: room });
        // Keep the outcomes whose claim still holds for another try; the others are attempted
        // again by whoever claims them after their lease. Claims wait for the next poll.
        const later = Date.now();
        toRecord.push(...batch.filter((b) => b.leaseEnd > later + 1000));
        dueLeft = false;
        await Bun.sleep(500);
        continue;
      }
      stats.exchanges++;
      stats.recorded += result.recorded.size;
      for (const { record } of batch) {
        if (!result.recorded.has(record.id)) log.warn("webhook delivery claim lost before its attempt was recorded", { delivery: record.id });
        else if (record.status === "retrying") wakeAt(record.next_attempt_at);
      }
      if (!room) continue;
      stats.claimed += result.claimed.length;
      const got = new Map<string, number>();
      for (const delivery of result.claimed) {
        got.set(delivery.webhook_id, (got.get(delivery.webhook_id) ?? 0) + 1);
        sawSubscription(delivery, now);
        queued.set(delivery.webhook_id, (queued.get(delivery.webhook_id) ?? 0) + 1);
        let queue = waiting.get(delivery.webhook_id);
        if (!queue) waiting.set(delivery.webhook_id, (queue = []));
        queue.push({ delivery, token, leaseEnd });
        waitingCount++;
      }
      dispatch();
      // A full claim, or one that reached a subscription's cap, may have left more behind; a short
      // one emptied the due set, unless full subscriptions were skipped (their finishing attempts
      // unblock us).
      let capped = false;
      for (const [id, n] of got) if (n >= (caps[id] ?? newCap)) capped = true;
      dueLeft = result.claimed.length === limit || capped || skip.length > 0 || wakes !== wakesBefore;
      // Nothing but rows of full subscriptions (if any are due): wait until one of them may take more
      // (a finish below), or a wake-up.
      blocked = result.claimed.length === 0 && skip.length > 0 && wakes === wakesBefore && skip.every(isFull);
    }
  }

  /**
   * Gives back a claim whose attempt was not made (no request sent), so that it is taken again at once
   * and not counted as an attempt when its lease runs out; claims given back together go in one
   * statement. A claim another worker has taken meanwhile is left alone (the token no longer matches).
   */
  interface GiveBack {
    keys: Array<{ account_id: string; id: string; token: string }>;
    done: Promise<void>;
  }
  let givingBack: GiveBack | null = null;
  function giveBack(job: ClaimedDelivery, token: string): Promise<void> {
    if (!givingBack) {
      const batch: GiveBack = { keys: [], done: Promise.resolve() };
      batch.done = (async () => {
        await Bun.sleep(0);
        givingBack = null;
        try {
          await releaseClaims(db, batch.keys);
        } catch (error) {
          // Their leases run out instead, and each then counts as an attempt.
          log.warn("releasing webhook claims failed", { error: describeError(error) });
        }
      })();
      givingBack = batch;
    }
    givingBack.keys.push({ account_id: job.account_id, id: job.id, token });
    return givingBack.done;
  }

  /** The account log's line of a delivery given up (GET /v1/logs): no URL (it may carry a token), no secret. */
  function failureLine(job: ClaimedDelivery, attemptsMade: number, lastStatus: number | null, reason: string): NonNullable<AttemptRecord["log"]> {
    const event = job.event?.name ?? "an event";
    const tries = attemptsMade === 0 ? "without an attempt" : `after ${attemptsMade} attempt${attemptsMade === 1 ? "" : "s"}`;
    return {
      id: newId("log"),
      message: `Webhook ${job.webhook_id}: ${event} not delivered ${tries}: ${reason}.`,
      data: { delivery_id: job.id, webhook_id: job.webhook_id, event: job.event?.name ?? null, attempts: attemptsMade, last_status: lastStatus },
    };
  }

  function launch({ delivery: job, token, leaseEnd }: Job): void {
    inflight++;
    running.set(job.webhook_id, (running.get(job.webhook_id) ?? 0) + 1);
    const run = (async () => {
      if (leaseEnd - Date.now() < timeoutMs + 1000) {
        // Waited here so long that the attempt could outlive the claim: given back unattempted, for
        // the next claim (us, most likely).
        log.warn("webhook delivery claim ran out before its attempt", { delivery: job.id });
        await giveBack(job, token);
        return;
      }
      let outcome: Outcome | { kind: "dead"; error: string } | { kind: "expired" };
      const started = Date.now();
      try {
        outcome = await attempt(job, leaseEnd);
      } catch (error) {
        log.error("webhook attempt failed unexpectedly", { delivery: job.id, error: describeError(error) });
        outcome = { kind: "retry", status: null, error: "internal error" };
      }
      if (outcome.kind === "expired") {
        log.warn("webhook delivery claim ran out before its attempt", { delivery: job.id });
        await giveBack(job, token);
        return;
      }
      const now = Date.now();
      if (outcome.kind !== "dead" && !(outcome.kind === "fail" && outcome.unsent)) timed(job.webhook_id, now - started, now);
      // No request left for a dead job or one refused before sending: no attempt is counted.
      // Never past the last attempt (a claim that counted lost ones stops there).
      const made = Math.min(maxAttempts, outcome.kind === "dead" || (outcome.kind === "fail" && outcome.unsent) ? job.attempts : job.attempts + 1);
      const status: AttemptRecord["status"] =
        outcome.kind === "delivered" ? "delivered" : outcome.kind === "retry" && made < maxAttempts ? "retrying" : "failed";
      const record: AttemptRecord = {
        account_id: job.account_id,
        id: job.id,
        token,
        status,
        attempts: made,
        last_status: outcome.kind === "dead" ? null : outcome.status,
        last_error: outcome.kind === "delivered" ? null : outcome.error,
        next_attempt_at: status === "retrying" ? now + retryDelays[made - 1]! : now,
        updated_at: Math.floor(now / 1000),
        delivered_at: status === "delivered" ? Math.floor(now / 1000) : null,
      };
      if (status === "failed") record.log = failureLine(job, made, outcome.kind === "dead" ? null : outcome.status, outcome.kind === "delivered" ? "" : outcome.error);
      toRecord.push({ leaseEnd, record });
      if (log.enabled("debug")) log.debug("webhook attempt", { delivery: job.id, status, attempts: made });
    })().finally(() => {
      inflight--;
      decrement(running, job.webhook_id);
      decrement(queued, job.webhook_id);
      attempts.delete(run);
      if (!isFull(job.webhook_id)) blocked = false;
      dispatch();
      if (gathered && gatherDone()) gathered();
      queueKick();
    });
    attempts.add(run);
  }

  /** An attempt of the subscription took `ms` (a moving average over its recent attempts). */
  function timed(webhookId: string, ms: number, now: number): void {
    const before = pace.get(webhookId);
    if (before) {
      before.ms = before.ms * 0.8 + ms * 0.2;
      before.at = now;
    } else {
      pace.set(webhookId, { ms, at: now });
      if (pace.size > 10_000) for (const [id, seen] of pace) if (!queued.has(id) && seen.at < now - PACE_KEPT_MS) pace.delete(id);
    }
  }

  /** Starts waiting jobs while slots are free, respecting each subscription's share. */
  function dispatch(): void {
    if (stopped || !waitingCount || inflight >= 2 * concurrency) return;
    // In turn: a subscription that got a slot goes to the back, so a slot freed by one endpoint is
    // offered to the others first (a subscription with its share in flight takes none). Once every
    // slot is taken, a subscription with nothing in flight still starts one (up to twice the slots),
    // and keeps its place for the next free slot: endpoints slow enough to hold every slot cannot
    // make another wait for its first. The walk stops when nothing more can start; the moves wait
    // until it is done.
    const served: Array<[string, Job[]]> = [];
    for (const [webhookId, queue] of waiting) {
      let started = running.get(webhookId) ?? 0;
      let slotted = false;
      while (queue.length && started < perSubscription) {
        if (inflight < concurrency) slotted = true;
        else if (started > 0 || inflight >= 2 * concurrency) break;
        launch(queue.shift()!);
        waitingCount--;
        started++;
      }
      if (!queue.length) waiting.delete(webhookId);
      else if (slotted) served.push([webhookId, queue]);
      if (inflight >= 2 * concurrency) break;
    }
    for (const [webhookId, queue] of served) {
      waiting.delete(webhookId);
      waiting.set(webhookId, queue);
    }
  }

  /** A scan for due rows now (events committed, the poll, a retry falling due). */
  function wake(): void {
    if (stopped) return;
    wakes++;
    dueLeft = true;
    blocked = false;
    kick();
  }

  /** Coalesces the kicks of many finishing attempts into one. */
  function queueKick(): void {
    if (kickQueued) return;
    kickQueued = true;
    setImmediate(() => {
      kickQueued = false;
      kick();
    });
  }

  function wakeAt(at: number): void {
    if (stopped) return;
    const timer = setTimeout(() => {
      timers.delete(timer);
      wake();
    }, Math.max(0, at - Date.now()) + 5);
    timers.add(timer);
  }

  async function sweep(): Promise<void> {
    try {
      const removed = await sweepFinishedWebhooks(platform, retentionDays);
      if (removed) log.info("old webhook deliveries removed", { removed });
    } catch (error) {
      log.warn("webhook delivery sweep failed", { error: describeError(error) });
    }
  }

  // Commits that planned no delivery (most call events of accounts without webhooks) wake nothing.
  const unsubscribe = platform.events.onCommitted((events) => {
    if (events.some(hasPlannedDeliveries)) wake();
  });
  const poll = setInterval(wake, pollMs);
  const firstSweep = setTimeout(() => void sweep(), 60_000);
  const sweeper = setInterval(() => void sweep(), options.sweepEveryMs ?? 3600_000);
  firstSweep.unref();
  sweeper.unref();
  wake();

  return {
    wake,
    stats: () => ({ ...stats }),
    async stop() {
      if (stopped) return;
      stopped = true;
      gathered?.();
      unsubscribe();
      unwatch();
      clearInterval(poll);
      clearTimeout(firstSweep);
      clearInterval(sweeper);
      for (const timer of timers) clearTimeout(timer);
      await syncing;
      const unstarted = [...waiting.values()].flat();
      waiting.clear();
      waitingCount = 0;
      try {
        await releaseClaims(db, unstarted.map((j) => ({ account_id: j.delivery.account_id, id: j.delivery.id, token: j.token })));
      } catch (error) {
        // Their leases run out instead; another worker takes them then.
        log.warn("releasing webhook claims failed", { error: describeError(error) });
      }
      await Promise.allSettled([...attempts]);
      // Record what finished (the loop claims nothing once stopped).
      while (syncing || toRecord.length) {
        kick();
        await syncing;
      }
      if (ownPool) pool.close();
    },
  };
}

/** The retention sweep: deletes finished (delivered or failed) deliveries older than `retentionDays`; returns how many. */
export async function sweepFinishedWebhooks(platform: Pick<Platform, "db">, retentionDays = 7): Promise<number> {
  const before = Math.floor(Date.now() / 1000) - retentionDays * 86400;
  let removed = 0;
  for (;;) {
    const n = await deleteFinishedBefore(platform.db, before, 5000);
    removed += n;
    if (n < 5000) return removed;
  }
}

function decrement(counts: Map<string, number>, key: string): void {
  const left = (counts.get(key) ?? 1) - 1;
  if (left > 0) counts.set(key, left);
  else counts.delete(key);
}
