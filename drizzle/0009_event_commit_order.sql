-- Edited by hand: the columns are added without a default first, so existing rows stay null (nothing
-- rewritten: a volatile default would be evaluated for every stored event), then new rows get it.
-- See src/core/events/events.schema.ts (txid, txid_xmin) and the stream's resume.
ALTER TABLE "event" ADD COLUMN "txid" bigint;--> statement-breakpoint
ALTER TABLE "event" ADD COLUMN "txid_xmin" bigint;--> statement-breakpoint
ALTER TABLE "event" ALTER COLUMN "txid" SET DEFAULT (pg_current_xact_id()::text::bigint);--> statement-breakpoint
ALTER TABLE "event" ALTER COLUMN "txid_xmin" SET DEFAULT (pg_snapshot_xmin(pg_current_snapshot())::text::bigint);
