import { bigint, bigserial, check, index, integer, jsonb, pgTable, primaryKey, text, uniqueIndex } from "drizzle-orm/pg-core";
import { sql } from "drizzle-orm";
import { epochMillis, flag } from "../db/columns.ts";
import type { CacSlot, RouteReply } from "../routing/route-types.ts";

/**
 * One call (CDR): written when /route admits or rejects it, completed by the edge's dialog events.
 * Times are epoch **milliseconds** (`*_ms`) so billsec and wait times are exact; the API shows epoch
 * seconds. `sip_call_id` is the SIP Call-ID and `sip_cseq` its INVITE's CSeq number, unique together per
 * account: a retransmitted /route (the same INVITE) finds its record (and the reply it got) instead of
 * making a second one, while a new INVITE that reuses a Call-ID (a retry after 422 or 488, or a phone
 * replaying an old call's Call-ID) is a call of its own, recorded, counted and billed.
 */
export const callRecords = pgTable(
  "call_record",
  {
    account_id: text("account_id").notNull(),
    /** call_… */
    id: text("id").notNull(),
    sip_call_id: text("sip_call_id").notNull(),
    /** The CSeq number of the INVITE (0 when the edge did not say: one record per Call-ID then). */
    sip_cseq: integer("sip_cseq").notNull().default(0),
    direction: text("direction").notNull(),
    from: text("from").notNull(),
    to: text("to").notNull(),
    user_id: text("user_id"),
    device_id: text("device_id"),
    number_id: text("number_id"),
    trunk_id: text("trunk_id"),
    queue_id: text("queue_id"),
    /** The answering agent (us_…), from the callee leg of the confirmed dialog. */
    agent_id: text("agent_id"),
    flow_id: text("flow_id"),
    /** routed, ringing, answered, completed, busy, no_answer, canceled, failed, rejected. */
    status: text("status").notNull(),
    /** SIP code of a reject (rejected) or of the dialog's end. */
    sip_code: integer("sip_code"),
    reject_reason: text("reject_reason"),
    answered: flag("answered").notNull().default(0),
    started_ms: epochMillis("started_ms").notNull(),
    ringing_ms: epochMillis("ringing_ms"),
    answered_ms: epochMillis("answered_ms"),
    ended_ms: epochMillis("ended_ms"),
    billsec: integer("billsec").notNull().default(0),
    hangup_cause: text("hangup_cause"),
    /** Micro-units of `currency` (1 USD = 1,000,000). */
    cost_micro: bigint("cost_micro", { mode: "number" }).notNull().default(0),
    currency: text("currency"),
    rate_plan_id: text("rate_plan_id"),
    recording_ids: jsonb("recording_ids").$type<string[]>().notNull().default(sql`'[]'::jsonb`),
    /** The edge's last report of the legs (caller leg, callee legs). */
    legs: jsonb("legs").$type<Array<Record<string, unknown>>>().notNull().default(sql`'[]'::jsonb`),
    /** CAC slots the call holds while it lasts (released on terminated). */
    slots: jsonb("slots").$type<CacSlot[]>().notNull().default(sql`'[]'::jsonb`),
    /** The /route reply, returned again to a retransmitted /route. */
    reply: jsonb("reply").$type<RouteReply>().notNull(),
  },
  (t) => [
    primaryKey({ columns: [t.account_id, t.id] }),
    // Call-ID first: it also finds a call by Call-ID alone (dialog events may arrive without an account).
    uniqueIndex("call_record_sip_call_id_uq").on(t.sip_call_id, t.account_id, t.sip_cseq),
    index("call_record_started_idx").on(t.account_id, t.started_ms, t.id),
    // Calls up now. Rejects are written ended, so the predicate names ended_ms alone: the updates of a
    // live call (ringing, answered) change no indexed column and stay HOT (see the migration's fillfactor).
    index("call_record_active_idx").on(t.account_id, t.started_ms).where(sql`${t.ended_ms} is null`),
    check("call_record_direction_chk", sql`${t.direction} in ('inbound','outbound','internal')`),
    check(
      "call_record_status_chk",
      sql`${t.status} in ('routed','ringing','answered','completed','busy','no_answer','canceled','failed','rejected')`,
    ),
    check("call_record_answered_chk", sql`${t.answered} in (0,1)`),
    check("call_record_billsec_chk", sql`${t.billsec} >= 0`),
  ],
);

export type CallRecordRow = typeof callRecords.$inferSelect;

/**
 * The ordered trace of one call: routing decisions at admission, then whatever later steps append
 * (flow nodes, commands, outcomes, errors). `id` comes from one sequence, so it orders the steps.
 */
export const callTraces = pgTable(
  "call_trace",
  {
    account_id: text("account_id").notNull(),
    id: bigserial("id", { mode: "number" }).notNull(),
    /** call_… */
    call_id: text("call_id").notNull(),
    at_ms: epochMillis("at_ms").notNull(),
    step: text("step").notNull(),
    result: text("result").notNull(),
    data: jsonb("data").$type<Record<string, unknown>>(),
  },
  // One index: a call's steps in order are what is read, and each step written costs one index entry.
  (t) => [primaryKey({ columns: [t.account_id, t.call_id, t.id] })],
);

export type CallTraceRow = typeof callTraces.$inferSelect;
