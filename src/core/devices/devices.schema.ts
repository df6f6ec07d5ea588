import { check, index, pgTable, primaryKey, text } from "drizzle-orm/pg-core";
import { sql } from "drizzle-orm";
import { epochSeconds, flag } from "../db/columns.ts";

/**
 * Devices (tenant table): a registering SIP endpoint of a user, with its digest credential.
 * Only the two digest hashes are kept (`ha1`, `ha1b`); the password never reaches the database.
 */
export const devices = pgTable(
  "device",
  {
    account_id: text("account_id").notNull(),
    id: text("id").notNull(),
    /** The owning user (`app_user` of the same account). */
    user_id: text("user_id").notNull(),
    auth_username: text("auth_username").notNull(),
    realm: text("realm").notNull(),
    /** md5(auth_username:realm:password). */
    ha1: text("ha1").notNull(),
    /** md5(auth_username@realm:realm:password), Kamailio's ha1b. */
    ha1b: text("ha1b").notNull(),
    transport: text("transport").notNull().default("udp"),
    is_webrtc: flag("is_webrtc").notNull().default(0),
    status: text("status").notNull().default("active"),
    label: text("label"),
    created_at: epochSeconds("created_at").notNull(),
    updated_at: epochSeconds("updated_at").notNull(),
  },
  (t) => [
    primaryKey({ columns: [t.account_id, t.id] }),
    index("device_user_idx").on(t.account_id, t.user_id, t.id),
    check("device_transport_chk", sql`${t.transport} in ('udp','tcp','tls','wss')`),
    check("device_is_webrtc_chk", sql`${t.is_webrtc} in (0,1)`),
    check("device_status_chk", sql`${t.status} in ('active','disabled')`),
  ],
);

export type DeviceRow = typeof devices.$inferSelect;
export type NewDeviceRow = typeof devices.$inferInsert;

/**
 * Global reference table: digest identity (realm, auth_username) → device. The edge's /auth arrives
 * with only the digest's username and realm, not an account, so it cannot be routed by account_id;
 * this small table can be, and its primary key makes a digest identity unique platform-wide.
 */
export const deviceCredentials = pgTable(
  "device_credential",
  {
    realm: text("realm").notNull(),
    auth_username: text("auth_username").notNull(),
    account_id: text("account_id").notNull(),
    device_id: text("device_id").notNull(),
  },
  (t) => [primaryKey({ columns: [t.realm, t.auth_username] }), index("device_credential_device_idx").on(t.account_id, t.device_id)],
);

export type DeviceCredentialRow = typeof deviceCredentials.$inferSelect;
