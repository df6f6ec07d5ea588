/** TypeBox models of queues, their members and in-queue options: validation, types and OpenAPI from one place. */
import { Type as T, type Static, type TSchema } from "@sinclair/typebox";
import { DtmfKey, Flag, IdOf, Language, Name, Nullable, Positive } from "../validation/fields.ts";
import { routeTargetFields, routeTargetReplyFields } from "../routing/route-target.ts";
import { QUEUE_SLOTS } from "./queues.schema.ts";

/** A route-target slot of a queue (its column prefix). */
export type QueueSlot = (typeof QUEUE_SLOTS)[number];

const SLOT_DESCRIPTIONS: Record<QueueSlot, string> = {
  timeout_dest: "where a caller goes after max_wait_sec (unset: the call is hung up)",
  abandon_dest: "where a caller goes who gives up by pressing the exit key",
  no_agents_dest: "where a caller goes when no agent is logged in",
  queue_full_dest: "where a caller goes when max_queued callers already wait (needs max_queued)",
  ewt_dest: "where a caller goes when the estimated wait at join exceeds ewt_threshold_sec (needs ewt_threshold_sec)",
  closed_dest: "where a call goes outside the schedule's hours (needs schedule_id)",
  holiday_dest: "where a call goes on the schedule's holidays (needs schedule_id)",
};

function describeSlot(fields: Record<string, TSchema>, slot: QueueSlot): Record<string, TSchema> {
  const out: Record<string, TSchema> = {};
  for (const [name, schema] of Object.entries(fields)) {
    const base = typeof schema.description === "string" ? ` ${schema.description}` : "";
    out[name] = { ...schema, description: `Route target ${SLOT_DESCRIPTIONS[slot]}.${base}` } as TSchema;
  }
  return out;
}

const slotRequestFields = Object.assign({}, ...QUEUE_SLOTS.map((s) => describeSlot(routeTargetFields(s), s))) as Record<string, TSchema>;
const slotReplyFields = Object.assign({}, ...QUEUE_SLOTS.map((s) => describeSlot(routeTargetReplyFields(s), s))) as Record<string, TSchema>;

/** Request fields of route-target slots: `routeTargetFields` builds them untyped, so their type is spelled here. */
type SlotInput<P extends string> = { [K in `${P}_${"kind" | "id"}`]?: string | null };
/** Reply fields of route-target slots: always present, null when unset. */
type SlotReply<P extends string> = { [K in `${P}_${"kind" | "id"}`]: string | null };

export namespace QueueModel {
  // The same values as the CHECK constraints in queues.schema.ts (queues.test.ts compares them).
  export const Strategy = T.Union(
    [
      T.Literal("ring_all"),
      T.Literal("longest_idle"),
      T.Literal("round_robin"),
      T.Literal("top_down"),
      T.Literal("fewest_calls"),
      T.Literal("random"),
      T.Literal("sequential"),
    ],
    { description: "How a caller is offered to agents; default longest_idle." },
  );
  export const MohMode = T.Union([T.Literal("stream"), T.Literal("file")], {
    description: "stream: the account's hold-music stream; file: the media file moh_media_id. Default stream.",
  });
  export const MemberMode = T.Union([T.Literal("static"), T.Literal("dynamic"), T.Literal("mandatory"), T.Literal("supervisor_managed")], {
    description: "How the agent came to be a member; default static.",
  });
  export const OptionAction = T.Union([T.Literal("route"), T.Literal("webhook"), T.Literal("deflect"), T.Literal("hangup")], {
    description:
      "route: send the caller to the destination (with stay_in_queue 1 the caller keeps the place in line); webhook: call webhook_url; deflect: leave the queue for the destination for good; hangup: end the call.",
  });

