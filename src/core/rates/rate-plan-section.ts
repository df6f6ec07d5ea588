/**
 * Rate plans as a section of the config file (`rate_plans`), keyed by name. Price lines are compared
 * as a set of canonical line strings (`prefix|direction|per_minute|initial/increment|fee`), so a
 * plan shows exactly which lines join and leave; the file and the export write them as objects.
 */
import { newId } from "../ids/ids.ts";
import type { RateLine } from "./rates.schema.ts";
import type { RateModel } from "./rates.model.ts";
import { deleteRatePlan, insertRatePlan, listRatePlans, updateRatePlan } from "./rates.store.ts";
import { byText, rejectDuplicateKeys, sortedSet, type Section } from "../config-file/section.ts";

export type RatePlanCanonical = { name: string; currency: string; default: number; rates: string[] };

const DIRECTION_ORDER = { outbound: 0, inbound: 1, any: 2 } as const;

/** The canonical string of one line. */
export function rateLineKey(line: RateLine): string {
  return `${line.prefix}|${line.direction}|${line.per_minute_micro}|${line.initial_sec}/${line.increment_sec}|${line.connection_fee_micro}`;
}

/** A line back from its canonical string. */
export function parseRateLineKey(key: string): RateLine {
  const [prefix, direction, perMinute, increments, fee] = key.split("|") as [string, RateLine["direction"], string, string, string];
  const [initial, increment] = increments.split("/").map(Number) as [number, number];
  return { prefix, direction, per_minute_micro: Number(perMinute), initial_sec: initial, increment_sec: increment, connection_fee_micro: Number(fee) };
}

function lineOf(entry: RateModel.RateEntry): RateLine {
  const [initial, increment] = (entry.increment ?? "60/60").split("/").map(Number) as [number, number];
  return {
    prefix: entry.prefix,
    direction: entry.direction ?? "outbound",
    per_minute_micro: entry.per_minute_micro,
    initial_sec: initial,
    increment_sec: increment,
    connection_fee_micro: entry.connection_fee_micro ?? 0,
  };
}

/** Lines in file order: by prefix, then direction. */
function sortLines(lines: RateLine[]): RateLine[] {
  return lines.sort((a, b) => byText(a.prefix, b.prefix) || DIRECTION_ORDER[a.direction] - DIRECTION_ORDER[b.direction]);
}

/** The file form of a canonical plan (what the export writes). */
export function ratePlanToFile(entry: RatePlanCanonical): Record<string, unknown> {
  return {
    name: entry.name,
    currency: entry.currency,
    ...(entry.default ? { default: 1 } : {}),
    rates: sortLines(entry.rates.map(parseRateLineKey)).map((l) => ({
      prefix: l.prefix,
      ...(l.direction !== "outbound" ? { direction: l.direction } : {}),
      per_minute_micro: l.per_minute_micro,
      ...(l.initial_sec !== 60 || l.increment_sec !== 60 ? { increment: `${l.initial_sec}/${l.increment_sec}` } : {}),
      ...(l.connection_fee_micro ? { connection_fee_micro: l.connection_fee_micro } : {}),
    })),
  };
}

/** The rate_plans section. */
export const ratePlanSection: Section<RatePlanCanonical> & { toFile(entry: RatePlanCanonical): Record<string, unknown> } = {
  name: "rate_plans",
  label: "rate plan",
  keyFields: ["name"],
  keyOf: (e) => e.name.toLowerCase(),
  compare: (a, b) => byText(a.name.toLowerCase(), b.name.toLowerCase()),
  toFile: ratePlanToFile,

  async canonicalize(entries, ctx) {
    const out = (entries as RateModel.RatePlanEntry[]).map((raw, i) => {
      const at = `/rate_plans/${i}`;
      const seen = new Map<string, number>();
      raw.rates.forEach((rate, j) => {
        const key = `${rate.prefix}|${rate.direction ?? "outbound"}`;
        const first = seen.get(key);
        if (first !== undefined) ctx.errors.push({ path: `${at}/rates/${j}/prefix`, message: `Prefix '${rate.prefix}' (${rate.direction ?? "outbound"}) is priced twice (also at ${at}/rates/${first}).` });
        else seen.set(key, j);
      });
      const entry: RatePlanCanonical = { name: raw.name, currency: raw.currency, default: raw.default ?? 0, rates: sortedSet(raw.rates.map((r) => rateLineKey(lineOf(r)))) };
      return { entry, at };
    });
    const unique = rejectDuplicateKeys(this, out, ctx.errors, "name");
    const defaults = unique.filter((d) => d.entry.default === 1);
    if (unique.length > 0 && defaults.length !== 1) {
      const at = defaults[1]?.at ?? unique[0]!.at;
      ctx.errors.push({ path: `${at}/default`, message: `Exactly one rate plan must have default: 1 (the file has ${defaults.length}).` });
    }
    return unique;
  },

  async load(db, accountId) {
    return (await listRatePlans(db, accountId)).map((row) => ({
      id: row.id,
      entry: { name: row.name, currency: row.currency, default: row.is_default, rates: sortedSet(row.rates.map(rateLineKey)) },
    }));
  },

  async create(tx, w, entry) {
    const id = newId("rp");
    await insertRatePlan(tx, {
      account_id: w.accountId,
      id,
      name: entry.name,
      currency: entry.currency,
      is_default: entry.default,
      rates: sortLines(entry.rates.map(parseRateLineKey)),
      created_at: w.now,
      updated_at: w.now,
    });
    return id;
  },

  async update(tx, w, id, entry) {
    await updateRatePlan(tx, w.accountId, id, {
      name: entry.name,
      currency: entry.currency,
      is_default: entry.default,
      rates: sortLines(entry.rates.map(parseRateLineKey)),
      updated_at: w.now,
    });
  },

  async remove(tx, w, id) {
    await deleteRatePlan(tx, w.accountId, id);
  },
};
