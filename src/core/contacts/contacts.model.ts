/** TypeBox models of contacts (the phonebook) and of the internal directory. */
import { Type as T, type Static } from "@sinclair/typebox";
import { t } from "elysia";
import { Flag, Name, Nullable, PhoneInput } from "../validation/fields.ts";
import { PageQuery } from "../../http/page-query.ts";
import { MAX_TEXT_VALUE } from "../custom-fields/custom-fields.model.ts";
import "../validation/formats.ts";

/** Most numbers one contact holds. */
export const MAX_CONTACT_PHONES = 10;

export namespace ContactModel {
  export const PhoneLabel = T.Union([T.Literal("mobile"), T.Literal("work"), T.Literal("home"), T.Literal("other")], {
    description: "What kind of number it is.",
  });

  /** A number as stored and shown. */
  export const Phone = T.Object(
    { label: PhoneLabel, e164: T.String({ description: "E.164 without the leading +." }) },
    { additionalProperties: false },
  );

  /** A number as sent: typed forms are normalized to E.164. */
  export const PhoneIn = T.Object(
    {
      label: T.Optional(T.Union([T.Literal("mobile"), T.Literal("work"), T.Literal("home"), T.Literal("other")], { description: "Default other." })),
      e164: PhoneInput("The number: +, spaces, dots, dashes and parentheses are ignored (+1 (415) 555-0123). Stored as E.164 without +."),
    },
    { additionalProperties: false },
  );

  /** A custom value as sent: null removes it on update. */
  const CustomIn = T.Object(
    {},
    {
      // Two nullable members rather than one union with null: OpenAPI 3.0 needs a type beside nullable.
      additionalProperties: T.Union([Nullable(T.String({ maxLength: MAX_TEXT_VALUE })), Nullable(T.Number())]),
      description:
        "Values of the account's contact custom fields (GET /v1/fields?entity=contact), by key. Unknown keys and values of the wrong type are refused.",
    },
  );

  /** A custom value as stored. */
  const CustomOut = T.Object(
    {},
    {
      additionalProperties: T.Union([T.String(), T.Number()]),
      description: "Values of the account's contact custom fields, by key.",
    },
  );

  /** A contact as the API shows it. */
  export const Contact = T.Object(
    {
      id: T.String({ description: "ct_… id." }),
      first_name: Nullable(T.String()),
      last_name: Nullable(T.String()),
      display_name: T.String({
        description: "What a screen-pop or caller-name shows. Derived when not given: first and last name, else company, else email, else the first number.",
      }),
      company: Nullable(T.String()),
      email: Nullable(T.String()),
      phones: T.Array(Phone, { description: "Up to 10 numbers; each number appears once." }),
      tags: T.Array(T.String(), { description: "Free-form labels; filter with tag=." }),
      external_id: Nullable(T.String({ description: "The record's id in your CRM; unique per account." })),
      notes: Nullable(T.String()),
      custom: CustomOut,
      created_at: T.Integer({ description: "Epoch seconds." }),
      updated_at: T.Integer({ description: "Epoch seconds." }),
    },
    { additionalProperties: false },
  );
  export type Contact = Static<typeof Contact>;

  const writable = {
    first_name: T.Optional(Nullable(Name(100))),
    last_name: T.Optional(Nullable(Name(100))),
    display_name: T.Optional(Nullable(Name(200))),
    company: T.Optional(Nullable(Name(200))),
    email: T.Optional(Nullable(T.String({ format: "email", maxLength: 254 }))),
    phones: T.Optional(T.Array(PhoneIn, { maxItems: MAX_CONTACT_PHONES, description: "0–10 numbers; a number may appear once." })),
    tags: T.Optional(
      T.Array(T.String({ minLength: 1, maxLength: 50 }), { maxItems: 50, description: "Up to 50 tags of 1–50 characters; duplicates are dropped." }),
    ),
    external_id: T.Optional(Nullable(T.String({ minLength: 1, maxLength: 200 }))),
    notes: T.Optional(Nullable(T.String({ maxLength: 4000 }))),
    custom: T.Optional(CustomIn),
  };

  /** POST /v1/contacts. At least one of a name, company, email or number is needed. */
  export const Create = T.Object(writable, { additionalProperties: false });
  export type Create = Static<typeof Create>;

  /**
   * POST /v1/contacts/{id}: only sent fields change. phones and tags are replaced as a whole;
   * custom is merged key by key (null removes a value).
   */
  export const Update = T.Object(writable, { additionalProperties: false, minProperties: 1 });
  export type Update = Static<typeof Update>;

  /** GET /v1/contacts query. */
  export const ListQuery = t.Object(
    {
      ...PageQuery.properties,
      q: t.Optional(t.String({ minLength: 1, maxLength: 100, description: "Case-insensitive prefix of the first name, last name, display name or company." })),
      phone: t.Optional(
        t.String({ minLength: 1, maxLength: 32, description: "Reverse lookup: a number in any typed form, normalized to E.164; exact match on any of the contact's numbers." }),
      ),
      tag: t.Optional(t.String({ minLength: 1, maxLength: 50, description: "Only contacts carrying this tag (exact)." })),
      external_id: t.Optional(t.String({ minLength: 1, maxLength: 200, description: "The contact with this CRM id." })),
    },
    { additionalProperties: false },
  );

  /** One user in the internal directory. */
  export const DirectoryEntry = T.Object(
    {
      id: T.String({ description: "us_… id of the user." }),
      username: T.String({ description: "The user's extension (SIP user part): what to dial." }),
      display_name: T.String({ description: "The user's name (the extension when the user has none)." }),
      is_agent: Flag("1 when the user takes queue calls."),
    },
    { additionalProperties: false },
  );
  export type DirectoryEntry = Static<typeof DirectoryEntry>;

  /** GET /v1/directory query. */
  export const DirectoryQuery = t.Object(
    {
      ...PageQuery.properties,
      digits: t.Optional(
        t.String({
          pattern: "^[2-9]{2,10}$",
          description: "Dial-by-name: 2–10 keypad digits (2–9); matches users whose first or last name, spelled on a phone keypad, starts with them (abc=2 … wxyz=9).",
        }),
      ),
      q: t.Optional(t.String({ minLength: 1, maxLength: 100, description: "Case-insensitive prefix of the name (whole, first or last) or of the extension." })),
    },
    { additionalProperties: false },
  );
}
