/** Database reads of presence (all live state is in the live store): who a device is, the roster's users. */
import { and, asc, eq, inArray, sql } from "drizzle-orm";
import type { Db, DbOrTx } from "../db/db.ts";
import { accounts } from "../accounts/accounts.schema.ts";
import { devices } from "../devices/devices.schema.ts";
import { appUsers } from "../users/users.schema.ts";
import { queues } from "../queues/queues.schema.ts";

/** A registering device, its owner and whether it and its account may register. */
export interface RegisteringDevice {
  user_id: string;
  is_webrtc: number;
  device_status: string;
  account_status: string;
}

function prepareDeviceLookup(db: Db) {
  return db
    .select({ user_id: devices.user_id, is_webrtc: devices.is_webrtc, device_status: devices.status, account_status: accounts.status })
    .from(devices)
    .innerJoin(accounts, eq(accounts.id, devices.account_id))
    .where(and(eq(devices.account_id, sql.placeholder("accountId")), eq(devices.id, sql.placeholder("deviceId"))))
    .limit(1)
    .prepare("presence_register_device");
}

const prepared = new WeakMap<Db, ReturnType<typeof prepareDeviceLookup>>();

/** The device of a REGISTER (one primary-key read, prepared: REGISTERs come in thousands per second). */
export async function findRegisteringDevice(db: Db, accountId: string, deviceId: string): Promise<RegisteringDevice | null> {
  let statement = prepared.get(db);
  if (!statement) {
    statement = prepareDeviceLookup(db);
    prepared.set(db, statement);
  }
  const [row] = await statement.execute({ accountId, deviceId });
  return row ?? null;
}

export async function accountExists(db: DbOrTx, accountId: string): Promise<boolean> {
  const [row] = await db.select({ id: accounts.id }).from(accounts).where(eq(accounts.id, accountId)).limit(1);
  return row !== undefined;
}

/** One user of an account with what presence needs, or null. */
export async function findPresenceUser(db: DbOrTx, accountId: string, userId: string): Promise<{ is_agent: number; status: string } | null> {
  const [row] = await db
    .select({ is_agent: appUsers.is_agent, status: appUsers.status })
    .from(appUsers)
    .where(and(eq(appUsers.account_id, accountId), eq(appUsers.id, userId)))
    .limit(1);
  return row ?? null;
}

/** Which of `ids` are not queues of the account. */
export async function missingQueueIds(db: DbOrTx, accountId: string, ids: string[]): Promise<string[]> {
  if (!ids.length) return [];
  const rows = await db.select({ id: queues.id }).from(queues).where(and(eq(queues.account_id, accountId), inArray(queues.id, ids)));
  const found = new Set(rows.map((r) => r.id));
  return ids.filter((id) => !found.has(id));
}

/**
 * Users of the account among `ids` (dialog legs), for the dialog's on-call bookkeeping. One id (the
 * usual leg) is looked up by equality: without statistics the planner costs `id = any(…)` on the
 * primary key above scanning every user of the account through another index.
 */
export async function existingUserIds(db: DbOrTx, accountId: string, ids: string[]): Promise<Set<string>> {
  if (!ids.length) return new Set();
  const byId = ids.length === 1 ? eq(appUsers.id, ids[0]!) : inArray(appUsers.id, ids);
  const rows = await db.select({ id: appUsers.id }).from(appUsers).where(and(eq(appUsers.account_id, accountId), byId));
  return new Set(rows.map((r) => r.id));
}

/** Owners of devices of the account (legs that carry only a device id). */
export async function ownersOfDevices(db: DbOrTx, accountId: string, deviceIds: string[]): Promise<Map<string, string>> {
  if (!deviceIds.length) return new Map();
  const rows = await db
    .select({ id: devices.id, user_id: devices.user_id })
    .from(devices)
    .where(and(eq(devices.account_id, accountId), inArray(devices.id, deviceIds)));
  return new Map(rows.map((r) => [r.id, r.user_id]));
}

/** The roster's users, by extension. */
export async function listRosterUsers(db: DbOrTx, accountId: string) {
  return db
    .select({ id: appUsers.id, name: appUsers.display_name, extension: appUsers.username, user_status: appUsers.status, is_agent: appUsers.is_agent })
    .from(appUsers)
    .where(eq(appUsers.account_id, accountId))
    .orderBy(asc(appUsers.username), asc(appUsers.id));
}
