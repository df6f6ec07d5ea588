CREATE TABLE "webhook_subscription" (
	"account_id" text NOT NULL,
	"id" text NOT NULL,
	"url" text NOT NULL,
	"events" text[] NOT NULL,
	"description" text,
	"secret_ref" text,
	"status" text DEFAULT 'active' NOT NULL,
	"created_at" bigint NOT NULL,
	"updated_at" bigint NOT NULL,
	CONSTRAINT "webhook_subscription_account_id_id_pk" PRIMARY KEY("account_id","id"),
	CONSTRAINT "webhook_subscription_status_chk" CHECK ("webhook_subscription"."status" in ('active','disabled'))
);
