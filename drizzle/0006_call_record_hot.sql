DROP INDEX "call_record_sip_call_id_idx";--> statement-breakpoint
DROP INDEX "call_trace_call_idx";--> statement-breakpoint
DROP INDEX "call_record_sip_call_id_uq";--> statement-breakpoint
DROP INDEX "call_record_active_idx";--> statement-breakpoint
ALTER TABLE "call_trace" DROP CONSTRAINT "call_trace_account_id_id_pk";--> statement-breakpoint
ALTER TABLE "call_trace" ADD CONSTRAINT "call_trace_account_id_call_id_id_pk" PRIMARY KEY("account_id","call_id","id");--> statement-breakpoint
CREATE UNIQUE INDEX "call_record_sip_call_id_uq" ON "call_record" USING btree ("sip_call_id","account_id");--> statement-breakpoint
CREATE INDEX "call_record_active_idx" ON "call_record" USING btree ("account_id","started_ms") WHERE "call_record"."ended_ms" is null;--> statement-breakpoint
-- Written by hand after drizzle-kit: leave room in each page so a live call's updates (ringing,
-- answered) are HOT, written beside the row without touching its indexes (docs/decisions.md).
ALTER TABLE "call_record" SET (fillfactor = 70);
