/**
 * Route targets (SPEC.md convention 8): the trio dest_kind / dest_id / dest_xform says where a call
 * goes. Every resource that routes (numbers, extensions, ring groups, queues, in-queue options, the
 * account's DID default, forwards) declares its slots with `routeTargetFields` and checks them on
 * write with `checkRouteTargets`, so a target always exists, in the same account, and is of its kind.
 */
import { Type as T, type TSchema } from "@sinclair/typebox";
import type { DbOrTx } from "../db/db.ts";
import { validationFailed, type ErrorDetail } from "../errors/app-error.ts";
import { CallerNameText, Nullable } from "../validation/fields.ts";
import { rowExists, type TenantTable } from "../db/row-exists.ts";

/** Every kind of route target, with the table and id prefix of the resource it names. */
export const DEST_KINDS = {
  flow: { table: "flow", prefix: "flow", label: "flow" },
  user: { table: "app_user", prefix: "us", label: "user" },
  extension: { table: "extension", prefix: "ext", label: "extension" },
  ring_group: { table: "ring_group", prefix: "rg", label: "ring group" },
  queue: { table: "queue", prefix: "q", label: "queue" },
  voicemail: { table: "voicemail", prefix: "vm", label: "voicemail box" },
  conference: { table: "conference", prefix: "conf", label: "conference" },
  forward: { table: "forward", prefix: "fwd", label: "forward" },
  hangup: { table: null, prefix: null, label: "hangup" },
  feature: { table: null, prefix: null, label: "feature code" },
} as const;

export type DestKind = keyof typeof DEST_KINDS;

/** Feature codes an extension may route to (dest_kind feature, dest_id one of these). */
export const FEATURE_CODES = {
  voicemail_main: "Check voicemail: the caller's own box, PIN asked.",
  voicemail_direct: "Leave a message in a box without ringing its user.",
  call_pickup: "Pick up a call ringing in the caller's group.",
  directed_pickup: "Pick up a call ringing on a given extension.",
  dnd_on: "Turn do-not-disturb on.",
  dnd_off: "Turn do-not-disturb off.",
  forward_on: "Turn unconditional forwarding on.",
  forward_off: "Turn forwarding off.",
  agent_login: "Agent logs in to their queues.",
  agent_logout: "Agent logs out of their queues.",
  agent_pause: "Agent pauses.",
  agent_unpause: "Agent becomes available again.",
  park: "Park the current call.",
  unpark: "Retrieve a parked call.",
  intercom: "Intercom (auto-answer) call to an extension.",
  echo_test: "Echo test: hear yourself, to check audio.",
} as const;

const ROUTABLE: DestKind[] = ["flow", "user", "extension", "ring_group", "queue", "voicemail", "conference", "forward", "hangup"];

/** A transform applied to the call on its way to the target. */
export const DestXform = T.Object(
  {
    strip_digits: T.Optional(T.Integer({ minimum: 0, maximum: 15, description: "Digits removed from the start of the dialed number." })),
    prepend: T.Optional(T.String({ pattern: "^[0-9*#+]{1,15}$", description: "Digits put in front of the dialed number." })),
    cid_name_prefix: T.Optional(CallerNameText({ minLength: 0, description: "Text put in front of the caller's name (e.g. 'Sales: '); one line, up to 40 characters." })),
    vars: T.Optional(
      T.Record(T.String({ pattern: "^[a-z][a-z0-9_]{0,39}$" }), T.String({ maxLength: 200 }), {
        additionalProperties: false,
        maxProperties: 50,
        description: "Variables handed to the target (a flow reads them); names match ^[a-z][a-z0-9_]{0,39}$.",
      }),
    ),
  },
  { additionalProperties: false, description: "Transform applied on the way to the target." },
);

/** The kind schema of a slot: every routable kind, plus `feature` where allowed (extensions). */
export function destKindSchema(allowFeature = false) {
  const kinds = allowFeature ? [...ROUTABLE, "feature" as const] : ROUTABLE;
  return T.Union(kinds.map((k) => T.Literal(k)), { description: `Where the call goes: ${kinds.join(", ")}.` });
}

