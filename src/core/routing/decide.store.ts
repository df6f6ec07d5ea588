/**
 * What a routing decision reads from the database: a handful of prepared statements, each returning
 * one JSON document with everything one step of the decision needs (the call path is hot: one round
 * trip per step, no query building per call). The only file of the router that touches drizzle.
 *
 * Statements are prepared once per database handle (a WeakMap), so PGlite and PostgreSQL each get
 * their own, and nothing is cached but the statement text: every call reads current rows.
 */
import { sql, type SQL, type SQLWrapper } from "drizzle-orm";
import type { DbOrTx } from "../db/db.ts";
import { rawJson } from "../db/sql-text.ts";
import type { EvaluatedRule } from "../schedules/schedule-eval.ts";
import type { DestXform } from "./route-target.ts";
import { DEFAULT_REALM_SUFFIX, defaultRealm } from "../devices/realm.ts";
import type { Static } from "@sinclair/typebox";

/** The account fields a decision uses. */
export interface RouteAccount {
  id: string;
  status: string;
  timezone: string;
  max_in: number | null;
  max_out: number | null;
  default_cid_number: string | null;
  did_default_dest_kind: string | null;
  did_default_dest_id: string | null;
}

/** A schedule with its rules. */
export interface RouteSchedule {
  id: string;
  timezone: string | null;
  rules: EvaluatedRule[];
}

/** The route-target slots a number or an extension carries. */
export interface RoutedRow {
  id: string;
  dest_kind: string | null;
  dest_id: string | null;
  dest_xform: Static<typeof DestXform> | null;
  schedule_id: string | null;
  closed_dest_kind: string | null;
  closed_dest_id: string | null;
  holiday_dest_kind: string | null;
  holiday_dest_id: string | null;
}

export interface RouteNumber extends RoutedRow {
  e164: string;
  status: string;
  max_channels: number | null;
  allow_anonymous: number;
  fax_mode: string;
}

export interface RouteExtension extends RoutedRow {
  digits: string;
}

export interface RouteUser {
  id: string;
  username: string;
  display_name: string;
  status: string;
  out_cid_number: string | null;
  out_cid_name: string | null;
  max_simultaneous: number;
  ring_timeout_sec: number;
  voicemail_id: string | null;
}

/**
 * A user a call may ring: its forwards, its active devices (only their bindings are rung), and its
 * own call limits on the calls it receives (scope user, direction in or any).
 */
export type RoutedUser = RouteUser & { forwards: RouteForward[]; devices: string[]; limits: RouteCallLimit[] };

export interface RouteForward {
  id: string;
  user_id: string | null;
  number_id: string | null;
  number: string;
  trigger: "always" | "busy" | "no_answer" | "unreachable";
  timeout_sec: number | null;
  cid_mode: "passthrough" | "did" | "custom";
  cid_number: string | null;
  confirm: number;
  overflow_dest_kind: string | null;
  overflow_dest_id: string | null;
}

export interface RouteTransform {
  id: string;
  name: string;
  scope_kind: "account" | "trunk" | "did" | "route";
  scope_id: string;
  direction: "inbound_dst" | "inbound_cid" | "outbound_dst" | "outbound_cid";
  match_regex: string;
  replacement: string;
  ordering: number;
  stop_on_match: number;
}

export interface RouteCallLimit {
  id: string;
  name: string;
  scope_kind: string;
  scope_id: string;
  direction: string;
  period_sec: number | null;
  max_count: number;
  hard: number;
}

export interface RouteAclRule {
  id: string;
  name: string;
  scope_kind: string;
  rule_type: "ip_allow" | "ip_deny" | "geo_allow" | "geo_deny";
  value: string;
}

export interface RouteCidRule {
  id: string;
  name: string;
  scope_kind: string;
  match_country: string | null;
  cid_number: string;
  cid_name: string | null;
  priority: number;
}

export interface RouteGeoPolicy {
  id: string;
  name: string;
  scope_kind: string;
  mode: "allowlist" | "denylist";
  countries: string[];
}

