/**
 * Encrypted secrets. Every `*_secret_ref` column elsewhere holds an id into this table, so plaintext
 * credentials (SIP passwords, provider tokens, webhook signing keys) live in exactly one place and
 * are always encrypted at rest under the master key.
 */
import { bigint, pgTable, primaryKey, text } from "drizzle-orm/pg-core";

export const secrets = pgTable(
  "secret",
  {
    /** `sec_…`; also bound into the ciphertext's AAD, so a row cannot be renamed. */
    id: text("id").notNull(),
    /** Owning account; also bound into the AAD, so a row cannot be moved to another account. */
    accountId: text("account_id").notNull(),
    /** base64 of key version (1 byte) ‖ IV (12) ‖ AES-256-GCM ciphertext ‖ tag (16). */
    ciphertext: text("ciphertext").notNull(),
    /** Epoch seconds. */
    createdAt: bigint("created_at", { mode: "number" }).notNull(),
  },
  // Tenant table: the key leads with account_id so the table can be distributed by account.
  (t) => [primaryKey({ columns: [t.accountId, t.id] })],
);

export type SecretRow = typeof secrets.$inferSelect;
