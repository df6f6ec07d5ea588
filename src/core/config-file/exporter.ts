/**
 * The exporter: an account's config-managed resources as a config file, in a stable order, such
 * that applying it back plans nothing. Secrets are never written: a stored one appears as
 * `<unchanged>`, which apply reads as "keep it".
 */
import type { DbOrTx } from "../db/db.ts";
import { notFound } from "../errors/app-error.ts";
import { CONFIG_FILE_VERSION, type ConfigFileModel } from "./config-file.model.ts";
import { renderConfig } from "./config-file.format.ts";
import { accountExists } from "./config.store.ts";
import { loadNameBook, SECTIONS } from "./planner.ts";
import { toFileEntry } from "./section.ts";

/**
 * The account's config-managed state as a file object (empty sections left out).
 * @example Bun.YAML.stringify(await exportConfig(db, "acc_…"))
 */
export async function exportConfig(db: DbOrTx, accountId: string): Promise<ConfigFileModel.File> {
  if (!(await accountExists(db, accountId))) throw notFound("account");
  const book = await loadNameBook(db, accountId);
  const file: Record<string, unknown> = { version: CONFIG_FILE_VERSION };
  for (const section of SECTIONS) {
    const stored = await section.load(db, accountId, book);
    if (stored.length) file[section.name] = stored.map((c) => c.entry).sort((a, b) => section.compare(a, b)).map((e) => (section.toFile ? section.toFile(e) : toFileEntry(e)));
  }
  return file as ConfigFileModel.File;
}

/** The export as text in `format`. */
export async function exportConfigText(db: DbOrTx, accountId: string, format: ConfigFileModel.Format): Promise<string> {
  return renderConfig(await exportConfig(db, accountId), format, accountId);
}
