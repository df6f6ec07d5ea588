-- Numbers written before 2026-11-28 with the national trunk 0 after their country code ("+44 (0)20 …"
-- was stored 4402…) now read the way the router reads a dialled number (4420…): else a do-not-call
-- entry, a phone list or a forward written the old way no longer matched the calls it was for. The
-- codes are TRUNK_ZERO_CODES of src/core/validation/fields.ts (numbers there never begin with 0).
-- /v1/dnc: an entry already there in the new form keeps the later expiry (null: never), the other goes.
UPDATE "dnc_entry" n SET "expires_at" = CASE WHEN n."expires_at" IS NULL OR o."expires_at" IS NULL THEN NULL ELSE greatest(n."expires_at", o."expires_at") END
  FROM "dnc_entry" o
  WHERE o."account_id" = n."account_id" AND o."e164" ~ '^(20|27|31|32|33|41|43|44|46|49|54|55|61|62|63|64|66|81|82|84|86|90|91|92|234|254|353|358|971|972)0[0-9]' AND n."e164" = regexp_replace(o."e164", '^(20|27|31|32|33|41|43|44|46|49|54|55|61|62|63|64|66|81|82|84|86|90|91|92|234|254|353|358|971|972)0', '\1');
--> statement-breakpoint
DELETE FROM "dnc_entry" o WHERE o."e164" ~ '^(20|27|31|32|33|41|43|44|46|49|54|55|61|62|63|64|66|81|82|84|86|90|91|92|234|254|353|358|971|972)0[0-9]'
  AND EXISTS (SELECT 1 FROM "dnc_entry" n WHERE n."account_id" = o."account_id" AND n."e164" = regexp_replace(o."e164", '^(20|27|31|32|33|41|43|44|46|49|54|55|61|62|63|64|66|81|82|84|86|90|91|92|234|254|353|358|971|972)0', '\1'));
--> statement-breakpoint
UPDATE "dnc_entry" SET "e164" = regexp_replace("e164", '^(20|27|31|32|33|41|43|44|46|49|54|55|61|62|63|64|66|81|82|84|86|90|91|92|234|254|353|358|971|972)0', '\1') WHERE "e164" ~ '^(20|27|31|32|33|41|43|44|46|49|54|55|61|62|63|64|66|81|82|84|86|90|91|92|234|254|353|358|971|972)0[0-9]';
--> statement-breakpoint
DELETE FROM "phone_list_entry" o WHERE o."e164" ~ '^(20|27|31|32|33|41|43|44|46|49|54|55|61|62|63|64|66|81|82|84|86|90|91|92|234|254|353|358|971|972)0[0-9]'
  AND EXISTS (SELECT 1 FROM "phone_list_entry" n WHERE n."account_id" = o."account_id" AND n."phone_list_id" = o."phone_list_id" AND n."e164" = regexp_replace(o."e164", '^(20|27|31|32|33|41|43|44|46|49|54|55|61|62|63|64|66|81|82|84|86|90|91|92|234|254|353|358|971|972)0', '\1'));
--> statement-breakpoint
UPDATE "phone_list_entry" SET "e164" = regexp_replace("e164", '^(20|27|31|32|33|41|43|44|46|49|54|55|61|62|63|64|66|81|82|84|86|90|91|92|234|254|353|358|971|972)0', '\1') WHERE "e164" ~ '^(20|27|31|32|33|41|43|44|46|49|54|55|61|62|63|64|66|81|82|84|86|90|91|92|234|254|353|358|971|972)0[0-9]';
--> statement-breakpoint
DELETE FROM "contact_phone" o WHERE o."e164" ~ '^(20|27|31|32|33|41|43|44|46|49|54|55|61|62|63|64|66|81|82|84|86|90|91|92|234|254|353|358|971|972)0[0-9]'
  AND EXISTS (SELECT 1 FROM "contact_phone" n WHERE n."account_id" = o."account_id" AND n."contact_id" = o."contact_id" AND n."e164" = regexp_replace(o."e164", '^(20|27|31|32|33|41|43|44|46|49|54|55|61|62|63|64|66|81|82|84|86|90|91|92|234|254|353|358|971|972)0', '\1'));
--> statement-breakpoint
UPDATE "contact_phone" SET "e164" = regexp_replace("e164", '^(20|27|31|32|33|41|43|44|46|49|54|55|61|62|63|64|66|81|82|84|86|90|91|92|234|254|353|358|971|972)0', '\1') WHERE "e164" ~ '^(20|27|31|32|33|41|43|44|46|49|54|55|61|62|63|64|66|81|82|84|86|90|91|92|234|254|353|358|971|972)0[0-9]';
--> statement-breakpoint
UPDATE "forward" SET "number" = regexp_replace("number", '^(20|27|31|32|33|41|43|44|46|49|54|55|61|62|63|64|66|81|82|84|86|90|91|92|234|254|353|358|971|972)0', '\1') WHERE "number" ~ '^(20|27|31|32|33|41|43|44|46|49|54|55|61|62|63|64|66|81|82|84|86|90|91|92|234|254|353|358|971|972)0[0-9]';
--> statement-breakpoint
UPDATE "forward" SET "cid_number" = regexp_replace("cid_number", '^(20|27|31|32|33|41|43|44|46|49|54|55|61|62|63|64|66|81|82|84|86|90|91|92|234|254|353|358|971|972)0', '\1') WHERE "cid_number" ~ '^(20|27|31|32|33|41|43|44|46|49|54|55|61|62|63|64|66|81|82|84|86|90|91|92|234|254|353|358|971|972)0[0-9]';
--> statement-breakpoint
UPDATE "caller_id_rule" SET "cid_number" = regexp_replace("cid_number", '^(20|27|31|32|33|41|43|44|46|49|54|55|61|62|63|64|66|81|82|84|86|90|91|92|234|254|353|358|971|972)0', '\1') WHERE "cid_number" ~ '^(20|27|31|32|33|41|43|44|46|49|54|55|61|62|63|64|66|81|82|84|86|90|91|92|234|254|353|358|971|972)0[0-9]';
--> statement-breakpoint
UPDATE "app_user" SET "out_cid_number" = regexp_replace("out_cid_number", '^(20|27|31|32|33|41|43|44|46|49|54|55|61|62|63|64|66|81|82|84|86|90|91|92|234|254|353|358|971|972)0', '\1') WHERE "out_cid_number" ~ '^(20|27|31|32|33|41|43|44|46|49|54|55|61|62|63|64|66|81|82|84|86|90|91|92|234|254|353|358|971|972)0[0-9]';
--> statement-breakpoint
UPDATE "sip_trunk" SET "cid_number" = regexp_replace("cid_number", '^(20|27|31|32|33|41|43|44|46|49|54|55|61|62|63|64|66|81|82|84|86|90|91|92|234|254|353|358|971|972)0', '\1') WHERE "cid_number" ~ '^(20|27|31|32|33|41|43|44|46|49|54|55|61|62|63|64|66|81|82|84|86|90|91|92|234|254|353|358|971|972)0[0-9]';
--> statement-breakpoint
UPDATE "account" SET "default_cid_number" = regexp_replace("default_cid_number", '^(20|27|31|32|33|41|43|44|46|49|54|55|61|62|63|64|66|81|82|84|86|90|91|92|234|254|353|358|971|972)0', '\1') WHERE "default_cid_number" ~ '^(20|27|31|32|33|41|43|44|46|49|54|55|61|62|63|64|66|81|82|84|86|90|91|92|234|254|353|358|971|972)0[0-9]';
