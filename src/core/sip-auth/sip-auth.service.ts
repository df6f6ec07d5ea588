/**
 * SIP digest verification for the edge (POST /auth). The edge owns challenges and nonces; we verify
 * the response against the device's stored HA1, refuse replays, check that device, user and account
 * are active, and count failures per source address for the security module.
 */
import type { ConfigCache } from "../cache/config-cache.ts";
import { AppError, validationFailed } from "../errors/app-error.ts";
import type { Db } from "../db/db.ts";
import { accountKey, globalKey, type LiveStore } from "../live/live-store.ts";
import { canonicalIp } from "../security/address.ts";
import type { Logger } from "../log/logger.ts";
import type { Platform } from "../platform.ts";
import type { SipAuthModel } from "./sip-auth.model.ts";
import { digestEquals, expectedResponse } from "./sip-digest.ts";
import { findDigestIdentity, findDigestIdentityWithContext, findTrunkIdentity, type DigestIdentity, type TrunkIdentity } from "./sip-auth.store.ts";
import type { DeviceContext } from "../routing/decide.store.ts";
import type { SecretStore } from "../secrets/secrets.service.ts";
import { ipAllowed, parseCidr } from "../net/cidr.ts";

/** Failed attempts of one address are counted in a window that restarts with every failure. */
export const AUTH_FAIL_WINDOW_MS = 10 * 60_000;

/**
 * How long a used (nonce, nc, cnonce) is remembered. Kamailio's auth module rejects a nonce older
 * than its `nonce_expire` (300 s by default) before it asks us; a minute more covers clock skew.
 */
export const DIGEST_REPLAY_WINDOW_MS = 360_000;

/**
 * The live-store key of the failed-attempt counter of one source address.
 * @example AUTH_FAIL_KEY("203.0.113.9") // "{parley}:authfail:203.0.113.9"
 */
export function AUTH_FAIL_KEY(ip: string): string {
  return globalKey("authfail", ip);
}

/**
 * Failed /auth attempts from `ip` in the current window (0 when none). The security module reads it.
 * @example if ((await authFailures(platform.live, ip)) > 20) ban(ip)
 */
export async function authFailures(live: LiveStore, ip: string): Promise<number> {
  const value = await live.get(AUTH_FAIL_KEY(ip));
  const n = value === null ? 0 : Number(value);
  return Number.isFinite(n) ? n : 0;
}

/** What /auth answers on success (SPEC.md: { ok, account_id, user_id, device_id, webrtc }). */
export type DigestAuthResult = SipAuthModel.Reply;

export interface DigestAuthDeps {
  db: Db;
  live: LiveStore;
  log?: Logger;
  /** Keeps the credential and routing context between calls (POST /route); without it every call reads them. */
  configCache?: ConfigCache;
  /**
   * Reveals the passwords of trunks that authenticate towards us (inbound_auth register or digest);
   * without it only devices authenticate.
   */
  secrets?: SecretStore;
}

/** The production wiring of `DigestAuthDeps` (POST /auth, and POST /route with `auth`). */
export function digestAuthDeps(platform: Platform): DigestAuthDeps {
  return { db: platform.db, live: platform.live, log: platform.log.child({ component: "sip-auth" }), configCache: platform.configCache, secrets: platform.secrets };
}

export interface DigestAuthOptions {
  /** How long a used (nonce, nc, cnonce) is refused; default {@link DIGEST_REPLAY_WINDOW_MS}. */
  replayWindowMs?: number;
  /**
   * A key of the verified account that the request goes on to take (setIfAbsent), taken in the same
   * live-store step as the nonce is remembered: only for a verified digest of an active device, and
   * only when the nonce was fresh. POST /route takes the call's admission claim so.
   */
  alsoTake?: (accountId: string) => TakenKey;
}

/** A key to take (setIfAbsent) beside the nonce: see {@link DigestAuthOptions.alsoTake}. */
export interface TakenKey {
  key: string;
  value: string;
  ttlMs: number;
}

/** What became of `alsoTake`'s key: tried (`taken`: set; not taken: it existed), or null when not tried. */
export type AlsoTaken = { entry: TakenKey; taken: boolean } | null;

