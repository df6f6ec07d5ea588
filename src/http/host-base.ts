/**
 * The plugin every host starts from: request ids, the access log, CORS where the host allows
 * browsers, body limits, the one error mapper that turns anything thrown into DESIGN.md's error body,
 * and /healthz and /readyz.
 */
import { markEmptyBody } from "./optional-body.ts";
import { cursorRefusal, unwrapListCursor, wrapListCursor } from "./list-cursor.ts";
import { Elysia } from "elysia";
import { AppError, ERROR_STATUS, validationFailed } from "../core/errors/app-error.ts";
import type { Platform } from "../core/platform.ts";
import { describeError } from "./describe-error.ts";
// A query parameter or a JSON member given twice is refused (no parameter is a list; which value would count is a guess).
import { GIVEN_TWICE, jsonTextProblem, TOO_DEEP } from "./json-duplicates.ts";
import { beginRequest, requestMeta } from "./request-context.ts";
import { apiModels } from "./api-models.ts";
import { errorDetails } from "../core/validation/error-details.ts";
import { NUL_MESSAGE, unstorableTextPath } from "../core/validation/storable-text.ts";

export type HostName = "public" | "console" | "realtime" | "control";

export interface HostBaseOptions {
  host: HostName;
  /** Answer CORS preflights and add CORS headers (public and console hosts). */
  cors: boolean;
  /** Body content types accepted on writes; others get 415. Empty: no check. */
  accept: Array<"json" | "form">;
  /** Largest JSON or form body, bytes. */
  maxBodyBytes?: number;
  /** Runs before an error reply is sent (e.g. to settle an Idempotency-Key). Must not throw. */
  onErrorReply?: (request: Request, error: AppError) => Promise<void>;
  /** Routes that take a raw body (media uploads) instead of JSON, with their own types and size limit. */
  rawBodyRoutes?: RawBodyRoute[];
  /**
   * Paths whose body is a batch of items refused one by one: the NUL / lone-surrogate check is the
   * route's, per item (unstorableTextPath), so one bad item does not cost the batch.
   */
  itemCheckedBodies?: string[];
}

/** A route whose body is raw bytes: exempt from the JSON-only rule, held to its own limits. */
export interface RawBodyRoute {
  method: string;
  path: RegExp;
  /** Accepted content types (without parameters). */
  contentTypes: string[];
  maxBytes: number;
}

const BODY_METHODS = new Set(["POST", "PUT", "PATCH", "DELETE"]);
const ALLOWED_HEADERS = "x-api-key, authorization, idempotency-key, content-type, x-request-id";
const EXPOSED_HEADERS = "ratelimit-limit, ratelimit-remaining, ratelimit-reset, retry-after, idempotency-replayed, x-request-id";

/** The content type of every JSON reply, as Bun writes it for the replies Elysia sends. */
export const JSON_CONTENT_TYPE = "application/json;charset=utf-8";

function errorResponse(error: AppError, headers: Record<string, string | number>): Response {
  return new Response(JSON.stringify(error.toBody()), {
    status: error.status,
    headers: { ...stringHeaders(headers), ...error.headers, "content-type": JSON_CONTENT_TYPE },
  });
}

function stringHeaders(headers: Record<string, string | number | undefined>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(headers)) if (v !== undefined) out[k] = String(v);
  return out;
}

function corsOriginFor(platform: Platform, origin: string | null): string | null {
  if (!origin) return null;
  const allowed = platform.config.corsOrigins;
  if (allowed === "*") return "*";
  return allowed.includes(origin) ? origin : null;
}

function contentKind(contentType: string | null): "json" | "form" | "other" {
  const type = (contentType ?? "").split(";")[0]!.trim().toLowerCase();
  if (type === "application/json" || type.endsWith("+json")) return "json";
  if (type === "application/x-www-form-urlencoded") return "form";
  return "other";
}

const STRICT_UTF8 = new TextDecoder("utf-8", { fatal: true });
const NOT_UTF8 = "Not Unicode text: bytes that are not UTF-8, or a %XX escape that is malformed or encodes such bytes.";

