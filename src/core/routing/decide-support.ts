/**
 * Building blocks of a routing decision: the trace, the replies (rtjson documents Kamailio's rtjson
 * module applies unchanged), SIP URI helpers and number transforms.
 */
import type { CacSlot, RouteDecision, RouteReply, RouteRequest, RtjsonRoute } from "./route-types.ts";
import type { RouteForward, RouteTransform, RouteUser } from "./decide.store.ts";
import { internationalDigits, withoutTrunkZero } from "../validation/fields.ts";

/** A decision being built: the decision's fields but its reply, plus what the rules work from. */
export interface DecisionDraft extends Omit<RouteDecision, "reply"> {
  req: RouteRequest;
  /** Variables handed on to the edge / media engine (reply `vars`). */
  vars: Record<string, string | number | null>;
  now: Date;
  /** The dialled number's own forwards (busy, no_answer, unreachable), for a call that came in to a DID. */
  didForwards?: readonly RouteForward[];
  /** The user whose device places the call (a device's call): its caller-ID, should the call go out. */
  callerUser?: RouteUser;
}

/** Appends a trace step. */
export function step(draft: DecisionDraft, name: string, result: string, data?: Record<string, unknown>): void {
  draft.trace.push(data ? { at: Date.now(), step: name, result, data } : { at: Date.now(), step: name, result });
}

/**
 * Adds a CAC slot when the ceiling is set; a second slot of the same level, id and leg keeps the lower
 * limit. `leg` out: the place of a call's leg out through a trunk it also came in through (a second
 * channel of that trunk, not the same one). `busy`: a person's own ceiling (see `CacSlot.busy`).
 * `soft`: a counter that never refuses (see `CacSlot.soft`).
 */
export function addSlot(draft: DecisionDraft, level: CacSlot["level"], id: string, limit: number | null | undefined, leg?: CacSlot["leg"], busy?: true, soft?: true): void {
  if (limit === null || limit === undefined) return;
  const existing = draft.slots.find((s) => s.level === level && s.id === id && s.leg === leg);
  if (existing) existing.limit = Math.min(existing.limit, limit);
  else draft.slots.push({ level, id, limit, ...(leg ? { leg } : {}), ...(busy ? { busy } : {}), ...(soft ? { soft } : {}) });
}

function baseVars(draft: DecisionDraft): Record<string, string | number | null> {
  return {
    call_id: draft.req.callId,
    direction: draft.direction,
    from: draft.from,
    to: draft.to,
    user_id: draft.userId,
    device_id: draft.deviceId,
    number_id: draft.numberId,
    trunk_id: draft.trunkId,
    ...draft.vars,
  };
}

function finish(draft: DecisionDraft, reply: RouteReply, slots: CacSlot[]): RouteDecision {
  return {
    reply,
    accountId: draft.accountId,
    direction: draft.direction,
    from: draft.from,
    to: draft.to,
    userId: draft.userId,
    deviceId: draft.deviceId,
    numberId: draft.numberId,
    trunkId: draft.trunkId,
    queueId: draft.queueId,
    slots,
    trace: draft.trace,
    ...(draft.limitWindows?.length ? { limitWindows: draft.limitWindows } : {}),
    ...(draft.legs && slots.length ? { legs: draft.legs } : {}),
  };
}

/** A refusal with a SIP code; it takes no CAC slots. */
export function reject(draft: DecisionDraft, code: number, reason: string, why: string): RouteDecision {
  step(draft, "reject", `${code} ${reason}: ${why}`);
  return finish(draft, { rtjson: { action: "reject", account_id: draft.accountId, flow_id: null, vars: baseVars(draft), code, reason } }, []);
}

/** Proxy to registered contacts (rtjson routes, one per contact). */
export function proxy(draft: DecisionDraft, routes: RtjsonRoute[], routing: "serial" | "parallel"): RouteDecision {
  // A destination's caller name prefix (dest_xform.cid_name_prefix, "Sales: ") goes before the caller's
  // name (else number) in the From's display name the phones show; the edge sets it on each leg.
  const prefix = draft.vars.cid_name_prefix;
  if (typeof prefix === "string" && prefix !== "") {
    const display = quotedDisplay(`${prefix}${displayText(draft.req.fromName ?? "") || draft.from}`);
    for (const route of routes) route.headers = { ...route.headers, from: { ...route.headers?.from, display } };
  }
  const reply: RouteReply = {
    rtjson: { action: "proxy", account_id: draft.accountId, flow_id: null, vars: baseVars(draft), version: "1.0", routing, routes },
  };
  return finish(draft, reply, draft.slots);
}