/** Used when the identity is unknown, so that case computes a digest too and takes about as long. */
const DUMMY_HA1 = "00000000000000000000000000000000";

const UNAUTHORIZED_MESSAGE = "Authentication failed.";
const FORBIDDEN_MESSAGE = "This credential may not be used.";

/**
 * Verifies one SIP digest. Throws 401 (wrong response, unknown identity and replay look the same),
 * 403 (right password, but device, user or account not active), or 400 (malformed input).
 * @example await authenticateDigest(platform, { username: "1001", realm: "acme.example.com", nonce, uri, response, method: "REGISTER", qop: "auth", nc, cnonce })
 */
export async function authenticateDigest(deps: DigestAuthDeps, input: SipAuthModel.Request, options: DigestAuthOptions = {}): Promise<DigestAuthResult> {
  return (await verifyDigest(deps, input, options, (realm, username) => findDigestIdentity(deps.db, realm, username))).result;
}

/**
 * `authenticateDigest` for an INVITE that /route decides next: the device's routing context for a call
 * to `to` is read with the credential (one query), and handed back once the digest is verified.
 * @example const { result, device } = await authenticateDigestForRoute(deps, auth, "1002"); await decideRoute(routeDeps, { ...req, ...ids(result) }, { device })
 */
export async function authenticateDigestForRoute(
  deps: DigestAuthDeps,
  input: SipAuthModel.Request,
  to: string,
  options: DigestAuthOptions = {},
): Promise<{ result: DigestAuthResult; device: DeviceContext | null; also: AlsoTaken }> {
  const cache = deps.configCache;
  const find = (realm: string, username: string) => findDigestIdentityWithContext(deps.db, realm, username, to);
  // The answer is the same for every call from this device to `to` until the account's configuration
  // changes: kept under its account (an unknown identity is not kept).
  const cached = cache
    ? (realm: string, username: string) => cache.read(`digest\u0000${realm}\u0000${username}\u0000${to}`, () => find(realm, username), (row) => row?.account_id ?? null)
    : find;
  const { result, identity, also } = await verifyDigest(deps, input, options, cached);
  return { result, device: identity?.ctx ?? null, also };
}

/** A trunk's identity with the password it uses towards us (null when its secret is gone). */
type TrunkCredential = { trunk: TrunkIdentity; password: string | null };

/**
 * The trunk that authenticates with `username` (inbound_username, unique platform-wide) and its
 * password, kept under its account like the devices' credentials; null without a secret store.
 */
async function findTrunkCredential(deps: DigestAuthDeps, username: string): Promise<TrunkCredential | null> {
  const { secrets, db } = deps;
  if (!secrets) return null;
  const load = async (): Promise<TrunkCredential | null> => {
    const trunk = await findTrunkIdentity(db, username);
    if (!trunk) return null;
    const password = trunk.inbound_secret_ref ? await secrets.reveal(db, trunk.account_id, trunk.inbound_secret_ref) : null;
    return { trunk, password };
  };
  const cache = deps.configCache;
  return cache ? cache.read(`trunkcred\u0000${username}`, load, (found) => found?.trunk.account_id ?? null) : load();
}

/**
 * Why a trunk whose digest is right may still not use it, or null: it must be active in an active
 * account, take inbound calls, authenticate this way (register trunks register and call, digest
 * trunks only call), and send from its ACL when it lists one.
 */
function trunkRefusal(trunk: TrunkIdentity, method: string, sourceIp: string | null): string | null {
  if (trunk.trunk_status !== "active") return `trunk ${trunk.trunk_status}`;
  if (trunk.account_status !== "active") return `account ${trunk.account_status}`;
  if (trunk.direction === "outbound") return "outbound-only trunk";
  if (trunk.inbound_auth === "ip") return "trunk is recognized by its address, not by a digest";
  if (trunk.inbound_auth === "digest" && method.toUpperCase() === "REGISTER") return "digest trunks do not register (inbound_auth register does)";
  if (trunk.acl.length && !ipAllowed(sourceIp, trunk.acl.map(parseCidr))) return "source address not in the trunk's acl";
  return null;
}

