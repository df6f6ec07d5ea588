/**
 * Call pricing from the account's default rate plan: the longest prefix of the billed number among
 * the plan's lines for the call's direction wins; answered seconds are rounded up to the line's
 * initial period and increments (60/60 bills whole minutes, 1/1 whole seconds).
 */
import { getTableColumns, sql } from "drizzle-orm";
import type { DbOrTx } from "../db/db.ts";
import type { ConfigCache } from "../cache/config-cache.ts";
import { rawRows } from "../db/migrate.ts";
import { columnList, columnReader } from "../db/sql-text.ts";
import type { CallDirection } from "../routing/route-types.ts";
import { ratePlans, type RateLine, type RatePlanRow } from "./rates.schema.ts";

const RATE_PLAN_COLUMNS = getTableColumns(ratePlans);
const RATE_PLAN_LIST = columnList(RATE_PLAN_COLUMNS, "p");
const ratePlanRow = columnReader<RatePlanRow>(RATE_PLAN_COLUMNS);

/**
 * The default plans of these accounts (their is_default plan; accounts without one are absent), in
 * one read. Read for every batch of ending calls, so a fixed text: the query builder took ~18 µs of
 * CPU to write it each time.
 */
async function readDefaultPlans(db: DbOrTx, accountIds: string[]): Promise<RatePlanRow[]> {
  const byAccount = accountIds.length === 1 ? sql`p.account_id = ${accountIds[0]!}` : sql`p.account_id = any(${sql.param(accountIds)}::text[])`;
  const rows = await rawRows<Record<string, unknown>>(
    db,
    sql`select ${RATE_PLAN_LIST} from rate_plan p where ${byAccount} and p.is_default = 1`,
  );
  return rows.map(ratePlanRow);
}

/** The plan that prices the account's calls (its is_default plan), or null when it has none. */
export async function defaultRatePlan(db: DbOrTx, accountId: string): Promise<RatePlanRow | null> {
  return (await readDefaultPlans(db, [accountId]))[0] ?? null;
}

/**
 * The default plans of several accounts, in one read (accounts without one are absent). With a cache,
 * each account's answer is kept until its configuration changes (the plans are frozen: read only).
 */
export async function defaultRatePlans(db: DbOrTx, accountIds: string[], cache?: ConfigCache): Promise<Map<string, RatePlanRow>> {
  if (!accountIds.length) return new Map();
  if (cache) {
    const found = await cache.readEach(
      "default-rate-plan\u0000",
      accountIds.map((id) => ({ account_id: id, id: "" })),
      async (missing) => new Map([...(await defaultRatePlans(db, missing.map((m) => m.account_id)))].map(([id, plan]) => [`${id}\u0000`, plan])),
    );
    return new Map([...found].map(([key, plan]) => [key.slice(0, -1), plan]));
  }
  return new Map((await readDefaultPlans(db, accountIds)).map((r) => [r.account_id, r]));
}

/** Seconds billed for `billsec` answered seconds under `initial/increment` (0 stays 0). */
export function billedSeconds(billsec: number, initialSec: number, incrementSec: number): number {
  if (billsec <= 0) return 0;
  if (billsec <= initialSec) return initialSec;
  return initialSec + Math.ceil((billsec - initialSec) / incrementSec) * incrementSec;
}

/** The line pricing a call to/from `number` in `direction`: longest prefix; a direction-specific line beats `any` on a tie. */
export function matchRate(rates: readonly RateLine[], direction: CallDirection, number: string): RateLine | null {
  const digits = number.replace(/^\+/, "");
  let best: RateLine | null = null;
  for (const line of rates) {
    if (line.direction !== "any" && line.direction !== direction) continue;
    if (!digits.startsWith(line.prefix)) continue;
    if (!best || line.prefix.length > best.prefix.length || (line.prefix.length === best.prefix.length && best.direction === "any" && line.direction !== "any")) {
      best = line;
    }
  }
  return best;
}

/** What a call costs. */
export interface CallPrice {
  cost_micro: number;
  currency: string | null;
  rate_plan_id: string | null;
  /** The matched line's prefix (null: no line matched, the call is free). */
  prefix: string | null;
  billed_sec: number;
}

/**
 * Prices an ended call: internal calls and unanswered calls are free; otherwise connection fee +
 * per-minute price × billed seconds / 60, rounded to the nearest micro-unit (an answered call of 0
 * seconds pays the fee alone). Outbound calls are priced by the number called; inbound by the
 * account's number that was called (its E.164, not `to` as a number transform rewrote it).
 * @example priceCall(plan, "outbound", "442071234567", 61) // 60/60 at 10,000 µ/min → 20,000
 */
export function priceCall(plan: RatePlanRow | null, direction: CallDirection, number: string, billsec: number, answered = billsec > 0): CallPrice {
  const none = { cost_micro: 0, currency: plan?.currency ?? null, rate_plan_id: plan?.id ?? null, prefix: null, billed_sec: 0 };
  if (!plan || direction === "internal" || !answered) return none;
  const line = matchRate(plan.rates, direction, number);
  if (!line) return none;
  const billed = billedSeconds(billsec, line.initial_sec, line.increment_sec);
  return {
    cost_micro: line.connection_fee_micro + Math.round((line.per_minute_micro * billed) / 60),
    currency: plan.currency,
    rate_plan_id: plan.id,
    prefix: line.prefix,
    billed_sec: billed,
  };
}
