/** Rule-set validation (ruleProblems): every problem of a set at once, with the exact field paths. */
import { describe, expect, test } from "bun:test";
import { ruleProblems } from "./schedules.service.ts";
import type { ScheduleModel } from "./schedules.model.ts";

describe("ruleProblems", () => {
  test("a valid set of every kind has no problems; nulls count as absent", () => {
    const rules: ScheduleModel.RuleInput[] = [
      { kind: "weekly", dow: 0, start_time: "00:00", end_time: "24:00", start_date: null, end_date: null, label: null },
      { kind: "date", start_date: "2024-02-29", dow: null, end_date: null, start_time: null, end_time: null, is_closed: 1 },
      { kind: "date_range", start_date: "2025-12-31", end_date: "2025-12-31", start_time: "10:00", end_time: "10:01" },
    ];
    expect(ruleProblems(rules)).toEqual([]);
  });

  test("reports every problem of every rule, in rule order", () => {
    const rules: ScheduleModel.RuleInput[] = [
      { kind: "weekly", dow: 1, start_time: "09:00", end_time: "17:00" },
      { kind: "weekly", start_date: "2025-01-01", start_time: "10:00", end_time: "09:00" },
      { kind: "date", start_date: "2025-02-29", dow: 3, end_time: "12:00" },
      { kind: "date_range", start_date: "2025-03-02", end_date: "2025-03-01" },
    ];
    expect(ruleProblems(rules)).toEqual([
      { path: "/rules/1/dow", message: "dow is required on a weekly rule." },
      { path: "/rules/1/start_date", message: "start_date does not apply to a weekly rule." },
      { path: "/rules/1/end_time", message: expect.stringContaining("end_time must be after start_time") },
      { path: "/rules/2/dow", message: "dow does not apply to a date rule." },
      { path: "/rules/2/start_time", message: "start_time is required with end_time." },
      { path: "/rules/2/start_date", message: "No such day." },
      { path: "/rules/3/end_date", message: "end_date must not be before start_date." },
    ]);
  });

  test("an impossible range end is one problem, not two", () => {
    expect(ruleProblems([{ kind: "date_range", start_date: "2025-06-01", end_date: "2025-06-31" }])).toEqual([
      { path: "/rules/0/end_date", message: "No such day." },
    ]);
  });

  test("24:00 ends a window but cannot start one", () => {
    expect(ruleProblems([{ kind: "weekly", dow: 6, start_time: "23:30", end_time: "24:00" }])).toEqual([]);
    expect(ruleProblems([{ kind: "weekly", dow: 6, start_time: "24:00", end_time: "24:00" }])).toEqual([
      { path: "/rules/0/start_time", message: "A window cannot start at 24:00." },
    ]);
  });
});
