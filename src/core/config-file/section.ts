/**
 * What every section of the config file (trunks, forwards, each policy…) has in common, so one
 * planner diffs them all. A section turns file entries into *canonical entries*: plain records with
 * every field present (null when unset), numbers normalized, sets sorted, references written with
 * human keys (a trunk's name, a user's username, a DID's E.164). The stored state is read back into the
 * same shape, so "what changes" is a field-by-field comparison, and the export is the stored state's
 * canonical entries written out.
 */
import type { DbOrTx } from "../db/db.ts";
import type { ErrorDetail } from "../errors/app-error.ts";
import type { SecretStore } from "../secrets/secrets.service.ts";
import { undetectableCountry } from "../routing/country-codes.ts";

/** A secret field (a trunk password) as the file asks for it, or as it is stored. */
export type SecretSpec =
  /** Not set: the stored secret, if any, is removed. */
  | { secret: "none" }
  /** What the database holds: a ref into the secret store. Never the plaintext. */
  | { secret: "stored"; ref: string }
  /** The file says `<unchanged>`: keep whatever is stored. */
  | { secret: "unchanged" }
  /** A plaintext from the file or from an environment variable the file named. */
  | { secret: "plain"; value: string };

/** The placeholder the export writes for a stored secret, and that apply reads as "keep it". */
export const UNCHANGED_SECRET = "<unchanged>";

/** What a create shows in place of a secret in a plan. */
export const MASKED_SECRET = "<secret>";

export type Scalar = string | number | null;
export type FieldValue = Scalar | string[] | SecretSpec;
/** A canonical entry: every field of the section present, in the order the export writes them. */
export type CanonicalEntry = Record<string, FieldValue>;

/** One field that differs between the stored entry and the file. */
export type FieldChange =
  | { field: string; old: Scalar; new: Scalar }
  /** A set-valued field (an ACL, a list's entries): what joins and what leaves. */
  | { field: string; added: string[]; removed: string[] }
  /** A secret: only whether it changes, never a value. */
  | { field: string; secret: "set" | "changed" | "removed" };

/** Names of the file's sections, in the order they are applied. */
export const SECTION_NAMES = [
  "sip_domains",
  "trunks",
  "outbound_routes",
  "number_transforms",
  "forwards",
  "call_limits",
  "caller_id_rules",
  "acl_rules",
  "recording_rules",
  "phone_lists",
  "geo_policies",
  "rate_plans",
] as const;
export type SectionName = (typeof SECTION_NAMES)[number];

/** Ids ↔ human keys of what the file refers to, read once per plan. */
export interface NameBook {
  /** username → us_… */
  userIdByName: Map<string, string>;
  userNameById: Map<string, string>;
  /** E.164 → num_… (the account's DIDs) */
  numberIdByE164: Map<string, string>;
  numberE164ById: Map<string, string>;
  /** Stored trunks and outbound routes: id → name. */
  trunkNameById: Map<string, string>;
  routeNameById: Map<string, string>;
}

/** What a section needs to check and canonicalize the file's entries. */
export interface ResolveContext {
  /** Read-only handle (the apply transaction, or the database for a plan). */
  db: DbOrTx;
  accountId: string;
  book: NameBook;
  /** Where `${VAR}` secret references are looked up. */
  env: Record<string, string | undefined>;
  /** Every problem found, with its JSON pointer into the file. */
  errors: ErrorDetail[];
  /** Trunks of the file, by name, with their direction (routes may only use outbound-capable ones). */
  fileTrunks: Map<string, { direction: string }>;
  /** Outbound route names of the file. */
  fileRoutes: Set<string>;
}

/** Ids the writers need, kept current as rows are created during an apply. */
export interface WriteContext {
  accountId: string;
  secrets: SecretStore;
  now: number;
  userIdByName: Map<string, string>;
  numberIdByE164: Map<string, string>;
  trunkIdByName: Map<string, string>;
  routeIdByName: Map<string, string>;
}

/** A stored resource in canonical form, with its id. */
export interface Current<E extends CanonicalEntry> {
  id: string;
  entry: E;
}

/** One canonicalized file entry and where it was in the file. */
export interface Desired<E extends CanonicalEntry> {
  entry: E;
  /** JSON pointer of the entry, e.g. `/trunks/2`. */
  at: string;
}

/** One section of the file: how to read, compare and write its resources. */
export interface Section<E extends CanonicalEntry> {
  name: SectionName;
  /** Singular noun for messages: "trunk", "call limit". */
  label: string;
  /** Fields that make up the key: a change there is a different resource, not an update. */
  keyFields: readonly string[];
  /** The entry's key, unique within the section (e.g. the trunk name, "user alice busy"). */
  keyOf(entry: E): string;
  /** Export order. */
  compare(a: E, b: E): number;
  /** Checks and canonicalizes the file's entries (already schema-valid); problems go to ctx.errors. */
  canonicalize(entries: unknown[], ctx: ResolveContext): Promise<Array<Desired<E>>>;
  /** The stored resources of the account in canonical form. */
  load(db: DbOrTx, accountId: string, book: NameBook): Promise<Array<Current<E>>>;
  /** Values the file claims (its new and changed entries) that another account holds (globally unique ones): 409 details. */
  checkCreates?(db: DbOrTx, accountId: string, creates: Array<Desired<E>>): Promise<ErrorDetail[]>;
  /** Problems deleting these would cause (in use elsewhere): 409 details. */
  checkDeletes?(db: DbOrTx, accountId: string, doomed: Array<Current<E>>): Promise<Array<{ kind: string; id: string; message: string }>>;
  create(tx: DbOrTx, w: WriteContext, entry: E): Promise<string>;
  update(tx: DbOrTx, w: WriteContext, id: string, entry: E, current: E, changes: FieldChange[]): Promise<void>;
  remove(tx: DbOrTx, w: WriteContext, id: string, current: E): Promise<void>;
  /** The file form of an entry when it is not the generic one (`toFileEntry`), e.g. nested objects. */
  toFile?(entry: E): Record<string, unknown>;
}

