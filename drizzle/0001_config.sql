CREATE TABLE "agent_team" (
	"account_id" text NOT NULL,
	"id" text NOT NULL,
	"name" text NOT NULL,
	"created_at" bigint NOT NULL,
	"updated_at" bigint NOT NULL,
	CONSTRAINT "agent_team_account_id_id_pk" PRIMARY KEY("account_id","id")
);
--> statement-breakpoint
CREATE TABLE "conference" (
	"account_id" text NOT NULL,
	"id" text NOT NULL,
	"name" text NOT NULL,
	"pin_secret_ref" text,
	"admin_pin_secret_ref" text,
	"max_members" integer DEFAULT 50 NOT NULL,
	"moh_media_id" text,
	"record" smallint DEFAULT 0 NOT NULL,
	"wait_for_admin" smallint DEFAULT 0 NOT NULL,
	"announce_join_leave" smallint DEFAULT 1 NOT NULL,
	"created_at" bigint NOT NULL,
	"updated_at" bigint NOT NULL,
	CONSTRAINT "conference_account_id_id_pk" PRIMARY KEY("account_id","id"),
	CONSTRAINT "conference_max_members_chk" CHECK ("conference"."max_members" between 2 and 1000),
	CONSTRAINT "conference_record_chk" CHECK ("conference"."record" in (0,1)),
	CONSTRAINT "conference_wait_for_admin_chk" CHECK ("conference"."wait_for_admin" in (0,1)),
	CONSTRAINT "conference_announce_join_leave_chk" CHECK ("conference"."announce_join_leave" in (0,1)),
	CONSTRAINT "conference_wait_for_admin_pin_chk" CHECK ("conference"."wait_for_admin" = 0 or "conference"."admin_pin_secret_ref" is not null)
);
--> statement-breakpoint
CREATE TABLE "contact_phone" (
	"account_id" text NOT NULL,
	"e164" text NOT NULL,
	"contact_id" text NOT NULL,
	CONSTRAINT "contact_phone_account_id_e164_contact_id_pk" PRIMARY KEY("account_id","e164","contact_id")
);
--> statement-breakpoint
CREATE TABLE "contact" (
	"account_id" text NOT NULL,
	"id" text NOT NULL,
	"first_name" text,
	"last_name" text,
	"display_name" text NOT NULL,
	"company" text,
	"email" text,
	"phones" jsonb DEFAULT '[]'::jsonb NOT NULL,
	"tags" text[] DEFAULT '{}'::text[] NOT NULL,
	"external_id" text,
	"notes" text,
	"custom" jsonb DEFAULT '{}'::jsonb NOT NULL,
	"created_at" bigint NOT NULL,
	"updated_at" bigint NOT NULL,
	CONSTRAINT "contact_account_id_id_pk" PRIMARY KEY("account_id","id")
);
--> statement-breakpoint
CREATE TABLE "custom_field" (
	"account_id" text NOT NULL,
	"id" text NOT NULL,
	"entity" text NOT NULL,
	"key" text NOT NULL,
	"label" text NOT NULL,
	"type" text NOT NULL,
	"options" text[],
	"required" smallint DEFAULT 0 NOT NULL,
	"created_at" bigint NOT NULL,
	"updated_at" bigint NOT NULL,
	CONSTRAINT "custom_field_account_id_id_pk" PRIMARY KEY("account_id","id"),
	CONSTRAINT "custom_field_entity_chk" CHECK ("custom_field"."entity" in ('contact','call')),
	CONSTRAINT "custom_field_type_chk" CHECK ("custom_field"."type" in ('text','number','boolean','date','select')),
	CONSTRAINT "custom_field_required_chk" CHECK ("custom_field"."required" in (0,1))
);
--> statement-breakpoint
CREATE TABLE "device_credential" (
	"realm" text NOT NULL,
	"auth_username" text NOT NULL,
	"account_id" text NOT NULL,
	"device_id" text NOT NULL,
	CONSTRAINT "device_credential_realm_auth_username_pk" PRIMARY KEY("realm","auth_username")
);
--> statement-breakpoint
CREATE TABLE "device" (
	"account_id" text NOT NULL,
	"id" text NOT NULL,
	"user_id" text NOT NULL,
	"auth_username" text NOT NULL,
	"realm" text NOT NULL,
	"ha1" text NOT NULL,
	"ha1b" text NOT NULL,
	"transport" text DEFAULT 'udp' NOT NULL,
	"is_webrtc" smallint DEFAULT 0 NOT NULL,
	"status" text DEFAULT 'active' NOT NULL,
	"label" text,
	"created_at" bigint NOT NULL,
	"updated_at" bigint NOT NULL,
	CONSTRAINT "device_account_id_id_pk" PRIMARY KEY("account_id","id"),
	CONSTRAINT "device_transport_chk" CHECK ("device"."transport" in ('udp','tcp','tls','wss')),
	CONSTRAINT "device_is_webrtc_chk" CHECK ("device"."is_webrtc" in (0,1)),
	CONSTRAINT "device_status_chk" CHECK ("device"."status" in ('active','disabled'))
);
--> statement-breakpoint
CREATE TABLE "dnc_entry" (
	"account_id" text NOT NULL,
	"e164" text NOT NULL,
	"reason" text,
	"source" text DEFAULT 'api' NOT NULL,
	"expires_at" bigint,
	"created_at" bigint NOT NULL,
	CONSTRAINT "dnc_entry_account_id_e164_pk" PRIMARY KEY("account_id","e164"),
	CONSTRAINT "dnc_entry_source_chk" CHECK ("dnc_entry"."source" in ('api','import','agent','campaign'))
);
--> statement-breakpoint
CREATE TABLE "extension" (
	"account_id" text NOT NULL,
	"id" text NOT NULL,
	"digits" text NOT NULL,
	"dest_kind" text NOT NULL,
	"dest_id" text,
	"dest_xform" jsonb,
	"schedule_id" text,
	"closed_dest_kind" text,
	"closed_dest_id" text,
	"holiday_dest_kind" text,
	"holiday_dest_id" text,
	"label" text,
	"created_at" bigint NOT NULL,
	"updated_at" bigint NOT NULL,
	CONSTRAINT "extension_account_id_id_pk" PRIMARY KEY("account_id","id"),
	CONSTRAINT "extension_digits_chk" CHECK ("extension"."digits" ~ '^[0-9*#]{1,16}$'),
	CONSTRAINT "extension_dest_kind_chk" CHECK ("extension"."dest_kind" in ('flow','user','extension','ring_group','queue','voicemail','conference','forward','hangup','feature')),
	CONSTRAINT "extension_closed_dest_kind_chk" CHECK ("extension"."closed_dest_kind" is null or "extension"."closed_dest_kind" in ('flow','user','extension','ring_group','queue','voicemail','conference','forward','hangup')),
	CONSTRAINT "extension_holiday_dest_kind_chk" CHECK ("extension"."holiday_dest_kind" is null or "extension"."holiday_dest_kind" in ('flow','user','extension','ring_group','queue','voicemail','conference','forward','hangup')),
	CONSTRAINT "extension_closed_needs_schedule_chk" CHECK ("extension"."schedule_id" is not null or ("extension"."closed_dest_kind" is null and "extension"."holiday_dest_kind" is null))
);
--> statement-breakpoint
CREATE TABLE "flow" (
	"account_id" text NOT NULL,
	"id" text NOT NULL,
	"name" text NOT NULL,
	"version" integer DEFAULT 0 NOT NULL,
	"is_published" smallint DEFAULT 0 NOT NULL,
	"graph" jsonb DEFAULT '{"nodes":[],"edges":[]}'::jsonb NOT NULL,
	"created_at" bigint NOT NULL,
	"updated_at" bigint NOT NULL,
	CONSTRAINT "flow_account_id_id_pk" PRIMARY KEY("account_id","id"),
	CONSTRAINT "flow_is_published_chk" CHECK ("flow"."is_published" in (0,1))
);
--> statement-breakpoint
CREATE TABLE "forward" (
	"account_id" text NOT NULL,
	"id" text NOT NULL,
	"user_id" text,
	"number_id" text,
	"number" text NOT NULL,
	"trigger" text NOT NULL,
	"timeout_sec" smallint,
	"cid_mode" text DEFAULT 'passthrough' NOT NULL,
	"cid_number" text,
	"confirm" smallint DEFAULT 0 NOT NULL,
	"overflow_dest_kind" text,
	"overflow_dest_id" text,
	"created_at" bigint NOT NULL,
	"updated_at" bigint NOT NULL,
	CONSTRAINT "forward_account_id_id_pk" PRIMARY KEY("account_id","id"),
	CONSTRAINT "forward_owner_chk" CHECK (("forward"."user_id" is null) <> ("forward"."number_id" is null)),
	CONSTRAINT "forward_trigger_chk" CHECK ("forward"."trigger" in ('always','busy','no_answer','unreachable')),
	CONSTRAINT "forward_timeout_chk" CHECK (("forward"."trigger" = 'no_answer' and "forward"."timeout_sec" between 5 and 120) or ("forward"."trigger" <> 'no_answer' and "forward"."timeout_sec" is null)),
	CONSTRAINT "forward_cid_mode_chk" CHECK ("forward"."cid_mode" in ('passthrough','did','custom')),
	CONSTRAINT "forward_cid_number_chk" CHECK (("forward"."cid_mode" = 'custom') = ("forward"."cid_number" is not null)),
	CONSTRAINT "forward_confirm_chk" CHECK ("forward"."confirm" in (0,1))
);
--> statement-breakpoint
CREATE TABLE "media_file" (
	"account_id" text NOT NULL,
	"id" text NOT NULL,
	"name" text NOT NULL,
	"kind" text NOT NULL,
	"object_key" text NOT NULL,
	"format" text NOT NULL,
	"content_type" text NOT NULL,
	"size_bytes" bigint NOT NULL,
	"duration_ms" integer NOT NULL,
	"sample_rate" integer,
	"channels" smallint,
	"created_at" bigint NOT NULL,
	CONSTRAINT "media_file_account_id_id_pk" PRIMARY KEY("account_id","id"),
	CONSTRAINT "media_file_kind_chk" CHECK ("media_file"."kind" in ('prompt','moh','greeting','announcement')),
	CONSTRAINT "media_file_format_chk" CHECK ("media_file"."format" in ('wav','mp3')),
	CONSTRAINT "media_file_name_chk" CHECK (char_length("media_file"."name") between 1 and 200),
	CONSTRAINT "media_file_size_chk" CHECK ("media_file"."size_bytes" > 0),
	CONSTRAINT "media_file_duration_chk" CHECK ("media_file"."duration_ms" >= 0)
);
--> statement-breakpoint
CREATE TABLE "media_playlist_item" (
	"account_id" text NOT NULL,
	"playlist_id" text NOT NULL,
	"position" integer NOT NULL,
	"media_id" text NOT NULL,
	CONSTRAINT "media_playlist_item_account_id_playlist_id_position_pk" PRIMARY KEY("account_id","playlist_id","position"),
	CONSTRAINT "media_playlist_item_position_chk" CHECK ("media_playlist_item"."position" >= 0)
);
--> statement-breakpoint
CREATE TABLE "media_playlist" (
	"account_id" text NOT NULL,
	"id" text NOT NULL,
	"name" text NOT NULL,
	"created_at" bigint NOT NULL,
	"updated_at" bigint NOT NULL,
	CONSTRAINT "media_playlist_account_id_id_pk" PRIMARY KEY("account_id","id")
);
--> statement-breakpoint
CREATE TABLE "did_lookup" (
	"e164" text PRIMARY KEY NOT NULL,
	"account_id" text NOT NULL,
	"number_id" text NOT NULL
);
--> statement-breakpoint
CREATE TABLE "number" (
	"account_id" text NOT NULL,
	"id" text NOT NULL,
	"e164" text NOT NULL,
	"status" text DEFAULT 'active' NOT NULL,
	"dest_kind" text NOT NULL,
	"dest_id" text,
	"dest_xform" jsonb,
	"max_channels" integer,
	"fax_mode" text DEFAULT 'voice' NOT NULL,
	"allow_anonymous" smallint DEFAULT 1 NOT NULL,
	"schedule_id" text,
	"closed_dest_kind" text,
	"closed_dest_id" text,
	"holiday_dest_kind" text,
	"holiday_dest_id" text,
	"label" text,
	"created_at" bigint NOT NULL,
	"updated_at" bigint NOT NULL,
	CONSTRAINT "number_account_id_id_pk" PRIMARY KEY("account_id","id"),
	CONSTRAINT "number_status_chk" CHECK ("number"."status" in ('active','disabled','virtual')),
	CONSTRAINT "number_fax_mode_chk" CHECK ("number"."fax_mode" in ('voice','t38','passthrough')),
	CONSTRAINT "number_allow_anonymous_chk" CHECK ("number"."allow_anonymous" in (0,1)),
	CONSTRAINT "number_max_channels_chk" CHECK ("number"."max_channels" is null or "number"."max_channels" >= 0),
	CONSTRAINT "number_dest_kind_chk" CHECK ("number"."dest_kind" in ('flow','user','extension','ring_group','queue','voicemail','conference','forward','hangup')),
	CONSTRAINT "number_closed_dest_kind_chk" CHECK ("number"."closed_dest_kind" is null or "number"."closed_dest_kind" in ('flow','user','extension','ring_group','queue','voicemail','conference','forward','hangup')),
	CONSTRAINT "number_holiday_dest_kind_chk" CHECK ("number"."holiday_dest_kind" is null or "number"."holiday_dest_kind" in ('flow','user','extension','ring_group','queue','voicemail','conference','forward','hangup')),
	CONSTRAINT "number_closed_needs_schedule_chk" CHECK ("number"."schedule_id" is not null or ("number"."closed_dest_kind" is null and "number"."holiday_dest_kind" is null))
);
--> statement-breakpoint
CREATE TABLE "acl_rule" (
	"account_id" text NOT NULL,
	"id" text NOT NULL,
	"name" text NOT NULL,
	"scope_kind" text NOT NULL,
	"scope_id" text NOT NULL,
	"rule_type" text NOT NULL,
	"value" text NOT NULL,
	"created_at" bigint NOT NULL,
	"updated_at" bigint NOT NULL,
	CONSTRAINT "acl_rule_account_id_id_pk" PRIMARY KEY("account_id","id"),
	CONSTRAINT "acl_rule_scope_kind_chk" CHECK ("acl_rule"."scope_kind" in ('account','user','did','number')),
	CONSTRAINT "acl_rule_type_chk" CHECK ("acl_rule"."rule_type" in ('ip_allow','ip_deny','geo_allow','geo_deny'))
);
--> statement-breakpoint
CREATE TABLE "call_limit" (
	"account_id" text NOT NULL,
	"id" text NOT NULL,
	"name" text NOT NULL,
	"scope_kind" text NOT NULL,
	"scope_id" text NOT NULL,
	"direction" text DEFAULT 'any' NOT NULL,
	"period_sec" integer,
	"max_count" integer NOT NULL,
	"hard" smallint DEFAULT 1 NOT NULL,
	"created_at" bigint NOT NULL,
	"updated_at" bigint NOT NULL,
	CONSTRAINT "call_limit_account_id_id_pk" PRIMARY KEY("account_id","id"),
	CONSTRAINT "call_limit_scope_kind_chk" CHECK ("call_limit"."scope_kind" in ('account','user','did','number')),
	CONSTRAINT "call_limit_direction_chk" CHECK ("call_limit"."direction" in ('in','out','dialer','any')),
	CONSTRAINT "call_limit_period_chk" CHECK ("call_limit"."period_sec" is null or "call_limit"."period_sec" between 1 and 2592000),
	CONSTRAINT "call_limit_max_count_chk" CHECK ("call_limit"."max_count" >= 0),
	CONSTRAINT "call_limit_hard_chk" CHECK ("call_limit"."hard" in (0,1))
);
--> statement-breakpoint
CREATE TABLE "caller_id_rule" (
	"account_id" text NOT NULL,
	"id" text NOT NULL,
	"name" text NOT NULL,
	"scope_kind" text NOT NULL,
	"scope_id" text NOT NULL,
	"match_country" text,
	"cid_number" text NOT NULL,
	"cid_name" text,
	"priority" integer DEFAULT 100 NOT NULL,
	"created_at" bigint NOT NULL,
	"updated_at" bigint NOT NULL,
	CONSTRAINT "caller_id_rule_account_id_id_pk" PRIMARY KEY("account_id","id"),
	CONSTRAINT "caller_id_rule_scope_kind_chk" CHECK ("caller_id_rule"."scope_kind" in ('account','user','did','number'))
);
--> statement-breakpoint
CREATE TABLE "geo_policy" (
	"account_id" text NOT NULL,
	"id" text NOT NULL,
	"name" text NOT NULL,
	"scope_kind" text NOT NULL,
	"scope_id" text NOT NULL,
	"mode" text NOT NULL,
	"created_at" bigint NOT NULL,
	"updated_at" bigint NOT NULL,
	CONSTRAINT "geo_policy_account_id_id_pk" PRIMARY KEY("account_id","id"),
	CONSTRAINT "geo_policy_scope_kind_chk" CHECK ("geo_policy"."scope_kind" in ('account','user','did','number')),
	CONSTRAINT "geo_policy_mode_chk" CHECK ("geo_policy"."mode" in ('allowlist','denylist'))
);
--> statement-breakpoint
CREATE TABLE "geo_policy_country" (
	"account_id" text NOT NULL,
	"geo_policy_id" text NOT NULL,
	"country" text NOT NULL,
	"created_at" bigint NOT NULL,
	CONSTRAINT "geo_policy_country_account_id_geo_policy_id_country_pk" PRIMARY KEY("account_id","geo_policy_id","country")
);
--> statement-breakpoint
CREATE TABLE "phone_list_entry" (
	"account_id" text NOT NULL,
	"phone_list_id" text NOT NULL,
	"e164" text NOT NULL,
	"created_at" bigint NOT NULL,
	CONSTRAINT "phone_list_entry_account_id_phone_list_id_e164_pk" PRIMARY KEY("account_id","phone_list_id","e164")
);
--> statement-breakpoint
CREATE TABLE "phone_list" (
	"account_id" text NOT NULL,
	"id" text NOT NULL,
	"name" text NOT NULL,
	"scope_kind" text NOT NULL,
	"scope_id" text NOT NULL,
	"kind" text NOT NULL,
	"created_at" bigint NOT NULL,
	"updated_at" bigint NOT NULL,
	CONSTRAINT "phone_list_account_id_id_pk" PRIMARY KEY("account_id","id"),
	CONSTRAINT "phone_list_scope_kind_chk" CHECK ("phone_list"."scope_kind" in ('account','user','did','number')),
	CONSTRAINT "phone_list_kind_chk" CHECK ("phone_list"."kind" in ('dnc_out','dnc_in','dnr','allow'))
);
--> statement-breakpoint
CREATE TABLE "recording_rule" (
	"account_id" text NOT NULL,
	"id" text NOT NULL,
	"name" text NOT NULL,
	"scope_kind" text NOT NULL,
	"scope_id" text NOT NULL,
	"direction" text DEFAULT 'any' NOT NULL,
	"mode" text NOT NULL,
	"stereo" smallint DEFAULT 0 NOT NULL,
	"created_at" bigint NOT NULL,
	"updated_at" bigint NOT NULL,
	CONSTRAINT "recording_rule_account_id_id_pk" PRIMARY KEY("account_id","id"),
	CONSTRAINT "recording_rule_scope_kind_chk" CHECK ("recording_rule"."scope_kind" in ('account','user','did','number')),
	CONSTRAINT "recording_rule_direction_chk" CHECK ("recording_rule"."direction" in ('in','out','dialer','any')),
	CONSTRAINT "recording_rule_mode_chk" CHECK ("recording_rule"."mode" in ('off','on','on_demand')),
	CONSTRAINT "recording_rule_stereo_chk" CHECK ("recording_rule"."stereo" in (0,1))
);
--> statement-breakpoint
CREATE TABLE "agent_queue_assignment" (
	"account_id" text NOT NULL,
	"queue_id" text NOT NULL,
	"user_id" text NOT NULL,
	"tier_level" integer DEFAULT 1 NOT NULL,
	"position" integer DEFAULT 0 NOT NULL,
	"delay_sec" integer DEFAULT 0 NOT NULL,
	"mode" text DEFAULT 'static' NOT NULL,
	"created_at" bigint NOT NULL,
	CONSTRAINT "agent_queue_assignment_account_id_queue_id_user_id_pk" PRIMARY KEY("account_id","queue_id","user_id"),
	CONSTRAINT "agent_queue_assignment_tier_chk" CHECK ("agent_queue_assignment"."tier_level" between 1 and 10),
	CONSTRAINT "agent_queue_assignment_position_chk" CHECK ("agent_queue_assignment"."position" >= 0),
	CONSTRAINT "agent_queue_assignment_delay_chk" CHECK ("agent_queue_assignment"."delay_sec" >= 0),
	CONSTRAINT "agent_queue_assignment_mode_chk" CHECK ("agent_queue_assignment"."mode" in ('static','dynamic','mandatory','supervisor_managed'))
);
--> statement-breakpoint
CREATE TABLE "in_queue_option" (
	"account_id" text NOT NULL,
	"queue_id" text NOT NULL,
	"digit" text NOT NULL,
	"action" text NOT NULL,
	"dest_kind" text,
	"dest_id" text,
	"webhook_url" text,
	"webhook_secret_ref" text,
	"stay_in_queue" smallint DEFAULT 0 NOT NULL,
	"prompt_media_id" text,
	"label" text,
	CONSTRAINT "in_queue_option_account_id_queue_id_digit_pk" PRIMARY KEY("account_id","queue_id","digit"),
	CONSTRAINT "in_queue_option_digit_chk" CHECK ("in_queue_option"."digit" in ('0','1','2','3','4','5','6','7','8','9','*','#')),
	CONSTRAINT "in_queue_option_action_chk" CHECK ("in_queue_option"."action" in ('route','webhook','deflect','hangup')),
	CONSTRAINT "in_queue_option_dest_kind_chk" CHECK ("in_queue_option"."dest_kind" is null or "in_queue_option"."dest_kind" in ('flow','user','extension','ring_group','queue','voicemail','conference','forward','hangup')),
	CONSTRAINT "in_queue_option_stay_chk" CHECK ("in_queue_option"."stay_in_queue" in (0,1))
);
--> statement-breakpoint
CREATE TABLE "queue" (
	"account_id" text NOT NULL,
	"id" text NOT NULL,
	"name" text NOT NULL,
	"strategy" text DEFAULT 'longest_idle' NOT NULL,
	"agent_ring_timeout_sec" integer DEFAULT 20 NOT NULL,
	"max_wait_sec" integer,
	"wrap_up_sec" integer DEFAULT 0 NOT NULL,
	"max_no_answer" integer DEFAULT 0 NOT NULL,
	"announce_position" smallint DEFAULT 0 NOT NULL,
	"announce_first_sec" integer DEFAULT 30 NOT NULL,
	"announce_interval_sec" integer DEFAULT 60 NOT NULL,
	"moh_mode" text DEFAULT 'stream' NOT NULL,
	"moh_media_id" text,
	"language" text,
	"timeout_dest_kind" text,
	"timeout_dest_id" text,
	"abandon_dest_kind" text,
	"abandon_dest_id" text,
	"no_agents_dest_kind" text,
	"no_agents_dest_id" text,
	"max_queued" integer,
	"queue_full_dest_kind" text,
	"queue_full_dest_id" text,
	"ewt_threshold_sec" integer,
	"ewt_aht_sec" integer,
	"ewt_dest_kind" text,
	"ewt_dest_id" text,
	"schedule_id" text,
	"closed_dest_kind" text,
	"closed_dest_id" text,
	"holiday_dest_kind" text,
	"holiday_dest_id" text,
	"created_at" bigint NOT NULL,
	"updated_at" bigint NOT NULL,
	CONSTRAINT "queue_account_id_id_pk" PRIMARY KEY("account_id","id"),
	CONSTRAINT "queue_strategy_chk" CHECK ("queue"."strategy" in ('ring_all','longest_idle','round_robin','top_down','fewest_calls','random','sequential')),
	CONSTRAINT "queue_moh_mode_chk" CHECK ("queue"."moh_mode" in ('stream','file')),
	CONSTRAINT "queue_announce_position_chk" CHECK ("queue"."announce_position" in (0,1)),
	CONSTRAINT "queue_agent_ring_timeout_chk" CHECK ("queue"."agent_ring_timeout_sec" between 5 and 300),
	CONSTRAINT "queue_max_wait_chk" CHECK ("queue"."max_wait_sec" is null or "queue"."max_wait_sec" between 10 and 86400),
	CONSTRAINT "queue_wrap_up_chk" CHECK ("queue"."wrap_up_sec" between 0 and 3600),
	CONSTRAINT "queue_max_no_answer_chk" CHECK ("queue"."max_no_answer" between 0 and 100),
	CONSTRAINT "queue_max_queued_chk" CHECK ("queue"."max_queued" is null or "queue"."max_queued" >= 1),
	CONSTRAINT "queue_ewt_threshold_chk" CHECK ("queue"."ewt_threshold_sec" is null or "queue"."ewt_threshold_sec" >= 1),
	CONSTRAINT "queue_ewt_aht_chk" CHECK ("queue"."ewt_aht_sec" is null or "queue"."ewt_aht_sec" >= 1),
	CONSTRAINT "queue_timeout_dest_kind_chk" CHECK ("queue"."timeout_dest_kind" is null or "queue"."timeout_dest_kind" in ('flow','user','extension','ring_group','queue','voicemail','conference','forward','hangup')),
	CONSTRAINT "queue_abandon_dest_kind_chk" CHECK ("queue"."abandon_dest_kind" is null or "queue"."abandon_dest_kind" in ('flow','user','extension','ring_group','queue','voicemail','conference','forward','hangup')),
	CONSTRAINT "queue_no_agents_dest_kind_chk" CHECK ("queue"."no_agents_dest_kind" is null or "queue"."no_agents_dest_kind" in ('flow','user','extension','ring_group','queue','voicemail','conference','forward','hangup')),
	CONSTRAINT "queue_queue_full_dest_kind_chk" CHECK ("queue"."queue_full_dest_kind" is null or "queue"."queue_full_dest_kind" in ('flow','user','extension','ring_group','queue','voicemail','conference','forward','hangup')),
	CONSTRAINT "queue_ewt_dest_kind_chk" CHECK ("queue"."ewt_dest_kind" is null or "queue"."ewt_dest_kind" in ('flow','user','extension','ring_group','queue','voicemail','conference','forward','hangup')),
	CONSTRAINT "queue_closed_dest_kind_chk" CHECK ("queue"."closed_dest_kind" is null or "queue"."closed_dest_kind" in ('flow','user','extension','ring_group','queue','voicemail','conference','forward','hangup')),
	CONSTRAINT "queue_holiday_dest_kind_chk" CHECK ("queue"."holiday_dest_kind" is null or "queue"."holiday_dest_kind" in ('flow','user','extension','ring_group','queue','voicemail','conference','forward','hangup'))
);
--> statement-breakpoint
CREATE TABLE "ring_group_member" (
	"account_id" text NOT NULL,
	"ring_group_id" text NOT NULL,
	"position" integer NOT NULL,
	"user_id" text,
	"device_id" text,
	"delay_sec" integer DEFAULT 0 NOT NULL,
	"timeout_sec" integer,
	CONSTRAINT "ring_group_member_account_id_ring_group_id_position_pk" PRIMARY KEY("account_id","ring_group_id","position"),
	CONSTRAINT "ring_group_member_one_target_chk" CHECK (("ring_group_member"."user_id" is null) <> ("ring_group_member"."device_id" is null)),
	CONSTRAINT "ring_group_member_delay_chk" CHECK ("ring_group_member"."delay_sec" between 0 and 300),
	CONSTRAINT "ring_group_member_timeout_chk" CHECK ("ring_group_member"."timeout_sec" is null or "ring_group_member"."timeout_sec" between 5 and 600)
);
--> statement-breakpoint
CREATE TABLE "ring_group" (
	"account_id" text NOT NULL,
	"id" text NOT NULL,
	"name" text NOT NULL,
	"strategy" text DEFAULT 'ring_all' NOT NULL,
	"ring_timeout_sec" integer DEFAULT 20 NOT NULL,
	"moh_media_id" text,
	"exit_dest_kind" text,
	"exit_dest_id" text,
	"schedule_id" text,
	"closed_dest_kind" text,
	"closed_dest_id" text,
	"holiday_dest_kind" text,
	"holiday_dest_id" text,
	"created_at" bigint NOT NULL,
	"updated_at" bigint NOT NULL,
	CONSTRAINT "ring_group_account_id_id_pk" PRIMARY KEY("account_id","id"),
	CONSTRAINT "ring_group_strategy_chk" CHECK ("ring_group"."strategy" in ('ring_all','sequential','round_robin')),
	CONSTRAINT "ring_group_ring_timeout_chk" CHECK ("ring_group"."ring_timeout_sec" between 5 and 600)
);
--> statement-breakpoint
CREATE TABLE "time_schedule_rule" (
	"account_id" text NOT NULL,
	"schedule_id" text NOT NULL,
	"position" integer NOT NULL,
	"kind" text NOT NULL,
	"dow" smallint,
	"start_time" text,
	"end_time" text,
	"start_date" text,
	"end_date" text,
	"is_closed" smallint DEFAULT 0 NOT NULL,
	"label" text,
	CONSTRAINT "time_schedule_rule_account_id_schedule_id_position_pk" PRIMARY KEY("account_id","schedule_id","position"),
	CONSTRAINT "time_schedule_rule_kind_chk" CHECK ("time_schedule_rule"."kind" in ('weekly','date','date_range')),
	CONSTRAINT "time_schedule_rule_dow_chk" CHECK ("time_schedule_rule"."dow" is null or "time_schedule_rule"."dow" between 0 and 6),
	CONSTRAINT "time_schedule_rule_is_closed_chk" CHECK ("time_schedule_rule"."is_closed" in (0,1)),
	CONSTRAINT "time_schedule_rule_times_chk" CHECK ("time_schedule_rule"."start_time" is null or "time_schedule_rule"."end_time" is null or "time_schedule_rule"."start_time" < "time_schedule_rule"."end_time"),
	CONSTRAINT "time_schedule_rule_dates_chk" CHECK ("time_schedule_rule"."start_date" is null or "time_schedule_rule"."end_date" is null or "time_schedule_rule"."start_date" <= "time_schedule_rule"."end_date")
);
--> statement-breakpoint
CREATE TABLE "time_schedule" (
	"account_id" text NOT NULL,
	"id" text NOT NULL,
	"name" text NOT NULL,
	"timezone" text,
	"created_at" bigint NOT NULL,
	"updated_at" bigint NOT NULL,
	CONSTRAINT "time_schedule_account_id_id_pk" PRIMARY KEY("account_id","id")
);
--> statement-breakpoint
CREATE TABLE "script" (
	"account_id" text NOT NULL,
	"id" text NOT NULL,
	"name" text NOT NULL,
	"description" text,
	"content_type" text NOT NULL,
	"body" text NOT NULL,
	"version" integer DEFAULT 1 NOT NULL,
	"created_at" bigint NOT NULL,
	"updated_at" bigint NOT NULL,
	CONSTRAINT "script_account_id_id_pk" PRIMARY KEY("account_id","id"),
	CONSTRAINT "script_content_type_chk" CHECK ("script"."content_type" in ('text/markdown','text/html','application/json')),
	CONSTRAINT "script_version_chk" CHECK ("script"."version" >= 1)
);
--> statement-breakpoint
CREATE TABLE "sip_domain" (
	"domain" text PRIMARY KEY NOT NULL,
	"account_id" text NOT NULL,
	"is_primary" smallint DEFAULT 0 NOT NULL,
	"created_at" bigint NOT NULL
);
--> statement-breakpoint
CREATE TABLE "number_transform" (
	"account_id" text NOT NULL,
	"id" text NOT NULL,
	"name" text NOT NULL,
	"scope_kind" text NOT NULL,
	"scope_id" text NOT NULL,
	"direction" text NOT NULL,
	"match_regex" text NOT NULL,
	"replacement" text NOT NULL,
	"ordering" integer DEFAULT 100 NOT NULL,
	"stop_on_match" smallint DEFAULT 0 NOT NULL,
	"created_at" bigint NOT NULL,
	"updated_at" bigint NOT NULL,
	CONSTRAINT "number_transform_account_id_id_pk" PRIMARY KEY("account_id","id"),
	CONSTRAINT "number_transform_scope_kind_chk" CHECK ("number_transform"."scope_kind" in ('account','trunk','did','route')),
	CONSTRAINT "number_transform_direction_chk" CHECK ("number_transform"."direction" in ('inbound_dst','inbound_cid','outbound_dst','outbound_cid')),
	CONSTRAINT "number_transform_stop_chk" CHECK ("number_transform"."stop_on_match" in (0,1))
);
--> statement-breakpoint
CREATE TABLE "outbound_route" (
	"account_id" text NOT NULL,
	"id" text NOT NULL,
	"name" text NOT NULL,
	"match_prefix" text,
	"match_country" text,
	"via" text NOT NULL,
	"trunk_id" text,
	"priority" integer DEFAULT 100 NOT NULL,
	"created_at" bigint NOT NULL,
	"updated_at" bigint NOT NULL,
	CONSTRAINT "outbound_route_account_id_id_pk" PRIMARY KEY("account_id","id"),
	CONSTRAINT "outbound_route_via_chk" CHECK ("outbound_route"."via" in ('carrier','trunk')),
	CONSTRAINT "outbound_route_trunk_chk" CHECK (("outbound_route"."via" = 'trunk') = ("outbound_route"."trunk_id" is not null))
);
--> statement-breakpoint
CREATE TABLE "sip_trunk_acl" (
	"account_id" text NOT NULL,
	"trunk_id" text NOT NULL,
	"cidr" text NOT NULL,
	"created_at" bigint NOT NULL,
	CONSTRAINT "sip_trunk_acl_account_id_trunk_id_cidr_pk" PRIMARY KEY("account_id","trunk_id","cidr")
);
--> statement-breakpoint
CREATE TABLE "sip_trunk" (
	"account_id" text NOT NULL,
	"id" text NOT NULL,
	"name" text NOT NULL,
	"provider" text DEFAULT 'generic' NOT NULL,
	"role" text DEFAULT 'carrier' NOT NULL,
	"direction" text DEFAULT 'both' NOT NULL,
	"proxy" text,
	"transport" text DEFAULT 'udp' NOT NULL,
	"do_register" smallint DEFAULT 0 NOT NULL,
	"auth_username" text,
	"auth_secret_ref" text,
	"realm" text,
	"from_domain" text,
	"from_user" text,
	"expire_sec" integer DEFAULT 3600 NOT NULL,
	"inbound_auth" text DEFAULT 'ip' NOT NULL,
	"inbound_username" text,
	"inbound_secret_ref" text,
	"reg_node" text,
	"max_channels" integer,
	"cid_number" text,
	"ping_sec" integer,
	"status" text DEFAULT 'active' NOT NULL,
	"created_at" bigint NOT NULL,
	"updated_at" bigint NOT NULL,
	CONSTRAINT "sip_trunk_account_id_id_pk" PRIMARY KEY("account_id","id"),
	CONSTRAINT "sip_trunk_provider_chk" CHECK ("sip_trunk"."provider" in ('generic','carrier')),
	CONSTRAINT "sip_trunk_role_chk" CHECK ("sip_trunk"."role" in ('carrier','pbx')),
	CONSTRAINT "sip_trunk_direction_chk" CHECK ("sip_trunk"."direction" in ('inbound','outbound','both')),
	CONSTRAINT "sip_trunk_transport_chk" CHECK ("sip_trunk"."transport" in ('udp','tcp','tls')),
	CONSTRAINT "sip_trunk_do_register_chk" CHECK ("sip_trunk"."do_register" in (0,1)),
	CONSTRAINT "sip_trunk_inbound_auth_chk" CHECK ("sip_trunk"."inbound_auth" in ('ip','register','digest')),
	CONSTRAINT "sip_trunk_status_chk" CHECK ("sip_trunk"."status" in ('active','disabled')),
	CONSTRAINT "sip_trunk_expire_chk" CHECK ("sip_trunk"."expire_sec" between 60 and 86400),
	CONSTRAINT "sip_trunk_max_channels_chk" CHECK ("sip_trunk"."max_channels" is null or "sip_trunk"."max_channels" >= 1),
	CONSTRAINT "sip_trunk_ping_chk" CHECK ("sip_trunk"."ping_sec" is null or "sip_trunk"."ping_sec" between 5 and 3600)
);
--> statement-breakpoint
CREATE TABLE "app_user" (
	"account_id" text NOT NULL,
	"id" text NOT NULL,
	"username" text NOT NULL,
	"display_name" text NOT NULL,
	"email" text,
	"is_agent" smallint DEFAULT 0 NOT NULL,
	"out_cid_number" text,
	"out_cid_name" text,
	"max_simultaneous" integer DEFAULT 2 NOT NULL,
	"ring_timeout_sec" integer DEFAULT 25 NOT NULL,
	"voicemail_id" text,
	"team_id" text,
	"status" text DEFAULT 'active' NOT NULL,
	"created_at" bigint NOT NULL,
	"updated_at" bigint NOT NULL,
	CONSTRAINT "app_user_account_id_id_pk" PRIMARY KEY("account_id","id"),
	CONSTRAINT "app_user_status_chk" CHECK ("app_user"."status" in ('active','disabled')),
	CONSTRAINT "app_user_is_agent_chk" CHECK ("app_user"."is_agent" in (0,1)),
	CONSTRAINT "app_user_max_simultaneous_chk" CHECK ("app_user"."max_simultaneous" >= 1),
	CONSTRAINT "app_user_ring_timeout_chk" CHECK ("app_user"."ring_timeout_sec" between 5 and 300)
);
--> statement-breakpoint
CREATE TABLE "voicemail" (
	"account_id" text NOT NULL,
	"id" text NOT NULL,
	"name" text NOT NULL,
	"greeting_media_id" text,
	"skip_instructions" smallint DEFAULT 0 NOT NULL,
	"quota_mb" integer DEFAULT 100 NOT NULL,
	"notify_email" text,
	"pin_secret_ref" text,
	"max_message_sec" integer DEFAULT 300 NOT NULL,
	"language" text,
	"created_at" bigint NOT NULL,
	"updated_at" bigint NOT NULL,
	CONSTRAINT "voicemail_account_id_id_pk" PRIMARY KEY("account_id","id"),
	CONSTRAINT "voicemail_skip_instructions_chk" CHECK ("voicemail"."skip_instructions" in (0,1)),
	CONSTRAINT "voicemail_quota_mb_chk" CHECK ("voicemail"."quota_mb" between 1 and 10240),
	CONSTRAINT "voicemail_max_message_sec_chk" CHECK ("voicemail"."max_message_sec" between 10 and 3600)
);
--> statement-breakpoint
ALTER TABLE "agent_queue_assignment" ADD CONSTRAINT "agent_queue_assignment_queue_fk" FOREIGN KEY ("account_id","queue_id") REFERENCES "public"."queue"("account_id","id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "in_queue_option" ADD CONSTRAINT "in_queue_option_queue_fk" FOREIGN KEY ("account_id","queue_id") REFERENCES "public"."queue"("account_id","id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE UNIQUE INDEX "agent_team_name_uq" ON "agent_team" USING btree ("account_id",lower("name"));--> statement-breakpoint
CREATE INDEX "contact_phone_contact_idx" ON "contact_phone" USING btree ("account_id","contact_id");--> statement-breakpoint
CREATE UNIQUE INDEX "contact_external_id_uq" ON "contact" USING btree ("account_id","external_id");--> statement-breakpoint
CREATE INDEX "contact_tags_idx" ON "contact" USING gin ("tags");--> statement-breakpoint
CREATE UNIQUE INDEX "custom_field_key_uq" ON "custom_field" USING btree ("account_id","entity","key");--> statement-breakpoint
CREATE INDEX "device_credential_device_idx" ON "device_credential" USING btree ("account_id","device_id");--> statement-breakpoint
CREATE INDEX "device_user_idx" ON "device" USING btree ("account_id","user_id","id");--> statement-breakpoint
CREATE UNIQUE INDEX "extension_digits_uq" ON "extension" USING btree ("account_id","digits");--> statement-breakpoint
CREATE INDEX "extension_dest_idx" ON "extension" USING btree ("account_id","dest_id");--> statement-breakpoint
CREATE INDEX "extension_schedule_idx" ON "extension" USING btree ("account_id","schedule_id");--> statement-breakpoint
CREATE UNIQUE INDEX "forward_user_trigger_uq" ON "forward" USING btree ("account_id","user_id","trigger") WHERE "forward"."user_id" is not null;--> statement-breakpoint
CREATE UNIQUE INDEX "forward_number_trigger_uq" ON "forward" USING btree ("account_id","number_id","trigger") WHERE "forward"."number_id" is not null;--> statement-breakpoint
CREATE INDEX "media_file_kind_idx" ON "media_file" USING btree ("account_id","kind","id");--> statement-breakpoint
CREATE INDEX "media_playlist_item_media_idx" ON "media_playlist_item" USING btree ("account_id","media_id");--> statement-breakpoint
CREATE UNIQUE INDEX "number_e164_uq" ON "number" USING btree ("account_id","e164");--> statement-breakpoint
CREATE INDEX "number_dest_idx" ON "number" USING btree ("account_id","dest_id");--> statement-breakpoint
CREATE INDEX "number_schedule_idx" ON "number" USING btree ("account_id","schedule_id");--> statement-breakpoint
CREATE UNIQUE INDEX "acl_rule_name_uq" ON "acl_rule" USING btree ("account_id","name");--> statement-breakpoint
CREATE INDEX "acl_rule_scope_idx" ON "acl_rule" USING btree ("account_id","scope_kind","scope_id");--> statement-breakpoint
CREATE UNIQUE INDEX "call_limit_name_uq" ON "call_limit" USING btree ("account_id","name");--> statement-breakpoint
CREATE INDEX "call_limit_scope_idx" ON "call_limit" USING btree ("account_id","scope_kind","scope_id");--> statement-breakpoint
CREATE UNIQUE INDEX "caller_id_rule_name_uq" ON "caller_id_rule" USING btree ("account_id","name");--> statement-breakpoint
CREATE INDEX "caller_id_rule_scope_idx" ON "caller_id_rule" USING btree ("account_id","scope_kind","scope_id");--> statement-breakpoint
CREATE UNIQUE INDEX "geo_policy_name_uq" ON "geo_policy" USING btree ("account_id","name");--> statement-breakpoint
CREATE INDEX "geo_policy_scope_idx" ON "geo_policy" USING btree ("account_id","scope_kind","scope_id");--> statement-breakpoint
CREATE INDEX "phone_list_entry_e164_idx" ON "phone_list_entry" USING btree ("account_id","e164");--> statement-breakpoint
CREATE UNIQUE INDEX "phone_list_name_uq" ON "phone_list" USING btree ("account_id","name");--> statement-breakpoint
CREATE INDEX "phone_list_scope_idx" ON "phone_list" USING btree ("account_id","scope_kind","scope_id");--> statement-breakpoint
CREATE UNIQUE INDEX "recording_rule_name_uq" ON "recording_rule" USING btree ("account_id","name");--> statement-breakpoint
CREATE INDEX "recording_rule_scope_idx" ON "recording_rule" USING btree ("account_id","scope_kind","scope_id");--> statement-breakpoint
CREATE INDEX "agent_queue_assignment_user_idx" ON "agent_queue_assignment" USING btree ("account_id","user_id");--> statement-breakpoint
CREATE UNIQUE INDEX "queue_account_name_uq" ON "queue" USING btree ("account_id",lower("name"));--> statement-breakpoint
CREATE INDEX "ring_group_member_user_idx" ON "ring_group_member" USING btree ("account_id","user_id");--> statement-breakpoint
CREATE INDEX "ring_group_member_device_idx" ON "ring_group_member" USING btree ("account_id","device_id");--> statement-breakpoint
CREATE UNIQUE INDEX "ring_group_name_uq" ON "ring_group" USING btree ("account_id",lower("name"));--> statement-breakpoint
CREATE INDEX "ring_group_schedule_idx" ON "ring_group" USING btree ("account_id","schedule_id");--> statement-breakpoint
CREATE UNIQUE INDEX "time_schedule_name_uq" ON "time_schedule" USING btree ("account_id",lower("name"));--> statement-breakpoint
CREATE INDEX "sip_domain_account_idx" ON "sip_domain" USING btree ("account_id");--> statement-breakpoint
CREATE UNIQUE INDEX "number_transform_name_uq" ON "number_transform" USING btree ("account_id","name");--> statement-breakpoint
CREATE INDEX "number_transform_scope_idx" ON "number_transform" USING btree ("account_id","scope_kind","scope_id","direction","ordering");--> statement-breakpoint
CREATE UNIQUE INDEX "outbound_route_name_uq" ON "outbound_route" USING btree ("account_id","name");--> statement-breakpoint
CREATE INDEX "outbound_route_priority_idx" ON "outbound_route" USING btree ("account_id","priority");--> statement-breakpoint
CREATE UNIQUE INDEX "sip_trunk_name_uq" ON "sip_trunk" USING btree ("account_id","name");--> statement-breakpoint
CREATE UNIQUE INDEX "app_user_username_uq" ON "app_user" USING btree ("account_id","username");--> statement-breakpoint
CREATE INDEX "app_user_team_idx" ON "app_user" USING btree ("account_id","team_id");--> statement-breakpoint
CREATE INDEX "app_user_voicemail_idx" ON "app_user" USING btree ("account_id","voicemail_id");