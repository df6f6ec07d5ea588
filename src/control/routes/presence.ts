/** POST /presence/event, POST /presence/events (a batch), GET /presence/users. */
import { Elysia } from "elysia";
import type { TSchema } from "@sinclair/typebox";
import { TypeCompiler } from "@sinclair/typebox/compiler";
import type { Platform } from "../../core/platform.ts";
import { AppError, validationFailed } from "../../core/errors/app-error.ts";
import { PresenceModel } from "../../core/presence/presence.model.ts";
import { handleAgent, handleDialog, handleDialogs, handleRegister, presenceRoster } from "../../core/presence/presence-events.ts";
import { apiModels } from "../../http/api-models.ts";
import { NUL_MESSAGE, unstorableTextPath } from "../../core/validation/storable-text.ts";
import { errorDetails } from "../../core/validation/error-details.ts";
import { OkReply, errorReplies } from "../../http/reply-models.ts";
import { edgeBodyPreparer } from "../edge-body.ts";

/** Each event type's model, compiled once, with its form preparation. */
function kind<S extends TSchema>(schema: S) {
  return { check: TypeCompiler.Compile(schema), prepare: edgeBodyPreparer(schema) };
}
const KINDS = { register: kind(PresenceModel.Register), dialog: kind(PresenceModel.Dialog), agent: kind(PresenceModel.Agent) };

function isForm(request: Request): boolean {
  return (request.headers.get("content-type") ?? "").toLowerCase().startsWith("application/x-www-form-urlencoded");
}

type Detail = { path: string; message: string };

/** The problems of `body` against the model its `type` names (none: it is valid), paths under `prefix`. */
function problems(type: keyof typeof KINDS, body: unknown, prefix = ""): Detail[] {
  const compiled = KINDS[type].check;
  return compiled.Check(body) ? [] : errorDetails(compiled.Errors(body), prefix, Infinity);
}

/** A dialog event taken this long after it happened at the edge (its `ts`) means the edge's queue is behind. */
export const LATE_EVENT_MS = 5_000;
/** At most one warning of each kind about event times per this long (a backlog lasts; one line says it). */
const WARNING_EVERY_MS = 60_000;

/** An edge clock this far ahead of ours is worth a warning (times from it are taken as "now"). */
export const AHEAD_EVENT_MS = 2_000;

/**
 * Watches how late the edge's dialog events arrive. Their `ts` puts the call's times right however
 * late they come, so a backlog in the edge's queue would otherwise show nowhere: past LATE_EVENT_MS
 * it is logged (a warning, at most one a minute, with the worst delay seen). An event from the future
 * (an edge clock ahead of ours, or a `ts` in the wrong unit) is recorded at the time it arrived
 * (dialog.ts), and past AHEAD_EVENT_MS logged the same way.
 */
function lateEventWatch(platform: Platform): (events: readonly AnyEvent[]) => void {
  let lateWarnedAt = -Infinity;
  let aheadWarnedAt = -Infinity;
  return (events) => {
    const now = Date.now();
    let worst = 0;
    let ahead = 0;
    for (const e of events) {
      if (e.type !== "dialog" || typeof e.ts !== "number") continue;
      worst = Math.max(worst, now - e.ts);
      ahead = Math.max(ahead, e.ts - now);
    }
    if (worst >= LATE_EVENT_MS && now - lateWarnedAt >= WARNING_EVERY_MS) {
      lateWarnedAt = now;
      platform.log.warn("dialog events arrive late: the edge's event queue is behind (more EVENT_SHARDS at the edge, or control-plane capacity)", {
        late_ms: worst,
      });
    }
    if (ahead >= AHEAD_EVENT_MS && now - aheadWarnedAt >= WARNING_EVERY_MS) {
      aheadWarnedAt = now;
      platform.log.warn("dialog events from the future: the edge's clock is ahead of this host's (NTP on both); their times are taken as received", {
        ahead_ms: ahead,
      });
    }
  };
}

/** The body checked against the model its `type` names, or 400 listing each problem. */
function checked<K extends keyof typeof KINDS>(type: K, body: unknown) {
  const details = problems(type, body);
  if (details.length) throw validationFailed(details);
  return body as never;
}

type AnyEvent = { type: "register" | "dialog" | "agent" } & Record<string, unknown>;

/** Handles one already checked event. */
async function handle(platform: Platform, event: AnyEvent): Promise<void> {
  switch (event.type) {
    case "register":
      return handleRegister(platform, event as never);
    case "dialog":
      return handleDialog(platform, event as never);
    case "agent":
      return handleAgent(platform, event as never);
  }
}

/**
 * A batch: every event is checked first, and one that is malformed is refused alone (listed with
 * its problems; the edge would only send it again as it is, and the others must not be lost with
 * it); then the rest are handled. Dialog events go as one set (handleDialogs: each call's events in
 * order, the calls together, the database work shared by the set); register and agent events each
 * in their order, alongside. An event refused on its own (a 4xx: an unknown account, user or queue)
 * is reported in `refused` and the rest go on, as each would have alone; anything else fails the
 * batch (5xx), and the edge sends it again: dialog and register events are idempotent, so the ones
 * already handled change nothing.
 */
const EVENT_TYPES = new Set<unknown>(["register", "dialog", "agent"]);
/** What a batch's events are prepared as: parts of a JSON body. */
const JSON_BODY = { headers: new Headers({ "content-type": "application/json" }) };