/**
 * Request fields of one slot: `<prefix>_kind`, `<prefix>_id` and (with xform) `<prefix>_xform`,
 * all optional and nullable. `prefix` is `dest`, `closed_dest`, `timeout_dest`, …
 */
export function routeTargetFields(prefix: string, options: { allowFeature?: boolean; xform?: boolean } = {}): Record<string, TSchema> {
  const fields: Record<string, TSchema> = {
    [`${prefix}_kind`]: T.Optional(Nullable(destKindSchema(options.allowFeature))),
    [`${prefix}_id`]: T.Optional(Nullable(T.String({ minLength: 1, maxLength: 64, description: "Id of the target (a feature code for feature; null for hangup)." }))),
  };
  if (options.xform) fields[`${prefix}_xform`] = T.Optional(Nullable(DestXform));
  return fields;
}

/** Reply fields of one slot: always present, null when unset. */
export function routeTargetReplyFields(prefix: string, options: { xform?: boolean } = {}): Record<string, TSchema> {
  const fields: Record<string, TSchema> = {
    [`${prefix}_kind`]: Nullable(T.String()),
    [`${prefix}_id`]: Nullable(T.String()),
  };
  if (options.xform) fields[`${prefix}_xform`] = Nullable(DestXform);
  return fields;
}

/** One slot's values as a write will leave them (after merging a PATCH onto the stored row). */
export interface RouteTargetSlot {
  /** The slot's column prefix (`dest`, `closed_dest`, …): error paths are `/<prefix>_kind`, `/<prefix>_id`. */
  prefix: string;
  kind: string | null | undefined;
  id: string | null | undefined;
  /** True when the slot must be set (a number's main destination). */
  required?: boolean;
}

/**
 * Checks every slot of a write: kind and id go together, the target exists in this account and is of
 * that kind (another account's id is "no such", exactly like a missing one), hangup takes no id,
 * feature takes a known code. Throws one 400 listing every problem.
 */
export async function checkRouteTargets(db: DbOrTx, accountId: string, slots: RouteTargetSlot[]): Promise<void> {
  const details: ErrorDetail[] = [];
  const lookups: Array<{ slot: RouteTargetSlot; table: TenantTable; id: string; label: string }> = [];
  for (const slot of slots) {
    const kind = slot.kind ?? null;
    const id = slot.id ?? null;
    const at = (field: "kind" | "id") => `/${slot.prefix}_${field}`;
    if (kind === null) {
      if (id !== null) details.push({ path: at("kind"), message: `${slot.prefix}_kind is required with ${slot.prefix}_id.` });
      else if (slot.required) details.push({ path: at("kind"), message: "A destination is required." });
      continue;
    }
    const spec = DEST_KINDS[kind as DestKind];
    if (!spec) {
      details.push({ path: at("kind"), message: `Unknown destination kind '${kind}'.` });
      continue;
    }
    if (kind === "hangup") {
      if (id !== null) details.push({ path: at("id"), message: "hangup takes no destination id." });
      continue;
    }
    if (id === null) {
      details.push({ path: at("id"), message: `A ${spec.label} id is required for ${slot.prefix}_kind ${kind}.` });
      continue;
    }
    if (kind === "feature") {
      if (!Object.hasOwn(FEATURE_CODES, id)) details.push({ path: at("id"), message: `Unknown feature code; one of ${Object.keys(FEATURE_CODES).join(", ")}.` });
      continue;
    }
    if (spec.prefix && !id.startsWith(`${spec.prefix}_`)) {
      details.push({ path: at("id"), message: `Not a ${spec.label} id: ${spec.label} ids start with ${spec.prefix}_.`.replace(/^Not a ([aeiou])/, "Not an $1") });
      continue;
    }
    lookups.push({ slot, table: spec.table!, id, label: spec.label });
  }
  for (const lookup of lookups) {
    if (!(await rowExists(db, lookup.table, accountId, lookup.id))) details.push({ path: `/${lookup.slot.prefix}_id`, message: `No such ${lookup.label} in this account.` });
  }
  if (details.length) throw validationFailed(details);
}
