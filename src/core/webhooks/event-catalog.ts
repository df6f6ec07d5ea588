/**
 * The catalog of events a webhook can subscribe to (SPEC.md section 6): each event's name, what
 * fires it, the TypeBox schema of its `data` (exported so delivery can check what it sends), and a
 * realistic sample delivery body.
 */
import { Type as T, type Static, type TObject } from "@sinclair/typebox";
import { Flag, Nullable } from "../validation/fields.ts";

const EpochMs = (description: string) => T.Integer({ minimum: 0, description });

const Direction = T.Union([T.Literal("inbound"), T.Literal("outbound"), T.Literal("internal")], { description: "Which way the call goes." });

/** `data` of each event. */
export const EventData = {
  "call.started": T.Object(
    {
      callId: T.String({ description: "call_… id." }),
      direction: Direction,
      from: T.String({ description: "Caller number (E.164 without +) or SIP user." }),
      to: T.String({ description: "Called number or extension." }),
      number_id: Nullable(T.String({ description: "num_… the call came in on (inbound)." })),
      ts: EpochMs("When the call was routed."),
    },
    { additionalProperties: false },
  ),
  "call.answered": T.Object(
    {
      callId: T.String(),
      direction: Direction,
      queue_id: Nullable(T.String({ description: "q_… when answered from a queue." })),
      agent_id: Nullable(T.String({ description: "us_… of the answering agent, when one answered." })),
      wait_sec: T.Integer({ minimum: 0, description: "Seconds from start to answer." }),
      ts: EpochMs("When it was answered."),
    },
    { additionalProperties: false },
  ),
  "call.ended": T.Object(
    {
      callId: T.String(),
      direction: Direction,
      answered: Flag("1 when the call was answered."),
      billsec: T.Integer({ minimum: 0, description: "Seconds from answer to hangup (0 when unanswered)." }),
      hangup_cause: T.String({ description: "SIP/Q.850 style cause, e.g. NORMAL_CLEARING, NO_ANSWER, USER_BUSY." }),
      queue_id: Nullable(T.String()),
      agent_id: Nullable(T.String()),
      ts: EpochMs("When the call ended."),
    },
    { additionalProperties: false },
  ),
  "agent.state": T.Object(
    {
      user_id: T.String({ description: "us_… of the agent." }),
      state: T.Union([T.Literal("logged_out"), T.Literal("ready"), T.Literal("paused"), T.Literal("on_call"), T.Literal("wrap_up")]),
      previous_state: T.Union([T.Literal("logged_out"), T.Literal("ready"), T.Literal("paused"), T.Literal("on_call"), T.Literal("wrap_up")]),
      reason: Nullable(T.String({ description: "Pause reason, when paused." })),
      ts: EpochMs("When the state changed."),
    },
    { additionalProperties: false },
  ),
  "message.received": T.Object(
    {
      message_id: T.String({ description: "msg_… id." }),
      conversation_id: T.String({ description: "cv_… id." }),
      channel_id: T.String({ description: "ch_… id." }),
      from: T.String(),
      to: T.String(),
      body: T.String(),
      ts: EpochMs("When it arrived."),
    },
    { additionalProperties: false },
  ),
  "message.status": T.Object(
    {
      message_id: T.String(),
      conversation_id: T.String(),
      status: T.Union([T.Literal("queued"), T.Literal("sent"), T.Literal("delivered"), T.Literal("read"), T.Literal("failed")]),
      error: Nullable(T.String({ description: "Why it failed, when failed." })),
      ts: EpochMs("When the status changed."),
    },
    { additionalProperties: false },
  ),
  "recording.available": T.Object(
    {
      recording_id: T.String({ description: "rec_… id." }),
      callId: Nullable(T.String()),
      duration_sec: T.Integer({ minimum: 0 }),
      content_type: T.String({ description: "e.g. audio/mpeg." }),
      ts: EpochMs("When processing finished."),
    },
    { additionalProperties: false },
  ),
  "fax.received": T.Object(
    {
      fax_id: T.String({ description: "fax_… id." }),
      from: T.String(),
      to: T.String(),
      pages: T.Integer({ minimum: 0 }),
      ts: EpochMs("When it was received."),
    },
    { additionalProperties: false },
  ),
  "fax.sent": T.Object(
    {
      fax_id: T.String(),
      to: T.String(),
      pages: T.Integer({ minimum: 0 }),
      ts: EpochMs("When it completed."),
    },
    { additionalProperties: false },
  ),
  "fax.failed": T.Object(
    {
      fax_id: T.String(),
      to: T.String(),
      error: T.String({ description: "Why it failed." }),
      attempts: T.Integer({ minimum: 1 }),
      ts: EpochMs("When it failed."),
    },
    { additionalProperties: false },
  ),
  "campaign.started": T.Object(
    {
      campaign_id: T.String({ description: "cmp_… id." }),
      name: T.String(),
      contacts: T.Integer({ minimum: 0, description: "Contacts to dial." }),
      ts: EpochMs("When it started."),
    },
    { additionalProperties: false },
  ),
  "campaign.completed": T.Object(
    {
      campaign_id: T.String(),
      name: T.String(),
      attempted: T.Integer({ minimum: 0 }),
      completed: T.Integer({ minimum: 0 }),
      ts: EpochMs("When it finished."),
    },
    { additionalProperties: false },
  ),
  "campaign.contact": T.Object(
    {
      campaign_id: T.String(),
      contact_id: T.String({ description: "ct_… id." }),
      disposition: T.String({ description: "The terminal disposition, e.g. sale, no_answer, dnc." }),
      attempts: T.Integer({ minimum: 1 }),
      callId: Nullable(T.String({ description: "The last call, when one was placed." })),
      ts: EpochMs("When the disposition was reached."),
    },
    { additionalProperties: false },
  ),
  test: T.Object(
    {
      message: T.String(),
      webhook_id: Nullable(T.String({ description: "wh_… the test was fired at, or null for all." })),
      ts: EpochMs("When it was fired."),
    },
    { additionalProperties: false },
  ),
} as const satisfies Record<string, TObject>;

