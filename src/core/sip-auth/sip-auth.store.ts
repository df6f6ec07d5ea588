/**
 * The one query of the edge's hot path: a digest identity (realm, auth_username) resolved to its
 * device, user and account in a single indexed round trip (primary keys all the way), prepared once
 * per database handle (the query builder path costs ~250 µs per call; TOOLCHAIN.md).
 */
import { and, eq, sql } from "drizzle-orm";
import type { Db } from "../db/db.ts";
import { rawJson } from "../db/sql-text.ts";
import { accounts } from "../accounts/accounts.schema.ts";
import { deviceCredentials, devices } from "../devices/devices.schema.ts";
import { appUsers } from "../users/users.schema.ts";
import { sipTrunkAcls, sipTrunks, trunkCredentials } from "../trunks/trunks.schema.ts";
import { deviceContextSql, type DeviceContext } from "../routing/decide.store.ts";

/** Everything /auth needs to decide, in one row. */
export interface DigestIdentity {
  account_id: string;
  device_id: string;
  user_id: string;
  ha1: string;
  ha1b: string;
  is_webrtc: number;
  /** The transport the device is configured for (udp, tcp, tls, wss): tls and wss ones must use an encrypted one. */
  transport: string;
  device_status: string;
  user_status: string;
  account_status: string;
}

// The user's and account's statuses are read by key in subqueries, not joined: a generic plan of
// the four-way join, made with stale statistics, walked every user of the database before the one
// credential (133 µs per INVITE in bench:sip on a database of 1,000 users, 0.5 ms in EXPLAIN); this
// form is the credential, then three primary-key reads, whatever the statistics say.
const deviceFields = {
  account_id: devices.account_id,
  device_id: devices.id,
  user_id: devices.user_id,
  ha1: devices.ha1,
  ha1b: devices.ha1b,
  is_webrtc: devices.is_webrtc,
  transport: devices.transport,
  device_status: devices.status,
};
const identityFields = {
  ...deviceFields,
  user_status: sql<string>`coalesce((select ${appUsers.status} from ${appUsers} where ${appUsers.account_id} = ${devices.account_id} and ${appUsers.id} = ${devices.user_id}), 'missing')`,
  account_status: sql<string>`coalesce((select ${accounts.status} from ${accounts} where ${accounts.id} = ${devices.account_id}), 'missing')`,
};

function prepareLookups(db: Db) {
  const credential = and(eq(deviceCredentials.realm, sql.placeholder("realm")), eq(deviceCredentials.auth_username, sql.placeholder("username")));
  const device = and(eq(devices.account_id, deviceCredentials.account_id), eq(devices.id, deviceCredentials.device_id));
  return {
    identity: db.select(identityFields).from(deviceCredentials).innerJoin(devices, device).where(credential).limit(1).prepare("sip_auth_identity"),
    // The device with its routing context for a call to `to` (what /route reads next), which holds the
    // user's and the account's statuses too (its caller and account).
    withContext: db
      .select({ ...deviceFields, ctx: deviceContextSql(sql`${devices.account_id}`, sql`${devices.id}`, sql.placeholder("to")) })
      .from(deviceCredentials)
      .innerJoin(devices, device)
      .where(credential)
      .limit(1)
      .prepare("sip_auth_identity_route"),
  };
}

const prepared = new WeakMap<Db, ReturnType<typeof prepareLookups>>();

function lookups(db: Db): ReturnType<typeof prepareLookups> {
  let statements = prepared.get(db);
  if (!statements) {
    statements = prepareLookups(db);
    prepared.set(db, statements);
  }
  return statements;
}

/** The device, user and account of a digest identity, or null when no device has it. */
export async function findDigestIdentity(db: Db, realm: string, authUsername: string): Promise<DigestIdentity | null> {
  const [row] = await lookups(db).identity.execute({ realm, username: authUsername });
  return row ?? null;
}

/**
 * The same, with the device's routing context for a call to `to` (`loadDevice`'s answer) in the one
 * round trip. The context is read before the digest is verified: use it only once it is.
 */
export async function findDigestIdentityWithContext(
  db: Db,
  realm: string,
  authUsername: string,
  to: string,
): Promise<(DigestIdentity & { ctx: DeviceContext }) | null> {
  const [row] = await lookups(db).withContext.execute({ realm, username: authUsername, to });
  if (!row) return null;
  const ctx = rawJson<DeviceContext>(row.ctx);
  return { ...row, user_status: ctx.caller?.status ?? "missing", account_status: ctx.account?.status ?? "missing", ctx };
}

/** A trunk that authenticates towards us (inbound_auth register or digest), found by its inbound_username. */
export interface TrunkIdentity {
  account_id: string;
  trunk_id: string;
  /** register or digest (ip: the trunk is known by address and never authenticates). */
  inbound_auth: string;
  direction: string;
  trunk_status: string;
  account_status: string;
  /** The secret holding the password the trunk uses towards us. */
  inbound_secret_ref: string | null;
  /** Where its requests may come from, when the trunk's ACL lists any (canonical CIDRs). */
  acl: string[];
}

function prepareTrunkLookup(db: Db) {
  return db
    .select({
      account_id: trunkCredentials.account_id,
      trunk_id: sipTrunks.id,
      inbound_auth: sipTrunks.inbound_auth,
      direction: sipTrunks.direction,
      trunk_status: sipTrunks.status,
      account_status: sql<string>`coalesce((select ${accounts.status} from ${accounts} where ${accounts.id} = ${trunkCredentials.account_id}), 'missing')`,
      inbound_secret_ref: sipTrunks.inbound_secret_ref,
      acl: sql<string>`coalesce((select json_agg(${sipTrunkAcls.cidr})::text from ${sipTrunkAcls} where ${sipTrunkAcls.account_id} = ${sipTrunks.account_id} and ${sipTrunkAcls.trunk_id} = ${sipTrunks.id}), '[]')`,
    })
    .from(trunkCredentials)
    .innerJoin(sipTrunks, and(eq(sipTrunks.account_id, trunkCredentials.account_id), eq(sipTrunks.id, trunkCredentials.trunk_id)))
    .where(eq(trunkCredentials.username, sql.placeholder("username")))
    .limit(1)
    .prepare("sip_auth_trunk");
}

const preparedTrunk = new WeakMap<Db, ReturnType<typeof prepareTrunkLookup>>();

/** The trunk whose inbound_username is `username`, or null (usernames are unique platform-wide). */
export async function findTrunkIdentity(db: Db, username: string): Promise<TrunkIdentity | null> {
  let statement = preparedTrunk.get(db);
  if (!statement) {
    statement = prepareTrunkLookup(db);
    preparedTrunk.set(db, statement);
  }
  const [row] = await statement.execute({ username });
  if (!row) return null;
  return { ...row, acl: rawJson<string[]>(row.acl) };
}
