/**
 * TypeBox models of the trunk sections of the config file (trunks, outbound_routes,
 * number_transforms). There is no /v1 surface: these validate the file and document its format.
 */
import { Type as T, type Static } from "@sinclair/typebox";
import { Country, Flag, Name, Nullable, PhoneInput, Positive } from "../validation/fields.ts";

/** A DNS name or IPv4 address. */
export const HOST_PATTERN = "^(?=.{1,253}$)[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$";
/** host, IPv4 or [IPv6], with an optional :port. */
export const PROXY_PATTERN =
  "^(?:(?=[^:]{1,253}(?::|$))[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*|\\[[0-9A-Fa-f:.]+\\])(?::[0-9]{1,5})?$";
/** The user part of a SIP URI (RFC 3261 unreserved characters and the common escapes). */
export const SIP_USER_PATTERN = "^[A-Za-z0-9._~+=%!*-]{1,128}$";

const lit = <V extends string>(values: readonly V[], description: string) => T.Union(values.map((v) => T.Literal(v)), { description });

/** A secret as the file may give it. */
export const SecretInput = (description: string) =>
  T.String({
    minLength: 1,
    maxLength: 256,
    description: `${description} Plaintext, or \`\${ENV_VAR}\` (read from the environment at apply time), or \`<unchanged>\` (keep the stored one). Stored only encrypted; never exported.`,
  });

export namespace TrunkModel {
  export const PROVIDERS = ["generic", "carrier"] as const;
  export const ROLES = ["carrier", "pbx"] as const;
  export const DIRECTIONS = ["inbound", "outbound", "both"] as const;
  export const TRANSPORTS = ["udp", "tcp", "tls"] as const;
  export const INBOUND_AUTHS = ["ip", "register", "digest"] as const;
  export const STATUSES = ["active", "disabled"] as const;

  /** One trunk of the file (`trunks[]`), keyed by name. */
  export const TrunkEntry = T.Object(
    {
      name: Name(100),
      provider: T.Optional(lit(PROVIDERS, "generic (any SIP peer) or carrier (a PSTN carrier's profile). Default generic.")),
      role: T.Optional(lit(ROLES, "carrier: reaches the PSTN, its calls in reach DIDs only; pbx: a customer PBX behind the trunk, whose calls in also reach the account's extensions and users and go out through its routes. Default carrier.")),
      direction: T.Optional(lit(DIRECTIONS, "Which calls the trunk carries. Default both.")),
      proxy: T.Optional(Nullable(T.String({ pattern: PROXY_PATTERN, description: "host[:port] calls are sent to (and registered with). Required for outbound use and for do_register." }))),
      transport: T.Optional(lit(TRANSPORTS, "Default udp.")),
      do_register: T.Optional(Flag("1: the platform registers with the trunk (needs proxy, auth_username, auth_password). Default 0.")),
      auth_username: T.Optional(Nullable(T.String({ pattern: SIP_USER_PATTERN, description: "Our digest username towards the trunk." }))),
      auth_password: T.Optional(Nullable(SecretInput("Our digest password towards the trunk."))),
      realm: T.Optional(Nullable(T.String({ pattern: HOST_PATTERN, description: "Digest realm the trunk challenges our calls with. Set, the edge answers challenges for this realm only; unset, for whatever realm the trunk names." }))),
      from_domain: T.Optional(Nullable(T.String({ pattern: HOST_PATTERN, description: "Host part of the From header on calls we send." }))),
      from_user: T.Optional(Nullable(T.String({ pattern: SIP_USER_PATTERN, description: "User part of the From header (some carriers want the account number)." }))),
      expire_sec: T.Optional(T.Integer({ minimum: 60, maximum: 86400, description: "Registration lifetime asked for. Default 3600." })),
      inbound_auth: T.Optional(lit(INBOUND_AUTHS, "How calls from the trunk are recognized: ip (source address in acl), digest (its calls answer the edge's challenge with inbound_username and inbound_password), register (it also registers to us with them; calls out through it go to its registration). Default ip.")),
      inbound_username: T.Optional(Nullable(T.String({ pattern: SIP_USER_PATTERN, description: "Username the trunk uses towards us (register, digest)." }))),
      inbound_password: T.Optional(Nullable(SecretInput("Password the trunk uses towards us (register, digest)."))),
      reg_node: T.Optional(Nullable(T.String({ pattern: "^[A-Za-z0-9._-]{1,64}$", description: "Edge node (its NODE: letters, digits, ., _, -) that keeps the registration; null = any." }))),
      max_channels: T.Optional(Nullable(Positive({ maximum: 100000, description: "Concurrent calls on the trunk; null = unlimited." }))),
      cid_number: T.Optional(Nullable(PhoneInput("Caller-ID presented on calls out through this trunk when nothing more specific applies."))),
      ping_sec: T.Optional(Nullable(T.Integer({ minimum: 5, maximum: 3600, description: "SIP OPTIONS keep-alive interval; null = off." }))),
      status: T.Optional(lit(STATUSES, "Default active.")),
      acl: T.Optional(
        T.Array(T.String({ minLength: 1, maxLength: 64 }), {
          maxItems: 200,
          description: "Source addresses (CIDR or single address) the trunk sends from. Required when inbound_auth is ip and the trunk takes inbound calls; an extra restriction otherwise.",
        }),
      ),
    },
    { additionalProperties: false, description: "A SIP trunk." },
  );
  export type TrunkEntry = Static<typeof TrunkEntry>;

