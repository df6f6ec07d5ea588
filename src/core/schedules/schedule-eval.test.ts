/** evaluateSchedule: wall-clock rules in a zone, DST days, 24:00, holidays, ranges and precedence. */
import { describe, expect, test } from "bun:test";
import { evaluateSchedule, localMoment, type EvaluatedRule } from "./schedule-eval.ts";

const at = (iso: string) => new Date(iso);
const weekly = (dow: number, start_time: string, end_time: string, extra: Partial<EvaluatedRule> = {}): EvaluatedRule => ({
  kind: "weekly",
  dow,
  start_time,
  end_time,
  is_closed: 0,
  ...extra,
});
const SUN = 0, MON = 1, WED = 3, THU = 4, FRI = 5;

describe("localMoment", () => {
  test("reads the wall clock of the zone, DST included", () => {
    expect(localMoment("America/New_York", at("2025-03-09T06:59:00Z"))).toEqual({ date: "2025-03-09", dow: SUN, minute: 60 + 59 });
    expect(localMoment("America/New_York", at("2025-03-09T07:00:00Z"))).toEqual({ date: "2025-03-09", dow: SUN, minute: 3 * 60 });
    expect(localMoment("Europe/Paris", at("2025-10-25T22:30:30Z"))).toEqual({ date: "2025-10-26", dow: SUN, minute: 30.5 });
    // Midnight is hour 0, never 24.
    expect(localMoment("UTC", at("2025-01-01T00:00:00Z"))).toEqual({ date: "2025-01-01", dow: WED, minute: 0 });
  });
});

