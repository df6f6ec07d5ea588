/**
 * Use cases on queues, their members and their in-queue DTMF options. Each takes the database (or a
 * transaction) and the account explicitly; none knows about HTTP. Every check runs before the first
 * write, so a refused request changes nothing.
 */
import type { DbOrTx } from "../db/db.ts";
import { nowSeconds } from "../db/columns.ts";
import { AppError, conflict, isUniqueViolation, notFound, validationFailed, type ErrorDetail } from "../errors/app-error.ts";
import { newId } from "../ids/ids.ts";
import { decodeCursor, toPage } from "../pagination/pagination.ts";
import { checkRouteTargets, type RouteTargetSlot } from "../routing/route-target.ts";
import { assertNotInUse } from "../routing/references.ts";
import type { SecretStore } from "../secrets/secrets.service.ts";
import type { QueueModel } from "./queues.model.ts";
import { QUEUE_SLOTS, type AgentQueueAssignmentRow, type InQueueOptionRow, type NewQueueRow, type QueueRow } from "./queues.schema.ts";
import { DEFAULT_KPI_WINDOW_SEC, queueKpis } from "./queue-kpis.ts";
import {
  countOptionRows,
  deleteMemberRow,
  deleteMemberRows,
  deleteOptionRow,
  deleteOptionRows,
  deleteQueueRow,
  findMemberRow,
  findOptionRow,
  findQueue,
  findUserAgentFlag,
  insertMemberRow,
  insertQueue,
  listMemberRows,
  listOptionRows,
  listQueueRows,
  updateMemberRow,
  updateQueueRow,
  upsertOptionRow,
} from "./queues.store.ts";
import { rowExists } from "../db/row-exists.ts";

/** Most options a queue can have: one per key of a phone keypad. */
export const MAX_QUEUE_OPTIONS = 12;

/** Keys in the order option lists show them. */
const DIGIT_ORDER = "0123456789*#";

type SlotColumns = { [K in `${(typeof QUEUE_SLOTS)[number]}_${"kind" | "id"}`]: string | null };

function slotValues(row: QueueRow): SlotColumns {
  const out = {} as SlotColumns;
  for (const slot of QUEUE_SLOTS) {
    out[`${slot}_kind`] = row[`${slot}_kind`];
    out[`${slot}_id`] = row[`${slot}_id`];
  }
  return out;
}

/** Maps a row to the API shape (every field, fixed order). */
export function toQueue(row: QueueRow): QueueModel.Queue {
  return {
    id: row.id,
    name: row.name,
    strategy: row.strategy as QueueModel.Queue["strategy"],
    agent_ring_timeout_sec: row.agent_ring_timeout_sec,
    max_wait_sec: row.max_wait_sec,
    wrap_up_sec: row.wrap_up_sec,
    max_no_answer: row.max_no_answer,
    announce_position: row.announce_position === 1 ? 1 : 0,
    announce_first_sec: row.announce_first_sec,
    announce_interval_sec: row.announce_interval_sec,
    moh_mode: row.moh_mode as QueueModel.Queue["moh_mode"],
    moh_media_id: row.moh_media_id,
    language: row.language,
    max_queued: row.max_queued,
    ewt_threshold_sec: row.ewt_threshold_sec,
    ewt_aht_sec: row.ewt_aht_sec,
    schedule_id: row.schedule_id,
    ...slotValues(row),
    created_at: row.created_at,
    updated_at: row.updated_at,
  };
}

/** Maps a membership row to the API shape. */
export function toMember(row: AgentQueueAssignmentRow): QueueModel.Member {
  return {
    user_id: row.user_id,
    tier_level: row.tier_level,
    position: row.position,
    delay_sec: row.delay_sec,
    mode: row.mode as QueueModel.Member["mode"],
    created_at: row.created_at,
  };
}

/** Maps an option row to the API shape: whether a secret is set, never the secret or its ref. */
export function toOption(row: InQueueOptionRow): QueueModel.Option {
  return {
    digit: row.digit,
    action: row.action as QueueModel.Option["action"],
    dest_kind: row.dest_kind,
    dest_id: row.dest_id,
    webhook_url: row.webhook_url,
    has_webhook_secret: row.webhook_secret_ref ? 1 : 0,
    stay_in_queue: row.stay_in_queue === 1 ? 1 : 0,
    prompt_media_id: row.prompt_media_id,
    label: row.label,
  };
}