/** Every event name, in catalog order. */
export type EventName = keyof typeof EventData;
export const EVENT_NAMES = Object.keys(EventData) as EventName[];
/** The `data` of event `E`. */
export type EventPayload<E extends EventName> = Static<(typeof EventData)[E]>;

/**
 * Events SPEC.md section 6 names whose features this platform does not have yet (messaging,
 * recordings, fax, campaigns): subscribable, listed, never sent until those features emit them.
 */
export const NOT_YET_EMITTED: ReadonlySet<EventName> = new Set([
  "message.received", "message.status", "recording.available", "fax.received", "fax.sent", "fax.failed",
  "campaign.started", "campaign.completed", "campaign.contact",
] as EventName[]);

/** What fires each event (SPEC.md section 6). */
const FIRES: Record<EventName, string> = {
  "call.started": "A call is routed (a call /route refuses has a call record, status rejected, and no events).",
  "call.answered": "A call is answered.",
  "call.ended": "A call that started ends (once per call.started).",
  "agent.state": "An agent's state changes (login, pause, ready and so on).",
  "message.received": "An inbound message arrives.",
  "message.status": "A message's delivery status updates.",
  "recording.available": "A recording finishes processing.",
  "fax.received": "An inbound fax arrives.",
  "fax.sent": "An outbound fax completes.",
  "fax.failed": "An outbound fax fails.",
  "campaign.started": "A campaign starts.",
  "campaign.completed": "A campaign finishes.",
  "campaign.contact": "A campaign contact reaches a terminal disposition.",
  test: "POST /v1/webhooks/test is called.",
};
const DESCRIPTIONS = Object.fromEntries(
  Object.entries(FIRES).map(([name, fires]) => [
    name,
    NOT_YET_EMITTED.has(name as EventName) ? `${fires} Not emitted yet: its feature is not in this platform yet; a subscription to it is kept and receives it once it is.` : fires,
  ]),
) as Record<EventName, string>;

const TS = 1_767_225_600_000; // 2026-01-01T00:00:00Z, fixed so the catalog reply is stable.
const CALL = "call_06F3ZK1W8N9Q2R4T6V8X0Y2Z4A";
const AGENT = "us_06F3ZK1W8N9Q2R4T6V8X0Y2Z4B";
const QUEUE = "q_06F3ZK1W8N9Q2R4T6V8X0Y2Z4C";