export interface RouteTrunk {
  id: string;
  name: string;
  account_id: string;
  status: string;
  direction: string;
  proxy: string | null;
  transport: string;
  max_channels: number | null;
  cid_number: string | null;
  from_domain: string | null;
  from_user: string | null;
  /** Whether the trunk has credentials to answer its digest challenges with (auth_username and auth_password). */
  auth: boolean;
  /** ip, register (a PBX that registers to us: calls to it go to its registration) or digest. */
  inbound_auth: string;
  /** Seconds between the edge's OPTIONS probes; null when it is not probed. */
  ping_sec: number | null;
  /** carrier, or pbx: a customer PBX, whose calls may also go to the account's extensions and users and out. */
  role: string;
}

export interface RouteOutboundRoute {
  id: string;
  name: string;
  match_prefix: string | null;
  match_country: string | null;
  via: "carrier" | "trunk";
  priority: number;
  trunk: RouteTrunk | null;
}

/** A trunk recognized as the source of an inbound call, with its pre-lookup transforms. */
export interface TrunkContext {
  trunk: RouteTrunk;
  /** inbound_* transforms of the trunk and of its account, in order. */
  transforms: RouteTransform[];
}

/** An inbound DID with everything its routing reads. */
export interface DidContext {
  number: RouteNumber;
  account: RouteAccount;
  schedule: RouteSchedule | null;
  forwards: RouteForward[];
  /** inbound_* transforms of the account and of this DID, in order. */
  transforms: RouteTransform[];
  /** call_limit rows (direction in/any) of the account and of this DID. */
  limits: RouteCallLimit[];
  acls: RouteAclRule[];
  /** The account or this DID has dnc_in lists: callers are checked against them (loadCallerLists). */
  screensCallers: boolean;
}

/** An authenticated device, its user and account, and what the dialled digits name in the account. */
export interface DeviceContext {
  account: RouteAccount | null;
  device: { id: string; user_id: string; status: string; realm: string } | null;
  caller: RouteUser | null;
  /** Extension with these digits. */
  extension: (RouteExtension & { schedule: RouteSchedule | null }) | null;
  /** User with this username. */
  user: RoutedUser | null;
  /** Every outbound_* transform of the account (account, route and trunk scopes), in order. */
  outTransforms: RouteTransform[];
  /** ACL rules of the account and of the device's user: where its devices may call from (every call they place). */
  acls: RouteAclRule[];
}

/** One hop of a route target (an extension, user, forward or flow of the account). */
export interface TargetContext {
  extension: (RouteExtension & { schedule: RouteSchedule | null }) | null;
  user: RoutedUser | null;
  forward: RouteForward | null;
  flow: { id: string; is_published: number; version: number } | null;
}

/** Outbound policy and routes of an account for one caller and one destination. */
export interface OutboundContext {
  routes: RouteOutboundRoute[];
  limits: RouteCallLimit[];
  cidRules: RouteCidRule[];
  geo: RouteGeoPolicy[];
  /** Kinds of the account's / user's phone lists (dnc_out, allow) the destination is on. */
  lists: string[];
  /** The destination is on the account's /v1/dnc list right now. */
  dnc: boolean;
}

// ---- SQL fragments ----------------------------------------------------------------------------

const p = (name: string) => sql.placeholder(name);
const list = (inner: SQL) => sql`coalesce((${inner}), '[]'::json)`;

const ACCOUNT = sql`json_build_object('id', a.id, 'status', a.status, 'timezone', a.timezone, 'max_in', a.max_in, 'max_out', a.max_out,
  'default_cid_number', a.default_cid_number, 'did_default_dest_kind', a.did_default_dest_kind, 'did_default_dest_id', a.did_default_dest_id)`;

const USER_FIELDS = (u: string) =>
  sql.raw(`json_build_object('id', ${u}.id, 'username', ${u}.username, 'display_name', ${u}.display_name, 'status', ${u}.status,
  'out_cid_number', ${u}.out_cid_number, 'out_cid_name', ${u}.out_cid_name, 'max_simultaneous', ${u}.max_simultaneous,
  'ring_timeout_sec', ${u}.ring_timeout_sec, 'voicemail_id', ${u}.voicemail_id`);

/** The schedule (with rules) whose id is the SQL expression `scheduleId`, in account `accountId`. */
const scheduleOf = (accountId: SQL, scheduleId: SQL) => sql`(select json_build_object('id', s.id, 'timezone', s.timezone, 'rules',
    ${list(sql`select json_agg(json_build_object('position', r.position, 'kind', r.kind, 'dow', r.dow, 'start_time', r.start_time,
      'end_time', r.end_time, 'start_date', r.start_date, 'end_date', r.end_date, 'is_closed', r.is_closed) order by r.position)
      from time_schedule_rule r where r.account_id = s.account_id and r.schedule_id = s.id`)})
  from time_schedule s where s.account_id = ${accountId} and s.id = ${scheduleId})`;

