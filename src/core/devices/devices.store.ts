/** Queries on devices and their digest identities. The only file of this capability that touches drizzle. */
import { and, asc, eq, gt, inArray, sql, type SQL } from "drizzle-orm";
import type { DbOrTx } from "../db/db.ts";
import { appUsers } from "../users/users.schema.ts";
import { sipDomains } from "../sip-domains/sip-domains.schema.ts";
import { deviceCredentials, devices, type DeviceRow, type NewDeviceRow } from "./devices.schema.ts";

export type { DeviceRow, NewDeviceRow };

/** Filters of the device list; each one given narrows it. */
export interface DeviceFilters {
  user_id?: string;
  status?: string;
  transport?: string;
  is_webrtc?: number;
}

/** What a device write needs to know about its owner and the account's realms, in one round trip. */
export interface DeviceContext {
  /** The owning user's username (the default auth_username). */
  username: string;
  /** The account's primary SIP domain, else its oldest one; null when it has none. */
  preferred_domain: string | null;
  /** Whether `realm` (when asked about) is one of the account's SIP domains. */
  realm_owned: boolean;
}

/**
 * The owning user and the account's realms, or null when the user is not in the account.
 * One query: a device create runs it once per device. Locks the user row (key share: a delete waits, a patch does not) for the transaction.
 */
export async function findDeviceContext(db: DbOrTx, accountId: string, userId: string, realm: string | null): Promise<DeviceContext | null> {
  const [row] = await db
    .select({
      username: appUsers.username,
      preferred_domain: sql<string | null>`(select ${sipDomains.domain} from ${sipDomains} where ${sipDomains.account_id} = ${accountId} order by ${sipDomains.is_primary} desc, ${sipDomains.created_at}, ${sipDomains.domain} limit 1)`,
      realm_owned:
        realm === null
          ? sql<boolean>`false`
          : sql<boolean>`exists(select 1 from ${sipDomains} where ${sipDomains.account_id} = ${accountId} and ${sipDomains.domain} = ${realm})`,
    })
    .from(appUsers)
    .where(and(eq(appUsers.account_id, accountId), eq(appUsers.id, userId)))
    .limit(1)
    // Holds off a concurrent delete of the user until this write commits, so no device outlives its user.
    .for("key share");
  return row ? { username: row.username, preferred_domain: row.preferred_domain ?? null, realm_owned: row.realm_owned === true } : null;
}

/**
 * Inserts a device and its digest identity. The identity goes first: its primary key is the
 * platform-wide uniqueness check on (realm, auth_username). Run inside a transaction.
 */
export async function insertDevice(tx: DbOrTx, row: NewDeviceRow): Promise<DeviceRow> {
  await tx.insert(deviceCredentials).values({ realm: row.realm, auth_username: row.auth_username, account_id: row.account_id, device_id: row.id });
  const [created] = await tx.insert(devices).values(row).returning();
  if (!created) throw new Error("insert returned no row");
  return created;
}

export async function findDevice(db: DbOrTx, accountId: string, id: string): Promise<DeviceRow | null> {
  const [row] = await db.select().from(devices).where(and(eq(devices.account_id, accountId), eq(devices.id, id))).limit(1);
  return row ?? null;
}

/** Devices of an account after `afterId`, in id (creation) order. */
export async function listDeviceRows(db: DbOrTx, accountId: string, filters: DeviceFilters, afterId: string | null, limit: number): Promise<DeviceRow[]> {
  const where: SQL[] = [eq(devices.account_id, accountId)];
  if (afterId) where.push(gt(devices.id, afterId));
  if (filters.user_id !== undefined) where.push(eq(devices.user_id, filters.user_id));
  if (filters.status !== undefined) where.push(eq(devices.status, filters.status));
  if (filters.transport !== undefined) where.push(eq(devices.transport, filters.transport));
  if (filters.is_webrtc !== undefined) where.push(eq(devices.is_webrtc, filters.is_webrtc));
  return db.select().from(devices).where(and(...where)).orderBy(asc(devices.id)).limit(limit);
}

