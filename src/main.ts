#!/usr/bin/env bun
/**
 * The `parley` command.
 *   parley serve [--hosts public,console,realtime,control]
 *   parley migrate
 *   parley admin account create --name NAME [--timezone TZ] [--parent-id ID] [--reseller] [--rate-limit N]
 *   parley admin key create --account-id ID [--label L] [--scopes a,b]
 *   parley admin console-user create --account-id ID --email E (--password P | --password-stdin) [--scopes a,b] [--user-id us_…]
 *   parley config plan|apply|export|schema …   (the config-managed resources, from a YAML or JSON file)
 */
import { parseArgs } from "node:util";
import { ConfigError, loadConfig, type Config } from "./core/config/config.ts";
import { createPlatform } from "./core/platform.ts";
import { openDatabase } from "./core/db/open.ts";
import { migrate } from "./core/db/migrate.ts";
import { migrations } from "../drizzle/index.ts";
import { bootstrapFirstRun, type FirstRunCredentials } from "./core/bootstrap/first-run.ts";
import { AppError } from "./core/errors/app-error.ts";
import { createAccount } from "./core/accounts/accounts.service.ts";
import { createApiKey, createConsoleUser } from "./core/auth/auth.service.ts";
import { AccountModel } from "./core/accounts/accounts.model.ts";
import { AuthModel } from "./core/auth/auth.model.ts";
import { Value } from "@sinclair/typebox/value";
import type { TSchema } from "@sinclair/typebox";
import { ALL_HOSTS, startHosts } from "./server.ts";
import type { HostName } from "./http/host-base.ts";
import { createLogger } from "./core/log/logger.ts";
import { runConfigCommand } from "./core/config-file/cli.ts";

const USAGE = `Usage:
  parley serve [--hosts public,console,realtime,control]
  parley migrate
  parley admin account create --name NAME [--timezone TZ] [--parent-id ID] [--reseller] [--rate-limit N]
  parley admin key create --account-id ID [--label LABEL] [--scopes a,b]
  parley admin console-user create --account-id ID --email EMAIL (--password P | --password-stdin) [--scopes a,b] [--user-id us_…]
  parley config plan FILE --account-id ID [--format yaml|json] [--json]
  parley config apply FILE --account-id ID [--format yaml|json] [--yes]
  parley config export --account-id ID [--format yaml|json] [--output FILE]
  parley config schema
Configuration comes from environment variables; see README.md. The config file format: docs/config-file.md.`;

class UsageError extends Error {}

function banner(config: Config, ports: Partial<Record<HostName, number>>, creds: FirstRunCredentials | null): string {
  const url = (host: HostName, fallback: string) => (ports[host] === config.ports[host] || !ports[host] ? fallback : fallback.replace(/:\d+$/, `:${ports[host]}`));
  const lines = ["", "Parley is running."];
  if (ports.public !== undefined) lines.push(`  Public API   ${url("public", config.urls.public)}/v1   (OpenAPI: ${url("public", config.urls.public)}/v1/openapi.json)`);
  if (ports.console !== undefined) lines.push(`  Console      ${url("console", config.urls.console)}`);
  if (ports.realtime !== undefined) lines.push(`  Wallboard    ${url("realtime", config.urls.realtime)}`);
  if (ports.control !== undefined) lines.push(`  Control      ${url("control", config.urls.control)}   (edge and operators only)`);
  if (creds) {
    lines.push(
      "",
      `First run: created the default account ${creds.accountId}.`,
      `  Console login   ${creds.email}  /  ${creds.password}`,
      `  API key         ${creds.apiKey}`,
      "  These are shown once; only their hashes are stored. Save them now.",
      `  Try: curl -H 'x-api-key: ${creds.apiKey}' ${url("public", config.urls.public)}/v1/whoami`,
    );
  } else {
    lines.push("", "Sign in with your console login; `parley admin` creates accounts, keys and logins.");
  }
  return lines.join("\n") + "\n\n";
}

async function serve(config: Config, hostsFlag: string | undefined): Promise<void> {
  const hosts = (hostsFlag ?? ALL_HOSTS.join(",")).split(",").map((h) => h.trim()).filter(Boolean);
  const unknown = hosts.filter((h) => !ALL_HOSTS.includes(h as HostName));
  if (unknown.length || hosts.length === 0) throw new UsageError(`--hosts takes a list of ${ALL_HOSTS.join(", ")}; got ${hostsFlag}`);
  const platform = await createPlatform(config);
  const creds = await bootstrapFirstRun(platform.db);
  const running = startHosts(platform, hosts as HostName[]);
  // The banner goes straight to stdout, never through the logger: credentials must not reach a log sink.
  process.stdout.write(banner(config, running.ports, creds));
  let stopping = false;
  const shutdown = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    platform.log.info("shutting down", { signal });
    await running.stop();
    await platform.close();
    process.exit(0);
  };
  process.on("SIGTERM", () => void shutdown("SIGTERM"));
  process.on("SIGINT", () => void shutdown("SIGINT"));
}

