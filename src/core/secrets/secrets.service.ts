/**
 * The secret store: what domain code uses to keep a credential and get back a `sec_…` ref to put
 * in a `*_secret_ref` column. Encryption happens here; rows are read and written by secrets.store.ts.
 */
import type { Db, DbOrTx } from "../db/db.ts";
import { isId, newId } from "../ids/ids.ts";
import { decryptSecret, encryptSecret, secretAad } from "./secret-cipher.ts";
import { deleteSecretRow, findSecretCiphertext, insertSecretRow, updateSecretCiphertext } from "./secrets.store.ts";

/**
 * Account-scoped secret storage. Every method takes the transaction to run in, so a secret is
 * created or removed atomically with the row that refers to it.
 */
export interface SecretStore {
  /** Encrypts and stores `plaintext`; returns its ref (`sec_…`). */
  put(tx: DbOrTx, accountId: string, plaintext: string): Promise<string>;
  /**
   * The plaintext behind `ref`, or null when it does not exist or belongs to another account.
   * Throws when the row exists but cannot be decrypted (wrong master key, tampering).
   */
  reveal(tx: DbOrTx, accountId: string, ref: string): Promise<string | null>;
  /** Re-encrypts a new value under the same ref. False when the ref is missing or another account's. */
  replace(tx: DbOrTx, accountId: string, ref: string, plaintext: string): Promise<boolean>;
  /** Deletes the secret. False when the ref is missing or another account's. */
  remove(tx: DbOrTx, accountId: string, ref: string): Promise<boolean>;
}

/**
 * Builds the secret store with a 32-byte `masterKey` (from `parseMasterKey` or
 * `loadOrCreateMasterKey`). Each method runs on the handle it is given (`db` itself or an open
 * transaction); `db` is taken now so that store-wide work such as re-encrypting under a rotated
 * key can be added without changing every call site.
 */
export function createSecretStore(_db: Db, masterKey: Uint8Array): SecretStore {
  if (masterKey.byteLength !== 32) throw new Error("The master key must be exactly 32 bytes.");
  // Copy so a caller zeroing or reusing its buffer cannot change the key under us.
  const key = new Uint8Array(masterKey);

  return {
    async put(tx, accountId, plaintext) {
      assertAccountId(accountId);
      const id = newId("sec");
      const ciphertext = encryptSecret(key, plaintext, secretAad(accountId, id));
      await insertSecretRow(tx, { id, accountId, ciphertext, createdAt: Math.floor(Date.now() / 1000) });
      return id;
    },

    async reveal(tx, accountId, ref) {
      assertAccountId(accountId);
      if (!isId(ref, "sec")) return null;
      const ciphertext = await findSecretCiphertext(tx, accountId, ref);
      if (ciphertext === null) return null;
      return decryptSecret(key, ciphertext, secretAad(accountId, ref));
    },

    async replace(tx, accountId, ref, plaintext) {
      assertAccountId(accountId);
      if (!isId(ref, "sec")) return false;
      const ciphertext = encryptSecret(key, plaintext, secretAad(accountId, ref));
      return updateSecretCiphertext(tx, accountId, ref, ciphertext);
    },

    async remove(tx, accountId, ref) {
      assertAccountId(accountId);
      if (!isId(ref, "sec")) return false;
      return deleteSecretRow(tx, accountId, ref);
    },
  };
}

// An empty account id would make every query match nothing and every AAD ambiguous; it is a bug.
function assertAccountId(accountId: string): void {
  if (typeof accountId !== "string" || accountId.length === 0) throw new Error("accountId is required.");
}
