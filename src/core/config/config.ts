/**
 * Configuration comes only from environment variables, validated once at start. A bad value stops
 * start-up with a message naming the variable (and never echoing a secret's value).
 */
import { readFileSync } from "node:fs";
import { X509Certificate } from "node:crypto";
import { parseMasterKey } from "../secrets/master-key.ts";
import { availableParallelism } from "node:os";
import { Type as T, type Static } from "@sinclair/typebox";
import { Value } from "@sinclair/typebox/value";
import { parseCidrList, type Cidr } from "../net/cidr.ts";
import { canonicalCidr } from "../trunks/cidr-text.ts";

const Port = T.Integer({ minimum: 0, maximum: 65535 });

/** The raw variables and their defaults; README's configuration table mirrors this. */
export const EnvSchema = T.Object({
  HOST: T.String({ default: "127.0.0.1", minLength: 1, description: "Bind address of every host." }),
  PORT_PUBLIC: T.Integer({ ...Port, default: 8080 }),
  PORT_CONSOLE: T.Integer({ ...Port, default: 8081 }),
  PORT_REALTIME: T.Integer({ ...Port, default: 8082 }),
  PORT_CONTROL: T.Integer({ ...Port, default: 8083 }),
  DATA_DIR: T.String({ default: "./data", minLength: 1 }),
  DATABASE_URL: T.Optional(T.String({ pattern: "^postgres(ql)?://" })),
  DATABASE_POOL_SIZE: T.Optional(
    T.Integer({ minimum: 1, maximum: 1000, description: "Connections to PostgreSQL per process (API and edge calls); default twice the machine's cores plus two." }),
  ),
  REDIS_URL: T.Optional(T.String({ pattern: "^rediss?://" })),
  ADMIN_TOKEN: T.Optional(T.String({ minLength: 16 })),
  JWT_SECRET: T.Optional(T.String({ minLength: 32 })),
  PARLEY_MASTER_KEY: T.Optional(T.String({ minLength: 32 })),
  CONTROL_ALLOW: T.String({ default: "127.0.0.0/8,::1/128" }),
  CORS_ORIGINS: T.String({ default: "*" }),
  LOG_LEVEL: T.Union([T.Literal("debug"), T.Literal("info"), T.Literal("warn"), T.Literal("error")], { default: "info" }),
  RATE_LIMIT_REQUESTS: T.Integer({ minimum: 1, default: 100 }),
  RATE_LIMIT_WINDOW_SEC: T.Integer({ minimum: 1, maximum: 86400, default: 60 }),
  WEBHOOK_ALLOW_PRIVATE: T.Union([T.Literal("0"), T.Literal("1")], { default: "0", description: "1 lets webhooks target private and loopback addresses (development only)." }),
  WEBHOOK_CA_FILE: T.Optional(T.String({ minLength: 1, description: "Path to a PEM file of CA certificates trusted for webhook deliveries, in addition to the built-in ones." })),
  WEBHOOK_WORKERS: T.Union([T.Literal("0"), T.Literal("1")], { default: "1", description: "0: this process delivers no webhooks (another one does)." }),
  PUBLIC_URL: T.Optional(T.String({ pattern: "^https?://" })),
  CONSOLE_URL: T.Optional(T.String({ pattern: "^https?://" })),
  REALTIME_URL: T.Optional(T.String({ pattern: "^https?://" })),
  CONTROL_URL: T.Optional(T.String({ pattern: "^https?://" })),
  CARRIER_ADDRESSES: T.String({ default: "", description: "CIDRs the platform's wholesale carrier sends calls from (inbound calls to DIDs); empty = none." }),
  CARRIER_URI: T.Optional(T.String({ pattern: "^sips?:[^\\s]+$", description: "SIP URI of the platform's default carrier route (outbound calls with no trunk route)." })),
  CAC_MAX_CALL_SEC: T.Integer({ minimum: 60, maximum: 604800, default: 14400, description: "Longest a call holds its concurrency slots without an end event (a lost BYE frees its slot after this, and the call record is closed, unbilled)." }),
  MEDIA_ENGINES: T.String({ default: "", description: "Comma-separated SIP URIs of the media engines that run flows, queues, voicemail, conferences." }),
  EMERGENCY_NUMBERS: T.String({
    default: "911,112",
    description: "Comma-separated emergency numbers (2–6 digits) a device or PBX dials as is: they go out past do-not-call, geo policies, call limits and capacity ceilings; the word none for none.",
  }),
});
export type Env = Static<typeof EnvSchema>;

const SECRET_VARS = new Set(["ADMIN_TOKEN", "JWT_SECRET", "PARLEY_MASTER_KEY", "DATABASE_URL", "REDIS_URL"]);

