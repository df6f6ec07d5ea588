/**
 * The call routing decision behind POST /route: who is calling (a trunk, the carrier, an
 * authenticated device), where the call goes (a DID's destination, an extension, a user's
 * registered contacts, a media engine, a trunk or the carrier), which CAC slots it holds, and a
 * trace of every rule that decided it. Pure of HTTP; its database reads are prepared statements
 * (decide.store.ts) and its live reads come in through `RouteDeps`.
 */
import type { DbOrTx } from "../db/db.ts";
import type { LiveStore } from "../live/live-store.ts";
import { accountKey } from "../live/live-store.ts";
import type { Platform } from "../platform.ts";
import type { Cidr } from "../net/cidr.ts";
import { ipAllowed, parseCidr } from "../net/cidr.ts";
import { canonicalIp } from "../security/address.ts";
import { evaluateSchedule } from "../schedules/schedule-eval.ts";
import { trunkContacts, userContacts, userCallCount, type RegisteredContact, type TrunkContact } from "../presence/presence.service.ts";
import { isTrunkDown, readTrunkHealth, type TrunkHealth } from "../trunks/trunk-health.ts";
import { slotActive } from "../cac/cac.service.ts";
import { callLimitMember, type RouteDecision, type RouteRequest, type RtjsonRoute } from "./route-types.ts";
import { FEATURE_CODES } from "./route-target.ts";
import { NO_COUNTRY, countryFit, countryOfE164, geoCountryOf } from "./country-codes.ts";
import {
  loadDevice,
  loadDid,
  loadCallerLists,
  loadOutbound,
  loadOutboundTransforms,
  loadTarget,
  loadTrunkById,
  loadTrunksBySource,
  isTrunkSource,
  isOtherAccountsTrunkSource, isOtherAccountsDomain,
  type DeviceContext,
  type RouteAccount,
  type RouteAclRule,
  type RouteCallLimit,
  type RouteCidRule,
  type RouteOutboundRoute,
  type RouteForward,
  type RoutedRow,
  type RouteSchedule,
  type RouteTransform,
  type RoutedUser,
  type RouteUser,
  type TrunkContext,
} from "./decide.store.ts";
import {
  addSlot,
  applyTransforms,
  dialledDigits,
  dialledInternational,
  hostOf,
  outbound,
  proxy,
  quotedDisplay,
  reject,
  sipHeaders,
  step,
  toMediaEngine,
  transformedNumber,
  trunkUri,
  withUser,
  type DecisionDraft,
} from "./decide-support.ts";
import { E164_PATTERN } from "../validation/fields.ts";

/** Platform-level routing settings (from CARRIER_ADDRESSES, CARRIER_URI, MEDIA_ENGINES). */
export interface RouteSettings {
  /** Source ranges of the platform's wholesale carrier: calls from there are inbound to a DID. */
  carrierAddresses: Cidr[];
  /** SIP URI of the carrier default route for outbound calls; null = none. */
  carrierUri: string | null;
  /** SIP URIs of the media engines that run flows, queues, voicemail, conferences and feature codes. */
  mediaEngines: string[];
  /** Emergency numbers, as dialled (EMERGENCY_NUMBERS): see `emergencyCall`. */
  emergencyNumbers: readonly string[];
}

/** What a decision depends on; tests pass their own contacts and counters. */
export interface RouteDeps {
  db: DbOrTx;
  live: LiveStore;
  settings: RouteSettings;
  /** The user's live registered contacts (presence). */
  contacts(accountId: string, userId: string): Promise<RegisteredContact[]>;
  /** How many calls the user is in right now (presence dialogs). */
  userCallCount(accountId: string, userId: string): Promise<number>;
  /** The decision's clock (schedules, call-limit windows); default now. */
  now?: () => Date;
}

/** The production wiring of `RouteDeps`. */
export function routeDeps(platform: Platform): RouteDeps {
  return {
    db: platform.db,
    live: platform.live,
    settings: platform.config.routing,
    contacts: (accountId, userId) => userContacts(platform.live, accountId, userId),
    userCallCount: (accountId, userId) => userCallCount(platform.live, accountId, userId),
  };
}

/** A number the outbound path accepts after transforms: E.164 without +, 7–15 digits (the one bound every list uses). */
const E164 = new RegExp(E164_PATTERN);
/** The From of a caller who withholds its identity (RFC 3323 section 4.1.1.3). */
const ANONYMOUS_URI = "sip:anonymous@anonymous.invalid";
/** How many route-target hops (extension → extension → user …) before a loop is assumed. */
const MAX_HOPS = 6;

/**
 * Decides where a call goes. Never throws for a routing outcome: refusals are `reject` replies with
 * a SIP code and a trace step saying why.
 * `known.device`: the calling device's context for this `to`, when already read (with the digest).
 * @example const decision = await decideRoute(routeDeps(platform), { callId: "a1", from: "1001", fromDomain: "acme.example", to: "2000", account_id: "acc_…", device_id: "dev_…" })
 */
export async function decideRoute(deps: RouteDeps, request: RouteRequest, known: { device?: DeviceContext } = {}): Promise<RouteDecision> {
  // One spelling of the source address for every check (trimmed, IPv4-mapped IPv6 unwrapped, RFC 5952
  // IPv6): what the trunk ACLs, the carrier's addresses and the account's ACL rules are matched against.
  const sourceIp = request.source_ip === undefined ? undefined : (canonicalIp(request.source_ip) ?? undefined);
  const req: RouteRequest = sourceIp === request.source_ip ? request : { ...request, source_ip: sourceIp };
  const draft: DecisionDraft = {
    req,
    accountId: null,
    direction: "inbound",
    from: req.from,
    to: req.to,
    userId: null,
    deviceId: null,
    numberId: null,
    trunkId: null,
    queueId: null,
    slots: [],
    trace: [],
    vars: {},
    now: deps.now?.() ?? new Date(),
  };
  if (req.account_id && req.device_id) return fromDevice(deps, draft, req.account_id, req.device_id, known.device);
  const trunkId = extraField(req, "trunk_id");
  if (req.account_id && trunkId) {
    const trunk = await loadTrunkById(deps.db, req.account_id, trunkId);
    if (!trunk) {
      step(draft, "classify", `trunk ${trunkId} is not an active inbound trunk of ${req.account_id}`);
      return reject(draft, 403, "Forbidden", "unknown trunk");
    }
    step(draft, "classify", `inbound from trunk ${trunk.trunk.name} (${trunk.trunk.id}), authenticated by the edge`);
    return inbound(deps, draft, [trunk]);
  }
  const ip = draft.req.source_ip ?? null;
  if (ip) {
    const trunks = await loadTrunksBySource(deps.db, ip, dialledDigits(req.to));
    const carrier = ipAllowed(ip, deps.settings.carrierAddresses);
    if (trunks.length) {
      // A tenant's trunk ACL may overlap the carrier's addresses (or another tenant's trunk's): the
      // carrier is then the last candidate, and a number that is a DID as dialled is taken only by
      // its owner's trunks or the carrier (inbound), so such an ACL never captures other tenants' calls.
      return inbound(deps, draft, carrier ? [...trunks, null] : trunks, ip);
    }
    if (carrier) {
      step(draft, "classify", `inbound from the carrier (${ip})`);
      return inbound(deps, draft, [null]);
    }
    if (await isTrunkSource(deps.db, ip)) {
      // A trunk's address calling a number none of its accounts has: 404, never a challenge (the
      // edge would challenge that address's next calls at once, and a trunk cannot answer).
      step(draft, "classify", `inbound from a trunk's address ${ip} to ${dialledDigits(req.to)}, which none of its accounts holds`);
      return reject(draft, 404, "Not Found", "unknown number");
    }
  }
  // Not a trunk, not the carrier, no credentials: a device that has yet to authenticate. The edge
  // asks /route before challenging, so IP-authenticated trunks and the carrier are never challenged.
  step(draft, "classify", `unknown source ${req.source_ip ?? "(none)"} and not authenticated: credentials required`);
  const challenge = reject(draft, 407, "Proxy Authentication Required", "unknown source");
  challenge.reply.rtjson.vars.auth_required = 1;
  return challenge;
}

/**
 * Optional request fields beyond the contract's (RouteRequest allows extra properties):
 * `trunk_id` (a register/digest trunk the edge authenticated) and `source_country` (GeoIP of source_ip).
 */
function extraField(req: RouteRequest, name: "trunk_id" | "source_country"): string | null {
  const value = (req as Record<string, unknown>)[name];
  return typeof value === "string" && value !== "" ? value : null;
}


// ---- inbound ----------------------------------------------------------------------------------

/** A caller that withholds its identity: From names nobody, or Privacy asks for id (RFC 3323). */
function isAnonymous(req: RouteRequest): boolean {
  return namesNobody(req.from) || asksIdPrivacy(req);
}

/** A From user that is no identity: empty, anonymous, unknown, restricted. */
function namesNobody(user: string): boolean {
  const name = user.trim().toLowerCase();
  return name === "" || name === "anonymous" || name === "unknown" || name === "restricted";
}

/**
 * The caller's number to pass on: the From's, or for a call a trunk or the carrier brought in with an
 * anonymous From, the number it asserts (P-Asserted-Identity), which a withheld caller keeps there.
 */
function callerNumber(draft: DecisionDraft): string {
  const asserted = draft.req.asserted?.replace(/^\+/, "") ?? "";
  return draft.direction === "inbound" && namesNobody(draft.from) && /^\d{3,15}$/.test(asserted) ? asserted : draft.from;
}

