/**
 * The realtime event stream's wire protocol (docs/realtime.md is the reader's version): the messages
 * each side sends, the close codes, and the checks on what a client sends. JSON text frames only.
 */
import { Type as T, type Static } from "@sinclair/typebox";
import { Value } from "@sinclair/typebox/value";
import { EVENT_NAMES, type EventName } from "../core/webhooks/event-catalog.ts";

/** The stream's path on the realtime host. */
export const STREAM_PATH = "/v1/events/stream";

/** Close codes (4xxx mirror HTTP statuses so they read at a glance). */
export const CLOSE = {
  /** The server is shutting down: reconnect (with a new ticket) and resume. */
  goingAway: 1001,
  /** Something failed on our side; reconnect and resume. */
  internal: 1011,
  /** The query string or a client message is invalid (e.g. an unknown event name in events=). */
  badRequest: 4400,
  /** The ticket is missing, malformed, unknown, already used or expired. Mint a new one. */
  ticketRefused: 4401,
  /**
   * The API key that minted the ticket was revoked, or the account is no longer active. Reconnecting
   * with the same credential will not work.
   */
  credentialRevoked: 4403,
  /** The client read too slowly and its send buffer passed the limit. Reconnect and resume. */
  slowConsumer: 4429,
  /** The client sent messages faster than they are handled (reason `too_many_messages`). */
  tooManyMessages: 4429,
} as const;

/**
 * The largest message a client may send, in bytes (the longest valid one, a subscribe naming 64 events,
 * is under 5 KiB); a larger one closes the connection 1009 (Bun's WebSocket limit).
 */
export const MAX_CLIENT_MESSAGE_BYTES = 16 * 1024;

/** Messages the client may send. */
export const ClientMessage = T.Union([
  T.Object({ type: T.Literal("pong") }, { additionalProperties: true }),
  // A list names at least one event ("*" is every event: an empty list saying so would be a surprise).
  T.Object({ type: T.Literal("subscribe"), events: T.Union([T.Array(T.String({ maxLength: 64 }), { minItems: 1, maxItems: 64 }), T.Literal("*")]) }, { additionalProperties: false }),
  // As the query parameter: an event id the stream sent (evt_…); the server checks it is one of ours.
  T.Object({ type: T.Literal("resume"), last_event_id: T.String({ maxLength: 64 }) }, { additionalProperties: false }),
]);
export type ClientMessage = Static<typeof ClientMessage>;

/** Parses a client message (text or an object Elysia already parsed). Null when it is not one. */
export function parseClientMessage(raw: unknown): ClientMessage | null {
  let value = raw;
  if (typeof raw === "string") {
    try {
      value = JSON.parse(raw);
    } catch {
      return null;
    }
  }
  return Value.Check(ClientMessage, value) ? value : null;
}

const KNOWN_EVENTS = new Set<string>(EVENT_NAMES);

/**
 * An event filter from `events=a,b` or a subscribe message: null means every event. Throws with a
 * client-facing message naming the unknown names.
 */
export function parseEventFilter(input: string | string[] | undefined | null): Set<EventName> | null {
  if (input === undefined || input === null) return null;
  const names = (Array.isArray(input) ? input : input.split(",")).map((n) => n.trim());
  // As POST /v1/webhooks reads its events: nothing named, an empty name, or * beside names is a
  // mistake, not "every event" (nor fewer events).
  if (names.every((n) => n === "")) throw new Error("no event named; leave events out (or send *) for every event");
  if (names.includes("")) throw new Error("an empty event name (a stray comma?)");
  if (names.includes("*")) {
    if (names.some((n) => n !== "*")) throw new Error("* means every event; send it alone");
    return null;
  }
  const unknown = names.filter((n) => !KNOWN_EVENTS.has(n));
  if (unknown.length) throw new Error(`unknown event names: ${unknown.slice(0, 5).map((n) => (n.length > 64 ? `${n.slice(0, 64)}…` : n)).join(", ")}`);
  return new Set(names as EventName[]);
}

/** The stream URL's query parameters; a name given more than once has all its values, in order. */
export function readStreamQuery(url: string): Record<string, string | string[]> {
  const query: Record<string, string | string[]> = Object.create(null);
  const at = url.indexOf("?");
  if (at === -1) return query;
  for (const [key, value] of new URLSearchParams(url.slice(at + 1))) {
    const seen = query[key];
    query[key] = seen === undefined ? value : Array.isArray(seen) ? [...seen, value] : [seen, value];
  }
  return query;
}

const STREAM_QUERY = new Set(["ticket", "events", "last_event_id"]);

/**
 * What is wrong with the stream URL's query as a whole (the message of a 4400 close), or null: a
 * parameter the stream does not take, a NUL character, or a ticket or last_event_id given twice
 * (`events` may repeat: its values are one list). The values themselves are checked by their readers.
 */
export function streamQueryProblem(query: Record<string, unknown>): string | null {
  for (const [key, value] of Object.entries(query)) {
    const values = Array.isArray(value) ? value : [value];
    if (key.includes("\u0000") || values.some((v) => typeof v === "string" && v.includes("\u0000"))) {
      return "text may not contain a NUL character (%00)";
    }
    if (!STREAM_QUERY.has(key)) return `unknown query parameter ${JSON.stringify(key.slice(0, 32))}; the stream takes ticket, events and last_event_id`;
    if (Array.isArray(value) && key !== "events") return `${key} is given more than once`;
  }
  return null;
}

/** A close reason within the 123 bytes a close frame allows. */
export function closeReason(code: string, message: string): string {
  const text = `${code}: ${message}`;
  return Buffer.byteLength(text) <= 123 ? text : Buffer.from(text).subarray(0, 120).toString() + "...";
}
