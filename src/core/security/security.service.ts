/**
 * The edge's bans: nodes report snapshots of their ban tables (pike floods, failed digests); the
 * platform keeps one record per (address, node), flags repeat offenders, and never records an
 * allow-listed address (the reply tells the node to lift it).
 */
import { Value } from "@sinclair/typebox/value";
import { sql } from "drizzle-orm";
import type { DbOrTx } from "../db/db.ts";
import { nowSeconds } from "../db/columns.ts";
import { notFound, validationFailed, type ErrorDetail } from "../errors/app-error.ts";
import { ipAllowed, type Cidr } from "../net/cidr.ts";
import { canonicalIp, canonicalRange } from "./address.ts";
import { errorDetails } from "../validation/error-details.ts";
import { NUL_MESSAGE, unstorableTextPath } from "../validation/storable-text.ts";
import { canonicalCidr } from "../trunks/cidr-text.ts";
import { GIVEN_TWICE, jsonTextProblem, TOO_DEEP } from "../../http/json-duplicates.ts";
import { SecurityModel } from "./security.model.ts";
import type { SecurityAllowRow, SecurityBanRow } from "./security.schema.ts";
import {
  activeBans,
  activeBansElsewhere,
  bansOfNode,
  deleteAllow,
  expireMissing,
  expireStale,
  flagAddresses,
  liftBans,
  listAllow,
  listBans,
  upsertAllow,
  writeBans,
} from "./security.store.ts";

/** Failed digests from one address (within the auth service's window) that flag it. */
/**
 * Ban writes one after another, platform-wide: a node's report updates every node's row of an address
 * it flags (flagAddresses), so two reports holding the same addresses locked each other's rows in the
 * opposite order (PostgreSQL aborted one: a 500, its lifts lost); an allowlist add and a report raced
 * too. Reports come every 30 s per node: waiting in line costs nothing.
 */
async function lockBans(tx: DbOrTx): Promise<void> {
  await tx.execute(sql`select pg_advisory_xact_lock(hashtextextended('parley:security:bans', 0))`);
}

export const AUTH_FAILURES_TO_FLAG = 20;
/** The bans of a node that sent no report for this long are expired: the node is gone (5 report intervals). */
export const SILENT_NODE_SEC = 150;
/**
 * How far apart two reports' readings of the node's clock against ours may be (whole seconds, read at
 * the snapshot there and on arrival here; the delay between varies): a ban set no later than this after
 * our last sighting of it may be the one we saw.
 */
const CLOCK_SLACK_SEC = 1;
/** GET /security/bans default page. */
export const DEFAULT_BAN_LIMIT = 100;

/** Dependencies of a report. */
export interface ReportOptions {
  /** Now, epoch seconds (tests pin it). */
  now?: number;
  /** Failed digest attempts from `ip` the auth service counted; absent: not consulted. */
  authFailures?: (ip: string) => Promise<number>;
}

function toBan(row: SecurityBanRow): SecurityModel.Ban {
  return {
    ip: row.ip,
    node: row.node,
    status: row.status as SecurityModel.Status,
    reason: row.reason,
    hits: row.hits,
    ban_count: row.ban_count,
    first_seen: row.first_seen,
    last_seen: row.last_seen,
    expires_at: row.expires_at,
    flagged: row.flagged === 1 ? 1 : 0,
  };
}

function toAllow(row: SecurityAllowRow): SecurityModel.Allow {
  return { address: row.address, note: row.note, created_at: row.created_at };
}

/**
 * Checks a report body as it arrived (JSON, or a form whose `bans` is JSON text) against the model;
 * every problem is a detail with its path.
 */
export function parseReport(body: unknown): SecurityModel.Report {
  let input = body;
  if (input && typeof input === "object" && !Array.isArray(input)) {
    const b = { ...(input as Record<string, unknown>) };
    if (typeof b.bans === "string") {
      const text = b.bans;
      try {
        b.bans = JSON.parse(text);
      } catch {
        throw validationFailed([{ path: "/bans", message: "Not JSON text of an array of bans." }]);
      }
      // The host checks a JSON body's text, not JSON text inside a form field: JSON.parse kept the last of
      // two members of one name in silence ({"ip":"A","ip":"B"} recorded B). Refused as in a JSON body.
      const problem = jsonTextProblem(text);
      if (problem !== null) throw validationFailed([{ path: `/bans${problem.path}`, message: problem.kind === "twice" ? GIVEN_TWICE : TOO_DEEP }]);
      // The host checked the text as it came; the escapes inside it (\u0000, a lone \ud800) only now became characters.
      const unstorable = unstorableTextPath(b.bans, "/bans");
      if (unstorable !== null) throw validationFailed([{ path: unstorable, message: NUL_MESSAGE }]);
    }
    // A form body carries its integers as text; empty, one is absent (as every optional field the edge sends).
    for (const field of ["ts", "partial"] as const) {
      if (b[field] === "") delete b[field];
      if (typeof b[field] === "string" && /^\d{1,12}$/.test(b[field])) b[field] = Number(b[field]);
    }
    input = b;
  }
  if (Value.Check(SecurityModel.Report, input)) return input;
  throw validationFailed(errorDetails(Value.Errors(SecurityModel.Report, input)));
}

