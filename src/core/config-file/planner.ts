/**
 * The planner: what applying a config file to an account would change. It validates the whole file
 * (shape, cross-references, references to the account's users and DIDs, secrets), reads the stored
 * state in the same canonical form, and diffs the two section by section. The applier writes exactly
 * what the plan says; nothing here writes.
 */
import type { DbOrTx } from "../db/db.ts";
import { conflict, notFound, type ErrorDetail } from "../errors/app-error.ts";
import type { SecretStore } from "../secrets/secrets.service.ts";
import { trunkSection, outboundRouteSection, numberTransformSection } from "../trunks/trunks.service.ts";
import { forwardSection } from "../forwards/forwards.service.ts";
import { POLICY_SECTIONS } from "../policies/policies.service.ts";
import { accountExists, listNumberE164s, listUsernames } from "./config.store.ts";
import { listOutboundRoutes, listTrunks } from "../trunks/trunks.store.ts";
import { configInvalid, validateConfigShape } from "./config-file.format.ts";
import type { ConfigFileModel } from "./config-file.model.ts";
import { sipDomainSection } from "./sip-domain-section.ts";
import { ratePlanSection } from "../rates/rate-plan-section.ts";
import {
  diffEntries,
  isSecret,
  SECTION_NAMES,
  toFileEntry,
  UNCHANGED_SECRET,
  type CanonicalEntry,
  type Current,
  type Desired,
  type FieldChange,
  type NameBook,
  type ResolveContext,
  type Section,
  type SectionName,
} from "./section.ts";

/**
 * Every section, in application order (what others refer to comes first). Each is typed by its own
 * canonical entry; the planner handles them alike, as records, hence the widening cast.
 */
export const SECTIONS: ReadonlyArray<Section<CanonicalEntry>> = [
  sipDomainSection,
  trunkSection,
  outboundRouteSection,
  numberTransformSection,
  forwardSection,
  ...POLICY_SECTIONS,
  ratePlanSection,
] as unknown as ReadonlyArray<Section<CanonicalEntry>>;

/** Options of a plan or an apply. */
export interface PlanOptions {
  /**
   * Decrypts stored secrets so a password given again in the file counts as unchanged. Without it,
   * every plaintext password in the file shows as changed.
   */
  secrets?: SecretStore;
  /** Where `${VAR}` secrets are read; default process.env. */
  env?: Record<string, string | undefined>;
}

/** One section's work: the plan's entries with what the writers need. */
export interface SectionWork {
  section: Section<CanonicalEntry>;
  creates: Array<Desired<CanonicalEntry>>;
  updates: Array<{ id: string; desired: Desired<CanonicalEntry>; current: CanonicalEntry; changes: FieldChange[] }>;
  deletes: Array<Current<CanonicalEntry>>;
  /** Every stored entry (to seed the writers' name → id maps). */
  stored: Array<Current<CanonicalEntry>>;
}

/** A validated plan and the work behind it. */
export interface Prepared {
  plan: ConfigFileModel.Plan;
  work: SectionWork[];
  book: NameBook;
}

/** Usernames, DIDs, trunk and route names of the account, both ways. */
export async function loadNameBook(db: DbOrTx, accountId: string): Promise<NameBook> {
  const [users, dids, trunks, routes] = await Promise.all([
    listUsernames(db, accountId),
    listNumberE164s(db, accountId),
    listTrunks(db, accountId),
    listOutboundRoutes(db, accountId),
  ]);
  return {
    userIdByName: new Map(users.map((u) => [u.username, u.id])),
    userNameById: new Map(users.map((u) => [u.id, u.username])),
    numberIdByE164: new Map(dids.map((n) => [n.e164, n.id])),
    numberE164ById: new Map(dids.map((n) => [n.id, n.e164])),
    trunkNameById: new Map(trunks.map((t) => [t.id, t.name])),
    routeNameById: new Map(routes.map((r) => [r.id, r.name])),
  };
}

