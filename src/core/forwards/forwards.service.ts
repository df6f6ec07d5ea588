/**
 * Forwards as a section of the config file. A forward is keyed by its owner (a user by username, or
 * a DID by E.164) and its trigger, so editing one keeps its id: numbers and extensions that route to
 * it (dest_kind forward) keep working, and deleting one they still use is refused.
 */
import { newId } from "../ids/ids.ts";
import { AppError } from "../errors/app-error.ts";
import { normalizeE164 } from "../validation/fields.ts";
import { checkRouteTargets } from "../routing/route-target.ts";
import { findUsages } from "../routing/references.ts";
import type { ForwardModel } from "./forwards.model.ts";
import { deleteForward, insertForward, listForwards, updateForward } from "./forwards.store.ts";
import { byText, orNull, rejectDuplicateKeys, type Desired, type Section, type WriteContext } from "../config-file/section.ts";

/** A forward in canonical form. Exactly one of user / did is set. */
export type ForwardCanonical = {
  user: string | null;
  did: string | null;
  trigger: string;
  number: string;
  timeout_sec: number | null;
  cid_mode: string;
  cid_number: string | null;
  confirm: number;
  overflow_dest_kind: string | null;
  overflow_dest_id: string | null;
};

const TRIGGER_ORDER = ["always", "busy", "no_answer", "unreachable"];

/** The forward section. */
export const forwardSection: Section<ForwardCanonical> = {
  name: "forwards",
  label: "forward",
  keyFields: ["user", "did", "trigger"],
  keyOf: (e) => (e.user !== null ? `user ${e.user} ${e.trigger}` : `did ${e.did} ${e.trigger}`),
  compare: (a, b) =>
    (a.user === null ? 1 : 0) - (b.user === null ? 1 : 0) ||
    byText(a.user ?? a.did ?? "", b.user ?? b.did ?? "") ||
    TRIGGER_ORDER.indexOf(a.trigger) - TRIGGER_ORDER.indexOf(b.trigger),

  async canonicalize(entries, ctx) {
    const out: Array<Desired<ForwardCanonical>> = [];
    // routeTargetFields spreads untyped slot fields into the model; their shape is fixed by the schema.
    type Raw = ForwardModel.ForwardEntry & { overflow_dest_kind?: string | null; overflow_dest_id?: string | null };
    for (const [i, raw] of (entries as Raw[]).entries()) {
      const at = `/forwards/${i}`;
      const err = (field: string, message: string) => ctx.errors.push({ path: `${at}/${field}`, message });
      const overflowKind = orNull(raw.overflow_dest_kind);
      const overflowId = orNull(raw.overflow_dest_id);
      const entry: ForwardCanonical = {
        user: raw.user ?? null,
        did: null,
        trigger: raw.trigger,
        number: normalizeE164(raw.number) ?? raw.number,
        timeout_sec: raw.trigger === "no_answer" ? (raw.timeout_sec ?? 20) : null,
        cid_mode: raw.cid_mode ?? "passthrough",
        cid_number: null,
        confirm: raw.confirm ?? 0,
        overflow_dest_kind: overflowKind,
        overflow_dest_id: overflowId,
      };
      if ((raw.user === undefined) === (raw.did === undefined)) {
        err("user", "Give exactly one of user (a username) or did (a number of the account).");
      } else if (raw.user !== undefined) {
        if (!ctx.book.userIdByName.has(raw.user)) err("user", `No user with username '${raw.user}' in this account.`);
      } else if (raw.did !== undefined) {
        entry.did = normalizeE164(raw.did);
        if (!entry.did) err("did", "Not an E.164 number.");
        else if (!ctx.book.numberIdByE164.has(entry.did)) err("did", `No number ${entry.did} in this account.`);
      }
      if (!normalizeE164(raw.number)) err("number", "Not an E.164 number.");
      if (raw.trigger !== "no_answer" && raw.timeout_sec !== undefined && raw.timeout_sec !== null) {
        err("timeout_sec", "timeout_sec only applies to the no_answer trigger.");
      }
      if (entry.cid_mode === "custom") {
        entry.cid_number = raw.cid_number ? normalizeE164(raw.cid_number) : null;
        if (!raw.cid_number) err("cid_number", "cid_mode custom needs cid_number.");
        else if (!entry.cid_number) err("cid_number", "Not an E.164 number.");
      } else if (raw.cid_number !== undefined && raw.cid_number !== null) {
        err("cid_number", "cid_number only applies with cid_mode custom.");
      }
      if (overflowKind === "forward") {
        err("overflow_dest_kind", "A forward cannot overflow to another forward (chains could loop); route to a user, queue, voicemail…");
      } else {
        try {
          await checkRouteTargets(ctx.db, ctx.accountId, [{ prefix: "overflow_dest", kind: overflowKind, id: overflowId }]);
        } catch (error) {
          if (!(error instanceof AppError) || error.code !== "validation_failed") throw error;
          for (const d of error.extra.details as Array<{ path: string; message: string }>) ctx.errors.push({ path: `${at}${d.path}`, message: d.message });
        }
      }
      out.push({ entry, at });
    }
    return rejectDuplicateKeys(this, out, ctx.errors, "trigger");
  },

  async load(db, accountId, book) {
    return (await listForwards(db, accountId)).map((row) => ({
      id: row.id,
      entry: {
        user: row.user_id === null ? null : (book.userNameById.get(row.user_id) ?? row.user_id),
        did: row.number_id === null ? null : (book.numberE164ById.get(row.number_id) ?? row.number_id),
        trigger: row.trigger,
        number: row.number,
        timeout_sec: row.timeout_sec,
        cid_mode: row.cid_mode,
        cid_number: row.cid_number,
        confirm: row.confirm,
        overflow_dest_kind: row.overflow_dest_kind,
        overflow_dest_id: row.overflow_dest_id,
      },
    }));
  },

  async checkDeletes(db, accountId, doomed) {
    const problems: Array<{ kind: string; id: string; message: string }> = [];
    for (const { id, entry } of doomed) {
      for (const usage of await findUsages(db, accountId, "forward", id)) {
        // Another forward of this account is about to change anyway; only outside users block.
        if (usage.kind === "forward") continue;
        problems.push({ kind: usage.kind, id: usage.id, message: `forward '${forwardSection.keyOf(entry)}' is still the destination of ${usage.kind} ${usage.id}` });
      }
    }
    return problems;
  },

  async create(tx, w, entry) {
    const id = newId("fwd");
    await insertForward(tx, { ...forwardColumns(entry, w), account_id: w.accountId, id, created_at: w.now, updated_at: w.now });
    return id;
  },

  async update(tx, w, id, entry) {
    await updateForward(tx, w.accountId, id, { ...forwardColumns(entry, w), updated_at: w.now });
  },

  async remove(tx, w, id) {
    await deleteForward(tx, w.accountId, id);
  },
};

function forwardColumns(e: ForwardCanonical, w: WriteContext) {
  const userId = e.user === null ? null : w.userIdByName.get(e.user);
  const numberId = e.did === null ? null : w.numberIdByE164.get(e.did);
  if (userId === undefined || numberId === undefined) throw new Error("forward owner unresolved after validation");
  return {
    user_id: userId,
    number_id: numberId,
    number: e.number,
    trigger: e.trigger,
    timeout_sec: e.timeout_sec,
    cid_mode: e.cid_mode,
    cid_number: e.cid_number,
    confirm: e.confirm,
    overflow_dest_kind: e.overflow_dest_kind,
    overflow_dest_id: e.overflow_dest_id,
  };
}