/** The validated configuration the platform runs with. */
export interface Config {
  host: string;
  ports: { public: number; console: number; realtime: number; control: number };
  dataDir: string;
  databaseUrl: string | undefined;
  /** Connections to PostgreSQL per process (DATABASE_POOL_SIZE, else 2 × cores + 2). */
  databasePoolSize: number;
  redisUrl: string | undefined;
  adminToken: string | undefined;
  /** Set from JWT_SECRET, or generated into DATA_DIR in embedded mode. */
  jwtSecret: string | undefined;
  masterKey: string | undefined;
  controlAllow: Cidr[];
  /** `*` or an exact list of origins. */
  corsOrigins: "*" | string[];
  logLevel: Env["LOG_LEVEL"];
  rateLimit: { requests: number; windowSec: number };
  /** WEBHOOK_ALLOW_PRIVATE=1: webhooks may target private and loopback addresses (development only). */
  webhookAllowPrivate: boolean;
  /** WEBHOOK_CA_FILE: extra PEM CA certificates trusted for webhook deliveries. */
  webhookCaFile: string | undefined;
  /** WEBHOOK_WORKERS=0 turns this process's webhook delivery worker off. */
  webhookWorkers: boolean;
  /** Call routing: the wholesale carrier (inbound source ranges, outbound default route) and the media engines. */
  routing: { carrierAddresses: Cidr[]; carrierUri: string | null; mediaEngines: string[]; emergencyNumbers: string[] };
  /** CAC_MAX_CALL_SEC: the longest a call holds its CAC slots without an end event. */
  cacMaxCallSec: number;
  /** Externally visible base URLs of the four hosts (printed at start, used in links). */
  urls: { public: string; console: string; realtime: string; control: string };
}

export class ConfigError extends Error {
  override name = "ConfigError";
}

/**
 * Validates `env` (process.env by default). Throws ConfigError listing every bad variable.
 * @example loadConfig({ PORT_PUBLIC: "9000" }).ports.public // 9000
 */
