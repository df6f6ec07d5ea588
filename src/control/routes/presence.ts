/** POST /presence/event, GET /presence/users. */
import { Elysia } from "elysia";
import type { TSchema } from "@sinclair/typebox";
import { TypeCompiler } from "@sinclair/typebox/compiler";
import type { Platform } from "../../core/platform.ts";
import { validationFailed } from "../../core/errors/app-error.ts";
import { PresenceModel } from "../../core/presence/presence.model.ts";
import { handleAgent, handleDialog, handleRegister, presenceRoster } from "../../core/presence/presence-events.ts";
import { apiModels } from "../../http/api-models.ts";
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

/** The body checked against the model its `type` names, or 400 listing each problem. */
function checked<K extends keyof typeof KINDS>(type: K, body: unknown) {
  const compiled = KINDS[type].check;
  if (compiled.Check(body)) return body as never;
  const details: Array<{ path: string; message: string }> = [];
  const seen = new Set<string>();
  for (const e of compiled.Errors(body)) {
    if (seen.has(e.path)) continue;
    seen.add(e.path);
    details.push({ path: e.path, message: e.message === "Unexpected property" ? "This field cannot be set here." : e.message });
  }
  throw validationFailed(details);
}

export function presenceRoutes(platform: Platform) {
  return new Elysia({ name: "control-presence", normalize: false })
    .use(apiModels)
    .post(
      "/presence/event",
      async ({ body }) => {
        switch (body.type) {
          case "register":
            await handleRegister(platform, checked("register", body));
            break;
          case "dialog":
            await handleDialog(platform, checked("dialog", body));
            break;
          case "agent":
            await handleAgent(platform, checked("agent", body));
            break;
        }
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
