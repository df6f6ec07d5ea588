/** Use cases on ring groups. None knows about HTTP; each takes the database and the account explicitly. */
import type { DbOrTx } from "../db/db.ts";
import { nowSeconds } from "../db/columns.ts";
import { AppError, conflict, isUniqueViolation, notFound, validationFailed, type ErrorDetail } from "../errors/app-error.ts";
import { newId } from "../ids/ids.ts";
import { decodeCursor, toPage } from "../pagination/pagination.ts";
import { assertNotInUse } from "../routing/references.ts";
import { checkRouteTargets, type RouteTargetSlot } from "../routing/route-target.ts";
import { lockScheduleShared } from "../schedules/schedules.store.ts";
import type { RingGroupModel } from "./ring-groups.model.ts";
import type { RingGroupMemberRow, RingGroupRow } from "./ring-groups.schema.ts";
import {
  deleteRingGroup,
  existingIds,
  findRingGroup,
  findRingGroupForUpdate,
  insertRingGroup,
  listRingGroupMembers,
  replaceRingGroupMembers,
  selectRingGroups,
  updateRingGroup,
  type NewRingGroupMemberRow,
  type RingGroupListRow,
} from "./ring-groups.store.ts";

/** The columns a write sets, as they will be once the write is done (a PATCH merged onto the stored row). */
type RingGroupState = Pick<
  RingGroupRow,
  | "id"
  | "name"
  | "strategy"
  | "ring_timeout_sec"
  | "moh_media_id"
  | "exit_dest_kind"
  | "exit_dest_id"
  | "schedule_id"
  | "closed_dest_kind"
  | "closed_dest_id"
  | "holiday_dest_kind"
  | "holiday_dest_id"
>;

const WRITABLE = [
  "name",
  "strategy",
  "ring_timeout_sec",
  "moh_media_id",
  "exit_dest_kind",
  "exit_dest_id",
  "schedule_id",
  "closed_dest_kind",
  "closed_dest_id",
  "holiday_dest_kind",
  "holiday_dest_id",
] as const satisfies ReadonlyArray<keyof RingGroupState>;

const SLOTS = ["exit_dest", "closed_dest", "holiday_dest"] as const;
/** Slots that only mean something when the group has business hours. */
const SCHEDULE_SLOTS = new Set<string>(["closed_dest", "holiday_dest"]);

function toMember(row: RingGroupMemberRow): RingGroupModel.Member {
  return { position: row.position, user_id: row.user_id, device_id: row.device_id, delay_sec: row.delay_sec, timeout_sec: row.timeout_sec };
}

function groupFields(row: RingGroupRow) {
  return {
    id: row.id,
    name: row.name,
    strategy: row.strategy as RingGroupModel.RingGroup["strategy"],
    ring_timeout_sec: row.ring_timeout_sec,
    moh_media_id: row.moh_media_id,
    exit_dest_kind: row.exit_dest_kind,
    exit_dest_id: row.exit_dest_id,
    schedule_id: row.schedule_id,
    closed_dest_kind: row.closed_dest_kind,
    closed_dest_id: row.closed_dest_id,
    holiday_dest_kind: row.holiday_dest_kind,
    holiday_dest_id: row.holiday_dest_id,
    created_at: row.created_at,
    updated_at: row.updated_at,
  };
}

/** Maps a row and its members to the API shape (every field, fixed order). */
export function toRingGroup(row: RingGroupRow, members: RingGroupMemberRow[]): RingGroupModel.RingGroup {
  const { created_at, updated_at, ...rest } = groupFields(row);
  return { ...rest, members: members.map(toMember), created_at, updated_at };
}

function toSummary(row: RingGroupListRow): RingGroupModel.RingGroupSummary {
  const { created_at, updated_at, ...rest } = groupFields(row);
  return { ...rest, member_count: row.member_count, created_at, updated_at };
}

/**
 * Problems of a member list that need no database: each member names exactly one of user_id and
 * device_id, and names someone not already in the list (ringing one phone twice helps nobody).
 */
