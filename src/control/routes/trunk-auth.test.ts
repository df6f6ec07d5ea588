/** POST /route/trunk-auth over a real socket: the HA1 a trunk's challenge is answered with, and every refusal. */
import { describe, expect, test } from "bun:test";
import { createHash } from "node:crypto";
import { seedTenant, storeKind } from "../../../test/support/platform.ts";
import { newId } from "../../core/ids/ids.ts";
import { nowSeconds } from "../../core/db/columns.ts";
import { sipTrunks } from "../../core/trunks/trunks.schema.ts";
import { parseDigestChallenge } from "../../core/trunks/trunk-auth.service.ts";
import { trunkAuthRoutes } from "./trunk-auth.ts";
import { controlTestHost } from "./control-listener.fixture.ts";

const md5 = (text: string) => createHash("md5").update(text).digest("hex");
const PASSWORD = "carrier-pa$$:word";

const host = controlTestHost([trunkAuthRoutes]);

async function trunk(accountId: string, patch: Partial<typeof sipTrunks.$inferInsert> = {}, password: string | null = PASSWORD): Promise<string> {
  const id = newId("trk");
  const ref = password === null ? null : await host.platform.secrets.put(host.platform.db, accountId, password);
  await host.platform.db.insert(sipTrunks).values({
    account_id: accountId, id, name: id, proxy: "sip.carrier.example", auth_username: "acct-77", auth_secret_ref: ref, created_at: nowSeconds(), updated_at: nowSeconds(), ...patch,
  });
  return id;
}

describe(`POST /route/trunk-auth [${storeKind}]`, () => {
  test("answers with the username and the HA1 for the challenge's realm, JSON or form; never the password", async () => {
    const t = await seedTenant(host.platform);
    const id = await trunk(t.accountId);
    const challenge = 'Digest realm="carrier.example", nonce="abc,123", qop="auth", algorithm=MD5';
    const json = await host.client.post("/route/trunk-auth", { account_id: t.accountId, trunk_id: id, challenge, callId: "c-1" });
    expect(json.status).toBe(200);
    expect(json.body).toEqual({ username: "acct-77", realm: "carrier.example", ha1: md5(`acct-77:carrier.example:${PASSWORD}`) });
    const form = await host.client.post("/route/trunk-auth", { account_id: t.accountId, trunk_id: id, challenge: "Digest nonce=xyz, realm=other.example" }, "form");
    expect(form.status).toBe(200);
    expect(form.body.ha1).toBe(md5(`acct-77:other.example:${PASSWORD}`));
    expect(JSON.stringify([json.body, form.body])).not.toContain(PASSWORD);
    expect(host.logged.join("\n")).not.toContain(PASSWORD);
    expect(host.logged.join("\n")).not.toContain(json.body.ha1);
  });

  test("a trunk with a realm is answered for that realm only (403); MD5-sess is answered, other algorithms are not (400)", async () => {
    const t = await seedTenant(host.platform);
    const id = await trunk(t.accountId, { realm: "carrier.example" });
    const ask = (challenge: string) => host.client.post("/route/trunk-auth", { account_id: t.accountId, trunk_id: id, challenge });
    expect((await ask('Digest realm="carrier.example", nonce="n"')).status).toBe(200);
    const elsewhere = await ask('Digest realm="attacker.example", nonce="n"');
    expect(elsewhere.status).toBe(403);
    expect(elsewhere.body.error).toBe("forbidden");
    expect((await ask('Digest realm="carrier.example", nonce="n", algorithm=MD5-sess')).status).toBe(200);
    const sha = await ask('Digest realm="carrier.example", nonce="n", algorithm=SHA-256');
    expect(sha.status).toBe(400);
    expect(sha.body.details).toEqual([{ path: "/challenge", message: expect.stringContaining("SHA-256") }]);
  });

  test("another account's trunk, an unknown, disabled, inbound-only or credential-less trunk: 404 alike", async () => {
    const t = await seedTenant(host.platform);
    const other = await seedTenant(host.platform);
    const challenge = 'Digest realm="carrier.example", nonce="n"';
    const cases: Array<[string, string, string]> = [
      ["another account's", t.accountId, await trunk(other.accountId)],
      ["unknown", t.accountId, newId("trk")],
      ["disabled", t.accountId, await trunk(t.accountId, { status: "disabled" })],
      ["inbound-only", t.accountId, await trunk(t.accountId, { direction: "inbound" })],
      ["without a password", t.accountId, await trunk(t.accountId, {}, null)],
      ["without a username", t.accountId, await trunk(t.accountId, { auth_username: null })],
      ["of a malformed account id", "not-an-account", await trunk(t.accountId)],
    ];
    for (const [what, accountId, trunkId] of cases) {
      const r = await host.client.post("/route/trunk-auth", { account_id: accountId, trunk_id: trunkId, challenge });
      expect([what, r.status, r.body.error]).toEqual([what, 404, "not_found"]);
    }
  });

  test("a challenge that is not Digest, or has no realm, and a body with unknown fields are 400", async () => {
    const t = await seedTenant(host.platform);
    const id = await trunk(t.accountId);
    for (const challenge of ['Basic realm="x"', 'Digest nonce="n"', 'Digest realm="unterminated', ""]) {
      const r = await host.client.post("/route/trunk-auth", { account_id: t.accountId, trunk_id: id, challenge });
      expect([challenge, r.status]).toEqual([challenge, 400]);
    }
    const extra = await host.client.post("/route/trunk-auth", { account_id: t.accountId, trunk_id: id, challenge: 'Digest realm="r"', password: "x" });
    expect(extra.status).toBe(400);
  });

  test("the challenge parser reads tokens and quoted strings with escapes, case-insensitive names, first value kept", () => {
    expect(Object.fromEntries(parseDigestChallenge('digest Realm="a\\"b", NONCE=xyz , qop="auth,auth-int",realm="second"')!)).toEqual({ realm: 'a"b', nonce: "xyz", qop: "auth,auth-int" });
    expect(parseDigestChallenge("Digest")).toBeNull();
    expect(parseDigestChallenge('Digest realm="x" nonce="y"')).toBeNull();
  });
});