/** Commands that print JSON keep stdout for it alone: their logs go to stderr, so `| jq` works. */
function stderrLogger(config: Config) {
  return createLogger({ level: config.logLevel, write: (line) => process.stderr.write(line + "\n") });
}

function checked<S extends TSchema>(schema: S, value: unknown): S["static"] {
  const errors = [...Value.Errors(schema, value)];
  if (errors.length) throw new UsageError(errors.map((e) => `${e.path.replace(/^\//, "--").replace(/_/g, "-")}: ${e.message}`).join("\n"));
  return value as S["static"];
}

async function admin(config: Config, args: string[]): Promise<void> {
  const [what, verb, ...rest] = args;
  if (verb !== "create") throw new UsageError(USAGE);
  const { values } = parseArgs({
    args: rest,
    options: {
      name: { type: "string" },
      timezone: { type: "string" },
      "parent-id": { type: "string" },
      reseller: { type: "boolean" },
      "rate-limit": { type: "string" },
      "account-id": { type: "string" },
      label: { type: "string" },
      scopes: { type: "string" },
      email: { type: "string" },
      password: { type: "string" },
      "password-stdin": { type: "boolean" },
      "user-id": { type: "string" },
    },
    strict: true,
  });
  const scopes = values.scopes?.split(",").map((s) => s.trim()).filter(Boolean);
  const platform = await createPlatform(config, { log: stderrLogger(config) });
  try {
    let out: unknown;
    if (what === "account") {
      const input = checked(AccountModel.AdminCreate, {
        name: values.name,
        ...(values.timezone ? { timezone: values.timezone } : {}),
        ...(values["parent-id"] ? { parent_id: values["parent-id"] } : {}),
        ...(values.reseller ? { is_reseller: 1 } : {}),
        ...(values["rate-limit"] ? { rate_limit_requests: Number(values["rate-limit"]) } : {}),
      });
      out = await createAccount(platform.db, input);
    } else if (what === "key") {
      const input = checked(AuthModel.AdminCreateKey, { account_id: values["account-id"], label: values.label, scopes });
      const key = await createApiKey(platform.db, { accountId: input.account_id, label: input.label, scopes: input.scopes, grantorScopes: null });
      out = { id: key.id, secret: key.secret, label: key.label, scopes: key.scopes };
    } else if (what === "console-user") {
      const password = values["password-stdin"] ? (await Bun.stdin.text()).replace(/\r?\n$/, "") : values.password;
      const input = checked(AuthModel.AdminCreateConsoleUser, {
        account_id: values["account-id"],
        email: values.email,
        password,
        scopes,
        ...(values["user-id"] === undefined ? {} : { user_id: values["user-id"] }),
      });
      out = await createConsoleUser(platform.db, input);
    } else {
      throw new UsageError(USAGE);
    }
    process.stdout.write(JSON.stringify({ ok: true, data: out }, null, 2) + "\n");
  } finally {
    await platform.close();
  }
}

async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  if (!command || command === "help" || command === "--help" || command === "-h") {
    process.stdout.write(USAGE + "\n");
    return command ? 0 : 2;
  }
  const config = loadConfig();
  if (command === "serve") {
    const { values } = parseArgs({ args: rest, options: { hosts: { type: "string" } }, strict: true });
    await serve(config, values.hosts);
    return -1; // keep running
  }
  if (command === "migrate") {
    const database = await openDatabase(config.databaseUrl ? { kind: "postgres", url: config.databaseUrl, maxConnections: config.databasePoolSize } : { kind: "pglite", dataDir: config.dataDir });
    try {
      const applied = await migrate(database.db, migrations);
      process.stdout.write(JSON.stringify({ ok: true, applied }) + "\n");
    } finally {
      await database.close();
    }
    return 0;
  }
  if (command === "admin") {
    await admin(config, rest);
    return 0;
  }
  if (command === "config") {
    const platform = await createPlatform(config, { log: stderrLogger(config) });
    try {
      return await runConfigCommand(platform, rest);
    } finally {
      await platform.close();
    }
  }
  throw new UsageError(USAGE);
}

if (import.meta.main) {
  main(process.argv.slice(2)).then(
    (code) => {
      if (code >= 0) process.exit(code);
    },
    (error: unknown) => {
      if (error instanceof ConfigError || error instanceof UsageError) {
        process.stderr.write(`${error.message}\n`);
        process.exit(2);
      }
      if (error instanceof AppError) {
        process.stderr.write(JSON.stringify(error.toBody()) + "\n");
        process.exit(1);
      }
      process.stderr.write(`parley: ${error instanceof Error ? error.message : String(error)}\n`);
      process.exit(1);
    },
  );
}
