/**
 * Query parameters every keyset-paginated list accepts. Elysia's `t.Integer` (not raw TypeBox)
 * because query strings are text and must be coerced; bodies stay strict.
 */
import { t } from "elysia";
import { DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE } from "../core/pagination/pagination.ts";

export const PageQuery = t.Object(
  {
    limit: t.Optional(t.Integer({ minimum: 1, maximum: MAX_PAGE_SIZE, description: `Page size, 1–${MAX_PAGE_SIZE}; default ${DEFAULT_PAGE_SIZE}.` })),
    cursor: t.Optional(t.String({ maxLength: 200, description: "next_cursor of the previous page." })),
  },
  { additionalProperties: false },
);

/** A 0/1 filter in a query string (compared as text: a query value is text until a route reads it). */
export const FlagQuery = (description: string) => t.Union([t.Literal("0"), t.Literal("1")], { description });
