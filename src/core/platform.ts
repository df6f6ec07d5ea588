/**
 * The platform's dependencies, opened once per process and handed to every host: stores, secrets,
 * tokens, logger. Hosts and services take what they need from here explicitly.
 */
import { startConfigCache, type ConfigCache } from "./cache/config-cache.ts";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { Config } from "./config/config.ts";
import type { Database, Db } from "./db/db.ts";
import { openDatabase } from "./db/open.ts";
import { migrate } from "./db/migrate.ts";
import { migrations } from "../../drizzle/index.ts";
import { openLiveStore } from "./live/index.ts";
import type { LiveStore } from "./live/live-store.ts";
import { createLogger, type Logger } from "./log/logger.ts";
import { createSessionTokens, type SessionTokens } from "./auth/session-tokens.ts";
import { createCredentialResolver, type CredentialResolver } from "./auth/credential-resolver.ts";
import { loadOrCreateMasterKey, parseMasterKey } from "./secrets/master-key.ts";
import { createSecretStore, type SecretStore } from "./secrets/secrets.service.ts";
import { createFsObjectStore } from "./objects/fs-object-store.ts";
import type { ObjectStore } from "./objects/object-store.ts";
import { createRequestQuota, type RequestQuota } from "./rate-limit/rate-limit.ts";
import { createEventBus, type EventBus } from "./events/bus.ts";
import { createEventIdCodec, deriveEventIdKey } from "./events/event-ids.ts";
import { deriveFingerprintSecret, deriveReplySealKey } from "./idempotency/idempotency.service.ts";
import { webhookDeliveryPlanner } from "./webhooks/delivery.service.ts";
import { installEventLogs } from "./logs/logs.service.ts";

export interface Platform {
  config: Config;
  database: Database;
  db: Db;
  live: LiveStore;
  log: Logger;
  tokens: SessionTokens;
  credentials: CredentialResolver;
  /** Key of Idempotency-Key request fingerprints (derived from the master key). */
  fingerprintSecret: Uint8Array;
  /** Key sealing the replies stored for Idempotency-Key replay (derived from the master key). */
  replySealKey: Uint8Array;
  /** The public API's request quota (rate limit), shared by all instances through the live store. */
  quota: RequestQuota;
  secrets: SecretStore;
  objects: ObjectStore;
  /** The event bus (outbox): emit in the transaction of the change; published after commit. */
  events: EventBus;
  /** What the call path reads of accounts' configuration, dropped as it changes (config-cache.ts). */
  configCache: ConfigCache;
  /** Closes every store. Call once, after the servers stopped. */
  close(): Promise<void>;
}

/** Options for tests and tools that bring their own stores or logger. */
export interface PlatformOptions {
  log?: Logger;
  /** An already opened (and migrated) database; the platform will not close it. */
  database?: Database;
  /** An already opened live store; the platform will not close it. */
  live?: LiveStore;
  /** Skip migrations (the caller ran them). */
  skipMigrations?: boolean;
}

/** In embedded mode the JWT secret is generated once into DATA_DIR (0600), like the master key. */
function loadOrCreateJwtSecret(dataDir: string): string {
  const path = join(dataDir, "jwt.secret");
  if (existsSync(path)) return readFileSync(path, "utf8").trim();
  mkdirSync(dataDir, { recursive: true });
  const secret = Buffer.from(crypto.getRandomValues(new Uint8Array(48))).toString("base64url");
  writeFileSync(path, secret + "\n", { mode: 0o600, flag: "wx" });
  return secret;
}

/** Opens the stores the configuration names, applies migrations, and wires the shared services. */
export async function createPlatform(config: Config, options: PlatformOptions = {}): Promise<Platform> {
  const log = options.log ?? createLogger({ level: config.logLevel });
  const database =
    options.database ??
    (await openDatabase(config.databaseUrl ? { kind: "postgres", url: config.databaseUrl, maxConnections: config.databasePoolSize } : { kind: "pglite", dataDir: config.dataDir }));
  if (!options.skipMigrations && !options.database) {
    const applied = await migrate(database.db, migrations);
    if (applied.length) log.info("migrations applied", { applied });
  }
  const live = options.live ?? (await openLiveStore(config.redisUrl));
  const tokens = createSessionTokens(config.jwtSecret ?? loadOrCreateJwtSecret(config.dataDir));
  const masterKey = config.masterKey ? parseMasterKey(config.masterKey) : loadOrCreateMasterKey(config.dataDir);
  const credentials = await createCredentialResolver({ db: database.db, live, tokens });
  const events = createEventBus({ db: database.db, live, log, ids: createEventIdCodec(deriveEventIdKey(masterKey)) });
  const configCache = await startConfigCache(database, log);
  // Webhook deliveries are planned in the transaction of every event (outbox).
  events.addPlanner(webhookDeliveryPlanner(configCache));
  // A `test` event leaves a line in the account log (GET /v1/logs).
  installEventLogs(events);
  return {
    config,
    database,
    db: database.db,
    live,
    log,
    tokens,
    credentials,
    quota: createRequestQuota(live, config.rateLimit),
    fingerprintSecret: deriveFingerprintSecret(masterKey),
    replySealKey: deriveReplySealKey(masterKey),
    secrets: createSecretStore(database.db, masterKey),
    objects: createFsObjectStore(join(config.dataDir, "objects")),
    events,
    configCache,
    async close() {
      await configCache.stop();
      await credentials.close();
      if (!options.live) await live.close();
      if (!options.database) await database.close();
    },
  };
}
