-- Written by hand: every change to an account's configuration (the rows calls are routed, priced and
-- announced by) notifies channel parley_config with the account id, once per account and transaction
-- (PostgreSQL folds repeats), after commit. Each instance listens and drops what it cached of that
-- account (src/core/cache/config-cache.ts). Per-call rows (calls, events, logs, phone list entries,
-- DNC entries) have no trigger: they are read, never cached.
CREATE OR REPLACE FUNCTION "parley_config_changed"() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  col text := TG_ARGV[0];
BEGIN
  IF TG_OP <> 'INSERT' THEN
    PERFORM pg_notify('parley_config', to_jsonb(OLD) ->> col);
  END IF;
  IF TG_OP <> 'DELETE' THEN
    PERFORM pg_notify('parley_config', to_jsonb(NEW) ->> col);
  END IF;
  RETURN NULL;
END
$$;--> statement-breakpoint
CREATE TRIGGER "account_config_changed" AFTER INSERT OR UPDATE OR DELETE ON "account" FOR EACH ROW EXECUTE FUNCTION "parley_config_changed"('id');--> statement-breakpoint
CREATE TRIGGER "device_config_changed" AFTER INSERT OR UPDATE OR DELETE ON "device" FOR EACH ROW EXECUTE FUNCTION "parley_config_changed"('account_id');--> statement-breakpoint
CREATE TRIGGER "device_credential_config_changed" AFTER INSERT OR UPDATE OR DELETE ON "device_credential" FOR EACH ROW EXECUTE FUNCTION "parley_config_changed"('account_id');--> statement-breakpoint
CREATE TRIGGER "app_user_config_changed" AFTER INSERT OR UPDATE OR DELETE ON "app_user" FOR EACH ROW EXECUTE FUNCTION "parley_config_changed"('account_id');--> statement-breakpoint
CREATE TRIGGER "extension_config_changed" AFTER INSERT OR UPDATE OR DELETE ON "extension" FOR EACH ROW EXECUTE FUNCTION "parley_config_changed"('account_id');--> statement-breakpoint
CREATE TRIGGER "time_schedule_config_changed" AFTER INSERT OR UPDATE OR DELETE ON "time_schedule" FOR EACH ROW EXECUTE FUNCTION "parley_config_changed"('account_id');--> statement-breakpoint
CREATE TRIGGER "time_schedule_rule_config_changed" AFTER INSERT OR UPDATE OR DELETE ON "time_schedule_rule" FOR EACH ROW EXECUTE FUNCTION "parley_config_changed"('account_id');--> statement-breakpoint
CREATE TRIGGER "forward_config_changed" AFTER INSERT OR UPDATE OR DELETE ON "forward" FOR EACH ROW EXECUTE FUNCTION "parley_config_changed"('account_id');--> statement-breakpoint
CREATE TRIGGER "number_transform_config_changed" AFTER INSERT OR UPDATE OR DELETE ON "number_transform" FOR EACH ROW EXECUTE FUNCTION "parley_config_changed"('account_id');--> statement-breakpoint
CREATE TRIGGER "acl_rule_config_changed" AFTER INSERT OR UPDATE OR DELETE ON "acl_rule" FOR EACH ROW EXECUTE FUNCTION "parley_config_changed"('account_id');--> statement-breakpoint
CREATE TRIGGER "number_config_changed" AFTER INSERT OR UPDATE OR DELETE ON "number" FOR EACH ROW EXECUTE FUNCTION "parley_config_changed"('account_id');--> statement-breakpoint
CREATE TRIGGER "did_lookup_config_changed" AFTER INSERT OR UPDATE OR DELETE ON "did_lookup" FOR EACH ROW EXECUTE FUNCTION "parley_config_changed"('account_id');--> statement-breakpoint
CREATE TRIGGER "call_limit_config_changed" AFTER INSERT OR UPDATE OR DELETE ON "call_limit" FOR EACH ROW EXECUTE FUNCTION "parley_config_changed"('account_id');--> statement-breakpoint
CREATE TRIGGER "phone_list_config_changed" AFTER INSERT OR UPDATE OR DELETE ON "phone_list" FOR EACH ROW EXECUTE FUNCTION "parley_config_changed"('account_id');--> statement-breakpoint
CREATE TRIGGER "sip_trunk_config_changed" AFTER INSERT OR UPDATE OR DELETE ON "sip_trunk" FOR EACH ROW EXECUTE FUNCTION "parley_config_changed"('account_id');--> statement-breakpoint
CREATE TRIGGER "sip_trunk_acl_config_changed" AFTER INSERT OR UPDATE OR DELETE ON "sip_trunk_acl" FOR EACH ROW EXECUTE FUNCTION "parley_config_changed"('account_id');--> statement-breakpoint
CREATE TRIGGER "outbound_route_config_changed" AFTER INSERT OR UPDATE OR DELETE ON "outbound_route" FOR EACH ROW EXECUTE FUNCTION "parley_config_changed"('account_id');--> statement-breakpoint
CREATE TRIGGER "caller_id_rule_config_changed" AFTER INSERT OR UPDATE OR DELETE ON "caller_id_rule" FOR EACH ROW EXECUTE FUNCTION "parley_config_changed"('account_id');--> statement-breakpoint
CREATE TRIGGER "geo_policy_config_changed" AFTER INSERT OR UPDATE OR DELETE ON "geo_policy" FOR EACH ROW EXECUTE FUNCTION "parley_config_changed"('account_id');--> statement-breakpoint
CREATE TRIGGER "geo_policy_country_config_changed" AFTER INSERT OR UPDATE OR DELETE ON "geo_policy_country" FOR EACH ROW EXECUTE FUNCTION "parley_config_changed"('account_id');--> statement-breakpoint
CREATE TRIGGER "flow_config_changed" AFTER INSERT OR UPDATE OR DELETE ON "flow" FOR EACH ROW EXECUTE FUNCTION "parley_config_changed"('account_id');--> statement-breakpoint
CREATE TRIGGER "rate_plan_config_changed" AFTER INSERT OR UPDATE OR DELETE ON "rate_plan" FOR EACH ROW EXECUTE FUNCTION "parley_config_changed"('account_id');--> statement-breakpoint
CREATE TRIGGER "webhook_subscription_config_changed" AFTER INSERT OR UPDATE OR DELETE ON "webhook_subscription" FOR EACH ROW EXECUTE FUNCTION "parley_config_changed"('account_id');--> statement-breakpoint
CREATE TRIGGER "sip_domain_config_changed" AFTER INSERT OR UPDATE OR DELETE ON "sip_domain" FOR EACH ROW EXECUTE FUNCTION "parley_config_changed"('account_id');--> statement-breakpoint
CREATE TRIGGER "voicemail_config_changed" AFTER INSERT OR UPDATE OR DELETE ON "voicemail" FOR EACH ROW EXECUTE FUNCTION "parley_config_changed"('account_id');