async function handleBatch(platform: Platform, events: AnyEvent[], late: (events: readonly AnyEvent[]) => void): Promise<PresenceModel.BatchReply["refused"]> {
  const refused: PresenceModel.BatchReply["refused"] = [];
  const refuse = (index: number, error: AppError) => refused.push({ index, error: error.code, message: error.message });
  const dialogs: number[] = [];
  const others = new Map<string, number[]>();
  events.forEach((event, index) => {
    if (typeof event !== "object" || event === null || Array.isArray(event)) {
      return void refuse(index, validationFailed([{ path: `/events/${index}`, message: "Expected an object" }], `Not an event: /events/${index} is not an object`));
    }
    if (!EVENT_TYPES.has((event as { type?: unknown }).type)) {
      return void refuse(index, validationFailed([{ path: `/events/${index}/type`, message: "Expected register, dialog or agent" }], `Not an event: /events/${index}/type must be register, dialog or agent`));
    }
    // As a single event's body is prepared: optional fields sent empty are absent.
    KINDS[event.type as keyof typeof KINDS].prepare(event, JSON_BODY);
    // Unstorable text is checked here, event by event: the host skips its whole-body check for batches.
    const unstorable = unstorableTextPath(event, `/events/${index}`);
    const details = unstorable !== null ? [{ path: unstorable, message: NUL_MESSAGE }] : problems(event.type, event, `/events/${index}`);
    if (details.length) return void refuse(index, validationFailed(details, `Not a valid ${event.type} event: ${details.slice(0, 5).map((d) => `${d.path} ${d.message}`).join("; ")}`));
    if (event.type === "dialog") return void dialogs.push(index);
    const sequence = others.get(event.type);
    if (sequence) sequence.push(index);
    else others.set(event.type, [index]);
  });
  // Only well-formed events say anything about the edge's clock and queue.
  late(dialogs.map((index) => events[index]!));
  let failure: unknown = null;
  const sequences = [...others.values()].map(async (sequence) => {
    for (const index of sequence) {
      if (failure !== null) return;
      try {
        await handle(platform, events[index]!);
      } catch (error) {
        if (error instanceof AppError && error.status < 500) refuse(index, error);
        else failure ??= error;
      }
    }
  });
  const dialogSet = (async () => {
    if (!dialogs.length) return;
    try {
      const refusals = await handleDialogs(platform, dialogs.map((index) => events[index] as never));
      refusals.forEach((error, i) => error && refuse(dialogs[i]!, error));
    } catch (error) {
      failure ??= error;
    }
  })();
  await Promise.all([...sequences, dialogSet]);
  if (failure !== null) throw failure;
  return refused.sort((a, b) => a.index - b.index);
}

export function presenceRoutes(platform: Platform) {
  const late = lateEventWatch(platform);
  return new Elysia({ name: "control-presence", normalize: false })
    .use(apiModels)
    .post(
      "/presence/event",
      async ({ body }) => {
        const event = checked(body.type, body);
        late([event]);
        await handle(platform, event);
        return { ok: true as const };
      },
      {
        transform: ({ body, request }) => {
          if (body === null || typeof body !== "object") return;
          const record = body as Record<string, unknown>;
          const type = record.type;
          if (type !== "register" && type !== "dialog" && type !== "agent") return;
          KINDS[type].prepare(body, request);
          // A form cannot carry an array: queues come comma-separated there.
          if (type === "agent" && isForm(request) && typeof record.queues === "string") {
            record.queues = record.queues.split(",").map((q) => q.trim()).filter(Boolean);
          }
        },
        body: PresenceModel.EventEnvelope,
        response: { 200: OkReply, ...errorReplies(400, 403, 404, 409, 415) },
        detail: { summary: "Report a SIP lifecycle event", description: "type register (a binding), dialog (a call's lifecycle) or agent (an agent's state change)." },
      },
    )
    .post(
      "/presence/events",
      async ({ body }) => {
        const refused = await handleBatch(platform, body.events as AnyEvent[], late);
        const reply: PresenceModel.BatchReply = { ok: true, handled: body.events.length - refused.length, refused };
        return reply;
      },
      {
        // The control host takes forms (SPEC.md), but a form cannot carry a list of events.
        transform: ({ request }) => {
          if (isForm(request)) throw new AppError("unsupported_media_type", "Send the batch as application/json: a form cannot carry its events (or POST each to /presence/event).");
        },
        body: PresenceModel.EventBatch,
        response: { 200: PresenceModel.BatchReply, ...errorReplies(400, 403, 404, 409, 415) },
        detail: {
          summary: "Report SIP lifecycle events in a batch",
          description:
            "The edge's event queue: up to 500 register, dialog or agent bodies, oldest first, JSON only. Every event is checked before any is handled; each call's events are handled in order. An event refused on its own (malformed: validation_failed; unknown account, user or queue) is listed in refused and the others are handled.",
        },
      },
    )
    .get(
      "/presence/users",
      async ({ query }) => {
        const roster = await presenceRoster(platform, query.accountId);
        const reply: PresenceModel.Roster = { ok: true, data: roster.data, tiles: roster.tiles };
        return reply;
      },
      {
        query: PresenceModel.RosterQuery,
        response: { 200: PresenceModel.Roster, ...errorReplies(400, 404) },
        detail: { summary: "Presence roster with status tiles" },
      },
    );
}
