CREATE TABLE "webhook_delivery_due" (
	"account_id" text NOT NULL,
	"id" text NOT NULL,
	"webhook_id" text NOT NULL,
	"event_id" bigint NOT NULL,
	"attempts" smallint DEFAULT 0 NOT NULL,
	"next_attempt_at" bigint NOT NULL,
	"claimed_until" bigint,
	"claim_token" text,
	CONSTRAINT "webhook_delivery_due_account_id_id_pk" PRIMARY KEY("account_id","id")
);
--> statement-breakpoint
-- Written by hand after drizzle-kit: move the work still to do into the queue, and leave room in
-- each page so claims and recorded attempts are HOT updates (docs/decisions.md).
INSERT INTO "webhook_delivery_due" ("account_id", "id", "webhook_id", "event_id", "attempts", "next_attempt_at", "claimed_until", "claim_token")
  SELECT "account_id", "id", "webhook_id", "event_id", "attempts", "next_attempt_at", "claimed_until", "claim_token"
  FROM "webhook_delivery" WHERE "status" IN ('pending', 'retrying');--> statement-breakpoint
ALTER TABLE "webhook_delivery_due" SET (fillfactor = 40);--> statement-breakpoint
ALTER TABLE "webhook_delivery" SET (fillfactor = 45);--> statement-breakpoint
DROP INDEX "webhook_delivery_due_idx";--> statement-breakpoint
DROP INDEX "webhook_delivery_delivered_idx";--> statement-breakpoint
CREATE INDEX "webhook_delivery_due_next_idx" ON "webhook_delivery_due" USING btree ("next_attempt_at");--> statement-breakpoint
CREATE INDEX "webhook_delivery_created_idx" ON "webhook_delivery" USING btree ("created_at");--> statement-breakpoint
ALTER TABLE "webhook_delivery" DROP COLUMN "next_attempt_at";--> statement-breakpoint
ALTER TABLE "webhook_delivery" DROP COLUMN "claimed_until";--> statement-breakpoint
ALTER TABLE "webhook_delivery" DROP COLUMN "claim_token";