/** The caller's Privacy header asks for its identity to be withheld (`id`). */
function asksIdPrivacy(req: RouteRequest): boolean {
  return /\bid\b/i.test(req.privacy ?? "");
}

/**
 * Inbound to a DID, from the carrier (a null candidate) or from one of the trunks the source matched:
 * each candidate's inbound transforms run before the lookup, and the first whose account owns the
 * resulting DID is the source (a trunk never reaches another account's numbers). No DID: a customer
 * PBX's call (see fromPbx) when its source is its account's alone (`byAddress`: the address the
 * candidates were found by; null when the edge authenticated the trunk by its digest).
 */
async function inbound(deps: RouteDeps, draft: DecisionDraft, candidates: Array<TrunkContext | null>, byAddress: string | null = null): Promise<RouteDecision> {
  draft.direction = "inbound";
  const dialled = dialledDigits(draft.req.to);
  let source: TrunkContext | null = null;
  let ctx: Awaited<ReturnType<typeof loadDid>> = null;
  let dst = dialled;
  let cid = draft.from;
  // Candidates without transforms look up the same number: once. The number as dialled first: when
  // it is a DID, no other account's trunk may take it, whatever its transforms would make of it.
  const lookups = new Map<string, Promise<Awaited<ReturnType<typeof loadDid>>>>();
  let dialledOwner: string | null = null;
  if (byAddress !== null) {
    // Awaited here: a lookup left pending would be an unhandled rejection when it fails.
    const asDialled = loadDid(deps.db, dialled);
    lookups.set(dialled, asDialled);
    dialledOwner = (await asDialled)?.account.id ?? null;
  }
  const classifyAt = draft.trace.length;
  for (const candidate of candidates) {
    if (candidate && dialledOwner !== null && candidate.trunk.account_id !== dialledOwner) continue;
    const mark = draft.trace.length;
    // A transform may write the number with its + (^0(\d{10})$ → +44$1), as outbound ones may: DIDs are
    // stored without it.
    const transformed = candidate ? applyTransforms(draft, "inbound_dst", candidate.transforms, dialled) : dialled;
    dst = transformed.startsWith("+") ? transformedNumber(transformed) : transformed;
    let lookup = lookups.get(dst);
    if (!lookup) lookups.set(dst, (lookup = loadDid(deps.db, dst)));
    const found = await lookup;
    if (found && (!candidate || found.account.id === candidate.trunk.account_id)) {
      source = candidate;
      ctx = found;
      break;
    }
    // This candidate's transforms did not apply. Nothing of it is traced: the trace is shown to the
    // account the call turns out to be, and the other candidates may be other accounts' trunks.
    draft.trace.length = mark;
  }
  if (byAddress !== null) {
    const found = source ? `trunk ${source.trunk.name} (${source.trunk.id})` : ctx ? "the carrier" : "a trunk's address";
    step(draft, "classify", `inbound from ${found} by source ${byAddress}`);
    draft.trace.splice(classifyAt, 0, draft.trace.pop()!); // before the chosen trunk's transforms
  }
  if (!ctx) {
    step(draft, "number", `no DID ${dialled} for this source`);
    // No DID: a customer PBX's call may be for the account's extensions and users, or go out. Only
    // when its source names one account: an address several accounts' trunks (or the carrier) share
    // says whose call it is only through the DID called.
    const pbx = candidates.find((c) => c?.trunk.role === "pbx");
    const shared = async (account: string) =>
      candidates.some((c) => c === null || c.trunk.account_id !== account) || (byAddress !== null && (await isOtherAccountsTrunkSource(deps.db, byAddress, account)));
    // A phone of another account behind the PBX's address (the same NAT, or an ACL that claims more
    // than the PBX) names its own account's domain: it must authenticate, never ride on the PBX.
    const fromDomain = draft.req.fromDomain?.replace(/^\[|\]$/g, "") ?? "";
    if (pbx && byAddress !== null && fromDomain !== "" && (await isOtherAccountsDomain(deps.db, fromDomain, pbx.trunk.account_id))) {
      step(draft, "classify", `from ${fromDomain}, another account's SIP domain, at PBX trunk ${pbx.trunk.name}'s address: credentials required`);
      const challenge = reject(draft, 407, "Proxy Authentication Required", "another account's device");
      challenge.reply.rtjson.vars.auth_required = 1;
      // The edge challenges this call without caching the challenge for the address: the PBX's own
      // calls from it go on being asked about.
      challenge.reply.rtjson.vars.no_challenge_cache = 1;
      return challenge;
    }
    if (pbx && !(await shared(pbx.trunk.account_id))) return fromPbx(deps, draft, pbx, byAddress !== null);
    if (pbx) step(draft, "classify", `PBX trunk ${pbx.trunk.name}'s address is shared with other accounts' trunks or the carrier: only DIDs are reached from it`);
    return reject(draft, 404, "Not Found", "unknown number");
  }
  if (source) {
    draft.accountId = source.trunk.account_id;
    draft.trunkId = source.trunk.id;
    cid = applyTransforms(draft, "inbound_cid", source.transforms, cid);
  }
  const { number, account } = ctx;
  draft.accountId = account.id;
  draft.numberId = number.id;
  draft.vars.did = number.e164;
  // How the media engine treats a fax on this number (T.38 re-INVITE, G.711 pass-through); voice: none.
  if (number.fax_mode && number.fax_mode !== "voice") draft.vars.fax_mode = number.fax_mode;
  step(draft, "number", `matched ${number.id} (${number.e164}, ${number.status})`);
  if (account.status !== "active") return reject(draft, 403, "Forbidden", `account ${account.status}`);
  if (number.status === "disabled") return reject(draft, 480, "Temporarily Unavailable", "number disabled");
  if (number.status === "virtual" && !source) return reject(draft, 404, "Not Found", "virtual number: not reachable from the carrier");
  // The source of an inbound call is the carrier's or a trunk's address: the account's ACL rules are
  // about its devices (where phones may call and register from); a DID's own rules apply here.
  const acl = aclVerdict(draft, ctx.acls.filter((r) => r.scope_kind !== "account"));
  if (acl) return acl;
  if (isAnonymous(draft.req) && number.allow_anonymous !== 1) {
    step(draft, "anonymous", "anonymous caller, number refuses anonymous calls");
    return reject(draft, 433, "Anonymity Disallowed", "anonymous caller");
  }
  // Account-scope transforms ran before the lookup when a trunk brought the call; DID scope runs now.
  const after = (t: RouteTransform) => t.scope_kind === "did" || (!source && t.scope_kind === "account");
  draft.to = applyTransforms(draft, "inbound_dst", ctx.transforms, number.e164, after);
  draft.from = applyTransforms(draft, "inbound_cid", ctx.transforms, cid, after);
  if (ctx.screensCallers) {
    const screened = await callerVerdict(deps, draft, account.id, number.id);
    if (screened) return screened;
  }
  addSlot(draft, "account_in", account.id, account.max_in);
  addSlot(draft, "number", number.id, number.max_channels);
  if (source) addSlot(draft, "trunk", source.trunk.id, source.trunk.max_channels);
  const limited = await callLimits(deps, draft, ctx.limits, "in", (l) => (l.scope_kind === "account" ? ["account_in", account.id] : ["number", number.id]));
  if (limited) return limited;

  const always = ctx.forwards.find((f) => f.trigger === "always");
  if (always) {
    step(draft, "forward", `number forwards always to ${always.number} (${always.id})`);
    return forwardCall(deps, draft, account, always);
  }
  await setFailovers(deps, draft, account.id, ctx.forwards, null, deps.settings.mediaEngines[0] ?? null);
  draft.didForwards = ctx.forwards;
  const target = scheduledTarget(draft, number, ctx.schedule, account.timezone) ?? didDefault(draft, account);
  if (!target) return reject(draft, 480, "Temporarily Unavailable", "closed, and no closed destination");
  return routeTo(deps, draft, account, target, 0);
}

/**
 * The caller against the account's and the DID's dnc_in lists (after the inbound_cid transforms, so
 * a national-format caller is compared in E.164): listed → 603 Decline, unless an allow list holds
 * the caller too. A caller that is no number (anonymous, a SIP name) is on no list.
 */
async function callerVerdict(deps: RouteDeps, draft: DecisionDraft, accountId: string, numberId: string): Promise<RouteDecision | null> {
  const caller = draft.from.replace(/^\+/, "");
  if (!E164.test(caller)) {
    step(draft, "dnc", `caller ${draft.from || "(none)"} is not an E.164 number: no dnc_in list applies`);
    return null;
  }
  const lists = await loadCallerLists(deps.db, accountId, numberId, caller);
  if (lists.includes("allow")) {
    step(draft, "dnc", `caller ${caller} is on an allow list: dnc_in lists skipped`);
    return null;
  }
  if (!lists.includes("dnc_in")) return null;
  step(draft, "dnc", `caller ${caller} is on a dnc_in phone list`);
  return reject(draft, 603, "Decline", "caller on a do-not-call-in list");
}

/** The account's did_default_dest, for a number that has no destination at this moment. */
function didDefault(draft: DecisionDraft, account: RouteAccount): Target | null {
  if (!account.did_default_dest_kind) return null;
  step(draft, "did_default", `account default destination ${account.did_default_dest_kind} ${account.did_default_dest_id ?? ""}`.trim());
  return { kind: account.did_default_dest_kind, id: account.did_default_dest_id, xform: null };
}

// ---- targets ----------------------------------------------------------------------------------

interface Target {
  kind: string;
  id: string | null;
  xform: RoutedRow["dest_xform"];
}

