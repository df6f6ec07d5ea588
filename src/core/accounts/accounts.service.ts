/** Use cases on accounts. Each begins with its access rule; none knows about HTTP. */
import type { DbOrTx } from "../db/db.ts";
import { AppError, conflict, notFound, validationFailed } from "../errors/app-error.ts";
import { newId } from "../ids/ids.ts";
import { nowSeconds } from "../db/columns.ts";
import { decodeCursor, toPage } from "../pagination/pagination.ts";
import type { AccountRow } from "./accounts.schema.ts";
import type { AccountModel } from "./accounts.model.ts";
import { findAccount, insertAccount, isKnownTimeZone, listChildAccounts, updateAccount } from "./accounts.store.ts";
import { normalizeE164 } from "../validation/fields.ts";
import { checkRouteTargets } from "../routing/route-target.ts";

/** Maps a row to the API shape (every field, fixed order). */
export function toAccount(row: AccountRow): AccountModel.Account {
  return {
    id: row.id,
    name: row.name,
    parent_id: row.parent_id,
    status: row.status as AccountModel.Account["status"],
    is_reseller: row.is_reseller === 1 ? 1 : 0,
    timezone: row.timezone,
    brand_name: row.brand_name,
    brand_domain: row.brand_domain,
    max_in: row.max_in,
    max_out: row.max_out,
    max_dialer: row.max_dialer,
    default_cid_number: row.default_cid_number,
    language: row.language,
    voice_gender: row.voice_gender as AccountModel.Account["voice_gender"],
    tone_country: row.tone_country,
    recording_retention_days: row.recording_retention_days,
    allow_free_caller_id: row.allow_free_caller_id === 1 ? 1 : 0,
    did_default_dest_kind: row.did_default_dest_kind,
    did_default_dest_id: row.did_default_dest_id,
    rate_limit_requests: row.rate_limit_requests,
    created_at: row.created_at,
    updated_at: row.updated_at,
  };
}

/**
 * Creates an account (operator action). A parent must exist and be a reseller.
 * @example await createAccount(db, { name: "Acme" })
 */
export async function createAccount(db: DbOrTx, input: AccountModel.AdminCreate): Promise<AccountModel.Account> {
  await checkTimeZone(db, input.timezone);
  if (input.parent_id) {
    const parent = await findAccount(db, input.parent_id);
    if (!parent) throw validationFailed([{ path: "/parent_id", message: "No such account." }]);
    if (parent.is_reseller !== 1) throw validationFailed([{ path: "/parent_id", message: "The parent account is not a reseller." }]);
  }
  const now = nowSeconds();
  const row = await insertAccount(db, {
    id: newId("acc"),
    name: input.name,
    parent_id: input.parent_id ?? null,
    is_reseller: input.is_reseller ?? 0,
    timezone: input.timezone ?? "UTC",
    language: input.language ?? "en-US",
    tone_country: input.tone_country ?? "US",
    max_in: input.max_in ?? null,
    max_out: input.max_out ?? null,
    max_dialer: input.max_dialer ?? null,
    rate_limit_requests: input.rate_limit_requests ?? null,
    created_at: now,
    updated_at: now,
  });
  return toAccount(row);
}

/** The caller's own account. */
export async function getAccount(db: DbOrTx, accountId: string): Promise<AccountModel.Account> {
  const row = await findAccount(db, accountId);
  if (!row) throw notFound("account");
  return toAccount(row);
}

/** Applies the self-service fields that were sent; nothing else can change through here. */
export async function patchAccount(db: DbOrTx, accountId: string, patch: AccountModel.Patch): Promise<AccountModel.Account> {
  await checkTimeZone(db, patch.timezone);
  const row = await updateAccount(db, accountId, { ...patch, updated_at: nowSeconds() });
  if (!row) throw notFound("account");
  return toAccount(row);
}

/**
 * Operator changes to an account: its status (suspend a tenant that stopped paying or was
 * compromised: its API keys, console logins and SIP devices stop working, its numbers refuse calls;
 * close it for good), name, ceilings, default caller-ID and DID default destination (checked like any
 * destination: it must exist in this account). A closed account stays closed (409).
 */
export async function adminPatchAccount(db: DbOrTx, accountId: string, patch: AccountModel.AdminPatch): Promise<AccountModel.Account> {
  const current = await findAccount(db, accountId);
  if (!current) throw notFound("account");
  if (current.status === "closed" && patch.status !== undefined && patch.status !== "closed") {
    throw conflict("A closed account cannot be reopened; create a new one.", { field: "status" });
  }
  const changes: Partial<AccountRow> = { ...patch };
  if (patch.default_cid_number !== undefined && patch.default_cid_number !== null) {
    const e164 = normalizeE164(patch.default_cid_number);
    if (e164 === null) throw validationFailed([{ path: "/default_cid_number", message: "Not an E.164 number (country code and 7–14 more digits)." }]);
    changes.default_cid_number = e164;
  }
  if (patch.did_default_dest_kind !== undefined || patch.did_default_dest_id !== undefined) {
    // A PATCH merges onto the stored slot (the id alone keeps the kind; another kind alone drops the
    // old id), and the pair is checked.
    const kind = patch.did_default_dest_kind !== undefined ? patch.did_default_dest_kind : current.did_default_dest_kind;
    const id = patch.did_default_dest_id !== undefined ? patch.did_default_dest_id : kind === current.did_default_dest_kind ? current.did_default_dest_id : null;
    await checkRouteTargets(db, accountId, [{ prefix: "did_default_dest", kind, id }]);
    changes.did_default_dest_kind = kind;
    changes.did_default_dest_id = id;
  }
  const row = await updateAccount(db, accountId, { ...changes, updated_at: nowSeconds() });
  if (!row) throw notFound("account");
  return toAccount(row);
}

/** Subaccounts of a reseller, keyset-paginated. A non-reseller has none to manage: 403. */
export async function listSubaccounts(
  db: DbOrTx,
  accountId: string,
  page: { limit: number; cursor?: string },
): Promise<{ data: AccountModel.Account[]; next_cursor?: string }> {
  const self = await findAccount(db, accountId);
  if (!self) throw notFound("account");
  if (self.is_reseller !== 1) {
    throw new AppError("forbidden", "Only reseller accounts have subaccounts.", { need: "accounts" });
  }
  const rows = await listChildAccounts(db, accountId, decodeCursor(page.cursor, "acc"), page.limit);
  return toPage(rows, page.limit, toAccount);
}

/** A zone the runtime knows (the model's format) must be one the database knows too (400 /timezone). */
async function checkTimeZone(db: DbOrTx, timezone: string | undefined): Promise<void> {
  if (timezone === undefined || (await isKnownTimeZone(db, timezone))) return;
  throw validationFailed([{ path: "/timezone", message: "Not a time zone the database knows (an old alias?); use a current IANA name such as America/Los_Angeles." }]);
}
