/** TypeBox models of business-hours schedules: request validation, TypeScript types and OpenAPI from one place. */
import { Type as T, type Static } from "@sinclair/typebox";
import { CalendarDate, Flag, HourMinute, Name, Nullable, TimeZone } from "../validation/fields.ts";

/** Most rules a schedule may hold (a weekly pattern plus years of holidays fit well below). */
export const MAX_SCHEDULE_RULES = 500;

export namespace ScheduleModel {
  export const RuleKind = T.Union([T.Literal("weekly"), T.Literal("date"), T.Literal("date_range")], {
    description: "weekly: a window on a weekday; date: one day; date_range: every day from start_date to end_date.",
  });

  /**
   * One rule as sent. Which fields apply depends on `kind`; a field of another kind is refused (400),
   * null counts as absent (so a rule read back from GET can be sent again as it is).
   */
  export const RuleInput = T.Object(
    {
      kind: RuleKind,
      dow: T.Optional(Nullable(T.Integer({ minimum: 0, maximum: 6, description: "Day of week, 0 = Sunday … 6 = Saturday. weekly only (required)." }))),
      start_time: T.Optional(Nullable(HourMinute())),
      end_time: T.Optional(Nullable(HourMinute())),
      start_date: T.Optional(Nullable(CalendarDate())),
      end_date: T.Optional(Nullable(CalendarDate())),
      is_closed: T.Optional(Flag("0 (default): an open window. 1: closed inside the window (on date rules a holiday; on weekly rules a break).")),
      label: T.Optional(Nullable(T.String({ minLength: 1, maxLength: 100, description: "A note for people, e.g. 'Christmas'." }))),
    },
    {
      additionalProperties: false,
      description:
        "weekly: dow, start_time and end_time required. date: start_date required; start_time/end_time optional (both or neither; none = the whole day). " +
        "date_range: start_date ≤ end_date required; times optional as for date. start_time < end_time; end_time may be 24:00.",
    },
  );
  export type RuleInput = Static<typeof RuleInput>;

  const Rules = T.Array(RuleInput, {
    maxItems: MAX_SCHEDULE_RULES,
    description: `The rules, in order (up to ${MAX_SCHEDULE_RULES}). Replaces the whole set on every write that includes it.`,
  });

  /** A rule as the API shows it: every field, null where it does not apply. */
  export const Rule = T.Object({
    position: T.Integer({ description: "0-based place in the set, as sent." }),
    kind: RuleKind,
    dow: Nullable(T.Integer({ description: "0 = Sunday; weekly rules only." })),
    start_time: Nullable(T.String({ description: "HH:MM; null on a whole-day date rule." })),
    end_time: Nullable(T.String({ description: "HH:MM (24:00 = midnight at the end of the day)." })),
    start_date: Nullable(T.String({ description: "YYYY-MM-DD: the day of a date rule, the first day of a range." })),
    end_date: Nullable(T.String({ description: "YYYY-MM-DD: the last day of a range (inclusive)." })),
    is_closed: Flag("1: closed inside the window (holiday / break)."),
    label: Nullable(T.String()),
  });
  export type Rule = Static<typeof Rule>;

  const scheduleFields = {
    id: T.String({ description: "sch_… id." }),
    name: T.String(),
    timezone: Nullable(T.String({ description: "IANA time zone; null = the account's time zone." })),
    created_at: T.Integer({ description: "Epoch seconds." }),
    updated_at: T.Integer({ description: "Epoch seconds." }),
  };

  /** A schedule with its rules (GET one, and every write's reply). */
  export const Schedule = T.Object({ ...scheduleFields, rules: T.Array(Rule) });
  export type Schedule = Static<typeof Schedule>;

  /** A schedule as listed: without its rules, with their count. */
  export const ScheduleSummary = T.Object({ ...scheduleFields, rule_count: T.Integer({ description: "How many rules it holds; GET the schedule for them." }) });
  export type ScheduleSummary = Static<typeof ScheduleSummary>;

  /** POST /v1/schedules. */
  export const Create = T.Object(
    {
      name: Name(),
      timezone: T.Optional(Nullable(TimeZone("IANA time zone, e.g. Europe/Paris; null or absent = the account's time zone."))),
      rules: T.Optional(Rules),
    },
    { additionalProperties: false },
  );
  export type Create = Static<typeof Create>;

  /** PATCH (or POST) /v1/schedules/{id}: only sent fields change; `rules`, when sent, replaces the set. */
  export const Patch = T.Object(
    {
      name: T.Optional(Name()),
      timezone: T.Optional(Nullable(TimeZone("IANA time zone; null = the account's time zone."))),
      rules: T.Optional(Rules),
    },
    { additionalProperties: false, minProperties: 1 },
  );
  export type Patch = Static<typeof Patch>;
}
