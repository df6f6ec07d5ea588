/** The idempotency service on its own: claims, replays, conflicts, abandoned and expired records. */
import { describe, expect, test } from "bun:test";
import { sharedStores } from "../../../test/support/platform.ts";
import { newId } from "../ids/ids.ts";
import {
  IDEMPOTENCY_RETENTION_MS,
  checkIdempotencyKey,
  claimIdempotencyKey,
  deriveFingerprintSecret,
  requestFingerprint,
  completeIdempotencyKey,
  purgeExpiredIdempotencyKeys,
  releaseIdempotencyKey,
} from "./idempotency.service.ts";

const account = () => newId("acc");

describe("idempotency service", () => {
  test("claim, then replay the stored reply", async () => {
    const { database } = await sharedStores();
    const acc = account();
    expect(await claimIdempotencyKey(database.db, acc, "k", "h1")).toEqual({ kind: "claimed" });
    await expect(claimIdempotencyKey(database.db, acc, "k", "h1")).rejects.toMatchObject({ code: "conflict" });
    await expect(claimIdempotencyKey(database.db, acc, "k", "h2")).rejects.toMatchObject({ code: "idempotency_key_reused" });
    await completeIdempotencyKey(database.db, acc, "k", { status: 201, body: '{"ok":true}', contentType: "application/json" });
    expect(await claimIdempotencyKey(database.db, acc, "k", "h1")).toEqual({ kind: "replay", status: 201, body: '{"ok":true}', contentType: "application/json" });
  });

  test("a released claim (5xx) lets the retry run", async () => {
    const { database } = await sharedStores();
    const acc = account();
    await claimIdempotencyKey(database.db, acc, "k", "h");
    await releaseIdempotencyKey(database.db, acc, "k");
    expect(await claimIdempotencyKey(database.db, acc, "k", "h")).toEqual({ kind: "claimed" });
  });

  test("a claim abandoned by a dead instance is retaken after its lock; a 24 h old record is forgotten", async () => {
    const { database } = await sharedStores();
    const acc = account();
    const t0 = Date.now();
    await claimIdempotencyKey(database.db, acc, "k", "h", t0);
    await expect(claimIdempotencyKey(database.db, acc, "k", "h", t0 + 30_000)).rejects.toMatchObject({ code: "conflict" });
    expect(await claimIdempotencyKey(database.db, acc, "k", "h", t0 + 61_000)).toEqual({ kind: "claimed" });
    await completeIdempotencyKey(database.db, acc, "k", { status: 200, body: "{}", contentType: "application/json" });
    const later = t0 + 61_000 + IDEMPOTENCY_RETENTION_MS + 1;
    expect(await claimIdempotencyKey(database.db, acc, "k", "other", later)).toEqual({ kind: "claimed" });
  });

  test("purge deletes only expired records", async () => {
    const { database } = await sharedStores();
    const acc = account();
    const old = Date.now() - IDEMPOTENCY_RETENTION_MS - 5000;
    await claimIdempotencyKey(database.db, acc, "old", "h", old);
    await claimIdempotencyKey(database.db, acc, "new", "h");
    await purgeExpiredIdempotencyKeys(database.db);
    await expect(claimIdempotencyKey(database.db, acc, "new", "h")).rejects.toMatchObject({ code: "conflict" });
    expect(await claimIdempotencyKey(database.db, acc, "old", "h")).toEqual({ kind: "claimed" });
  });

  test("key format", () => {
    expect(() => checkIdempotencyKey("abc-123_X")).not.toThrow();
    for (const bad of ["", "a b", "x".repeat(256), "é"]) expect(() => checkIdempotencyKey(bad)).toThrow();
  });
});

describe("request fingerprints", () => {
  test("are keyed: the same request under another secret, or a plain hash of it, does not match", () => {
    const a = deriveFingerprintSecret(new Uint8Array(32).fill(1));
    const b = deriveFingerprintSecret(new Uint8Array(32).fill(2));
    const body = JSON.stringify({ pin: "1234" });
    const fa = requestFingerprint(a, "key:sk_1", "POST", "/v1/voicemails", body);
    expect(requestFingerprint(a, "key:sk_1", "POST", "/v1/voicemails", body)).toBe(fa);
    expect(requestFingerprint(b, "key:sk_1", "POST", "/v1/voicemails", body)).not.toBe(fa);
    expect(fa).not.toBe(new Bun.CryptoHasher("sha256").update(`key:sk_1\nPOST\n/v1/voicemails\n${body}`).digest("hex"));
    expect(requestFingerprint(a, "key:sk_1", "POST", "/v1/voicemails", JSON.stringify({ pin: "1235" }))).not.toBe(fa);
    // Another credential's identical request is another request.
    expect(requestFingerprint(a, "key:sk_2", "POST", "/v1/voicemails", body)).not.toBe(fa);
  });
});
