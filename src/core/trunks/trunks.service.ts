/**
 * Trunks, outbound routes and number transforms as sections of the config file: their rules
 * (what a trunk needs for each direction and auth mode, which trunk a route may use, which regexes
 * are safe), their canonical form, and how each change is written.
 */
import { newId } from "../ids/ids.ts";
import { normalizeE164 } from "../validation/fields.ts";
import type { SipTrunkRow } from "./trunks.schema.ts";
import type { TrunkModel } from "./trunks.model.ts";
import {
  changeTrunkAcl,
  deleteNumberTransform,
  deleteOutboundRoute,
  deleteTrunk,
  inboundUsernamesOfOtherAccounts,
  insertNumberTransform,
  insertOutboundRoute,
  insertTrunk,
  listNumberTransforms,
  listOutboundRoutes,
  listTrunkAcls,
  listTrunks,
  updateNumberTransform,
  updateOutboundRoute,
  updateTrunk,
} from "./trunks.store.ts";
import { canonicalCidr } from "./cidr-text.ts";
import { captureGroupCount, regexProblem } from "./regex-safety.ts";
import {
  byText,
  detectableCountryAt,
  orNull,
  readSecret,
  rejectDuplicateKeys,
  type Desired,
  type SecretSpec,
  type Section,
  type WriteContext,
} from "../config-file/section.ts";
import { resolveScope, scopeIdFor, scopeKeyFor, type ScopeKind } from "../config-file/scope.ts";

/** The widest ACL ranges a PBX trunk recognized by its address alone (inbound_auth ip) may list. */
export const PBX_MIN_PREFIX_V4 = 24;
export const PBX_MIN_PREFIX_V6 = 56;
/**
 * The widest ACL ranges any other trunk recognized by its address (a carrier's) may list: an address in
 * a trunk's ACL is never challenged (a trunk cannot answer), so a wide range would take the phones of
 * every tenant inside it out of authentication (0.0.0.0/0: every phone on the platform got 404).
 * A carrier with a larger network lists its signalling ranges one by one (up to 200).
 */
export const TRUNK_MIN_PREFIX_V4 = 24;
export const TRUNK_MIN_PREFIX_V6 = 48;

/** A trunk in canonical form. */
export type TrunkCanonical = {
  name: string;
  provider: string;
  role: string;
  direction: string;
  proxy: string | null;
  transport: string;
  do_register: number;
  auth_username: string | null;
  auth_password: SecretSpec;
  realm: string | null;
  from_domain: string | null;
  from_user: string | null;
  expire_sec: number;
  inbound_auth: string;
  inbound_username: string | null;
  inbound_password: SecretSpec;
  reg_node: string | null;
  max_channels: number | null;
  cid_number: string | null;
  ping_sec: number | null;
  status: string;
  acl: string[];
};

/** Secret fields of a trunk and the column holding each one's ref. */
const TRUNK_SECRETS = [
  { field: "auth_password", column: "auth_secret_ref" },
  { field: "inbound_password", column: "inbound_secret_ref" },
] as const;

const takesInbound = (direction: string) => direction === "inbound" || direction === "both";
const takesOutbound = (direction: string) => direction === "outbound" || direction === "both";

