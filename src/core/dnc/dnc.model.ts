/** TypeBox models of the do-not-call list. */
import { Type as T, type Static } from "@sinclair/typebox";
import { t } from "elysia";
import { Flag, MAX_EPOCH_SEC, Nullable } from "../validation/fields.ts";
import { PageQuery } from "../../http/page-query.ts";

/** Most numbers one add or remove request takes. */
export const MAX_DNC_BATCH = 10_000;

export namespace DncModel {
  export const Source = T.Union([T.Literal("api"), T.Literal("import"), T.Literal("agent"), T.Literal("campaign")], {
    description: "Who listed the number: api (default), import (a bulk upload), agent (the callee asked during a call), campaign (a dialer disposition).",
  });
  export type Source = Static<typeof Source>;

  /** One listed number. */
  export const Entry = T.Object(
    {
      e164: T.String({ description: "E.164 without the leading +." }),
      reason: Nullable(T.String()),
      source: Source,
      expires_at: Nullable(T.Integer({ description: "Epoch seconds after which the entry no longer counts; null = never." })),
      created_at: T.Integer({ description: "Epoch seconds when it was (last) listed." }),
    },
    { additionalProperties: false },
  );
  export type Entry = Static<typeof Entry>;

  /** GET /v1/dnc?number=…: whether one number is listed now. */
  export const Lookup = T.Object(
    {
      e164: T.String({ description: "The number asked about, normalized." }),
      listed: Flag("1 when the number is on the list and its entry has not expired."),
      entry: T.Optional(Entry),
    },
    { additionalProperties: false, description: "entry is present only when listed is 1." },
  );
  export type Lookup = Static<typeof Lookup>;

  const Numbers = T.Array(T.String({ maxLength: 32 }), {
    minItems: 1,
    maxItems: MAX_DNC_BATCH,
    description: `1–${MAX_DNC_BATCH} numbers as typed (+, spaces, dots, dashes, parentheses ignored; a leading 00 counts as +; a trunk 0 after the country code, "+44 (0)20 …" or "+44 020 …", is dropped). E.164: 7–15 digits. Duplicates are fine. One invalid number refuses the whole request.`,
  });

  /** POST /v1/dnc. */
  export const Add = T.Object(
    {
      numbers: Numbers,
      reason: T.Optional(Nullable(T.String({ minLength: 1, maxLength: 200 }))),
      expires_at: T.Optional(Nullable(T.Integer({ minimum: 1, maximum: MAX_EPOCH_SEC, description: "Epoch seconds in the future; null or absent = never expires. A number listed already keeps the later expiry of the two." }))),
      source: T.Optional(Source),
    },
    { additionalProperties: false },
  );
  export type Add = Static<typeof Add>;

  export const AddResult = T.Object(
    {
      added: T.Integer({ description: "Numbers newly listed (including expired entries listed again)." }),
      already_listed: T.Integer({
        description:
          "Numbers that were listed already. Each keeps the later of its expiry and this request's, no expiry being the latest (re-adding without expires_at makes an expiring entry permanent); when this request's is later, the entry takes this request's source, time and reason (its own reason stays when none is given). An earlier or equal expiry leaves the entry as it was.",
      }),
    },
    { additionalProperties: false },
  );

  /** DELETE /v1/dnc. */
  export const Remove = T.Object({ numbers: Numbers }, { additionalProperties: false });
  export type Remove = Static<typeof Remove>;

  export const RemoveResult = T.Object(
    { removed: T.Integer({ description: "Numbers that were listed and no longer are." }) },
    { additionalProperties: false },
  );

  /** GET /v1/dnc query. The cursor is a page's last number rather than an id, but looks the same to a client. */
  export const ListQuery = t.Object(
    {
      ...PageQuery.properties,
      number: t.Optional(
        t.String({ minLength: 1, maxLength: 32, description: "Look one number up instead of listing: the reply is { e164, listed, entry? }. Other parameters are ignored." }),
      ),
      q: t.Optional(t.String({ pattern: "^\\+?[0-9]{1,15}$", description: "Only numbers starting with these digits (a leading + is ignored)." })),
      source: t.Optional(t.Union([t.Literal("api"), t.Literal("import"), t.Literal("agent"), t.Literal("campaign")], { description: "Only entries from this source." })),
      include_expired: t.Optional(t.Integer({ minimum: 0, maximum: 1, description: "1 lists expired entries too; default 0." })),
    },
    { additionalProperties: false },
  );
}