/**
 * Validates `file` for `accountId` and works out every change. Throws 404 for an unknown account,
 * 400 (`details` with JSON pointers into the file) for any problem in the file, 409 when the file
 * claims a value another account holds or deletes something still in use.
 */
export async function prepareConfig(db: DbOrTx, accountId: string, file: unknown, options: PlanOptions = {}): Promise<Prepared> {
  if (!(await accountExists(db, accountId))) throw notFound("account");
  const parsed = validateConfigShape(file) as Record<string, unknown>;
  const book = await loadNameBook(db, accountId);
  const ctx: ResolveContext = {
    db,
    accountId,
    book,
    env: options.env ?? process.env,
    errors: [],
    fileTrunks: new Map(),
    fileRoutes: new Set(),
  };
  const desiredBySection: Array<Array<Desired<CanonicalEntry>>> = [];
  for (const section of SECTIONS) desiredBySection.push(await section.canonicalize((parsed[section.name] as unknown[] | undefined) ?? [], ctx));
  if (ctx.errors.length) throw configInvalid(sortDetails(ctx.errors));

  const secrets = options.secrets;
  const sameSecret = secrets ? async (ref: string, value: string) => (await secrets.reveal(db, accountId, ref)) === value : null;
  const work: SectionWork[] = [];
  const errors: ErrorDetail[] = [];
  for (const [index, section] of SECTIONS.entries()) {
    const stored = await section.load(db, accountId, book);
    const byKey = new Map(stored.map((c) => [section.keyOf(c.entry), c]));
    const item: SectionWork = { section, creates: [], updates: [], deletes: [], stored };
    const wanted = new Set<string>();
    for (const desired of desiredBySection[index]!) {
      const key = section.keyOf(desired.entry);
      wanted.add(key);
      const current = byKey.get(key);
      checkUnchangedSecrets(section, desired, current?.entry ?? null, errors);
      if (!current) {
        item.creates.push(desired);
        continue;
      }
      const changes = await diffEntries(current.entry, desired.entry, section.keyFields, sameSecret);
      if (changes.length) item.updates.push({ id: current.id, desired, current: current.entry, changes });
    }
    item.deletes = stored.filter((c) => !wanted.has(section.keyOf(c.entry)));
    item.creates.sort((a, b) => section.compare(a.entry, b.entry));
    item.updates.sort((a, b) => section.compare(a.desired.entry, b.desired.entry));
    item.deletes.sort((a, b) => section.compare(a.entry, b.entry));
    work.push(item);
  }
  if (errors.length) throw configInvalid(sortDetails(errors));
  await checkConflicts(db, accountId, work);
  return { plan: toPlan(accountId, work), work, book };
}

/** `<unchanged>` keeps a stored secret: it means nothing for a new resource or one with no secret. */
function checkUnchangedSecrets(section: Section<CanonicalEntry>, desired: Desired<CanonicalEntry>, current: CanonicalEntry | null, errors: ErrorDetail[]): void {
  for (const [field, value] of Object.entries(desired.entry)) {
    if (!isSecret(value) || value.secret !== "unchanged") continue;
    const stored = current?.[field];
    if (stored && isSecret(stored) && stored.secret === "stored") continue;
    errors.push({
      path: `${desired.at}/${field}`,
      message: current
        ? `"${UNCHANGED_SECRET}" keeps the stored ${field}, but this ${section.label} has none stored: give the value.`
        : `"${UNCHANGED_SECRET}" keeps a stored ${field}, but this ${section.label} is new: give the value.`,
    });
  }
}