/**
 * The text of a display name as the edge read it from a header (`$fn` keeps a quoted string's quotes
 * and escapes): `"Alice \"A\""` is `Alice "A"`; a token (`Alice`) is itself.
 * @example displayText('"Sales \\"EU\\""') // 'Sales "EU"'
 */
export function displayText(raw: string): string {
  const quoted = /^\s*"((?:[^"\\]|\\.)*)"\s*$/s.exec(raw);
  return quoted ? quoted[1]!.replace(/\\(.)/gs, "$1") : raw.trim();
}

/** A SIP display name as a quoted string (RFC 3261 25.1): control characters dropped, `"` and `\` escaped, at most 80 characters. */
export function quotedDisplay(text: string): string {
  const clean = [...text.replace(/[\u0000-\u001f\u007f]/g, "")].slice(0, 80).join("");
  return `"${clean.replace(/["\\]/g, "\\$&")}"`;
}

/** Out through trunks or the carrier, serial failover in the order given. */
export function outbound(draft: DecisionDraft, routes: RtjsonRoute[]): RouteDecision {
  const reply: RouteReply = {
    rtjson: { action: "outbound", account_id: draft.accountId, flow_id: null, vars: baseVars(draft), version: "1.0", routing: "serial", routes },
  };
  return finish(draft, reply, draft.slots);
}

/**
 * Hands the call to a media engine (flows, queues, ring groups, voicemail, conferences, feature codes):
 * rtjson routes to the engines, the first chosen by the Call-ID so load spreads and a retransmission
 * lands on the same one, the others as serial failover. No engine configured: 503.
 */
export function toMediaEngine(
  draft: DecisionDraft,
  engines: readonly string[],
  dest: { kind: string; id: string | null; flowId: string | null },
): RouteDecision {
  draft.vars.dest_kind = dest.kind;
  draft.vars.dest_id = dest.id;
  if (engines.length === 0) return reject(draft, 503, "Service Unavailable", "no media engine configured (MEDIA_ENGINES)");
  const start = hashOf(draft.req.callId) % engines.length;
  const ordered = [...engines.slice(start), ...engines.slice(0, start)];
  const extra = sipHeaders({
    "X-Account-Id": draft.accountId,
    "X-Flow-Id": dest.flowId,
    "X-Dest": dest.id ? `${dest.kind}:${dest.id}` : dest.kind,
    "X-Call-Direction": draft.direction,
    "X-Number-Id": draft.numberId,
    "X-User-Id": draft.userId,
    "X-Fax-Mode": typeof draft.vars.fax_mode === "string" ? draft.vars.fax_mode : null,
  });
  const routes = ordered.map((engine) => ({ uri: withUser(engine, draft.to), dst_uri: engine, headers: { extra } }));
  step(draft, "media_engine", `${dest.kind}${dest.id ? ` ${dest.id}` : ""} → ${ordered[0]}`, { engines: ordered.length });
  const reply: RouteReply = {
    rtjson: { action: "flow", account_id: draft.accountId, flow_id: dest.flowId, vars: baseVars(draft), version: "1.0", routing: "serial", routes },
  };
  return finish(draft, reply, draft.slots);
}

/** `Name: value\r\n` lines for rtjson `headers.extra`; null values are left out, CR/LF stripped. */
export function sipHeaders(headers: Record<string, string | null | undefined>): string {
  let out = "";
  for (const [name, value] of Object.entries(headers)) {
    if (value === null || value === undefined || value === "") continue;
    out += `${name}: ${value.replace(/[\r\n]/g, "")}\r\n`;
  }
  return out;
}

function hashOf(text: string): number {
  let h = 2166136261;
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 16777619);
  return h >>> 0;
}

/**
 * Puts `user` in a SIP URI's user part (replacing any): `sip:10.0.0.5:5080;transport=tcp` with
 * `4000` → `sip:4000@10.0.0.5:5080;transport=tcp`.
 */
