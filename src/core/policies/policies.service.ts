/**
 * The six policies as sections of the config file. They share a shape (name, scope_kind, scope, a
 * few fields of their own, sometimes a member set), so one factory builds each section from what
 * differs: how the file's fields are checked, how a row reads back, and which set (if any) it owns.
 */
import { newId, type IdPrefix } from "../ids/ids.ts";
import type { DbOrTx } from "../db/db.ts";
import { normalizeE164 } from "../validation/fields.ts";
import { isCountryCode } from "../validation/formats.ts";
import { NO_COUNTRY } from "../routing/country-codes.ts";
import { canonicalCidr } from "../trunks/cidr-text.ts";
import type { PolicyModel } from "./policies.model.ts";
import {
  changeGeoPolicyCountries,
  changePhoneListEntries,
  deletePolicy,
  insertPolicy,
  listGeoPolicyCountries,
  listPhoneListEntries,
  listPolicies,
  updatePolicy,
  type NewPolicyRow,
  type PolicyRow,
  type PolicyTableName,
} from "./policies.store.ts";
import { byText, detectableCountryAt, orNull, rejectDuplicateKeys, type Desired, type ResolveContext, type Section, type SectionName } from "../config-file/section.ts";
import { resolveScope, scopeIdFor, scopeKeyFor, type ScopeKind } from "../config-file/scope.ts";

/** Fields every policy has in canonical form. */
type PolicyBase = { name: string; scope_kind: string; scope: string | null };

/** The raw file fields every policy has. */
type RawBase = { name: string; scope_kind?: ScopeKind; scope?: string | null };

/** A member set a policy owns (a list's numbers, a geo policy's countries). */
interface MemberSet {
  field: string;
  list(db: DbOrTx, accountId: string): Promise<Map<string, string[]>>;
  change(tx: DbOrTx, accountId: string, ownerId: string, added: string[], removed: string[] | null, now: number): Promise<void>;
}

interface PolicySpec<E extends PolicyBase, N extends PolicyTableName, Raw extends RawBase> {
  section: SectionName;
  label: string;
  table: N;
  idPrefix: IdPrefix;
  /** The policy's own fields from the file, canonical; problems go to ctx.errors under `at`. */
  fields(raw: Raw, at: string, ctx: ResolveContext): Omit<E, keyof PolicyBase>;
  /** The policy's own fields from a stored row (member set excluded). */
  fromRow(row: PolicyRow<N>): Omit<E, keyof PolicyBase>;
  /** The policy's own columns (member set excluded). */
  columns(e: E): Partial<NewPolicyRow<N>>;
  members?: MemberSet;
  /** Export order within the section; name breaks ties. */
  order?(a: E, b: E): number;
}

