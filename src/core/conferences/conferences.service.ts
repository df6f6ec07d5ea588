/** Use cases on conference rooms. Each takes the database (or transaction) and the account explicitly; none knows about HTTP. */
import type { DbOrTx } from "../db/db.ts";
import { nowSeconds } from "../db/columns.ts";
import { notFound, validationFailed, type ErrorDetail } from "../errors/app-error.ts";
import { newId } from "../ids/ids.ts";
import { decodeCursor, toPage } from "../pagination/pagination.ts";
import { assertNotInUse } from "../routing/references.ts";
import type { SecretStore } from "../secrets/secrets.service.ts";
import { pinsMatch, removePinSecrets, writePinSecret } from "../voicemail/pin-secret.ts";
import type { ConferenceModel } from "./conferences.model.ts";
import type { ConferenceRow } from "./conferences.schema.ts";
import { deleteConferenceRow, findConference, insertConference, listConferenceRows, updateConferenceRow } from "./conferences.store.ts";
import { rowExists } from "../db/row-exists.ts";

/** The writable fields of a room (a create or an update, without the upsert's `id`). */
export type ConferenceFields = Omit<ConferenceModel.Upsert, "id">;

/** Maps a row to the API shape: PIN refs become has_pin / has_admin_pin, nothing else about them leaves. */
export function toConference(row: ConferenceRow): ConferenceModel.Conference {
  return {
    id: row.id,
    name: row.name,
    has_pin: row.pin_secret_ref ? 1 : 0,
    has_admin_pin: row.admin_pin_secret_ref ? 1 : 0,
    max_members: row.max_members,
    moh_media_id: row.moh_media_id,
    record: row.record === 1 ? 1 : 0,
    wait_for_admin: row.wait_for_admin === 1 ? 1 : 0,
    announce_join_leave: row.announce_join_leave === 1 ? 1 : 0,
    created_at: row.created_at,
    updated_at: row.updated_at,
  };
}

/**
 * Every problem a write would leave behind, judged on the room as it will be (the stored row with the
 * fields sent applied): the music must be a media file of this account, the admin PIN must differ
 * from the member PIN (a stored PIN is revealed to compare when only the other one is sent), and
 * waiting for an admin needs an admin PIN.
 */
async function writeProblems(
  db: DbOrTx,
  secrets: SecretStore,
  accountId: string,
  fields: ConferenceFields,
  current: ConferenceRow | null,
): Promise<ErrorDetail[]> {
  const details: ErrorDetail[] = [];
  if (fields.moh_media_id && !(await rowExists(db, "media_file", accountId, fields.moh_media_id))) {
    details.push({ path: "/moh_media_id", message: "No such media file in this account." });
  }
  const storedPin = async (ref: string | null | undefined) => (ref ? secrets.reveal(db, accountId, ref) : null);
  // The PINs the room will have; a stored one is decrypted only when the other is being set, to compare them.
  const pin = fields.pin !== undefined ? fields.pin : fields.admin_pin ? await storedPin(current?.pin_secret_ref) : null;
  const adminPin = fields.admin_pin !== undefined ? fields.admin_pin : fields.pin ? await storedPin(current?.admin_pin_secret_ref) : null;
  if (pin && adminPin && pinsMatch(pin, adminPin)) {
    details.push({ path: fields.admin_pin !== undefined ? "/admin_pin" : "/pin", message: "admin_pin must differ from pin." });
  }
  const waitForAdmin = fields.wait_for_admin ?? current?.wait_for_admin ?? 0;
  const hasAdminPin = fields.admin_pin !== undefined ? fields.admin_pin !== null : Boolean(current?.admin_pin_secret_ref);
  if (waitForAdmin === 1 && !hasAdminPin) {
    const path = fields.wait_for_admin === 1 || fields.admin_pin === undefined ? "/wait_for_admin" : "/admin_pin";
    details.push({ path, message: "wait_for_admin needs an admin_pin: without one nobody could start the conference." });
  }
  return details;
}

/**
 * Creates a room; its PINs (if any) go to the secret store in the same transaction.
 * @example await createConference(db, platform.secrets, accountId, { name: "Weekly", pin: "2468", admin_pin: "97531" })
 */
