/**
 * Query parameters every keyset-paginated list accepts. Elysia's `t.Integer` (not raw TypeBox)
 * because query strings are text and must be coerced; bodies stay strict.
 */
import { t } from "elysia";
import { DEFAULT_PAGE_SIZE, MAX_CURSOR_LENGTH, MAX_PAGE_SIZE } from "../core/pagination/pagination.ts";
import { MAX_EPOCH_SEC } from "../core/validation/fields.ts";

export const PageQuery = t.Object(
  {
    limit: t.Optional(t.Integer({ minimum: 1, maximum: MAX_PAGE_SIZE, description: `Page size, 1–${MAX_PAGE_SIZE}; default ${DEFAULT_PAGE_SIZE}.` })),
    cursor: t.Optional(t.String({ maxLength: MAX_CURSOR_LENGTH, description: "next_cursor of the previous page." })),
  },
  { additionalProperties: false },
);

/** For routes that take no query parameters: any is a 400 naming it, as on every route that takes some. */
export const NoQuery = t.Object({}, { additionalProperties: false });

/** An instant in epoch seconds in a query string, 0 to the end of year 9999 (fields.ts's EpochSec, coerced). */
export const EpochSecQuery = (description: string, minimum = 0) => t.Integer({ minimum, maximum: MAX_EPOCH_SEC, description });

/** A 0/1 filter in a query string (compared as text: a query value is text until a route reads it). */
export const FlagQuery = (description: string) => t.Union([t.Literal("0"), t.Literal("1")], { description });
