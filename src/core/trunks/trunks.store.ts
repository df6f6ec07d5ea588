/** Queries on trunks, their ACLs, outbound routes and number transforms. The only file of this capability that touches drizzle. */
import { and, asc, eq, inArray, sql } from "drizzle-orm";
import type { DbOrTx } from "../db/db.ts";
import { conflict } from "../errors/app-error.ts";
import {
  numberTransforms,
  outboundRoutes,
  sipTrunkAcls,
  sipTrunks,
  trunkCredentials,
  type NumberTransformRow,
  type OutboundRouteRow,
  type SipTrunkAclRow,
  type SipTrunkRow,
} from "./trunks.schema.ts";

export type NewSipTrunkRow = typeof sipTrunks.$inferInsert;
export type NewOutboundRouteRow = typeof outboundRoutes.$inferInsert;
export type NewNumberTransformRow = typeof numberTransforms.$inferInsert;

export async function listTrunks(db: DbOrTx, accountId: string): Promise<SipTrunkRow[]> {
  return db.select().from(sipTrunks).where(eq(sipTrunks.account_id, accountId)).orderBy(asc(sipTrunks.name));
}

export async function listTrunkAcls(db: DbOrTx, accountId: string): Promise<SipTrunkAclRow[]> {
  return db.select().from(sipTrunkAcls).where(eq(sipTrunkAcls.account_id, accountId)).orderBy(asc(sipTrunkAcls.trunk_id), asc(sipTrunkAcls.cidr));
}

/** Inserts a trunk, and its inbound_username into the platform-wide lookup (a taken one is a unique violation). */
export async function insertTrunk(db: DbOrTx, row: NewSipTrunkRow): Promise<void> {
  await db.insert(sipTrunks).values(row);
  if (row.inbound_username) await db.insert(trunkCredentials).values({ username: row.inbound_username, account_id: row.account_id, trunk_id: row.id });
}

/**
 * Updates a trunk; a changed inbound_username moves in the platform-wide lookup too. A name another trunk
 * of the same account holds is taken over (two trunks swapping names, one after the other, within one
 * apply: the other's update then finds its row gone and claims its new name); another account's is a
 * conflict.
 */
export async function updateTrunk(db: DbOrTx, accountId: string, id: string, patch: Partial<NewSipTrunkRow>): Promise<void> {
  await db.update(sipTrunks).set(patch).where(and(eq(sipTrunks.account_id, accountId), eq(sipTrunks.id, id)));
  if (patch.inbound_username === undefined) return;
  await db.delete(trunkCredentials).where(and(eq(trunkCredentials.account_id, accountId), eq(trunkCredentials.trunk_id, id)));
  if (!patch.inbound_username) return;
  const claimed = await db
    .insert(trunkCredentials)
    .values({ username: patch.inbound_username, account_id: accountId, trunk_id: id })
    .onConflictDoUpdate({ target: trunkCredentials.username, set: { trunk_id: id }, setWhere: eq(trunkCredentials.account_id, accountId) })
    .returning({ username: trunkCredentials.username });
  if (!claimed.length) throw conflict("A value in the file was taken while it was being applied; plan again.");
}

/** Deletes a trunk, its ACL and its inbound username. */
export async function deleteTrunk(db: DbOrTx, accountId: string, id: string): Promise<void> {
  await db.delete(trunkCredentials).where(and(eq(trunkCredentials.account_id, accountId), eq(trunkCredentials.trunk_id, id)));
  await db.delete(sipTrunkAcls).where(and(eq(sipTrunkAcls.account_id, accountId), eq(sipTrunkAcls.trunk_id, id)));
  await db.delete(sipTrunks).where(and(eq(sipTrunks.account_id, accountId), eq(sipTrunks.id, id)));
}

/** Which of `usernames` another account's trunk already authenticates with (inbound_username). */
export async function inboundUsernamesOfOtherAccounts(db: DbOrTx, accountId: string, usernames: string[]): Promise<string[]> {
  if (!usernames.length) return [];
  const rows = await db
    .select({ username: trunkCredentials.username, account_id: trunkCredentials.account_id })
    .from(trunkCredentials)
    .where(inArray(trunkCredentials.username, usernames));
  return rows.filter((r) => r.account_id !== accountId).map((r) => r.username);
}

