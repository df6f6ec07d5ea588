/**
 * Is a schedule open right now? A pure function of the schedule, its rules, the account's time zone
 * and an instant, so the router can call it on every call and tests can pin any moment (DST days
 * included) without a clock or a database.
 *
 * Rules are read in the schedule's wall-clock time (its own zone, or the account's when it has none),
 * in three layers, the most specific first:
 *   1. `date` rules of that day,
 *   2. `date_range` rules that cover that day,
 *   3. `weekly` rules of that weekday.
 * Each layer in turn: inside one of its closed windows (is_closed 1) → "holiday" (date layers) or
 * "closed" (weekly: a break); else inside one of its open windows → "open"; else, when the layer has
 * open windows that day, → "closed" (a day with special hours is closed outside them). A layer with
 * only closed windows decides nothing outside them: the next layer does. No layer → "closed".
 * A date rule without times covers the whole day, so a whole-day closed date is a holiday all day. Windows include their start and exclude their end (09:00–17:00 is open at
 * 09:00:00 and closed at 17:00:00); 24:00 ends a window at midnight.
 */

/** The schedule fields the evaluation needs. */
export interface EvaluatedSchedule {
  /** IANA zone; null = the account's. */
  timezone: string | null;
}

/** One rule as stored (or as sent); fields that do not belong to its kind are null or absent. */
export interface EvaluatedRule {
  /** Its place in the schedule; reported back as `rule`. Defaults to the index in the array. */
  position?: number;
  kind: "weekly" | "date" | "date_range" | string;
  dow?: number | null;
  start_time?: string | null;
  end_time?: string | null;
  start_date?: string | null;
  end_date?: string | null;
  is_closed?: number | null;
}

/** The verdict: the state and, when a rule's window decided it, that rule's position. */
export interface ScheduleState {
  state: "open" | "closed" | "holiday";
  rule?: number;
}

/** A wall-clock reading in some zone. */
interface LocalMoment {
  /** YYYY-MM-DD. */
  date: string;
  /** 0 = Sunday. */
  dow: number;
  /** Minutes since local midnight, with the seconds as a fraction. */
  minute: number;
}

const formatters = new Map<string, Intl.DateTimeFormat>();

function formatterFor(timeZone: string): Intl.DateTimeFormat {
  let formatter = formatters.get(timeZone);
  if (!formatter) {
    // h23: some runtimes print midnight as "24" with hour12: false.
    formatter = new Intl.DateTimeFormat("en-US", {
      timeZone,
      hourCycle: "h23",
      year: "numeric",
      month: "2-digit",
      day: "2-digit",
      hour: "2-digit",
      minute: "2-digit",
      second: "2-digit",
    });
    if (formatters.size < 1000) formatters.set(timeZone, formatter);
  }
  return formatter;
}

/** The wall clock in `timeZone` at `at` (Intl applies the zone's DST rules of that date). */
export function localMoment(timeZone: string, at: Date): LocalMoment {
  const parts: Record<string, string> = {};
  for (const part of formatterFor(timeZone).formatToParts(at)) parts[part.type] = part.value;
  const year = Number(parts.year);
  const month = Number(parts.month);
  const day = Number(parts.day);
  const date = `${String(year).padStart(4, "0")}-${String(month).padStart(2, "0")}-${String(day).padStart(2, "0")}`;
  const dow = new Date(Date.UTC(year, month - 1, day)).getUTCDay();
  const minute = Number(parts.hour) * 60 + Number(parts.minute) + Number(parts.second) / 60;
  return { date, dow, minute };
}

/** Minutes since midnight of an HH:MM string ("24:00" is 1440). */
function minutesOf(hhmm: string): number {
  return Number(hhmm.slice(0, 2)) * 60 + Number(hhmm.slice(3, 5));
}

/** True when the rule's window holds `minute`; a rule without times is the whole day. */
function windowHolds(rule: EvaluatedRule, minute: number): boolean {
  if (!rule.start_time || !rule.end_time) return true;
  return minute >= minutesOf(rule.start_time) && minute < minutesOf(rule.end_time);
}

function positionOf(rule: EvaluatedRule, index: number): number {
  return rule.position ?? index;
}

/**
 * Evaluates a schedule at an instant.
 *
 * @param schedule its `timezone` (null = use `accountTimezone`)
 * @param rules the schedule's rules, in any order
 * @param accountTimezone the account's IANA zone
 * @param at the instant to evaluate (a call's arrival)
 * @throws RangeError when the effective zone is not one the runtime knows (schedules are validated on write)
 * @example
 * evaluateSchedule({ timezone: "Europe/Paris" }, [{ kind: "weekly", dow: 1, start_time: "09:00", end_time: "17:00" }], "UTC",
 *   new Date("2025-03-03T08:30:00Z")) // { state: "open", rule: 0 } (09:30 in Paris, a Monday)
 */
export function evaluateSchedule(
  schedule: EvaluatedSchedule,
  rules: readonly EvaluatedRule[],
  accountTimezone: string,
  at: Date,
): ScheduleState {
  const now = localMoment(schedule.timezone ?? accountTimezone, at);
  const indexed = rules.map((rule, index) => ({ rule, position: positionOf(rule, index) }));
  const layers = [
    { holiday: true, rules: indexed.filter(({ rule }) => rule.kind === "date" && rule.start_date === now.date) },
    {
      holiday: true,
      rules: indexed.filter(
        ({ rule }) => rule.kind === "date_range" && !!rule.start_date && !!rule.end_date && rule.start_date <= now.date && now.date <= rule.end_date,
      ),
    },
    { holiday: false, rules: indexed.filter(({ rule }) => rule.kind === "weekly" && rule.dow === now.dow) },
  ];
  for (const layer of layers) {
    const matching = layer.rules.filter(({ rule }) => windowHolds(rule, now.minute)).sort((a, b) => a.position - b.position);
    const closedHit = matching.find(({ rule }) => rule.is_closed === 1);
    if (closedHit) return { state: layer.holiday ? "holiday" : "closed", rule: closedHit.position };
    const openHit = matching.find(({ rule }) => rule.is_closed !== 1);
    if (openHit) return { state: "open", rule: openHit.position };
    // A layer with open windows owns its day; one with only closed windows ("close at 14:00 on the
    // 24th") speaks only inside them and leaves the rest of the day to the layers below.
    if (layer.rules.some(({ rule }) => rule.is_closed !== 1)) return { state: "closed" };
  }
  return { state: "closed" };
}
