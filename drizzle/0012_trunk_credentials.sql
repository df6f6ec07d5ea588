CREATE TABLE "trunk_credential" (
	"username" text PRIMARY KEY NOT NULL,
	"account_id" text NOT NULL,
	"trunk_id" text NOT NULL
);
--> statement-breakpoint
-- Trunks that authenticate towards us already: their usernames, the first trunk of each name.
INSERT INTO "trunk_credential" ("username", "account_id", "trunk_id")
  SELECT DISTINCT ON (inbound_username) inbound_username, account_id, id FROM "sip_trunk"
  WHERE inbound_username IS NOT NULL ORDER BY inbound_username, created_at, id
  ON CONFLICT DO NOTHING;
--> statement-breakpoint
CREATE TRIGGER "trunk_credential_config_changed" AFTER INSERT OR UPDATE OR DELETE ON "trunk_credential" FOR EACH ROW EXECUTE FUNCTION "parley_config_changed"('account_id');
