/**
 * Answering a trunk's digest challenge: a carrier that challenges our INVITEs (401/407) gets the
 * trunk's credentials in the retried request. The edge asks when challenged, and gets the username and
 * the HA1 for the challenge's realm, never the password; a trunk with a configured realm is answered
 * for that realm only, so a callee cannot obtain a digest of the credentials for a realm of its choosing.
 */
import type { DbOrTx } from "../db/db.ts";
import { AppError, validationFailed } from "../errors/app-error.ts";
import { isId } from "../ids/ids.ts";
import type { Logger } from "../log/logger.ts";
import type { SecretStore } from "../secrets/secrets.service.ts";
import type { TrunkAuthModel } from "./trunk-auth.model.ts";
import { findTrunkCredentials } from "./trunks.store.ts";

export interface TrunkAuthDeps {
  db: DbOrTx;
  secrets: SecretStore;
  log: Logger;
}

/** The parameters of a Digest challenge (RFC 3261 25.1 / RFC 7616: name=token or name="quoted"), names lower-cased; null when it is not Digest. */
export function parseDigestChallenge(value: string): Map<string, string> | null {
  const scheme = /^\s*Digest\s+/i.exec(value);
  if (!scheme) return null;
  const params = new Map<string, string>();
  const param = /\s*([A-Za-z0-9_-]+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^\s,"]*))\s*(?:,|$)/y;
  param.lastIndex = scheme[0].length;
  while (param.lastIndex < value.length) {
    const m = param.exec(value);
    if (!m) return null;
    const name = m[1]!.toLowerCase();
    if (!params.has(name)) params.set(name, m[2] !== undefined ? m[2].replace(/\\(.)/g, "$1") : m[3]!);
  }
  return params;
}

export async function answerTrunkChallenge(deps: TrunkAuthDeps, input: TrunkAuthModel.Request): Promise<TrunkAuthModel.Reply> {
  const challenge = parseDigestChallenge(input.challenge);
  const realm = challenge?.get("realm");
  if (!challenge || !realm) throw validationFailed([{ path: "/challenge", message: "Not a Digest challenge with a realm." }]);
  const algorithm = challenge.get("algorithm");
  if (algorithm && !/^MD5(-sess)?$/i.test(algorithm)) {
    throw validationFailed([{ path: "/challenge", message: `The ${algorithm} algorithm is not supported: the edge answers MD5 and MD5-sess challenges.` }]);
  }
  const missing = () => new AppError("not_found", "No active outbound trunk with credentials by that id in the account.");
  if (!isId(input.account_id, "acc")) throw missing();
  const trunk = await findTrunkCredentials(deps.db, input.account_id, input.trunk_id);
  if (!trunk || trunk.status !== "active" || trunk.direction === "inbound" || !trunk.auth_username || !trunk.auth_secret_ref) throw missing();
  if (trunk.realm && trunk.realm !== realm) {
    deps.log.warn("a trunk challenged with another realm than its own: not answered", { account_id: input.account_id, trunk_id: input.trunk_id, realm: realm.slice(0, 128) });
    throw new AppError("forbidden", "The challenge's realm is not the trunk's realm.");
  }
  const password = await deps.secrets.reveal(deps.db, input.account_id, trunk.auth_secret_ref);
  if (password === null) throw missing();
  const ha1 = new Bun.CryptoHasher("md5").update(`${trunk.auth_username}:${realm}:${password}`).digest("hex");
  deps.log.info("trunk digest challenge answered", { account_id: input.account_id, trunk_id: input.trunk_id, call_id: input.callId });
  return { username: trunk.auth_username, realm, ha1 };
}