export function loadConfig(env: Record<string, string | undefined> = process.env): Config {
  const raw: Record<string, unknown> = {};
  for (const key of Object.keys(EnvSchema.properties)) {
    const value = env[key];
    if (value !== undefined && value !== "") raw[key] = value;
  }
  const problems: string[] = [];
  // Value.Convert truncates "4.5" to 4 for an integer: a whole number must be written as one.
  for (const [key, schema] of Object.entries(EnvSchema.properties)) {
    const value = raw[key];
    if ((schema as { type?: string }).type === "integer" && typeof value === "string" && !/^\s*-?\d+\s*$/.test(value)) {
      problems.push(`${key}: Expected a whole number (got ${JSON.stringify(value)})`);
      delete raw[key];
    }
  }
  const withDefaults = Value.Default(EnvSchema, raw);
  const converted = Value.Convert(EnvSchema, withDefaults);
  for (const error of Value.Errors(EnvSchema, converted)) {
    const name = error.path.replace(/^\//, "");
    const shown = SECRET_VARS.has(name) ? "" : ` (got ${JSON.stringify(raw[name])})`;
    problems.push(`${name}: ${error.message}${shown}`);
  }
  let controlAllow: Cidr[] = [];
  let carrierAddresses: Cidr[] = [];
  let mediaEngines: string[] = [];
  let emergencyNumbers: string[] = [];
  const e = converted as Env;
  if (problems.length === 0) {
    // Who may reach the control plane, and whose calls are the carrier's: a range written with host
    // bits (10.0.0.1/8) is a typo that would let in the whole /8 it names, so it stops start-up.
    const ranges = (name: "CONTROL_ALLOW" | "CARRIER_ADDRESSES"): Cidr[] => {
      try {
        const list = parseCidrList(e[name]);
        for (const range of list) {
          const checked = canonicalCidr(range.text);
          if ("error" in checked) problems.push(`${name}: ${checked.error}`);
        }
        return list;
      } catch (error) {
        problems.push(`${name}: ${(error as Error).message}`);
        return [];
      }
    };
    controlAllow = ranges("CONTROL_ALLOW");
    carrierAddresses = ranges("CARRIER_ADDRESSES");
    if (e.PARLEY_MASTER_KEY !== undefined) {
      try {
        parseMasterKey(e.PARLEY_MASTER_KEY);
      } catch (error) {
        problems.push(`PARLEY_MASTER_KEY: ${(error as Error).message}`);
      }
    }
    if (e.WEBHOOK_CA_FILE !== undefined) {
      let text: string | null = null;
      try {
        text = readFileSync(e.WEBHOOK_CA_FILE, "latin1");
      } catch (error) {
        problems.push(`WEBHOOK_CA_FILE: cannot read ${JSON.stringify(e.WEBHOOK_CA_FILE)} (${(error as NodeJS.ErrnoException).code ?? "unreadable"})`);
      }
      // Added to the bundled CAs, a file that is not PEM certificates (empty, DER, a key) makes every
      // TLS connection of the webhook worker fail, public receivers' too.
      if (text !== null) {
        const blocks = text.match(/-----BEGIN CERTIFICATE-----[\s\S]*?-----END CERTIFICATE-----/g) ?? [];
        const bad = blocks.findIndex((block) => {
          try {
            new X509Certificate(block);
            return false;
          } catch {
            return true;
          }
        });
        if (!blocks.length) problems.push(`WEBHOOK_CA_FILE: ${JSON.stringify(e.WEBHOOK_CA_FILE)} holds no PEM certificate (-----BEGIN CERTIFICATE-----; convert a DER file with openssl x509 -inform der)`);
        else if (bad >= 0) problems.push(`WEBHOOK_CA_FILE: certificate ${bad + 1} of ${JSON.stringify(e.WEBHOOK_CA_FILE)} does not parse`);
      }
    }
    mediaEngines = e.MEDIA_ENGINES.split(",").map((u) => u.trim()).filter(Boolean);
    const badEngine = mediaEngines.find((u) => !/^sips?:[^\s;]+(;[^\s]*)?$/.test(u));
    if (badEngine) problems.push(`MEDIA_ENGINES: not a SIP URI (got ${JSON.stringify(badEngine)})`);
    emergencyNumbers = e.EMERGENCY_NUMBERS.trim() === "none" ? [] : [...new Set(e.EMERGENCY_NUMBERS.split(",").map((n) => n.trim()).filter(Boolean))];
    const badEmergency = emergencyNumbers.find((n) => !/^[0-9]{2,6}$/.test(n));
    if (badEmergency) problems.push(`EMERGENCY_NUMBERS: not a number of 2 to 6 digits (got ${JSON.stringify(badEmergency)})`);
  }
  if (problems.length) throw new ConfigError(`Invalid configuration:\n  ${problems.join("\n  ")}`);
  if (e.DATABASE_URL && (!e.JWT_SECRET || !e.PARLEY_MASTER_KEY)) {
    throw new ConfigError(
      "Invalid configuration:\n  With DATABASE_URL set, every instance must share JWT_SECRET and PARLEY_MASTER_KEY: set both.",
    );
  }
  const local = (port: number) => `http://${e.HOST.includes(":") ? `[${e.HOST}]` : e.HOST}:${port}`;
  return {
    host: e.HOST,
    ports: { public: e.PORT_PUBLIC, console: e.PORT_CONSOLE, realtime: e.PORT_REALTIME, control: e.PORT_CONTROL },
    dataDir: e.DATA_DIR,
    databaseUrl: e.DATABASE_URL,
    databasePoolSize: e.DATABASE_POOL_SIZE ?? defaultPoolSize(),
    redisUrl: e.REDIS_URL,
    adminToken: e.ADMIN_TOKEN,
    jwtSecret: e.JWT_SECRET,
    masterKey: e.PARLEY_MASTER_KEY,
    controlAllow,
    corsOrigins: e.CORS_ORIGINS.trim() === "*" ? "*" : e.CORS_ORIGINS.split(",").map((o) => o.trim()).filter(Boolean),
    logLevel: e.LOG_LEVEL,
    rateLimit: { requests: e.RATE_LIMIT_REQUESTS, windowSec: e.RATE_LIMIT_WINDOW_SEC },
    webhookAllowPrivate: e.WEBHOOK_ALLOW_PRIVATE === "1",
    webhookCaFile: e.WEBHOOK_CA_FILE,
    webhookWorkers: e.WEBHOOK_WORKERS === "1",
    cacMaxCallSec: e.CAC_MAX_CALL_SEC,
    routing: { carrierAddresses, carrierUri: e.CARRIER_URI ?? null, mediaEngines, emergencyNumbers },
    urls: {
      public: e.PUBLIC_URL ?? local(e.PORT_PUBLIC),
      console: e.CONSOLE_URL ?? local(e.PORT_CONSOLE),
      realtime: e.REALTIME_URL ?? local(e.PORT_REALTIME),
      control: e.CONTROL_URL ?? local(e.PORT_CONTROL),
    },
  };
}

/**
 * PostgreSQL connections per process when DATABASE_POOL_SIZE is unset: twice the cores plus two, the
 * usual rule for a PostgreSQL server on such a machine. More connections than the cores can serve
 * only add round trips that wait: bench:sip on 2 cores lost 7–12 % of calls at 450 calls/s with 16,
 * none with 6 (a statement pipelined behind another on a connection shares its writes and wake-ups).
 */
export function defaultPoolSize(): number {
  return 2 * availableParallelism() + 2;
}
