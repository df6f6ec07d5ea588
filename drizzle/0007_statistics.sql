-- Written by hand: no planner statistics for the JSON documents of the high-volume tables. No query
-- filters or joins on them, and ANALYZE spent most of its time on them (call_record's rtjson reply
-- and legs: 0.8 s a pass over 30,000 sampled calls, 0.35 s without; docs/decisions.md).
ALTER TABLE "call_record" ALTER COLUMN "reply" SET STATISTICS 0;--> statement-breakpoint
ALTER TABLE "call_record" ALTER COLUMN "legs" SET STATISTICS 0;--> statement-breakpoint
ALTER TABLE "call_record" ALTER COLUMN "slots" SET STATISTICS 0;--> statement-breakpoint
ALTER TABLE "call_record" ALTER COLUMN "recording_ids" SET STATISTICS 0;--> statement-breakpoint
ALTER TABLE "call_trace" ALTER COLUMN "data" SET STATISTICS 0;--> statement-breakpoint
ALTER TABLE "event" ALTER COLUMN "data" SET STATISTICS 0;--> statement-breakpoint
ALTER TABLE "account_log" ALTER COLUMN "data" SET STATISTICS 0;
