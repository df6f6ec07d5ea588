/**
 * Per-request bookkeeping shared by the hooks of one host: the request id, when it started, and the
 * account once a credential resolved. Kept in a WeakMap so nothing leaks past the request.
 */

export interface RequestMeta {
  id: string;
  start: number;
  accountId?: string;
}

const metas = new WeakMap<Request, RequestMeta>();

// A random per-process prefix and a counter: unique across instances, and much cheaper per request
// than a random UUID.
const PROCESS_PREFIX = Buffer.from(crypto.getRandomValues(new Uint8Array(6))).toString("hex");
let requestCounter = 0;

/** A new request id: `<12 hex of this process>-<counter in base 36>`. */
export function nextRequestId(): string {
  return `${PROCESS_PREFIX}-${(++requestCounter).toString(36)}`;
}
const CLIENT_ID = /^[A-Za-z0-9._:-]{1,64}$/;

/** Starts tracking a request; honours a sane client-sent x-request-id so traces can be joined. */
export function beginRequest(request: Request): RequestMeta {
  const sent = request.headers.get("x-request-id");
  const meta = { id: sent && CLIENT_ID.test(sent) ? sent : nextRequestId(), start: performance.now() };
  metas.set(request, meta);
  return meta;
}

export function requestMeta(request: Request): RequestMeta | undefined {
  return metas.get(request);
}

/** The caller's address as the socket saw it ("unknown" under app.handle, which has no socket). */
export function clientIp(server: { requestIP(r: Request): { address: string } | null } | null | undefined, request: Request): string {
  return server?.requestIP(request)?.address ?? "unknown";
}