const TRANSFORM = sql.raw(`json_build_object('id', x.id, 'name', x.name, 'scope_kind', x.scope_kind, 'scope_id', x.scope_id,
  'direction', x.direction, 'match_regex', x.match_regex, 'replacement', x.replacement, 'ordering', x.ordering,
  'stop_on_match', x.stop_on_match)`);
const TRANSFORM_ORDER = sql.raw(`order by x.ordering, x.name`);

const forwardsWhere = (where: SQL) =>
  list(sql`select json_agg(json_build_object('id', f.id, 'user_id', f.user_id, 'number_id', f.number_id, 'number', f.number,
    'trigger', f.trigger, 'timeout_sec', f.timeout_sec, 'cid_mode', f.cid_mode, 'cid_number', f.cid_number, 'confirm', f.confirm,
    'overflow_dest_kind', f.overflow_dest_kind, 'overflow_dest_id', f.overflow_dest_id)) from forward f where ${where}`);

const ROUTED = (t: string) =>
  sql.raw(`'id', ${t}.id, 'dest_kind', ${t}.dest_kind, 'dest_id', ${t}.dest_id, 'dest_xform', ${t}.dest_xform, 'schedule_id', ${t}.schedule_id,
  'closed_dest_kind', ${t}.closed_dest_kind, 'closed_dest_id', ${t}.closed_dest_id, 'holiday_dest_kind', ${t}.holiday_dest_kind,
  'holiday_dest_id', ${t}.holiday_dest_id`);

const TRUNK = (t: string) =>
  sql.raw(`json_build_object('id', ${t}.id, 'name', ${t}.name, 'account_id', ${t}.account_id, 'status', ${t}.status, 'direction', ${t}.direction,
  'proxy', ${t}.proxy, 'transport', ${t}.transport, 'max_channels', ${t}.max_channels, 'cid_number', ${t}.cid_number,
  'from_domain', ${t}.from_domain, 'from_user', ${t}.from_user, 'auth', ${t}.auth_username is not null and ${t}.auth_secret_ref is not null,
  'inbound_auth', ${t}.inbound_auth, 'ping_sec', ${t}.ping_sec, 'role', ${t}.role)`);

const LIMIT = sql.raw(`json_build_object('id', c.id, 'name', c.name, 'scope_kind', c.scope_kind, 'scope_id', c.scope_id,
  'direction', c.direction, 'period_sec', c.period_sec, 'max_count', c.max_count, 'hard', c.hard)`);
const ACL = sql.raw(`json_build_object('id', r.id, 'name', r.name, 'scope_kind', r.scope_kind, 'rule_type', r.rule_type, 'value', r.value)`);

const extensionOf = (where: SQL) => sql`(select json_build_object(${ROUTED("e")}, 'digits', e.digits,
    'schedule', ${scheduleOf(sql`e.account_id`, sql`e.schedule_id`)}) from extension e where ${where})`;
const userOf = (where: SQL) => sql`(select ${USER_FIELDS("u")}, 'forwards', ${forwardsWhere(sql`f.account_id = u.account_id and f.user_id = u.id`)},
    'devices', coalesce((select json_agg(d.id) from device d where d.account_id = u.account_id and d.user_id = u.id and d.status = 'active'), '[]'::json),
    'limits', ${list(sql`select json_agg(${LIMIT}) from call_limit c where c.account_id = u.account_id and c.scope_kind = 'user' and c.scope_id = u.id
      and c.direction in ('in','any')`)})
    from app_user u where ${where})`;

// ---- statements -------------------------------------------------------------------------------

/** Source address → the most specific ACL of an active, ip-authenticated, inbound-capable trunk. */
/** Most trunks recognized by one source address that a call is tried against (see loadTrunksBySource). */
export const MAX_SOURCE_TRUNKS = 16;

// The DID's owner's trunks come first, then a trunk that could take the number (inbound transforms may
// make it its account's), then a PBX's that could only take it as its account's internal or outbound
// call: however many trunks other accounts put on the source, the owner's stays among the candidates.
const ownsDid = sql`exists (select 1 from did_lookup l where l.e164 = ${p("e164")} and l.account_id = t.account_id)`;
const takesDid = sql`(${ownsDid}
        or exists (select 1 from number_transform x where x.account_id = t.account_id and x.direction = 'inbound_dst'
          and ((x.scope_kind = 'trunk' and x.scope_id = t.id) or (x.scope_kind = 'account' and x.scope_id = t.account_id))))`;