/** Which slot of a number or extension applies now: main while open, closed / holiday otherwise. */
function scheduledTarget(draft: DecisionDraft, row: RoutedRow, schedule: RouteSchedule | null, accountTz: string): Target | null {
  const main: Target | null =
    row.dest_kind && (row.dest_kind === "hangup" || row.dest_id) ? { kind: row.dest_kind, id: row.dest_id, xform: row.dest_xform } : null;
  if (!row.schedule_id || !schedule) return main;
  let state: "open" | "closed" | "holiday";
  try {
    state = evaluateSchedule(schedule, schedule.rules, accountTz, draft.now).state;
  } catch {
    // An unknown zone (schedules are validated on write): routing as open beats refusing every call.
    step(draft, "schedule", `${schedule.id}: time zone not known here, treated as open`);
    return main;
  }
  const slot = (kind: string | null, id: string | null): Target | null => (kind ? { kind, id, xform: null } : null);
  const chosen =
    state === "open"
      ? main
      : state === "holiday"
        ? (slot(row.holiday_dest_kind, row.holiday_dest_id) ?? slot(row.closed_dest_kind, row.closed_dest_id))
        : slot(row.closed_dest_kind, row.closed_dest_id);
  step(draft, "schedule", `${schedule.id} ${state} → ${chosen ? `${chosen.kind} ${chosen.id ?? ""}`.trim() : "no destination"}`, {
    timezone: schedule.timezone ?? accountTz,
  });
  return chosen;
}

/** Applies a destination transform: digits stripped / prepended, caller name prefix, variables. */
function applyXform(draft: DecisionDraft, xform: Target["xform"]): void {
  if (!xform) return;
  let to = draft.to;
  if (xform.strip_digits) to = to.slice(xform.strip_digits);
  if (xform.prepend) to = xform.prepend + to;
  if (to !== draft.to) step(draft, "dest_xform", `${draft.to} → ${to}`);
  draft.to = to;
  if (xform.cid_name_prefix) draft.vars.cid_name_prefix = xform.cid_name_prefix;
  for (const [k, v] of Object.entries(xform.vars ?? {})) draft.vars[`x_${k}`] = v;
}

async function routeTo(deps: RouteDeps, draft: DecisionDraft, account: RouteAccount, target: Target, hops: number): Promise<RouteDecision> {
  if (hops >= MAX_HOPS) return reject(draft, 482, "Loop Detected", "too many route-target hops");
  applyXform(draft, target.xform);
  const engines = deps.settings.mediaEngines;
  switch (target.kind) {
    case "hangup":
      return reject(draft, 603, "Decline", "destination is hangup");
    case "queue":
      draft.queueId = target.id;
      return toMediaEngine(draft, engines, { kind: "queue", id: target.id, flowId: null });
    case "ring_group":
    case "voicemail":
    case "conference":
      return toMediaEngine(draft, engines, { kind: target.kind, id: target.id, flowId: null });
    case "feature":
      return feature(deps, draft, target.id ?? "");
  }
  if (!target.id) return reject(draft, 480, "Temporarily Unavailable", `${target.kind} without an id`);
  const hop = await loadTarget(deps.db, account.id, target.id);
  switch (target.kind) {
    case "flow": {
      if (!hop.flow || hop.flow.is_published !== 1) {
        step(draft, "flow", `${target.id} ${hop.flow ? "is not published" : "does not exist"}`);
        return reject(draft, 480, "Temporarily Unavailable", "flow not published");
      }
      draft.vars.flow_version = hop.flow.version;
      return toMediaEngine(draft, engines, { kind: "flow", id: target.id, flowId: target.id });
    }
    case "extension": {
      if (!hop.extension) return reject(draft, 404, "Not Found", `extension ${target.id} does not exist`);
      step(draft, "extension", `${hop.extension.digits} (${hop.extension.id})`);
      const next = scheduledTarget(draft, hop.extension, hop.extension.schedule, account.timezone);
      if (!next) return reject(draft, 480, "Temporarily Unavailable", "extension closed, and no closed destination");
      return routeTo(deps, draft, account, next, hops + 1);
    }
    case "user":
      if (!hop.user) return reject(draft, 404, "Not Found", `user ${target.id} does not exist`);
      return toUser(deps, draft, account, hop.user);
    case "forward":
      if (!hop.forward) return reject(draft, 404, "Not Found", `forward ${target.id} does not exist`);
      step(draft, "forward", `destination forward ${hop.forward.id} to ${hop.forward.number}`);
      return forwardCall(deps, draft, account, hop.forward);
  }
  return reject(draft, 500, "Server Internal Error", `unknown destination kind ${target.kind}`);
}

/** Feature codes run on a media engine (tones, prompts, PIN entry); the router adds what it knows. */
async function feature(deps: RouteDeps, draft: DecisionDraft, code: string): Promise<RouteDecision> {
  if (!Object.hasOwn(FEATURE_CODES, code)) return reject(draft, 404, "Not Found", `unknown feature code ${code}`);
  draft.vars.feature = code;
  step(draft, "feature", code);
  return toMediaEngine(draft, deps.settings.mediaEngines, { kind: "feature", id: code, flowId: null });
}

/**
 * Busy / no-answer / unreachable forwards (and, for a trigger without a forward, the user's mailbox)
 * travel in `vars` as `failover_<trigger>` = `forward:fwd_…` or `voicemail:vm_…` with
 * `failover_<trigger>_number`: the edge's failure route hands the call to a media engine with that
 * X-Dest after a 486 (busy), a ring timeout (no_answer) or when no contact answers at all (unreachable).
 */
async function setFailovers(deps: RouteDeps, draft: DecisionDraft, accountId: string, forwards: readonly RouteForward[], voicemailId: string | null, engine: string | null): Promise<void> {
  const nowSec = Math.floor(draft.now.getTime() / 1000);
  const triggers = ["busy", "no_answer", "unreachable"] as const;
  // A forward's number passes the destination's policies as a dialled one would; a refused one is no failover.
  const refused = await Promise.all(
    triggers.map(async (trigger) => {
      const f = forwards.find((x) => x.trigger === trigger);
      if (!f) return false;
      const [ctx, back] = await Promise.all([loadOutbound(deps.db, accountId, draft.userId ?? "", f.number, nowSec), loadDid(deps.db, f.number)]);
      const refused = await forwardRefusal(deps, draft, accountId, f, ctx, back, true);
      if (refused) step(draft, "forward", `${trigger} → ${f.number} (${f.id}) refused: ${refused.why}`);
      return refused !== null;
    }),
  );
  for (const [i, trigger] of triggers.entries()) {
    const f = refused[i] ? undefined : forwards.find((x) => x.trigger === trigger);
    if (f) {
      draft.vars[`failover_${trigger}`] = `forward:${f.id}`;
      draft.vars[`failover_${trigger}_number`] = f.number;
      if (f.timeout_sec) draft.vars[`failover_${trigger}_timeout`] = f.timeout_sec;
      step(draft, "forward", `${trigger} → ${f.number} (${f.id}), on failure`);
    } else if (voicemailId) {
      draft.vars[`failover_${trigger}`] = `voicemail:${voicemailId}`;
    }
  }
  if (engine && Object.keys(draft.vars).some((k) => k.startsWith("failover_"))) draft.vars.media_engine = engine;
}