/** The trunk section: keyed by name. */
export const trunkSection: Section<TrunkCanonical> = {
  name: "trunks",
  label: "trunk",
  keyFields: ["name"],
  keyOf: (e) => e.name,
  compare: (a, b) => byText(a.name, b.name),

  async canonicalize(entries, ctx) {
    const out: Array<Desired<TrunkCanonical>> = [];
    (entries as TrunkModel.TrunkEntry[]).forEach((raw, i) => {
      const at = `/trunks/${i}`;
      const err = (field: string, message: string) => ctx.errors.push({ path: `${at}/${field}`, message });
      const entry: TrunkCanonical = {
        name: raw.name,
        provider: raw.provider ?? "generic",
        role: raw.role ?? "carrier",
        direction: raw.direction ?? "both",
        proxy: orNull(raw.proxy),
        transport: raw.transport ?? "udp",
        do_register: raw.do_register ?? 0,
        auth_username: orNull(raw.auth_username),
        auth_password: readSecret(raw.auth_password, `${at}/auth_password`, ctx),
        realm: orNull(raw.realm),
        from_domain: orNull(raw.from_domain),
        from_user: orNull(raw.from_user),
        expire_sec: raw.expire_sec ?? 3600,
        inbound_auth: raw.inbound_auth ?? "ip",
        inbound_username: orNull(raw.inbound_username),
        inbound_password: readSecret(raw.inbound_password, `${at}/inbound_password`, ctx),
        reg_node: orNull(raw.reg_node),
        max_channels: orNull(raw.max_channels),
        cid_number: null,
        ping_sec: orNull(raw.ping_sec),
        status: raw.status ?? "active",
        acl: [],
      };
      if (raw.cid_number) {
        entry.cid_number = normalizeE164(raw.cid_number);
        if (!entry.cid_number) err("cid_number", "Not an E.164 number.");
      }
      const port = entry.proxy ? /:(\d+)$/.exec(entry.proxy.replace(/^\[[^\]]*\]/, "")) : null;
      if (port && (Number(port[1]) < 1 || Number(port[1]) > 65535)) err("proxy", "The port must be 1–65535.");
      const acl = new Set<string>();
      (raw.acl ?? []).forEach((text, j) => {
        const result = canonicalCidr(text);
        if ("error" in result) err(`acl/${j}`, result.error);
        else if (acl.has(result.cidr)) err(`acl/${j}`, `${result.cidr} is listed twice.`);
        else acl.add(result.cidr);
      });
      entry.acl = [...acl].sort(byText);

      const has = (s: SecretSpec) => s.secret !== "none";
      // A trunk that registers to us is reached at its registration; a proxy is then its fallback.
      if (takesOutbound(entry.direction) && !entry.proxy && entry.inbound_auth !== "register") {
        err("proxy", `A trunk with direction ${entry.direction} needs a proxy to send calls to (or inbound_auth register: calls go to its registration).`);
      }
      if (entry.do_register === 1) {
        if (!entry.proxy) err("proxy", "do_register needs a proxy to register with.");
        if (!entry.auth_username) err("auth_username", "do_register needs auth_username.");
        if (!has(entry.auth_password)) err("auth_password", "do_register needs auth_password.");
      }
      if (has(entry.auth_password) && !entry.auth_username) err("auth_username", "auth_password needs auth_username.");
      if (has(entry.inbound_password) && !entry.inbound_username) err("inbound_username", "inbound_password needs inbound_username.");
      if (takesInbound(entry.direction)) {
        if (entry.inbound_auth === "ip" && entry.acl.length === 0) {
          err("acl", "inbound_auth ip recognizes the trunk by its source address: list at least one range in acl.");
        }
        // A PBX known by its address alone takes every call from it that is no DID (to the account's
        // users, and out): it is pinned to its own hosts, never a range other customers' phones share.
        // Any trunk known by its address is exempt from challenges there: its ranges stay narrow too.
        if (entry.inbound_auth === "ip") {
          const pbx = entry.role === "pbx";
          entry.acl.forEach((cidr, j) => {
            const v6 = cidr.includes(":");
            const bits = Number(cidr.split("/")[1] ?? (v6 ? 128 : 32));
            const widest = pbx ? (v6 ? PBX_MIN_PREFIX_V6 : PBX_MIN_PREFIX_V4) : v6 ? TRUNK_MIN_PREFIX_V6 : TRUNK_MIN_PREFIX_V4;
            if (bits >= widest) return;
            err(
              `acl/${j}`,
              pbx
                ? `${cidr} is wider than /${widest}: a PBX trunk recognized by its address (inbound_auth ip) lists its own hosts; use inbound_auth register or digest for one behind a shared or changing address.`
                : `${cidr} is wider than /${widest}: a trunk recognized by its address (inbound_auth ip) lists the ranges it signals from, each at most /${widest} (list several), or uses inbound_auth digest.`,
            );
          });
        }
        if (entry.inbound_auth !== "ip") {
          if (!entry.inbound_username) err("inbound_username", `inbound_auth ${entry.inbound_auth} needs inbound_username.`);
          if (!has(entry.inbound_password)) err("inbound_password", `inbound_auth ${entry.inbound_auth} needs inbound_password.`);
        }
      }
      out.push({ entry, at });
    });
    const unique = rejectDuplicateKeys(this, out, ctx.errors, "name");
    const inboundNames = new Map<string, string>();
    for (const { entry, at } of unique) {
      ctx.fileTrunks.set(entry.name, { direction: entry.direction });
      if (!entry.inbound_username) continue;
      const first = inboundNames.get(entry.inbound_username);
      if (first) ctx.errors.push({ path: `${at}/inbound_username`, message: `Already used by the trunk at ${first}: the edge could not tell them apart.` });
      else inboundNames.set(entry.inbound_username, at);
    }
    return unique;
  },

  async load(db, accountId) {
    const [rows, acls] = await Promise.all([listTrunks(db, accountId), listTrunkAcls(db, accountId)]);
    const aclByTrunk = new Map<string, string[]>();
    for (const acl of acls) aclByTrunk.set(acl.trunk_id, [...(aclByTrunk.get(acl.trunk_id) ?? []), acl.cidr]);
    return rows.map((row) => ({ id: row.id, entry: trunkFromRow(row, (aclByTrunk.get(row.id) ?? []).sort(byText)) }));
  },

  async checkCreates(db, accountId, claims) {
    const named = claims.filter((c) => c.entry.inbound_username !== null);
    const taken = new Set(await inboundUsernamesOfOtherAccounts(db, accountId, named.map((c) => c.entry.inbound_username!)));
    return named
      .filter((c) => taken.has(c.entry.inbound_username!))
      .map((c) => ({ path: `${c.at}/inbound_username`, message: `${c.entry.inbound_username} is already the inbound username of another account's trunk (the edge finds a trunk by it).` }));
  },

  async create(tx, w, entry) {
    const id = newId("trk");
    const refs: Record<string, string | null> = {};
    for (const { field, column } of TRUNK_SECRETS) {
      const spec = entry[field];
      refs[column] = spec.secret === "plain" ? await w.secrets.put(tx, w.accountId, spec.value) : null;
    }
    await insertTrunk(tx, { ...trunkColumns(entry), ...refs, account_id: w.accountId, id, created_at: w.now, updated_at: w.now });
    await changeTrunkAcl(tx, w.accountId, id, entry.acl, [], w.now);
    w.trunkIdByName.set(entry.name, id);
    return id;
  },

  async update(tx, w, id, entry, current, changes) {
    const refs: Record<string, string | null> = {};
    for (const { field, column } of TRUNK_SECRETS) {
      const change = changes.find((c) => c.field === field);
      if (!change || !("secret" in change)) continue;
      const stored = current[field].secret === "stored" ? (current[field] as { ref: string }).ref : null;
      const wanted = entry[field];
      if (change.secret === "removed") {
        if (stored) await w.secrets.remove(tx, w.accountId, stored);
        refs[column] = null;
      } else if (wanted.secret === "plain") {
        if (stored && (await w.secrets.replace(tx, w.accountId, stored, wanted.value))) continue;
        refs[column] = await w.secrets.put(tx, w.accountId, wanted.value);
      }
    }
    await updateTrunk(tx, w.accountId, id, { ...trunkColumns(entry), ...refs, updated_at: w.now });
    const acl = changes.find((c) => c.field === "acl");
    if (acl && "added" in acl) await changeTrunkAcl(tx, w.accountId, id, acl.added, acl.removed, w.now);
    w.trunkIdByName.set(entry.name, id);
  },

  async remove(tx, w, id, current) {
    await deleteTrunk(tx, w.accountId, id);
    for (const { field } of TRUNK_SECRETS) {
      const spec = current[field];
      if (spec.secret === "stored") await w.secrets.remove(tx, w.accountId, spec.ref);
    }
  },
};