export async function createConference(db: DbOrTx, secrets: SecretStore, accountId: string, fields: ConferenceFields): Promise<ConferenceModel.Conference> {
  const details: ErrorDetail[] = fields.name === undefined ? [{ path: "/name", message: "A name is required to create a conference." }] : [];
  return db.transaction(async (tx) => {
    details.push(...(await writeProblems(tx, secrets, accountId, fields, null)));
    if (details.length) throw validationFailed(details);
    const now = nowSeconds();
    const row = await insertConference(tx, {
      account_id: accountId,
      id: newId("conf"),
      name: fields.name!,
      pin_secret_ref: fields.pin ? await secrets.put(tx, accountId, fields.pin) : null,
      admin_pin_secret_ref: fields.admin_pin ? await secrets.put(tx, accountId, fields.admin_pin) : null,
      max_members: fields.max_members ?? 50,
      moh_media_id: fields.moh_media_id ?? null,
      record: fields.record ?? 0,
      wait_for_admin: fields.wait_for_admin ?? 0,
      announce_join_leave: fields.announce_join_leave ?? 1,
      created_at: now,
      updated_at: now,
    });
    return toConference(row);
  });
}

/** Applies the fields sent to a room of this account (404 otherwise); a new PIN replaces the old, null removes it. */
export async function updateConference(
  db: DbOrTx,
  secrets: SecretStore,
  accountId: string,
  id: string,
  fields: ConferenceFields,
): Promise<ConferenceModel.Conference> {
  return db.transaction(async (tx) => {
    const current = await findConference(tx, accountId, id, { forUpdate: true });
    if (!current) throw notFound("conference");
    const details = await writeProblems(tx, secrets, accountId, fields, current);
    if (details.length) throw validationFailed(details);
    const { pin, admin_pin, ...columns } = fields;
    const row = await updateConferenceRow(tx, accountId, id, {
      ...columns,
      pin_secret_ref: await writePinSecret(tx, secrets, accountId, current.pin_secret_ref, pin),
      admin_pin_secret_ref: await writePinSecret(tx, secrets, accountId, current.admin_pin_secret_ref, admin_pin),
      updated_at: nowSeconds(),
    });
    if (!row) throw notFound("conference");
    return toConference(row);
  });
}

/**
 * POST /v1/conferences: without `id` creates a room; with the id of a room of this account updates it;
 * an id this account does not have is a 404 (ids are never chosen by the client).
 */
export async function upsertConference(
  db: DbOrTx,
  secrets: SecretStore,
  accountId: string,
  body: ConferenceModel.Upsert,
): Promise<{ created: boolean; room: ConferenceModel.Conference }> {
  const { id, ...fields } = body;
  if (id === undefined) return { created: true, room: await createConference(db, secrets, accountId, fields) };
  return { created: false, room: await updateConference(db, secrets, accountId, id, fields) };
}

/** One room of this account. */
export async function getConference(db: DbOrTx, accountId: string, id: string): Promise<ConferenceModel.Conference> {
  const row = await findConference(db, accountId, id);
  if (!row) throw notFound("conference");
  return toConference(row);
}

/** The account's rooms, keyset-paginated in creation order; `q` keeps those whose name starts with it (any case). */
export async function listConferences(
  db: DbOrTx,
  accountId: string,
  page: { limit: number; cursor?: string; q?: string },
): Promise<{ data: ConferenceModel.Conference[]; next_cursor?: string }> {
  const rows = await listConferenceRows(db, accountId, { afterId: decodeCursor(page.cursor, "conf"), namePrefix: page.q }, page.limit);
  return toPage(rows, page.limit, toConference);
}

/** Deletes a room and its PIN secrets. Refused (409, naming them) while a number, extension or other route still points to it. */
export async function deleteConference(db: DbOrTx, secrets: SecretStore, accountId: string, id: string): Promise<void> {
  await db.transaction(async (tx) => {
    const row = await findConference(tx, accountId, id, { forUpdate: true });
    if (!row) throw notFound("conference");
    await assertNotInUse(tx, accountId, "conference", id);
    await deleteConferenceRow(tx, accountId, id);
    await removePinSecrets(tx, secrets, accountId, [row.pin_secret_ref, row.admin_pin_secret_ref]);
  });
}
