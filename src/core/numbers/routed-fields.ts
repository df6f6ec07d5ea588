/**
 * The routing half numbers and extensions share: a main destination, an optional business-hours
 * schedule, and the closed / holiday destinations that only a schedule can trigger. One merge rule
 * for PATCH and one check for every write, so both resources answer the same way.
 */
import type { Static } from "@sinclair/typebox";
import type { DbOrTx } from "../db/db.ts";
import { AppError, validationFailed, type ErrorDetail } from "../errors/app-error.ts";
import { checkRouteTargets, type DestXform } from "../routing/route-target.ts";
import { rowExists } from "../db/row-exists.ts";

/** A route target's transform as stored and shown. */
export type DestXformValue = Static<typeof DestXform>;

/** The slots of a routed resource, in the order errors are reported. */
export const ROUTED_SLOTS = ["dest", "closed_dest", "holiday_dest"] as const;
export type RoutedSlot = (typeof ROUTED_SLOTS)[number];

/** The routing fields as a write will leave them. */
export interface RoutedFields {
  dest_kind: string | null;
  dest_id: string | null;
  schedule_id: string | null;
  closed_dest_kind: string | null;
  closed_dest_id: string | null;
  holiday_dest_kind: string | null;
  holiday_dest_id: string | null;
}

/** The routing fields a request may carry (every one optional; null clears). */
export type RoutedInput = { [K in keyof RoutedFields]?: string | null } & { dest_xform?: DestXformValue | null };

/**
 * Merges the routing fields of a PATCH onto the stored ones. Kind and id are a pair: a new kind sent
 * without its id clears the id (an id of the old kind never names a target of the new one), so
 * `{ "closed_dest_kind": null }` clears a slot and `{ "dest_kind": "hangup" }` needs nothing else.
 * The stored kind sent again, or an id sent alone, keeps the other half.
 */
export function mergeRoutedFields(stored: RoutedFields, patch: RoutedInput): RoutedFields {
  const merged: RoutedFields = {
    dest_kind: stored.dest_kind,
    dest_id: stored.dest_id,
    schedule_id: stored.schedule_id,
    closed_dest_kind: stored.closed_dest_kind,
    closed_dest_id: stored.closed_dest_id,
    holiday_dest_kind: stored.holiday_dest_kind,
    holiday_dest_id: stored.holiday_dest_id,
  };
  for (const slot of ROUTED_SLOTS) {
    const kindKey = `${slot}_kind` as const;
    const idKey = `${slot}_id` as const;
    if (Object.hasOwn(patch, kindKey)) {
      merged[kindKey] = patch[kindKey] ?? null;
      const kindChanged = merged[kindKey] !== stored[kindKey];
      if (Object.hasOwn(patch, idKey)) merged[idKey] = patch[idKey] ?? null;
      else if (kindChanged) merged[idKey] = null;
    } else if (Object.hasOwn(patch, idKey)) {
      merged[idKey] = patch[idKey] ?? null;
    }
  }
  if (Object.hasOwn(patch, "schedule_id")) merged.schedule_id = patch.schedule_id ?? null;
  return merged;
}

/** Options of checkRoutedFields. */
export interface CheckRoutedOptions {
  /** Fields the request carried: a rule broken by a field the caller did not send is reported at the one they did. */
  sent: ReadonlySet<string>;
  /** The resource's own kind and id, when it may itself be a route target (an extension cannot route to itself). */
  self?: { kind: string; id: string };
  /** Problems the caller already found (a bad e164), reported in the same 400. */
  details?: ErrorDetail[];
}

/**
 * Checks the routing fields of a write before anything is written: the main destination is set,
 * closed and holiday destinations come with a schedule, the schedule and every target exist in this
 * account (another account's id reads exactly like a missing one), and nothing routes to itself.
 * Throws one 400 listing every problem.
 */
export async function checkRoutedFields(db: DbOrTx, accountId: string, fields: RoutedFields, options: CheckRoutedOptions): Promise<void> {
  const details: ErrorDetail[] = [...(options.details ?? [])];
  const sentSlot = (slot: RoutedSlot) => options.sent.has(`${slot}_kind`) || options.sent.has(`${slot}_id`);
  for (const slot of ["closed_dest", "holiday_dest"] as const) {
    if (fields.schedule_id !== null || (fields[`${slot}_kind`] === null && fields[`${slot}_id`] === null)) continue;
    details.push(
      sentSlot(slot) || !options.sent.has("schedule_id")
        ? { path: `/${slot}_${fields[`${slot}_kind`] === null ? "id" : "kind"}`, message: `${slot} only applies with a schedule: set schedule_id too.` }
        : { path: "/schedule_id", message: `Without a schedule, ${slot} never applies: clear it too (send ${slot}_kind: null).` },
    );
  }
  if (options.self) {
    for (const slot of ROUTED_SLOTS) {
      if (fields[`${slot}_kind`] === options.self.kind && fields[`${slot}_id`] === options.self.id) {
        details.push({ path: `/${slot}_id`, message: `An ${options.self.kind} cannot route to itself.` });
      }
    }
  }
  if (fields.schedule_id !== null && !(await rowExists(db, "time_schedule", accountId, fields.schedule_id))) {
    details.push({ path: "/schedule_id", message: "No such schedule in this account." });
  }
  try {
    await checkRouteTargets(
      db,
      accountId,
      ROUTED_SLOTS.map((slot) => ({ prefix: slot, kind: fields[`${slot}_kind`], id: fields[`${slot}_id`], required: slot === "dest" })),
    );
  } catch (error) {
    if (!(error instanceof AppError) || error.code !== "validation_failed") throw error;
    details.push(...(error.extra.details as ErrorDetail[]));
  }
  if (details.length) throw validationFailed(details);
}