function policySection<E extends PolicyBase, N extends PolicyTableName, Raw extends RawBase>(spec: PolicySpec<E, N, Raw>): Section<E> {
  const setField = spec.members?.field;
  const section: Section<E> = {
    name: spec.section,
    label: spec.label,
    keyFields: ["name"],
    keyOf: (e) => e.name,
    compare: (a, b) => (spec.order?.(a, b) ?? 0) || byText(a.name, b.name),

    async canonicalize(entries, ctx) {
      const out: Array<Desired<E>> = [];
      (entries as Raw[]).forEach((raw, i) => {
        const at = `/${spec.section}/${i}`;
        const kind = raw.scope_kind ?? "account";
        const entry = { name: raw.name, scope_kind: kind, scope: resolveScope(kind, raw.scope, at, ctx), ...spec.fields(raw, at, ctx) } as E;
        out.push({ entry, at });
      });
      return rejectDuplicateKeys(section, out, ctx.errors, "name");
    },

    async load(db, accountId, book) {
      const [rows, members] = await Promise.all([listPolicies(db, spec.table, accountId), spec.members?.list(db, accountId)]);
      return rows.map((row) => {
        const base = row as unknown as { id: string; name: string; scope_kind: string; scope_id: string };
        const entry = { name: base.name, scope_kind: base.scope_kind, scope: scopeKeyFor(base.scope_kind, base.scope_id, book), ...spec.fromRow(row) } as E;
        if (setField) (entry as Record<string, unknown>)[setField] = [...(members?.get(base.id) ?? [])].sort(byText);
        return { id: base.id, entry };
      });
    },

    async create(tx, w, entry) {
      const id = newId(spec.idPrefix);
      const row = {
        ...spec.columns(entry),
        account_id: w.accountId,
        id,
        name: entry.name,
        scope_kind: entry.scope_kind,
        scope_id: scopeIdFor(entry.scope_kind as ScopeKind, entry.scope, w),
        created_at: w.now,
        updated_at: w.now,
      } as NewPolicyRow<N>;
      await insertPolicy(tx, spec.table, row);
      if (spec.members && setField) await spec.members.change(tx, w.accountId, id, (entry as Record<string, unknown>)[setField] as string[], [], w.now);
      return id;
    },

    async update(tx, w, id, entry, _current, changes) {
      const patch = {
        ...spec.columns(entry),
        name: entry.name,
        scope_kind: entry.scope_kind,
        scope_id: scopeIdFor(entry.scope_kind as ScopeKind, entry.scope, w),
        updated_at: w.now,
      } as Partial<NewPolicyRow<N>>;
      await updatePolicy(tx, spec.table, w.accountId, id, patch);
      const set = changes.find((c) => c.field === setField);
      if (spec.members && set && "added" in set) await spec.members.change(tx, w.accountId, id, set.added, set.removed, w.now);
    },

    async remove(tx, w, id) {
      if (spec.members) await spec.members.change(tx, w.accountId, id, [], null, w.now);
      await deletePolicy(tx, spec.table, w.accountId, id);
    },
  };
  return section;
}

/** Normalizes an E.164 field or reports it. */
function e164At(value: string, path: string, ctx: ResolveContext): string {
  const e164 = normalizeE164(value);
  if (!e164) ctx.errors.push({ path, message: "Not an E.164 number." });
  return e164 ?? value;
}

export type CallLimitCanonical = PolicyBase & { direction: string; period_sec: number | null; max_count: number; hard: number };

export const callLimitSection = policySection<CallLimitCanonical, "call_limit", PolicyModel.CallLimitEntry>({
  section: "call_limits",
  label: "call limit",
  table: "call_limit",
  idPrefix: "cl",
  fields: (raw) => ({ direction: raw.direction ?? "any", period_sec: orNull(raw.period_sec), max_count: raw.max_count, hard: raw.hard ?? 1 }),
  fromRow: (row) => ({ direction: row.direction, period_sec: row.period_sec, max_count: row.max_count, hard: row.hard }),
  columns: (e) => ({ direction: e.direction, period_sec: e.period_sec, max_count: e.max_count, hard: e.hard }),
});

export type CallerIdRuleCanonical = PolicyBase & { match_country: string | null; cid_number: string; cid_name: string | null; priority: number };

export const callerIdRuleSection = policySection<CallerIdRuleCanonical, "caller_id_rule", PolicyModel.CallerIdRuleEntry>({
  section: "caller_id_rules",
  label: "caller-ID rule",
  table: "caller_id_rule",
  idPrefix: "cir",
  fields: (raw, at, ctx) => ({
    match_country: detectableCountryAt(orNull(raw.match_country), `${at}/match_country`, ctx),
    cid_number: e164At(raw.cid_number, `${at}/cid_number`, ctx),
    cid_name: orNull(raw.cid_name),
    priority: raw.priority ?? 100,
  }),
  fromRow: (row) => ({ match_country: row.match_country, cid_number: row.cid_number, cid_name: row.cid_name, priority: row.priority }),
  columns: (e) => ({ match_country: e.match_country, cid_number: e.cid_number, cid_name: e.cid_name, priority: e.priority }),
  order: (a, b) => a.priority - b.priority,
});

export type AclRuleCanonical = PolicyBase & { rule_type: string; value: string };