  /** The writable settings of a queue; create and update take the same fields (name required on create). */
  const settings = {
    strategy: T.Optional(Strategy),
    agent_ring_timeout_sec: T.Optional(T.Integer({ minimum: 5, maximum: 300, description: "Seconds an offer rings an agent; 5–300, default 20." })),
    max_wait_sec: T.Optional(Nullable(T.Integer({ minimum: 10, maximum: 86400, description: "Longest a caller waits, 10–86400 s; null (default) = no limit. Then timeout_dest, or hang-up when unset." }))),
    wrap_up_sec: T.Optional(T.Integer({ minimum: 0, maximum: 3600, description: "After-call work before the next offer; 0–3600, default 0." })),
    max_no_answer: T.Optional(T.Integer({ minimum: 0, maximum: 100, description: "Missed offers in a row that pause the agent; 0–100, default 0 = never." })),
    announce_position: T.Optional(Flag("Tell waiting callers their position; default 0.")),
    announce_first_sec: T.Optional(T.Integer({ minimum: 0, maximum: 3600, description: "Seconds of waiting before the first announcement; 0–3600, default 30." })),
    announce_interval_sec: T.Optional(T.Integer({ minimum: 0, maximum: 3600, description: "Seconds between announcements; 0–3600, default 60; 0 = only once." })),
    moh_mode: T.Optional(MohMode),
    moh_media_id: T.Optional(Nullable(IdOf("med", "Hold music (a media file of this account); required when moh_mode is file."))),
    language: T.Optional(Nullable(Language("Announcement language (BCP 47); null (default) = the account's."))),
    max_queued: T.Optional(Nullable(Positive({ maximum: 100000, description: "Most callers waiting at once; null (default) = no cap." }))),
    ewt_threshold_sec: T.Optional(Nullable(Positive({ maximum: 86400, description: "Estimated wait at join above which a caller goes to ewt_dest; null = off." }))),
    ewt_aht_sec: T.Optional(Nullable(Positive({ maximum: 86400, description: "Assumed average handle time (s) for the estimate; null = learned from calls." }))),
    schedule_id: T.Optional(Nullable(IdOf("sch", "Business hours (a schedule of this account); null = always open."))),
    ...slotRequestFields,
  };

  /** POST /v1/queues. */
  export const Create = T.Object({ name: Name(), ...settings }, { additionalProperties: false });
  export type Create = Static<typeof Create> & SlotInput<QueueSlot>;

  /** PATCH (or POST) /v1/queues/{id}: only sent fields change. */
  export const Update = T.Object({ name: T.Optional(Name()), ...settings }, { additionalProperties: false, minProperties: 1 });
  export type Update = Static<typeof Update> & SlotInput<QueueSlot>;

  const queueFields = {
    id: T.String({ description: "q_… id." }),
    name: T.String({ description: "Unique in the account." }),
    strategy: Strategy,
    agent_ring_timeout_sec: T.Integer(),
    max_wait_sec: Nullable(T.Integer({ description: "null = no limit." })),
    wrap_up_sec: T.Integer(),
    max_no_answer: T.Integer({ description: "0 = off." }),
    announce_position: Flag(),
    announce_first_sec: T.Integer(),
    announce_interval_sec: T.Integer({ description: "0 = only once." }),
    moh_mode: MohMode,
    moh_media_id: Nullable(T.String()),
    language: Nullable(T.String({ description: "null = the account's language." })),
    max_queued: Nullable(T.Integer({ description: "null = no cap." })),
    ewt_threshold_sec: Nullable(T.Integer()),
    ewt_aht_sec: Nullable(T.Integer()),
    schedule_id: Nullable(T.String()),
    ...slotReplyFields,
    created_at: T.Integer({ description: "Epoch seconds." }),
    updated_at: T.Integer({ description: "Epoch seconds." }),
  };

  /** A queue's settings as the API shows them. */
  export const Queue = T.Object(queueFields);
  export type Queue = Static<typeof Queue> & SlotReply<QueueSlot>;

  /** An agent of a queue. */
  export const Member = T.Object({
    user_id: T.String({ description: "us_… id of an agent (is_agent 1)." }),
    tier_level: T.Integer({ description: "1–10; tier 1 is offered calls first." }),
    position: T.Integer({ description: "Order inside the tier (top_down, sequential)." }),
    delay_sec: T.Integer({ description: "Seconds the agent's ring starts after the offer (ring_all)." }),
    mode: MemberMode,
    created_at: T.Integer({ description: "Epoch seconds." }),
  });
  export type Member = Static<typeof Member>;

