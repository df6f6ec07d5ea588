/** Use cases on business-hours schedules. None knows about HTTP; each takes the database and the account explicitly. */
import type { DbOrTx } from "../db/db.ts";
import { nowSeconds } from "../db/columns.ts";
import { conflict, isUniqueViolation, notFound, validationFailed, type ErrorDetail } from "../errors/app-error.ts";
import { newId } from "../ids/ids.ts";
import { decodeCursor, toPage } from "../pagination/pagination.ts";
import { assertNotInUse } from "../routing/references.ts";
import { isRealDate } from "../validation/fields.ts";
import type { ScheduleModel } from "./schedules.model.ts";
import type { TimeScheduleRow, TimeScheduleRuleRow } from "./schedules.schema.ts";
import {
  deleteSchedule,
  findSchedule,
  findScheduleForUpdate,
  insertSchedule,
  listScheduleRules,
  replaceScheduleRules,
  selectSchedules,
  updateSchedule,
  type NewTimeScheduleRuleRow,
  type TimeScheduleListRow,
} from "./schedules.store.ts";

function toRule(row: TimeScheduleRuleRow): ScheduleModel.Rule {
  return {
    position: row.position,
    kind: row.kind as ScheduleModel.Rule["kind"],
    dow: row.dow,
    start_time: row.start_time,
    end_time: row.end_time,
    start_date: row.start_date,
    end_date: row.end_date,
    is_closed: row.is_closed === 1 ? 1 : 0,
    label: row.label,
  };
}

/** Maps a row and its rules to the API shape (every field, fixed order). */
export function toSchedule(row: TimeScheduleRow, rules: TimeScheduleRuleRow[]): ScheduleModel.Schedule {
  return {
    id: row.id,
    name: row.name,
    timezone: row.timezone,
    rules: rules.map(toRule),
    created_at: row.created_at,
    updated_at: row.updated_at,
  };
}

function toSummary(row: TimeScheduleListRow): ScheduleModel.ScheduleSummary {
  return {
    id: row.id,
    name: row.name,
    timezone: row.timezone,
    rule_count: row.rule_count,
    created_at: row.created_at,
    updated_at: row.updated_at,
  };
}

/** Which optional fields each kind takes; any other field set on a rule of that kind is refused. */
const KIND_FIELDS = {
  weekly: { required: ["dow", "start_time", "end_time"], allowed: ["dow", "start_time", "end_time"] },
  date: { required: ["start_date"], allowed: ["start_date", "start_time", "end_time"] },
  date_range: { required: ["start_date", "end_date"], allowed: ["start_date", "end_date", "start_time", "end_time"] },
} as const;

const KIND_SPECIFIC = ["dow", "start_time", "end_time", "start_date", "end_date"] as const;

/**
 * The problems of a rule set, one per field, with paths like `/rules/3/end_time` (empty when valid).
 * The shape of each field (HH:MM, YYYY-MM-DD, 0–6) is already checked by the request model; this checks
 * what depends on the kind and on other fields.
 */
export function ruleProblems(rules: readonly ScheduleModel.RuleInput[]): ErrorDetail[] {
  const details: ErrorDetail[] = [];
  rules.forEach((rule, index) => {
    const at = (field: string) => `/rules/${index}/${field}`;
    const has = (field: (typeof KIND_SPECIFIC)[number]) => rule[field] !== undefined && rule[field] !== null;
    const spec = KIND_FIELDS[rule.kind];
    for (const field of KIND_SPECIFIC) {
      const allowed = (spec.allowed as readonly string[]).includes(field);
      if (!allowed && has(field)) details.push({ path: at(field), message: `${field} does not apply to a ${rule.kind} rule.` });
      else if ((spec.required as readonly string[]).includes(field) && !has(field)) details.push({ path: at(field), message: `${field} is required on a ${rule.kind} rule.` });
    }
    if (rule.kind !== "weekly") {
      // Times on a date rule narrow the day to a window: half a window means nothing.
      if (has("start_time") && !has("end_time")) details.push({ path: at("end_time"), message: "end_time is required with start_time." });
      if (has("end_time") && !has("start_time")) details.push({ path: at("start_time"), message: "start_time is required with end_time." });
    }
    if (rule.start_time === "24:00") details.push({ path: at("start_time"), message: "A window cannot start at 24:00." });
    else if (has("start_time") && has("end_time") && rule.start_time! >= rule.end_time!) {
      details.push({ path: at("end_time"), message: "end_time must be after start_time (use 24:00 for midnight; split a window that crosses midnight in two)." });
    }
    let datesReal = true;
    for (const field of ["start_date", "end_date"] as const) {
      if (has(field) && !isRealDate(rule[field]!)) {
        details.push({ path: at(field), message: "No such day." });
        datesReal = false;
      }
    }
    if (rule.kind === "date_range" && datesReal && has("start_date") && has("end_date") && rule.start_date! > rule.end_date!) {
      details.push({ path: at("end_date"), message: "end_date must not be before start_date." });
    }
  });
  return details;
}