/** UTF-8 bytes as text; 400 when they are not UTF-8 (request.text() would put U+FFFD in silence). */
function utf8Text(bytes: ArrayBuffer): string {
  try {
    return STRICT_UTF8.decode(bytes);
  } catch {
    throw new AppError("validation_failed", "The request is not valid.", { details: [{ path: "", message: NOT_UTF8 }] });
  }
}

/** A body of unknown length, read whole unless it passes `max` bytes (413). */
async function readCapped(body: ReadableStream<Uint8Array>, max: number): Promise<ArrayBuffer> {
  const chunks: Uint8Array[] = [];
  let size = 0;
  const reader = body.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > max) {
      await reader.cancel().catch(() => {});
      throw new AppError("payload_too_large", `The body is larger than ${max} bytes.`);
    }
    chunks.push(value);
  }
  const bytes = new Uint8Array(size);
  let at = 0;
  for (const chunk of chunks) {
    bytes.set(chunk, at);
    at += chunk.byteLength;
  }
  return bytes.buffer;
}

/**
 * A form body as Elysia reads one (`+` is a space), but a value whose %XX escapes do not decode to
 * UTF-8 text is a 400 naming it, where Elysia kept the undecoded text (`from=caf%C3%A9%FF` stored as
 * "caf%C3%A9%FF"), and so is a name given twice (Elysia made an array: "Expected string").
 */
export function parseStrictForm(text: string): Record<string, string> {
  const result: Record<string, string> = Object.create(null);
  for (const pair of text.split("&")) {
    if (pair === "") continue;
    const at = pair.indexOf("=");
    const rawKey = at === -1 ? pair : pair.slice(0, at);
    const rawValue = at === -1 ? "" : pair.slice(at + 1);
    let key: string;
    let value: string;
    try {
      key = decodeURIComponent(rawKey.replaceAll("+", " "));
    } catch {
      throw new AppError("validation_failed", "The request is not valid.", { details: [{ path: "", message: NOT_UTF8 }] });
    }
    try {
      value = decodeURIComponent(rawValue.replaceAll("+", " "));
    } catch {
      throw new AppError("validation_failed", "The request is not valid.", { details: [{ path: `/${key}`, message: NOT_UTF8 }] });
    }
    // A field given twice is refused, as a query parameter or a JSON member given twice is (no field
    // of a form body is a list; which value would count is a guess).
    if (Object.hasOwn(result, key)) throw new AppError("validation_failed", "The request is not valid.", { details: [{ path: `/${key}`, message: GIVEN_TWICE }] });
    result[key] = value;
  }
  return result;
}

/** The 400 of a body that is not JSON (or, where forms are taken, form data). */
function unparsable(accept: HostBaseOptions["accept"]): AppError {
  return new AppError("validation_failed", "The body could not be parsed.", { details: [{ path: "", message: accept.includes("form") ? "Body is not valid JSON or form data." : "Body is not valid JSON." }] });
}


/**
 * Elysia checks a coerced query value (t.Integer in a query) on its own and reports it as type
 * "property" without the parameter's name. The failing value is kept, so the parameter is the one
 * whose text is that value; the name only ever serves the error's path.
 */
function propertyError(v: { value?: unknown; all?: Array<{ message?: string }> }, request: Request): AppError {
  const params = new URL(request.url).searchParams;
  let name: string | undefined;
  // The value as coerced: a number may have been written otherwise (1e20, 007, 1.0).
  const matches = (text: string) => text === String(v.value) || (typeof v.value === "number" && text.trim() !== "" && Number(text) === v.value);
  for (const [key, value] of params) {
    if (matches(value)) {
      name = key;
      break;
    }
  }
  const message = v.all?.[0]?.message ?? "Invalid value.";
  return new AppError("validation_failed", "The request is not valid.", { details: [{ path: name ? `/query/${name}` : "/query", message }] });
}