const trunkBySourceSql = sql`select coalesce(json_agg(m.c order by m.owns desc, m.takes desc, m.len desc, m.id), '[]'::json) as ctx from (
    select json_build_object('trunk', ${TRUNK("t")}, 'transforms', ${list(sql`select json_agg(${TRANSFORM} ${TRANSFORM_ORDER})
      from number_transform x where x.account_id = t.account_id and x.direction in ('inbound_dst','inbound_cid')
      and ((x.scope_kind = 'trunk' and x.scope_id = t.id) or (x.scope_kind = 'account' and x.scope_id = t.account_id))`)}) as c,
      max(masklen(acl.cidr::inet)) as len, t.id, ${ownsDid} as owns, ${takesDid} as takes
    from sip_trunk_acl acl join sip_trunk t on t.account_id = acl.account_id and t.id = acl.trunk_id
    where t.status = 'active' and t.inbound_auth = 'ip' and t.direction <> 'outbound' and ${p("ip")}::inet <<= acl.cidr::inet
      and (t.role = 'pbx' or ${takesDid})
    group by t.account_id, t.id
    order by owns desc, takes desc, len desc, t.id limit ${sql.raw(String(MAX_SOURCE_TRUNKS))}) m`;

/** Whether `ip` is in an ACL of any active, ip-authenticated, inbound-capable trunk (whatever it is calling). */
const trunkSourceSql = sql`select exists (select 1 from sip_trunk_acl acl join sip_trunk t on t.account_id = acl.account_id and t.id = acl.trunk_id
    where t.status = 'active' and t.inbound_auth = 'ip' and t.direction <> 'outbound' and ${p("ip")}::inet <<= acl.cidr::inet) as ctx`;

/** Whether `ip` is in an ACL of an active, ip-authenticated, inbound-capable trunk of another account than `account`. */
const otherAccountSourceSql = sql`select exists (select 1 from sip_trunk_acl acl join sip_trunk t on t.account_id = acl.account_id and t.id = acl.trunk_id
    where t.status = 'active' and t.inbound_auth = 'ip' and t.direction <> 'outbound' and t.account_id <> ${p("account")}
      and ${p("ip")}::inet <<= acl.cidr::inet) as ctx`;

/** Whether `domain` is a SIP domain of another account than `account` (its devices' realm). */
const otherAccountDomainSql = sql`select exists (select 1 from sip_domain d where d.domain = lower(${p("domain")}) and d.account_id <> ${p("account")}) as ctx`;

/** A trunk the edge authenticated (register / digest): by account and id. */
const trunkByIdSql = sql`select json_build_object('trunk', ${TRUNK("t")}, 'transforms', ${list(sql`select json_agg(${TRANSFORM} ${TRANSFORM_ORDER})
    from number_transform x where x.account_id = t.account_id and x.direction in ('inbound_dst','inbound_cid')
    and ((x.scope_kind = 'trunk' and x.scope_id = t.id) or (x.scope_kind = 'account' and x.scope_id = t.account_id))`)}) as ctx
  from sip_trunk t where t.account_id = ${p("account")} and t.id = ${p("trunk")} and t.status = 'active' and t.direction <> 'outbound'`;

