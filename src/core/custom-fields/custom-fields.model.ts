/** TypeBox models of custom fields: the definitions an account adds to its contacts and calls. */
import { Type as T, type Static } from "@sinclair/typebox";
import { t } from "elysia";
import { Flag, Name, Nullable } from "../validation/fields.ts";
import { PageQuery } from "../../http/page-query.ts";

/** What a field key looks like: it is the property name in a record's `custom` object. */
export const FIELD_KEY_PATTERN = "^[a-z][a-z0-9_]{0,39}$";

/** Longest text value a custom field holds. */
export const MAX_TEXT_VALUE = 4000;

export namespace CustomFieldModel {
  export const Entity = T.Union([T.Literal("contact"), T.Literal("call")], {
    description: "Which records carry the field: contact (the phonebook) or call (values captured on a call).",
  });
  export type Entity = Static<typeof Entity>;

  export const FieldType = T.Union([T.Literal("text"), T.Literal("number"), T.Literal("boolean"), T.Literal("date"), T.Literal("select")], {
    description:
      "Value type: text (string ≤ 4000), number (JSON number), boolean (0 or 1), date (YYYY-MM-DD), select (one of options).",
  });
  export type FieldType = Static<typeof FieldType>;

  const Key = T.String({
    pattern: FIELD_KEY_PATTERN,
    description: "Property name in the record's custom object: lower-case letter, then letters, digits or _ (≤ 40). Unique per account and entity.",
  });
  const Options = T.Array(T.String({ minLength: 1, maxLength: 100 }), {
    minItems: 1,
    maxItems: 100,
    uniqueItems: true,
    description: "Allowed values of a select field (1–100 distinct strings); must be null or absent for other types.",
  });

  /** A custom field as the API shows it. */
  export const Field = T.Object(
    {
      id: T.String({ description: "fld_… id." }),
      entity: Entity,
      key: T.String({ description: "Property name in the record's custom object." }),
      label: T.String({ description: "What a form shows beside the value." }),
      type: FieldType,
      options: Nullable(T.Array(T.String(), { description: "Allowed values of a select field; null for other types." })),
      required: Flag("1: a record cannot be created without a value, nor have its value removed."),
      created_at: T.Integer({ description: "Epoch seconds." }),
      updated_at: T.Integer({ description: "Epoch seconds." }),
    },
    { additionalProperties: false },
  );
  export type Field = Static<typeof Field>;

  /** POST /v1/fields. */
  export const Create = T.Object(
    {
      entity: Entity,
      key: Key,
      label: Name(100),
      type: FieldType,
      options: T.Optional(Nullable(Options)),
      required: T.Optional(Flag("Default 0.")),
    },
    { additionalProperties: false },
  );
  export type Create = Static<typeof Create>;

  /** POST /v1/fields/{id}: only sent fields change; entity is fixed at creation. */
  export const Update = T.Object(
    {
      key: T.Optional(Key),
      label: T.Optional(Name(100)),
      type: T.Optional(FieldType),
      options: T.Optional(Nullable(Options)),
      required: T.Optional(Flag()),
    },
    { additionalProperties: false, minProperties: 1 },
  );
  export type Update = Static<typeof Update>;

  /** GET /v1/fields query. */
  export const ListQuery = t.Object(
    {
      ...PageQuery.properties,
      entity: t.Optional(t.Union([t.Literal("contact"), t.Literal("call")], { description: "Only fields of this entity." })),
    },
    { additionalProperties: false },
  );
}
