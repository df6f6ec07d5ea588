/** TypeBox models of call records, traces, usage, balance, the live snapshot and CAC counters. */
import { Type as T, type Static, type TLiteral } from "@sinclair/typebox";
import { t } from "elysia";
import { EpochSec, Flag, Nullable } from "../validation/fields.ts";
import { EpochSecQuery, PageQuery } from "../../http/page-query.ts";
import { PresenceModel } from "../presence/presence.model.ts";
import { QueueModel } from "../queues/queues.model.ts";
import { CAC_LEVELS } from "../routing/route-types.ts";

const Direction = T.Union([T.Literal("inbound"), T.Literal("outbound"), T.Literal("internal")]);
/** Every status a call record can have. */
export const CALL_STATUSES = ["routed", "ringing", "answered", "completed", "busy", "no_answer", "canceled", "failed", "rejected"] as const;
export type CallStatus = (typeof CALL_STATUSES)[number];

const Status = T.Union(
  [
    T.Literal("routed"),
    T.Literal("ringing"),
    T.Literal("answered"),
    T.Literal("completed"),
    T.Literal("busy"),
    T.Literal("no_answer"),
    T.Literal("canceled"),
    T.Literal("failed"),
    T.Literal("rejected"),
  ],
  {
    description:
      "routed (admitted, not yet ringing), ringing, answered (up now), then one final status: completed (answered and ended), busy, no_answer, canceled, failed; rejected (refused at routing or by CAC).",
  },
);

/** The TypeBox literals of a tuple of texts, as a tuple (what T.Union needs to keep each one). */
type LiteralsOf<V extends readonly string[]> = { -readonly [K in keyof V]: TLiteral<V[K] & string> };

export namespace CallModel {
  // One literal per level of CAC_LEVELS, typed as the tuple it is (a mapped array would type as one wide literal).
  export const CacLevel = T.Union(CAC_LEVELS.map((level) => T.Literal(level)) as unknown as LiteralsOf<typeof CAC_LEVELS>);

  /** One call record (CDR). */
  export const Call = T.Object(
    {
      id: T.String({ description: "call_… id (the callId of call.* events)." }),
      sip_call_id: T.String({ description: "The SIP Call-ID of the caller's leg." }),
      direction: Direction,
      from: T.String({ description: "Caller: number (E.164 without +) or SIP user; empty when anonymous." }),
      to: T.String({ description: "Called number or extension." }),
      status: Status,
      answered: Flag("1 when the call was answered."),
      started_at: EpochSec("Epoch seconds when it was routed."),
      answered_at: Nullable(EpochSec("Epoch seconds when answered.")),
      ended_at: Nullable(EpochSec("Epoch seconds when it ended (null while up).")),
      billsec: T.Integer({ minimum: 0, description: "Answered seconds, each started second counted (0 when unanswered)." }),
      duration_sec: Nullable(T.Integer({ minimum: 0, description: "Seconds from routing to the end (null while up)." })),
      hangup_cause: Nullable(T.String({ description: "NORMAL_CLEARING, USER_BUSY, NO_ANSWER, ORIGINATOR_CANCEL, CALL_REJECTED, …" })),
      sip_code: Nullable(T.Integer({ description: "SIP code of a reject or of the dialog's end." })),
      cost_micro: T.Integer({ minimum: 0, description: "Cost in micro-units of currency (1,000,000 = 1 unit)." }),
      currency: Nullable(T.String({ description: "ISO 4217 of the rate plan that priced the call; null without a plan." })),
      rate_plan_id: Nullable(T.String()),
      user_id: Nullable(T.String({ description: "The calling user for a call from a device; for a carrier's or trunk's call, the user it was routed to." })),
      device_id: Nullable(T.String()),
      number_id: Nullable(T.String()),
      trunk_id: Nullable(T.String()),
      queue_id: Nullable(T.String()),
      agent_id: Nullable(T.String({ description: "us_… of the agent who answered." })),
      flow_id: Nullable(T.String()),
      recording_ids: T.Array(T.String(), { description: "rec_… of the call's recordings." }),
      legs: T.Array(T.Record(T.String(), T.Unknown()), { description: "The legs as the edge last reported them with the confirmed and terminated events (role caller/callee, uri, device_id, user_id, state); empty while ringing." }),
    },
    { additionalProperties: false },
  );
  export type Call = Static<typeof Call>;

  /** GET /v1/calls query. */
  export const ListQuery = t.Object(
    {
      ...PageQuery.properties,
      since: t.Optional(EpochSecQuery("Epoch seconds; calls started at or after. Default 0.")),
      until: t.Optional(EpochSecQuery("Epoch seconds; calls started before (after since: at least 1). Default: no end.", 1)),
      direction: t.Optional(t.Union([t.Literal("inbound"), t.Literal("outbound"), t.Literal("internal")])),
      user_id: t.Optional(t.String({ minLength: 1, maxLength: 64 })),
      number_id: t.Optional(t.String({ minLength: 1, maxLength: 64 })),
      format: t.Optional(t.Union([t.Literal("json"), t.Literal("csv")], { description: "csv streams every call of the range as text/csv (limit and cursor are refused: narrow with since and until)." })),
    },
    { additionalProperties: false },
  );
  export type ListQuery = Static<typeof ListQuery>;

  /** One trace step. */
  export const TraceStep = T.Object(
    {
      at: T.Integer({ description: "Epoch ms." }),
      step: T.String({ description: "classify, number, schedule, forward, …, cac, reject, dialog, flow nodes…" }),
      result: T.String(),
      data: Nullable(T.Record(T.String(), T.Unknown())),
    },
    { additionalProperties: false },
  );