async function toUser(deps: RouteDeps, draft: DecisionDraft, account: RouteAccount, user: RoutedUser): Promise<RouteDecision> {
  draft.vars.dest_kind = "user";
  draft.vars.dest_id = user.id;
  // The call's user: the caller for a call from a device, else (a carrier's or a trunk's call) the user it rings.
  draft.userId ??= user.id;
  step(draft, "user", `${user.username} (${user.id})`);
  if (user.status !== "active") return reject(draft, 480, "Temporarily Unavailable", "user disabled");
  // The user's own limits on the calls it receives from outside (a carrier's or a trunk's call), before
  // any forward: a call forwarded on is still a call to the user (a per-period one counts it). A
  // concurrent one is a CAC counter of its own (level call_limit), taken only by the calls from outside
  // that reach the user: not by the calls it places, nor by internal ones, which its `user` slot counts.
  if (draft.direction === "inbound") {
    const limited = await callLimits(deps, draft, user.limits, "in");
    if (limited) return limited;
  }
  const ownLimitIds = new Set(user.limits.map((l) => l.id));
  const ownLimitSlots = () => draft.slots.filter((s) => s.level === "call_limit" && ownLimitIds.has(s.id));
  // A call forwarded elsewhere (always, or as /route's busy or unreachable failover) does not go to the
  // user: the user's slot, and its concurrent limits' counters, are not the forward's to take, or a
  // user at such a ceiling would have its forwarded call refused by it. The caller's own slot stays (a
  // user calling itself is still placing a call).
  const leaveUserSlot = () => {
    if (draft.deviceId !== null && draft.userId === user.id) return;
    const own = new Set(ownLimitSlots());
    draft.slots = draft.slots.filter((s) => !(s.level === "user" && s.id === user.id) && !own.has(s));
  };
  const always = user.forwards.find((f) => f.trigger === "always");
  if (always) {
    step(draft, "forward", `user forwards always to ${always.number} (${always.id})`);
    leaveUserSlot();
    return forwardCall(deps, draft, account, always);
  }
  /**
   * Where a call goes when /route already knows the user is busy or unreachable: the user's forward for
   * it, else the user's mailbox, else the dialled number's forward (a call to a DID), else nowhere (the
   * caller gets 486 or 480). A busy phone's own 486 goes the same way through the edge's failover vars.
   */
  const failover = async (trigger: "busy" | "unreachable"): Promise<RouteDecision | null> => {
    leaveUserSlot();
    // A forward whose number the phone lists or geo policies refuse is no way on (as in the failover
    // vars): the next one takes its place, never a 603 or 403 for a call that had somewhere to go.
    const own = user.forwards.find((f) => f.trigger === trigger);
    const forwarded = own ? await forwardCall(deps, draft, account, own, trigger) : null;
    if (forwarded) return forwarded;
    // A mailbox is answered by a media engine: without one, the next way on (not a 503).
    if (user.voicemail_id && deps.settings.mediaEngines.length) return toMediaEngine(draft, deps.settings.mediaEngines, { kind: "voicemail", id: user.voicemail_id, flowId: null });
    if (user.voicemail_id) step(draft, "voicemail", `${user.voicemail_id} skipped: no media engine configured (MEDIA_ENGINES)`);
    const did = draft.didForwards?.find((f) => f.trigger === trigger);
    if (did) {
      step(draft, "forward", `the number's ${trigger} forward to ${did.number} (${did.id})`);
      return forwardCall(deps, draft, account, did, trigger);
    }
    return null;
  };
  const byTrigger = (t: RouteForward["trigger"]) => user.forwards.find((f) => f.trigger === t) ?? null;
  // A soft limit's counter never makes the user busy.
  const limitSlots = ownLimitSlots().filter((s) => !s.soft);
  const [active, registered, limitActive] = await Promise.all([
    deps.userCallCount(account.id, user.id),
    deps.contacts(account.id, user.id),
    Promise.all(limitSlots.map((slot) => slotActive(deps.live, account.id, slot))),
  ]);
  // Bindings of a device disabled or removed since it registered are never rung (they would stay
  // until they expire, up to a day).
  const activeDevices = new Set(user.devices);
  const contacts = registered.filter((c) => activeDevices.has(c.device_id));
  if (contacts.length < registered.length) step(draft, "user", `${registered.length - contacts.length} binding(s) of inactive devices left out`);
  // A user calling itself may have set a lower ceiling on its slot before (its own max_simultaneous).
  const ceiling = Math.min(user.max_simultaneous, draft.slots.find((s) => s.level === "user" && s.id === user.id)?.limit ?? Infinity);
  if (active >= ceiling) {
    step(draft, "user", `busy: ${active} of ${ceiling} simultaneous calls`);
    return (await failover("busy")) ?? reject(draft, 486, "Busy Here", "user at max_simultaneous");
  }
  // The user's concurrent limit on calls from outside, full: busy too (CAC would refuse the call 486;
  // known here, it goes to the busy forward or the mailbox instead).
  const full = limitSlots.findIndex((slot, i) => limitActive[i]! >= slot.limit);
  if (full >= 0) {
    const slot = limitSlots[full]!;
    const name = user.limits.find((l) => l.id === slot.id)?.name ?? slot.id;
    step(draft, "user", `busy: call limit ${name} holds ${limitActive[full]} of ${slot.limit} concurrent calls`);
    return (await failover("busy")) ?? reject(draft, 486, "Busy Here", `user at call limit ${name}`);
  }
  if (contacts.length === 0) {
    step(draft, "user", "no registered contacts");
    return (await failover("unreachable")) ?? reject(draft, 480, "Temporarily Unavailable", "user not registered");
  }
  await setFailovers(deps, draft, account.id, user.forwards, user.voicemail_id, deps.settings.mediaEngines[0] ?? null);
  // The no-answer forward's ring time, when it is the failover (a refused one is none).
  const noAnswer = byTrigger("no_answer");
  const ringSec = noAnswer?.timeout_sec && draft.vars.failover_no_answer === `forward:${noAnswer.id}` ? Math.min(noAnswer.timeout_sec, user.ring_timeout_sec) : user.ring_timeout_sec;
  addSlot(draft, "user", user.id, user.max_simultaneous);
  const extra = sipHeaders({ "X-Account-Id": account.id, "X-Call-Direction": draft.direction });
  const routes: RtjsonRoute[] = contacts.map((c) => {
    const route: RtjsonRoute = { uri: c.contact, fr_inv_timer: ringSec * 1000, headers: { extra } };
    if (c.received) route.dst_uri = c.received;
    if (c.path) route.path = c.path;
    if (c.socket) route.socket = c.socket;
    return route;
  });
  step(draft, "proxy", `${routes.length} contact(s), ring ${ringSec}s`, { devices: [...new Set(contacts.map((c) => c.device_id))] });
  return proxy(draft, routes, "parallel");
}

// ---- forwards and outbound legs ---------------------------------------------------------------

/**
 * The destination's policies: do-not-call (phone lists dnc_out, the account's /v1/dnc) and geo
 * policies, unless an allow list holds the number. For every number a call goes out to: dialled by a
 * device, or a forward's (else a forward would be a way around them).
 */
function destinationVerdict(draft: DecisionDraft, ctx: Awaited<ReturnType<typeof loadOutbound>>, e164: string): RouteDecision | null {
  const problem = destinationProblem(draft, ctx, e164);
  if (!problem) return null;
  if (problem.dnc) return dncReject(draft, problem.why, e164);
  return reject(draft, 403, "Forbidden", problem.why);
}

/** What the destination's policies refuse `e164` for (with the trace steps saying so), or null. */
function destinationProblem(draft: DecisionDraft, ctx: Awaited<ReturnType<typeof loadOutbound>>, e164: string): { dnc: boolean; why: string } | null {
  if (ctx.lists.includes("allow")) {
    step(draft, "dnc", `${e164} is on an allow list: do-not-call and geo policies skipped`);
    return null;
  }
  if (ctx.lists.includes("dnc_out")) return { dnc: true, why: "on a do-not-call phone list" };
  if (ctx.dnc) return { dnc: true, why: "on the account's do-not-call list" };
  // A number of no country (an international network or service: +881, +882, +979 …) is ZZ to a geo
  // policy: an allowlist refuses it unless it lists ZZ, a denylist that lists ZZ refuses it.
  const country = geoCountryOf(e164);
  const shown = country === NO_COUNTRY ? `${NO_COUNTRY} (no country)` : country;
  for (const g of ctx.geo) {
    const listed = g.countries.includes(country);
    if ((g.mode === "allowlist" && !listed) || (g.mode === "denylist" && listed)) {
      step(draft, "geo", `${g.name} (${g.scope_kind} ${g.mode}) refuses ${shown}`);
      return { dnc: false, why: `destination country ${shown} not allowed` };
    }
  }
  if (ctx.geo.length) step(draft, "geo", `${shown} allowed by ${ctx.geo.map((g) => g.name).join(", ")}`);
  return null;
}

/**
 * Why a forward may not go out now, or null; the same checks for a forward /route places and for a
 * failover the edge may place later (`asFailover`):
 * - a loop: the account's own number `back`, which routes straight back to what forwards (that number
 *   itself, or the user whose forward it is): the call would leave through the carrier and come back in,
 *   again and again, each time a call out;
 * - the destination's policies (do-not-call lists, geo), as for a dialled number;
 * - `asFailover`: a hard limit of calls out that is full (read, not counted: a failover is placed, if
 *   ever, later; a forward placed now is counted, and refused, by callLimits).
 */
async function forwardRefusal(
  deps: RouteDeps,
  draft: DecisionDraft,
  accountId: string,
  fwd: RouteForward,
  ctx: Awaited<ReturnType<typeof loadOutbound>>,
  back: Awaited<ReturnType<typeof loadDid>>,
  asFailover: boolean,
): Promise<{ why: string; dnc?: boolean; loop?: boolean } | null> {
  if (back && back.account.id === accountId && (back.number.id === fwd.number_id || (fwd.user_id !== null && back.number.dest_kind === "user" && back.number.dest_id === fwd.user_id))) {
    return { why: `this account's own number ${back.number.id}, which routes back here: a loop through the carrier`, loop: true };
  }
  const problem = destinationProblem(draft, ctx, fwd.number);
  if (problem) return problem;
  const full = asFailover ? await fullOutLimit(deps, draft, ctx.limits, accountId) : null;
  return full ? { why: `call limit ${full.name} reached` } : null;
}

/**
 * Sends the call out to a forward's number (or, with `confirm`, to a media engine that screens it). The
 * number passes the destination's policies and the outbound call limits first. A call that goes out
 * is outbound from here on, whatever it was (a DID's, a device's internal call): recorded, billed
 * and sent to the carrier as one, under the account's max_out.
 * `failover`: the trigger of a busy or unreachable forward /route takes the call to; a forward
 * refused (forwardRefusal) is then no way on (null: the next one takes its place), where otherwise it
 * refuses the call (482 for a loop, 603, 403).
 */