describe("weekly windows", () => {
  const officeHours = [weekly(MON, "09:00", "17:00"), weekly(SUN, "09:00", "17:00")];

  test("start is inside, end is outside", () => {
    // 2025-03-03 is a Monday; UTC.
    expect(evaluateSchedule({ timezone: "UTC" }, officeHours, "UTC", at("2025-03-03T08:59:59Z"))).toEqual({ state: "closed" });
    expect(evaluateSchedule({ timezone: "UTC" }, officeHours, "UTC", at("2025-03-03T09:00:00Z"))).toEqual({ state: "open", rule: 0 });
    expect(evaluateSchedule({ timezone: "UTC" }, officeHours, "UTC", at("2025-03-03T16:59:59Z"))).toEqual({ state: "open", rule: 0 });
    expect(evaluateSchedule({ timezone: "UTC" }, officeHours, "UTC", at("2025-03-03T17:00:00Z"))).toEqual({ state: "closed" });
  });

  test("a day without a rule is closed; no rules at all is closed", () => {
    expect(evaluateSchedule({ timezone: "UTC" }, officeHours, "UTC", at("2025-03-04T12:00:00Z"))).toEqual({ state: "closed" });
    expect(evaluateSchedule({ timezone: "UTC" }, [], "UTC", at("2025-03-04T12:00:00Z"))).toEqual({ state: "closed" });
  });

  test("America/New_York on the spring-forward day (2025-03-09, EST→EDT)", () => {
    const tz = { timezone: "America/New_York" };
    // 13:30Z is 09:30 EDT (open); with last week's offset it would be 08:30.
    expect(evaluateSchedule(tz, officeHours, "UTC", at("2025-03-09T13:30:00Z"))).toEqual({ state: "open", rule: 1 });
    expect(evaluateSchedule(tz, officeHours, "UTC", at("2025-03-09T12:59:00Z"))).toEqual({ state: "closed" });
    // 21:30Z is 17:30 EDT (closed); with EST it would be 16:30.
    expect(evaluateSchedule(tz, officeHours, "UTC", at("2025-03-09T21:30:00Z"))).toEqual({ state: "closed" });
    // The night before, still EST: 09:00 is 14:00Z (Saturday has no rule, so look at Sunday 2025-03-02).
    expect(evaluateSchedule(tz, officeHours, "UTC", at("2025-03-02T13:30:00Z"))).toEqual({ state: "closed" });
    expect(evaluateSchedule(tz, officeHours, "UTC", at("2025-03-02T14:00:00Z"))).toEqual({ state: "open", rule: 1 });
  });

  test("America/New_York: the skipped hour of the spring-forward day never opens", () => {
    const skipped = [weekly(SUN, "02:00", "03:00")];
    const tz = { timezone: "America/New_York" };
    for (const iso of ["2025-03-09T06:59:59Z", "2025-03-09T07:00:00Z", "2025-03-09T07:30:00Z"]) {
      expect(evaluateSchedule(tz, skipped, "UTC", at(iso))).toEqual({ state: "closed" });
    }
    // A week later the same window opens as usual (02:30 EDT = 06:30Z).
    expect(evaluateSchedule(tz, skipped, "UTC", at("2025-03-16T06:30:00Z"))).toEqual({ state: "open", rule: 0 });
  });

  test("America/New_York on the fall-back day (2025-11-02): the repeated hour is inside its window both times", () => {
    const tz = { timezone: "America/New_York" };
    const early = [weekly(SUN, "01:00", "02:00"), weekly(SUN, "09:00", "17:00")];
    expect(evaluateSchedule(tz, early, "UTC", at("2025-11-02T05:30:00Z"))).toEqual({ state: "open", rule: 0 }); // 01:30 EDT
    expect(evaluateSchedule(tz, early, "UTC", at("2025-11-02T06:30:00Z"))).toEqual({ state: "open", rule: 0 }); // 01:30 EST
    expect(evaluateSchedule(tz, early, "UTC", at("2025-11-02T07:00:00Z"))).toEqual({ state: "closed" }); // 02:00 EST
    // 13:30Z is 08:30 EST (closed); with EDT it would be 09:30.
    expect(evaluateSchedule(tz, early, "UTC", at("2025-11-02T13:30:00Z"))).toEqual({ state: "closed" });
    expect(evaluateSchedule(tz, early, "UTC", at("2025-11-02T14:00:00Z"))).toEqual({ state: "open", rule: 1 });
  });

  test("Europe/Paris on both DST change days (2025-03-30 and 2025-10-26)", () => {
    const tz = { timezone: "Europe/Paris" };
    // Spring: CEST (UTC+2) from 01:00Z.
    expect(evaluateSchedule(tz, officeHours, "UTC", at("2025-03-30T07:00:00Z"))).toEqual({ state: "open", rule: 1 }); // 09:00 CEST
    expect(evaluateSchedule(tz, officeHours, "UTC", at("2025-03-30T06:30:00Z"))).toEqual({ state: "closed" }); // 08:30 CEST
    expect(evaluateSchedule(tz, officeHours, "UTC", at("2025-03-30T15:00:00Z"))).toEqual({ state: "closed" }); // 17:00 CEST
    expect(evaluateSchedule(tz, officeHours, "UTC", at("2025-03-30T14:59:00Z"))).toEqual({ state: "open", rule: 1 });
    // Autumn: CET (UTC+1) from 01:00Z.
    expect(evaluateSchedule(tz, officeHours, "UTC", at("2025-10-26T07:30:00Z"))).toEqual({ state: "closed" }); // 08:30 CET
    expect(evaluateSchedule(tz, officeHours, "UTC", at("2025-10-26T08:00:00Z"))).toEqual({ state: "open", rule: 1 }); // 09:00 CET
    expect(evaluateSchedule(tz, officeHours, "UTC", at("2025-10-26T15:59:00Z"))).toEqual({ state: "open", rule: 1 });
    expect(evaluateSchedule(tz, officeHours, "UTC", at("2025-10-26T16:00:00Z"))).toEqual({ state: "closed" });
  });

  test("a window ending 24:00 is open to the last second of the day, and the next day is its own", () => {
    const lateFriday = [weekly(FRI, "18:00", "24:00")];
    const tz = { timezone: "Europe/Paris" };
    // 2025-01-10 is a Friday; Paris is UTC+1 in January.
    expect(evaluateSchedule(tz, lateFriday, "UTC", at("2025-01-10T16:59:59Z"))).toEqual({ state: "closed" });
    expect(evaluateSchedule(tz, lateFriday, "UTC", at("2025-01-10T17:00:00Z"))).toEqual({ state: "open", rule: 0 });
    expect(evaluateSchedule(tz, lateFriday, "UTC", at("2025-01-10T22:59:59Z"))).toEqual({ state: "open", rule: 0 });
    expect(evaluateSchedule(tz, lateFriday, "UTC", at("2025-01-10T23:00:00Z"))).toEqual({ state: "closed" }); // Saturday 00:00
  });

  test("a weekly closed window is a break inside the open hours: closed, not a holiday", () => {
    const withLunch = [weekly(MON, "09:00", "17:00"), weekly(MON, "12:00", "13:00", { is_closed: 1 })];
    expect(evaluateSchedule({ timezone: "UTC" }, withLunch, "UTC", at("2025-03-03T11:00:00Z"))).toEqual({ state: "open", rule: 0 });
    expect(evaluateSchedule({ timezone: "UTC" }, withLunch, "UTC", at("2025-03-03T12:30:00Z"))).toEqual({ state: "closed", rule: 1 });
    expect(evaluateSchedule({ timezone: "UTC" }, withLunch, "UTC", at("2025-03-03T13:00:00Z"))).toEqual({ state: "open", rule: 0 });
  });

  test("overlapping open windows report the first by position", () => {
    const rules = [weekly(MON, "12:00", "18:00", { position: 7 }), weekly(MON, "08:00", "14:00", { position: 2 })];
    expect(evaluateSchedule({ timezone: "UTC" }, rules, "UTC", at("2025-03-03T13:00:00Z"))).toEqual({ state: "open", rule: 2 });
    expect(evaluateSchedule({ timezone: "UTC" }, rules, "UTC", at("2025-03-03T15:00:00Z"))).toEqual({ state: "open", rule: 7 });
  });
});

