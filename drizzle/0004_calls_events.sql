CREATE TABLE "call_record" (
	"account_id" text NOT NULL,
	"id" text NOT NULL,
	"sip_call_id" text NOT NULL,
	"direction" text NOT NULL,
	"from" text NOT NULL,
	"to" text NOT NULL,
	"user_id" text,
	"device_id" text,
	"number_id" text,
	"trunk_id" text,
	"queue_id" text,
	"agent_id" text,
	"flow_id" text,
	"status" text NOT NULL,
	"sip_code" integer,
	"reject_reason" text,
	"answered" smallint DEFAULT 0 NOT NULL,
	"started_ms" bigint NOT NULL,
	"ringing_ms" bigint,
	"answered_ms" bigint,
	"ended_ms" bigint,
	"billsec" integer DEFAULT 0 NOT NULL,
	"hangup_cause" text,
	"cost_micro" bigint DEFAULT 0 NOT NULL,
	"currency" text,
	"rate_plan_id" text,
	"recording_ids" jsonb DEFAULT '[]'::jsonb NOT NULL,
	"legs" jsonb DEFAULT '[]'::jsonb NOT NULL,
	"slots" jsonb DEFAULT '[]'::jsonb NOT NULL,
	"reply" jsonb NOT NULL,
	CONSTRAINT "call_record_account_id_id_pk" PRIMARY KEY("account_id","id"),
	CONSTRAINT "call_record_direction_chk" CHECK ("call_record"."direction" in ('inbound','outbound','internal')),
	CONSTRAINT "call_record_status_chk" CHECK ("call_record"."status" in ('routed','ringing','answered','completed','busy','no_answer','canceled','failed','rejected')),
	CONSTRAINT "call_record_answered_chk" CHECK ("call_record"."answered" in (0,1)),
	CONSTRAINT "call_record_billsec_chk" CHECK ("call_record"."billsec" >= 0)
);
--> statement-breakpoint
CREATE TABLE "call_trace" (
	"account_id" text NOT NULL,
	"id" bigserial NOT NULL,
	"call_id" text NOT NULL,
	"at_ms" bigint NOT NULL,
	"step" text NOT NULL,
	"result" text NOT NULL,
	"data" jsonb,
	CONSTRAINT "call_trace_account_id_id_pk" PRIMARY KEY("account_id","id")
);
--> statement-breakpoint
CREATE TABLE "account_log" (
	"account_id" text NOT NULL,
	"id" text NOT NULL,
	"ts" bigint NOT NULL,
	"level" text NOT NULL,
	"source" text NOT NULL,
	"message" text NOT NULL,
	"call_id" text,
	"data" jsonb DEFAULT '{}'::jsonb NOT NULL,
	CONSTRAINT "account_log_account_id_id_pk" PRIMARY KEY("account_id","id"),
	CONSTRAINT "account_log_level_chk" CHECK ("account_log"."level" in ('debug','info','warn','error'))
);
--> statement-breakpoint
CREATE TABLE "rate_plan" (
	"account_id" text NOT NULL,
	"id" text NOT NULL,
	"name" text NOT NULL,
	"currency" text NOT NULL,
	"is_default" smallint DEFAULT 0 NOT NULL,
	"rates" jsonb NOT NULL,
	"created_at" bigint NOT NULL,
	"updated_at" bigint NOT NULL,
	CONSTRAINT "rate_plan_account_id_id_pk" PRIMARY KEY("account_id","id"),
	CONSTRAINT "rate_plan_is_default_chk" CHECK ("rate_plan"."is_default" in (0,1))
);
--> statement-breakpoint
CREATE TABLE "security_allow" (
	"address" text PRIMARY KEY NOT NULL,
	"note" text,
	"created_at" bigint NOT NULL
);
--> statement-breakpoint
CREATE TABLE "security_ban" (
	"ip" text NOT NULL,
	"node" text NOT NULL,
	"status" text DEFAULT 'active' NOT NULL,
	"reason" text,
	"hits" integer DEFAULT 0 NOT NULL,
	"ban_count" smallint DEFAULT 1 NOT NULL,
	"first_seen" bigint NOT NULL,
	"last_seen" bigint NOT NULL,
	"expires_at" bigint,
	"flagged" smallint DEFAULT 0 NOT NULL,
	CONSTRAINT "security_ban_ip_node_pk" PRIMARY KEY("ip","node"),
	CONSTRAINT "security_ban_status_chk" CHECK ("security_ban"."status" in ('active','expired','lifted')),
	CONSTRAINT "security_ban_flagged_chk" CHECK ("security_ban"."flagged" in (0,1))
);
--> statement-breakpoint
CREATE TABLE "webhook_delivery" (
	"account_id" text NOT NULL,
	"id" text NOT NULL,
	"webhook_id" text NOT NULL,
	"event_id" bigint NOT NULL,
	"event" text NOT NULL,
	"status" text NOT NULL,
	"attempts" smallint DEFAULT 0 NOT NULL,
	"last_status" integer,
	"last_error" text,
	"next_attempt_at" bigint NOT NULL,
	"claimed_until" bigint,
	"claim_token" text,
	"created_at" bigint NOT NULL,
	"updated_at" bigint NOT NULL,
	"delivered_at" bigint,
	CONSTRAINT "webhook_delivery_account_id_id_pk" PRIMARY KEY("account_id","id"),
	CONSTRAINT "webhook_delivery_status_chk" CHECK ("webhook_delivery"."status" in ('pending','retrying','delivered','failed'))
);
--> statement-breakpoint
CREATE UNIQUE INDEX "call_record_sip_call_id_uq" ON "call_record" USING btree ("account_id","sip_call_id");--> statement-breakpoint
CREATE INDEX "call_record_sip_call_id_idx" ON "call_record" USING btree ("sip_call_id");--> statement-breakpoint
CREATE INDEX "call_record_started_idx" ON "call_record" USING btree ("account_id","started_ms","id");--> statement-breakpoint
CREATE INDEX "call_record_active_idx" ON "call_record" USING btree ("account_id","started_ms") WHERE "call_record"."ended_ms" is null and "call_record"."status" <> 'rejected';--> statement-breakpoint
CREATE INDEX "call_trace_call_idx" ON "call_trace" USING btree ("account_id","call_id","id");--> statement-breakpoint
CREATE INDEX "account_log_call_idx" ON "account_log" USING btree ("account_id","call_id","id");--> statement-breakpoint
CREATE INDEX "account_log_ts_idx" ON "account_log" USING btree ("ts");--> statement-breakpoint
CREATE UNIQUE INDEX "rate_plan_name_uq" ON "rate_plan" USING btree ("account_id",lower("name"));--> statement-breakpoint
CREATE INDEX "security_ban_seen_idx" ON "security_ban" USING btree ("last_seen");--> statement-breakpoint
CREATE UNIQUE INDEX "webhook_delivery_event_webhook_uq" ON "webhook_delivery" USING btree ("account_id","event_id","webhook_id");--> statement-breakpoint
CREATE INDEX "webhook_delivery_due_idx" ON "webhook_delivery" USING btree ("next_attempt_at") WHERE "webhook_delivery"."status" in ('pending','retrying');--> statement-breakpoint
CREATE INDEX "webhook_delivery_webhook_idx" ON "webhook_delivery" USING btree ("account_id","webhook_id","id");--> statement-breakpoint
CREATE INDEX "webhook_delivery_delivered_idx" ON "webhook_delivery" USING btree ("delivered_at") WHERE "webhook_delivery"."status" = 'delivered';