/** The public API host ({base_url}/v1): versioned REST, JSON in and out. */
import { Elysia, type AnyElysia } from "elysia";
import { eventDocument } from "../core/webhooks/event-document.ts";
import { IdempotencyKeyHeader } from "../core/idempotency/idempotency.service.ts";
import { buildOpenApiDocument, type DocumentOptions } from "../http/openapi-document.ts";
import { Type as T } from "@sinclair/typebox";
import type { Platform } from "../core/platform.ts";
import { hostBase, sealQueries, type RawBodyRoute } from "../http/host-base.ts";
import { ERROR_DESCRIPTIONS } from "../http/reply-models.ts";
import { accountRoutes } from "./routes/account.ts";
import { identityRoutes } from "./routes/identity.ts";
import { keyRoutes } from "./routes/keys.ts";
import { settleIdempotencyOnError } from "./plugins/api-access.ts";
import { scheduleRoutes } from "./routes/schedules.ts";
import { ringGroupRoutes } from "./routes/ring-groups.ts";
import { userRoutes } from "./routes/users.ts";
import { deviceRoutes } from "./routes/devices.ts";
import { numberRoutes } from "./routes/numbers.ts";
import { extensionRoutes } from "./routes/extensions.ts";
import { queueRoutes } from "./routes/queues.ts";
import { voicemailRoutes } from "./routes/voicemails.ts";
import { conferenceRoutes } from "./routes/conferences.ts";
import { mediaRoutes } from "./routes/media.ts";
import { contactRoutes } from "./routes/contacts.ts";
import { scriptRoutes } from "./routes/scripts.ts";
import { fieldRoutes } from "./routes/fields.ts";
import { dncRoutes } from "./routes/dnc.ts";
import { agentTeamRoutes } from "./routes/agent-teams.ts";
import { webhookRoutes } from "./routes/webhooks.ts";
import { callRoutes } from "./routes/calls.ts";
import { usageRoutes } from "./routes/usage.ts";
import { eventRoutes } from "./routes/events.ts";
import { MEDIA_MAX_BYTES, UPLOAD_CONTENT_TYPES } from "../core/media/media.service.ts";
import pkg from "../../package.json" with { type: "json" };

const API_DESCRIPTION = `Parley's public REST API. Authenticate with an API key (header x-api-key) or a console session
token (Authorization: Bearer). Errors are { ok: false, error, message, ... }; codes: ${Object.entries(ERROR_DESCRIPTIONS)
  .map(([s, d]) => `${s} ${d}`)
  .join(" ")}`;

/** Media uploads are raw audio, not JSON (POST /v1/media?name=…&kind=…&format=…). */
export const MEDIA_UPLOAD_ROUTE: RawBodyRoute = {
  method: "POST",
  path: /^\/v1\/media\/?$/,
  contentTypes: Object.keys(UPLOAD_CONTENT_TYPES),
  maxBytes: MEDIA_MAX_BYTES,
};

/** A route module of the public API: a function of the platform returning one Elysia instance. */
export type PublicRouteModule = (platform: Platform) => AnyElysia;

/** Every resource's routes, in the order the OpenAPI document lists them. */
export const PUBLIC_ROUTE_MODULES: PublicRouteModule[] = [
  identityRoutes,
  accountRoutes,
  keyRoutes,
  userRoutes,
  deviceRoutes,
  numberRoutes,
  extensionRoutes,
  scheduleRoutes,
  ringGroupRoutes,
  queueRoutes,
  voicemailRoutes,
  conferenceRoutes,
  mediaRoutes,
  contactRoutes,
  scriptRoutes,
  fieldRoutes,
  dncRoutes,
  agentTeamRoutes,
  webhookRoutes,
  eventRoutes,
  callRoutes,
  usageRoutes,
];

/**
 * The public API host. `modules` defaults to every resource; tests may mount a subset.
 */
