/** Queries on trunks, their ACLs, outbound routes and number transforms. The only file of this capability that touches drizzle. */
import { and, asc, eq, inArray } from "drizzle-orm";
import type { DbOrTx } from "../db/db.ts";
import {
  numberTransforms,
  outboundRoutes,
  sipTrunkAcls,
  sipTrunks,
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

export async function insertTrunk(db: DbOrTx, row: NewSipTrunkRow): Promise<void> {
  await db.insert(sipTrunks).values(row);
}

export async function updateTrunk(db: DbOrTx, accountId: string, id: string, patch: Partial<NewSipTrunkRow>): Promise<void> {
  await db.update(sipTrunks).set(patch).where(and(eq(sipTrunks.account_id, accountId), eq(sipTrunks.id, id)));
}

/** Deletes a trunk and its ACL. */
export async function deleteTrunk(db: DbOrTx, accountId: string, id: string): Promise<void> {
  await db.delete(sipTrunkAcls).where(and(eq(sipTrunkAcls.account_id, accountId), eq(sipTrunkAcls.trunk_id, id)));
  await db.delete(sipTrunks).where(and(eq(sipTrunks.account_id, accountId), eq(sipTrunks.id, id)));
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