function trunkFromRow(row: SipTrunkRow, acl: string[]): TrunkCanonical {
  const secret = (ref: string | null): SecretSpec => (ref ? { secret: "stored", ref } : { secret: "none" });
  return {
    name: row.name,
    provider: row.provider,
    role: row.role,
    direction: row.direction,
    proxy: row.proxy,
    transport: row.transport,
    do_register: row.do_register,
    auth_username: row.auth_username,
    auth_password: secret(row.auth_secret_ref),
    realm: row.realm,
    from_domain: row.from_domain,
    from_user: row.from_user,
    expire_sec: row.expire_sec,
    inbound_auth: row.inbound_auth,
    inbound_username: row.inbound_username,
    inbound_password: secret(row.inbound_secret_ref),
    reg_node: row.reg_node,
    max_channels: row.max_channels,
    cid_number: row.cid_number,
    ping_sec: row.ping_sec,
    status: row.status,
    acl,
  };
}

/** The plain columns of a trunk (secrets and ids are the writer's business). */
function trunkColumns(e: TrunkCanonical) {
  return {
    name: e.name,
    provider: e.provider,
    role: e.role,
    direction: e.direction,
    proxy: e.proxy,
    transport: e.transport,
    do_register: e.do_register,
    auth_username: e.auth_username,
    realm: e.realm,
    from_domain: e.from_domain,
    from_user: e.from_user,
    expire_sec: e.expire_sec,
    inbound_auth: e.inbound_auth,
    inbound_username: e.inbound_username,
    reg_node: e.reg_node,
    max_channels: e.max_channels,
    cid_number: e.cid_number,
    ping_sec: e.ping_sec,
    status: e.status,
  };
}