async function forwardCall(deps: RouteDeps, draft: DecisionDraft, account: RouteAccount, fwd: RouteForward): Promise<RouteDecision>;
async function forwardCall(deps: RouteDeps, draft: DecisionDraft, account: RouteAccount, fwd: RouteForward, failover: "busy" | "unreachable"): Promise<RouteDecision | null>;
async function forwardCall(deps: RouteDeps, draft: DecisionDraft, account: RouteAccount, fwd: RouteForward, failover?: "busy" | "unreachable"): Promise<RouteDecision | null> {
  const [ctx, transforms, back] = await Promise.all([
    loadOutbound(deps.db, account.id, draft.userId ?? "", fwd.number, Math.floor(draft.now.getTime() / 1000)),
    loadOutboundTransforms(deps.db, account.id),
    loadDid(deps.db, fwd.number),
  ]);
  // A busy or unreachable forward goes out only if it may (its full limits refuse it here, uncounted);
  // one /route places at once is counted, and refused, by the limits below.
  const refused = await forwardRefusal(deps, draft, account.id, fwd, ctx, back, failover !== undefined);
  if (refused && failover) {
    step(draft, "forward", `${failover} → ${fwd.number} (${fwd.id}) refused: ${refused.why}: no failover`);
    return null;
  }
  draft.vars.forward_id = fwd.id;
  if (refused) {
    step(draft, "forward", `${fwd.number} (${fwd.id}) refused: ${refused.why}`);
    if (refused.loop) return reject(draft, 482, "Loop Detected", "forward to a number that routes back to it");
    return refused.dnc ? dncReject(draft, refused.why, fwd.number) : reject(draft, 403, "Forbidden", refused.why);
  }
  const limited = await callLimits(deps, draft, ctx.limits, "out", () => ["account_out", account.id]);
  if (limited) return limited;
  // Decided once the forward goes (callerId sets the call's presented number). The caller's own number
  // (passthrough) is withheld as the caller asks; a DID or a custom number is the account's, presented
  // whoever calls. A device's own call passes on its caller's caller-ID as a call out from that device
  // would present it (the caller-ID rules, the user's out_cid, …), never the From the phone wrote.
  const passthrough = (): { number: string; name: string | null; withheld?: boolean } => {
    if (!draft.callerUser) return { number: callerNumber(draft), name: null, withheld: isAnonymous(draft.req) };
    const own = callerId(draft, account, { user: draft.callerUser }, ctx.cidRules, fwd.number);
    return { number: own.number, name: own.name, withheld: isAnonymous(draft.req) };
  };
  const cid =
    fwd.cid_mode === "custom" && fwd.cid_number
      ? { number: fwd.cid_number, name: null }
      : fwd.cid_mode === "did" && draft.vars.did
        ? { number: String(draft.vars.did), name: null }
        : passthrough();
  if (draft.direction !== "outbound") step(draft, "forward", `out to ${fwd.number}: the call is outbound (was ${draft.direction})`);
  draft.direction = "outbound";
  addSlot(draft, "account_out", account.id, account.max_out);
  if (fwd.confirm === 1) {
    // Press-1 screening needs a media engine on the forwarded leg, which places it (the engine is
    // reached at the number called, as for every destination): the call is recorded and billed as the
    // outbound call to the forward's number all the same.
    const screened = toMediaEngine(draft, deps.settings.mediaEngines, { kind: "forward", id: fwd.id, flowId: null });
    if (screened.reply.rtjson.action === "flow") screened.to = fwd.number;
    return screened;
  }
  setOverflow(draft, fwd, deps.settings.mediaEngines[0] ?? null);
  // The number is E.164 already (account-scope rules are for what devices dial); the legs take their
  // route's and trunk's transforms like any outbound call.
  return pickRoutes(deps, draft, account, ctx.routes, transforms, fwd.number, cid);
}

/**
 * Where a forwarded call goes when the forward fails (its overflow destination): the failover of every
 * trigger, handled at a media engine like the others. The original leg's failovers do not carry over.
 */
function setOverflow(draft: DecisionDraft, fwd: RouteForward, engine: string | null): void {
  for (const key of Object.keys(draft.vars)) if (key.startsWith("failover_")) delete draft.vars[key];
  const kind = fwd.overflow_dest_kind;
  if (!kind || kind === "hangup") return;
  const dest = fwd.overflow_dest_id ? `${kind}:${fwd.overflow_dest_id}` : kind;
  for (const trigger of ["busy", "no_answer", "unreachable"] as const) draft.vars[`failover_${trigger}`] = dest;
  if (engine) draft.vars.media_engine = engine;
  step(draft, "forward", `if the forward fails: ${dest}${engine ? "" : " (no media engine configured to take it)"}`);
}

/**
 * Chooses outbound routes for `e164`: the matching routes with the longest prefix (a country match
 * before none, then priority) are serial failover, each to its trunk or to the carrier default; when
 * none of them is usable, the next most specific tied group. A trunk that registers to us (inbound_auth
 * register) is reached at its live registrations (its proxy when it has none). A trunk whose OPTIONS
 * probes go unanswered (ping_sec) is tried after the ones that answer, and makes a group usable only
 * when no group has an answering leg. No matching or usable route: the carrier default (CARRIER_URI)
 * when set, else 503.
 */
async function pickRoutes(
  deps: RouteDeps,
  draft: DecisionDraft,
  account: RouteAccount,
  routes: readonly RouteOutboundRoute[],
  transforms: readonly RouteTransform[],
  e164: string,
  /** The caller-ID to present; `withheld`: the caller withholds it (anonymous, Privacy: id). */
  cid: { number: string; name: string | null; withheld?: boolean },
  /** Applied to a caller-ID the leg falls back to (the trunk's cid_number, the From as sent). */
  fallbackCid: (number: string) => string = (number) => number,
): Promise<RouteDecision> {
  // A route's country fits the number's own (2: JE for a Jersey number) or the one whose calling code
  // it is in (1: GB); the own country is the more specific.
  const fits = new Map(routes.map((r) => [r, r.match_country ? countryFit(e164, r.match_country) : 0]));
  const matching = routes
    .filter((r) => (!r.match_prefix || e164.startsWith(r.match_prefix)) && (!r.match_country || fits.get(r)! > 0))
    .sort((a, b) => (b.match_prefix?.length ?? 0) - (a.match_prefix?.length ?? 0) || fits.get(b)! - fits.get(a)! || a.priority - b.priority);
  // Tied routes (same prefix length, as specific a country or none) are one group; the most specific
  // group with a usable leg is taken, a less specific one when none of its trunks can (disabled for maintenance).
  const groups: RouteOutboundRoute[][] = [];
  for (const r of matching) {
    const last = groups.at(-1)?.[0];
    if (last && (last.match_prefix?.length ?? 0) === (r.match_prefix?.length ?? 0) && fits.get(last) === fits.get(r)) groups.at(-1)!.push(r);
    else groups.push([r]);
  }
  const trunkState = await trunkLiveState(deps, account.id, matching, draft.now.getTime());
  const carrier = deps.settings.carrierUri;
  const leg = (routeId: string | null, trunkId: string | null, dst: string, cidNumber: string) => {
    const inScope = (t: RouteTransform) => (t.scope_kind === "route" && t.scope_id === routeId) || (t.scope_kind === "trunk" && t.scope_id === trunkId);
    return {
      dst: applyTransforms(draft, "outbound_dst", transforms, dst, inScope),
      cid: applyTransforms(draft, "outbound_cid", transforms, cidNumber, inScope),
    };
  };
  const extra = sipHeaders({ "X-Account-Id": account.id, "X-Call-Direction": draft.direction });
  // The name goes into the From header as written by the account: quoted and escaped (a comma or a
  // quote in "Acme, Inc." would otherwise break the header), control characters dropped.
  const from = (user: string, domain: string) => ({ uri: `sip:${user}@${domain}`, ...(cid.name && !cid.withheld ? { display: quotedDisplay(cid.name) } : {}) });
  // The caller's identity asserted to the trunk or carrier (RFC 3325); a withheld one with Privacy: id,
  // unless the caller's own Privacy header (which the edge passes on) is there to say so.
  const asserted = (cidNumber: string, domain: string) =>
    sipHeaders({
      "P-Asserted-Identity": cidNumber && !namesNobody(cidNumber) ? `<sip:${cidNumber}@${domain}>` : null,
      Privacy: cid.withheld && !draft.req.privacy ? "id" : null,
    });
  // A caller who withholds its identity is presented as anonymous (RFC 3323): its number, when it has
  // one, goes only in P-Asserted-Identity, never in the From the callee sees.
  const presented = (cidNumber: string, domain: string) =>
    cid.withheld ? { from: { uri: ANONYMOUS_URI, display: "Anonymous" }, extra: extra + asserted(cidNumber, domain) } : { from: from(cidNumber, domain), extra };
  /** One group's legs: rtjson routes with their trunks, those through answering trunks apart from the others. */
  type Leg = { route: RtjsonRoute; trunk: { id: string; max: number | null } | null };
  let chosen: { up: Leg[]; down: Leg[] } | null = null;
  let allDown: Leg[] | null = null;
  for (const group of groups) {
    const up: Leg[] = [];
    const down: Leg[] = [];
    for (const r of group) {
      if (r.via === "trunk") {
        const t = r.trunk;
        const contacts = t ? trunkState.contacts.get(t.id) : undefined;
        const unusable = !t
          ? "missing"
          : t.status !== "active"
            ? t.status
            : t.direction === "inbound"
              ? "inbound only"
              : !t.proxy && !contacts?.length
                ? t.inbound_auth === "register" ? "not registered" : "no proxy"
                : null;
        if (!t || unusable) {
          step(draft, "outbound_route", `${r.name}: trunk ${t?.name ?? r.id} unusable (${unusable})`);
          continue;
        }
        const { dst, cid: c } = leg(r.id, t.id, e164, cid.number || fallbackCid(t.cid_number || draft.req.from));
        const domain = t.from_domain ?? (t.proxy ? hostOf(t.proxy) : hostOf(contacts![0]!.contact));
        // A trunk's from_user (the carrier's account) is the From's user; the caller-ID goes in P-Asserted-Identity.
        const headers = t.from_user ? { from: from(t.from_user, domain), extra: extra + asserted(c, domain) } : presented(c, domain);
        const auth = t.auth ? { auth_trunk: t.id } : {};
        const isDown = trunkState.down.has(t.id);
        const target = isDown ? down : up;
        const ceiling = { id: t.id, max: t.max_channels };
        if (contacts?.length) {
          // Its registrations, the latest to expire first (usually the last REGISTER: where the PBX is now).
          for (const contact of [...contacts].reverse()) target.push({ route: { ...contactRoute(contact, dst), headers, ...auth }, trunk: ceiling });
        } else {
          target.push({ route: { uri: trunkUri(t.proxy!, t.transport, dst), headers, ...auth }, trunk: ceiling });
        }
        const via = contacts?.length ? `${contacts.length} registration${contacts.length > 1 ? "s" : ""}` : "proxy";
        step(
          draft,
          "outbound_route",
          `${r.name} (prefix ${r.match_prefix ?? "any"}, country ${r.match_country ?? "any"}, priority ${r.priority}) → trunk ${t.name} (${via})${isDown ? `: not answering OPTIONS since ${new Date(trunkState.down.get(t.id)!.since).toISOString()}` : ""}`,
        );
      } else {
        if (!carrier) {
          step(draft, "outbound_route", `${r.name}: via carrier, but no CARRIER_URI is configured`);
          continue;
        }
        const { dst, cid: c } = leg(r.id, null, e164, cid.number || fallbackCid(draft.req.from));
        up.push({ route: { uri: withUser(carrier, dst), headers: presented(c, hostOf(carrier)) }, trunk: null });
        step(draft, "outbound_route", `${r.name} (prefix ${r.match_prefix ?? "any"}, country ${r.match_country ?? "any"}, priority ${r.priority}) → carrier`);
      }
    }
    if (up.length) {
      chosen = { up, down };
      break;
    }
    if (down.length) {
      // Every usable trunk of the group stopped answering: a less specific group is tried for one that answers.
      step(draft, "outbound_route", "no trunk of these routes answers OPTIONS: less specific routes first");
      allDown ??= down;
    }
  }
  if (!chosen && allDown) {
    step(draft, "outbound_route", "every usable trunk stopped answering OPTIONS: tried anyway");
    chosen = { up: allDown, down: [] };
  }
  const legs: Leg[] = chosen ? [...chosen.up, ...chosen.down] : [];
  if (legs.length === 0 && carrier) {
    legs.push({ route: { uri: withUser(carrier, e164), headers: presented(cid.number || fallbackCid(draft.req.from), hostOf(carrier)) }, trunk: null });
    step(draft, "outbound_route", groups.length ? "no usable route → carrier default" : "no matching route → carrier default");
  }
  if (legs.length === 0) return reject(draft, 503, "Service Unavailable", `no usable outbound route for ${e164}`);
  const firstTrunk = legs[0]!.trunk;
  if (firstTrunk) {
    draft.trunkId = firstTrunk.id;
    // Out through the trunk the call came in through (a DID's forward, a PBX's call back out): a
    // second channel of that trunk, counted beside the one coming in.
    const cameIn = draft.slots.some((s) => s.level === "trunk" && s.id === firstTrunk.id && !s.leg);
    addSlot(draft, "trunk", firstTrunk.id, firstTrunk.max, cameIn ? "out" : undefined);
    if (firstTrunk.max !== null && legs.length > 1) draft.legs = legs.map((l) => ({ trunk: l.trunk }));
  }
  draft.to = e164;
  // An emergency number's digits name no country (911 is not India's +91).
  draft.vars.country = draft.vars.emergency ? null : countryOfE164(e164);
  return outbound(draft, legs.map((l) => l.route));
}

