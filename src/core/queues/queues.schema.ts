import { check, foreignKey, index, integer, pgTable, primaryKey, text, uniqueIndex } from "drizzle-orm/pg-core";
import { sql } from "drizzle-orm";
import { epochSeconds, flag } from "../db/columns.ts";

/** Distribution strategies a queue offers callers to its agents with. */
export const QUEUE_STRATEGIES = ["ring_all", "longest_idle", "round_robin", "top_down", "fewest_calls", "random", "sequential"] as const;
/** Where a queue's hold music comes from: the account's stream, or one media file. */
export const MOH_MODES = ["stream", "file"] as const;
/** How an agent came to be a member (SPEC.md section 3). */
export const MEMBER_MODES = ["static", "dynamic", "mandatory", "supervisor_managed"] as const;
/** What pressing a key while waiting does. */
export const OPTION_ACTIONS = ["route", "webhook", "deflect", "hangup"] as const;

/** Route-target kinds a queue slot or option may name (every kind but an extension's feature codes). */
export const QUEUE_DEST_KINDS = ["flow", "user", "extension", "ring_group", "queue", "voicemail", "conference", "forward", "hangup"] as const;

/** The queue's route-target slots (column prefixes), as listed in src/core/routing/references.ts. */
export const QUEUE_SLOTS = ["timeout_dest", "abandon_dest", "no_agents_dest", "queue_full_dest", "ewt_dest", "closed_dest", "holiday_dest"] as const;

const inList = (values: readonly string[]) => sql.raw(values.map((v) => `'${v}'`).join(","));

/**
 * ACD queues (SPEC.md section 2, Queue). Every `*_dest_kind` / `*_dest_id` pair is a route-target
 * slot listed in src/core/routing/references.ts, so deleting a target a queue uses is refused.
 */
export const queues = pgTable(
  "queue",
  {
    account_id: text("account_id").notNull(),
    id: text("id").notNull(),
    name: text("name").notNull(),
    strategy: text("strategy").notNull().default("longest_idle"),
    agent_ring_timeout_sec: integer("agent_ring_timeout_sec").notNull().default(20),
    /** null = callers wait without limit. */
    max_wait_sec: integer("max_wait_sec"),
    wrap_up_sec: integer("wrap_up_sec").notNull().default(0),
    /** Missed offers in a row before the agent is paused; 0 = never. */
    max_no_answer: integer("max_no_answer").notNull().default(0),
    announce_position: flag("announce_position").notNull().default(0),
    announce_first_sec: integer("announce_first_sec").notNull().default(30),
    /** 0 = announce once (at announce_first_sec) and never again. */
    announce_interval_sec: integer("announce_interval_sec").notNull().default(60),
    moh_mode: text("moh_mode").notNull().default("stream"),
    moh_media_id: text("moh_media_id"),
    /** null = the account's language. */
    language: text("language"),
    timeout_dest_kind: text("timeout_dest_kind"),
    timeout_dest_id: text("timeout_dest_id"),
    abandon_dest_kind: text("abandon_dest_kind"),
    abandon_dest_id: text("abandon_dest_id"),
    no_agents_dest_kind: text("no_agents_dest_kind"),
    no_agents_dest_id: text("no_agents_dest_id"),
    /** null = no cap on waiting callers. */
    max_queued: integer("max_queued"),
    queue_full_dest_kind: text("queue_full_dest_kind"),
    queue_full_dest_id: text("queue_full_dest_id"),
    ewt_threshold_sec: integer("ewt_threshold_sec"),
    ewt_aht_sec: integer("ewt_aht_sec"),
    ewt_dest_kind: text("ewt_dest_kind"),
    ewt_dest_id: text("ewt_dest_id"),
    schedule_id: text("schedule_id"),
    closed_dest_kind: text("closed_dest_kind"),
    closed_dest_id: text("closed_dest_id"),
    holiday_dest_kind: text("holiday_dest_kind"),
    holiday_dest_id: text("holiday_dest_id"),
    created_at: epochSeconds("created_at").notNull(),
    updated_at: epochSeconds("updated_at").notNull(),
  },
  (t) => [
    primaryKey({ columns: [t.account_id, t.id] }),
    // Names are how people pick a queue (reports, the wallboard): unique per account, whatever the case.
    uniqueIndex("queue_account_name_uq").on(t.account_id, sql`lower(${t.name})`),
    check("queue_strategy_chk", sql`${t.strategy} in (${inList(QUEUE_STRATEGIES)})`),
    check("queue_moh_mode_chk", sql`${t.moh_mode} in (${inList(MOH_MODES)})`),
    check("queue_announce_position_chk", sql`${t.announce_position} in (0,1)`),
    check("queue_agent_ring_timeout_chk", sql`${t.agent_ring_timeout_sec} between 5 and 300`),
    check("queue_max_wait_chk", sql`${t.max_wait_sec} is null or ${t.max_wait_sec} between 10 and 86400`),
    check("queue_wrap_up_chk", sql`${t.wrap_up_sec} between 0 and 3600`),
    check("queue_max_no_answer_chk", sql`${t.max_no_answer} between 0 and 100`),
    check("queue_max_queued_chk", sql`${t.max_queued} is null or ${t.max_queued} >= 1`),
    check("queue_ewt_threshold_chk", sql`${t.ewt_threshold_sec} is null or ${t.ewt_threshold_sec} >= 1`),
    check("queue_ewt_aht_chk", sql`${t.ewt_aht_sec} is null or ${t.ewt_aht_sec} >= 1`),
    ...QUEUE_SLOTS.map((prefix) => {
      const column = t[`${prefix}_kind`];
      return check(`queue_${prefix}_kind_chk`, sql`${column} is null or ${column} in (${inList(QUEUE_DEST_KINDS)})`);
    }),
  ],
);

