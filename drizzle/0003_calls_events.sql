CREATE TABLE "event" (
	"account_id" text NOT NULL,
	"id" bigserial NOT NULL,
	"name" text NOT NULL,
	"data" jsonb NOT NULL,
	"ts" bigint NOT NULL,
	CONSTRAINT "event_account_id_id_pk" PRIMARY KEY("account_id","id")
);
--> statement-breakpoint
CREATE INDEX "event_ts_idx" ON "event" USING btree ("ts");