const didSql = sql`select json_build_object(
    'number', json_build_object(${ROUTED("n")}, 'e164', n.e164, 'status', n.status, 'max_channels', n.max_channels,
      'allow_anonymous', n.allow_anonymous, 'fax_mode', n.fax_mode),
    'account', ${ACCOUNT},
    'schedule', ${scheduleOf(sql`n.account_id`, sql`n.schedule_id`)},
    'forwards', ${forwardsWhere(sql`f.account_id = n.account_id and f.number_id = n.id`)},
    'transforms', ${list(sql`select json_agg(${TRANSFORM} ${TRANSFORM_ORDER}) from number_transform x
      where x.account_id = n.account_id and x.direction in ('inbound_dst','inbound_cid')
      and ((x.scope_kind = 'account' and x.scope_id = n.account_id) or (x.scope_kind = 'did' and x.scope_id = n.id))`)},
    'limits', ${list(sql`select json_agg(${LIMIT}) from call_limit c where c.account_id = n.account_id and c.direction in ('in','any')
      and ((c.scope_kind = 'account' and c.scope_id = n.account_id) or (c.scope_kind in ('did','number') and c.scope_id = n.id))`)},
    'acls', ${list(sql`select json_agg(${ACL}) from acl_rule r where r.account_id = n.account_id
      and ((r.scope_kind = 'account' and r.scope_id = n.account_id) or (r.scope_kind in ('did','number') and r.scope_id = n.id))`)},
    'screensCallers', exists(select 1 from phone_list pl where pl.account_id = n.account_id and pl.kind = 'dnc_in'
      and ((pl.scope_kind = 'account' and pl.scope_id = n.account_id) or (pl.scope_kind in ('did','number') and pl.scope_id = n.id)))
  ) as ctx
  from did_lookup l join number n on n.account_id = l.account_id and n.id = l.number_id join account a on a.id = n.account_id
  where l.e164 = ${p("e164")}`;

/**
 * The device context (a `DeviceContext` as json) of device `device` of account `account`, calling
 * `to`: expressions (placeholders, or an outer query's columns: the digest identity lookup reads it
 * with the credential, so an authenticated INVITE costs one query).
 */
export const deviceContextSql = (account: SQLWrapper, device: SQLWrapper, to: SQLWrapper) => sql`json_build_object(
    'account', (select ${ACCOUNT} from account a where a.id = ${account}),
    'device', (select json_build_object('id', d.id, 'user_id', d.user_id, 'status', d.status, 'realm', d.realm)
      from device d where d.account_id = ${account} and d.id = ${device}),
    'caller', (select ${USER_FIELDS("u")}) from device d join app_user u on u.account_id = d.account_id and u.id = d.user_id
      where d.account_id = ${account} and d.id = ${device}),
    'extension', ${extensionOf(sql`e.account_id = ${account} and e.digits = ${to}`)},
    'user', ${userOf(sql`u.account_id = ${account} and u.username = ${to}`)},
    'outTransforms', ${list(sql`select json_agg(${TRANSFORM} ${TRANSFORM_ORDER}) from number_transform x
      where x.account_id = ${account} and x.direction in ('outbound_dst','outbound_cid')`)},
    'acls', ${list(sql`select json_agg(${ACL}) from acl_rule r where r.account_id = ${account} and ((r.scope_kind = 'account' and r.scope_id = ${account})
      or (r.scope_kind = 'user' and r.scope_id = (select d.user_id from device d where d.account_id = ${account} and d.id = ${device})))`)}
  )`;

const deviceSql = sql`select ${deviceContextSql(p("account"), p("device"), p("to"))} as ctx`;

const targetSql = sql`select json_build_object(
    'extension', ${extensionOf(sql`e.account_id = ${p("account")} and e.id = ${p("id")}`)},
    'user', ${userOf(sql`u.account_id = ${p("account")} and u.id = ${p("id")}`)},
    'forward', (select json_build_object('id', f.id, 'user_id', f.user_id, 'number_id', f.number_id, 'number', f.number,
      'trigger', f.trigger, 'timeout_sec', f.timeout_sec, 'cid_mode', f.cid_mode, 'cid_number', f.cid_number, 'confirm', f.confirm,
      'overflow_dest_kind', f.overflow_dest_kind, 'overflow_dest_id', f.overflow_dest_id)
      from forward f where f.account_id = ${p("account")} and f.id = ${p("id")}),
    'flow', (select json_build_object('id', fl.id, 'is_published', fl.is_published, 'version', fl.version)
      from flow fl where fl.account_id = ${p("account")} and fl.id = ${p("id")})
  ) as ctx`;

/** Scope condition on policy rows: the account itself or the calling user. */
const accountOrUser = (alias: string) =>
  sql`((${sql.raw(alias)}.scope_kind = 'account' and ${sql.raw(alias)}.scope_id = ${p("account")}) or (${sql.raw(alias)}.scope_kind = 'user' and ${sql.raw(alias)}.scope_id = ${p("user")}))`;

