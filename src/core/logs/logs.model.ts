/** TypeBox models of the account log (GET /v1/logs). */
import { Type as T, type Static } from "@sinclair/typebox";
import { t } from "elysia";
import { Nullable } from "../validation/fields.ts";
import { MAX_CURSOR_LENGTH } from "../pagination/pagination.ts";

/** Levels, lowest first. */
export const LOG_LEVELS = ["debug", "info", "warn", "error"] as const;
export type LogLevelName = (typeof LOG_LEVELS)[number];

/** Who writes log lines. */
export const LOG_SOURCES = ["flow", "platform", "webhook", "edge", "queue", "cdr"] as const;
export type LogSource = (typeof LOG_SOURCES)[number];

/** Default and largest page of GET /v1/logs (the default every list has, DESIGN.md section 3). */
export const LOG_PAGE_DEFAULT = 50;
export const LOG_PAGE_MAX = 500;

export namespace LogModel {
  export const Level = T.Union([T.Literal("debug"), T.Literal("info"), T.Literal("warn"), T.Literal("error")], { description: "debug, info, warn or error." });
  export const Source = T.Union([T.Literal("flow"), T.Literal("platform"), T.Literal("webhook"), T.Literal("edge"), T.Literal("queue"), T.Literal("cdr")], { description: "Who wrote the line: flow (a flow node), platform, webhook, edge, queue, cdr." });

  /** One log line. */
  export const Entry = T.Object(
    {
      id: T.String({ description: "log_… id; ids sort in recording order." }),
      ts: T.Integer({ description: "When it happened, epoch ms." }),
      level: Level,
      source: Source,
      message: T.String(),
      call_id: Nullable(T.String({ description: "call_… the line belongs to, or null." })),
      data: T.Record(T.String(), T.Unknown(), { description: "Structured details of the line." }),
    },
    { additionalProperties: false },
  );
  export type Entry = Static<typeof Entry>;

  /** GET /v1/logs query. */
  export const ListQuery = t.Object(
    {
      limit: t.Optional(t.Integer({ minimum: 1, maximum: LOG_PAGE_MAX, description: `Page size, 1–${LOG_PAGE_MAX}; default ${LOG_PAGE_DEFAULT}.` })),
      cursor: t.Optional(t.String({ maxLength: MAX_CURSOR_LENGTH, description: "next_cursor of the previous page." })),
      level: t.Optional(t.Union([t.Literal("debug"), t.Literal("info"), t.Literal("warn"), t.Literal("error")], { description: "Only this level and above (warn: warn and error)." })),
      call_id: t.Optional(t.String({ minLength: 1, maxLength: 64, description: "Only lines of this call." })),
      source: t.Optional(t.Union(LOG_SOURCES.map((s) => t.Literal(s)), { description: `Only lines from this source: ${LOG_SOURCES.join(", ")}.` })),
    },
    { additionalProperties: false },
  );
  export type ListQuery = Static<typeof ListQuery>;
}
