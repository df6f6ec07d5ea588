/** TypeBox models of POST /presence/event and GET /presence/users. */
import { Type as T, type Static } from "@sinclair/typebox";
import { t } from "elysia";
import { Flag, IdOf, IpAddress, Nullable } from "../validation/fields.ts";
import { DialogEvent } from "../routing/route-types.ts";
import { MAX_CONTACTS_PER_DEVICE, MAX_REGISTER_EXPIRES_SEC } from "./presence.service.ts";

export const AGENT_STATES = ["logged_out", "ready", "paused", "on_call", "wrap_up"] as const;
export type AgentStateName = (typeof AGENT_STATES)[number];

export const AGENT_EVENTS = ["login", "logout", "available", "pause", "unpause"] as const;
export type AgentEventName = (typeof AGENT_EVENTS)[number];

/** Text without control characters (C0 and DEL): what goes back into SIP headers. */
const NO_CONTROL = "^[^\\u0000-\\u001f\\u007f]*$";

/** Most queues one agent event names. */
export const MAX_AGENT_QUEUES = 100;

/** A binding's lifetime and NAT source: the same rules for a REGISTER's first Contact and its others. */
const Expires = (description: string) => T.Integer({ minimum: 0, maximum: MAX_REGISTER_EXPIRES_SEC, description });
const Received = (description: string) => T.Optional(T.String({ maxLength: 1024, format: "sip-uri", description }));

export namespace PresenceModel {
  /** type register: a REGISTER the edge accepted (expires 0 = the binding is removed), of a device or of a trunk. */
  export const Register = T.Object(
    {
      type: T.Literal("register"),
      account_id: IdOf("acc", "The account (from the /auth reply)."),
      user_id: T.Optional(IdOf("us", "The device's user; must match the device when given.")),
      device_id: T.Optional(IdOf("dev", "The device that registered (from the /auth reply); or trunk_id.")),
      trunk_id: T.Optional(IdOf("trk", "The trunk that registered (inbound_auth register: from the /auth reply), instead of a device.")),
      contact: T.String({
        minLength: 1,
        maxLength: 1024,
        format: "sip-contact",
        description: "The Contact URI (one binding: sip: or sips:), or * with expires 0 (every binding of the device).",
      }),
      expires: Expires(`Seconds the binding lives, 0–${MAX_REGISTER_EXPIRES_SEC}; 0 removes it.`),
      contacts: T.Optional(
        T.Array(
          T.Object(
            {
              contact: T.String({ minLength: 1, maxLength: 1024, format: "sip-uri", description: "Another Contact URI of the same REGISTER." }),
              expires: Expires("Its own lifetime, seconds; 0 removes it."),
              received: Received("Where it is reached when that is not its Contact (NAT)."),
            },
            { additionalProperties: false },
          ),
          { maxItems: MAX_CONTACTS_PER_DEVICE - 1, description: "The REGISTER's further Contacts (RFC 3261 allows several), each with its own lifetime; not with contact *." },
        ),
      ),
      user_agent: T.Optional(T.String({ maxLength: 255, pattern: "^[^\\u0000-\\u0008\\u000a-\\u001f\\u007f]*$", description: "User-Agent of the REGISTER, no control characters but tab (RFC 3261 TEXT-UTF8-TRIM)." })),
      transport: T.Optional(T.String({ pattern: "^(?:udp|tcp|tls|ws|wss|sctp|UDP|TCP|TLS|WS|WSS|SCTP)$", description: "udp, tcp, tls, ws, wss or sctp." })),
      source_ip: T.Optional(IpAddress("Address the REGISTER came from.")),
      source_port: T.Optional(T.Integer({ minimum: 1, maximum: 65535 })),
      received: Received("Received URI (sip:<source ip>:<port>) when the source differs from the Contact (NAT)."),
      // path and socket go back to the edge as routing data of /route's branches: no control characters.
      path: T.Optional(T.String({ maxLength: 2048, pattern: NO_CONTROL, description: "Path header (RFC 3327), no control characters." })),
      socket: T.Optional(
        T.String({
          maxLength: 255,
          pattern: "^(?:udp|tcp|tls|ws|wss|sctp|UDP|TCP|TLS|WS|WSS|SCTP):[0-9A-Za-z.:\\[\\]-]+:[0-9]{1,5}$",
          description: "The edge socket it arrived on, proto:address:port, e.g. udp:10.0.0.1:5060.",
        }),
      ),
      instance: T.Optional(T.String({ maxLength: 255, pattern: NO_CONTROL, description: "+sip.instance of the Contact (RFC 5626), no control characters." })),
      call_id: T.Optional(T.String({ maxLength: 255, pattern: NO_CONTROL, description: "Call-ID of the REGISTER, no control characters." })),
    },
    { additionalProperties: false },
  );
  export type Register = Static<typeof Register>;