/** An outbound route in canonical form. */
export type OutboundRouteCanonical = {
  name: string;
  match_prefix: string | null;
  match_country: string | null;
  via: string;
  trunk: string | null;
  priority: number;
};

/** The outbound route section: keyed by name, exported in the order routes are tried. */
export const outboundRouteSection: Section<OutboundRouteCanonical> = {
  name: "outbound_routes",
  label: "outbound route",
  keyFields: ["name"],
  keyOf: (e) => e.name,
  compare: (a, b) => a.priority - b.priority || byText(a.name, b.name),

  async canonicalize(entries, ctx) {
    const out: Array<Desired<OutboundRouteCanonical>> = [];
    (entries as TrunkModel.OutboundRouteEntry[]).forEach((raw, i) => {
      const at = `/outbound_routes/${i}`;
      const entry: OutboundRouteCanonical = {
        name: raw.name,
        match_prefix: orNull(raw.match_prefix),
        match_country: detectableCountryAt(orNull(raw.match_country), `${at}/match_country`, ctx),
        via: raw.via,
        trunk: orNull(raw.trunk),
        priority: raw.priority ?? 100,
      };
      if (entry.via === "trunk") {
        const trunk = entry.trunk === null ? undefined : ctx.fileTrunks.get(entry.trunk);
        if (entry.trunk === null) ctx.errors.push({ path: `${at}/trunk`, message: "via trunk needs the name of a trunk." });
        else if (!trunk) ctx.errors.push({ path: `${at}/trunk`, message: `No trunk named '${entry.trunk}' in this file.` });
        else if (!takesOutbound(trunk.direction)) ctx.errors.push({ path: `${at}/trunk`, message: `The trunk '${entry.trunk}' has direction inbound: it carries no outbound calls.` });
      } else if (entry.trunk !== null) {
        ctx.errors.push({ path: `${at}/trunk`, message: "via carrier takes no trunk; use via trunk to send through one." });
      }
      out.push({ entry, at });
    });
    const unique = rejectDuplicateKeys(this, out, ctx.errors, "name");
    for (const { entry } of unique) ctx.fileRoutes.add(entry.name);
    return unique;
  },

  async load(db, accountId, book) {
    return (await listOutboundRoutes(db, accountId)).map((row) => ({
      id: row.id,
      entry: {
        name: row.name,
        match_prefix: row.match_prefix,
        match_country: row.match_country,
        via: row.via,
        trunk: row.trunk_id === null ? null : (book.trunkNameById.get(row.trunk_id) ?? row.trunk_id),
        priority: row.priority,
      },
    }));
  },

  async create(tx, w, entry) {
    const id = newId("ort");
    await insertOutboundRoute(tx, { ...routeColumns(entry, w), account_id: w.accountId, id, created_at: w.now, updated_at: w.now });
    w.routeIdByName.set(entry.name, id);
    return id;
  },

  async update(tx, w, id, entry) {
    await updateOutboundRoute(tx, w.accountId, id, { ...routeColumns(entry, w), updated_at: w.now });
    w.routeIdByName.set(entry.name, id);
  },

  async remove(tx, w, id) {
    await deleteOutboundRoute(tx, w.accountId, id);
  },
};

function routeColumns(e: OutboundRouteCanonical, w: WriteContext) {
  return {
    name: e.name,
    match_prefix: e.match_prefix,
    match_country: e.match_country,
    via: e.via,
    trunk_id: e.via === "trunk" ? scopeIdFor("trunk", e.trunk, w) : null,
    priority: e.priority,
  };
}

/** A number transform in canonical form. */
export type NumberTransformCanonical = {
  name: string;
  scope_kind: string;
  scope: string | null;
  direction: string;
  match_regex: string;
  replacement: string;
  ordering: number;
  stop_on_match: number;
};