export function createPublicApp(platform: Platform, modules: PublicRouteModule[] = PUBLIC_ROUTE_MODULES) {
  const documentation: DocumentOptions = {
    info: {
      title: "Parley API",
      version: pkg.version,
      description: API_DESCRIPTION,
      license: { name: "Apache-2.0", url: "https://www.apache.org/licenses/LICENSE-2.0" },
    },
    servers: [{ url: platform.config.urls.public }],
    components: {
      securitySchemes: {
        apiKey: { type: "apiKey", in: "header", name: "x-api-key", description: "An API key (sk_…)." },
        bearer: { type: "http", scheme: "bearer", bearerFormat: "JWT", description: "A session token from POST /login on the console host." },
      },
    },
    security: [{ apiKey: [] }, { bearer: [] }],
    tags: [
      { name: "Identity", description: "Who is calling, and what scopes exist." },
      { name: "Account", description: "The tenant and its subaccounts." },
      { name: "Keys", description: "API keys." },
      { name: "Users", description: "Users (agents, extension owners) and their SIP devices." },
      { name: "Numbers", description: "Inbound numbers (DIDs) and where they route." },
      { name: "Extensions", description: "Internal short codes and where they route." },
      { name: "Schedules", description: "Business-hours schedules and their rules." },
      { name: "Ring groups", description: "Ring groups and their members." },
      { name: "Queues", description: "ACD queues, their agents and in-queue DTMF options." },
      { name: "Voicemail", description: "Voicemail boxes." },
      { name: "Conferences", description: "Conference rooms." },
      { name: "Media", description: "Audio files: prompts, music on hold, greetings, announcements." },
      { name: "Contacts", description: "Phonebook, reverse lookup and the internal directory." },
      { name: "Scripts", description: "Agent scripts." },
      { name: "Custom fields", description: "Custom fields of contacts and calls." },
      { name: "DNC", description: "The do-not-call list." },
      { name: "Agent teams", description: "Reporting teams of agents." },
      { name: "Webhooks", description: "Webhook subscriptions, test events, the delivery log and the catalog of event types." },
      { name: "Events", description: "Realtime event-stream tickets and the account log." },
      { name: "Calls", description: "Call records (CDRs), their routing traces, live calls and concurrency counters." },
      { name: "Usage", description: "Spend, minutes and call counts; the account's financial statement." },
      { name: "Reports", description: "Polled snapshots for wallboards and reports." },
    ],
    excludePaths: ["/healthz", "/readyz", "/v1/openapi.json"],
    ...eventDocument(),
    writeHeader: { name: "Idempotency-Key", in: "header", required: false, description: IdempotencyKeyHeader.description!, schema: JSON.parse(JSON.stringify(IdempotencyKeyHeader)) },
  };
  // The document is built on first request, from the finished app (every route registered by then).
  let document: ReturnType<typeof buildOpenApiDocument> | undefined;
  const self: { app?: AnyElysia } = {};
  const base = hostBase(platform, {
    host: "public",
    cors: true,
    accept: ["json"],
    onErrorReply: (request, error) => settleIdempotencyOnError(platform, request, error),
    rawBodyRoutes: [MEDIA_UPLOAD_ROUTE],
  });
  const app = new Elysia({ name: "public", normalize: false })
    .use(base)
    .get("/v1/openapi.json", ({ set }) => {
      set.headers["cache-control"] = "public, max-age=300";
      return (document ??= buildOpenApiDocument(self.app!, documentation));
    }, { detail: { hide: true } })
    .get(
      "/v1",
      () => ({
        ok: true as const,
        name: "Parley API",
        version: pkg.version,
        openapi: "/v1/openapi.json",
        auth: ["x-api-key", "Authorization: Bearer"],
      }),
      {
        response: {
          200: T.Object({ ok: T.Literal(true), name: T.String(), version: T.String(), openapi: T.String(), auth: T.Array(T.String()) }),
        },
        detail: { tags: ["Identity"], summary: "API index (open, not rate-limited)", security: [] },
      },
    );
  for (const module of modules) app.use(module(platform));
  self.app = sealQueries(app, base);
  return app;
}