/** The 400 for a NUL character in the URL (a query value names its parameter). */
/**
 * What is wrong with a WebSocket upgrade request's handshake (RFC 6455 section 4.2.1), or null: refused
 * here with the error body, before Elysia answers it in plain text ("Expected a websocket connection").
 */
function handshakeProblem(request: Request): AppError | null {
  const details: Array<{ path: string; message: string }> = [];
  if (request.method !== "GET") details.push({ path: "/method", message: "A WebSocket handshake is a GET." });
  const key = request.headers.get("sec-websocket-key") ?? "";
  if (!/^[A-Za-z0-9+/]{22}==$/.test(key.trim())) details.push({ path: "/headers/sec-websocket-key", message: "Expected the base64 of 16 random bytes." });
  if (request.headers.get("sec-websocket-version")?.trim() !== "13") details.push({ path: "/headers/sec-websocket-version", message: "Only version 13 is spoken." });
  if (!/(^|,)\s*upgrade\s*(,|$)/i.test(request.headers.get("connection") ?? "")) details.push({ path: "/headers/connection", message: "Expected Upgrade." });
  return details.length ? validationFailed(details, "Not a valid WebSocket handshake.") : null;
}

function nulInUrl(request: Request): AppError {
  let path = "/path";
  for (const [key, value] of new URL(request.url).searchParams) {
    if (key.includes("\u0000") || value.includes("\u0000")) {
      path = `/query/${key.replaceAll("\u0000", "")}`;
      break;
    }
  }
  return new AppError("validation_failed", "The request is not valid.", { details: [{ path, message: NUL_MESSAGE }] });
}

/** Maps Elysia's own errors and ours to an AppError; anything unknown becomes 500 internal. */
function toAppError(code: string | number, error: unknown, request: Request, accept: HostBaseOptions["accept"]): AppError | null {
  if (error instanceof AppError) return error;
  if (code === "VALIDATION") {
    const v = error as {
      type?: string;
      value?: unknown;
      all?: Array<{ path?: string; message?: string; schema?: { anyOf?: Array<{ type?: string }> } }>;
    };
    if (v.type === "response") return null; // Our reply broke its own schema: a bug, reported as 500.
    if (v.type === "property") return propertyError(v, request);
    const prefix = v.type && v.type !== "body" ? `/${v.type}` : "";
    return new AppError("validation_failed", "The request is not valid.", { details: errorDetails(v.all ?? [], prefix, Infinity) });
  }
  if (code === "PARSE") {
    // Our own parse hook's refusal (text that is not UTF-8) arrives wrapped by Elysia.
    const cause = (error as { cause?: unknown }).cause;
    return cause instanceof AppError ? cause : unparsable(accept);
  }
  if (code === "NOT_FOUND") return new AppError("not_found", "No such endpoint.");
  return null;
}


/**
 * The 400 of a query string the route cannot read as sent (null: none): a parameter on a route that
 * takes none, or a name given twice (no parameter is a list; which value would count is a guess).
 */
function queryRefusal(search: string, takesNone: boolean): AppError | null {
  const seen = new Set<string>();
  for (const name of new URLSearchParams(search).keys()) {
    const refuse = (message: string) => new AppError("validation_failed", "The request is not valid.", { details: [{ path: `/query/${name}`, message }] });
    if (takesNone) return refuse("This field cannot be set here.");
    if (seen.has(name)) return refuse(GIVEN_TWICE);
    seen.add(name);
  }
  return null;
}

/** Per host base plugin: what `sealQueries` learnt of the finished app's routes. */
interface SealedRoutes {
  /** Routes ("METHOD /path/:param") that take no query parameters. */
  queryless: Set<string>;
  /** WebSocket paths: their upgrade requests check their own URL (a refusal is a close code, not a status). */
  sockets: Set<string>;
  /** DELETE routes ("DELETE /path/:param") that take no body. */
  bodiless: Set<string>;
}
const sealedRoutes = new WeakMap<object, SealedRoutes>();