/** Adds and removes ACL ranges of one trunk. */
export async function changeTrunkAcl(db: DbOrTx, accountId: string, trunkId: string, added: string[], removed: string[], now: number): Promise<void> {
  if (removed.length) {
    await db
      .delete(sipTrunkAcls)
      .where(and(eq(sipTrunkAcls.account_id, accountId), eq(sipTrunkAcls.trunk_id, trunkId), inArray(sipTrunkAcls.cidr, removed)));
  }
  if (added.length) {
    await db.insert(sipTrunkAcls).values(added.map((cidr) => ({ account_id: accountId, trunk_id: trunkId, cidr, created_at: now })));
  }
}

export async function listOutboundRoutes(db: DbOrTx, accountId: string): Promise<OutboundRouteRow[]> {
  return db.select().from(outboundRoutes).where(eq(outboundRoutes.account_id, accountId)).orderBy(asc(outboundRoutes.priority), asc(outboundRoutes.name));
}

export async function insertOutboundRoute(db: DbOrTx, row: NewOutboundRouteRow): Promise<void> {
  await db.insert(outboundRoutes).values(row);
}

export async function updateOutboundRoute(db: DbOrTx, accountId: string, id: string, patch: Partial<NewOutboundRouteRow>): Promise<void> {
  await db.update(outboundRoutes).set(patch).where(and(eq(outboundRoutes.account_id, accountId), eq(outboundRoutes.id, id)));
}

export async function deleteOutboundRoute(db: DbOrTx, accountId: string, id: string): Promise<void> {
  await db.delete(outboundRoutes).where(and(eq(outboundRoutes.account_id, accountId), eq(outboundRoutes.id, id)));
}

export async function listNumberTransforms(db: DbOrTx, accountId: string): Promise<NumberTransformRow[]> {
  return db
    .select()
    .from(numberTransforms)
    .where(eq(numberTransforms.account_id, accountId))
    .orderBy(asc(numberTransforms.ordering), asc(numberTransforms.name));
}

export async function insertNumberTransform(db: DbOrTx, row: NewNumberTransformRow): Promise<void> {
  await db.insert(numberTransforms).values(row);
}

export async function updateNumberTransform(db: DbOrTx, accountId: string, id: string, patch: Partial<NewNumberTransformRow>): Promise<void> {
  await db.update(numberTransforms).set(patch).where(and(eq(numberTransforms.account_id, accountId), eq(numberTransforms.id, id)));
}

export async function deleteNumberTransform(db: DbOrTx, accountId: string, id: string): Promise<void> {
  await db.delete(numberTransforms).where(and(eq(numberTransforms.account_id, accountId), eq(numberTransforms.id, id)));
}

/** What answering a trunk's digest challenge needs of it: null when the account has no such trunk. */
export async function findTrunkCredentials(
  db: DbOrTx,
  accountId: string,
  trunkId: string,
): Promise<Pick<SipTrunkRow, "status" | "direction" | "auth_username" | "auth_secret_ref" | "realm"> | null> {
  const [row] = await db
    .select({ status: sipTrunks.status, direction: sipTrunks.direction, auth_username: sipTrunks.auth_username, auth_secret_ref: sipTrunks.auth_secret_ref, realm: sipTrunks.realm })
    .from(sipTrunks)
    .where(and(eq(sipTrunks.account_id, accountId), eq(sipTrunks.id, trunkId)));
  return row ?? null;
}

/** Whether a trunk may register or be registered with: its status, auth mode, direction, and its account's status. */
export async function findTrunkStatus(
  db: DbOrTx,
  accountId: string,
  trunkId: string,
): Promise<{ status: string; inbound_auth: string; direction: string; account_status: string } | null> {
  const [row] = await db
    .select({
      status: sipTrunks.status,
      inbound_auth: sipTrunks.inbound_auth,
      direction: sipTrunks.direction,
      account_status: sql<string>`coalesce((select a.status from account a where a.id = ${sipTrunks.account_id}), 'missing')`,
    })
    .from(sipTrunks)
    .where(and(eq(sipTrunks.account_id, accountId), eq(sipTrunks.id, trunkId)));
  return row ?? null;
}

