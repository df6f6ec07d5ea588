/**
 * Use cases on devices: registering SIP endpoints of a user and their digest credentials. The password
 * a caller sends is turned into the digest hashes at once and then forgotten: it is never stored,
 * returned or logged.
 */
import type { DbOrTx } from "../db/db.ts";
import { nowSeconds } from "../db/columns.ts";
import { conflict, isUniqueViolation, notFound, validationFailed, type ErrorDetail } from "../errors/app-error.ts";
import { newId } from "../ids/ids.ts";
import { decodeCursor, toPage } from "../pagination/pagination.ts";
import { assertNotInUse } from "../routing/references.ts";
import type { DeviceModel } from "./devices.model.ts";
import { digestHashes } from "./digest.ts";
import { defaultRealm } from "./realm.ts";
import {
  deleteDeviceRow,
  findDevice,
  findDeviceContext,
  findDigestCredentialRow,
  insertDevice,
  listDeviceRows,
  updateDeviceRow,
  type DeviceContext,
  type DeviceFilters,
  type DeviceRow,
  type DigestCredential,
} from "./devices.store.ts";

/** Maps a row to the API shape: the digest identity, never the hashes. */
export function toDevice(row: DeviceRow): DeviceModel.Device {
  return {
    id: row.id,
    user_id: row.user_id,
    auth_username: row.auth_username,
    realm: row.realm,
    transport: row.transport as DeviceModel.Device["transport"],
    is_webrtc: row.is_webrtc === 1 ? 1 : 0,
    status: row.status as DeviceModel.Device["status"],
    label: row.label,
    created_at: row.created_at,
    updated_at: row.updated_at,
  };
}

const TAKEN = "This auth_username is already used in this realm (digest identities are unique per realm across the platform).";

/**
 * The realm a write will use: the one asked for when the account answers on it (one of its SIP
 * domains, or its default realm), else the account's preferred SIP domain, else the default realm.
 */
function chooseRealm(accountId: string, requested: string | undefined, context: DeviceContext, details: ErrorDetail[]): string {
  const fallback = defaultRealm(accountId);
  if (requested === undefined) return context.preferred_domain ?? fallback;
  if (requested !== fallback && !context.realm_owned) {
    details.push({ path: "/realm", message: `Not a SIP domain of this account; use one of its SIP domains or ${fallback}.` });
  }
  return requested;
}

/** WebRTC endpoints register over WebSocket (SPEC.md), so is_webrtc 1 needs transport wss. */
function checkWebrtc(transport: string, isWebrtc: number, path: "/is_webrtc" | "/transport", details: ErrorDetail[]): void {
  if (isWebrtc === 1 && transport !== "wss") details.push({ path, message: "A WebRTC device (is_webrtc 1) registers over wss; set transport wss or is_webrtc 0." });
}

const NO_SUCH_USER = { path: "/user_id", message: "No such user in this account." };

/**
 * Creates a device for a user of the account: one transaction, one lookup and two inserts.
 * The realm defaults to the account's primary SIP domain (else its default realm), the digest
 * username to the user's username, is_webrtc to 1 for transport wss.
 * @example await createDevice(db, accountId, { user_id: "us_…", password: "s3cret-pass" })
 */
export async function createDevice(db: DbOrTx, accountId: string, input: DeviceModel.Create): Promise<DeviceModel.Device> {
  const transport = input.transport ?? "udp";
  const isWebrtc = input.is_webrtc ?? (transport === "wss" ? 1 : 0);
  try {
    return await db.transaction(async (tx) => {
      const context = await findDeviceContext(tx, accountId, input.user_id, input.realm ?? null);
      if (!context) throw validationFailed([NO_SUCH_USER]);
      const details: ErrorDetail[] = [];
      const realm = chooseRealm(accountId, input.realm, context, details);
      checkWebrtc(transport, isWebrtc, "/is_webrtc", details);
      if (details.length) throw validationFailed(details);
      const authUsername = input.auth_username ?? context.username;
      const now = nowSeconds();
      const row = await insertDevice(tx, {
        account_id: accountId,
        id: newId("dev"),
        user_id: input.user_id,
        auth_username: authUsername,
        realm,
        ...digestHashes(authUsername, realm, input.password),
        transport,
        is_webrtc: isWebrtc,
        status: input.status ?? "active",
        label: input.label ?? null,
        created_at: now,
        updated_at: now,
      });
      return toDevice(row);
    });
  } catch (error) {
    if (isUniqueViolation(error)) throw conflict(TAKEN, { field: "auth_username" });
    throw error;
  }
}

