/** Use cases on credentials: API keys, console users, login. */
import type { DbOrTx } from "../db/db.ts";
import { AppError, conflict, isUniqueViolation, notFound, validationFailed } from "../errors/app-error.ts";
import { newId } from "../ids/ids.ts";
import { nowSeconds } from "../db/columns.ts";
import { decodeCursor, toPage } from "../pagination/pagination.ts";
import { findAccount } from "../accounts/accounts.store.ts";
import { findUser } from "../users/users.store.ts";
import type { AuthModel } from "./auth.model.ts";
import { isScope, ungrantable } from "./scopes.ts";
import { hashApiKeySecret, newApiKeySecret } from "./secrets-format.ts";
import { SESSION_TOKEN_TTL_SEC, type SessionTokens } from "./session-tokens.ts";
import {
  findConsoleUserByEmail,
  insertApiKey,
  insertConsoleUser,
  listActiveApiKeys,
  revokeApiKey,
  type ApiKeyRow,
  type ConsoleUserRow,
} from "./auth.store.ts";

function toApiKey(row: ApiKeyRow): AuthModel.ApiKey {
  return { id: row.id, label: row.label, scopes: row.scopes, secret_hint: row.secret_hint, created_at: row.created_at };
}

function toConsoleUser(row: ConsoleUserRow): AuthModel.ConsoleUser {
  return {
    id: row.id,
    account_id: row.account_id,
    email: row.email,
    scopes: row.scopes,
    user_id: row.user_id,
    status: row.status,
    created_at: row.created_at,
  };
}

function checkScopes(requested: readonly string[], path: string): void {
  const unknown = requested.filter((s) => !isScope(s));
  if (unknown.length) throw validationFailed([{ path, message: `Unknown scope(s): ${unknown.join(", ")}.` }]);
}

/** Options of createApiKey. */
export interface CreateApiKeyOptions {
  accountId: string;
  label?: string;
  /** Requested scopes; default: all the grantor holds (`*` for an operator). */
  scopes?: string[];
  /** The scopes of whoever mints the key; null for an operator (admin token, CLI, first run). */
  grantorScopes: string[] | null;
}

/**
 * Mints an API key. The secret is returned here and never again; only its hash is kept.
 * A credential cannot mint a key with a scope it does not hold itself.
 */
export async function createApiKey(db: DbOrTx, options: CreateApiKeyOptions): Promise<AuthModel.ApiKeyCreated> {
  const scopes = options.scopes ?? options.grantorScopes ?? ["*"];
  checkScopes(scopes, "/scopes");
  if (options.grantorScopes) {
    const denied = ungrantable(options.grantorScopes, scopes);
    if (denied.length) {
      throw new AppError("forbidden", `This credential cannot grant scope(s) it does not hold: ${denied.join(", ")}.`, { need: denied[0] });
    }
  }
  const account = await findAccount(db, options.accountId);
  if (!account) throw notFound("account");
  const secret = newApiKeySecret();
  const row = await insertApiKey(
    db,
    {
      account_id: options.accountId,
      id: newId("sk"),
      label: options.label ?? null,
      scopes,
      secret_hint: secret.slice(-4),
      created_at: nowSeconds(),
    },
    hashApiKeySecret(secret),
  );
  return { ...toApiKey(row), secret };
}

/** Active keys of the account, keyset-paginated, without secrets. */
export async function listApiKeys(
  db: DbOrTx,
  accountId: string,
  page: { limit: number; cursor?: string },
): Promise<{ data: AuthModel.ApiKey[]; next_cursor?: string }> {
  const rows = await listActiveApiKeys(db, accountId, decodeCursor(page.cursor, "sk"), page.limit);
  return toPage(rows, page.limit, toApiKey);
}

/** Revokes a key of the account; another account's key, or an already revoked one, is a 404. */
export async function revokeKey(db: DbOrTx, accountId: string, keyId: string): Promise<void> {
  if (!(await revokeApiKey(db, accountId, keyId, nowSeconds()))) throw notFound("API key");
}

/** Normalizes an email for login lookup: trimmed and lower-cased. */
export function normalizeEmail(email: string): string {
  return email.trim().toLowerCase();
}

/** Creates a console login (operator action). Emails are unique across the platform: 409 when taken. */
export async function createConsoleUser(
  db: DbOrTx,
  input: { account_id: string; email: string; password: string; scopes?: string[]; user_id?: string },
): Promise<AuthModel.ConsoleUser> {
  const scopes = input.scopes ?? ["*"];
  checkScopes(scopes, "/scopes");
  const account = await findAccount(db, input.account_id);
  if (!account) throw validationFailed([{ path: "/account_id", message: "No such account." }]);
  if (input.user_id !== undefined && !(await findUser(db, input.account_id, input.user_id))) {
    throw validationFailed([{ path: "/user_id", message: "No such user in this account." }]);
  }
  const now = nowSeconds();
  try {
    const row = await insertConsoleUser(db, {
      account_id: input.account_id,
      id: newId("cu"),
      email: normalizeEmail(input.email),
      password_hash: await Bun.password.hash(input.password, { algorithm: "argon2id" }),
      scopes,
      user_id: input.user_id ?? null,
      created_at: now,
      updated_at: now,
    });
    return toConsoleUser(row);
  } catch (error) {
    if (isUniqueViolation(error)) throw conflict("A console user with this email already exists.", { field: "email" });
    throw error;
  }
}

// Verified against when the email is unknown, so a miss costs as long as a hit (no user enumeration by timing).
const DUMMY_HASH = Bun.password.hashSync("parley-timing-equalizer", { algorithm: "argon2id" });

/**
 * Exchanges email and password for a session token. Every failure is the same 401, whatever failed.
 */
export async function login(db: DbOrTx, tokens: SessionTokens, input: AuthModel.Login): Promise<AuthModel.LoginReply> {
  const user = await findConsoleUserByEmail(db, normalizeEmail(input.email));
  const ok = await Bun.password.verify(input.password, user?.password_hash ?? DUMMY_HASH);
  const refused = new AppError("unauthorized", "Wrong email or password.");
  if (!user || !ok || user.status !== "active") throw refused;
  const account = await findAccount(db, user.account_id);
  if (!account || account.status !== "active") throw refused;
  const token = await tokens.issue({ sub: user.id, acc: user.account_id, scopes: user.scopes });
  return { ok: true, token, token_type: "Bearer", expires_in: SESSION_TOKEN_TTL_SEC, scopes: user.scopes };
}