export const aclRuleSection = policySection<AclRuleCanonical, "acl_rule", PolicyModel.AclRuleEntry>({
  section: "acl_rules",
  label: "ACL rule",
  table: "acl_rule",
  idPrefix: "acl",
  fields: (raw, at, ctx) => {
    let value = raw.value;
    if (raw.rule_type.startsWith("ip_")) {
      const result = canonicalCidr(raw.value);
      if ("error" in result) ctx.errors.push({ path: `${at}/value`, message: result.error });
      else value = result.cidr;
    } else if (!isCountryCode(raw.value)) {
      ctx.errors.push({ path: `${at}/value`, message: `${raw.rule_type} takes an ISO 3166-1 alpha-2 country code in upper case, e.g. US.` });
    }
    return { rule_type: raw.rule_type, value };
  },
  fromRow: (row) => ({ rule_type: row.rule_type, value: row.value }),
  columns: (e) => ({ rule_type: e.rule_type, value: e.value }),
});

export type RecordingRuleCanonical = PolicyBase & { direction: string; mode: string; stereo: number };

export const recordingRuleSection = policySection<RecordingRuleCanonical, "recording_rule", PolicyModel.RecordingRuleEntry>({
  section: "recording_rules",
  label: "recording rule",
  table: "recording_rule",
  idPrefix: "rrl",
  fields: (raw) => ({ direction: raw.direction ?? "any", mode: raw.mode, stereo: raw.stereo ?? 0 }),
  fromRow: (row) => ({ direction: row.direction, mode: row.mode, stereo: row.stereo }),
  columns: (e) => ({ direction: e.direction, mode: e.mode, stereo: e.stereo }),
});

export type PhoneListCanonical = PolicyBase & { kind: string; entries: string[] };

export const phoneListSection = policySection<PhoneListCanonical, "phone_list", PolicyModel.PhoneListEntry>({
  section: "phone_lists",
  label: "phone list",
  table: "phone_list",
  idPrefix: "pl",
  fields: (raw, at, ctx) => {
    const seen = new Map<string, number>();
    (raw.entries ?? []).forEach((value, j) => {
      const e164 = normalizeE164(value);
      if (!e164) ctx.errors.push({ path: `${at}/entries/${j}`, message: "Not an E.164 number." });
      else if (seen.has(e164)) ctx.errors.push({ path: `${at}/entries/${j}`, message: `${e164} is listed twice (also at entries/${seen.get(e164)}).` });
      else seen.set(e164, j);
    });
    return { kind: raw.kind, entries: [...seen.keys()].sort(byText) };
  },
  fromRow: (row) => ({ kind: row.kind, entries: [] }),
  columns: (e) => ({ kind: e.kind }),
  members: { field: "entries", list: listPhoneListEntries, change: changePhoneListEntries },
});

export type GeoPolicyCanonical = PolicyBase & { mode: string; countries: string[] };

export const geoPolicySection = policySection<GeoPolicyCanonical, "geo_policy", PolicyModel.GeoPolicyEntry>({
  section: "geo_policies",
  label: "geo policy",
  table: "geo_policy",
  idPrefix: "geo",
  fields: (raw, at, ctx) => {
    const seen = new Set<string>();
    raw.countries.forEach((country, j) => {
      if (country !== NO_COUNTRY && !isCountryCode(country)) {
        ctx.errors.push({ path: `${at}/countries/${j}`, message: `Expected an ISO 3166-1 alpha-2 country code in upper case, e.g. US, or ${NO_COUNTRY} for numbers of no country.` });
      } else detectableCountryAt(country, `${at}/countries/${j}`, ctx);
      if (seen.has(country)) ctx.errors.push({ path: `${at}/countries/${j}`, message: `${country} is listed twice.` });
      seen.add(country);
    });
    if (raw.mode === "allowlist" && seen.size === 0) {
      ctx.errors.push({ path: `${at}/countries`, message: "An empty allowlist would block every outbound call; list at least one country." });
    }
    return { mode: raw.mode, countries: [...seen].sort(byText) };
  },
  fromRow: (row) => ({ mode: row.mode, countries: [] }),
  columns: (e) => ({ mode: e.mode }),
  members: { field: "countries", list: listGeoPolicyCountries, change: changeGeoPolicyCountries },
});

/** Every policy section, in the order the file lists them. */
export const POLICY_SECTIONS = [callLimitSection, callerIdRuleSection, aclRuleSection, recordingRuleSection, phoneListSection, geoPolicySection] as const;
