/** Queries on policies and their member sets. The only file of this capability that touches drizzle. */
import { and, asc, eq, inArray } from "drizzle-orm";
import type { DbOrTx } from "../db/db.ts";
import {
  aclRules,
  callerIdRules,
  callLimits,
  geoPolicies,
  geoPolicyCountries,
  phoneListEntries,
  phoneLists,
  recordingRules,
} from "./policies.schema.ts";

/** The policy tables by name; they share account_id, id, name, scope_kind, scope_id and the timestamps. */
export const POLICY_TABLES = {
  call_limit: callLimits,
  caller_id_rule: callerIdRules,
  acl_rule: aclRules,
  recording_rule: recordingRules,
  phone_list: phoneLists,
  geo_policy: geoPolicies,
} as const;

export type PolicyTableName = keyof typeof POLICY_TABLES;
export type PolicyRow<N extends PolicyTableName> = (typeof POLICY_TABLES)[N]["$inferSelect"];
export type NewPolicyRow<N extends PolicyTableName> = (typeof POLICY_TABLES)[N]["$inferInsert"];

// The six tables differ only in their policy columns; drizzle cannot type a query over "one of them",
// so the generic functions below work on the widest shape and are typed per table at their signature.
type AnyPolicyTable = typeof callLimits;
const tableOf = (name: PolicyTableName) => POLICY_TABLES[name] as unknown as AnyPolicyTable;

/** Every row of one policy table for an account, by name. */
export async function listPolicies<N extends PolicyTableName>(db: DbOrTx, name: N, accountId: string): Promise<Array<PolicyRow<N>>> {
  const table = tableOf(name);
  const rows = await db.select().from(table).where(eq(table.account_id, accountId)).orderBy(asc(table.name));
  return rows as unknown as Array<PolicyRow<N>>;
}

export async function insertPolicy<N extends PolicyTableName>(db: DbOrTx, name: N, row: NewPolicyRow<N>): Promise<void> {
  await db.insert(tableOf(name)).values(row as unknown as typeof callLimits.$inferInsert);
}

export async function updatePolicy<N extends PolicyTableName>(db: DbOrTx, name: N, accountId: string, id: string, patch: Partial<NewPolicyRow<N>>): Promise<void> {
  const table = tableOf(name);
  await db
    .update(table)
    .set(patch as unknown as Partial<typeof callLimits.$inferInsert>)
    .where(and(eq(table.account_id, accountId), eq(table.id, id)));
}

export async function deletePolicy(db: DbOrTx, name: PolicyTableName, accountId: string, id: string): Promise<void> {
  const table = tableOf(name);
  await db.delete(table).where(and(eq(table.account_id, accountId), eq(table.id, id)));
}

/** Rows inserted per statement: keeps a 100,000-number list under the bind-parameter limit. */
const INSERT_BATCH = 1000;

/** Every entry of every phone list of the account: list id → E.164 numbers. */
export async function listPhoneListEntries(db: DbOrTx, accountId: string): Promise<Map<string, string[]>> {
  const rows = await db
    .select({ list: phoneListEntries.phone_list_id, e164: phoneListEntries.e164 })
    .from(phoneListEntries)
    .where(eq(phoneListEntries.account_id, accountId))
    .orderBy(asc(phoneListEntries.phone_list_id), asc(phoneListEntries.e164));
  return groupBy(rows.map((r) => [r.list, r.e164]));
}

/** Adds and removes numbers of one phone list; `removed` null removes them all. */
export async function changePhoneListEntries(db: DbOrTx, accountId: string, listId: string, added: string[], removed: string[] | null, now: number): Promise<void> {
  const own = and(eq(phoneListEntries.account_id, accountId), eq(phoneListEntries.phone_list_id, listId));
  if (removed === null) await db.delete(phoneListEntries).where(own);
  for (let i = 0; removed && i < removed.length; i += INSERT_BATCH) {
    await db.delete(phoneListEntries).where(and(own, inArray(phoneListEntries.e164, removed.slice(i, i + INSERT_BATCH))));
  }
  for (let i = 0; i < added.length; i += INSERT_BATCH) {
    await db
      .insert(phoneListEntries)
      .values(added.slice(i, i + INSERT_BATCH).map((e164) => ({ account_id: accountId, phone_list_id: listId, e164, created_at: now })));
  }
}

/** Every country of every geo policy of the account: policy id → countries. */
export async function listGeoPolicyCountries(db: DbOrTx, accountId: string): Promise<Map<string, string[]>> {
  const rows = await db
    .select({ policy: geoPolicyCountries.geo_policy_id, country: geoPolicyCountries.country })
    .from(geoPolicyCountries)
    .where(eq(geoPolicyCountries.account_id, accountId))
    .orderBy(asc(geoPolicyCountries.geo_policy_id), asc(geoPolicyCountries.country));
  return groupBy(rows.map((r) => [r.policy, r.country]));
}

/** Adds and removes countries of one geo policy; `removed` null removes them all. */
export async function changeGeoPolicyCountries(db: DbOrTx, accountId: string, policyId: string, added: string[], removed: string[] | null, now: number): Promise<void> {
  const own = and(eq(geoPolicyCountries.account_id, accountId), eq(geoPolicyCountries.geo_policy_id, policyId));
  if (removed === null) await db.delete(geoPolicyCountries).where(own);
  else if (removed.length) await db.delete(geoPolicyCountries).where(and(own, inArray(geoPolicyCountries.country, removed)));
  if (added.length) {
    await db.insert(geoPolicyCountries).values(added.map((country) => ({ account_id: accountId, geo_policy_id: policyId, country, created_at: now })));
  }
}

function groupBy(pairs: Array<[string, string]>): Map<string, string[]> {
  const out = new Map<string, string[]>();
  for (const [key, value] of pairs) {
    const list = out.get(key);
    if (list) list.push(value);
    else out.set(key, [value]);
  }
  return out;
}