  export const VIAS = ["carrier", "trunk"] as const;

  /** One outbound route of the file (`outbound_routes[]`), keyed by name. */
  export const OutboundRouteEntry = T.Object(
    {
      name: Name(100),
      match_prefix: T.Optional(Nullable(T.String({ pattern: "^[0-9]{1,15}$", description: "Leading digits of the E.164 destination (no +); absent = any." }))),
      match_country: T.Optional(Nullable(Country("Destination country, ISO alpha-2; absent = any. A country the router never tells apart (MF, BL: +590 is GP's) is refused."))),
      via: lit(VIAS, "carrier: the platform's wholesale carrier; trunk: the trunk named in trunk."),
      trunk: T.Optional(Nullable(Name(100))),
      priority: T.Optional(T.Integer({ minimum: 0, maximum: 100000, description: "Lower is tried first. Default 100." })),
    },
    { additionalProperties: false, description: "An outbound route." },
  );
  export type OutboundRouteEntry = Static<typeof OutboundRouteEntry>;

  export const TRANSFORM_SCOPES = ["account", "trunk", "did", "route"] as const;
  export const TRANSFORM_DIRECTIONS = ["inbound_dst", "inbound_cid", "outbound_dst", "outbound_cid"] as const;

  /** One number transform of the file (`number_transforms[]`), keyed by name. */
  export const NumberTransformEntry = T.Object(
    {
      name: Name(100),
      scope_kind: T.Optional(lit(TRANSFORM_SCOPES, "Where the transform applies. Default account.")),
      scope: T.Optional(Nullable(T.String({ minLength: 1, maxLength: 100, description: "Trunk name, DID (E.164) or route name; absent for account." }))),
      direction: lit(TRANSFORM_DIRECTIONS, "Which number of which calls is rewritten."),
      match_regex: T.String({ minLength: 1, maxLength: 200, description: "JavaScript regular expression; no nested quantifiers." }),
      replacement: T.String({ maxLength: 100, description: "Replacement: digits, *, #, + and $1…$9 / $<name> group references." }),
      ordering: T.Optional(T.Integer({ minimum: 0, maximum: 100000, description: "Lower runs first. Default 100." })),
      stop_on_match: T.Optional(Flag("1: no later transform runs once this one matched. Default 0.")),
    },
    { additionalProperties: false, description: "A number transform." },
  );
  export type NumberTransformEntry = Static<typeof NumberTransformEntry>;
}
