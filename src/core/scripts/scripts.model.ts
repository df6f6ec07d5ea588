/** TypeBox models of agent scripts. */
import { Type as T, type Static } from "@sinclair/typebox";
import { t } from "elysia";
import { Name, Nullable } from "../validation/fields.ts";
import { PageQuery } from "../../http/page-query.ts";

/** Largest script body, in bytes of UTF-8. */
export const MAX_SCRIPT_BYTES = 256 * 1024;

export namespace ScriptModel {
  export const ContentType = T.Union([T.Literal("text/markdown"), T.Literal("text/html"), T.Literal("application/json")], {
    description: "How the client renders the body. A JSON body must parse.",
  });
  export type ContentType = Static<typeof ContentType>;

  const summaryFields = {
    id: T.String({ description: "scr_… id." }),
    name: T.String(),
    description: Nullable(T.String()),
    content_type: ContentType,
    body_bytes: T.Integer({ description: "Size of the body in bytes (UTF-8)." }),
    version: T.Integer({ description: "1 at creation, bumped by every update." }),
    created_at: T.Integer({ description: "Epoch seconds." }),
    updated_at: T.Integer({ description: "Epoch seconds." }),
  };

  /** A script as listed: without its body, which can be 256 KiB. */
  export const Summary = T.Object(summaryFields, { additionalProperties: false });
  export type Summary = Static<typeof Summary>;

  /** A script with its body. */
  export const Script = T.Object(
    { ...summaryFields, body: T.String({ description: "The script as stored (≤ 256 KiB); GET …/render serves it raw." }) },
    { additionalProperties: false },
  );
  export type Script = Static<typeof Script>;

  const Body = T.String({ maxLength: MAX_SCRIPT_BYTES, description: "The script itself, at most 256 KiB of UTF-8." });
  const Description = Nullable(T.String({ maxLength: 1000 }));

  /** POST /v1/scripts. */
  export const Create = T.Object(
    {
      name: Name(200),
      description: T.Optional(Description),
      content_type: ContentType,
      body: Body,
    },
    { additionalProperties: false },
  );
  export type Create = Static<typeof Create>;

  /** POST /v1/scripts/{id}: only sent fields change; the version is bumped. */
  export const Update = T.Object(
    {
      name: T.Optional(Name(200)),
      description: T.Optional(Description),
      content_type: T.Optional(ContentType),
      body: T.Optional(Body),
    },
    { additionalProperties: false, minProperties: 1 },
  );
  export type Update = Static<typeof Update>;

  /** GET /v1/scripts query. */
  export const ListQuery = t.Object(
    {
      ...PageQuery.properties,
      q: t.Optional(t.String({ minLength: 1, maxLength: 100, description: "Case-insensitive prefix of the name." })),
      content_type: t.Optional(
        t.Union([t.Literal("text/markdown"), t.Literal("text/html"), t.Literal("application/json")], { description: "Only scripts of this type." }),
      ),
    },
    { additionalProperties: false },
  );
}
