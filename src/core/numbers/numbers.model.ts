/** TypeBox models of numbers (inbound DIDs): request validation, TypeScript types and OpenAPI from one place. */
import { Type as T, type Static } from "@sinclair/typebox";
import { destKindSchema, routeTargetFields, routeTargetReplyFields, type DestKind } from "../routing/route-target.ts";
import { Flag, IdOf, Name, NonNegative, Nullable, PhoneInput } from "../validation/fields.ts";
import type { DestXformValue, RoutedInput } from "./routed-fields.ts";
import { FAX_MODES, NUMBER_STATUSES } from "./numbers.schema.ts";

export namespace NumberModel {
  // Literal tuples (not a mapped array) so Elysia infers the union, not never.
  export const Status = T.Union(
    [T.Literal(NUMBER_STATUSES[0]), T.Literal(NUMBER_STATUSES[1]), T.Literal(NUMBER_STATUSES[2])],
    { description: "active: calls are routed. disabled: calls are refused. virtual: owned and routable, but not delivered by a carrier (caller ID, tests)." },
  );
  export type Status = Static<typeof Status>;
  export const FaxMode = T.Union(
    [T.Literal(FAX_MODES[0]), T.Literal(FAX_MODES[1]), T.Literal(FAX_MODES[2])],
    { description: "voice: no fax handling. t38: re-INVITE to T.38 on a fax tone. passthrough: G.711 fax pass-through." },
  );
  export type FaxMode = Static<typeof FaxMode>;

  /** The kinds a number's slots may route to (feature codes are for extensions only). */
  export const DestKind = T.Unsafe<Exclude<DestKind, "feature">>(destKindSchema(false));

  /** A number as the API shows it: every field, null when unset. */
  export const Number = T.Object(
    {
      id: T.String({ description: "num_… id." }),
      e164: T.String({ description: "E.164 without the leading +; unique across the platform." }),
      status: Status,
      ...routeTargetReplyFields("dest", { xform: true }),
      max_channels: Nullable(T.Integer({ description: "Concurrent calls on this number; null = unlimited, 0 = none." })),
      fax_mode: FaxMode,
      allow_anonymous: Flag("1: calls without caller ID are accepted; 0: they are refused."),
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
  export type Number = Static<typeof Number> & {
    dest_kind: string | null;
    dest_id: string | null;
    dest_xform: DestXformValue | null;
    closed_dest_kind: string | null;
    closed_dest_id: string | null;
    holiday_dest_kind: string | null;
    holiday_dest_id: string | null;
  };

  // Everything but e164, which create requires and update does not.
  const writable = {
    status: T.Optional(Status),
    ...routeTargetFields("dest", { xform: true }),
    max_channels: T.Optional(Nullable(NonNegative({ description: "Concurrent calls on this number; null = unlimited, 0 = none." }))),
    fax_mode: T.Optional(FaxMode),
    allow_anonymous: T.Optional(Flag("1 (default): calls without caller ID are accepted; 0: they are refused.")),
    schedule_id: T.Optional(Nullable(IdOf("sch", "Business-hours schedule of this account; null = always open."))),
    ...routeTargetFields("closed_dest"),
    ...routeTargetFields("holiday_dest"),
    label: T.Optional(Nullable(Name(100))),
  };

  /** POST /v1/numbers. A destination (dest_kind, and dest_id unless hangup) is required. */
  export const Create = T.Object(
    {
      e164: PhoneInput("The number, as people type it: +1 (415) 555-0123 is stored as 14155550123. Unique across the platform."),
      ...writable,
    },
    { additionalProperties: false },
  );
  export type Create = Static<typeof Create> & RoutedInput;

  /** PATCH /v1/numbers/{id}: only sent fields change; null clears a nullable field. */
  export const Patch = T.Object(
    {
      e164: T.Optional(PhoneInput("A new number for this DID, as people type it; unique across the platform.")),
      ...writable,
    },
    { additionalProperties: false, minProperties: 1 },
  );
  export type Patch = Static<typeof Patch> & RoutedInput;

  /** Filters of GET /v1/numbers; each one given narrows the list. */
  export interface Filters {
    status?: Status;
    dest_kind?: string;
    dest_id?: string;
    /** Digits the e164 starts with; a leading + is ignored. */
    q?: string;
    schedule_id?: string;
  }
}
