/**
 * The contract between the routing decision (src/core/routing/decide*.ts), call admission (CAC and
 * the call record, src/core/cac and src/core/calls) and the edge's /route and /presence/event
 * endpoints. Field names follow DESIGN.md section 4 (camelCase request fields of the edge).
 */
import { Type as T, type Static } from "@sinclair/typebox";
import { EpochMs, IpAddress } from "../validation/fields.ts";

/** POST /route: form or JSON, same names (DESIGN.md section 4). */
export const RouteRequest = T.Object(
  {
    callId: T.String({ minLength: 1, maxLength: 255, description: "SIP Call-ID." }),
    cseq: T.Optional(
      T.Integer({
        minimum: 0,
        maximum: 2147483647,
        description:
          "The INVITE's CSeq number. With it, a new INVITE reusing a Call-ID (another CSeq) is a call of its own; the same Call-ID and CSeq is the same INVITE (its stored reply). Without it, one call per Call-ID.",
      }),
    ),
    from: T.String({ maxLength: 255, description: "Caller: user part of From (number or SIP user), may be empty for anonymous." }),
    fromDomain: T.String({ maxLength: 255, description: "Domain of From (the account's SIP realm for devices)." }),
    to: T.String({ minLength: 1, maxLength: 255, description: "Called: user part of the Request-URI." }),
    source_ip: T.Optional(IpAddress("Where the INVITE came from (trunk ACLs).")),
    transport: T.Optional(T.String({ maxLength: 16 })),
    fromName: T.Optional(T.String({ maxLength: 255, description: "Display name of From." })),
    privacy: T.Optional(T.String({ maxLength: 64, description: "Privacy header (id, none), for anonymous callers." })),
    asserted: T.Optional(
      T.String({
        maxLength: 64,
        description:
          "The user part of the P-Asserted-Identity a trunk or the carrier sent (not a device's). A withheld caller's number forwarded out with cid_mode passthrough; anything but a number is ignored.",
      }),
    ),
    account_id: T.Optional(T.String({ maxLength: 64, description: "From the /auth reply when the edge authenticated the caller." })),
    user_id: T.Optional(T.String({ maxLength: 64 })),
    device_id: T.Optional(T.String({ maxLength: 64 })),
  },
  { additionalProperties: true },
);
export type RouteRequest = Static<typeof RouteRequest>;

/**
 * What a call is counted by in a per-period call limit's window: its Call-ID, with its INVITE's CSeq
 * when the edge gives it (a new INVITE reusing a Call-ID is another call; a retransmission the same).
 */
export function callLimitMember(callId: string, cseq: number | undefined): string {
  return cseq ? `${callId}#${cseq}` : callId;
}

export type CallDirection = "inbound" | "outbound" | "internal";

/**
 * The concurrency ceilings, in the order counters are listed: account max_in / max_out / max_dialer,
 * a number's or trunk's max_channels, a user's max_simultaneous, and a concurrent call_limit policy
 * with a counter of its own (direction `any`: both directions, one counter; scope user: the user's calls
 * of its direction alone). The one list the type, the API schema and the listings use.
 */
export const CAC_LEVELS = ["account_in", "account_out", "account_dialer", "number", "trunk", "user", "call_limit"] as const;

/** One concurrency counter a call holds while it lasts. */
export interface CacSlot {
  /** Which ceiling (CAC_LEVELS). */
  level: (typeof CAC_LEVELS)[number];
  /** Account id for account_* levels, the call_limit policy's id, else the num_/trk_/us_ id. */
  id: string;
  /** The ceiling (null or absent ceilings are not slots at all). */
  limit: number;
  /**
   * `out`: a trunk slot of the call's leg out through the trunk it also came in through. The call
   * holds that trunk twice (two channels), the leg out under its own member of the counter.
   */
  leg?: "out";
  /**
   * true: the person's own ceiling (a user-scope call limit), so a call it refuses is busy (486 Busy
   * Here, as at the user's max_simultaneous), not a capacity refusal (503).
   */
  busy?: true;
  /**
   * true: a soft concurrent call limit's counter. It counts the calls (GET /cac shows them against
   * `limit`) but never refuses one; /route warns when a call finds it full.
   */
  soft?: true;
}

/** One routing decision recorded for GET /v1/calls/{id}/trace. */
export interface TraceStep {
  /** Epoch ms. */
  at: number;
  /** What was looked at: classify, number, schedule, forward, extension, user, transform, dnc, geo, acl, call_limit, caller_id, outbound_route, cac, reject, … */
  step: string;
  /** The outcome in a few words (matched num_…, closed → voicemail vm_…, transform tr_… 0044… → 44…). */
  result: string;
  data?: Record<string, unknown>;
}

/** A route of an rtjson document (Kamailio's rtjson module). */
export interface RtjsonRoute {
  uri: string;
  dst_uri?: string;
  path?: string;
  socket?: string;
  headers?: { from?: { display?: string; uri?: string }; to?: { display?: string; uri?: string }; extra?: string };
  branch_flags?: number;
  fr_timer?: number;
  fr_inv_timer?: number;
  /**
   * Parley's, not rtjson's (the module ignores it): the trunk whose digest challenge (401/407) the
   * edge may answer on this route, with credentials from POST /route/trunk-auth.
   */
  auth_trunk?: string;
}

