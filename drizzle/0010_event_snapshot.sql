-- Edited by hand: the column is added without a default first, so existing rows stay null (nothing
-- rewritten: a volatile default would be evaluated for every stored event), then new rows get it.
-- See src/core/events/events.schema.ts (snap) and the stream's resume.
ALTER TABLE "event" ADD COLUMN "snap" pg_snapshot;--> statement-breakpoint
ALTER TABLE "event" ALTER COLUMN "snap" SET DEFAULT pg_current_snapshot();