describe("time zones", () => {
  test("a schedule without a zone follows the account's", () => {
    const rules = [weekly(MON, "09:00", "17:00")];
    // 2025-03-03T01:00Z is Monday 10:00 in Tokyo and Monday 01:00 in UTC.
    expect(evaluateSchedule({ timezone: null }, rules, "Asia/Tokyo", at("2025-03-03T01:00:00Z"))).toEqual({ state: "open", rule: 0 });
    expect(evaluateSchedule({ timezone: null }, rules, "UTC", at("2025-03-03T01:00:00Z"))).toEqual({ state: "closed" });
    // Its own zone wins over the account's.
    expect(evaluateSchedule({ timezone: "UTC" }, rules, "Asia/Tokyo", at("2025-03-03T01:00:00Z"))).toEqual({ state: "closed" });
  });

  test("the day of a date rule is the local day, not the UTC one", () => {
    const christmas: EvaluatedRule[] = [{ kind: "date", start_date: "2025-12-25", is_closed: 1 }];
    const tz = { timezone: "America/New_York" };
    expect(evaluateSchedule(tz, christmas, "UTC", at("2025-12-25T03:00:00Z"))).toEqual({ state: "closed" }); // Dec 24, 22:00
    expect(evaluateSchedule(tz, christmas, "UTC", at("2025-12-25T05:00:00Z"))).toEqual({ state: "holiday", rule: 0 }); // Dec 25, 00:00
    expect(evaluateSchedule(tz, christmas, "UTC", at("2025-12-26T04:59:59Z"))).toEqual({ state: "holiday", rule: 0 }); // Dec 25, 23:59:59
  });

  test("an unknown zone is a RangeError, not a silent guess", () => {
    expect(() => evaluateSchedule({ timezone: "Mars/Olympus_Mons" }, [], "UTC", new Date())).toThrow(RangeError);
  });
});