const outboundSql = sql`select json_build_object(
    'routes', ${list(sql`select json_agg(json_build_object('id', o.id, 'name', o.name, 'match_prefix', o.match_prefix,
      'match_country', o.match_country, 'via', o.via, 'priority', o.priority,
      'trunk', (select ${TRUNK("t")} from sip_trunk t where t.account_id = o.account_id and t.id = o.trunk_id)) order by o.priority, o.name)
      from outbound_route o where o.account_id = ${p("account")}`)},
    'limits', ${list(sql`select json_agg(${LIMIT}) from call_limit c where c.account_id = ${p("account")} and c.direction in ('out','any') and ${accountOrUser("c")}`)},
    'cidRules', ${list(sql`select json_agg(json_build_object('id', k.id, 'name', k.name, 'scope_kind', k.scope_kind, 'match_country', k.match_country,
      'cid_number', k.cid_number, 'cid_name', k.cid_name, 'priority', k.priority) order by k.priority, k.name)
      from caller_id_rule k where k.account_id = ${p("account")} and ${accountOrUser("k")}`)},
    'geo', ${list(sql`select json_agg(json_build_object('id', g.id, 'name', g.name, 'scope_kind', g.scope_kind, 'mode', g.mode,
      'countries', ${list(sql`select json_agg(gc.country) from geo_policy_country gc where gc.account_id = g.account_id and gc.geo_policy_id = g.id`)}))
      from geo_policy g where g.account_id = ${p("account")} and ${accountOrUser("g")}`)},
    'lists', ${list(sql`select json_agg(distinct pl.kind) from phone_list pl join phone_list_entry pe
      on pe.account_id = pl.account_id and pe.phone_list_id = pl.id
      where pl.account_id = ${p("account")} and pe.e164 = ${p("e164")} and pl.kind in ('dnc_out','allow') and ${accountOrUser("pl")}`)},
    'dnc', exists(select 1 from dnc_entry de where de.account_id = ${p("account")} and de.e164 = ${p("e164")}
      and (de.expires_at is null or de.expires_at > ${p("now")}))
  ) as ctx`;

/** Every outbound_* transform of the account, in order (a forward's legs: route and trunk scopes). */
const outboundTransformsSql = sql`select ${list(sql`select json_agg(${TRANSFORM} ${TRANSFORM_ORDER}) from number_transform x
    where x.account_id = ${p("account")} and x.direction in ('outbound_dst','outbound_cid')`)} as ctx`;

/** Kinds of the lists (dnc_in, allow) of the account or of DID `number` that hold caller `e164`. */
const callerListsSql = sql`select ${list(sql`select json_agg(distinct pl.kind) from phone_list pl join phone_list_entry pe
    on pe.account_id = pl.account_id and pe.phone_list_id = pl.id
    where pl.account_id = ${p("account")} and pe.e164 = ${p("e164")} and pl.kind in ('dnc_in','allow')
      and ((pl.scope_kind = 'account' and pl.scope_id = ${p("account")}) or (pl.scope_kind in ('did','number') and pl.scope_id = ${p("number")}))`)} as ctx`;

// ---- prepared per database handle -------------------------------------------------------------

function prepareAll(db: DbOrTx) {
  const one = (name: string, query: SQL) => db.select({ ctx: sql`ctx` }).from(sql`(${query}) as q`).prepare(name);
  return {
    trunkBySource: one("route_trunk_by_source", trunkBySourceSql),
    trunkById: one("route_trunk_by_id", trunkByIdSql),
    trunkSource: one("route_trunk_source", trunkSourceSql),
    otherAccountSource: one("route_other_account_source", otherAccountSourceSql),
    otherAccountDomain: one("route_other_account_domain", otherAccountDomainSql),
    did: one("route_did", didSql),
    device: one("route_device", deviceSql),
    target: one("route_target", targetSql),
    outbound: one("route_outbound", outboundSql),
    outboundTransforms: one("route_outbound_transforms", outboundTransformsSql),
    callerLists: one("route_caller_lists", callerListsSql),
  };
}

const prepared = new WeakMap<object, ReturnType<typeof prepareAll>>();

function statements(db: DbOrTx) {
  let s = prepared.get(db);
  if (!s) {
    s = prepareAll(db);
    prepared.set(db, s);
  }
  return s;
}

/** The driver hands json back parsed (PGlite, postgres.js); a string is parsed here just in case. */
function first<T>(rows: Array<{ ctx: unknown }>): T | null {
  const value = rows[0]?.ctx;
  if (value === undefined || value === null) return null;
  return rawJson<T>(value);
}

