/**
 * Store-backed tests share one migrated database and one live store per test process, chosen by the
 * environment: PGlite in memory + in-process live state by default; PostgreSQL when
 * TEST_DATABASE_URL is set and Redis when TEST_REDIS_URL is set. Tests isolate themselves by
 * creating their own accounts, never by assuming an empty database.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { loadConfig, type Config } from "../../src/core/config/config.ts";
import type { Database } from "../../src/core/db/db.ts";
import { openDatabase } from "../../src/core/db/open.ts";
import { migrate } from "../../src/core/db/migrate.ts";
import { migrations } from "../../drizzle/index.ts";
import { openLiveStore } from "../../src/core/live/index.ts";
import type { LiveStore } from "../../src/core/live/live-store.ts";
import { createPlatform, type Platform } from "../../src/core/platform.ts";
import { createLogger, type LogLevel } from "../../src/core/log/logger.ts";
import { createAccount } from "../../src/core/accounts/accounts.service.ts";
import { createApiKey, createConsoleUser } from "../../src/core/auth/auth.service.ts";

export const TEST_JWT_SECRET = "test-jwt-secret-0123456789abcdef0123456789";
export const TEST_ADMIN_TOKEN = "test-admin-token-0123456789";
export const TEST_MASTER_KEY = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";

interface SharedStores {
  database: Database;
  live: LiveStore;
}

const GLOBAL_KEY = Symbol.for("parley.test.stores");
type Holder = { [GLOBAL_KEY]?: Promise<SharedStores> };

/** Which stores this run uses, for test names and skips. */
export const storeKind = `${process.env.TEST_DATABASE_URL ? "postgres" : "pglite"}+${process.env.TEST_REDIS_URL ? "redis" : "memory"}`;

/** The process-wide database and live store, opened and migrated on first use. */
export function sharedStores(): Promise<SharedStores> {
  const holder = globalThis as Holder;
  holder[GLOBAL_KEY] ??= (async () => {
    const url = process.env.TEST_DATABASE_URL;
    const database = await openDatabase(url ? { kind: "postgres", url, maxConnections: 8 } : { kind: "pglite", dataDir: null });
    await migrate(database.db, migrations);
    const live = await openLiveStore(process.env.TEST_REDIS_URL);
    return { database, live };
  })();
  return holder[GLOBAL_KEY];
}

/** A configuration for tests: fixed secrets, a private DATA_DIR, quiet logs, a generous rate limit. */
export function testConfig(env: Record<string, string> = {}): Config {
  return loadConfig({
    DATA_DIR: mkdtempSync(join(tmpdir(), "parley-test-")),
    JWT_SECRET: TEST_JWT_SECRET,
    ADMIN_TOKEN: TEST_ADMIN_TOKEN,
    PARLEY_MASTER_KEY: TEST_MASTER_KEY,
    LOG_LEVEL: "error",
    RATE_LIMIT_REQUESTS: "10000",
    ...env,
  });
}

export interface TestPlatformOptions {
  env?: Record<string, string>;
  /** Collects log lines instead of printing them. */
  logLines?: string[];
  logLevel?: LogLevel;
  /** A separate live store (e.g. a second Redis connection, to act as another instance). */
  live?: LiveStore;
}

/** A platform on the shared stores; closing it leaves the shared stores open and removes its DATA_DIR. */
export async function testPlatform(options: TestPlatformOptions = {}): Promise<Platform> {
  const stores = await sharedStores();
  const config = testConfig(options.env);
  const lines = options.logLines;
  const log = createLogger({ level: options.logLevel ?? (lines ? "debug" : "error"), ...(lines ? { write: (l: string) => void lines.push(l) } : {}) });
  const platform = await createPlatform(config, { database: stores.database, live: options.live ?? stores.live, log });
  // Closing it also removes its private DATA_DIR (a test run made about 140 of them).
  const close = platform.close;
  platform.close = async () => {
    await close();
    rmSync(config.dataDir, { recursive: true, force: true });
  };
  return platform;
}

export interface Tenant {
  accountId: string;
  /** An API key with scope `*`. */
  key: string;
  keyId: string;
}

let tenantCounter = 0;

/** A fresh account with a `*` key. */
export async function seedTenant(platform: Platform, input: { name?: string; is_reseller?: 0 | 1; parent_id?: string; rate_limit_requests?: number } = {}): Promise<Tenant> {
  const account = await createAccount(platform.db, { name: input.name ?? `Tenant ${++tenantCounter}`, ...input });
  const key = await createApiKey(platform.db, { accountId: account.id, label: "test", scopes: ["*"], grantorScopes: null });
  return { accountId: account.id, key: key.secret, keyId: key.id };
}

/** An extra key on an account with exactly `scopes`. */
export async function keyWithScopes(platform: Platform, accountId: string, scopes: string[]): Promise<string> {
  return (await createApiKey(platform.db, { accountId, scopes, grantorScopes: null })).secret;
}

/** A console login on an account; returns the email and password. */
export async function seedConsoleUser(platform: Platform, accountId: string, scopes: string[] = ["*"]) {
  const email = `user${Date.now()}${Math.floor(Math.random() * 1e6)}@example.test`;
  const password = "correct horse battery staple";
  await createConsoleUser(platform.db, { account_id: accountId, email, password, scopes });
  return { email, password };
}