export type QueueRow = typeof queues.$inferSelect;
export type NewQueueRow = typeof queues.$inferInsert;

/** Agents of a queue (SPEC.md agent_queue_assignment). A user is in a queue at most once. */
export const agentQueueAssignments = pgTable(
  "agent_queue_assignment",
  {
    account_id: text("account_id").notNull(),
    queue_id: text("queue_id").notNull(),
    user_id: text("user_id").notNull(),
    /** Lower tiers are offered calls first; a higher tier only when the lower ones are busy. */
    tier_level: integer("tier_level").notNull().default(1),
    /** Order inside a tier for top_down / sequential. */
    position: integer("position").notNull().default(0),
    delay_sec: integer("delay_sec").notNull().default(0),
    mode: text("mode").notNull().default("static"),
    created_at: epochSeconds("created_at").notNull(),
  },
  (t) => [
    primaryKey({ columns: [t.account_id, t.queue_id, t.user_id] }),
    // "Which queues is this user in": the member filter and the users' in-use check.
    index("agent_queue_assignment_user_idx").on(t.account_id, t.user_id),
    // Cascade is a safety net only: deleteQueue removes members itself, inside its transaction.
    foreignKey({ name: "agent_queue_assignment_queue_fk", columns: [t.account_id, t.queue_id], foreignColumns: [queues.account_id, queues.id] }).onDelete(
      "cascade",
    ),
    check("agent_queue_assignment_tier_chk", sql`${t.tier_level} between 1 and 10`),
    check("agent_queue_assignment_position_chk", sql`${t.position} >= 0`),
    check("agent_queue_assignment_delay_chk", sql`${t.delay_sec} >= 0`),
    check("agent_queue_assignment_mode_chk", sql`${t.mode} in (${inList(MEMBER_MODES)})`),
  ],
);

export type AgentQueueAssignmentRow = typeof agentQueueAssignments.$inferSelect;

/** DTMF options offered while a caller waits (SPEC.md in_queue_option). One per key per queue. */
export const inQueueOptions = pgTable(
  "in_queue_option",
  {
    account_id: text("account_id").notNull(),
    queue_id: text("queue_id").notNull(),
    digit: text("digit").notNull(),
    action: text("action").notNull(),
    dest_kind: text("dest_kind"),
    dest_id: text("dest_id"),
    webhook_url: text("webhook_url"),
    /** A ref into the secret store (sec_…); the signing secret itself is never in this table. */
    webhook_secret_ref: text("webhook_secret_ref"),
    stay_in_queue: flag("stay_in_queue").notNull().default(0),
    prompt_media_id: text("prompt_media_id"),
    label: text("label"),
  },
  (t) => [
    primaryKey({ columns: [t.account_id, t.queue_id, t.digit] }),
    foreignKey({ name: "in_queue_option_queue_fk", columns: [t.account_id, t.queue_id], foreignColumns: [queues.account_id, queues.id] }).onDelete("cascade"),
    check("in_queue_option_digit_chk", sql`${t.digit} in ('0','1','2','3','4','5','6','7','8','9','*','#')`),
    check("in_queue_option_action_chk", sql`${t.action} in (${inList(OPTION_ACTIONS)})`),
    check("in_queue_option_dest_kind_chk", sql`${t.dest_kind} is null or ${t.dest_kind} in (${inList(QUEUE_DEST_KINDS)})`),
    check("in_queue_option_stay_chk", sql`${t.stay_in_queue} in (0,1)`),
  ],
);

export type InQueueOptionRow = typeof inQueueOptions.$inferSelect;
