/** Use cases on voicemail boxes. Each takes the database (or transaction) and the account explicitly; none knows about HTTP. */
import type { DbOrTx } from "../db/db.ts";
import { nowSeconds } from "../db/columns.ts";
import { notFound, validationFailed, type ErrorDetail } from "../errors/app-error.ts";
import { newId } from "../ids/ids.ts";
import { decodeCursor, toPage } from "../pagination/pagination.ts";
import { assertNotInUse } from "../routing/references.ts";
import type { SecretStore } from "../secrets/secrets.service.ts";
import type { VoicemailModel } from "./voicemail.model.ts";
import type { VoicemailRow } from "./voicemail.schema.ts";
import { pinsMatch, removePinSecrets, writePinSecret } from "./pin-secret.ts";
import {
  deleteVoicemailRow,
  findVoicemail,
  insertVoicemail,
  listVoicemailRows,
  updateVoicemailRow,
} from "./voicemail.store.ts";
import { rowExists } from "../db/row-exists.ts";

/** The writable fields of a box (a create or an update, without the upsert's `id`). */
export type VoicemailFields = Omit<VoicemailModel.Upsert, "id">;

/** Maps a row to the API shape: the PIN ref becomes has_pin, nothing else about the PIN leaves. */
export function toVoicemail(row: VoicemailRow): VoicemailModel.Voicemail {
  return {
    id: row.id,
    name: row.name,
    greeting_media_id: row.greeting_media_id,
    skip_instructions: row.skip_instructions === 1 ? 1 : 0,
    quota_mb: row.quota_mb,
    notify_email: row.notify_email,
    has_pin: row.pin_secret_ref ? 1 : 0,
    max_message_sec: row.max_message_sec,
    language: row.language,
    created_at: row.created_at,
    updated_at: row.updated_at,
  };
}

/** Problems with what the fields refer to: the greeting must be a media file of this account. */
async function referenceProblems(db: DbOrTx, accountId: string, fields: VoicemailFields): Promise<ErrorDetail[]> {
  const details: ErrorDetail[] = [];
  if (fields.greeting_media_id && !(await rowExists(db, "media_file", accountId, fields.greeting_media_id))) {
    details.push({ path: "/greeting_media_id", message: "No such media file in this account." });
  }
  return details;
}

/**
 * Creates a box; its PIN (if any) goes to the secret store in the same transaction.
 * @example await createVoicemail(db, platform.secrets, accountId, { name: "Sales", pin: "4321" })
 */
export async function createVoicemail(db: DbOrTx, secrets: SecretStore, accountId: string, fields: VoicemailFields): Promise<VoicemailModel.Voicemail> {
  const { name } = fields;
  if (name === undefined) throw validationFailed([{ path: "/name", message: "A name is required to create a box." }]);
  return db.transaction(async (tx) => {
    const details = await referenceProblems(tx, accountId, fields);
    if (details.length) throw validationFailed(details);
    const now = nowSeconds();
    const row = await insertVoicemail(tx, {
      account_id: accountId,
      id: newId("vm"),
      name,
      greeting_media_id: fields.greeting_media_id ?? null,
      skip_instructions: fields.skip_instructions ?? 0,
      quota_mb: fields.quota_mb ?? 100,
      notify_email: fields.notify_email ?? null,
      pin_secret_ref: fields.pin ? await secrets.put(tx, accountId, fields.pin) : null,
      max_message_sec: fields.max_message_sec ?? 300,
      language: fields.language ?? null,
      created_at: now,
      updated_at: now,
    });
    return toVoicemail(row);
  });
}

/** Applies the fields sent to a box of this account (404 otherwise); a new PIN replaces the old, null removes it. */
export async function updateVoicemail(
  db: DbOrTx,
  secrets: SecretStore,
  accountId: string,
  id: string,
  fields: VoicemailFields,
): Promise<VoicemailModel.Voicemail> {
  return db.transaction(async (tx) => {
    const current = await findVoicemail(tx, accountId, id, { forUpdate: true });
    if (!current) throw notFound("voicemail box");
    const details = await referenceProblems(tx, accountId, fields);
    if (details.length) throw validationFailed(details);
    const { pin, ...columns } = fields;
    const pin_secret_ref = await writePinSecret(tx, secrets, accountId, current.pin_secret_ref, pin);
    const row = await updateVoicemailRow(tx, accountId, id, { ...columns, pin_secret_ref, updated_at: nowSeconds() });
    if (!row) throw notFound("voicemail box");
    return toVoicemail(row);
  });
}

/**
 * POST /v1/voicemails: without `id` creates a box; with the id of a box of this account updates it;
 * an id this account does not have is a 404 (ids are never chosen by the client).
 */
export async function upsertVoicemail(
  db: DbOrTx,
  secrets: SecretStore,
  accountId: string,
  body: VoicemailModel.Upsert,
): Promise<{ created: boolean; box: VoicemailModel.Voicemail }> {
  const { id, ...fields } = body;
  if (id === undefined) return { created: true, box: await createVoicemail(db, secrets, accountId, fields) };
  return { created: false, box: await updateVoicemail(db, secrets, accountId, id, fields) };
}

/** One box of this account. */
export async function getVoicemail(db: DbOrTx, accountId: string, id: string): Promise<VoicemailModel.Voicemail> {
  const row = await findVoicemail(db, accountId, id);
  if (!row) throw notFound("voicemail box");
  return toVoicemail(row);
}

/** The account's boxes, keyset-paginated in creation order; `q` keeps those whose name starts with it (any case). */
export async function listVoicemails(
  db: DbOrTx,
  accountId: string,
  page: { limit: number; cursor?: string; q?: string },
): Promise<{ data: VoicemailModel.Voicemail[]; next_cursor?: string }> {
  const rows = await listVoicemailRows(db, accountId, { afterId: decodeCursor(page.cursor, "vm"), namePrefix: page.q }, page.limit);
  return toPage(rows, page.limit, toVoicemail);
}

/**
 * Deletes a box and its PIN secret. Refused (409, naming them) while a number, extension, queue exit,
 * user or anything else still routes to it.
 */
export async function deleteVoicemail(db: DbOrTx, secrets: SecretStore, accountId: string, id: string): Promise<void> {
  await db.transaction(async (tx) => {
    const row = await findVoicemail(tx, accountId, id, { forUpdate: true });
    if (!row) throw notFound("voicemail box");
    await assertNotInUse(tx, accountId, "voicemail", id);
    await deleteVoicemailRow(tx, accountId, id);
    await removePinSecrets(tx, secrets, accountId, [row.pin_secret_ref]);
  });
}

/**
 * True when `pin` is the PIN of box `boxId` of this account (for the media path: checking a caller's
 * own voicemail). False for a box that does not exist, belongs to another account or has no PIN:
 * whether a PIN-less box may be opened is the caller's decision, not a match.
 * @example if (!(await verifyVoicemailPin(db, platform.secrets, accountId, "vm_…", digits))) replayPrompt()
 */
export async function verifyVoicemailPin(db: DbOrTx, secrets: SecretStore, accountId: string, boxId: string, pin: string): Promise<boolean> {
  const row = await findVoicemail(db, accountId, boxId);
  if (!row?.pin_secret_ref) return false;
  const stored = await secrets.reveal(db, accountId, row.pin_secret_ref);
  if (stored === null) return false;
  return pinsMatch(stored, pin);
}
