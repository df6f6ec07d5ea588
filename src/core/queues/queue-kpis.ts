/**
 * Rolling queue KPIs for GET /v1/queues. They are computed from call records (CDRs), which the call
 * path does not write yet: until it does, every queue honestly reports no calls (counts 0, averages
 * and percentages null). The signature is the one the CDR-backed version will keep, so the list
 * route and its reply model do not change when it lands.
 */
import type { DbOrTx } from "../db/db.ts";
import type { QueueModel } from "./queues.model.ts";

/** How far back the list's KPIs look when the request gives no `since`: the last 24 hours. */
export const DEFAULT_KPI_WINDOW_SEC = 86_400;

/**
 * KPIs of each queue in `queueIds` for calls that entered it at or after `since` (epoch seconds),
 * keyed by queue id; every id requested has an entry.
 *
 * To implement once CDRs exist: one grouped query over this account's call records with a queue_id
 * in `queueIds` and a queue-entry time ≥ `since`: offered = calls that entered the queue, answered =
 * bridged to an agent, abandoned = caller hung up while waiting, avg_wait_sec = mean wait of answered
 * calls, service_level_pct = share of offered calls answered within the queue's service-level target.
 *
 * @example const kpis = await queueKpis(db, "acc_…", ["q_…"], nowSeconds() - 3600);
 */
export async function queueKpis(db: DbOrTx, accountId: string, queueIds: readonly string[], since: number): Promise<Map<string, QueueModel.Kpis>> {
  void db; // Not read yet: there are no call records to aggregate (see above).
  void accountId;
  const kpis = new Map<string, QueueModel.Kpis>();
  for (const id of queueIds) {
    kpis.set(id, { since, calls_offered: 0, calls_answered: 0, calls_abandoned: 0, avg_wait_sec: null, service_level_pct: null });
  }
  return kpis;
}