function byKeypadOrder(a: InQueueOptionRow, b: InQueueOptionRow): number {
  return DIGIT_ORDER.indexOf(a.digit) - DIGIT_ORDER.indexOf(b.digit);
}

async function toDetail(db: DbOrTx, row: QueueRow): Promise<QueueModel.QueueDetail> {
  const members = await listMemberRows(db, row.account_id, row.id);
  const options = await listOptionRows(db, row.account_id, row.id);
  return { ...toQueue(row), members: members.map(toMember), options: options.sort(byKeypadOrder).map(toOption) };
}

/** Runs the route-target check and returns its problems instead of throwing, so they join ours. */
async function routeTargetProblems(db: DbOrTx, accountId: string, slots: RouteTargetSlot[]): Promise<ErrorDetail[]> {
  try {
    await checkRouteTargets(db, accountId, slots);
    return [];
  } catch (error) {
    if (error instanceof AppError && error.code === "validation_failed") return (error.extra.details as ErrorDetail[]) ?? [];
    throw error;
  }
}

/**
 * Every rule a queue's settings must meet as a whole, on the values a write will leave: targets exist
 * and are not the queue itself, deflect slots have what triggers them, referenced media and schedule
 * exist in the account. Throws one 400 listing every problem.
 */
async function checkQueueSettings(db: DbOrTx, accountId: string, queueId: string, q: NewQueueRow): Promise<void> {
  const details: ErrorDetail[] = [];
  const slots: RouteTargetSlot[] = QUEUE_SLOTS.map((prefix) => ({ prefix, kind: q[`${prefix}_kind`], id: q[`${prefix}_id`] }));
  for (const slot of slots) {
    if (slot.kind === "queue" && slot.id === queueId) details.push({ path: `/${slot.prefix}_id`, message: "A queue cannot route to itself." });
  }
  if (q.queue_full_dest_kind && q.max_queued == null) {
    details.push({ path: "/max_queued", message: "queue_full_dest needs max_queued: without a cap the queue is never full." });
  }
  if (q.ewt_dest_kind && q.ewt_threshold_sec == null) {
    details.push({ path: "/ewt_threshold_sec", message: "ewt_dest needs ewt_threshold_sec: the wait above which callers are sent there." });
  }
  if ((q.closed_dest_kind || q.holiday_dest_kind) && !q.schedule_id) {
    details.push({ path: "/schedule_id", message: "closed_dest and holiday_dest need a schedule that says when the queue is closed." });
  }
  if (q.moh_mode === "file" && !q.moh_media_id) details.push({ path: "/moh_media_id", message: "moh_mode file needs moh_media_id." });
  if (q.moh_media_id && !(await rowExists(db, "media_file", accountId, q.moh_media_id))) {
    details.push({ path: "/moh_media_id", message: "No such media file in this account." });
  }
  if (q.schedule_id && !(await rowExists(db, "time_schedule", accountId, q.schedule_id))) {
    details.push({ path: "/schedule_id", message: "No such schedule in this account." });
  }
  // A slot already refused (self-routing) is not looked up again: one message per problem.
  const reported = new Set(details.map((d) => d.path));
  details.push(...(await routeTargetProblems(db, accountId, slots.filter((s) => !reported.has(`/${s.prefix}_id`)))));
  if (details.length) throw validationFailed(details);
}

/** Column defaults, so the rules see the values an insert will store. */
const QUEUE_DEFAULTS = { strategy: "longest_idle", moh_mode: "stream" } satisfies Partial<NewQueueRow>;

function nameTaken(error: unknown): never {
  if (isUniqueViolation(error)) throw conflict("A queue with this name already exists.", { field: "name" });
  throw error;
}

/**
 * Creates a queue; unset settings take their defaults (longest_idle, 20 s ring, no wait limit, …).
 * @example await createQueue(db, "acc_…", { name: "Support", strategy: "ring_all" })
 */
