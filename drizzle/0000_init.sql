CREATE TABLE "account" (
	"id" text PRIMARY KEY NOT NULL,
	"name" text NOT NULL,
	"parent_id" text,
	"status" text DEFAULT 'active' NOT NULL,
	"is_reseller" smallint DEFAULT 0 NOT NULL,
	"timezone" text DEFAULT 'UTC' NOT NULL,
	"brand_name" text,
	"brand_domain" text,
	"max_in" integer,
	"max_out" integer,
	"max_dialer" integer,
	"default_cid_number" text,
	"language" text DEFAULT 'en-US' NOT NULL,
	"voice_gender" text DEFAULT 'female' NOT NULL,
	"tone_country" text DEFAULT 'US' NOT NULL,
	"recording_retention_days" integer,
	"allow_free_caller_id" smallint DEFAULT 0 NOT NULL,
	"did_default_dest_kind" text,
	"did_default_dest_id" text,
	"rate_limit_requests" integer,
	"created_at" bigint NOT NULL,
	"updated_at" bigint NOT NULL,
	CONSTRAINT "account_status_chk" CHECK ("account"."status" in ('active','suspended','closed')),
	CONSTRAINT "account_is_reseller_chk" CHECK ("account"."is_reseller" in (0,1)),
	CONSTRAINT "account_allow_free_cid_chk" CHECK ("account"."allow_free_caller_id" in (0,1)),
	CONSTRAINT "account_voice_gender_chk" CHECK ("account"."voice_gender" in ('male','female')),
	CONSTRAINT "account_retention_chk" CHECK ("account"."recording_retention_days" is null or "account"."recording_retention_days" >= 0)
);
--> statement-breakpoint
CREATE TABLE "api_key_lookup" (
	"secret_hash" text PRIMARY KEY NOT NULL,
	"account_id" text NOT NULL,
	"key_id" text NOT NULL
);
--> statement-breakpoint
CREATE TABLE "api_key" (
	"account_id" text NOT NULL,
	"id" text NOT NULL,
	"label" text,
	"scopes" text[] NOT NULL,
	"secret_hint" text NOT NULL,
	"created_at" bigint NOT NULL,
	"revoked_at" bigint,
	CONSTRAINT "api_key_account_id_id_pk" PRIMARY KEY("account_id","id")
);
--> statement-breakpoint
CREATE TABLE "console_login" (
	"email" text PRIMARY KEY NOT NULL,
	"account_id" text NOT NULL,
	"console_user_id" text NOT NULL
);
--> statement-breakpoint
CREATE TABLE "console_user" (
	"account_id" text NOT NULL,
	"id" text NOT NULL,
	"email" text NOT NULL,
	"password_hash" text NOT NULL,
	"scopes" text[] NOT NULL,
	"user_id" text,
	"status" text DEFAULT 'active' NOT NULL,
	"created_at" bigint NOT NULL,
	"updated_at" bigint NOT NULL,
	CONSTRAINT "console_user_account_id_id_pk" PRIMARY KEY("account_id","id")
);
--> statement-breakpoint
CREATE TABLE "idempotency_key" (
	"account_id" text NOT NULL,
	"key" text NOT NULL,
	"request_hash" text NOT NULL,
	"state" text NOT NULL,
	"status" integer,
	"body" text,
	"content_type" text,
	"locked_until" bigint NOT NULL,
	"created_at" bigint NOT NULL,
	CONSTRAINT "idempotency_key_account_id_key_pk" PRIMARY KEY("account_id","key")
);
--> statement-breakpoint
CREATE TABLE "secret" (
	"id" text NOT NULL,
	"account_id" text NOT NULL,
	"ciphertext" text NOT NULL,
	"created_at" bigint NOT NULL,
	CONSTRAINT "secret_account_id_id_pk" PRIMARY KEY("account_id","id")
);
--> statement-breakpoint
CREATE INDEX "account_parent_idx" ON "account" USING btree ("parent_id","id");--> statement-breakpoint
CREATE INDEX "console_login_user_idx" ON "console_login" USING btree ("account_id","console_user_id");