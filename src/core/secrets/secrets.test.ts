import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { sql } from "drizzle-orm";
import { sharedStores } from "../../../test/support/platform.ts";
import type { Db } from "../db/db.ts";
import { newId } from "../ids/ids.ts";
import { loadOrCreateMasterKey, parseMasterKey } from "./master-key.ts";
import { decryptSecret, encryptSecret, secretAad } from "./secret-cipher.ts";
import { secrets } from "./secrets.schema.ts";
import { createSecretStore, type SecretStore } from "./secrets.service.ts";

const randomKey = (): Uint8Array => crypto.getRandomValues(new Uint8Array(32));

describe("secret cipher", () => {
  const key = randomKey();
  const acc = newId("acc");
  const sec = newId("sec");
  const aad = secretAad(acc, sec);

  test("round trips, including empty and non-ASCII values, with a fresh IV each time", () => {
    for (const value of ["hunter2", "", "pässwörd 🔑", "x".repeat(10_000)]) {
      expect(decryptSecret(key, encryptSecret(key, value, aad), aad)).toBe(value);
    }
    const a = encryptSecret(key, "same", aad);
    const b = encryptSecret(key, "same", aad);
    expect(a).not.toBe(b);
    expect(Buffer.from(a, "base64")[0]).toBe(1); // key-version prefix
    expect(Buffer.from(a, "base64").length).toBe(1 + 12 + 4 + 16);
  });

  test("fails with the wrong key, without leaking the plaintext", () => {
    const ct = encryptSecret(key, "top-secret-value", aad);
    let message = "";
    try {
      decryptSecret(randomKey(), ct, aad);
    } catch (error) {
      message = (error as Error).message;
    }
    expect(message).toContain("could not be decrypted");
    expect(message).not.toContain("top-secret-value");
  });

  test("fails when any byte of the ciphertext is changed", () => {
    const ct = Buffer.from(encryptSecret(key, "tamper me", aad), "base64");
    for (let i = 0; i < ct.length; i++) {
      const copy = Buffer.from(ct);
      copy[i] = copy[i]! ^ 0x01;
      expect(() => decryptSecret(key, copy.toString("base64"), aad)).toThrow();
    }
    expect(() => decryptSecret(key, ct.subarray(0, ct.length - 1).toString("base64"), aad)).toThrow();
    expect(() => decryptSecret(key, "AAAA", aad)).toThrow(/malformed/);
  });

  test("fails when moved to another account or another id", () => {
    const ct = encryptSecret(key, "bound", aad);
    expect(() => decryptSecret(key, ct, secretAad(newId("acc"), sec))).toThrow(/could not be decrypted/);
    expect(() => decryptSecret(key, ct, secretAad(acc, newId("sec")))).toThrow(/could not be decrypted/);
  });

  test("refuses keys that are not 32 bytes", () => {
    expect(() => encryptSecret(new Uint8Array(16), "x", aad)).toThrow(/32 bytes/);
    expect(() => decryptSecret(new Uint8Array(33), "x", aad)).toThrow(/32 bytes/);
  });
});

describe("parseMasterKey", () => {
  const bytes = new Uint8Array(32).map((_, i) => (i * 37 + 11) & 0xff);
  const buf = Buffer.from(bytes);

  test("accepts hex (either case, surrounding whitespace ignored)", () => {
    expect(parseMasterKey(buf.toString("hex"))).toEqual(bytes);
    expect(parseMasterKey(` ${buf.toString("hex").toUpperCase()}\n`)).toEqual(bytes);
  });

  test("accepts base64 and base64url, padded or not", () => {
    const b64 = buf.toString("base64");
    expect(b64).toMatch(/[+/]/); // the fixture exercises the characters that differ between alphabets
    expect(parseMasterKey(b64)).toEqual(bytes);
    expect(parseMasterKey(b64.replace(/=+$/, ""))).toEqual(bytes);
    expect(parseMasterKey(buf.toString("base64url"))).toEqual(bytes);
  });

  test("refuses 31 and 33 bytes and garbage, without echoing the value", () => {
    const bad = [
      Buffer.alloc(31, 7).toString("hex"),
      Buffer.alloc(33, 7).toString("hex"),
      Buffer.alloc(31, 7).toString("base64"),
      Buffer.alloc(33, 7).toString("base64"),
      "",
      "not a key at all",
      "z".repeat(64),
      `${buf.toString("base64")}==`,
      `${buf.toString("hex")}00`,
    ];
    for (const value of bad) {
      let message = "";
      expect(() => {
        try {
          parseMasterKey(value);
        } catch (error) {
          message = (error as Error).message;
          throw error;
        }
      }).toThrow(/master key/);
      if (value.length > 3) expect(message).not.toContain(value);
    }
  });
});

