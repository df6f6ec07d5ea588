/** TypeBox models of extensions: request validation, TypeScript types and OpenAPI from one place. */
import { Type as T, type Static } from "@sinclair/typebox";
import { destKindSchema, routeTargetFields, routeTargetReplyFields, type DestKind } from "../routing/route-target.ts";
import { Digits, IdOf, Name, Nullable } from "../validation/fields.ts";
import type { DestXformValue, RoutedInput } from "../numbers/routed-fields.ts";

export namespace ExtensionModel {
  /** The kinds an extension's main slot may route to: every routable kind plus `feature`. */
  export const DestKind = T.Unsafe<DestKind>(destKindSchema(true));

  /** An extension as the API shows it: every field, null when unset. */
  export const Extension = T.Object(
    {
      id: T.String({ description: "ext_… id." }),
      digits: T.String({ description: "What is dialled: 1–16 of 0-9, * and #; unique in the account." }),
      ...routeTargetReplyFields("dest", { xform: true }),
      schedule_id: Nullable(T.String({ description: "Business-hours schedule (sch_…); null = always open." })),
      ...routeTargetReplyFields("closed_dest"),
      ...routeTargetReplyFields("holiday_dest"),
      label: Nullable(T.String({ description: "Free text for people." })),
      created_at: T.Integer({ description: "Epoch seconds." }),
      updated_at: T.Integer({ description: "Epoch seconds." }),
    },
    { additionalProperties: false },
  );
  // routeTargetReplyFields is untyped (a record of schemas), so its fields are spelled out for TypeScript.
  export type Extension = Static<typeof Extension> & {
    dest_kind: string | null;
    dest_id: string | null;
    dest_xform: DestXformValue | null;
    closed_dest_kind: string | null;
    closed_dest_id: string | null;
    holiday_dest_kind: string | null;
    holiday_dest_id: string | null;
  };

  // Everything but digits, which create requires and update does not.
  const writable = {
    ...routeTargetFields("dest", { allowFeature: true, xform: true }),
    schedule_id: T.Optional(Nullable(IdOf("sch", "Business-hours schedule of this account; null = always open."))),
    ...routeTargetFields("closed_dest"),
    ...routeTargetFields("holiday_dest"),
    label: T.Optional(Nullable(Name(100))),
  };

  const DIGITS_DESCRIPTION = "What is dialled: 1–16 of 0-9, * and #; unique in the account.";

  /** POST /v1/extensions. A destination (dest_kind, and dest_id unless hangup) is required. */
  export const Create = T.Object({ digits: Digits({ maxLength: 16, description: DIGITS_DESCRIPTION }), ...writable }, { additionalProperties: false });
  export type Create = Static<typeof Create> & RoutedInput;

  /** PATCH /v1/extensions/{id}: only sent fields change; null clears a nullable field. */
  export const Patch = T.Object(
    { digits: T.Optional(Digits({ maxLength: 16, description: DIGITS_DESCRIPTION })), ...writable },
    { additionalProperties: false, minProperties: 1 },
  );
  export type Patch = Static<typeof Patch> & RoutedInput;

  /** Filters of GET /v1/extensions; each one given narrows the list. */
  export interface Filters {
    /** Digits the extension starts with. */
    q?: string;
    dest_kind?: string;
    dest_id?: string;
    schedule_id?: string;
  }
}