/**
 * The verification itself, with the device identity read by `find` (a trunk's inbound username when no
 * device has it); answers with the verified device identity too (null for a trunk), and what became of
 * `options.alsoTake`'s key (null when it was not tried).
 */
async function verifyDigest<I extends DigestIdentity>(
  deps: DigestAuthDeps,
  input: SipAuthModel.Request,
  options: DigestAuthOptions,
  find: (realm: string, authUsername: string) => Promise<I | null>,
): Promise<{ result: DigestAuthResult; identity: I | null; also: AlsoTaken }> {
  const { live, log } = deps;
  if (input.qop !== undefined) {
    const missing = [];
    if (input.nc === undefined) missing.push({ path: "/nc", message: "Required with qop." });
    if (input.cnonce === undefined) missing.push({ path: "/cnonce", message: "Required with qop." });
    if (missing.length) throw validationFailed(missing);
  }
  // Counted under the address's one spelling, the one the ban records read it back by
  // (Kamailio writes IPv6 in full and in capitals; a dual-stack socket maps IPv4 into IPv6).
  const sourceIp = input.source_ip === undefined ? null : (canonicalIp(input.source_ip.trim()) ?? input.source_ip.trim().toLowerCase());
  const sess = input.algorithm !== undefined && input.algorithm.toLowerCase() === "md5-sess";
  if (sess && input.cnonce === undefined) throw validationFailed([{ path: "/cnonce", message: "Required with MD5-sess." }]);

  // `1001@acme.example.com`: phones that put the domain in the username are checked against ha1b.
  const at = input.username.lastIndexOf("@");
  const withDomain = at > 0;
  const authUsername = withDomain ? input.username.slice(0, at) : input.username;
  const realm = input.realm.toLowerCase();

  const identity = await find(realm, authUsername);
  // No device by that name: a trunk's inbound username (plain names only; any realm the edge chose).
  const trunkCredential = identity || withDomain ? null : await findTrunkCredential(deps, input.username);
  const trunkHa1 = trunkCredential?.password != null ? md5Hex(`${input.username}:${input.realm}:${trunkCredential.password}`) : null;
  const stored = identity ? (withDomain ? identity.ha1b : identity.ha1) : (trunkHa1 ?? DUMMY_HA1);
  const expected = expectedResponse(stored, {
    method: input.method,
    uri: input.uri,
    nonce: input.nonce,
    qop: input.qop,
    nc: input.nc,
    cnonce: input.cnonce,
    algorithm: input.algorithm,
  });
  const matches = digestEquals(expected, input.response);

  const fail = async (reason: "unknown_identity" | "wrong_response" | "replay"): Promise<never> => {
    if (sourceIp !== null) await live.incr(AUTH_FAIL_KEY(sourceIp), 1, AUTH_FAIL_WINDOW_MS);
    log?.info("sip auth failed", { reason, realm, username: authUsername, source_ip: sourceIp, method: input.method, user_agent: input.user_agent });
    throw new AppError("unauthorized", UNAUTHORIZED_MESSAGE);
  };

  if (!identity && trunkHa1 === null) return fail("unknown_identity");
  if (!matches) return fail("wrong_response");
  if (!identity) return verifiedTrunk(deps, input, options, trunkCredential!.trunk, realm, sourceIp, fail);

  // Only a verified response is remembered: nobody without the password can burn a nonce.
  const replay = { key: accountKey(identity.account_id, "digest", replayFingerprint(realm, input)), value: "1", ttlMs: options.replayWindowMs ?? DIGEST_REPLAY_WINDOW_MS };
  const active = identity.device_status === "active" && identity.user_status === "active" && identity.account_status === "active";
  const transportOk = transportAllowed(identity.transport, input.transport);
  // What the request goes on to take, in the same step (one round trip), when it may go on.
  const also = active && transportOk && options.alsoTake ? options.alsoTake(identity.account_id) : null;
  const existing = also ? await live.setEachIfAbsent([replay, also]) : (await live.setIfAbsent(replay.key, replay.value, replay.ttlMs)) ? -1 : 0;
  if (existing === 0) return fail("replay");

  if (!active) {
    log?.info("sip auth refused: not active", {
      account_id: identity.account_id,
      device_id: identity.device_id,
      device_status: identity.device_status,
      user_status: identity.user_status,
      account_status: identity.account_status,
    });
    throw new AppError("forbidden", FORBIDDEN_MESSAGE);
  }
  if (!transportOk) {
    log?.info("sip auth refused: not over the device's transport", {
      account_id: identity.account_id,
      device_id: identity.device_id,
      device_transport: identity.transport,
      transport: input.transport ?? null,
      source_ip: sourceIp,
    });
    throw new AppError("forbidden", FORBIDDEN_MESSAGE);
  }
  return {
    result: {
      ok: true,
      account_id: identity.account_id,
      user_id: identity.user_id,
      device_id: identity.device_id,
      webrtc: identity.is_webrtc === 1 ? 1 : 0,
    },
    identity,
    also: also ? { entry: also, taken: existing === -1 } : null,
  };
}

