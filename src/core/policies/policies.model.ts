/**
 * TypeBox models of the config file's policy sections (policies have no /v1 surface). Every policy
 * has a name (its key in the file) and a scope: account (default), user (by username), or did /
 * number (a DID of the account, by E.164).
 */
import { Type as T, type Static, type TSchema } from "@sinclair/typebox";
import { CallerNameText, Country, Flag, Name, NonNegative, Nullable, PhoneInput } from "../validation/fields.ts";

const lit = <V extends string>(values: readonly V[], description: string) => T.Union(values.map((v) => T.Literal(v)), { description });

export namespace PolicyModel {
  export const SCOPE_KINDS = ["account", "user", "did", "number"] as const;
  export const DIRECTIONS = ["in", "out", "dialer", "any"] as const;
  export const ACL_RULE_TYPES = ["ip_allow", "ip_deny", "geo_allow", "geo_deny"] as const;
  export const RECORDING_MODES = ["off", "on", "on_demand"] as const;
  export const LIST_KINDS = ["dnc_out", "dnc_in", "dnr", "allow"] as const;
  export const GEO_MODES = ["allowlist", "denylist"] as const;

  /** name, scope_kind, scope: shared by every policy. */
  const scoped = <P extends Record<string, TSchema>>(fields: P, description: string) =>
    T.Object(
      {
        name: Name(100),
        scope_kind: T.Optional(lit(SCOPE_KINDS, "Where the policy applies. Default account.")),
        scope: T.Optional(Nullable(T.String({ minLength: 1, maxLength: 64, description: "A username (user) or E.164 DID (did, number); absent for account." }))),
        ...fields,
      },
      { additionalProperties: false, description },
    );

  export const CallLimitEntry = scoped(
    {
      direction: T.Optional(lit(DIRECTIONS, "Which calls count. Default any.")),
      period_sec: T.Optional(Nullable(T.Integer({ minimum: 1, maximum: 2592000, description: "Absent: max_count concurrent calls. N: at most max_count calls started in any N seconds." }))),
      max_count: NonNegative({ maximum: 1000000, description: "The ceiling; 0 blocks every call of that direction." }),
      hard: T.Optional(Flag("1 (default): calls beyond the limit are refused. 0: they pass and a limit event is raised.")),
    },
    "A call limit.",
  );
  export type CallLimitEntry = Static<typeof CallLimitEntry>;

  export const CallerIdRuleEntry = scoped(
    {
      match_country: T.Optional(Nullable(Country("Destination country the rule applies to; absent = any. A country the router never tells apart (MF, BL: +590 is GP's) is refused."))),
      cid_number: PhoneInput("Caller-ID number presented."),
      cid_name: T.Optional(Nullable(CallerNameText({ description: "Caller-ID name presented, where the network carries one; one line, up to 40 characters." }))),
      priority: T.Optional(T.Integer({ minimum: 0, maximum: 100000, description: "Lower wins among matching rules. Default 100." })),
    },
    "A caller-ID rule.",
  );
  export type CallerIdRuleEntry = Static<typeof CallerIdRuleEntry>;

  export const AclRuleEntry = scoped(
    {
      rule_type: lit(ACL_RULE_TYPES, "ip_allow / ip_deny: source address ranges; geo_allow / geo_deny: source countries."),
      value: T.String({ minLength: 1, maxLength: 64, description: "A CIDR (or single address) for ip_*, an ISO alpha-2 country for geo_*." }),
    },
    "An access rule.",
  );
  export type AclRuleEntry = Static<typeof AclRuleEntry>;

  export const RecordingRuleEntry = scoped(
    {
      direction: T.Optional(lit(DIRECTIONS, "Which calls. Default any.")),
      mode: lit(RECORDING_MODES, "off, on (every call), on_demand (an agent or the API starts it)."),
      stereo: T.Optional(Flag("1: each party on its own channel. Default 0.")),
    },
    "A recording rule.",
  );
  export type RecordingRuleEntry = Static<typeof RecordingRuleEntry>;

  export const PhoneListEntry = scoped(
    {
      kind: lit(LIST_KINDS, "dnc_out: never dial these; dnc_in: refuse calls from these; dnr: never record calls with these; allow: always let through (these override dnc_out, dnc_in and geo policies)."),
      entries: T.Optional(T.Array(PhoneInput("An E.164 number."), { maxItems: 100000, description: "The numbers; order does not matter." })),
    },
    "A phone list.",
  );
  export type PhoneListEntry = Static<typeof PhoneListEntry>;

  export const GeoPolicyEntry = scoped(
    {
      mode: lit(GEO_MODES, "allowlist: outbound calls may reach only these countries; denylist: never these."),
      countries: T.Array(
        T.String({
          pattern: "^[A-Z]{2}$",
          description:
            "An ISO 3166-1 alpha-2 destination country in upper case (territories that share a calling code, such as JE, GG, IM in +44, are told apart by number range; one the router never tells apart, such as MF or BL in +590, is refused), or ZZ: numbers of no country (+800, +808, +870, +878, +881, +882, +883, +888, +979: international networks and services).",
        }),
        { maxItems: 250, description: "ISO alpha-2 destination countries, and ZZ for numbers of no country." },
      ),
    },
    "A geographic policy on outbound destinations.",
  );
  export type GeoPolicyEntry = Static<typeof GeoPolicyEntry>;
}