/**
 * A time the node reported (its clock) on ours: moved by how far the snapshot's `ts` is from `now`, so a
 * node whose clock runs ahead does not seem to ban after our last sighting a ban it held all along. A
 * time later than the snapshot (the node's clock was set back since) is the snapshot's. Without `ts` the
 * gap is unknown: the time is taken as ours, and one in our future (the node's clock runs ahead by more)
 * says nothing we can compare (undefined): taken as now, it would read as a new ban at every report.
 */
function onOurClock(nodeTime: number, ts: number | undefined, now: number): number | undefined {
  if (ts === undefined) return nodeTime > now ? undefined : nodeTime;
  return Math.max(0, Math.min(nodeTime, ts) - ts + now);
}

/**
 * Records a node's snapshot. Allow-listed addresses are not recorded (their existing records are
 * lifted) and come back in `lift`. Bans of the node missing from a complete snapshot are expired.
 */
export async function reportBans(db: DbOrTx, report: SecurityModel.Report, options: ReportOptions = {}): Promise<{ lift: string[]; allow: string }> {
  const now = options.now ?? nowSeconds();
  const details: ErrorDetail[] = [];
  const byIp = new Map<string, SecurityModel.ReportedBan>();
  /** Each address as the node wrote it, every way it did (a dual-stack node may hold 192.0.2.1 and ::ffff:192.0.2.1). */
  const spellings = new Map<string, Set<string>>();
  report.bans.forEach((ban, i) => {
    const ip = canonicalIp(ban.ip);
    if (!ip) details.push({ path: `/bans/${i}/ip`, message: "Not an IP address." });
    else if (ban.banned_at != null && ban.expires_at != null && ban.expires_at < ban.banned_at) {
      details.push({ path: `/bans/${i}/expires_at`, message: "A ban cannot end before it was set (banned_at)." });
    } else {
      // One record per address: of two spellings, the ban with more hits stands for both.
      const seen = byIp.get(ip);
      if (!seen || (ban.hits ?? 0) > (seen.hits ?? 0)) byIp.set(ip, ban);
      spellings.set(ip, (spellings.get(ip) ?? new Set()).add(ban.ip));
    }
  });
  if (details.length) throw validationFailed(details.slice(0, 20));

  const failures = new Map<string, number>();
  if (options.authFailures) for (const ip of byIp.keys()) failures.set(ip, await options.authFailures(ip));
  /** Canonical, for our records; and as the node wrote it, which is the key its own ban table has. */
  const lift: string[] = [];
  const liftAsSent: string[] = [];
  let allow: Array<{ text: string; cidr: Cidr }> = [];

  await db.transaction(async (tx) => {
    await lockBans(tx);
    // Read under the lock: an allowlist add is in line with reports, so none is missed in between.
    allow = (await listAllow(tx)).map((a) => canonicalRange(a.address)!);
    for (const ip of [...byIp.keys()]) {
      if (ipAllowed(ip, allow.map((a) => a.cidr))) {
        lift.push(ip);
        liftAsSent.push(...spellings.get(ip)!);
        byIp.delete(ip);
      }
    }
    const ips = [...byIp.keys()];
    // Bans past their deadline or of silent nodes are ended first: one that ended long ago must not
    // count as held by another node now (a new ban would be flagged as banned by two).
    await expireStale(tx, now, now - SILENT_NODE_SEC);
    await liftBans(tx, lift);
    const previous = new Map((await bansOfNode(tx, report.node, ips)).map((r) => [r.ip, r]));
    const elsewhere = new Set((await activeBansElsewhere(tx, report.node, ips)).map((r) => r.ip));
    const rows: SecurityBanRow[] = [];
    const flagEverywhere: string[] = [];
    for (const [ip, ban] of byIp) {
      const prev = previous.get(ip);
      const bannedAt = ban.banned_at === undefined ? undefined : onOurClock(ban.banned_at, report.ts, now);
      // A new ban: one the node says it set after our last sighting; without its time, one whose row had
      // ended (expired, lifted). A ban set before our last sighting is the one we knew, held all along,
      // even if its row expired while the node was silent.
      const again = prev !== undefined && (bannedAt !== undefined ? bannedAt > prev.last_seen + CLOCK_SLACK_SEC : prev.status !== "active");
      const banCount = prev ? prev.ban_count + (again ? 1 : 0) : 1;
      const repeat = banCount >= 2;
      const multiNode = elsewhere.has(ip);
      const manyFailures = (failures.get(ip) ?? 0) >= AUTH_FAILURES_TO_FLAG;
      const flagged = prev?.flagged === 1 || repeat || multiNode || manyFailures ? 1 : 0;
      if (repeat || multiNode) flagEverywhere.push(ip);
      rows.push({
        ip,
        node: report.node,
        status: "active",
        reason: ban.reason ?? prev?.reason ?? null,
        hits: ban.hits ?? prev?.hits ?? 0,
        ban_count: Math.min(banCount, 32_767),
        first_seen: prev?.first_seen ?? bannedAt ?? now,
        last_seen: now,
        expires_at: ban.expires_at ?? null,
        flagged,
      });
    }
    await writeBans(tx, rows);
    await flagAddresses(tx, flagEverywhere);
    // A partial snapshot (the node's body is bounded) says nothing of the bans it left out.
    if (report.partial !== 1) await expireMissing(tx, report.node, ips);
  });
  // Every range with its prefix (is_in_subnet at the edge reads "address/bits").
  return { lift: liftAsSent.sort(), allow: allow.map((a) => (a.text.includes("/") ? a.text : `${a.text}/${a.cidr.family === 4 ? 32 : 128}`)).join(",") };
}