export async function createQueue(db: DbOrTx, accountId: string, input: QueueModel.Create): Promise<QueueModel.QueueDetail> {
  const now = nowSeconds();
  const row: NewQueueRow = { ...input, account_id: accountId, id: newId("q"), created_at: now, updated_at: now };
  await checkQueueSettings(db, accountId, row.id, { ...QUEUE_DEFAULTS, ...row });
  try {
    return { ...toQueue(await insertQueue(db, row)), members: [], options: [] };
  } catch (error) {
    return nameTaken(error);
  }
}

/** One queue with its members (tier, then position) and options (keypad order). */
export async function getQueue(db: DbOrTx, accountId: string, id: string): Promise<QueueModel.QueueDetail> {
  const row = await findQueue(db, accountId, id);
  if (!row) throw notFound("queue");
  return toDetail(db, row);
}

/** Options of listQueues. */
export interface ListQueuesOptions {
  limit: number;
  cursor?: string;
  /** Name prefix, case-insensitive. */
  q?: string;
  /** Only queues this user is a member of. */
  userId?: string;
  /** Start of the KPI window (epoch seconds); default 24 hours ago. */
  since?: number;
}

/** Queues of the account, keyset-paginated, each with its rolling KPIs. */
export async function listQueues(db: DbOrTx, accountId: string, options: ListQueuesOptions): Promise<{ data: QueueModel.QueueWithKpis[]; next_cursor?: string }> {
  const rows = await listQueueRows(db, accountId, { namePrefix: options.q, memberUserId: options.userId }, decodeCursor(options.cursor, "q"), options.limit);
  const page = toPage(rows, options.limit, toQueue);
  const since = options.since ?? nowSeconds() - DEFAULT_KPI_WINDOW_SEC;
  const kpis = await queueKpis(db, accountId, page.data.map((q) => q.id), since);
  const data = page.data.map((q) => ({ ...q, kpis: kpis.get(q.id)! }));
  return page.next_cursor ? { data, next_cursor: page.next_cursor } : { data };
}

/** Most queue configs GET /v1/live lists (oldest first); a larger account pages GET /v1/queues. */
export const MAX_LIVE_QUEUES = 1000;

/** Every queue's config (oldest first, at most MAX_LIVE_QUEUES): the queues of GET /v1/live. */
export async function listQueueConfigs(db: DbOrTx, accountId: string): Promise<QueueModel.Queue[]> {
  return (await listQueueRows(db, accountId, {}, null, MAX_LIVE_QUEUES)).map(toQueue);
}

/**
 * Applies the sent fields, then checks the queue as a whole. Sending a slot's kind as null or hangup
 * without its id clears the id too, so a slot can be emptied with one field.
 */
export async function updateQueue(db: DbOrTx, accountId: string, id: string, patch: QueueModel.Update): Promise<QueueModel.QueueDetail> {
  try {
    return await db.transaction(async (tx) => {
      const row = await findQueue(tx, accountId, id, { forUpdate: true });
      if (!row) throw notFound("queue");
      const changes: Partial<NewQueueRow> = { ...patch };
      for (const slot of QUEUE_SLOTS) {
        const kind = changes[`${slot}_kind`];
        if ((kind === null || kind === "hangup") && !(`${slot}_id` in changes)) changes[`${slot}_id`] = null;
      }
      const merged: NewQueueRow = { ...row, ...changes };
      await checkQueueSettings(tx, accountId, id, merged);
      const updated = await updateQueueRow(tx, accountId, id, { ...changes, updated_at: nowSeconds() });
      if (!updated) throw notFound("queue");
      return toDetail(tx, updated);
    });
  } catch (error) {
    return nameTaken(error);
  }
}

/**
 * Deletes a queue with its members and options (and the options' webhook secrets) in one
 * transaction. Refused with 409 while a number, extension, other queue, … still routes to it.
 */
export async function deleteQueue(db: DbOrTx, secrets: SecretStore, accountId: string, id: string): Promise<void> {
  await db.transaction(async (tx) => {
    const row = await findQueue(tx, accountId, id, { forUpdate: true });
    if (!row) throw notFound("queue");
    await assertNotInUse(tx, accountId, "queue", id);
    await deleteMemberRows(tx, accountId, id);
    for (const ref of await deleteOptionRows(tx, accountId, id)) await secrets.remove(tx, accountId, ref);
    await deleteQueueRow(tx, accountId, id);
  });
}