/** What a replacement may contain: dialable characters and group references. */
const REPLACEMENT = /^(?:[0-9*#+]|\$[1-9]|\$<[A-Za-z_][A-Za-z0-9_]*>|\$\$|\$&)*$/;

/** The number transform section: keyed by name, exported in the order transforms run. */
export const numberTransformSection: Section<NumberTransformCanonical> = {
  name: "number_transforms",
  label: "number transform",
  keyFields: ["name"],
  keyOf: (e) => e.name,
  compare: (a, b) => a.ordering - b.ordering || byText(a.name, b.name),

  async canonicalize(entries, ctx) {
    const out: Array<Desired<NumberTransformCanonical>> = [];
    (entries as TrunkModel.NumberTransformEntry[]).forEach((raw, i) => {
      const at = `/number_transforms/${i}`;
      const kind = raw.scope_kind ?? "account";
      const entry: NumberTransformCanonical = {
        name: raw.name,
        scope_kind: kind,
        scope: resolveScope(kind, raw.scope, at, ctx),
        direction: raw.direction,
        match_regex: raw.match_regex,
        replacement: raw.replacement,
        ordering: raw.ordering ?? 100,
        stop_on_match: raw.stop_on_match ?? 0,
      };
      const problem = regexProblem(entry.match_regex);
      if (problem) ctx.errors.push({ path: `${at}/match_regex`, message: problem });
      if (!REPLACEMENT.test(entry.replacement)) {
        ctx.errors.push({ path: `${at}/replacement`, message: "Use digits, *, #, + and group references ($1…$9, $<name>, $&) only." });
      } else if (!problem) {
        const groups = captureGroupCount(entry.match_regex);
        for (const ref of entry.replacement.matchAll(/\$([1-9])/g)) {
          if (Number(ref[1]) > groups) {
            ctx.errors.push({ path: `${at}/replacement`, message: `$${ref[1]} refers to a group the pattern does not have (it has ${groups}).` });
            break;
          }
        }
        // A name the pattern does not have would be left in the number as text ($<cc> dialled as is).
        const names = Object.keys(new RegExp(`${entry.match_regex}|`).exec("")?.groups ?? {});
        for (const ref of entry.replacement.matchAll(/\$<([A-Za-z_][A-Za-z0-9_]*)>/g)) {
          if (!names.includes(ref[1]!)) {
            ctx.errors.push({ path: `${at}/replacement`, message: `$<${ref[1]}> refers to a named group the pattern does not have${names.length ? ` (it has ${names.join(", ")})` : ""}.` });
            break;
          }
        }
      }
      if (kind === "route" && !entry.direction.startsWith("outbound_")) {
        ctx.errors.push({ path: `${at}/direction`, message: "An outbound route only carries outbound calls: use outbound_dst or outbound_cid." });
      }
      out.push({ entry, at });
    });
    return rejectDuplicateKeys(this, out, ctx.errors, "name");
  },

  async load(db, accountId, book) {
    return (await listNumberTransforms(db, accountId)).map((row) => ({
      id: row.id,
      entry: {
        name: row.name,
        scope_kind: row.scope_kind,
        scope: scopeKeyFor(row.scope_kind, row.scope_id, book),
        direction: row.direction,
        match_regex: row.match_regex,
        replacement: row.replacement,
        ordering: row.ordering,
        stop_on_match: row.stop_on_match,
      },
    }));
  },

  async create(tx, w, entry) {
    const id = newId("ntr");
    await insertNumberTransform(tx, { ...transformColumns(entry, w), account_id: w.accountId, id, created_at: w.now, updated_at: w.now });
    return id;
  },

  async update(tx, w, id, entry) {
    await updateNumberTransform(tx, w.accountId, id, { ...transformColumns(entry, w), updated_at: w.now });
  },

  async remove(tx, w, id) {
    await deleteNumberTransform(tx, w.accountId, id);
  },
};

function transformColumns(e: NumberTransformCanonical, w: WriteContext) {
  return {
    name: e.name,
    scope_kind: e.scope_kind,
    scope_id: scopeIdFor(e.scope_kind as ScopeKind, e.scope, w),
    direction: e.direction,
    match_regex: e.match_regex,
    replacement: e.replacement,
    ordering: e.ordering,
    stop_on_match: e.stop_on_match,
  };
}
