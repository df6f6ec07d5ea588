/**
 * Queries the config file needs beyond its sections' own stores: the account's SIP domains (the
 * table belongs to sip-domains, which has no store of its own), the usernames and DIDs the file
 * refers to, the devices that use a realm, and the per-account apply lock.
 */
import { and, asc, eq, inArray, ne, sql } from "drizzle-orm";
import type { DbOrTx } from "../db/db.ts";
import { accounts } from "../accounts/accounts.schema.ts";
import { appUsers } from "../users/users.schema.ts";
import { numbers } from "../numbers/numbers.schema.ts";
import { devices } from "../devices/devices.schema.ts";
import { sipDomains } from "../sip-domains/sip-domains.schema.ts";

export type SipDomainRow = typeof sipDomains.$inferSelect;

/**
 * Serializes config applies of one account until the transaction ends, so two applies at once
 * cannot both create the same trunk; applies of different accounts do not wait for each other.
 */
export async function lockAccountConfig(tx: DbOrTx, accountId: string): Promise<void> {
  await tx.execute(sql`select pg_advisory_xact_lock(hashtextextended(${`parley:config:${accountId}`}, 0))`);
}

export async function accountExists(db: DbOrTx, accountId: string): Promise<boolean> {
  const rows = await db.select({ id: accounts.id }).from(accounts).where(eq(accounts.id, accountId)).limit(1);
  return rows.length > 0;
}

/** Every user of the account: id and username. */
export async function listUsernames(db: DbOrTx, accountId: string): Promise<Array<{ id: string; username: string }>> {
  return db.select({ id: appUsers.id, username: appUsers.username }).from(appUsers).where(eq(appUsers.account_id, accountId));
}

/** Every DID of the account: id and E.164. */
export async function listNumberE164s(db: DbOrTx, accountId: string): Promise<Array<{ id: string; e164: string }>> {
  return db.select({ id: numbers.id, e164: numbers.e164 }).from(numbers).where(eq(numbers.account_id, accountId));
}

export async function listSipDomains(db: DbOrTx, accountId: string): Promise<SipDomainRow[]> {
  return db.select().from(sipDomains).where(eq(sipDomains.account_id, accountId)).orderBy(asc(sipDomains.domain));
}

/** Which of `domains` another account already answers on. */
export async function domainsOfOtherAccounts(db: DbOrTx, accountId: string, domains: string[]): Promise<string[]> {
  if (domains.length === 0) return [];
  const rows = await db
    .select({ domain: sipDomains.domain })
    .from(sipDomains)
    .where(and(inArray(sipDomains.domain, domains), ne(sipDomains.account_id, accountId)));
  return rows.map((r) => r.domain);
}

/** Devices of the account that authenticate in `realm` (at most `limit`). */
export async function devicesInRealm(db: DbOrTx, accountId: string, realm: string, limit: number): Promise<string[]> {
  const rows = await db
    .select({ id: devices.id })
    .from(devices)
    .where(and(eq(devices.account_id, accountId), eq(devices.realm, realm)))
    .orderBy(asc(devices.id))
    .limit(limit);
  return rows.map((r) => r.id);
}

export async function insertSipDomain(db: DbOrTx, row: SipDomainRow): Promise<void> {
  await db.insert(sipDomains).values(row);
}

export async function updateSipDomain(db: DbOrTx, accountId: string, domain: string, isPrimary: number): Promise<void> {
  await db.update(sipDomains).set({ is_primary: isPrimary }).where(and(eq(sipDomains.account_id, accountId), eq(sipDomains.domain, domain)));
}

export async function deleteSipDomain(db: DbOrTx, accountId: string, domain: string): Promise<void> {
  await db.delete(sipDomains).where(and(eq(sipDomains.account_id, accountId), eq(sipDomains.domain, domain)));
}