describe("dates and holidays", () => {
  const thursdays = weekly(THU, "09:00", "17:00");

  test("a closed date overrides the weekly hours all day: holiday", () => {
    const rules: EvaluatedRule[] = [thursdays, { kind: "date", start_date: "2025-12-25", is_closed: 1, position: 1 }];
    expect(evaluateSchedule({ timezone: "UTC" }, rules, "UTC", at("2025-12-25T10:00:00Z"))).toEqual({ state: "holiday", rule: 1 });
    expect(evaluateSchedule({ timezone: "UTC" }, rules, "UTC", at("2025-12-25T20:00:00Z"))).toEqual({ state: "holiday", rule: 1 });
    // The Thursday before is ordinary.
    expect(evaluateSchedule({ timezone: "UTC" }, rules, "UTC", at("2025-12-18T10:00:00Z"))).toEqual({ state: "open", rule: 0 });
  });

  test("an open date with times replaces that day's weekly hours: open only within them", () => {
    const wednesdays = weekly(WED, "09:00", "17:00");
    const rules: EvaluatedRule[] = [wednesdays, { kind: "date", start_date: "2025-12-24", start_time: "09:00", end_time: "12:00", is_closed: 0 }];
    expect(evaluateSchedule({ timezone: "UTC" }, rules, "UTC", at("2025-12-24T11:00:00Z"))).toEqual({ state: "open", rule: 1 });
    expect(evaluateSchedule({ timezone: "UTC" }, rules, "UTC", at("2025-12-24T13:00:00Z"))).toEqual({ state: "closed" });
    // An open whole-day date opens a day that has no weekly hours.
    const saturday: EvaluatedRule[] = [wednesdays, { kind: "date", start_date: "2025-12-27", is_closed: 0 }];
    expect(evaluateSchedule({ timezone: "UTC" }, saturday, "UTC", at("2025-12-27T03:00:00Z"))).toEqual({ state: "open", rule: 1 });
  });

  test("a closed date with times is a holiday inside them; the rest of the day keeps the weekly hours", () => {
    const wednesdays = weekly(WED, "09:00", "17:00");
    const closeEarly: EvaluatedRule[] = [wednesdays, { kind: "date", start_date: "2025-12-24", start_time: "14:00", end_time: "24:00", is_closed: 1 }];
    expect(evaluateSchedule({ timezone: "UTC" }, closeEarly, "UTC", at("2025-12-24T10:00:00Z"))).toEqual({ state: "open", rule: 0 });
    expect(evaluateSchedule({ timezone: "UTC" }, closeEarly, "UTC", at("2025-12-24T14:00:00Z"))).toEqual({ state: "holiday", rule: 1 });
    expect(evaluateSchedule({ timezone: "UTC" }, closeEarly, "UTC", at("2025-12-24T08:00:00Z"))).toEqual({ state: "closed" });
  });

  test("a date range crossing a month end covers every day of it, inclusive", () => {
    const rules: EvaluatedRule[] = [
      weekly(0, "00:00", "24:00"), weekly(1, "00:00", "24:00"), weekly(2, "00:00", "24:00"), weekly(3, "00:00", "24:00"),
      weekly(4, "00:00", "24:00"), weekly(5, "00:00", "24:00"), weekly(6, "00:00", "24:00"),
      { kind: "date_range", start_date: "2025-01-30", end_date: "2025-02-02", is_closed: 1, position: 7 },
    ];
    const tz = { timezone: "Europe/Paris" };
    expect(evaluateSchedule(tz, rules, "UTC", at("2025-01-29T22:59:59Z")).state).toBe("open"); // Jan 29, 23:59:59 Paris
    for (const iso of ["2025-01-29T23:00:00Z", "2025-01-31T12:00:00Z", "2025-02-01T00:00:00Z", "2025-02-02T22:59:59Z"]) {
      expect(evaluateSchedule(tz, rules, "UTC", at(iso))).toEqual({ state: "holiday", rule: 7 });
    }
    expect(evaluateSchedule(tz, rules, "UTC", at("2025-02-02T23:00:00Z")).state).toBe("open"); // Feb 3, 00:00 Paris
  });

  test("a date range crossing the new year, with daily reduced hours", () => {
    const rules: EvaluatedRule[] = [
      weekly(MON, "08:00", "20:00"),
      { kind: "date_range", start_date: "2025-12-29", end_date: "2026-01-02", start_time: "10:00", end_time: "14:00", is_closed: 0 },
    ];
    // 2025-12-29 is a Monday: the range's hours apply, not the weekly ones.
    expect(evaluateSchedule({ timezone: "UTC" }, rules, "UTC", at("2025-12-29T09:00:00Z"))).toEqual({ state: "closed" });
    expect(evaluateSchedule({ timezone: "UTC" }, rules, "UTC", at("2025-12-29T10:00:00Z"))).toEqual({ state: "open", rule: 1 });
    expect(evaluateSchedule({ timezone: "UTC" }, rules, "UTC", at("2026-01-01T13:59:00Z"))).toEqual({ state: "open", rule: 1 });
    expect(evaluateSchedule({ timezone: "UTC" }, rules, "UTC", at("2026-01-02T14:00:00Z"))).toEqual({ state: "closed" });
    // The Monday after the range is ordinary again.
    expect(evaluateSchedule({ timezone: "UTC" }, rules, "UTC", at("2026-01-05T09:00:00Z"))).toEqual({ state: "open", rule: 0 });
  });

  test("a single date is more specific than a range that covers it", () => {
    const rules: EvaluatedRule[] = [
      { kind: "date_range", start_date: "2025-12-20", end_date: "2026-01-05", is_closed: 1, label: "Shutdown" } as EvaluatedRule,
      { kind: "date", start_date: "2025-12-28", start_time: "10:00", end_time: "14:00", is_closed: 0 },
    ];
    expect(evaluateSchedule({ timezone: "UTC" }, rules, "UTC", at("2025-12-27T11:00:00Z"))).toEqual({ state: "holiday", rule: 0 });
    expect(evaluateSchedule({ timezone: "UTC" }, rules, "UTC", at("2025-12-28T11:00:00Z"))).toEqual({ state: "open", rule: 1 });
    expect(evaluateSchedule({ timezone: "UTC" }, rules, "UTC", at("2025-12-28T15:00:00Z"))).toEqual({ state: "closed" });
  });

  test("closed wins over open when windows of one day overlap", () => {
    const rules: EvaluatedRule[] = [
      { kind: "date", start_date: "2025-07-14", is_closed: 0 },
      { kind: "date", start_date: "2025-07-14", start_time: "12:00", end_time: "13:00", is_closed: 1 },
    ];
    expect(evaluateSchedule({ timezone: "UTC" }, rules, "UTC", at("2025-07-14T12:15:00Z"))).toEqual({ state: "holiday", rule: 1 });
    expect(evaluateSchedule({ timezone: "UTC" }, rules, "UTC", at("2025-07-14T15:00:00Z"))).toEqual({ state: "open", rule: 0 });
  });
});