  /** type dialog: the routing contract's DialogEvent (src/core/routing/route-types.ts). */
  export const Dialog = DialogEvent;
  export type Dialog = Static<typeof Dialog>;

  export const AgentEvent = T.Union([T.Literal("login"), T.Literal("logout"), T.Literal("available"), T.Literal("pause"), T.Literal("unpause")], { description: "login, logout, available, pause, unpause." });

  /** type agent: an agent's own state change (from an agent app or the softphone). */
  export const Agent = T.Object(
    {
      type: T.Literal("agent"),
      account_id: IdOf("acc"),
      user_id: IdOf("us", "The agent (a user with is_agent 1)."),
      event: AgentEvent,
      reason: T.Optional(T.String({ minLength: 1, maxLength: 100, description: "Pause reason (pause only)." })),
      queues: T.Optional(T.Array(IdOf("q"), { maxItems: MAX_AGENT_QUEUES, description: "Queues the agent works (login); in a form body, comma-separated." })),
    },
    { additionalProperties: false },
  );
  export type Agent = Static<typeof Agent>;

  /** What the route declares; the body is checked against the model its `type` names. */
  export const EventEnvelope = T.Object(
    { type: T.Union([T.Literal("register"), T.Literal("dialog"), T.Literal("agent")], { description: "register, dialog or agent." }) },
    { additionalProperties: true, description: "One of the register, dialog or agent bodies (see docs/edge-protocols.md)." },
  );

  /** Most events one POST /presence/events may carry. */
  export const MAX_BATCH = 500;

  /** POST /presence/events: events in the order they happened at the edge. */
  export const EventBatch = T.Object(
    {
      // Each event is checked on its own in the handler: one that is not an object or names no known
      // type is refused alone (a newer edge's event must not have the edge resend the whole batch).
      events: T.Array(T.Unknown({ description: EventEnvelope.description }), {
        minItems: 1,
        maxItems: MAX_BATCH,
        description: "register, dialog or agent bodies (each an object with its type), oldest first.",
      }),
    },
    { additionalProperties: false },
  );
  export type EventBatch = Static<typeof EventBatch>;

  export const BatchReply = T.Object({
    ok: T.Literal(true),
    handled: T.Integer({ minimum: 0, description: "Events handled." }),
    refused: T.Array(
      T.Object({
        index: T.Integer({ minimum: 0, description: "Position in events." }),
        error: T.String({ description: "The error code the event alone would have got (e.g. not_found)." }),
        message: T.String(),
      }),
      { description: "Events refused on their own (the others were handled)." },
    ),
  });
  export type BatchReply = Static<typeof BatchReply>;

  export const AgentStateName = T.Union([T.Literal("logged_out"), T.Literal("ready"), T.Literal("paused"), T.Literal("on_call"), T.Literal("wrap_up")]);

  /** One user in the roster. */
  export const RosterUser = T.Object(
    {
      id: T.String({ description: "us_… id." }),
      name: T.String({ description: "Display name." }),
      extension: T.String({ description: "The user's username (extension)." }),
      status: T.Union([T.Literal("offline"), T.Literal("available"), T.Literal("ringing"), T.Literal("on_call")], {
        description: "Presence: on_call (in a confirmed call), ringing (only early dialogs), available (registered), offline.",
      }),
      user_status: T.Union([T.Literal("active"), T.Literal("disabled")]),
      is_agent: Flag(),
      registered: Flag("1 when at least one binding is live."),
      contacts: T.Integer({ minimum: 0, description: "Live bindings." }),
      devices_registered: T.Integer({ minimum: 0, description: "Devices with at least one live binding." }),
      on_call: Flag("1 when in a confirmed call."),
      calls: T.Integer({ minimum: 0, description: "Dialogs the user is in (early or confirmed)." }),
      agent_state: Nullable(AgentStateName),
      since: Nullable(T.Integer({ description: "Epoch ms the agent state began (null for non-agents)." })),
      reason: Nullable(T.String({ description: "Pause reason, when paused." })),
    },
    { additionalProperties: false },
  );
  export type RosterUser = Static<typeof RosterUser>;

  export const Tiles = T.Object(
    {
      total: T.Integer(),
      registered: T.Integer({ description: "Users with at least one live registration." }),
      offline: T.Integer({ description: "Users whose status is offline: no registration and no call." }),
      on_call: T.Integer({ description: "Users in a confirmed call." }),
      ready: T.Integer({ description: "Agents ready (not on a call)." }),
      paused: T.Integer(),
      logged_out: T.Integer({ description: "Agents logged out." }),
    },
    { additionalProperties: false },
  );

  export const Roster = T.Object({ ok: T.Literal(true), data: T.Array(RosterUser), tiles: Tiles }, { additionalProperties: false });
  export type Roster = Static<typeof Roster>;

  export const RosterQuery = t.Object({ accountId: t.String({ pattern: "^acc_[0-9A-HJKMNP-TV-Z]{26}$", description: "The account." }) }, { additionalProperties: false });
}