/** Members of a queue by tier_level, then position. */
export async function listQueueMembers(db: DbOrTx, accountId: string, queueId: string): Promise<QueueModel.Member[]> {
  if (!(await findQueue(db, accountId, queueId))) throw notFound("queue");
  return (await listMemberRows(db, accountId, queueId)).map(toMember);
}

/**
 * Adds an agent to a queue, or changes the sent fields of an existing membership (omitted fields keep
 * their value; a new member gets the defaults). The user must be an agent of this account.
 * @returns the member, and whether it was added (201) rather than updated (200).
 */
export async function upsertQueueMember(
  db: DbOrTx,
  accountId: string,
  queueId: string,
  input: QueueModel.MemberUpsert,
): Promise<{ member: QueueModel.Member; created: boolean }> {
  return db.transaction(async (tx) => {
    if (!(await findQueue(tx, accountId, queueId, { forUpdate: true }))) throw notFound("queue");
    const user = await findUserAgentFlag(tx, accountId, input.user_id);
    if (!user) throw validationFailed([{ path: "/user_id", message: "No such user in this account." }]);
    if (user.is_agent !== 1) throw validationFailed([{ path: "/user_id", message: "This user is not an agent (is_agent 0); make it one first." }]);
    const { user_id: userId, ...fields } = input;
    const existing = await findMemberRow(tx, accountId, queueId, userId);
    if (existing) {
      const updated = Object.keys(fields).length ? await updateMemberRow(tx, accountId, queueId, userId, fields) : existing;
      return { member: toMember(updated ?? existing), created: false };
    }
    const row = await insertMemberRow(tx, { account_id: accountId, queue_id: queueId, user_id: userId, ...fields, created_at: nowSeconds() });
    return { member: toMember(row), created: true };
  });
}

/** Removes an agent from a queue; 404 when the queue or the membership does not exist. */
export async function removeQueueMember(db: DbOrTx, accountId: string, queueId: string, userId: string): Promise<void> {
  await db.transaction(async (tx) => {
    if (!(await findQueue(tx, accountId, queueId, { forUpdate: true }))) throw notFound("queue");
    if (!(await deleteMemberRow(tx, accountId, queueId, userId))) throw notFound("queue member");
  });
}

/** True when `url` is an absolute https URL with a host. */
function isHttpsUrl(url: string): boolean {
  try {
    const parsed = new URL(url);
    return parsed.protocol === "https:" && parsed.hostname.length > 0 && !parsed.username && !parsed.password;
  } catch {
    return false; // TypeError: not a URL at all.
  }
}

/** The rules of one option, on its own: what each action takes and refuses. */
async function checkOption(db: DbOrTx, accountId: string, queueId: string, input: QueueModel.OptionUpsert): Promise<void> {
  const details: ErrorDetail[] = [];
  const destKind = input.dest_kind ?? null;
  const destId = input.dest_id ?? null;
  const webhookUrl = input.webhook_url ?? null;
  const { action } = input;
  if (action === "hangup" && (destKind !== null || destId !== null)) {
    details.push({ path: destKind !== null ? "/dest_kind" : "/dest_id", message: "hangup takes no destination." });
  }
  if (action === "webhook") {
    if (webhookUrl === null) details.push({ path: "/webhook_url", message: "action webhook needs webhook_url." });
  } else {
    if (webhookUrl !== null) details.push({ path: "/webhook_url", message: "webhook_url is only for action webhook." });
    if (input.webhook_secret != null) details.push({ path: "/webhook_secret", message: "webhook_secret is only for action webhook." });
  }
  if (webhookUrl !== null && !isHttpsUrl(webhookUrl)) details.push({ path: "/webhook_url", message: "Must be an https:// URL with a host and no credentials." });
  if (input.stay_in_queue === 1 && (action === "deflect" || action === "hangup")) {
    details.push({ path: "/stay_in_queue", message: `A caller cannot stay in the queue after ${action}.` });
  }
  if (destKind === "queue" && destId === queueId) details.push({ path: "/dest_id", message: "A queue cannot route to itself." });
  if (input.prompt_media_id && !(await rowExists(db, "media_file", accountId, input.prompt_media_id))) {
    details.push({ path: "/prompt_media_id", message: "No such media file in this account." });
  }
  if (action !== "hangup" && !details.some((d) => d.path === "/dest_id" || d.path === "/dest_kind")) {
    details.push(...(await routeTargetProblems(db, accountId, [{ prefix: "dest", kind: destKind, id: destId, required: action === "route" || action === "deflect" }])));
  }
  if (details.length) throw validationFailed(details);
}