/**
 * Called once a host's app has every route: a query parameter on a route that declares no query
 * schema is then a 400 naming it, as on the routes that declare one (which refuse unknown ones),
 * instead of being ignored; so is a body on a DELETE route that declares none. WebSocket paths keep
 * their own rules (the stream checks its query).
 * @example const app = sealQueries(new Elysia().use(base).get(...), base);
 */
export function sealQueries<App extends { routes: Array<{ method: string; path: string; hooks?: unknown }> }>(app: App, base: object): App {
  const sealed = sealedRoutes.get(base);
  if (!sealed) throw new Error("sealQueries: not a host base plugin");
  for (const r of app.routes) if (r.method === "WS") sealed.sockets.add(r.path);
  for (const r of app.routes) {
    if (r.method === "WS" || r.method === "ALL" || sealed.sockets.has(r.path)) continue;
    if (!(r.hooks as { query?: unknown } | undefined)?.query) sealed.queryless.add(`${r.method} ${r.path}`);
    if (r.method === "DELETE" && !(r.hooks as { body?: unknown } | undefined)?.body) sealed.bodiless.add(`${r.method} ${r.path}`);
  }
  return app;
}

/** The shared base plugin of a host. */
/** The edge's calls to the control host (many a second, changing no configuration). */
const EDGE_PATHS = new Set(["/route", "/auth", "/presence/event", "/presence/events", "/security/report"]);