/** A trunk the edge probes with OPTIONS: active, in an active account, with ping_sec and a proxy. */
export interface ProbedTrunk {
  account_id: string;
  id: string;
  proxy: string;
  transport: string;
  ping_sec: number;
}

/** Every trunk the edges probe (all accounts: the edges' keep-alive job). */
export async function listProbedTrunks(db: DbOrTx): Promise<ProbedTrunk[]> {
  return (await db
    .select({ account_id: sipTrunks.account_id, id: sipTrunks.id, proxy: sipTrunks.proxy, transport: sipTrunks.transport, ping_sec: sipTrunks.ping_sec })
    .from(sipTrunks)
    .where(
      and(
        eq(sipTrunks.status, "active"),
        sql`${sipTrunks.ping_sec} is not null and ${sipTrunks.proxy} is not null`,
        sql`exists (select 1 from account a where a.id = ${sipTrunks.account_id} and a.status = 'active')`,
      ),
    )
    .orderBy(asc(sipTrunks.account_id), asc(sipTrunks.id))) as ProbedTrunk[];
}

/** A trunk we register with (do_register), as the registering node needs it. */
export type RegisteredTrunk = Pick<SipTrunkRow, "account_id" | "id" | "proxy" | "transport" | "realm" | "from_domain" | "auth_username" | "auth_secret_ref" | "expire_sec" | "updated_at">;

const registeredColumns = {
  account_id: sipTrunks.account_id,
  id: sipTrunks.id,
  proxy: sipTrunks.proxy,
  transport: sipTrunks.transport,
  realm: sipTrunks.realm,
  from_domain: sipTrunks.from_domain,
  auth_username: sipTrunks.auth_username,
  auth_secret_ref: sipTrunks.auth_secret_ref,
  expire_sec: sipTrunks.expire_sec,
  updated_at: sipTrunks.updated_at,
};

/** One trunk's registration settings as they are now (null when it is gone). */
export async function findRegisteredTrunk(db: DbOrTx, accountId: string, id: string): Promise<RegisteredTrunk | null> {
  const [row] = await db
    .select(registeredColumns)
    .from(sipTrunks)
    .where(and(eq(sipTrunks.account_id, accountId), eq(sipTrunks.id, id)))
    .limit(1);
  return row ?? null;
}

/** The trunks node `node` registers with: do_register, active, in an active account, for that node or any (all accounts). */
export async function listRegisteredTrunks(db: DbOrTx, node: string): Promise<RegisteredTrunk[]> {
  return db
    .select(registeredColumns)
    .from(sipTrunks)
    .where(
      and(
        eq(sipTrunks.do_register, 1),
        eq(sipTrunks.status, "active"),
        sql`(${sipTrunks.reg_node} is null or ${sipTrunks.reg_node} = ${node})`,
        sql`exists (select 1 from account a where a.id = ${sipTrunks.account_id} and a.status = 'active')`,
      ),
    )
    .orderBy(asc(sipTrunks.account_id), asc(sipTrunks.id));
}

/** The trunks of an account with what their status view shows. */
export async function listTrunkStatusRows(
  db: DbOrTx,
  accountId: string,
): Promise<Array<Pick<SipTrunkRow, "id" | "name" | "status" | "ping_sec" | "do_register" | "inbound_auth">>> {
  return db
    .select({ id: sipTrunks.id, name: sipTrunks.name, status: sipTrunks.status, ping_sec: sipTrunks.ping_sec, do_register: sipTrunks.do_register, inbound_auth: sipTrunks.inbound_auth })
    .from(sipTrunks)
    .where(eq(sipTrunks.account_id, accountId))
    .orderBy(asc(sipTrunks.name));
}