export function memberProblems(members: readonly RingGroupModel.MemberInput[]): ErrorDetail[] {
  const details: ErrorDetail[] = [];
  const seen = new Map<string, number>();
  members.forEach((member, index) => {
    const user = member.user_id ?? null;
    const device = member.device_id ?? null;
    if ((user === null) === (device === null)) {
      details.push({ path: `/members/${index}/user_id`, message: "Give exactly one of user_id and device_id." });
      return;
    }
    const field = user !== null ? "user_id" : "device_id";
    const value = (user ?? device)!;
    const first = seen.get(value);
    if (first !== undefined) details.push({ path: `/members/${index}/${field}`, message: `Already a member (position ${first}).` });
    else seen.set(value, index);
  });
  return details;
}

/** Every check of a write that needs the database, on the state the write would leave. */
async function stateProblems(
  tx: DbOrTx,
  accountId: string,
  state: RingGroupState,
  members: readonly RingGroupModel.MemberInput[] | undefined,
): Promise<ErrorDetail[]> {
  const details: ErrorDetail[] = members ? memberProblems(members) : [];
  const slots: RouteTargetSlot[] = [];
  for (const prefix of SLOTS) {
    const kind = state[`${prefix}_kind`];
    const id = state[`${prefix}_id`];
    if (SCHEDULE_SLOTS.has(prefix) && state.schedule_id === null && (kind !== null || id !== null)) {
      details.push({ path: `/${prefix}_kind`, message: `${prefix} applies only with a schedule_id: set one, or clear ${prefix}_kind and ${prefix}_id.` });
    } else if (kind === "ring_group" && id === state.id) {
      details.push({ path: `/${prefix}_id`, message: "A ring group cannot route to itself." });
    } else {
      slots.push({ prefix, kind, id });
    }
  }
  try {
    await checkRouteTargets(tx, accountId, slots);
  } catch (error) {
    if (!(error instanceof AppError) || error.code !== "validation_failed") throw error;
    details.push(...((error.extra.details as ErrorDetail[] | undefined) ?? []));
  }
  if (state.moh_media_id !== null && !(await existingIds(tx, "media_file", accountId, [state.moh_media_id])).has(state.moh_media_id)) {
    details.push({ path: "/moh_media_id", message: "No such media file in this account." });
  }
  if (state.schedule_id !== null && !(await lockScheduleShared(tx, accountId, state.schedule_id))) {
    details.push({ path: "/schedule_id", message: "No such schedule in this account." });
  }
  if (members?.length) {
    const users = await existingIds(tx, "app_user", accountId, members.flatMap((m) => (m.user_id ? [m.user_id] : [])));
    const devices = await existingIds(tx, "device", accountId, members.flatMap((m) => (m.device_id ? [m.device_id] : [])));
    members.forEach((member, index) => {
      if (member.user_id && member.device_id) return; // already reported: exactly one of them
      if (member.user_id && !users.has(member.user_id)) details.push({ path: `/members/${index}/user_id`, message: "No such user in this account." });
      if (member.device_id && !devices.has(member.device_id)) details.push({ path: `/members/${index}/device_id`, message: "No such device in this account." });
    });
  }
  return details;
}

async function assertWritable(tx: DbOrTx, accountId: string, state: RingGroupState, members: readonly RingGroupModel.MemberInput[] | undefined) {
  const details = await stateProblems(tx, accountId, state, members);
  if (details.length) throw validationFailed(details);
}

function memberRows(accountId: string, ringGroupId: string, members: readonly RingGroupModel.MemberInput[]): NewRingGroupMemberRow[] {
  return members.map((member, position) => ({
    account_id: accountId,
    ring_group_id: ringGroupId,
    position,
    user_id: member.user_id ?? null,
    device_id: member.device_id ?? null,
    delay_sec: member.delay_sec ?? 0,
    timeout_sec: member.timeout_sec ?? null,
  }));
}

function nameTaken(error: unknown): never {
  if (isUniqueViolation(error)) throw conflict("A ring group with this name already exists.", { field: "name" });
  throw error;
}

/**
 * Creates a ring group with its members, in one transaction, after checking every target, the
 * schedule, the music on hold and each member exist in this account.
 * @example await createRingGroup(db, "acc_…", { name: "Sales", members: [{ user_id: "us_…" }], exit_dest_kind: "voicemail", exit_dest_id: "vm_…" })
 */
