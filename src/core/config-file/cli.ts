/**
 * `parley config …`: plan, apply and export an account's config file from a shell.
 *
 *   parley config plan FILE --account-id ID [--format yaml|json] [--json]
 *   parley config apply FILE --account-id ID [--format yaml|json] [--yes]
 *   parley config export --account-id ID [--format yaml|json] [--output FILE]
 *   parley config schema
 *
 * FILE `-` reads standard input. Exit codes: 0 done (or nothing to do), 1 refused (bad file,
 * conflict, not confirmed), 2 usage.
 */
import { parseArgs } from "node:util";
import type { Platform } from "../platform.ts";
import { AppError } from "../errors/app-error.ts";
import { ConfigFileModel } from "./config-file.model.ts";
import { detectFormat, parseConfigText } from "./config-file.format.ts";
import { formatPlan, planConfig } from "./planner.ts";
import { applyConfig } from "./applier.ts";
import { exportConfigText } from "./exporter.ts";

export const CONFIG_USAGE = `Usage:
  parley config plan FILE --account-id ID [--format yaml|json] [--json]
  parley config apply FILE --account-id ID [--format yaml|json] [--yes]
  parley config export --account-id ID [--format yaml|json] [--output FILE]
  parley config schema
FILE may be - for standard input. The file format is described in docs/config-file.md.`;

/** What the command touches outside the platform; tests replace it. */
export interface ConfigCliIo {
  out(text: string): void;
  err(text: string): void;
  /** The file's text (`-`: standard input). */
  readFile(path: string): Promise<string>;
  writeFile(path: string, text: string): Promise<void>;
  /** Asks a yes/no question; false when no one answers yes. */
  confirm(question: string): Promise<boolean>;
  env: Record<string, string | undefined>;
}

const processIo: ConfigCliIo = {
  out: (text) => void process.stdout.write(text),
  err: (text) => void process.stderr.write(text),
  readFile: (path) => (path === "-" ? Bun.stdin.text() : Bun.file(path).text()),
  writeFile: async (path, text) => void (await Bun.write(path, text)),
  async confirm(question) {
    process.stdout.write(question);
    for await (const line of console) return /^(y|yes)$/i.test(line.trim());
    return false;
  },
  env: process.env,
};

class UsageError extends Error {}

/**
 * Runs `parley config <args>` and returns the exit code.
 * @example process.exit(await runConfigCommand(platform, ["plan", "acme.yaml", "--account-id", "acc_…"]))
 */
export async function runConfigCommand(platform: Platform, args: string[], io: ConfigCliIo = processIo): Promise<number> {
  try {
    return await run(platform, args, io);
  } catch (error) {
    if (error instanceof UsageError) {
      io.err(`${error.message}\n${CONFIG_USAGE}\n`);
      return 2;
    }
    if (error instanceof AppError) {
      io.err(describe(error));
      return 1;
    }
    throw error;
  }
}

async function run(platform: Platform, args: string[], io: ConfigCliIo): Promise<number> {
  const [verb, ...rest] = args;
  let parsed;
  try {
    parsed = parseArgs({
      args: rest,
      allowPositionals: true,
      strict: true,
      options: {
        "account-id": { type: "string" },
        format: { type: "string" },
        yes: { type: "boolean" },
        json: { type: "boolean" },
        output: { type: "string" },
      },
    });
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
  const { values, positionals } = parsed;
  const format = values.format;
  if (format !== undefined && format !== "yaml" && format !== "json") throw new UsageError("--format takes yaml or json.");

  if (verb === "schema") {
    io.out(`${JSON.stringify(ConfigFileModel.File, null, 2)}\n`);
    return 0;
  }
  const accountId = values["account-id"];
  if (!accountId) throw new UsageError("--account-id is required.");

  if (verb === "export") {
    if (positionals.length) throw new UsageError("export takes no FILE; use --output to write one.");
    const text = await exportConfigText(platform.db, accountId, format ?? (values.output ? detectFormat(values.output, "") : "yaml"));
    if (values.output) {
      await io.writeFile(values.output, text);
      io.err(`Wrote ${values.output}.\n`);
    } else io.out(text);
    return 0;
  }

  if (verb !== "plan" && verb !== "apply") throw new UsageError(verb ? `Unknown command: config ${verb}.` : "Which command?");
  if (positionals.length !== 1) throw new UsageError(`config ${verb} takes exactly one FILE.`);
  const path = positionals[0]!;
  let text: string;
  try {
    text = await io.readFile(path);
  } catch (error) {
    io.err(`Cannot read ${path}: ${(error as Error).message}\n`);
    return 1;
  }
  const file = parseConfigText(text, format ?? detectFormat(path === "-" ? undefined : path, text));
  const plan = await planConfig(platform.db, accountId, file, { secrets: platform.secrets, env: io.env });

  if (verb === "plan") {
    io.out(values.json ? `${JSON.stringify(plan, null, 2)}\n` : formatPlan(plan));
    return 0;
  }
  io.out(formatPlan(plan));
  if (plan.changes === 0) return 0;
  if (!values.yes && !(await io.confirm(`Apply these ${plan.changes} changes to ${accountId}? Type yes to go on: `))) {
    io.err("Nothing was applied.\n");
    return 1;
  }
  const result = await applyConfig(platform.db, platform.secrets, accountId, file, { env: io.env, expectPlan: plan });
  io.out(result.applied ? `Applied ${result.plan.changes} changes.\n` : "Nothing to apply.\n");
  return 0;
}

/** An error for a terminal: the message, then one line per detail. */
function describe(error: AppError): string {
  const lines = [error.code === "not_found" ? `${error.message} (check --account-id)` : error.message];
  const details = (error.extra.details as Array<{ path: string; message: string }> | undefined) ?? [];
  for (const d of details) lines.push(`  ${d.path || "(file)"}: ${d.message}`);
  const usedBy = (error.extra.used_by as Array<{ kind: string; id: string }> | undefined) ?? [];
  if (usedBy.length) lines.push(`  used by: ${usedBy.map((u) => `${u.kind} ${u.id}`).join(", ")}`);
  return `${lines.join("\n")}\n`;
}