/** 409 when a create claims another account's value or a delete removes something still in use. */
async function checkConflicts(db: DbOrTx, accountId: string, work: SectionWork[]): Promise<void> {
  const taken: ErrorDetail[] = [];
  const inUse: Array<{ kind: string; id: string; message: string }> = [];
  for (const item of work) {
    // Updates claim values too (a trunk's inbound_username changed to another account's).
    const claims = [...item.creates, ...item.updates.map((u) => u.desired)];
    if (item.section.checkCreates && claims.length) taken.push(...(await item.section.checkCreates(db, accountId, claims)));
    if (item.section.checkDeletes && item.deletes.length) inUse.push(...(await item.section.checkDeletes(db, accountId, item.deletes)));
  }
  if (taken.length) {
    throw conflict(taken.map((t) => t.message).join(" "), { field: taken[0]!.path, details: taken });
  }
  if (inUse.length) {
    const message = `The file deletes resources still in use: ${inUse.map((u) => u.message).join("; ")}. Change those first.`;
    throw conflict(message, { used_by: inUse.map((u) => ({ kind: u.kind, id: u.id })) });
  }
}

function sortDetails(details: ErrorDetail[]): ErrorDetail[] {
  return [...details].sort((a, b) => a.path.localeCompare(b.path, "en", { numeric: true }));
}

function toPlan(accountId: string, work: SectionWork[]): ConfigFileModel.Plan {
  const resources = {} as Record<SectionName, ConfigFileModel.SectionPlan>;
  let changes = 0;
  for (const name of SECTION_NAMES) resources[name] = { create: [], update: [], delete: [] };
  for (const { section, creates, updates, deletes } of work) {
    resources[section.name] = {
      create: creates.map((d) => ({ key: section.keyOf(d.entry), values: section.toFile ? section.toFile(d.entry) : toFileEntry(d.entry) })),
      update: updates.map((u) => ({ key: section.keyOf(u.desired.entry), id: u.id, changes: u.changes })),
      delete: deletes.map((c) => ({ key: section.keyOf(c.entry), id: c.id })),
    };
    changes += creates.length + updates.length + deletes.length;
  }
  return { account_id: accountId, changes, resources };
}

/**
 * What applying `file` to the account would change, without changing anything.
 * @example const plan = await planConfig(db, "acc_…", Bun.YAML.parse(text), { secrets: platform.secrets })
 */
export async function planConfig(db: DbOrTx, accountId: string, file: unknown, options: PlanOptions = {}): Promise<ConfigFileModel.Plan> {
  return (await prepareConfig(db, accountId, file, options)).plan;
}

/** A plan as text for people: one line per resource, field changes indented below updates. */
export function formatPlan(plan: ConfigFileModel.Plan): string {
  const lines: string[] = [];
  let creates = 0;
  let updates = 0;
  let deletes = 0;
  const show = (v: unknown) => (v === null ? "(unset)" : JSON.stringify(v));
  const few = (values: string[]) => (values.length > 10 ? `${values.slice(0, 10).join(", ")} …and ${values.length - 10} more` : values.join(", "));
  for (const name of SECTION_NAMES) {
    const s = plan.resources[name];
    if (!s.create.length && !s.update.length && !s.delete.length) continue;
    lines.push(`${name}:`);
    for (const c of s.create) lines.push(`  + ${c.key}`);
    for (const u of s.update) {
      lines.push(`  ~ ${u.key}`);
      for (const change of u.changes) {
        if (change.secret) lines.push(`      ${change.field}: (secret ${change.secret})`);
        else if (change.added || change.removed) {
          const parts = [];
          if (change.added?.length) parts.push(`+ ${few(change.added)}`);
          if (change.removed?.length) parts.push(`- ${few(change.removed)}`);
          lines.push(`      ${change.field}: ${parts.join("; ")}`);
        } else lines.push(`      ${change.field}: ${show(change.old)} → ${show(change.new)}`);
      }
    }
    for (const d of s.delete) lines.push(`  - ${d.key}`);
    creates += s.create.length;
    updates += s.update.length;
    deletes += s.delete.length;
  }
  if (plan.changes === 0) return `No changes: account ${plan.account_id} already matches the file.\n`;
  lines.push("", `Plan for ${plan.account_id}: ${creates} to create, ${updates} to update, ${deletes} to delete.`);
  return `${lines.join("\n")}\n`;
}