export async function createRingGroup(db: DbOrTx, accountId: string, input: RingGroupModel.Create): Promise<RingGroupModel.RingGroup> {
  const state: RingGroupState = {
    id: newId("rg"),
    name: input.name,
    strategy: input.strategy ?? "ring_all",
    ring_timeout_sec: input.ring_timeout_sec ?? 20,
    moh_media_id: input.moh_media_id ?? null,
    exit_dest_kind: input.exit_dest_kind ?? null,
    exit_dest_id: input.exit_dest_id ?? null,
    schedule_id: input.schedule_id ?? null,
    closed_dest_kind: input.closed_dest_kind ?? null,
    closed_dest_id: input.closed_dest_id ?? null,
    holiday_dest_kind: input.holiday_dest_kind ?? null,
    holiday_dest_id: input.holiday_dest_id ?? null,
  };
  try {
    return await db.transaction(async (tx) => {
      await assertWritable(tx, accountId, state, input.members);
      const now = nowSeconds();
      const row = await insertRingGroup(tx, { account_id: accountId, ...state, created_at: now, updated_at: now });
      await replaceRingGroupMembers(tx, accountId, state.id, memberRows(accountId, state.id, input.members ?? []));
      return toRingGroup(row, await listRingGroupMembers(tx, accountId, state.id));
    });
  } catch (error) {
    nameTaken(error);
  }
}

/** One ring group with its members; another account's is a 404. */
export async function getRingGroup(db: DbOrTx, accountId: string, id: string): Promise<RingGroupModel.RingGroup> {
  const row = await findRingGroup(db, accountId, id);
  if (!row) throw notFound("ring group");
  return toRingGroup(row, await listRingGroupMembers(db, accountId, id));
}

/** Ring groups of the account, keyset-paginated, without their members (member_count says how many). */
export async function listRingGroupPage(
  db: DbOrTx,
  accountId: string,
  page: { limit: number; cursor?: string; q?: string; user_id?: string; device_id?: string },
): Promise<{ data: RingGroupModel.RingGroupSummary[]; next_cursor?: string }> {
  const rows = await selectRingGroups(db, accountId, {
    namePrefix: page.q,
    userId: page.user_id,
    deviceId: page.device_id,
    afterId: decodeCursor(page.cursor, "rg"),
    limit: page.limit,
  });
  return toPage(rows, page.limit, toSummary);
}

/**
 * Changes the fields sent; `members`, when sent, replaces the whole set. The result is checked as a
 * whole (the patch merged onto the stored group), so everything or nothing changes.
 */
export async function patchRingGroup(db: DbOrTx, accountId: string, id: string, patch: RingGroupModel.Patch): Promise<RingGroupModel.RingGroup> {
  try {
    return await db.transaction(async (tx) => {
      const stored = await findRingGroupForUpdate(tx, accountId, id);
      if (!stored) throw notFound("ring group");
      const state: RingGroupState = { ...stored };
      const changes: Partial<RingGroupRow> = {};
      for (const field of WRITABLE) {
        const value = patch[field];
        if (value !== undefined) Object.assign(changes, { [field]: value });
      }
      Object.assign(state, changes);
      await assertWritable(tx, accountId, state, patch.members);
      const row = await updateRingGroup(tx, accountId, id, { ...changes, updated_at: nowSeconds() });
      if (!row) throw notFound("ring group");
      if (patch.members) await replaceRingGroupMembers(tx, accountId, id, memberRows(accountId, id, patch.members));
      return toRingGroup(row, await listRingGroupMembers(tx, accountId, id));
    });
  } catch (error) {
    nameTaken(error);
  }
}

/** Deletes a ring group and its members; 409 naming whatever still routes to it. */
export async function removeRingGroup(db: DbOrTx, accountId: string, id: string): Promise<void> {
  await db.transaction(async (tx) => {
    if (!(await findRingGroupForUpdate(tx, accountId, id))) throw notFound("ring group");
    await assertNotInUse(tx, accountId, "ring_group", id);
    await deleteRingGroup(tx, accountId, id);
  });
}