/** GET /security/bans: bans, most recently seen first; stale ones are expired first. */
export async function searchBans(
  db: DbOrTx,
  query: { status?: SecurityModel.Status; q?: string; flagged?: "0" | "1"; limit?: number },
  now = nowSeconds(),
): Promise<SecurityModel.Ban[]> {
  await db.transaction(async (tx) => {
    await lockBans(tx);
    await expireStale(tx, now, now - SILENT_NODE_SEC);
  });
  const rows = await listBans(db, {
    status: query.status,
    ipPrefix: query.q?.toLowerCase(),
    flagged: query.flagged === undefined ? undefined : query.flagged === "1" ? 1 : 0,
    limit: query.limit ?? DEFAULT_BAN_LIMIT,
  });
  return rows.map(toBan);
}

/** GET /security/allow. */
export async function listAllowlist(db: DbOrTx): Promise<SecurityModel.Allow[]> {
  return (await listAllow(db)).map(toAllow);
}

/** POST /security/allow: adds an address or range and lifts the active bans it covers. */
/**
 * An allowlist address or range as written to add or remove one, canonical; 400 at `field` otherwise.
 * "10.0.0.1/8" is refused as trunk ACLs refuse it, not widened in silence: the writer meant something else.
 */
function allowRange(text: string, field: string): NonNullable<ReturnType<typeof canonicalRange>> {
  const range = canonicalRange(text);
  if (!range) throw validationFailed([{ path: field, message: "Not an IP address or CIDR range." }]);
  const written = canonicalCidr(text);
  if ("error" in written) throw validationFailed([{ path: field, message: written.error }]);
  return range;
}

export async function addToAllowlist(db: DbOrTx, input: SecurityModel.AddAllow, now = nowSeconds()): Promise<SecurityModel.AddAllowResult & { created: boolean }> {
  const range = allowRange(input.address, "/address");
  return db.transaction(async (tx) => {
    await lockBans(tx);
    const existed = (await listAllow(tx)).some((a) => a.address === range.text);
    const entry = await upsertAllow(tx, { address: range.text, note: input.note ?? null, created_at: now });
    // Bans that ended already are not lifted by it (nor counted in `lifted`).
    await expireStale(tx, now, now - SILENT_NODE_SEC);
    const covered = [...new Set((await activeBans(tx)).filter((b) => ipAllowed(b.ip, [range.cidr])).map((b) => b.ip))];
    const lifted = await liftBans(tx, covered);
    return { entry: toAllow(entry), lifted, created: !existed };
  });
}

/** DELETE /security/allow/{address}: 404 when it is not on the list. */
export async function removeFromAllowlist(db: DbOrTx, address: string, field = "/address"): Promise<void> {
  const range = allowRange(address, field);
  if (!(await deleteAllow(db, range.text))) throw notFound("allowlist entry");
}
