/**
 * The applier: makes an account's config-managed resources match a config file, in one transaction.
 * It plans inside that transaction (under a per-account lock), so what it writes is exactly the plan it
 * returns; a file with any problem throws before anything is written, and an empty plan writes nothing.
 */
import type { Db, DbOrTx } from "../db/db.ts";
import { nowSeconds } from "../db/columns.ts";
import { conflict, isUniqueViolation } from "../errors/app-error.ts";
import type { SecretStore } from "../secrets/secrets.service.ts";
import type { ConfigFileModel } from "./config-file.model.ts";
import { lockAccountConfig } from "./config.store.ts";
import { prepareConfig, type Prepared } from "./planner.ts";
import type { WriteContext } from "./section.ts";

/** Options of an apply. */
export interface ApplyOptions {
  /** Where `${VAR}` secrets are read; default process.env. */
  env?: Record<string, string | undefined>;
  /**
   * The plan the caller showed and had confirmed. When the account changed since (the fresh plan
   * differs), nothing is written and a 409 asks to plan again.
   */
  expectPlan?: ConfigFileModel.Plan;
}

/**
 * Applies `file` (parsed, not yet validated) to the account and returns the plan it carried out.
 * Idempotent: applying the same file again plans nothing and writes nothing.
 * @example await applyConfig(platform.db, platform.secrets, "acc_…", Bun.YAML.parse(text))
 */
export async function applyConfig(db: Db, secrets: SecretStore, accountId: string, file: unknown, options: ApplyOptions = {}): Promise<ConfigFileModel.ApplyResult> {
  try {
    return await db.transaction(async (tx) => {
      await lockAccountConfig(tx, accountId);
      const prepared = await prepareConfig(tx, accountId, file, { secrets, env: options.env });
      if (options.expectPlan && JSON.stringify(options.expectPlan) !== JSON.stringify(prepared.plan)) {
        throw conflict("The account's configuration changed since this plan was made; plan again.");
      }
      if (prepared.plan.changes === 0) return { applied: 0 as const, plan: prepared.plan };
      await writePlan(tx, secrets, accountId, prepared);
      return { applied: 1 as const, plan: prepared.plan };
    });
  } catch (error) {
    // The lock and the checks make this a race with a /v1 write (a device realm, a DID) between plan and write.
    if (isUniqueViolation(error)) throw conflict("A value in the file was taken while it was being applied; plan again.");
    throw error;
  }
}

/** Deletes first (last section first: what refers goes before what is referred to), then updates and creates in order. */
async function writePlan(tx: DbOrTx, secrets: SecretStore, accountId: string, prepared: Prepared): Promise<void> {
  const storedIds = (name: string) => new Map((prepared.work.find((w) => w.section.name === name)?.stored ?? []).map((c) => [String(c.entry.name), c.id]));
  const w: WriteContext = {
    accountId,
    secrets,
    now: nowSeconds(),
    userIdByName: prepared.book.userIdByName,
    numberIdByE164: prepared.book.numberIdByE164,
    trunkIdByName: storedIds("trunks"),
    routeIdByName: storedIds("outbound_routes"),
  };
  for (const item of [...prepared.work].reverse()) {
    for (const doomed of item.deletes) await item.section.remove(tx, w, doomed.id, doomed.entry);
  }
  for (const item of prepared.work) {
    for (const u of item.updates) await item.section.update(tx, w, u.id, u.desired.entry, u.current, u.changes);
    for (const c of item.creates) await item.section.create(tx, w, c.entry);
  }
}
