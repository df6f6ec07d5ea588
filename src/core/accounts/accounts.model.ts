/** TypeBox models of accounts: request validation, TypeScript types and OpenAPI from one place. */
import { Type as T, type Static } from "@sinclair/typebox";
import "../validation/formats.ts";
import { destKindSchema } from "../routing/route-target.ts";

const Nullable = <S extends Parameters<typeof T.Union>[0][number]>(schema: S) => T.Union([schema, T.Null()]);
const Flag = T.Union([T.Literal(0), T.Literal(1)], { description: "Boolean as the integer 0 or 1." });

export namespace AccountModel {
  export const Status = T.Union([T.Literal("active"), T.Literal("suspended"), T.Literal("closed")]);
  export const VoiceGender = T.Union([T.Literal("male"), T.Literal("female")]);

  /** An account as the API shows it. */
  export const Account = T.Object(
    {
      id: T.String({ description: "acc_… id." }),
      name: T.String(),
      parent_id: Nullable(T.String({ description: "Reseller parent; null = platform-direct." })),
      status: Status,
      is_reseller: Flag,
      timezone: T.String({ description: "IANA time zone; default UTC." }),
      brand_name: Nullable(T.String()),
      brand_domain: Nullable(T.String()),
      max_in: Nullable(T.Integer({ description: "Inbound concurrency ceiling; null = unlimited." })),
      max_out: Nullable(T.Integer({ description: "Outbound concurrency ceiling; null = unlimited." })),
      max_dialer: Nullable(T.Integer({ description: "Dialer concurrency ceiling; null = unlimited." })),
      default_cid_number: Nullable(T.String()),
      language: T.String({ description: "Default prompt language; default en-US." }),
      voice_gender: VoiceGender,
      tone_country: T.String({ description: "ISO alpha-2 ringback country; default US." }),
      recording_retention_days: Nullable(T.Integer({ description: "null = 30-day default; 0 = forever; N = N days." })),
      allow_free_caller_id: Flag,
      did_default_dest_kind: Nullable(T.String()),
      did_default_dest_id: Nullable(T.String()),
      rate_limit_requests: Nullable(T.Integer({ description: "Requests per rate-limit window for this account's keys; null = platform default." })),
      created_at: T.Integer({ description: "Epoch seconds." }),
      updated_at: T.Integer({ description: "Epoch seconds." }),
    },
    { additionalProperties: false },
  );
  export type Account = Static<typeof Account>;

  /** PATCH /v1/account: the self-service subset. Anything else (status, parent_id, billing) is refused. */
  export const Patch = T.Object(
    {
      name: T.Optional(T.String({ minLength: 1, maxLength: 200 })),
      timezone: T.Optional(T.String({ format: "iana-timezone", description: "IANA time zone name." })),
      language: T.Optional(T.String({ format: "bcp47", description: "BCP 47 tag such as en-US." })),
      voice_gender: T.Optional(VoiceGender),
      tone_country: T.Optional(T.String({ format: "iso-country", description: "ISO 3166-1 alpha-2, upper case." })),
      recording_retention_days: T.Optional(Nullable(T.Integer({ minimum: 0, maximum: 36500 }))),
      allow_free_caller_id: T.Optional(Flag),
    },
    { additionalProperties: false, minProperties: 1 },
  );
  export type Patch = Static<typeof Patch>;

  /** POST /admin/accounts (control host, operators). */
  export const AdminCreate = T.Object(
    {
      name: T.String({ minLength: 1, maxLength: 200 }),
      timezone: T.Optional(T.String({ format: "iana-timezone" })),
      parent_id: T.Optional(Nullable(T.String())),
      is_reseller: T.Optional(Flag),
      language: T.Optional(T.String({ format: "bcp47" })),
      tone_country: T.Optional(T.String({ format: "iso-country" })),
      max_in: T.Optional(Nullable(T.Integer({ minimum: 0 }))),
      max_out: T.Optional(Nullable(T.Integer({ minimum: 0 }))),
      max_dialer: T.Optional(Nullable(T.Integer({ minimum: 0 }))),
      rate_limit_requests: T.Optional(Nullable(T.Integer({ minimum: 1 }))),
    },
    { additionalProperties: false },
  );
  export type AdminCreate = Static<typeof AdminCreate>;

  /** PATCH /admin/accounts/{id} (control host, operators): what only the operator may change. */
  export const AdminPatch = T.Object(
    {
      status: T.Optional(Status),
      name: T.Optional(T.String({ minLength: 1, maxLength: 200 })),
      max_in: T.Optional(Nullable(T.Integer({ minimum: 0 }))),
      max_out: T.Optional(Nullable(T.Integer({ minimum: 0 }))),
      max_dialer: T.Optional(Nullable(T.Integer({ minimum: 0 }))),
      rate_limit_requests: T.Optional(Nullable(T.Integer({ minimum: 1 }))),
      default_cid_number: T.Optional(
        Nullable(T.String({ minLength: 1, maxLength: 32, description: "Default outbound caller-ID: any typed form (+1 (415) 555-0123, 0044…) is stored as E.164 without +." })),
      ),
      // Where a number's call goes when its schedule leaves it no destination (closed, no closed slot).
      did_default_dest_kind: T.Optional(Nullable(destKindSchema())),
      did_default_dest_id: T.Optional(Nullable(T.String({ minLength: 1, maxLength: 64, description: "Id of the target (null for hangup)." }))),
    },
    { additionalProperties: false, minProperties: 1 },
  );
  export type AdminPatch = Static<typeof AdminPatch>;
}
