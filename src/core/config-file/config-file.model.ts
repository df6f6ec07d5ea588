/**
 * The config file: one account's config-managed resources (SIP domains, trunks, outbound routes,
 * number transforms, forwards, policies), declaratively, with human keys instead of ids. This TypeBox
 * schema validates a parsed file (YAML or JSON) and types the plan the admin endpoints return.
 */
import { Type as T, type Static, type TSchema } from "@sinclair/typebox";
import { Flag } from "../validation/fields.ts";
import { TrunkModel } from "../trunks/trunks.model.ts";
import { ForwardModel } from "../forwards/forwards.model.ts";
import { PolicyModel } from "../policies/policies.model.ts";
import { RateModel } from "../rates/rates.model.ts";

/** A SIP domain: lower-case DNS name with at least two labels. */
export const SIP_DOMAIN_PATTERN = "^(?=.{4,253}$)(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\\.)+[a-z](?:[a-z0-9-]{0,61}[a-z0-9])?$";

/** The format version this code reads and writes. */
export const CONFIG_FILE_VERSION = 1;

const section = <S extends TSchema>(entry: S, maxItems: number, description: string) => T.Optional(T.Array(entry, { maxItems, description }));

export namespace ConfigFileModel {
  /** One SIP domain (`sip_domains[]`), keyed by domain. */
  export const SipDomainEntry = T.Object(
    {
      domain: T.String({ pattern: SIP_DOMAIN_PATTERN, description: "A realm the account answers on, lower case, e.g. acme.sip.example.com. Unique platform-wide." }),
      is_primary: T.Optional(Flag("1 for exactly one domain: the default realm of new devices. Default 0.")),
    },
    { additionalProperties: false },
  );

  /** The whole file. An absent section means "none": the file is the whole truth for the account. */
  export const File = T.Object(
    {
      version: T.Literal(CONFIG_FILE_VERSION, { description: "Format version; 1." }),
      sip_domains: section(SipDomainEntry, 50, "SIP domains (realms) of the account."),
      trunks: section(TrunkModel.TrunkEntry, 500, "SIP trunks, keyed by name."),
      outbound_routes: section(TrunkModel.OutboundRouteEntry, 2000, "Outbound routes, keyed by name; the lowest priority matching a call wins."),
      number_transforms: section(TrunkModel.NumberTransformEntry, 2000, "Number transforms, keyed by name."),
      forwards: section(ForwardModel.ForwardEntry, 10000, "Call forwards, keyed by (user or did, trigger)."),
      call_limits: section(PolicyModel.CallLimitEntry, 2000, "Call limits, keyed by name."),
      caller_id_rules: section(PolicyModel.CallerIdRuleEntry, 2000, "Caller-ID rules, keyed by name."),
      acl_rules: section(PolicyModel.AclRuleEntry, 2000, "Access rules, keyed by name."),
      recording_rules: section(PolicyModel.RecordingRuleEntry, 2000, "Recording rules, keyed by name."),
      phone_lists: section(PolicyModel.PhoneListEntry, 200, "Phone lists (do-not-call, do-not-record, allow), keyed by name."),
      geo_policies: section(PolicyModel.GeoPolicyEntry, 200, "Destination-country policies, keyed by name."),
      rate_plans: section(RateModel.RatePlanEntry, 50, "Rate plans that price calls, keyed by name; the one with default: 1 prices the account's calls."),
    },
    { additionalProperties: false, description: "Parley config file (one account)." },
  );
  export type File = Static<typeof File>;

  /** One field that changes. Secrets show only `secret`; sets show `added` / `removed`; others `old` / `new`. */
  export const FieldChange = T.Object(
    {
      field: T.String(),
      old: T.Optional(T.Unknown({ description: "Stored value (null when unset)." })),
      new: T.Optional(T.Unknown({ description: "Value in the file (null when unset)." })),
      added: T.Optional(T.Array(T.String(), { description: "Set members the file adds." })),
      removed: T.Optional(T.Array(T.String(), { description: "Set members the file drops." })),
      secret: T.Optional(T.Union([T.Literal("set"), T.Literal("changed"), T.Literal("removed")], { description: "A secret field: only whether it changes." })),
    },
    { additionalProperties: false },
  );

  /** Creates, updates and deletes of one section. */
  export const SectionPlan = T.Object(
    {
      create: T.Array(T.Object({ key: T.String(), values: T.Record(T.String(), T.Unknown(), { description: "The entry as it will be stored; secrets masked." }) }, { additionalProperties: false })),
      update: T.Array(T.Object({ key: T.String(), id: T.String(), changes: T.Array(FieldChange) }, { additionalProperties: false })),
      delete: T.Array(T.Object({ key: T.String(), id: T.String() }, { additionalProperties: false })),
    },
    { additionalProperties: false },
  );

  /** What applying a file would change. */
  export const Plan = T.Object(
    {
      account_id: T.String(),
      changes: T.Integer({ description: "Creates + updates + deletes; 0 = the account already matches the file." }),
      resources: T.Object(
        {
          sip_domains: SectionPlan,
          trunks: SectionPlan,
          outbound_routes: SectionPlan,
          number_transforms: SectionPlan,
          forwards: SectionPlan,
          call_limits: SectionPlan,
          caller_id_rules: SectionPlan,
          acl_rules: SectionPlan,
          recording_rules: SectionPlan,
          phone_lists: SectionPlan,
          geo_policies: SectionPlan,
          rate_plans: SectionPlan,
        },
        { additionalProperties: false },
      ),
    },
    { additionalProperties: false },
  );
  export type Plan = Static<typeof Plan>;
  export type SectionPlan = Static<typeof SectionPlan>;

  /** The result of an apply. */
  export const ApplyResult = T.Object(
    {
      applied: T.Union([T.Literal(0), T.Literal(1)], { description: "1 when something was written; 0 when the plan was empty." }),
      plan: Plan,
    },
    { additionalProperties: false },
  );
  export type ApplyResult = Static<typeof ApplyResult>;

  /** The file formats read and written. */
  export const Format = T.Union([T.Literal("yaml"), T.Literal("json")], { description: "yaml (default) or json." });
  export type Format = Static<typeof Format>;

  /** POST /admin/config/plan and /admin/config/apply. */
  export const Request = T.Object(
    {
      account_id: T.String({ minLength: 1, maxLength: 64, description: "The account the file describes." }),
      format: T.Optional(Format),
      content: T.String({ maxLength: 900_000, description: "The file's text." }),
    },
    { additionalProperties: false },
  );
  export type Request = Static<typeof Request>;

  /** GET /admin/config/export query. */
  export const ExportQuery = T.Object({ account_id: T.String({ minLength: 1, maxLength: 64 }), format: T.Optional(Format) });

  /** GET /admin/config/export reply data. */
  export const Export = T.Object(
    { account_id: T.String(), format: Format, content: T.String({ description: "The file's text; applying it back changes nothing." }) },
    { additionalProperties: false },
  );
}