describe("loadOrCreateMasterKey", () => {
  let dir = "";
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), "parley-key-"));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  test("creates a 0600 file once, in a directory it creates, and returns the same key afterwards", () => {
    const dataDir = join(dir, "nested", "data");
    const first = loadOrCreateMasterKey(dataDir);
    const file = join(dataDir, "master.key");
    expect(first.byteLength).toBe(32);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(parseMasterKey(readFileSync(file, "utf8"))).toEqual(first);
    const mtime = statSync(file).mtimeMs;

    const second = loadOrCreateMasterKey(dataDir);
    expect(second).toEqual(first);
    expect(statSync(file).mtimeMs).toBe(mtime);
    expect(readdirSync(dataDir)).toEqual(["master.key"]); // no temporary file left behind
  });

  test("refuses a corrupt key file rather than replacing it", () => {
    const dataDir = join(dir, "corrupt");
    loadOrCreateMasterKey(dataDir);
    writeFileSync(join(dataDir, "master.key"), "oops");
    expect(() => loadOrCreateMasterKey(dataDir)).toThrow(/does not hold a valid master key/);
    expect(readFileSync(join(dataDir, "master.key"), "utf8")).toBe("oops");
  });
});

describe("secret store", () => {
  let db: Db;
  let store: SecretStore;
  const acc = newId("acc");
  const other = newId("acc");

  beforeAll(async () => {
    // The real migrated schema, on whichever store this run uses (PGlite or PostgreSQL).
    db = (await sharedStores()).database.db;
    store = createSecretStore(db, randomKey());
  });

  test("put then reveal; the row holds only ciphertext", async () => {
    const plaintext = "sip-password-Zq9!";
    const ref = await store.put(db, acc, plaintext);
    expect(ref).toMatch(/^sec_[0-9A-HJKMNP-TV-Z]{26}$/);
    expect(await store.reveal(db, acc, ref)).toBe(plaintext);

    const [row] = await db.select().from(secrets).where(sql`${secrets.id} = ${ref}`);
    expect(row?.accountId).toBe(acc);
    expect(row?.ciphertext).not.toContain(plaintext);
    expect(Buffer.from(row?.ciphertext ?? "", "base64").toString("latin1")).not.toContain(plaintext);
    expect(Math.abs((row?.createdAt ?? 0) - Date.now() / 1000)).toBeLessThan(60);
  });

  test("another account's ref, an unknown ref and a malformed ref reveal null", async () => {
    const ref = await store.put(db, acc, "mine");
    expect(await store.reveal(db, other, ref)).toBeNull();
    expect(await store.reveal(db, acc, newId("sec"))).toBeNull();
    expect(await store.reveal(db, acc, "not-a-ref")).toBeNull();
    expect(await store.replace(db, other, ref, "stolen")).toBe(false);
    expect(await store.remove(db, other, ref)).toBe(false);
    expect(await store.reveal(db, acc, ref)).toBe("mine");
  });

  test("replace keeps the ref and changes the value; remove deletes it", async () => {
    const ref = await store.put(db, acc, "v1");
    const [before] = await db.select().from(secrets).where(sql`${secrets.id} = ${ref}`);
    // Long enough, and with characters base64 never has, that the stored text cannot hold it by chance
    // (a two-letter value turned up inside random base64 about once in 150 runs).
    const replaced = "replaced value #2";
    expect(await store.replace(db, acc, ref, replaced)).toBe(true);
    expect(await store.reveal(db, acc, ref)).toBe(replaced);
    const [after] = await db.select().from(secrets).where(sql`${secrets.id} = ${ref}`);
    expect(after?.ciphertext).not.toBe(before?.ciphertext);
    expect(after?.ciphertext).not.toContain(replaced);
    expect(Buffer.from(after?.ciphertext ?? "", "base64").toString("latin1")).not.toContain(replaced);

    expect(await store.remove(db, acc, ref)).toBe(true);
    expect(await store.reveal(db, acc, ref)).toBeNull();
    expect(await store.remove(db, acc, ref)).toBe(false);
    expect(await store.replace(db, acc, ref, "v3")).toBe(false);
  });

  test("a row copied to another account or id does not decrypt", async () => {
    const ref = await store.put(db, acc, "bound-to-owner");
    const [row] = await db.select().from(secrets).where(sql`${secrets.id} = ${ref}`);
    const movedId = newId("sec");
    await db.insert(secrets).values({ id: movedId, accountId: acc, ciphertext: row!.ciphertext, createdAt: 0 });
    await expect(store.reveal(db, acc, movedId)).rejects.toThrow(/could not be decrypted/);
    await db.update(secrets).set({ accountId: other }).where(sql`${secrets.id} = ${ref}`);
    await expect(store.reveal(db, other, ref)).rejects.toThrow(/could not be decrypted/);
  });

  test("a different master key cannot reveal existing secrets", async () => {
    const ref = await store.put(db, acc, "old-key");
    const rotatedBlindly = createSecretStore(db, randomKey());
    await expect(rotatedBlindly.reveal(db, acc, ref)).rejects.toThrow(/could not be decrypted/);
  });

  test("runs inside the caller's transaction and rolls back with it", async () => {
    let ref = "";
    const rollback = new Error("rollback");
    await expect(
      db.transaction(async (tx) => {
        ref = await store.put(tx, acc, "in-tx");
        expect(await store.reveal(tx, acc, ref)).toBe("in-tx");
        throw rollback;
      }),
    ).rejects.toBe(rollback);
    expect(await store.reveal(db, acc, ref)).toBeNull();
  });
});