  export const Trace = T.Object(
    { call_id: T.String({ description: "call_…" }), sip_call_id: T.String(), account_id: T.String(), steps: T.Array(TraceStep) },
    { additionalProperties: false },
  );
  export type Trace = Static<typeof Trace>;

  const Totals = {
    count: T.Integer({ minimum: 0, description: "Calls admitted (rejects are not counted)." }),
    answered: T.Integer({ minimum: 0, description: "Of those, answered." }),
    billsec: T.Integer({ minimum: 0, description: "Sum of billsec." }),
    minutes: T.Number({ minimum: 0, description: "billsec / 60, rounded to 2 decimals (rating may bill more: see the rate plan's increments)." }),
    spend_micro: T.Integer({ minimum: 0, description: "Sum of the cost of the calls priced in `currency`, micro-units of it." }),
  };

  const SpendByCurrency = (what: string) =>
    T.Record(T.String({ pattern: "^[A-Z]{3}$" }), T.Integer({ minimum: 0 }), {
      description: `${what}, per currency the calls were priced in (a plan whose currency changed leaves calls in the old one): never added across currencies.`,
    });

  export const UsageQuery = t.Object(
    {
      since: t.Optional(EpochSecQuery("Epoch seconds; default the start of the month (in the account's timezone) that until falls in: this month without until.")),
      until: t.Optional(EpochSecQuery("Epoch seconds (exclusive; after since: at least 1); default now.", 1)),
      daily: t.Optional(t.Union([t.Literal("0"), t.Literal("1")], { description: "1 adds a series per calendar day in the account's timezone." })),
    },
    { additionalProperties: false },
  );

  export const Usage = T.Object(
    {
      since: EpochSec("Start of the range."),
      until: EpochSec("End of the range (exclusive)."),
      timezone: T.String({ description: "The account's timezone (days of the daily series)." }),
      currency: Nullable(T.String({ description: "Currency of the default rate plan (without one: the currency the range's calls were priced in, if only one)." })),
      ...Totals,
      spend_by_currency: SpendByCurrency("Spend of the range"),
      daily: T.Optional(T.Array(T.Object({ day: T.String({ description: "YYYY-MM-DD." }), ...Totals }, { additionalProperties: false }))),
    },
    { additionalProperties: false },
  );
  export type Usage = Static<typeof Usage>;

  export const Balance = T.Object(
    {
      status: T.Union([T.Literal("active"), T.Literal("suspended"), T.Literal("closed")]),
      rate_plan: Nullable(T.Object({ id: T.String(), name: T.String(), currency: T.String() }, { additionalProperties: false })),
      currency: Nullable(T.String()),
      month_start: EpochSec("Start of the current month in the account's timezone."),
      month_to_date_spend_micro: T.Integer({ minimum: 0, description: "Month-to-date cost of the calls priced in `currency`." }),
      month_to_date_spend_by_currency: SpendByCurrency("Month-to-date spend"),
      month_to_date_calls: T.Integer({ minimum: 0 }),
    },
    { additionalProperties: false },
  );
  export type Balance = Static<typeof Balance>;

  /** One CAC counter. */
  export const CacCounter = T.Object(
    {
      level: CacLevel,
      id: T.String({ description: "The account id for account_* levels, else num_/trk_/us_." }),
      limit: T.Integer({ description: "The ceiling." }),
      soft: T.Optional(T.Literal(true, { description: "A soft call limit's counter: it refuses no call, so active may pass limit." })),
      active: T.Integer({ minimum: 0 }),
      call_ids: T.Array(T.String(), { description: "call_… holding the slot." }),
    },
    { additionalProperties: false },
  );

  /** An active call in live snapshots. */
  export const ActiveCall = T.Object(
    {
      id: T.String(),
      direction: Direction,
      from: T.String(),
      to: T.String(),
      status: Status,
      started_at: EpochSec("When it was routed."),
      answered_at: Nullable(EpochSec("When answered.")),
      user_id: Nullable(T.String()),
      queue_id: Nullable(T.String()),
      agent_id: Nullable(T.String()),
    },
    { additionalProperties: false },
  );

  export const Live = T.Object(
    {
      active_calls: T.Integer({ minimum: 0 }),
      calls: T.Array(ActiveCall),
      cac: T.Array(CacCounter),
      ceilings: T.Object({ max_in: Nullable(T.Integer()), max_out: Nullable(T.Integer()), max_dialer: Nullable(T.Integer()) }, { additionalProperties: false }),
    },
    { additionalProperties: false },
  );

  /** GET /v1/live: the call snapshot (also GET /cac's) with the agents and the queue configs. */
  export const LiveView = T.Object(
    {
      ...Live.properties,
      agents: T.Array(PresenceModel.RosterUser, { description: "The account's agents (is_agent 1), by extension." }),
      queues: T.Array(QueueModel.Queue, { description: "Queue configs, oldest first." }),
    },
    { additionalProperties: false },
  );

  export const ResetResult = T.Object(
    {
      counters: T.Integer({ minimum: 0, description: "Counters that held calls and were cleared." }),
      calls: T.Integer({ minimum: 0, description: "Call places freed." }),
    },
    { additionalProperties: false },
  );

  /** Control host: POST /cac/reset. */
  export const ResetBody = T.Object({ accountId: T.String({ minLength: 1, maxLength: 64 }) }, { additionalProperties: false });
  export const CacQuery = t.Object({ accountId: t.String({ minLength: 1, maxLength: 64 }) }, { additionalProperties: false });
}
