/**
 * First run: on an empty database, create a default account, a console login and an API key so a
 * new user can sign in at once. Runs under an advisory lock, so of many instances starting together
 * exactly one creates them. The credentials are returned to the caller to show once; only hashes
 * are stored.
 */
import { sql } from "drizzle-orm";
import type { Db } from "../db/db.ts";
import { rawRows } from "../db/migrate.ts";
import { createAccount } from "../accounts/accounts.service.ts";
import { createApiKey, createConsoleUser } from "../auth/auth.service.ts";
import { randomBase62 } from "../auth/secrets-format.ts";

const BOOTSTRAP_LOCK = 7_215_012;

export interface FirstRunCredentials {
  accountId: string;
  email: string;
  password: string;
  apiKey: string;
}

/** Creates the default tenant when no account exists; null when there already is one. */
export async function bootstrapFirstRun(db: Db, email = "admin@parley.local"): Promise<FirstRunCredentials | null> {
  return db.transaction(async (tx) => {
    await tx.execute(sql`select pg_advisory_xact_lock(${BOOTSTRAP_LOCK})`);
    const [row] = await rawRows<{ n: number | string }>(tx, sql`select count(*) as n from account`);
    if (Number(row?.n ?? 0) > 0) return null;
    const account = await createAccount(tx, { name: "Default", is_reseller: 1 });
    const password = randomBase62(20);
    await createConsoleUser(tx, { account_id: account.id, email, password, scopes: ["*"] });
    const key = await createApiKey(tx, { accountId: account.id, label: "first-run", scopes: ["*"], grantorScopes: null });
    return { accountId: account.id, email, password, apiKey: key.secret };
  });
}
