/**
 * Access to the public API, as one macro every route declares: `scope: "keys"` (or `"any"`).
 * In order: resolve the credential (x-api-key or Bearer), count the request against the rate limit
 * (per key; per IP for everything else), check the scope, and apply Idempotency-Key on writes.
 */
import { Elysia, type Context } from "elysia";
import type { Platform } from "../../core/platform.ts";
import type { Principal } from "../../core/auth/principal.ts";
import type { ResolvedPrincipal } from "../../core/auth/credential-resolver.ts";
import type { QuotaBucket } from "../../core/rate-limit/rate-limit.ts";
import { hasScope } from "../../core/auth/scopes.ts";
import { AppError, forbidden } from "../../core/errors/app-error.ts";
import { clientIp, requestMeta } from "../../http/request-context.ts";
import { describeError } from "../../http/describe-error.ts";
import { JSON_CONTENT_TYPE } from "../../http/host-base.ts";
import { decryptSecret, encryptSecret } from "../../core/secrets/secret-cipher.ts";
import {
  checkIdempotencyKey,
  claimIdempotencyKey,
  completeIdempotencyKey,
  releaseIdempotencyKey,
  requestFingerprint,
} from "../../core/idempotency/idempotency.service.ts";

const WRITE_METHODS = new Set(["POST", "PATCH", "DELETE", "PUT"]);

/** What the handler learns about the caller. */
export type Access = { principal: Principal };

interface IdempotencyState {
  accountId: string;
  key: string;
}

const pendingIdempotency = new WeakMap<Request, IdempotencyState>();
// beforeHandle of the same macro is not typed with what resolve returned; hand the principal over here.
const principals = new WeakMap<Request, Principal>();

/** The status and body a handler produced, whether returned plainly or through `status(code, body)`. */
function replyOf(value: unknown, fallbackStatus: number): { status: number; body: unknown } {
  if (value && typeof value === "object" && value.constructor?.name === "ElysiaCustomStatusResponse") {
    const custom = value as { code: number; response: unknown };
    return { status: custom.code, body: custom.response };
  }
  return { status: fallbackStatus, body: value };
}

/**
 * Settles a pending Idempotency-Key when the request ends in an error. Called by the host's error
 * mapper (a route-local error hook would never run: the host's global mapper answers first).
 * A refused request (4xx) is an answer too: its retry must get the same refusal, not run again;
 * a malformed one (400 validation_failed) and a failure on our side (5xx) forget the claim, so a
 * corrected request, or a retry, runs afresh.
 */
export async function settleIdempotencyOnError(platform: Platform, request: Request, error: AppError): Promise<void> {
  const pending = pendingIdempotency.get(request);
  if (!pending) return;
  pendingIdempotency.delete(request);
  try {
    // A request found malformed by the route's own checks (a URL that does not resolve, an unknown
    // event name) is a 400 like the schema's: nothing is stored, so the corrected request may reuse the key.
    if (error.status < 500 && error.code !== "validation_failed") {
      await completeIdempotencyKey(platform.db, pending.accountId, pending.key, {
        status: error.status,
        body: sealReply(platform, pending, JSON.stringify(error.toBody())),
        contentType: JSON_CONTENT_TYPE,
      });
    } else {
      await releaseIdempotencyKey(platform.db, pending.accountId, pending.key);
    }
  } catch (storeError) {
    // The original error is what the client must see; a lost record only means a retry runs again.
    platform.log.error("idempotency record not updated", { error: describeError(storeError) });
  }
}

/** Encrypts a reply for storage, bound to its account and key (a row moved elsewhere will not open). */
function sealReply(platform: Platform, at: IdempotencyState, body: string): string {
  return encryptSecret(platform.replySealKey, body, `${at.accountId}:${at.key}`);
}

function openReply(platform: Platform, at: IdempotencyState, sealed: string): string {
  return decryptSecret(platform.replySealKey, sealed, `${at.accountId}:${at.key}`);
}

const IDEMPOTENCY_HOOK = Symbol("parley.idempotency-hook");

function markIdempotencyHook(fn: object): void {
  Object.defineProperty(fn, IDEMPOTENCY_HOOK, { value: true });
}

/** True when `hook` (a route's hook entry) is the idempotency hook: lets a test check every write route has it. */
export function isIdempotencyHook(hook: unknown): boolean {
  const fn = hook && typeof hook === "object" && "fn" in hook ? (hook as { fn: unknown }).fn : hook;
  return typeof fn === "function" && IDEMPOTENCY_HOOK in fn;
}