/** Rows of a rule set that passed `ruleProblems` (so no field of another kind is set). */
function ruleRows(accountId: string, scheduleId: string, rules: readonly ScheduleModel.RuleInput[]): NewTimeScheduleRuleRow[] {
  return rules.map((rule, position) => ({
    account_id: accountId,
    schedule_id: scheduleId,
    position,
    kind: rule.kind,
    dow: rule.dow ?? null,
    start_time: rule.start_time ?? null,
    end_time: rule.end_time ?? null,
    start_date: rule.start_date ?? null,
    end_date: rule.end_date ?? null,
    is_closed: rule.is_closed ?? 0,
    label: rule.label ?? null,
  }));
}

function assertRules(rules: readonly ScheduleModel.RuleInput[] | undefined): void {
  const details = rules ? ruleProblems(rules) : [];
  if (details.length) throw validationFailed(details);
}

function nameTaken(error: unknown): never {
  if (isUniqueViolation(error)) throw conflict("A schedule with this name already exists.", { field: "name" });
  throw error;
}

/**
 * Creates a schedule with its rules, in one transaction.
 * @example await createSchedule(db, "acc_…", { name: "Office hours", rules: [{ kind: "weekly", dow: 1, start_time: "09:00", end_time: "17:00" }] })
 */
export async function createSchedule(db: DbOrTx, accountId: string, input: ScheduleModel.Create): Promise<ScheduleModel.Schedule> {
  assertRules(input.rules);
  const now = nowSeconds();
  const id = newId("sch");
  try {
    return await db.transaction(async (tx) => {
      const row = await insertSchedule(tx, { account_id: accountId, id, name: input.name, timezone: input.timezone ?? null, created_at: now, updated_at: now });
      await replaceScheduleRules(tx, accountId, id, ruleRows(accountId, id, input.rules ?? []));
      return toSchedule(row, await listScheduleRules(tx, accountId, id));
    });
  } catch (error) {
    nameTaken(error);
  }
}

/** One schedule with its rules; another account's is a 404. */
export async function getSchedule(db: DbOrTx, accountId: string, id: string): Promise<ScheduleModel.Schedule> {
  const row = await findSchedule(db, accountId, id);
  if (!row) throw notFound("schedule");
  return toSchedule(row, await listScheduleRules(db, accountId, id));
}

/** Schedules of the account, keyset-paginated, without their rules (rule_count says how many). */
export async function listSchedulePage(
  db: DbOrTx,
  accountId: string,
  page: { limit: number; cursor?: string; q?: string },
): Promise<{ data: ScheduleModel.ScheduleSummary[]; next_cursor?: string }> {
  const rows = await selectSchedules(db, accountId, { namePrefix: page.q, afterId: decodeCursor(page.cursor, "sch"), limit: page.limit });
  return toPage(rows, page.limit, toSummary);
}

/** Changes the fields sent; `rules`, when sent, replaces the whole set. Everything or nothing changes. */
export async function patchSchedule(db: DbOrTx, accountId: string, id: string, patch: ScheduleModel.Patch): Promise<ScheduleModel.Schedule> {
  assertRules(patch.rules);
  try {
    return await db.transaction(async (tx) => {
      const changes: Partial<TimeScheduleRow> = { updated_at: nowSeconds() };
      if (patch.name !== undefined) changes.name = patch.name;
      if (patch.timezone !== undefined) changes.timezone = patch.timezone;
      // The update takes the row lock first, so concurrent rule replacements of one schedule queue up.
      const row = await updateSchedule(tx, accountId, id, changes);
      if (!row) throw notFound("schedule");
      if (patch.rules) await replaceScheduleRules(tx, accountId, id, ruleRows(accountId, id, patch.rules));
      return toSchedule(row, await listScheduleRules(tx, accountId, id));
    });
  } catch (error) {
    nameTaken(error);
  }
}

/** Deletes a schedule and its rules; 409 naming the numbers, extensions, ring groups or queues that still use it. */
export async function removeSchedule(db: DbOrTx, accountId: string, id: string): Promise<void> {
  await db.transaction(async (tx) => {
    if (!(await findScheduleForUpdate(tx, accountId, id))) throw notFound("schedule");
    await assertNotInUse(tx, accountId, "schedule", id);
    await deleteSchedule(tx, accountId, id);
  });
}