/** Compares two strings the same way on every machine (code points, not locale). */
export function byText(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** Sorted, de-duplicated copy. */
export function sortedSet(values: Iterable<string>): string[] {
  return [...new Set(values)].sort(byText);
}

/**
 * Pushes an error for every entry whose key repeats an earlier one: the key names one resource,
 * so two entries with it would silently overwrite each other.
 */
export function rejectDuplicateKeys<E extends CanonicalEntry>(
  section: Pick<Section<E>, "keyOf" | "label">,
  entries: Array<Desired<E>>,
  errors: ErrorDetail[],
  keyField: string,
): Array<Desired<E>> {
  const seen = new Map<string, string>();
  const out: Array<Desired<E>> = [];
  for (const desired of entries) {
    const key = section.keyOf(desired.entry);
    const first = seen.get(key);
    if (first !== undefined) {
      errors.push({ path: `${desired.at}/${keyField}`, message: `Duplicate ${section.label} '${key}' (also at ${first}).` });
      continue;
    }
    seen.set(key, desired.at);
    out.push(desired);
  }
  return out;
}

/**
 * Reads a secret field of the file: absent/null → none; `<unchanged>` → keep; `${VAR}` → the
 * environment variable (an error when unset or empty); anything else → the plaintext itself.
 */
export function readSecret(value: unknown, path: string, ctx: Pick<ResolveContext, "env" | "errors">): SecretSpec {
  if (value === undefined || value === null) return { secret: "none" };
  const text = String(value);
  if (text === UNCHANGED_SECRET) return { secret: "unchanged" };
  const ref = /^\$\{([A-Za-z_][A-Za-z0-9_]*)\}$/.exec(text);
  if (ref) {
    const name = ref[1]!;
    const resolved = ctx.env[name];
    if (resolved === undefined || resolved === "") {
      ctx.errors.push({ path, message: `Environment variable ${name} is not set (or empty) where the config is applied.` });
      // Stands in for the missing value so that rules needing a password do not report it twice.
      return { secret: "plain", value: "" };
    }
    return { secret: "plain", value: resolved };
  }
  return { secret: "plain", value: text };
}

/**
 * `country` as it is; a country no number ever resolves to (a policy or route naming it would never
 * match: MF and BL share +590 with GP, PN has no numbers) is an error at `path` saying why. For geo
 * policies, caller-ID rules and outbound routes.
 */
export function detectableCountryAt<C extends string | null>(country: C, path: string, ctx: Pick<ResolveContext, "errors">): C {
  const why = country === null ? null : undetectableCountry(country);
  if (why) ctx.errors.push({ path, message: `${country} never matches a number: ${why}.` });
  return country;
}

/** True for a SecretSpec value inside a canonical entry. */
export function isSecret(value: FieldValue): value is SecretSpec {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/**
 * Field-by-field difference between a stored entry and the file's. `sameSecret` says whether a stored
 * secret equals a plaintext (it decrypts); without a secret store every given plaintext counts as a change.
 */
export async function diffEntries(
  current: CanonicalEntry,
  desired: CanonicalEntry,
  skip: readonly string[],
  sameSecret: ((ref: string, value: string) => Promise<boolean>) | null,
): Promise<FieldChange[]> {
  const changes: FieldChange[] = [];
  for (const field of Object.keys(desired)) {
    if (skip.includes(field)) continue;
    const want = desired[field]!;
    const have = current[field] ?? null;
    if (isSecret(want)) {
      const stored = isSecret(have) && have.secret === "stored" ? have.ref : null;
      if (want.secret === "unchanged") continue;
      if (want.secret === "none") {
        if (stored) changes.push({ field, secret: "removed" });
        continue;
      }
      if (want.secret === "plain") {
        if (!stored) changes.push({ field, secret: "set" });
        else if (!sameSecret || !(await sameSecret(stored, want.value))) changes.push({ field, secret: "changed" });
      }
      continue;
    }
    if (Array.isArray(want)) {
      const before = new Set(Array.isArray(have) ? have : []);
      const after = new Set(want);
      const added = want.filter((v) => !before.has(v));
      const removed = [...before].filter((v) => !after.has(v)).sort(byText);
      if (added.length || removed.length) changes.push({ field, added, removed });
      continue;
    }
    const old = isSecret(have) || Array.isArray(have) ? null : have;
    if (old !== want) changes.push({ field, old, new: want });
  }
  return changes;
}

/**
 * The file form of a canonical entry: unset (null) fields and empty sets left out, a stored secret as
 * `<unchanged>`, a plaintext secret masked (only plans show entries that still carry one).
 */
export function toFileEntry(entry: CanonicalEntry): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [field, value] of Object.entries(entry)) {
    if (value === null) continue;
    if (Array.isArray(value)) {
      if (value.length) out[field] = [...value];
      continue;
    }
    if (isSecret(value)) {
      if (value.secret === "stored" || value.secret === "unchanged") out[field] = UNCHANGED_SECRET;
      else if (value.secret === "plain") out[field] = MASKED_SECRET;
      continue;
    }
    out[field] = value;
  }
  return out;
}

/** A file field that may be absent or null: the value, or null. */
export function orNull<T>(value: T | null | undefined): T | null {
  return value === undefined ? null : value;
}
