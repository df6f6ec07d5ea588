/**
 * Shapes every reply shares, written once: the error body of DESIGN.md section 3 and the success
 * envelopes. Routes declare their responses with these so OpenAPI lists errors on every route.
 */
import { Type as T, type TSchema } from "@sinclair/typebox";

/** `{ ok: false, error, message, ...extra }`: every error any host returns. */
export const ErrorBody = T.Object(
  {
    ok: T.Literal(false),
    error: T.String({ description: "Machine-readable code: validation_failed, unauthorized, forbidden, not_found, conflict, rate_limited, …" }),
    message: T.String({ description: "A sentence for humans." }),
    need: T.Optional(T.String({ description: "403: the scope the credential lacks." })),
    details: T.Optional(
      T.Array(T.Object({ path: T.String({ description: "JSON pointer of the field, e.g. /timezone." }), message: T.String() }), {
        description: "400 and 422: one entry per problem.",
      }),
    ),
    hint: T.Optional(T.String({ description: "429: how to stay under the limit." })),
    retry_after_sec: T.Optional(T.Integer({ description: "429: seconds until the window resets." })),
    field: T.Optional(T.String({ description: "409: the field whose value conflicts." })),
    used_by: T.Optional(T.Array(T.Object({ kind: T.String(), id: T.String() }), { description: "409: who still uses the resource." })),
  },
  { title: "Error" },
);

const DESCRIPTIONS: Record<number, string> = {
  400: "validation_failed: the request is malformed; details lists each problem.",
  401: "unauthorized: missing or invalid credential.",
  403: "forbidden: the credential lacks the scope named in need.",
  404: "not_found: no such resource in this account.",
  409: "conflict: a unique value is taken, the resource is in use, or an Idempotency-Key request is in flight.",
  413: "payload_too_large.",
  415: "unsupported_media_type: send application/json.",
  416: "range_not_satisfiable: the Range starts past the end of the file; Content-Range gives the size.",
  422: "idempotency_key_reused, or lint_failed.",
  429: "rate_limited: see Retry-After.",
  501: "not_implemented.",
};

/**
 * Response entries for the given error statuses, each a reference to the shared `Error` model
 * (registered by `apiModels`), so the OpenAPI document holds the error schema once.
 */
export function errorReplies<S extends number>(...statuses: S[]): Record<S, "Error"> {
  const out = {} as Record<S, "Error">;
  for (const status of statuses) out[status] = "Error";
  return out;
}

/** What each error status means, for the OpenAPI document. */
export const ERROR_DESCRIPTIONS = DESCRIPTIONS;

/** `{ ok: true, data }` for one resource. */
export function DataReply<S extends TSchema>(data: S) {
  return T.Object({ ok: T.Literal(true), data });
}

/** `{ ok: true, data: [...], next_cursor? }` for a keyset-paginated list. */
export function ListReply<S extends TSchema>(item: S) {
  return T.Object({
    ok: T.Literal(true),
    data: T.Array(item),
    next_cursor: T.Optional(T.String({ description: "Present on every full page (limit items): send it back as cursor with the same limit. Absent on the last page." })),
  });
}

/** `{ ok: true }` for actions with nothing to return. */
export const OkReply = T.Object({ ok: T.Literal(true) });
