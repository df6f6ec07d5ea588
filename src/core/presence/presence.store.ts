/** Database reads of presence (all live state is in the live store): who a device is, the roster's users. */
import { and, asc, eq, inArray, sql } from "drizzle-orm";
import { jsonRows, rawNumber, rawNumberOrNull } from "../db/sql-text.ts";
import { rawRows } from "../db/migrate.ts";
import type { Db, DbOrTx } from "../db/db.ts";
import type { ConfigCache } from "../cache/config-cache.ts";
import { accounts } from "../accounts/accounts.schema.ts";
import { devices } from "../devices/devices.schema.ts";
import { appUsers } from "../users/users.schema.ts";
import { queues } from "../queues/queues.schema.ts";

/** A registering device, its owner and whether it, its user and its account may register. */
export interface RegisteringDevice {
  user_id: string;
  is_webrtc: number;
  device_status: string;
  user_status: string;
  account_status: string;
}

function prepareDeviceLookup(db: Db) {
  return db
    .select({ user_id: devices.user_id, is_webrtc: devices.is_webrtc, device_status: devices.status, user_status: appUsers.status, account_status: accounts.status })
    .from(devices)
    .innerJoin(accounts, eq(accounts.id, devices.account_id))
    .innerJoin(appUsers, and(eq(appUsers.account_id, devices.account_id), eq(appUsers.id, devices.user_id)))
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

// The reads of every batch of dialog events are fixed texts: the query builder took ~18 µs of CPU to
// write each one every time.

/** The ids of these accounts that exist, in one read. */
/**
 * Which of these accounts exist, in one read; with a cache, each account's answer is kept until the
 * account changes (created, suspended, removed: its row's trigger tells).
 */
export async function existingAccountIds(db: DbOrTx, ids: string[], cache?: ConfigCache): Promise<Set<string>> {
  if (!ids.length) return new Set();
  if (cache) {
    const found = await cache.readEach(
      "account-exists\u0000",
      ids.map((id) => ({ account_id: id, id: "" })),
      async (missing) => new Map([...(await existingAccountIds(db, missing.map((m) => m.account_id)))].map((id) => [`${id}\u0000`, true])),
    );
    return new Set([...found.keys()].map((k) => k.slice(0, -1)));
  }
  const byId = ids.length === 1 ? sql`id = ${ids[0]!}` : sql`id = any(${sql.param(ids)}::text[])`;
  const rows = await rawRows<{ id: string }>(db, sql`select id from account where ${byId}`);
  return new Set(rows.map((r) => r.id));
}

/**
 * Which of these (account, user) pairs exist, and whether each is an agent, in one read; keyed
 * `account\u0000user`. With a cache, kept until the account's configuration changes.
 */
export async function existingUserKeys(db: DbOrTx, keys: Array<{ account_id: string; id: string }>, cache?: ConfigCache): Promise<Map<string, { is_agent: number }>> {
  if (!keys.length) return new Map();
  if (cache) return cache.readEach("user-exists\u0000", keys, (missing) => existingUserKeys(db, missing));
  const byKey =
    keys.length === 1
      ? sql`account_id = ${keys[0]!.account_id} and id = ${keys[0]!.id}`
      : sql`(account_id, id) in (select k.account_id, k.id from ${jsonRows(keys, "k", "account_id text, id text")})`;
  const rows = await rawRows<{ account_id: string; id: string; is_agent: unknown }>(db, sql`select account_id, id, is_agent from app_user where ${byKey}`);
  return new Map(rows.map((r) => [`${r.account_id}\u0000${r.id}`, { is_agent: rawNumber(r.is_agent) }]));
}

/**
 * Owners of these (account, device) pairs (legs that carry only a device id) and whether each is an
 * agent, in one read; keyed `account\u0000device`. With a cache, kept until the account's
 * configuration changes.
 */
export async function deviceOwners(
  db: DbOrTx,
  keys: Array<{ account_id: string; id: string }>,
  cache?: ConfigCache,
): Promise<Map<string, { user_id: string; is_agent: number | null }>> {
  if (!keys.length) return new Map();
  if (cache) return cache.readEach("device-owner\u0000", keys, (missing) => deviceOwners(db, missing));
  const rows = await rawRows<{ account_id: string; id: string; user_id: string; is_agent: unknown }>(
    db,
    sql`select d.account_id, d.id, d.user_id, u.is_agent
        from device d left join app_user u on u.account_id = d.account_id and u.id = d.user_id
        where (d.account_id, d.id) in (select k.account_id, k.id from ${jsonRows(keys, "k", "account_id text, id text")})`,
  );
  return new Map(rows.map((r) => [`${r.account_id}\u0000${r.id}`, { user_id: r.user_id, is_agent: rawNumberOrNull(r.is_agent) }]));
}

/** The roster's users (or its agents only), by extension. */
export async function listRosterUsers(db: DbOrTx, accountId: string, options: { agentsOnly?: boolean } = {}) {
  return db
    .select({ id: appUsers.id, name: appUsers.display_name, extension: appUsers.username, user_status: appUsers.status, is_agent: appUsers.is_agent })
    .from(appUsers)
    .where(options.agentsOnly ? and(eq(appUsers.account_id, accountId), eq(appUsers.is_agent, 1)) : eq(appUsers.account_id, accountId))
    .orderBy(asc(appUsers.username), asc(appUsers.id));
}
