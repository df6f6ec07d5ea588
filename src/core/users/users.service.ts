/** Use cases on users: the logical identities (agents, extension owners) that own devices. */
import type { DbOrTx } from "../db/db.ts";
import { refuseEmergencyNumber, type DialableRules } from "../validation/emergency-numbers.ts";
import { nowSeconds } from "../db/columns.ts";
import { conflict, isUniqueViolation, notFound, validationFailed, type ErrorDetail } from "../errors/app-error.ts";
import { newId } from "../ids/ids.ts";
import { decodeCursor, toPage } from "../pagination/pagination.ts";
import { assertNotInUse } from "../routing/references.ts";
import { normalizeE164 } from "../validation/fields.ts";
import { toDevice } from "../devices/devices.service.ts";
import { deleteDevicesOfUser, listDeviceRows, listDevicesOfUser } from "../devices/devices.store.ts";
import type { DeviceModel } from "../devices/devices.model.ts";
import { DEFAULT_MAX_SIMULTANEOUS, DEFAULT_RING_TIMEOUT_SEC, type UserModel } from "./users.model.ts";
import {
  deleteUserRow,
  findUser,
  insertUser,
  listUsers as listUserRows,
  lockUserForDelete,
  updateUser as updateUserRow,
  type NewUserRow,
  type UserFilters,
  type UserRow,
} from "./users.store.ts";
import { rowExists } from "../db/row-exists.ts";

/** Maps a row to the API shape (every field, fixed order). */
export function toUser(row: UserRow): UserModel.User {
  return {
    id: row.id,
    username: row.username,
    display_name: row.display_name,
    email: row.email,
    is_agent: row.is_agent === 1 ? 1 : 0,
    out_cid_number: row.out_cid_number,
    out_cid_name: row.out_cid_name,
    max_simultaneous: row.max_simultaneous,
    ring_timeout_sec: row.ring_timeout_sec,
    voicemail_id: row.voicemail_id,
    team_id: row.team_id,
    status: row.status as UserModel.User["status"],
    created_at: row.created_at,
    updated_at: row.updated_at,
  };
}

const USERNAME_TAKEN = "A user with this username already exists in this account.";

/** Fields of a create or patch that need a look at other tables or a normalization. */
interface Checked {
  out_cid_number?: string | null;
}

/**
 * Checks what the schema cannot: the caller-ID number normalizes to E.164, and the mailbox and team
 * exist in this account (another account's id is "no such", like a missing one). One 400 lists all.
 */
async function checkFields(
  db: DbOrTx,
  accountId: string,
  input: { out_cid_number?: string | null; voicemail_id?: string | null; team_id?: string | null },
): Promise<Checked> {
  const details: ErrorDetail[] = [];
  const checked: Checked = {};
  if (input.out_cid_number !== undefined) {
    const e164 = input.out_cid_number === null ? null : normalizeE164(input.out_cid_number);
    if (input.out_cid_number !== null && e164 === null) details.push({ path: "/out_cid_number", message: "Not an E.164 number (country code and 7–14 more digits)." });
    checked.out_cid_number = e164;
  }
  if (input.voicemail_id && !(await rowExists(db, "voicemail", accountId, input.voicemail_id))) {
    details.push({ path: "/voicemail_id", message: "No such voicemail box in this account." });
  }
  if (input.team_id && !(await rowExists(db, "agent_team", accountId, input.team_id))) {
    details.push({ path: "/team_id", message: "No such agent team in this account." });
  }
  if (details.length) throw validationFailed(details);
  return checked;
}

/** What a create or update may not give as a username: the platform's emergency numbers. */
export type UserRules = DialableRules;

/**
 * Creates a user: a single insert after the reference checks (none when no mailbox or team is
 * given), so bulk provisioning costs one statement per user. 409 `{ field: "username" }` when taken.
 * @example await createUser(db, accountId, { username: "1001", display_name: "Ada" })
 */
