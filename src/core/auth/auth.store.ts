/** Queries on API keys and console users. The only file of this capability that touches drizzle. */
import { and, asc, eq, gt, isNull } from "drizzle-orm";
import type { DbOrTx } from "../db/db.ts";
import { apiKeyLookup, apiKeys, consoleLogin, consoleUsers } from "./auth.schema.ts";

export type ApiKeyRow = typeof apiKeys.$inferSelect;
export type ConsoleUserRow = typeof consoleUsers.$inferSelect;

export async function insertApiKey(db: DbOrTx, row: typeof apiKeys.$inferInsert, secretHash: string): Promise<ApiKeyRow> {
  const [created] = await db.insert(apiKeys).values(row).returning();
  await db.insert(apiKeyLookup).values({ secret_hash: secretHash, account_id: row.account_id, key_id: row.id });
  if (!created) throw new Error("insert returned no row");
  return created;
}

/** Active (not revoked) keys of an account after `afterId`, in creation order. */
export async function listActiveApiKeys(db: DbOrTx, accountId: string, afterId: string | null, limit: number): Promise<ApiKeyRow[]> {
  const base = and(eq(apiKeys.account_id, accountId), isNull(apiKeys.revoked_at));
  return db
    .select()
    .from(apiKeys)
    .where(afterId ? and(base, gt(apiKeys.id, afterId)) : base)
    .orderBy(asc(apiKeys.id))
    .limit(limit);
}

/** Marks a key revoked and drops its lookup row, so the secret stops resolving at once. */
export async function revokeApiKey(db: DbOrTx, accountId: string, keyId: string, at: number): Promise<boolean> {
  const rows = await db
    .update(apiKeys)
    .set({ revoked_at: at })
    .where(and(eq(apiKeys.account_id, accountId), eq(apiKeys.id, keyId), isNull(apiKeys.revoked_at)))
    .returning({ id: apiKeys.id });
  if (rows.length === 0) return false;
  await db.delete(apiKeyLookup).where(and(eq(apiKeyLookup.account_id, accountId), eq(apiKeyLookup.key_id, keyId)));
  return true;
}

/** Whether the account's key exists and is not revoked. */
export async function isApiKeyActive(db: DbOrTx, accountId: string, keyId: string): Promise<boolean> {
  const [row] = await db
    .select({ id: apiKeys.id })
    .from(apiKeys)
    .where(and(eq(apiKeys.account_id, accountId), eq(apiKeys.id, keyId), isNull(apiKeys.revoked_at)))
    .limit(1);
  return row !== undefined;
}

/** Resolves a secret hash to its active key. */
export async function findApiKeyByHash(db: DbOrTx, secretHash: string): Promise<ApiKeyRow | null> {
  const [ref] = await db.select().from(apiKeyLookup).where(eq(apiKeyLookup.secret_hash, secretHash)).limit(1);
  if (!ref) return null;
  const [row] = await db
    .select()
    .from(apiKeys)
    .where(and(eq(apiKeys.account_id, ref.account_id), eq(apiKeys.id, ref.key_id), isNull(apiKeys.revoked_at)))
    .limit(1);
  return row ?? null;
}

export async function insertConsoleUser(db: DbOrTx, row: typeof consoleUsers.$inferInsert): Promise<ConsoleUserRow> {
  // The login row goes first: its primary key is the platform-wide uniqueness check on the email.
  await db.insert(consoleLogin).values({ email: row.email, account_id: row.account_id, console_user_id: row.id });
  const [created] = await db.insert(consoleUsers).values(row).returning();
  if (!created) throw new Error("insert returned no row");
  return created;
}

export async function findConsoleUser(db: DbOrTx, accountId: string, id: string): Promise<ConsoleUserRow | null> {
  const [row] = await db
    .select()
    .from(consoleUsers)
    .where(and(eq(consoleUsers.account_id, accountId), eq(consoleUsers.id, id)))
    .limit(1);
  return row ?? null;
}

export async function findConsoleUserByEmail(db: DbOrTx, email: string): Promise<ConsoleUserRow | null> {
  const [ref] = await db.select().from(consoleLogin).where(eq(consoleLogin.email, email)).limit(1);
  if (!ref) return null;
  const [row] = await db
    .select()
    .from(consoleUsers)
    .where(and(eq(consoleUsers.account_id, ref.account_id), eq(consoleUsers.id, ref.console_user_id)))
    .limit(1);
  return row ?? null;
}