/**
 * The active ip-authenticated trunks whose ACLs hold `ip` and that could take a call to `dialled`,
 * most specific ACL first (at most MAX_SOURCE_TRUNKS): accounts may share a source (one PBX host,
 * many tenants), so the called DID picks among them. A trunk that could take it is one whose account
 * owns the DID `dialled`, that has inbound number transforms (which may turn `dialled` into one of
 * its account's DIDs), or a PBX's (role pbx: its calls also go to the account's extensions, users and
 * out); the others are left out before the limit, so however many tenants share the source, the owner
 * of the DID is among the candidates.
 */
export async function loadTrunksBySource(db: DbOrTx, ip: string, dialled: string): Promise<TrunkContext[]> {
  return first<TrunkContext[]>(await statements(db).trunkBySource.execute({ ip, e164: dialled })) ?? [];
}

/**
 * Whether `ip` belongs to an IP-authenticated trunk, though none of those trunks could take the number
 * called ({@link loadTrunksBySource} found none): such a call is to an unknown number, not from a
 * device that has yet to authenticate (a trunk cannot answer a challenge).
 */
export async function isTrunkSource(db: DbOrTx, ip: string): Promise<boolean> {
  return first<boolean>(await statements(db).trunkSource.execute({ ip })) === true;
}

/** Whether another account than `accountId` has an IP-authenticated trunk whose ACL holds `ip` (a shared source). */
export async function isOtherAccountsTrunkSource(db: DbOrTx, ip: string, accountId: string): Promise<boolean> {
  return first<boolean>(await statements(db).otherAccountSource.execute({ ip, account: accountId })) === true;
}

/**
 * Whether `domain` is a SIP domain or default realm of another account than `accountId` (a device of
 * that account calling).
 */
export async function isOtherAccountsDomain(db: DbOrTx, domain: string, accountId: string): Promise<boolean> {
  // Default realms (`<account>.sip.parley.local`) are no sip_domain rows: any but the account's own is another's.
  const lower = domain.toLowerCase();
  if (lower.endsWith(`.${DEFAULT_REALM_SUFFIX}`)) return lower !== defaultRealm(accountId);
  return first<boolean>(await statements(db).otherAccountDomain.execute({ domain, account: accountId })) === true;
}

/** An active, inbound-capable trunk of the account by id (authenticated by the edge), or null. */
export async function loadTrunkById(db: DbOrTx, accountId: string, trunkId: string): Promise<TrunkContext | null> {
  return first<TrunkContext>(await statements(db).trunkById.execute({ account: accountId, trunk: trunkId }));
}

/** A DID and its routing data, or null when no account holds it. */
export async function loadDid(db: DbOrTx, e164: string): Promise<DidContext | null> {
  return first<DidContext>(await statements(db).did.execute({ e164 }));
}

/** The calling device's context and what `to` names in its account. */
export async function loadDevice(db: DbOrTx, accountId: string, deviceId: string, to: string): Promise<DeviceContext> {
  return (await first<DeviceContext>(await statements(db).device.execute({ account: accountId, device: deviceId, to })))!;
}

/** One route-target hop: whichever of extension / user / forward / flow has this id in the account. */
export async function loadTarget(db: DbOrTx, accountId: string, id: string): Promise<TargetContext> {
  return (await first<TargetContext>(await statements(db).target.execute({ account: accountId, id })))!;
}

/** Every outbound_* transform of the account, in order. */
export async function loadOutboundTransforms(db: DbOrTx, accountId: string): Promise<RouteTransform[]> {
  return (await first<RouteTransform[]>(await statements(db).outboundTransforms.execute({ account: accountId }))) ?? [];
}

/** Kinds of the caller-screening lists (dnc_in, allow) of the account or of DID `numberId` that hold `e164`. */
export async function loadCallerLists(db: DbOrTx, accountId: string, numberId: string, e164: string): Promise<string[]> {
  return (await first<string[]>(await statements(db).callerLists.execute({ account: accountId, number: numberId, e164 }))) ?? [];
}

/** Outbound routes and policies of the account and the calling user, for destination `e164`. */
export async function loadOutbound(db: DbOrTx, accountId: string, userId: string, e164: string, nowSec: number): Promise<OutboundContext> {
  return (await first<OutboundContext>(await statements(db).outbound.execute({ account: accountId, user: userId, e164, now: nowSec })))!;
}