export function withUser(uri: string, user: string): string {
  const m = /^(sips?):(?:[^@;]*@)?(.*)$/.exec(uri);
  if (!m) return uri;
  return `${m[1]}:${encodeUser(user)}@${m[2]}`;
}

/** The URI of a trunk's proxy (`host[:port]`) for `user`, with its transport when not UDP. */
export function trunkUri(proxy: string, transport: string, user: string): string {
  return `sip:${encodeUser(user)}@${proxy}${transport === "udp" ? "" : `;transport=${transport}`}`;
}

function encodeUser(user: string): string {
  // RFC 3261 user part: unreserved and a few marks pass; everything else is %-escaped.
  return user.replace(/[^A-Za-z0-9\-_.!~*'()&=+$,;?/]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase().padStart(2, "0")}`);
}

/** Host part of a SIP URI (no port), for From domains. */
export function hostOf(uri: string): string {
  const m = /^(?:sips?:)?(?:[^@]*@)?(\[[^\]]+\]|[^:;>]+)/.exec(uri);
  return m?.[1] ?? uri;
}

const regexCache = new Map<string, RegExp | null>();

function compiled(pattern: string): RegExp | null {
  let re = regexCache.get(pattern);
  if (re === undefined) {
    try {
      re = new RegExp(pattern);
    } catch {
      // Patterns are validated when the config is applied; a bad one here matches nothing.
      re = null;
    }
    if (regexCache.size < 5000) regexCache.set(pattern, re);
  }
  return re;
}

/**
 * Applies number transforms of one direction in order (ordering, then name): each matching one
 * rewrites the number; one with stop_on_match ends the run. Each rewrite is a trace step.
 * @example applyTransforms(draft, "outbound_dst", rows, "00442071230000") // "442071230000" with ^00 → ""
 */
export function applyTransforms(
  draft: DecisionDraft,
  direction: RouteTransform["direction"],
  transforms: readonly RouteTransform[],
  value: string,
  scope?: (t: RouteTransform) => boolean,
): string {
  let out = value;
  for (const t of transforms) {
    if (t.direction !== direction || (scope && !scope(t))) continue;
    const re = compiled(t.match_regex);
    if (!re || !re.test(out)) continue;
    const next = out.replace(re, t.replacement);
    step(draft, "transform", `${t.name} (${t.scope_kind} ${direction}) ${out} → ${next}`, { transform_id: t.id });
    out = next;
    if (t.stop_on_match === 1) break;
  }
  return out;
}

/** Whether a dialled number was written in international form (a leading +): it is E.164 already. */
export function dialledInternational(value: string): boolean {
  return /^\+/.test(value.trim().replace(/^(sips?|tel):/i, ""));
}

/**
 * The dialled number as digits: strips a sip:/tel: scheme, the host part and visual separators. A
 * number with its leading + is in international form: the + goes, and so does the national trunk
 * prefix written after its country code ("+44 (0)20…", "+44 020…", as `normalizeE164` reads them, so
 * the lists it wrote match). A leading 00 stays: which prefix dials abroad is the account's to say
 * (00, 011, 0011…), with its outbound_dst transforms.
 * @example dialledDigits("sip:+44 (0)20 7123 0000@acme.example") // "442071230000"; dialledDigits("0044207…") // "0044207…"
 */
export function dialledDigits(value: string): string {
  const v = value.trim().replace(/^(sips?|tel):/i, "").replace(/@.*$/, "");
  if (v.startsWith("+")) return internationalDigits(v.slice(1));
  return v.replace(/[\s().-]/g, "");
}

/**
 * A number an outbound_dst transform (or a device, in international form) gave, as E.164 without +:
 * one leading + dropped (people write E.164 with it: ^0(\d{10})$ → +44$1), and the national trunk
 * prefix after the country code, as `normalizeE164` drops it. Not a check: the caller tests the shape.
 * @example transformedNumber("+447700900123") // "447700900123"; transformedNumber("4402071230000") // "442071230000"
 */
export function transformedNumber(value: string): string {
  return withoutTrunkZero(value.startsWith("+") ? value.slice(1) : value);
}