export function hostBase(platform: Platform, options: HostBaseOptions) {
  const sealed: SealedRoutes = { queryless: new Set(), sockets: new Set(), bodiless: new Set() };
  const { queryless, sockets, bodiless } = sealed;
  /** A WebSocket upgrade to one of the host's socket paths (it answers a bad URL with a close code). */
  const socketUpgrade = (request: Request) =>
    sockets.size > 0 && request.headers.get("upgrade")?.toLowerCase() === "websocket" && sockets.has(new URL(request.url).pathname);
  const maxBody = options.maxBodyBytes ?? 1024 * 1024;
  const itemChecked = new Set(options.itemCheckedBodies ?? []);
  const rawRoutes = options.rawBodyRoutes ?? [];
  /** The raw-body route a request is for, if any. */
  const rawRouteOf = (request: Request): RawBodyRoute | undefined => {
    if (!rawRoutes.length) return undefined;
    const pathname = new URL(request.url).pathname;
    return rawRoutes.find((r) => r.method === request.method && r.path.test(pathname));
  };
  const log = platform.log.child({ host: options.host });
  const accessLog = log.enabled("info");
  /** The request's log line (info), with the status the client got. */
  const logRequest = (request: Request, status: number) => {
    const meta = requestMeta(request);
    log.info("request", {
      request_id: meta?.id,
      method: request.method,
      path: new URL(request.url).pathname,
      status,
      ms: meta ? Math.round((performance.now() - meta.start) * 100) / 100 : undefined,
      account_id: meta?.accountId,
    });
  };
  /** A refusal before routing: Elysia runs no later hook for it, so its log line is written here. */
  const refuse = (request: Request, error: AppError, headers: Record<string, string | number>) => {
    if (accessLog) logRequest(request, error.status);
    return errorResponse(error, headers);
  };
  const base = new Elysia({ name: `host-base-${options.host}`, normalize: false })
    .use(apiModels)
    .error({ AppError })
    .onRequest(({ request, set }) => {
      const meta = beginRequest(request);
      set.headers["x-request-id"] = meta.id;
      if (request.url.includes("%00") && !socketUpgrade(request)) return refuse(request, nulInUrl(request), set.headers);
      if (socketUpgrade(request)) {
        const problem = handshakeProblem(request);
        if (problem) {
          set.headers["sec-websocket-version"] = "13";
          return refuse(request, problem, set.headers);
        }
      }
      if (options.cors) {
        const origin = corsOriginFor(platform, request.headers.get("origin"));
        if (origin) {
          set.headers["access-control-allow-origin"] = origin;
          set.headers["access-control-expose-headers"] = EXPOSED_HEADERS;
          if (origin !== "*") set.headers["vary"] = "Origin";
        }
        if (request.method === "OPTIONS" && request.headers.has("access-control-request-method")) {
          const headers: Record<string, string> = { ...stringHeaders(set.headers), "access-control-max-age": "600" };
          if (origin) {
            headers["access-control-allow-methods"] = "GET, POST, PUT, PATCH, DELETE, OPTIONS";
            headers["access-control-allow-headers"] = ALLOWED_HEADERS;
          }
          return new Response(null, { status: 204, headers });
        }
      }
      if (BODY_METHODS.has(request.method)) {
        const raw = rawRouteOf(request);
        if (raw) {
          const length = Number(request.headers.get("content-length") ?? "0");
          if (length > raw.maxBytes) {
            return refuse(request, new AppError("payload_too_large", `The body is larger than ${raw.maxBytes} bytes.`), set.headers);
          }
          const type = (request.headers.get("content-type") ?? "").split(";")[0]!.trim().toLowerCase();
          if (!raw.contentTypes.includes(type)) {
            return refuse(request, new AppError("unsupported_media_type", `Send the body as one of: ${raw.contentTypes.join(", ")}.`), set.headers);
          }
          return;
        }
      }
      if (BODY_METHODS.has(request.method) && options.accept.length) {
        const length = Number(request.headers.get("content-length") ?? "0");
        const hasBody = length > 0 || request.headers.has("transfer-encoding") || (request.body !== null && !request.headers.has("content-length"));
        if (length > maxBody) {
          return refuse(request, new AppError("payload_too_large", `The body is larger than ${maxBody} bytes.`), set.headers);
        }
        const kind = contentKind(request.headers.get("content-type"));
        if (hasBody && (kind === "other" || !options.accept.includes(kind))) {
          const names = options.accept.map((a) => (a === "json" ? "application/json" : "application/x-www-form-urlencoded"));
          return refuse(request, new AppError("unsupported_media_type", `Send the body as ${names.join(" or ")}.`), set.headers);
        }
      }
    })
    // Text bodies are read as strict UTF-8: what is not Unicode text is a 400, never stored changed.
    .onParse({ as: "global" }, async ({ request }) => {
      // A raw-body route reads its own stream: nothing is read here (null marks the body as taken care of;
      // Elysia skips body reading by itself only when a route's parse "none" is its one parse hook).
      if (rawRouteOf(request)) return null;
      const length = request.headers.get("content-length");
      // An empty body, whatever its type (curl -d '' sends a form's), is no body: null, which a route
      // whose body may be left out reads as {} (optionalBody) and any other route's schema refuses.
      if (length === "0") {
        markEmptyBody(request);
        return null;
      }
      const kind = contentKind(request.headers.get("content-type"));
      // A body of unknown length (chunked) is read up to the limit the length check holds others to.
      const bytes = () => (length === null && request.body !== null ? readCapped(request.body, maxBody) : request.arrayBuffer());
      if (kind === "form" && options.accept.includes("form")) return parseStrictForm(utf8Text(await bytes()));
      if (kind === "json" && (length === null ? request.body !== null : Number(length) > 0)) {
        const text = utf8Text(await bytes());
        let parsed: unknown;
        try {
          parsed = JSON.parse(text);
        } catch {
          throw unparsable(options.accept);
        }
        // JSON.parse keeps the last of two members of one name: refused, as a field given twice is. So is
        // nesting no request needs, which walks of the value (the stores' JSON parsers too) cannot follow.
        const problem = jsonTextProblem(text);
        if (problem !== null) {
          const message = problem.kind === "twice" ? GIVEN_TWICE : TOO_DEEP;
          throw new AppError("validation_failed", "The request is not valid.", { details: [{ path: problem.path, message }] });
        }
        return parsed;
      }
    })
    // A list's cursor carries the filters of its listing (list-cursor.ts): put back before the query's schema runs.
    .onTransform({ as: "global" }, ({ query, request }) => {
      if (request.method === "GET" && query && typeof query === "object") unwrapListCursor(request, query as Record<string, unknown>);
    })
    .onTransform({ as: "global" }, ({ body, request }) => {
      if (body === undefined || body === null || typeof body !== "object") return;
      if (itemChecked.size && itemChecked.has(new URL(request.url).pathname)) return;
      const at = unstorableTextPath(body, "");
      if (at !== null) throw new AppError("validation_failed", "The request is not valid.", { details: [{ path: at, message: NUL_MESSAGE }] });
    })
    // After the credential (a route's transform) and the schemas: a caller without a valid credential
    // gets 401 whatever its URL says. A socket path reads its own query (its refusals are close codes).
    .onBeforeHandle({ as: "global" }, ({ request, route, body }) => {
      // A DELETE that names its target in the path takes no body: one sent (`{ "id": … }`, the other
      // form of some deletes) is refused, not ignored while the path's resource goes.
      // (DELETE first: the edge's calls, many a second, are POSTs and pay nothing here.)
      if (request.method === "DELETE" && body != null && bodiless.has(`DELETE ${route}`) && !(typeof body === "object" && !Array.isArray(body) && Object.keys(body).length === 0)) {
        throw new AppError("validation_failed", "The request is not valid.", { details: [{ path: "", message: "This route takes no body: its path names what it deletes." }] });
      }
      const at = request.url.indexOf("?");
      if (at === -1 || at === request.url.length - 1 || sockets.has(route)) return;
      // A list cursor refused while it was unwrapped (before the credential was checked).
      const badCursor = cursorRefusal(request);
      if (badCursor) throw badCursor;
      const refusal = queryRefusal(request.url.slice(at + 1), queryless.has(`${request.method} ${route}`));
      if (refusal) throw refusal;
    })
    // A change this instance made is in its configuration cache's view before the reply goes: the
    // client's next request (a call, say) sees it (config-cache.ts). The edge's own calls change no
    // configuration and are the hot path: they do not wait.
    .onAfterHandle({ as: "global" }, async (context) => {
      const { request } = context;
      if (request.method === "GET") {
        const reply = context as { responseValue?: unknown; response?: unknown };
        wrapListCursor(request, reply.responseValue ?? reply.response);
      }
      if (request.method === "GET" || request.method === "HEAD" || request.method === "OPTIONS") return;
      if (EDGE_PATHS.has(new URL(request.url).pathname)) return;
      await platform.configCache.settle();
    })
    .onError({ as: "global" }, async ({ code, error, set, request }) => {
      const known = toAppError(code, error, request, options.accept);
      const appError = known ?? new AppError("internal", "Something went wrong on our side; it has been logged.");
      if (!known) log.error("unhandled error", { request_id: requestMeta(request)?.id, error: describeError(error), elysia_code: String(code) });
      if (options.onErrorReply) await options.onErrorReply(request, appError);
      // What the access line reports (Elysia leaves its own code here: 422 for a validation error).
      set.status = appError.status;
      return errorResponse(appError, set.headers);
    })
    // Registered only when it will write: even an idle hook costs every request a little.
    .onAfterResponse({ as: "global" }, accessLog ? ({ request, set }) => {
      const status = typeof set.status === "number" ? set.status : ERROR_STATUS.internal;
      // An accepted WebSocket upgrade: the client got 101 Switching Protocols.
      logRequest(request, status === 200 && socketUpgrade(request) ? 101 : status);
    } : [])
    .get("/healthz", () => ({ ok: true as const }), { detail: { hide: true } })
    .get(
      "/readyz",
      async ({ set }) => {
        try {
          await Promise.all([platform.database.ping(), platform.live.ping()]);
          return { ok: true as const };
        } catch (error) {
          log.warn("not ready", { error: describeError(error) });
          set.status = 503;
          return { ok: false as const, error: "unavailable", message: "A store is unreachable." };
        }
      },
      { detail: { hide: true } },
    );
  sealedRoutes.set(base, sealed);
  return base;
}
