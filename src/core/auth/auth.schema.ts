import { index, pgTable, primaryKey, text } from "drizzle-orm/pg-core";
import { epochSeconds } from "../db/columns.ts";

/** API keys (tenant table). The secret itself is never stored; its SHA-256 is, in `api_key_lookup`. */
export const apiKeys = pgTable(
  "api_key",
  {
    account_id: text("account_id").notNull(),
    id: text("id").notNull(),
    label: text("label"),
    scopes: text("scopes").array().notNull(),
    /** The last four characters of the secret, so a user can tell keys apart. */
    secret_hint: text("secret_hint").notNull(),
    created_at: epochSeconds("created_at").notNull(),
    revoked_at: epochSeconds("revoked_at"),
  },
  (t) => [primaryKey({ columns: [t.account_id, t.id] })],
);

/**
 * Global reference table: secret hash → key. A credential arrives without an account, so its lookup
 * cannot be routed by account_id; this small table is replicated, the tenant table distributed.
 */
export const apiKeyLookup = pgTable("api_key_lookup", {
  secret_hash: text("secret_hash").primaryKey(),
  account_id: text("account_id").notNull(),
  key_id: text("key_id").notNull(),
});

/** People who log in to the console (tenant table). */
export const consoleUsers = pgTable(
  "console_user",
  {
    account_id: text("account_id").notNull(),
    id: text("id").notNull(),
    email: text("email").notNull(),
    /** Argon2id (Bun.password), PHC string. */
    password_hash: text("password_hash").notNull(),
    scopes: text("scopes").array().notNull(),
    /** The agent identity (us_…) this login acts as, when it is one. */
    user_id: text("user_id"),
    status: text("status").notNull().default("active"),
    created_at: epochSeconds("created_at").notNull(),
    updated_at: epochSeconds("updated_at").notNull(),
  },
  (t) => [primaryKey({ columns: [t.account_id, t.id] })],
);

/** Global reference table: login email (lower-cased) → console user. Emails are unique platform-wide. */
export const consoleLogin = pgTable(
  "console_login",
  {
    email: text("email").primaryKey(),
    account_id: text("account_id").notNull(),
    console_user_id: text("console_user_id").notNull(),
  },
  (t) => [index("console_login_user_idx").on(t.account_id, t.console_user_id)],
);
