/** TypeBox models of ring groups and their members: request validation, TypeScript types and OpenAPI from one place. */
import { Type as T, type Static } from "@sinclair/typebox";
import { routeTargetFields, routeTargetReplyFields } from "../routing/route-target.ts";
import { IdOf, Name, Nullable } from "../validation/fields.ts";

/** Most members a ring group may hold; past this a queue is the better tool. */
export const MAX_RING_GROUP_MEMBERS = 200;

export namespace RingGroupModel {
  export const Strategy = T.Union([T.Literal("ring_all"), T.Literal("sequential"), T.Literal("round_robin")], {
    description: "ring_all: every member at once (after its delay_sec). sequential: one after another in position order. round_robin: one at a time, starting after the member who rang first last time.",
  });

  const RingTimeout = (description: string) => T.Integer({ minimum: 5, maximum: 600, description });

  /** One member as sent: exactly one of user_id and device_id. */
  export const MemberInput = T.Object(
    {
      user_id: T.Optional(Nullable(IdOf("us", "A user (us_…) of this account: all their devices ring. Exactly one of user_id and device_id."))),
      device_id: T.Optional(Nullable(IdOf("dev", "One device (dev_…) of this account. Exactly one of user_id and device_id."))),
      delay_sec: T.Optional(T.Integer({ minimum: 0, maximum: 300, description: "Seconds after the group starts before this member rings, 0–300; default 0." })),
      timeout_sec: T.Optional(Nullable(RingTimeout("Seconds this member rings, 5–600; null (default) = the group's ring_timeout_sec."))),
    },
    { additionalProperties: false },
  );
  export type MemberInput = Static<typeof MemberInput>;

  const Members = T.Array(MemberInput, {
    maxItems: MAX_RING_GROUP_MEMBERS,
    description: `The members in ring order (up to ${MAX_RING_GROUP_MEMBERS}); the same user or device may appear once. Replaces the whole set on every write that includes it.`,
  });

  /** A member as the API shows it. */
  export const Member = T.Object({
    position: T.Integer({ description: "0-based place in ring order, as sent." }),
    user_id: Nullable(T.String()),
    device_id: Nullable(T.String()),
    delay_sec: T.Integer(),
    timeout_sec: Nullable(T.Integer({ description: "null = the group's ring_timeout_sec." })),
  });
  export type Member = Static<typeof Member>;

  const ringGroupFields = {
    id: T.String({ description: "rg_… id." }),
    name: T.String(),
    strategy: Strategy,
    ring_timeout_sec: T.Integer({ description: "Seconds the group rings before the call exits." }),
    moh_media_id: Nullable(T.String({ description: "Music on hold (med_…) while ringing; null = ringback tone." })),
    ...routeTargetReplyFields("exit_dest"),
    schedule_id: Nullable(T.String({ description: "Business hours (sch_…); null = always open." })),
    ...routeTargetReplyFields("closed_dest"),
    ...routeTargetReplyFields("holiday_dest"),
    created_at: T.Integer({ description: "Epoch seconds." }),
    updated_at: T.Integer({ description: "Epoch seconds." }),
  };

  /** A ring group with its members (GET one, and every write's reply). */
  export const RingGroup = T.Object({ ...ringGroupFields, members: T.Array(Member) });
  export type RingGroup = Static<typeof RingGroup>;

  /** A ring group as listed: without its members, with their count. */
  export const RingGroupSummary = T.Object({ ...ringGroupFields, member_count: T.Integer({ description: "How many members it has; GET the group for them." }) });
  export type RingGroupSummary = Static<typeof RingGroupSummary>;

  const writableFields = {
    strategy: T.Optional(Strategy),
    ring_timeout_sec: T.Optional(RingTimeout("Seconds the group rings before the call goes to exit_dest, 5–600; default 20.")),
    moh_media_id: T.Optional(Nullable(IdOf("med", "Music on hold (a media file of this account) while ringing; null = ringback tone."))),
    ...routeTargetFields("exit_dest"),
    schedule_id: T.Optional(Nullable(IdOf("sch", "Business hours (a schedule of this account); null = always open."))),
    ...routeTargetFields("closed_dest"),
    ...routeTargetFields("holiday_dest"),
    members: T.Optional(Members),
  };

  /** POST /v1/ring-groups. */
  export const Create = T.Object({ name: Name(), ...writableFields }, { additionalProperties: false });
  export type Create = Static<typeof Create> & RouteTargetInput;

  /** PATCH (or POST) /v1/ring-groups/{id}: only sent fields change; `members`, when sent, replaces the set. */
  export const Patch = T.Object({ name: T.Optional(Name()), ...writableFields }, { additionalProperties: false, minProperties: 1 });
  export type Patch = Static<typeof Patch> & RouteTargetInput;

  /** The route-target slots as typed values (routeTargetFields builds them from a prefix, so TypeScript cannot see their names). */
  export interface RouteTargetInput {
    exit_dest_kind?: string | null;
    exit_dest_id?: string | null;
    closed_dest_kind?: string | null;
    closed_dest_id?: string | null;
    holiday_dest_kind?: string | null;
    holiday_dest_id?: string | null;
  }
}