/**
 * Sets the option of one key, replacing any option the key had. The webhook secret is stored in the
 * secret store; the row keeps only its ref. Omitting webhook_secret keeps a webhook option's secret,
 * null removes it; an option that is not a webhook never keeps one.
 * @returns the option, and whether the key had none before (201) rather than being replaced (200).
 */
export async function upsertQueueOption(
  db: DbOrTx,
  secrets: SecretStore,
  accountId: string,
  queueId: string,
  input: QueueModel.OptionUpsert,
): Promise<{ option: QueueModel.Option; created: boolean }> {
  return db.transaction(async (tx) => {
    if (!(await findQueue(tx, accountId, queueId, { forUpdate: true }))) throw notFound("queue");
    await checkOption(tx, accountId, queueId, input);
    const existing = await findOptionRow(tx, accountId, queueId, input.digit);
    if (!existing && (await countOptionRows(tx, accountId, queueId)) >= MAX_QUEUE_OPTIONS) {
      throw validationFailed([{ path: "/digit", message: `A queue has at most ${MAX_QUEUE_OPTIONS} options.` }]);
    }
    const oldRef = existing?.webhook_secret_ref ?? null;
    let ref: string | null = null;
    if (input.action === "webhook" && input.webhook_secret !== null) {
      if (input.webhook_secret === undefined) ref = oldRef;
      else if (oldRef && (await secrets.replace(tx, accountId, oldRef, input.webhook_secret))) ref = oldRef;
      else ref = await secrets.put(tx, accountId, input.webhook_secret);
    }
    if (oldRef && ref !== oldRef) await secrets.remove(tx, accountId, oldRef);
    const row = await upsertOptionRow(tx, {
      account_id: accountId,
      queue_id: queueId,
      digit: input.digit,
      action: input.action,
      dest_kind: input.dest_kind ?? null,
      dest_id: input.dest_id ?? null,
      webhook_url: input.webhook_url ?? null,
      webhook_secret_ref: ref,
      stay_in_queue: input.stay_in_queue ?? 0,
      prompt_media_id: input.prompt_media_id ?? null,
      label: input.label ?? null,
    });
    return { option: toOption(row), created: !existing };
  });
}

/** Removes the option of one key, and its webhook secret; 404 when the queue or the option does not exist. */
export async function removeQueueOption(db: DbOrTx, secrets: SecretStore, accountId: string, queueId: string, digit: string): Promise<void> {
  await db.transaction(async (tx) => {
    if (!(await findQueue(tx, accountId, queueId, { forUpdate: true }))) throw notFound("queue");
    const removed = await deleteOptionRow(tx, accountId, queueId, digit);
    if (!removed) throw notFound("queue option");
    if (removed.webhook_secret_ref) await secrets.remove(tx, accountId, removed.webhook_secret_ref);
  });
}

/**
 * The key a path segment names: `*` and `#` arrive URL-encoded (%2A, %23) or as the words `star`
 * and `hash`, since a bare # would end the path. Null when the segment names no key.
 * @example parseDigitParam("%23") // "#"
 */
export function parseDigitParam(segment: string): string | null {
  let value = segment;
  if (value.includes("%")) {
    try {
      value = decodeURIComponent(value);
    } catch {
      return null; // URIError: a malformed escape names no key.
    }
  }
  const word = value.toLowerCase();
  if (word === "star") value = "*";
  else if (word === "hash") value = "#";
  return /^[0-9*#]$/.test(value) ? value : null;
}
