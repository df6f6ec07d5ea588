/** TypeBox models of the edge's ban reports and the allowlist (control host, /security/*). */
import { Type as T, type Static } from "@sinclair/typebox";
import { t } from "elysia";
import { EpochSec, Flag, Nullable } from "../validation/fields.ts";
import { MAX_PAGE_SIZE } from "../pagination/pagination.ts";

/** Most bans one snapshot may carry (a node's ban table is bounded by its htable size). */
export const MAX_REPORT_BANS = 10_000;

export namespace SecurityModel {
  export const Status = T.Union([T.Literal("active"), T.Literal("expired"), T.Literal("lifted")], {
    description: "active: the node holds the ban; expired: it no longer does; lifted: the address was allow-listed.",
  });
  export type Status = Static<typeof Status>;

  /** One ban as a node reports it. */
  export const ReportedBan = T.Object(
    {
      ip: T.String({ minLength: 2, maxLength: 64, description: "The banned address (IPv4 or IPv6)." }),
      reason: T.Optional(Nullable(T.String({ maxLength: 64, description: "Why: pike (flood), auth (failed digests), …" }))),
      hits: T.Optional(T.Integer({ minimum: 0, maximum: 2_000_000_000, description: "Requests or failures the node counted." })),
      banned_at: T.Optional(EpochSec("Epoch seconds when the node banned it.")),
      expires_at: T.Optional(Nullable(EpochSec("Epoch seconds when the node's ban ends."))),
    },
    { additionalProperties: false },
  );
  export type ReportedBan = Static<typeof ReportedBan>;

  /** POST /security/report: a node's whole ban table (a snapshot, not a delta), about every 30 s. */
  export const Report = T.Object(
    {
      node: T.String({ minLength: 1, maxLength: 64, pattern: "^[A-Za-z0-9._:@-]+$", description: "The reporting node's name." }),
      bans: T.Array(ReportedBan, {
        maxItems: MAX_REPORT_BANS,
        description: "Every address the node bans now. A form body sends this as JSON text. An address missing from a snapshot is no longer banned by that node.",
      }),
      ts: T.Optional(EpochSec("Epoch seconds of the snapshot at the node, by its clock: the node's banned_at are read on Parley's clock through it (clock skew).")),
      partial: T.Optional(
        T.Union([T.Literal(0), T.Literal(1)], { description: "1: the node holds more bans than it could send (its report body is bounded): none is expired for missing from this one." }),
      ),
    },
    { additionalProperties: false },
  );
  export type Report = Static<typeof Report>;

  export const ReportReply = T.Object(
    {
      ok: T.Literal(true),
      lift: T.Array(T.String(), { description: "Addresses of the snapshot that are allow-listed: the node must lift these bans now." }),
      allow: T.String({ description: "The allowlist as comma-separated CIDR ranges (empty: none): the node bans none of these addresses (flood, failed digests)." }),
    },
    { additionalProperties: false },
  );
  export type ReportReply = Static<typeof ReportReply>;

  /** One (address, node) ban record. */
  export const Ban = T.Object(
    {
      ip: T.String(),
      node: T.String(),
      status: Status,
      reason: Nullable(T.String()),
      hits: T.Integer(),
      ban_count: T.Integer({ description: "How many separate times this node banned the address." }),
      first_seen: T.Integer({ description: "Epoch seconds." }),
      last_seen: T.Integer({ description: "Epoch seconds of the latest snapshot that carried it." }),
      expires_at: Nullable(T.Integer({ description: "Epoch seconds when the node's ban ends, if it said." })),
      flagged: Flag("1: worth a look (banned again after expiring, banned by several nodes, or many failed digests). Sticky."),
    },
    { additionalProperties: false },
  );
  export type Ban = Static<typeof Ban>;

  export const BanQuery = t.Object(
    {
      status: t.Optional(t.Union([t.Literal("active"), t.Literal("expired"), t.Literal("lifted")], { description: "Only bans in this state." })),
      q: t.Optional(t.String({ pattern: "^[0-9A-Fa-f.:]{1,45}$", description: "Only addresses starting with this text (an IP prefix such as 203.0.113.)." })),
      flagged: t.Optional(t.Union([t.Literal("0"), t.Literal("1")], { description: "1: only flagged; 0: only unflagged." })),
      limit: t.Optional(t.Integer({ minimum: 1, maximum: MAX_PAGE_SIZE, description: `At most this many, most recently seen first; default 100.` })),
    },
    { additionalProperties: false },
  );

  /** One allowlist entry. */
  export const Allow = T.Object(
    {
      address: T.String({ description: "IP or CIDR, canonical (network address, no /32 or /128 for one host)." }),
      note: Nullable(T.String()),
      created_at: T.Integer({ description: "Epoch seconds." }),
    },
    { additionalProperties: false },
  );
  export type Allow = Static<typeof Allow>;

  /** POST /security/allow. */
  export const AddAllow = T.Object(
    {
      address: T.String({ minLength: 2, maxLength: 64, description: "An IP address or a CIDR range (IPv4 or IPv6)." }),
      note: T.Optional(Nullable(T.String({ maxLength: 200 }))),
    },
    { additionalProperties: false },
  );
  export type AddAllow = Static<typeof AddAllow>;

  export const AddAllowResult = T.Object(
    {
      entry: Allow,
      lifted: T.Integer({ description: "Active bans (address, node) this entry lifted; nodes drop them at their next report." }),
    },
    { additionalProperties: false },
  );
  export type AddAllowResult = Static<typeof AddAllowResult>;
}