/** A realistic `data` for each event. */
const SAMPLE_DATA: { [K in EventName]: Static<(typeof EventData)[K]> } = {
  "call.started": { callId: CALL, direction: "inbound", from: "14155550123", to: "14155550100", number_id: "num_06F3ZK1W8N9Q2R4T6V8X0Y2Z4D", ts: TS },
  "call.answered": { callId: CALL, direction: "inbound", queue_id: QUEUE, agent_id: AGENT, wait_sec: 18, ts: TS + 18_000 },
  "call.ended": {
    callId: CALL,
    direction: "inbound",
    answered: 1,
    billsec: 142,
    hangup_cause: "NORMAL_CLEARING",
    queue_id: QUEUE,
    agent_id: AGENT,
    ts: TS + 160_000,
  },
  "agent.state": { user_id: AGENT, state: "paused", previous_state: "ready", reason: "lunch", ts: TS },
  "message.received": {
    message_id: "msg_06F3ZK1W8N9Q2R4T6V8X0Y2Z4E",
    conversation_id: "cv_06F3ZK1W8N9Q2R4T6V8X0Y2Z4F",
    channel_id: "ch_06F3ZK1W8N9Q2R4T6V8X0Y2Z4G",
    from: "14155550123",
    to: "14155550100",
    body: "Is my order on its way?",
    ts: TS,
  },
  "message.status": {
    message_id: "msg_06F3ZK1W8N9Q2R4T6V8X0Y2Z4H",
    conversation_id: "cv_06F3ZK1W8N9Q2R4T6V8X0Y2Z4F",
    status: "delivered",
    error: null,
    ts: TS,
  },
  "recording.available": {
    recording_id: "rec_06F3ZK1W8N9Q2R4T6V8X0Y2Z4J",
    callId: CALL,
    duration_sec: 142,
    content_type: "audio/mpeg",
    ts: TS + 175_000,
  },
  "fax.received": { fax_id: "fax_06F3ZK1W8N9Q2R4T6V8X0Y2Z4K", from: "14155550199", to: "14155550101", pages: 3, ts: TS },
  "fax.sent": { fax_id: "fax_06F3ZK1W8N9Q2R4T6V8X0Y2Z4M", to: "14155550199", pages: 2, ts: TS },
  "fax.failed": { fax_id: "fax_06F3ZK1W8N9Q2R4T6V8X0Y2Z4N", to: "14155550199", error: "NO_ANSWER", attempts: 3, ts: TS },
  "campaign.started": { campaign_id: "cmp_06F3ZK1W8N9Q2R4T6V8X0Y2Z4P", name: "Spring renewals", contacts: 1200, ts: TS },
  "campaign.completed": { campaign_id: "cmp_06F3ZK1W8N9Q2R4T6V8X0Y2Z4P", name: "Spring renewals", attempted: 1200, completed: 1134, ts: TS + 86_400_000 },
  "campaign.contact": {
    campaign_id: "cmp_06F3ZK1W8N9Q2R4T6V8X0Y2Z4P",
    contact_id: "ct_06F3ZK1W8N9Q2R4T6V8X0Y2Z4Q",
    disposition: "sale",
    attempts: 2,
    callId: CALL,
    ts: TS,
  },
  test: { message: "This is a test event from Parley.", webhook_id: "wh_06F3ZK1W8N9Q2R4T6V8X0Y2Z4R", ts: TS },
};

/** The account id samples carry. */
export const SAMPLE_ACCOUNT_ID = "acc_06F3ZK1W8N9Q2R4T6V8X0Y2Z4S";

/** One catalog entry as GET /v1/webhooks/events returns it. */
export interface CatalogEntry {
  name: EventName;
  description: string;
  sample: { event: EventName; account_id: string; data: Record<string, unknown>; ts: number };
}

/** The whole catalog, in the order of SPEC.md section 6. */
export function eventCatalog(): CatalogEntry[] {
  return EVENT_NAMES.map((name) => {
    const data = SAMPLE_DATA[name] as Record<string, unknown>;
    return { name, description: DESCRIPTIONS[name], sample: { event: name, account_id: SAMPLE_ACCOUNT_ID, data, ts: data.ts as number } };
  });
}

/** True when `name` is a catalog event. */
export function isEventName(name: string): name is EventName {
  return Object.hasOwn(EventData, name);
}
