/**
 * The one error type domain code throws. Each code maps to exactly one HTTP status; the message is
 * user-safe (it reaches the client), `internal` is for logs only and never leaves the process.
 */

/** Every error code a client can ever see, with its HTTP status. */
export const ERROR_STATUS = {
  validation_failed: 400,
  unauthorized: 401,
  forbidden: 403,
  not_found: 404,
  conflict: 409,
  agent_busy: 409,
  payload_too_large: 413,
  unsupported_media_type: 415,
  range_not_satisfiable: 416,
  lint_failed: 422,
  idempotency_key_reused: 422,
  rate_limited: 429,
  internal: 500,
  not_implemented: 501,
  unavailable: 503,
} as const;

export type ErrorCode = keyof typeof ERROR_STATUS;

/** One field-level problem of a `validation_failed` error. `path` is a JSON pointer such as `/timezone`. */
export interface ErrorDetail {
  path: string;
  message: string;
}

/** Extra members of an error body beside ok, error and message (need, details, hint…). */
export type ErrorExtra = Record<string, unknown>;

export class AppError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  readonly extra: ErrorExtra;
  /** Response headers the error must carry (Retry-After for 429). */
  readonly headers: Record<string, string>;

  constructor(code: ErrorCode, message: string, extra: ErrorExtra = {}, headers: Record<string, string> = {}) {
    super(message);
    this.name = "AppError";
    this.code = code;
    this.status = ERROR_STATUS[code];
    this.extra = extra;
    this.headers = headers;
  }

  /** The JSON body DESIGN.md section 3 fixes: `{ ok: false, error, message, ...extra }`. */
  toBody(): { ok: false; error: ErrorCode; message: string } & ErrorExtra {
    return { ok: false, error: this.code, message: this.message, ...this.extra };
  }
}

/** 400 with one or more field paths. */
export function validationFailed(details: ErrorDetail[], message = "The request is not valid."): AppError {
  return new AppError("validation_failed", message, { details });
}

/** 404 for a resource that does not exist or belongs to another account (indistinguishable on purpose). */
export function notFound(what = "resource"): AppError {
  return new AppError("not_found", `No such ${what}.`);
}

/** 403 naming the scope the credential lacks. */
export function forbidden(need: string, message = `This credential lacks the scope '${need}'.`): AppError {
  return new AppError("forbidden", message, { need });
}

/** 409 for a conflicting unique value or a resource still in use. */
export function conflict(message: string, extra: ErrorExtra = {}): AppError {
  return new AppError("conflict", message, extra);
}

/** True when a database error is a unique-key violation (PostgreSQL SQLSTATE 23505), on either store. */
export function isUniqueViolation(error: unknown): boolean {
  for (let e: unknown = error; e && typeof e === "object"; e = (e as { cause?: unknown }).cause) {
    if ((e as { code?: unknown }).code === "23505") return true;
  }
  return false;
}