  /** POST /v1/queues/{id}/members: adds the user, or updates the sent fields of an existing member. */
  export const MemberUpsert = T.Object(
    {
      user_id: IdOf("us", "The agent (a user of this account with is_agent 1)."),
      tier_level: T.Optional(T.Integer({ minimum: 1, maximum: 10, description: "1–10, default 1." })),
      position: T.Optional(T.Integer({ minimum: 0, maximum: 10000, description: "0–10000, default 0." })),
      delay_sec: T.Optional(T.Integer({ minimum: 0, maximum: 600, description: "0–600, default 0." })),
      mode: T.Optional(MemberMode),
    },
    { additionalProperties: false },
  );
  export type MemberUpsert = Static<typeof MemberUpsert>;

  /** A DTMF option of a queue. The webhook signing secret is write-only. */
  export const Option = T.Object({
    digit: T.String({ description: "0-9, * or #." }),
    action: OptionAction,
    dest_kind: Nullable(T.String()),
    dest_id: Nullable(T.String()),
    webhook_url: Nullable(T.String()),
    has_webhook_secret: Flag("1 when a signing secret is set (the secret itself is never shown)."),
    stay_in_queue: Flag("1: the caller keeps the place in line."),
    prompt_media_id: Nullable(T.String()),
    label: Nullable(T.String()),
  });
  export type Option = Static<typeof Option>;

  /** POST /v1/queues/{id}/options: sets the option of one key, replacing any option it had. */
  export const OptionUpsert = T.Object(
    {
      digit: DtmfKey(),
      action: OptionAction,
      ...routeTargetFields("dest"),
      webhook_url: T.Optional(Nullable(T.String({ minLength: 9, maxLength: 2000, pattern: "^https://\\S+$", description: "https:// URL called when the key is pressed; required for action webhook." }))),
      webhook_secret: T.Optional(
        Nullable(
          T.String({
            minLength: 16,
            maxLength: 256,
            description: "HMAC signing secret for webhook_url (16–256 characters). Write-only. Omitted: a webhook option keeps its secret; null: removed.",
          }),
        ),
      ),
      stay_in_queue: T.Optional(Flag("1: the caller keeps the place in line (route, webhook); default 0.")),
      prompt_media_id: T.Optional(Nullable(IdOf("med", "Prompt naming the option (a media file of this account)."))),
      label: T.Optional(Nullable(T.String({ minLength: 1, maxLength: 100, description: "A name for people (e.g. 'Request a callback')." }))),
    },
    { additionalProperties: false },
  );
  export type OptionUpsert = Static<typeof OptionUpsert> & SlotInput<"dest">;

  /** Rolling queue statistics since `since`. */
  export const Kpis = T.Object({
    since: T.Integer({ description: "Start of the window (epoch seconds)." }),
    calls_offered: T.Integer({ description: "Calls that entered the queue." }),
    calls_answered: T.Integer({ description: "Calls an agent answered." }),
    calls_abandoned: T.Integer({ description: "Callers who hung up while waiting." }),
    avg_wait_sec: Nullable(T.Number({ description: "Mean wait of answered calls; null without answered calls." })),
    service_level_pct: Nullable(T.Number({ description: "Percent of offered calls answered within the service-level target; null without calls." })),
  });
  export type Kpis = Static<typeof Kpis>;

  /** A queue as listed: its settings and its KPIs. */
  export const QueueWithKpis = T.Object({ ...queueFields, kpis: Kpis });
  export type QueueWithKpis = Queue & { kpis: Kpis };

  /** A queue with its members (by tier, then position) and its options (by key). */
  export const QueueDetail = T.Object({ ...queueFields, members: T.Array(Member), options: T.Array(Option) });
  export type QueueDetail = Queue & { members: Member[]; options: Option[] };
}