/** The reply of POST /route: `{ rtjson }`. For proxy and outbound, rtjson is also a document rtjson_init_routes() applies. */
export interface RouteReply {
  rtjson: {
    action: "flow" | "proxy" | "outbound" | "reject";
    account_id: string | null;
    flow_id: string | null;
    /** Variables for the media engine / edge (destination kind and id, caller id, call id, direction, …). */
    vars: Record<string, string | number | null>;
    /** reject only: SIP code and reason. */
    code?: number;
    reason?: string;
    /** proxy / outbound: Kamailio rtjson document fields. */
    version?: "1.0";
    routing?: "serial" | "parallel";
    routes?: RtjsonRoute[];
  };
}

/** What the decision function hands to admission (CAC, call record, call.started). */
export interface RouteDecision {
  reply: RouteReply;
  /** Null only when no account could be determined (unknown DID, unknown trunk): nothing is recorded then. */
  accountId: string | null;
  direction: CallDirection;
  from: string;
  to: string;
  userId: string | null;
  deviceId: string | null;
  numberId: string | null;
  trunkId: string | null;
  queueId: string | null;
  /** Counters to take before the call proceeds (rejects take none). */
  slots: CacSlot[];
  trace: TraceStep[];
  /**
   * Live-store keys of the per-period call-limit windows the call was counted in: given back when the
   * call ends up refused (by the router after them, or by CAC), so a refused call counts against none.
   */
  limitWindows?: string[];
  /**
   * An outbound reply's legs in order, each with the trunk it goes through (null: the carrier). When CAC
   * finds the trunk of the call's slot full, admission drops that trunk's legs and goes on from the
   * next leg (a full trunk fails over, as a disabled one does).
   */
  legs?: Array<{ trunk: { id: string; max: number | null } | null }>;
}

/** POST /presence/event with type dialog: one SIP dialog's lifecycle, as the edge reports it. */
export const DialogEvent = T.Object(
  {
    type: T.Literal("dialog"),
    callId: T.String({ minLength: 1, maxLength: 255 }),
    /**
     * The call record /route answered the INVITE with (its reply's vars.call_id). A Call-ID reused by a
     * new INVITE has a record per INVITE: this names which one; without it, the newest.
     */
    record_id: T.Optional(T.String({ pattern: "^call_[0-9A-Za-z]{1,60}$", description: "call_… id of the record (/route's vars.call_id)." })),
    state: T.Union([T.Literal("early"), T.Literal("confirmed"), T.Literal("terminated")]),
    account_id: T.Optional(T.String({ maxLength: 64 })),
    /** SIP final code or Q.850-style cause of a terminated dialog (e.g. 200/BYE → NORMAL_CLEARING, 486 → USER_BUSY, 487 → ORIGINATOR_CANCEL). */
    sip_code: T.Optional(T.Integer({ minimum: 100, maximum: 699 })),
    hangup_cause: T.Optional(T.String({ maxLength: 64 })),
    /** Legs of the call as the edge sees them (caller leg, callee legs). */
    legs: T.Optional(
      T.Array(
        T.Object(
          {
            leg_id: T.Optional(T.String({ maxLength: 255 })),
            role: T.Optional(T.Union([T.Literal("caller"), T.Literal("callee")])),
            uri: T.Optional(T.String({ maxLength: 1024, description: "As long as a registered Contact may be (push-notification parameters make some long)." })),
            // Free text: the edge fills them from /route's reply and leaves a placeholder where it had none.
            device_id: T.Optional(T.String({ maxLength: 64 })),
            user_id: T.Optional(T.String({ maxLength: 64 })),
            state: T.Optional(T.String({ maxLength: 32 })),
          },
          // The record keeps legs as sent: only the fields the edge protocol names.
          { additionalProperties: false },
        ),
        { maxItems: 32 },
      ),
    ),
    /** When it happened at the edge, epoch ms (default: when we received it). */
    ts: T.Optional(EpochMs("When it happened at the edge, epoch ms (default: when we received it).")),
    /**
     * terminated only: when the dialog was answered at the edge, epoch ms. The call counts as answered
     * then even if its confirmed event was lost or comes later (which is ignored once a call ended).
     */
    answered_ts: T.Optional(
      EpochMs("terminated only: when the dialog was answered at the edge, epoch ms; the call counts as answered then even if its confirmed event was lost or comes after the end."),
    ),
    /**
     * Where the edge's failover took the call (its X-Dest: `voicemail:…`, `forward:…`) after the user it
     * rang was busy, did not answer or was unreachable: whoever answers is not that user.
     */
    failover: T.Optional(T.String({ maxLength: 128, description: "Where the edge's failover took the call (X-Dest): the user it rang did not answer it." })),
  },
  { additionalProperties: false },
);
export type DialogEvent = Static<typeof DialogEvent>;