/**
 * What the live store says of the trunks `routes` go through: the registrations of those that register
 * to us, and which of those probed with OPTIONS stopped answering. Reads only when some trunk needs it.
 */
async function trunkLiveState(
  deps: RouteDeps,
  accountId: string,
  routes: readonly RouteOutboundRoute[],
  now: number,
): Promise<{ contacts: Map<string, TrunkContact[]>; down: Map<string, TrunkHealth> }> {
  const trunks = new Map<string, NonNullable<RouteOutboundRoute["trunk"]>>();
  for (const r of routes) if (r.via === "trunk" && r.trunk && r.trunk.status === "active") trunks.set(r.trunk.id, r.trunk);
  const registering = [...trunks.values()].filter((t) => t.inbound_auth === "register");
  const probed = [...trunks.values()].some((t) => t.ping_sec !== null);
  const [contactLists, health] = await Promise.all([
    Promise.all(registering.map((t) => trunkContacts(deps.live, accountId, t.id, now))),
    probed ? readTrunkHealth(deps.live, accountId) : Promise.resolve(new Map<string, TrunkHealth>()),
  ]);
  const contacts = new Map(registering.map((t, i) => [t.id, contactLists[i]!]));
  const down = new Map<string, TrunkHealth>();
  for (const t of trunks.values()) {
    const h = health.get(t.id);
    if (h && isTrunkDown(h, t.ping_sec, now)) down.set(t.id, h);
  }
  return { contacts, down };
}

/** An rtjson route to one registration of a trunk, for `user` (its NAT source, Path and socket as registered). */
function contactRoute(contact: TrunkContact, user: string): RtjsonRoute {
  return {
    uri: withUser(contact.contact, user),
    ...(contact.received ? { dst_uri: contact.received } : {}),
    ...(contact.path ? { path: contact.path } : {}),
    ...(contact.socket ? { socket: contact.socket } : {}),
  };
}

// ---- from a customer PBX (a trunk with role pbx) -----------------------------------------------

/**
 * A call from a customer's PBX (a trunk with role pbx) to a number that is none of the account's
 * DIDs: the PBX's users reach the account's extensions and users (internal), and call out through the
 * account's routes (outbound, under every outbound policy: the account's transforms, DNC and geo
 * policies, call limits, caller-ID rules and ceilings), as its devices do. The trunk's max_channels
 * counts them. The caller-ID is the number the PBX sends (after the trunk's inbound_cid transforms), as
 * a user's out_cid would be: a caller-ID rule of the account for the destination's country comes first.
 * `byAddress`: recognized by its source address (inbound_auth ip), not by a digest the edge checked.
 */
async function fromPbx(deps: RouteDeps, draft: DecisionDraft, source: TrunkContext, byAddress: boolean): Promise<RouteDecision> {
  const trunk = source.trunk;
  const ctx = await loadDevice(deps.db, trunk.account_id, "", draft.req.to);
  const account = ctx.account;
  draft.accountId = trunk.account_id;
  draft.trunkId = trunk.id;
  if (!account || account.status !== "active") return reject(draft, 403, "Forbidden", `account ${account?.status ?? "missing"}`);
  const cid = applyTransforms(draft, "inbound_cid", source.transforms, draft.from);
  const number = cid.replace(/^\+/, "");
  // Where the account's devices may call from: the PBX's address as much.
  const acl = aclVerdict(draft, (ctx.acls ?? []).filter((r) => r.scope_kind === "account"));
  if (acl) return acl;
  addSlot(draft, "trunk", trunk.id, trunk.max_channels);
  const caller: OutboundCaller = { pbx: { number: E164.test(number) ? number : null, name: draft.req.fromName ?? null } };
  const emergency = isEmergencyNumber(deps, draft);
  if (ctx.extension && !emergency) {
    draft.direction = "internal";
    step(draft, "classify", `internal from PBX trunk ${trunk.name} (${trunk.id}) to extension ${ctx.extension.digits}`);
    step(draft, "extension", `${ctx.extension.digits} (${ctx.extension.id})`);
    const target = scheduledTarget(draft, ctx.extension, ctx.extension.schedule, account.timezone);
    if (!target) return reject(draft, 480, "Temporarily Unavailable", "extension closed, and no closed destination");
    return routeTo(deps, draft, account, target, 1);
  }
  if (ctx.user && !emergency) {
    draft.direction = "internal";
    step(draft, "classify", `internal from PBX trunk ${trunk.name} (${trunk.id}) to user ${ctx.user.username}`);
    return toUser(deps, draft, account, ctx.user);
  }
  const digits = dialledDigits(draft.req.to);
  if (!/^[0-9]+$/.test(digits)) {
    step(draft, "classify", `PBX trunk ${trunk.name}: no DID, extension or user ${draft.req.to} in the account`);
    return reject(draft, 404, "Not Found", "no such number, extension or user");
  }
  draft.direction = "outbound";
  // The toll-fraud gate (SPEC.md section 5: outbound PSTN only from what the account owns, proven): a
  // PBX proves itself by its digest (inbound_auth register or digest), or by a connection (TCP, TLS)
  // from its address; a UDP source address alone can be forged by anyone.
  const transport = (draft.req.transport ?? "").toLowerCase();
  if (byAddress && transport !== "tcp" && transport !== "tls") {
    step(draft, "classify", `outbound from PBX trunk ${trunk.name} (${trunk.id}), known by its address alone over ${transport || "an unknown transport"}: a forgeable source (use TCP or TLS, or inbound_auth register or digest)`);
    return reject(draft, 403, "Forbidden", "toll-fraud gate: a PBX calls out over TCP or TLS, or with its credentials");
  }
  if (emergency) {
    step(draft, "classify", `emergency call from PBX trunk ${trunk.name} (${trunk.id}) to ${emergency}`);
    return emergencyCall(deps, draft, account, caller, emergency);
  }
  step(draft, "classify", `outbound from PBX trunk ${trunk.name} (${trunk.id}) to ${digits}`);
  return outboundCall(deps, draft, account, caller, digits, ctx.outTransforms);
}

// ---- device-originated: internal and outbound ------------------------------------------------