/** The public host's access plugin. */
export function apiAccess(platform: Platform) {
  const { credentials, db, config } = platform;

  /** The caller's principal: an API key (`key`, trimmed, when the request has one) or a Bearer token. */
  const authenticate = async (headers: Headers, key: string | null): Promise<ResolvedPrincipal | null> => {
    if (key !== null) return credentials.fromApiKey(key);
    const authorization = headers.get("authorization");
    if (authorization !== null) {
      const match = /^Bearer\s+(\S+)\s*$/i.exec(authorization);
      if (!match?.[1]) throw new AppError("unauthorized", "Authorization must be 'Bearer <token>'.");
      return credentials.fromBearer(match[1]);
    }
    return null;
  };

  const idempotencyHooks = {
    async beforeHandle({ request, body, set }: Context) {
      const key = request.headers.get("idempotency-key");
      const principal = principals.get(request);
      if (key === null || !principal || !WRITE_METHODS.has(request.method)) return;
      checkIdempotencyKey(key);
      const url = new URL(request.url);
      const sender = principal.keyId ? `key:${principal.keyId}` : `user:${principal.consoleUserId ?? ""}`;
      const hash = requestFingerprint(platform.fingerprintSecret, sender, request.method, url.pathname + url.search, JSON.stringify(body ?? null));
      const claim = await claimIdempotencyKey(db, principal.accountId, key, hash);
      if (claim.kind === "replay") {
        const replayHeaders: Record<string, string> = {};
        for (const [k, v] of Object.entries(set.headers)) if (v !== undefined) replayHeaders[k] = String(v);
        return new Response(openReply(platform, { accountId: principal.accountId, key }, claim.body), {
          status: claim.status,
          headers: { ...replayHeaders, "content-type": claim.contentType, "idempotency-replayed": "true" },
        });
      }
      pendingIdempotency.set(request, { accountId: principal.accountId, key });
    },
    async afterHandle({ request, responseValue, set }: Context & { responseValue: unknown }) {
      const pending = pendingIdempotency.get(request);
      if (!pending) return;
      pendingIdempotency.delete(request);
      const reply = replyOf(responseValue, typeof set.status === "number" ? set.status : 200);
      if (reply.status >= 500) return void (await releaseIdempotencyKey(db, pending.accountId, pending.key));
      await completeIdempotencyKey(db, pending.accountId, pending.key, {
        status: reply.status,
        body: sealReply(platform, pending, JSON.stringify(reply.body)),
        contentType: JSON_CONTENT_TYPE,
      });
    },
  };
  markIdempotencyHook(idempotencyHooks.afterHandle);

  return new Elysia({ name: "api-access", normalize: false })
    .macro({
      /** The scope this route needs (one of them, given a list); `any` for any valid credential. */
      scope: (need: string | readonly string[]) => ({
        // The document says it: `x-required-scope` on the operation (merged into the route's detail).
        detail: { "x-required-scope": typeof need === "string" ? need : need.join(" or ") } as Record<string, unknown>,
        // transform runs before body validation: a caller without a valid credential learns nothing
        // about the body (401, not 400), and every attempt counts against the rate limit.
        async transform({ request, server, set }) {
          // The common case answers without waiting: a key cached with its active account, and a
          // rate-limit lease in hand. Anything else takes the full path (database, live store).
          const headers = request.headers;
          const secret = headers.get("x-api-key")?.trim() ?? null;
          let resolved: ResolvedPrincipal | null | undefined = secret === null ? undefined : credentials.cachedApiKey(secret);
          let failure: unknown = null;
          if (resolved === undefined) {
            try {
              resolved = await authenticate(headers, secret);
            } catch (error) {
              failure = error;
            }
          }
          const principal = resolved?.principal ?? null;
          // Unauthenticated attempts count against the caller's IP, so guessing keys is rate-limited too.
          const bucket: QuotaBucket = principal?.keyId
            ? { kind: "key", accountId: principal.accountId, keyId: principal.keyId }
            : { kind: "ip", ip: clientIp(server, request) };
          const limit = resolved?.rateLimitRequests ?? null;
          const quota = platform.quota.tryConsume(bucket, limit) ?? (await platform.quota.consume(bucket, limit));
          set.headers["ratelimit-limit"] = String(quota.limit);
          set.headers["ratelimit-remaining"] = String(quota.remaining);
          set.headers["ratelimit-reset"] = String(quota.resetSec);
          if (!quota.allowed) {
            throw new AppError(
              "rate_limited",
              `Rate limit of ${quota.limit} requests per ${config.rateLimit.windowSec} s exceeded.`,
              { hint: "Slow down, spread requests over the window, or ask for a higher limit.", retry_after_sec: quota.resetSec },
              { "retry-after": String(quota.resetSec) },
            );
          }
          if (failure) throw failure;
          if (!principal) throw new AppError("unauthorized", "Send an API key in x-api-key or a session token as 'Authorization: Bearer <token>'.");
          const meta = requestMeta(request);
          if (meta) meta.accountId = principal.accountId;
          // Checked here, before an idempotent replay could answer: a stored reply is given only to a
          // credential that may make the request.
          if (typeof need === "string") {
            if (need !== "any" && !hasScope(principal.scopes, need)) throw forbidden(need);
          } else if (!need.some((n) => hasScope(principal.scopes, n))) {
            throw forbidden(need[0]!, `This credential lacks the scope '${need.join("' or '")}'.`);
          }
          principals.set(request, principal);
        },
        resolve({ request }): Access {
          const principal = principals.get(request);
          if (!principal) throw new AppError("unauthorized", "Invalid credential.");
          return { principal };
        },
      }),
      /**
       * Idempotency-Key support, declared by every POST, PATCH and DELETE route (`idempotent: true`;
       * a test checks none is missing). Kept apart from `scope` so reads do not pay for it.
       */
      idempotent: (on: boolean) => (on ? idempotencyHooks : {}),
    })
    .as("scoped");
}
