import { check, jsonb, pgTable, primaryKey, text, uniqueIndex } from "drizzle-orm/pg-core";
import { sql } from "drizzle-orm";
import { epochSeconds, flag } from "../db/columns.ts";

/** One price line of a rate plan: the longest matching prefix of the billed number wins. */
export interface RateLine {
  /** Digits the billed number (E.164 without +) starts with; "" matches every number. */
  prefix: string;
  /** outbound (the number called), inbound (the account's number called), or any. */
  direction: "outbound" | "inbound" | "any";
  /** Price per minute in micro-units of the plan's currency. */
  per_minute_micro: number;
  /** Seconds billed at least once answered (e.g. 60 for 60/60, 1 for 1/1). */
  initial_sec: number;
  /** Billing step after the initial period. */
  increment_sec: number;
  /** Charged once per answered call, in micro-units. */
  connection_fee_micro: number;
}

/**
 * Rate plans (config-managed, section `rate_plans`): the prices a call's cost is computed from when
 * it ends. One plan of the account has is_default 1 and prices its calls.
 */
export const ratePlans = pgTable(
  "rate_plan",
  {
    account_id: text("account_id").notNull(),
    /** rp_… */
    id: text("id").notNull(),
    name: text("name").notNull(),
    /** ISO 4217, upper case. */
    currency: text("currency").notNull(),
    is_default: flag("is_default").notNull().default(0),
    rates: jsonb("rates").$type<RateLine[]>().notNull(),
    created_at: epochSeconds("created_at").notNull(),
    updated_at: epochSeconds("updated_at").notNull(),
  },
  (t) => [
    primaryKey({ columns: [t.account_id, t.id] }),
    uniqueIndex("rate_plan_name_uq").on(t.account_id, sql`lower(${t.name})`),
    check("rate_plan_is_default_chk", sql`${t.is_default} in (0,1)`),
  ],
);

export type RatePlanRow = typeof ratePlans.$inferSelect;