async function fromDevice(deps: RouteDeps, draft: DecisionDraft, accountId: string, deviceId: string, known?: DeviceContext): Promise<RouteDecision> {
  const ctx = known && known.device?.id === deviceId && known.account?.id === accountId ? known : await loadDevice(deps.db, accountId, deviceId, draft.req.to);
  draft.accountId = ctx.account ? accountId : null;
  // An emergency number goes out, whatever extension or user of the account has its digits.
  const emergency = isEmergencyNumber(deps, draft);
  // An extension, a user, or a name neither has (a misdial) is internal; digits go out.
  const direction = !emergency && (ctx.extension || ctx.user || !/^[0-9*#]+$/.test(dialledDigits(draft.req.to))) ? "internal" : "outbound";
  const problem = !ctx.account
    ? "unknown account"
    : ctx.account.status !== "active"
      ? `account ${ctx.account.status}`
      : !ctx.device
        ? "device not owned by the account"
        : ctx.device.status !== "active"
          ? "device disabled"
          : !ctx.caller || ctx.caller.status !== "active"
            ? "user disabled"
            : draft.req.user_id && draft.req.user_id !== ctx.device.user_id
              ? "user does not own the device"
              : null;
  if (problem || !ctx.account || !ctx.device || !ctx.caller) {
    if (!ctx.device) {
      // Not a device of the account the edge named: nothing about the call is that account's to record.
      draft.accountId = null;
    } else {
      // The account's own device, refused: recorded as the device's call (to a user or extension of
      // the account it would have been internal), not as an inbound one from nobody.
      draft.direction = direction;
      draft.deviceId = ctx.device.id;
      draft.userId = ctx.device.user_id;
    }
    step(draft, "classify", `device ${deviceId}: ${problem}`);
    return reject(draft, 403, "Forbidden", problem ?? "unknown device");
  }
  const account = ctx.account;
  const caller = ctx.caller;
  draft.userId = caller.id;
  draft.deviceId = ctx.device.id;
  draft.callerUser = caller;
  draft.direction = direction;
  // Where the account's devices (and this user's) may call from holds for every call they place:
  // an extension, a user or a feature code as much as a number outside.
  const acl = aclVerdict(draft, ctx.acls ?? []);
  if (acl) return acl;
  // The caller's own ceiling holds for every call they place, internal ones too (outbound calls add
  // it with the account's): their `user` slot, beside the callee's.
  const callerSlot = () => addSlot(draft, "user", caller.id, caller.max_simultaneous);
  if (emergency) {
    step(draft, "classify", `emergency call from ${caller.username} (${ctx.device.id}) to ${emergency}${ctx.extension || ctx.user ? ` (not the account's ${ctx.extension ? "extension" : "user"} of that name)` : ""}`);
    return emergencyCall(deps, draft, account, { user: caller }, emergency);
  }
  if (ctx.extension) {
    callerSlot();
    step(draft, "classify", `internal from ${caller.username} to extension ${ctx.extension.digits}`);
    step(draft, "extension", `${ctx.extension.digits} (${ctx.extension.id})`);
    const target = scheduledTarget(draft, ctx.extension, ctx.extension.schedule, account.timezone);
    if (!target) return reject(draft, 480, "Temporarily Unavailable", "extension closed, and no closed destination");
    return routeTo(deps, draft, account, target, 1);
  }
  if (ctx.user) {
    callerSlot();
    step(draft, "classify", `internal from ${caller.username} to user ${ctx.user.username}`);
    return toUser(deps, draft, account, ctx.user);
  }
  const digits = dialledDigits(draft.req.to);
  if (direction === "internal") {
    // A name no user or extension has: a misdialled internal call, not an outbound one.
    step(draft, "classify", `no extension or user ${draft.req.to} in the account`);
    return reject(draft, 404, "Not Found", "no such extension or user");
  }
  step(draft, "classify", `outbound from ${caller.username} (${ctx.device.id}) to ${digits}`);
  return outboundCall(deps, draft, account, { user: caller }, digits, ctx.outTransforms);
}

/** The emergency number dialled (as is: not with a +), or null. */
function isEmergencyNumber(deps: RouteDeps, draft: DecisionDraft): string | null {
  if (!deps.settings.emergencyNumbers.length || dialledInternational(draft.req.to)) return null;
  const digits = dialledDigits(draft.req.to);
  return deps.settings.emergencyNumbers.includes(digits) ? digits : null;
}

/**
 * An emergency call (EMERGENCY_NUMBERS), from an authenticated device or a PBX that may call out: it
 * goes out as dialled, past everything that could keep someone from help: the account's transforms,
 * do-not-call and geo policies, call limits and the capacity ceilings of the account and the user (a
 * trunk's channels still hold: they are the carrier's). Routes: those for the number itself
 * (match_prefix "911"; never one for a longer number's prefix: "91" is India's), then those for any
 * number (no prefix, no country), then the carrier default; no destination transforms of a route or
 * trunk (a "+" rule would make 911 +911). The caller-ID is the callback number (the user's or
 * account's rules for any country, the user's out_cid, the account's default), never withheld; a
 * route's or trunk's caller-ID transforms still apply. The trace and the account log say so.
 */
async function emergencyCall(deps: RouteDeps, draft: DecisionDraft, account: RouteAccount, caller: OutboundCaller, digits: string): Promise<RouteDecision> {
  draft.direction = "outbound";
  draft.to = digits;
  draft.vars.emergency = 1;
  step(draft, "emergency", `${digits} is an emergency number: do-not-call, geo, call limits and capacity ceilings do not apply`);
  const user = "user" in caller ? caller.user : null;
  const [ctx, transforms] = await Promise.all([
    loadOutbound(deps.db, account.id, user?.id ?? "", digits, Math.floor(draft.now.getTime() / 1000)),
    loadOutboundTransforms(deps.db, account.id),
  ]);
  // A rule for a destination country does not apply: the digits name none (911 is not India's +91).
  const cid = callerId(draft, account, caller, ctx.cidRules.filter((r) => r.match_country === null), digits);
  // A route for the number itself counts whatever country it names (the digits name none).
  const routes = ctx.routes.filter((r) => (r.match_prefix ? r.match_prefix === digits : r.match_country === null)).map((r) => ({ ...r, match_country: null }));
  if (!routes.length && !deps.settings.carrierUri) step(draft, "emergency", `no outbound route for ${digits}: add one with match_prefix ${digits}, or one for any number`);
  const cidOnly = transforms.filter((t) => t.direction === "outbound_cid");
  return pickRoutes(deps, draft, account, routes, cidOnly, digits, { number: cid.number, name: cid.name }, (number) => number);
}

/** Who places an outbound call: a user (through a device), or a customer PBX with the caller-ID it sent. */
type OutboundCaller = { user: RouteUser } | { pbx: { number: string | null; name: string | null } };

async function outboundCall(
  deps: RouteDeps,
  draft: DecisionDraft,
  account: RouteAccount,
  caller: OutboundCaller,
  digits: string,
  transforms: readonly RouteTransform[],
): Promise<RouteDecision> {
  // A number dialled with its + is international already: national-format rules (10 digits → 1…)
  // must not rewrite it.
  const international = dialledInternational(draft.req.to);
  if (international) step(draft, "transform", `+${digits} dialled in international form: account transforms skipped`);
  // A transform may write the number with its + (^0(\d{10})$ → +44$1), or with the trunk 0 after the
  // country code: the number is the one the lists and policies know.
  const e164 = international ? digits : transformedNumber(applyTransforms(draft, "outbound_dst", transforms, digits, (t) => t.scope_kind === "account"));
  if (!E164.test(e164)) {
    step(draft, "number", `${e164} is not an E.164 number after transforms`);
    return reject(draft, 484, "Address Incomplete", "not an E.164 destination");
  }
  draft.to = e164;
  const user = "user" in caller ? caller.user : null;
  const ctx = await loadOutbound(deps.db, account.id, user?.id ?? "", e164, Math.floor(draft.now.getTime() / 1000));
  const refused = destinationVerdict(draft, ctx, e164);
  if (refused) return refused;
  addSlot(draft, "account_out", account.id, account.max_out);
  if (user) addSlot(draft, "user", user.id, user.max_simultaneous);
  const limited = await callLimits(deps, draft, ctx.limits, "out", () => ["account_out", account.id]);
  if (limited) return limited;
  const cid = callerId(draft, account, caller, ctx.cidRules, e164);
  // The account's outbound_cid transforms apply to whichever caller-ID the call presents: the one
  // chosen here, or the trunk's cid_number or From a leg falls back to.
  const accountCid = (number: string) => applyTransforms(draft, "outbound_cid", transforms, number, (t) => t.scope_kind === "account");
  const cidNumber = cid.number ? accountCid(cid.number) : "";
  // A caller withholding its identity (anonymous From, Privacy: id) withholds whichever caller-ID the call presents.
  return pickRoutes(deps, draft, account, ctx.routes, transforms, e164, { number: cidNumber, name: cid.name, withheld: isAnonymous(draft.req) }, accountCid);
}

function dncReject(draft: DecisionDraft, why: string, e164 = draft.to): RouteDecision {
  step(draft, "dnc", `${e164} is ${why}`);
  return reject(draft, 603, "Decline", `do not call: ${why}`);
}

/**
 * The presented caller-ID, most specific first: a user-scope caller_id_rule; an account rule for
 * the destination country; the user's out_cid; an account rule for any country; the account's
 * default_cid_number; else the From as sent (a trunk's cid_number applies on that trunk's leg).
 */
function callerId(
  draft: DecisionDraft,
  account: RouteAccount,
  caller: OutboundCaller,
  rules: readonly RouteCidRule[],
  e164: string,
): { number: string; name: string | null } {
  // A rule's country fits the number's own (JE for a Jersey number) before the one whose calling code it shares (GB).
  const fit = (r: (typeof rules)[number]) => (r.match_country === null ? 0 : countryFit(e164, r.match_country));
  const fits = (r: (typeof rules)[number]) => r.match_country === null || fit(r) > 0;
  const byPriority = (a: (typeof rules)[number], b: (typeof rules)[number]) => a.priority - b.priority || a.name.localeCompare(b.name);
  const bySpecificity = (a: (typeof rules)[number], b: (typeof rules)[number]) => fit(b) - fit(a) || byPriority(a, b);
  const user = rules.filter((r) => r.scope_kind === "user" && fits(r)).sort(byPriority)[0];
  const accountCountry = rules.filter((r) => r.scope_kind === "account" && r.match_country !== null && fit(r) > 0).sort(bySpecificity)[0];
  const accountAny = rules.filter((r) => r.scope_kind === "account" && r.match_country === null).sort(byPriority)[0];
  const rule = user ?? accountCountry;
  let chosen: { number: string; name: string | null; why: string };
  const own = "user" in caller
    ? { number: caller.user.out_cid_number, name: caller.user.out_cid_name, why: "user out_cid" }
    : { number: caller.pbx.number, name: caller.pbx.name, why: "the number the PBX sent" };
  if (rule) chosen = { number: rule.cid_number, name: rule.cid_name, why: `rule ${rule.name}` };
  else if (own.number) chosen = { number: own.number, name: own.name, why: own.why };
  else if (accountAny) chosen = { number: accountAny.cid_number, name: accountAny.cid_name, why: `rule ${accountAny.name}` };
  else if (account.default_cid_number) chosen = { number: account.default_cid_number, name: own.name, why: "account default_cid_number" };
  else chosen = { number: "", name: own.name, why: "none (trunk cid_number or From as sent)" };
  step(draft, "caller_id", `${chosen.number || "(unchanged)"}${chosen.name ? ` "${chosen.name}"` : ""} from ${chosen.why}`);
  if (chosen.number) {
    draft.from = chosen.number;
    draft.vars.caller_id = chosen.number;
  }
  return { number: chosen.number, name: chosen.name };
}

// ---- policies ---------------------------------------------------------------------------------

/**
 * ACL rules on the call's source: an ip_deny match refuses; ip_allow rules, when any, must match.
 * Geo rules need the source's country, which only the edge knows (`source_country`: the shipped edge
 * looks it up with GEOIP2_DB set); without it they are skipped and the trace says so.
 */
function aclVerdict(draft: DecisionDraft, rules: readonly RouteAclRule[]): RouteDecision | null {
  if (rules.length === 0) return null;
  const ip = draft.req.source_ip ?? null;
  const country = extraField(draft.req, "source_country")?.toUpperCase() ?? null;
  const inRange = (r: RouteAclRule) => {
    try {
      return ipAllowed(ip, [parseCidr(r.value)]);
    } catch {
      return false; // stored canonical on write; a value that no longer parses matches nothing
    }
  };
  const denied = rules.find((r) => r.rule_type === "ip_deny" && inRange(r));
  if (denied) {
    step(draft, "acl", `${ip} denied by ${denied.name}`);
    return reject(draft, 403, "Forbidden", "source address denied");
  }
  const allows = rules.filter((r) => r.rule_type === "ip_allow");
  if (allows.length && !allows.some(inRange)) {
    step(draft, "acl", `${ip ?? "(no source address)"} not in any ip_allow rule`);
    return reject(draft, 403, "Forbidden", "source address not allowed");
  }
  const geo = rules.filter((r) => r.rule_type === "geo_allow" || r.rule_type === "geo_deny");
  if (geo.length) {
    if (!country) step(draft, "acl", "geo rules skipped: the edge sent no source_country");
    else {
      const deny = geo.find((r) => r.rule_type === "geo_deny" && r.value === country);
      const allowsGeo = geo.filter((r) => r.rule_type === "geo_allow");
      if (deny || (allowsGeo.length && !allowsGeo.some((r) => r.value === country))) {
        step(draft, "acl", `source country ${country} refused${deny ? ` by ${deny.name}` : ""}`);
        return reject(draft, 403, "Forbidden", "source country not allowed");
      }
    }
  }
  step(draft, "acl", `passed ${rules.length} rule(s)`);
  return null;
}

/**
 * The first hard limit of calls out that a call placed now would find full, or null; nothing is
 * counted (a failover forward is decided now and placed, if ever, later).
 */
async function fullOutLimit(deps: RouteDeps, draft: DecisionDraft, limits: readonly RouteCallLimit[], accountId: string): Promise<RouteCallLimit | null> {
  for (const l of limits) {
    if (l.hard !== 1 || (l.direction !== "out" && l.direction !== "any")) continue;
    if (l.max_count <= 0) return l;
    if (l.period_sec === null) {
      // The counter callLimits admits calls out by: the policy's own, else the account's calls out.
      const own = l.direction === "any" || l.scope_kind === "user";
      const active = await slotActive(deps.live, accountId, own ? { level: "call_limit", id: l.id } : { level: "account_out", id: accountId });
      if (active >= l.max_count) return l;
    } else {
      // This call's own place in the window (an `any` limit counted it coming in) is not another call.
      const self = callLimitMember(draft.req.callId, draft.req.cseq);
      const others = (await deps.live.zliveMembers(accountKey(accountId, "call_limit_log", l.id))).filter((m) => m !== self);
      if (others.length >= l.max_count) return l;
    }
  }
  return null;
}

/**
 * call_limit policies of one direction. Per-period limits are sliding windows: each call counted is a
 * member of the policy's set in the live store (its Call-ID) for period_sec after it started, and a
 * call is admitted while fewer than max_count are live (one atomic step: `zaddExpiringWithin`). A
 * retransmitted /route (same Call-ID, whatever instance it reaches) is the same member: counted once.
 * A hard one over its count refuses (403), a soft one lets the call through with a warning in the trace. A call over a
 * limit is not added to its set, so a set holds at most max_count calls (a soft limit's warnings last
 * while max_count calls of the last period_sec are counted). A call refused after it was counted (by a
 * later hard limit, the router, or CAC) is taken out of the windows again at admission (`limitWindows`),
 * so a refused call counts against none. Concurrent limits (no period) become CAC slot ceilings, a
 * soft one a counter that never refuses (a call that finds it full is warned about).
 * `concurrentSlot`: the ceiling an account's or a number's concurrent limit of one direction lowers
 * (those ceilings count that direction's calls alone); without it (a user's limits), every concurrent
 * limit is a counter of its own.
 */
async function callLimits(
  deps: RouteDeps,
  draft: DecisionDraft,
  limits: readonly RouteCallLimit[],
  direction: "in" | "out",
  concurrentSlot?: (l: RouteCallLimit) => [level: "account_in" | "account_out" | "number", id: string],
): Promise<RouteDecision | null> {
  // Hard ones first: a call one of them refuses is counted by no soft one.
  for (const l of [...limits].sort((a, b) => b.hard - a.hard)) {
    if (l.direction !== direction && l.direction !== "any") continue;
    if (l.period_sec === null) {
      if (l.hard === 1) {
        // An account's or a number's limit of one direction lowers that direction's ceiling. The
        // policy has a counter of its own when both directions share it (each direction's ceiling would
        // let max_count calls through in each), and at user scope: the user's `user` slot counts every
        // call the user is in, so an out limit lowering it would refuse a call out for a call received.
        const own = l.direction === "any" || l.scope_kind === "user" || !concurrentSlot;
        const [level, id] = own ? (["call_limit", l.id] as const) : concurrentSlot(l);
        addSlot(draft, level, id, l.max_count, undefined, l.scope_kind === "user" ? true : undefined);
        step(draft, "call_limit", `${l.name}: at most ${l.max_count} concurrent (CAC ${level})`);
      } else {
        // Counted like a hard one (a counter of its own), never refused: a call that finds it full
        // goes on with a warning (the call's trace, the account log).
        addSlot(draft, "call_limit", l.id, l.max_count, undefined, undefined, true);
        const active = await slotActive(deps.live, draft.accountId!, { level: "call_limit", id: l.id });
        if (active >= l.max_count) {
          step(draft, "call_limit", `warning: ${l.name} soft limit exceeded (${active} concurrent call${active === 1 ? "" : "s"}, limit ${l.max_count}), call allowed`, { soft: true });
        } else step(draft, "call_limit", `${l.name}: soft, ${active} of ${l.max_count} concurrent (counted, not refused)`);
      }
      continue;
    }
    // Not the fixed-window counters of before (key call_limit:…): a set of its own, so an instance of
    // the old version running beside this one cannot trip over the other's type.
    const key = accountKey(draft.accountId!, "call_limit_log", l.id);
    const periodMs = l.period_sec * 1000;
    const counted = await deps.live.zaddExpiringWithin([{ key, limit: l.max_count }], callLimitMember(draft.req.callId, draft.req.cseq), periodMs);
    if (counted.ok) {
      (draft.limitWindows ??= []).push(key);
      continue;
    }
    if (l.hard === 1) {
      step(draft, "call_limit", `${l.name}: ${counted.count} calls in the last ${l.period_sec}s, limit ${l.max_count}`);
      return reject(draft, 403, "Forbidden", `call limit ${l.name} reached`);
    }
    step(draft, "call_limit", `warning: ${l.name} soft limit exceeded (${counted.count} calls in the last ${l.period_sec}s, limit ${l.max_count}), call allowed`, { soft: true });
  }
  return null;
}