/** Every device of one user, oldest first. */
export async function listDevicesOfUser(db: DbOrTx, accountId: string, userId: string): Promise<DeviceRow[]> {
  return db.select().from(devices).where(and(eq(devices.account_id, accountId), eq(devices.user_id, userId))).orderBy(asc(devices.id));
}

/**
 * Updates a device. When its digest identity changes, the old identity row is replaced by the new one
 * (409-worthy unique violation when the new one is taken). Run inside a transaction.
 */
export async function updateDeviceRow(
  tx: DbOrTx,
  current: DeviceRow,
  patch: Partial<NewDeviceRow>,
  identity: { realm: string; auth_username: string } | null,
): Promise<DeviceRow> {
  if (identity) {
    await tx
      .delete(deviceCredentials)
      .where(and(eq(deviceCredentials.realm, current.realm), eq(deviceCredentials.auth_username, current.auth_username)));
    await tx.insert(deviceCredentials).values({ ...identity, account_id: current.account_id, device_id: current.id });
  }
  const [row] = await tx
    .update(devices)
    .set(patch)
    .where(and(eq(devices.account_id, current.account_id), eq(devices.id, current.id)))
    .returning();
  if (!row) throw new Error("update returned no row");
  return row;
}

/** Deletes one device and its digest identity. Run inside a transaction. */
export async function deleteDeviceRow(tx: DbOrTx, accountId: string, id: string): Promise<boolean> {
  const rows = await tx.delete(devices).where(and(eq(devices.account_id, accountId), eq(devices.id, id))).returning({ id: devices.id });
  await tx.delete(deviceCredentials).where(and(eq(deviceCredentials.account_id, accountId), eq(deviceCredentials.device_id, id)));
  return rows.length > 0;
}

/** Deletes every device of a user and their digest identities. Run inside a transaction. */
export async function deleteDevicesOfUser(tx: DbOrTx, accountId: string, userId: string): Promise<string[]> {
  const rows = await tx
    .delete(devices)
    .where(and(eq(devices.account_id, accountId), eq(devices.user_id, userId)))
    .returning({ id: devices.id });
  const ids = rows.map((r) => r.id);
  if (ids.length) await tx.delete(deviceCredentials).where(and(eq(deviceCredentials.account_id, accountId), inArray(deviceCredentials.device_id, ids)));
  return ids;
}

/** What the edge's /auth needs about a digest identity. */
export interface DigestCredential {
  account_id: string;
  device_id: string;
  user_id: string;
  ha1: string;
  ha1b: string;
  transport: string;
  is_webrtc: number;
  device_status: string;
  user_status: string;
}

/** Resolves a digest identity (realm, auth_username) platform-wide, with its device and user. */
export async function findDigestCredentialRow(db: DbOrTx, realm: string, authUsername: string): Promise<DigestCredential | null> {
  const [ref] = await db
    .select()
    .from(deviceCredentials)
    .where(and(eq(deviceCredentials.realm, realm), eq(deviceCredentials.auth_username, authUsername)))
    .limit(1);
  if (!ref) return null;
  const [row] = await db
    .select({
      account_id: devices.account_id,
      device_id: devices.id,
      user_id: devices.user_id,
      ha1: devices.ha1,
      ha1b: devices.ha1b,
      transport: devices.transport,
      is_webrtc: devices.is_webrtc,
      device_status: devices.status,
      user_status: appUsers.status,
    })
    .from(devices)
    .innerJoin(appUsers, and(eq(appUsers.account_id, devices.account_id), eq(appUsers.id, devices.user_id)))
    .where(and(eq(devices.account_id, ref.account_id), eq(devices.id, ref.device_id)))
    .limit(1);
  return row ?? null;
}