export async function createUser(db: DbOrTx, accountId: string, input: UserModel.Create, rules: UserRules = {}): Promise<UserModel.UserWithDevices> {
  refuseEmergencyNumber(input.username, rules, "/username", "a user");
  const checked = await checkFields(db, accountId, input);
  const now = nowSeconds();
  try {
    const row = await insertUser(db, {
      account_id: accountId,
      id: newId("us"),
      username: input.username,
      display_name: input.display_name ?? input.username,
      email: input.email ?? null,
      is_agent: input.is_agent ?? 0,
      out_cid_number: checked.out_cid_number ?? null,
      out_cid_name: input.out_cid_name ?? null,
      max_simultaneous: input.max_simultaneous ?? DEFAULT_MAX_SIMULTANEOUS,
      ring_timeout_sec: input.ring_timeout_sec ?? DEFAULT_RING_TIMEOUT_SEC,
      voicemail_id: input.voicemail_id ?? null,
      team_id: input.team_id ?? null,
      status: input.status ?? "active",
      created_at: now,
      updated_at: now,
    });
    return { ...toUser(row), devices: [] };
  } catch (error) {
    if (isUniqueViolation(error)) throw conflict(USERNAME_TAKEN, { field: "username" });
    throw error;
  }
}

/** One user of the account with its devices. */
export async function getUser(db: DbOrTx, accountId: string, id: string): Promise<UserModel.UserWithDevices> {
  const row = await findUser(db, accountId, id);
  if (!row) throw notFound("user");
  const devices = await listDevicesOfUser(db, accountId, id);
  return { ...toUser(row), devices: devices.map(toDevice) };
}

/** Users of the account, keyset-paginated, narrowed by the filters given (without their devices). */
export async function listUsers(
  db: DbOrTx,
  accountId: string,
  query: UserFilters & { limit: number; cursor?: string },
): Promise<{ data: UserModel.User[]; next_cursor?: string }> {
  const { limit, cursor, ...filters } = query;
  const rows = await listUserRows(db, accountId, filters, decodeCursor(cursor, "us"), limit);
  return toPage(rows, limit, toUser);
}

/** The devices of one user, keyset-paginated; 404 when the user is not in the account. */
export async function listUserDevices(
  db: DbOrTx,
  accountId: string,
  userId: string,
  page: { limit: number; cursor?: string },
): Promise<{ data: DeviceModel.Device[]; next_cursor?: string }> {
  const afterId = decodeCursor(page.cursor, "dev");
  if (!(await findUser(db, accountId, userId))) throw notFound("user");
  const rows = await listDeviceRows(db, accountId, { user_id: userId }, afterId, page.limit);
  return toPage(rows, page.limit, toDevice);
}

/**
 * Changes only the fields sent. A new username must still be unique (409); the user's devices keep
 * their auth_username (their digest hashes were computed from it).
 */
export async function updateUser(db: DbOrTx, accountId: string, id: string, patch: UserModel.Patch, rules: UserRules = {}): Promise<UserModel.UserWithDevices> {
  const current = await findUser(db, accountId, id);
  if (!current) throw notFound("user");
  // Only a new username is checked: a user made before keeps theirs.
  if (patch.username !== current.username) refuseEmergencyNumber(patch.username, rules, "/username", "a user");
  const checked = await checkFields(db, accountId, patch);
  const changes: Partial<NewUserRow> = { ...patch, ...checked, updated_at: nowSeconds() };
  let row: UserRow | null;
  try {
    row = await updateUserRow(db, accountId, id, changes);
  } catch (error) {
    if (isUniqueViolation(error)) throw conflict(USERNAME_TAKEN, { field: "username" });
    throw error;
  }
  if (!row) throw notFound("user"); // deleted between the check and the update
  const devices = await listDevicesOfUser(db, accountId, id);
  return { ...toUser(row), devices: devices.map(toDevice) };
}

/**
 * Deletes a user with its devices and their digest identities, in one transaction. Refused (409,
 * `used_by`) while a route target, ring group or queue refers to the user or a ring group to one of
 * its devices.
 */
export async function deleteUser(db: DbOrTx, accountId: string, id: string): Promise<{ deviceIds: string[] }> {
  return db.transaction(async (tx) => {
    if (!(await lockUserForDelete(tx, accountId, id))) throw notFound("user");
    await assertNotInUse(tx, accountId, "user", id);
    for (const device of await listDevicesOfUser(tx, accountId, id)) await assertNotInUse(tx, accountId, "device", device.id);
    const deviceIds = await deleteDevicesOfUser(tx, accountId, id);
    await deleteUserRow(tx, accountId, id);
    return { deviceIds };
  });
}