/** A trunk's verified digest: replay, then whether it may use it (as for devices: digest first, then status). */
async function verifiedTrunk<I>(
  deps: DigestAuthDeps,
  input: SipAuthModel.Request,
  options: DigestAuthOptions,
  trunk: TrunkIdentity,
  realm: string,
  sourceIp: string | null,
  fail: (reason: "replay") => Promise<never>,
): Promise<{ result: DigestAuthResult; identity: I | null; also: AlsoTaken }> {
  const replay = { key: accountKey(trunk.account_id, "digest", replayFingerprint(realm, input)), value: "1", ttlMs: options.replayWindowMs ?? DIGEST_REPLAY_WINDOW_MS };
  const refusal = trunkRefusal(trunk, input.method, sourceIp);
  const also = refusal === null && options.alsoTake ? options.alsoTake(trunk.account_id) : null;
  const existing = also ? await deps.live.setEachIfAbsent([replay, also]) : (await deps.live.setIfAbsent(replay.key, replay.value, replay.ttlMs)) ? -1 : 0;
  if (existing === 0) return fail("replay");
  if (refusal !== null) {
    deps.log?.info("sip auth refused: trunk may not authenticate so", { account_id: trunk.account_id, trunk_id: trunk.trunk_id, reason: refusal, source_ip: sourceIp, method: input.method });
    throw new AppError("forbidden", FORBIDDEN_MESSAGE);
  }
  return {
    result: { ok: true, account_id: trunk.account_id, user_id: null, device_id: null, webrtc: 0, trunk_id: trunk.trunk_id },
    identity: null,
    also: also ? { entry: also, taken: existing === -1 } : null,
  };
}

function md5Hex(text: string): string {
  return new Bun.CryptoHasher("md5").update(text).digest("hex");
}

/**
 * The transports a device configured for a secure one may authenticate over (the edge's transport of
 * the request). `tls`: TLS or WSS, so its credential is never accepted in the clear (nor when the edge
 * does not say). `wss`: a WebSocket, WS too: a browser on an https page opens only WSS, and a proxy in
 * front of the edge that terminates TLS hands the edge plain WS; what it refuses is the credential
 * used outside a WebSocket. Other devices (`udp`, `tcp`): any.
 */
const ALLOWED: Record<string, ReadonlySet<string>> = { tls: new Set(["tls", "wss"]), wss: new Set(["ws", "wss"]) };

export function transportAllowed(configured: string, used: string | undefined): boolean {
  const allowed = ALLOWED[configured];
  if (!allowed) return true;
  return used !== undefined && allowed.has(used.toLowerCase());
}

/**
 * One key per (realm, nonce, nc, cnonce), hashed so its length is bounded whatever the edge sends.
 * Without qop (RFC 2069) the response does not cover nc and cnonce, so they are left out: such a
 * nonce is good for one request, whatever nc or cnonce a replay adds.
 */
function replayFingerprint(realm: string, input: SipAuthModel.Request): string {
  const counted = input.qop === undefined ? "\n" : `${input.nc ?? ""}\n${input.cnonce ?? ""}`;
  return new Bun.CryptoHasher("sha256").update(`${realm}\n${input.nonce}\n${counted}`).digest("base64url");
}