/** One device of the account. */
export async function getDevice(db: DbOrTx, accountId: string, id: string): Promise<DeviceModel.Device> {
  const row = await findDevice(db, accountId, id);
  if (!row) throw notFound("device");
  return toDevice(row);
}

/** Devices of the account, keyset-paginated, narrowed by the filters given. */
export async function listDevices(
  db: DbOrTx,
  accountId: string,
  query: DeviceFilters & { limit: number; cursor?: string },
): Promise<{ data: DeviceModel.Device[]; next_cursor?: string }> {
  const { limit, cursor, ...filters } = query;
  const rows = await listDeviceRows(db, accountId, filters, decodeCursor(cursor, "dev"), limit);
  return toPage(rows, limit, toDevice);
}

/**
 * Changes the fields sent. The digest hashes cover auth_username, realm and password together, so a
 * new auth_username or realm needs the password in the same request (400 on /password otherwise).
 */
export async function updateDevice(db: DbOrTx, accountId: string, id: string, patch: DeviceModel.Patch): Promise<DeviceModel.Device> {
  try {
    return await db.transaction(async (tx) => {
      const current = await findDevice(tx, accountId, id);
      if (!current) throw notFound("device");
      const next = {
        user_id: patch.user_id ?? current.user_id,
        auth_username: patch.auth_username ?? current.auth_username,
        realm: patch.realm ?? current.realm,
        transport: patch.transport ?? current.transport,
        is_webrtc: patch.is_webrtc ?? current.is_webrtc,
      };
      const identityChanged = next.auth_username !== current.auth_username || next.realm !== current.realm;
      const details: ErrorDetail[] = [];
      if (identityChanged && patch.password === undefined) {
        details.push({
          path: "/password",
          message: "Changing auth_username or realm needs the password too: the digest hashes are computed from all three and the password is not kept.",
        });
      }
      if (next.user_id !== current.user_id || next.realm !== current.realm) {
        const context = await findDeviceContext(tx, accountId, next.user_id, next.realm);
        if (!context) details.push(NO_SUCH_USER);
        else if (next.realm !== current.realm) chooseRealm(accountId, next.realm, context, details);
      }
      checkWebrtc(next.transport, next.is_webrtc, patch.transport !== undefined && patch.is_webrtc === undefined ? "/transport" : "/is_webrtc", details);
      if (details.length) throw validationFailed(details);
      const changes = {
        ...next,
        ...(patch.status !== undefined ? { status: patch.status } : {}),
        ...(patch.label !== undefined ? { label: patch.label } : {}),
        ...(patch.password !== undefined ? digestHashes(next.auth_username, next.realm, patch.password) : {}),
        updated_at: nowSeconds(),
      };
      const row = await updateDeviceRow(tx, current, changes, identityChanged ? { realm: next.realm, auth_username: next.auth_username } : null);
      return toDevice(row);
    });
  } catch (error) {
    if (isUniqueViolation(error)) throw conflict(TAKEN, { field: "auth_username" });
    throw error;
  }
}

/** Deletes a device and its digest identity; 409 while a ring group still rings it. */
export async function deleteDevice(db: DbOrTx, accountId: string, id: string): Promise<void> {
  await db.transaction(async (tx) => {
    if (!(await findDevice(tx, accountId, id))) throw notFound("device");
    await assertNotInUse(tx, accountId, "device", id);
    await deleteDeviceRow(tx, accountId, id);
  });
}

/**
 * Resolves a digest identity for the edge's /auth: the device with its hashes and the statuses of
 * device and user. The caller decides (device, user and account must all be active) and verifies
 * the digest response against ha1; null when no device has this identity.
 */
export async function findDigestCredential(db: DbOrTx, realm: string, authUsername: string): Promise<DigestCredential | null> {
  return findDigestCredentialRow(db, realm, authUsername);
}

export type { DigestCredential };
