/** TypeBox models of POST /trunks/tick (the edge's keep-alive probes and registrations with trunks) and GET /trunks/status. */
import { Type as T, type Static } from "@sinclair/typebox";
import { IdOf } from "../validation/fields.ts";

/** Most probe results or registration states one tick reports. */
export const MAX_TICK_ITEMS = 10_000;

/**
 * Most probes and registrations (added or changed) one tick's reply asks for: the edge handles a reply
 * as one string of at most its pv buffer (64 KB); what is left waits for the next tick.
 */
export const MAX_TICK_PROBES = 200;
export const MAX_TICK_REGISTRATIONS = 40;


export namespace TrunkTickModel {
  /** Where a registration with a trunk stands (the edge's uac_reg_status()). */
  export const RegistrationState = T.Union([T.Literal("registered"), T.Literal("registering"), T.Literal("failed"), T.Literal("disabled"), T.Literal("unknown")]);
  export type RegistrationState = Static<typeof RegistrationState>;

  export const Request = T.Object(
    {
      node: T.String({ pattern: "^[A-Za-z0-9._-]{1,64}$", description: "The edge node ticking (its NODE): a trunk with reg_node is registered by that node only." }),
      interval: T.Integer({ minimum: 1, maximum: 60, description: "Seconds between the node's ticks: pings due since its last tick are sent now." }),
      probes: T.Optional(
        T.Array(
          T.Object(
            {
              account_id: IdOf("acc"),
              trunk_id: IdOf("trk"),
              code: T.Integer({ minimum: 0, maximum: 699, description: "The final SIP code of the OPTIONS probe: 408 when nothing answered, 0 when it could not be sent." }),
            },
            { additionalProperties: false },
          ),
          { maxItems: MAX_TICK_ITEMS, description: "Outcomes of the probes sent since the last tick." },
        ),
      ),
      registrations: T.Optional(
        T.Array(
          T.Object(
            {
              account_id: IdOf("acc"),
              trunk_id: IdOf("trk"),
              status: T.Integer({ minimum: -99, maximum: 1, description: "uac_reg_status(): 1 registered, -2 registering, -99 failed (retrying later), -3 disabled, -1 unknown." }),
              version: T.Optional(T.String({ pattern: "^[A-Za-z0-9_-]{0,64}$", description: "The version of the registration the node keeps (from an earlier reply)." })),
            },
            { additionalProperties: false },
          ),
          { maxItems: MAX_TICK_ITEMS, description: "Where each registration the node keeps stands, and which version it keeps." },
        ),
      ),
    },
    { additionalProperties: false, description: "POST /trunks/tick: JSON." },
  );
  export type Request = Static<typeof Request>;

  export const Ping = T.Object(
    {
      account_id: T.String(),
      trunk_id: T.String(),
      uri: T.String({ description: "Where the OPTIONS goes: the trunk's proxy, with its transport." }),
    },
    { additionalProperties: false },
  );

  export const Registration = T.Object(
    {
      trunk_id: T.String({ description: "The registration's local id (l_uuid): the Contact's user, so calls the trunk sends to it are known." }),
      account_id: T.String(),
      version: T.String({ description: "Changes whenever the registration's settings do: the node adds it again then." }),
      rpc: T.String({
        description:
          "The JSON-RPC request that adds it (uac.reg_add: the trunk's auth_username at its from_domain or proxy host, the HA1 of its password for its realm, its proxy, expire_sec), for jsonrpc_exec: the password itself never leaves the platform.",
      }),
    },
    { additionalProperties: false },
  );

  export const Reply = T.Object(
    {
      ok: T.Literal(true),
      ping: T.Array(Ping, { description: `Trunks to probe now (ping_sec elapsed): active, with a proxy; at most ${MAX_TICK_PROBES}.` }),
      registrations: T.Array(Registration, {
        description: `The registrations the node should keep (do_register trunks for it) that it does not keep at their version: new or changed; at most ${MAX_TICK_REGISTRATIONS}, the rest in later ticks.`,
      }),
      unregister: T.Array(T.String(), { description: "Trunk ids of registrations the node keeps and should not any more (removed, disabled, for another node)." }),
    },
    { additionalProperties: false },
  );
  export type Reply = Static<typeof Reply>;

  export const StatusQuery = T.Object({ accountId: IdOf("acc", "The account whose trunks to show.") });

  export const TrunkStatus = T.Object(
    {
      trunk_id: T.String(),
      name: T.String(),
      status: T.String({ description: "The trunk's configured status (active, disabled)." }),
      ping: T.Union(
        [
          T.Object({
            state: T.Union([T.Literal("up"), T.Literal("down")]),
            code: T.Integer({ description: "The last probe's SIP code (408: no answer)." }),
            fails: T.Integer({ description: "Consecutive unanswered probes." }),
            at: T.Integer({ description: "When the last probe ended, epoch ms." }),
            since: T.Integer({ description: "Since when the state holds, epoch ms." }),
            node: T.String(),
            stale: T.Integer({ description: "1 when no probe came for three ping intervals: the state says nothing any more." }),
          }),
          T.Null(),
        ],
        { description: "OPTIONS probes (ping_sec); null when not probed or nothing reported yet." },
      ),
      registrations: T.Array(
        T.Object({
          node: T.String({ description: "The edge node that keeps the registration." }),
          state: RegistrationState,
          at: T.Integer({ description: "When the node last reported it, epoch ms." }),
        }),
        { description: "Our registrations with the trunk (do_register), one per edge node keeping one." },
      ),
      registered_contacts: T.Integer({ description: "Live registrations of the trunk with us (inbound_auth register)." }),
    },
    { additionalProperties: false },
  );

  export const StatusReply = T.Object({ ok: T.Literal(true), data: T.Array(TrunkStatus) }, { additionalProperties: false });
  export type StatusReply = Static<typeof StatusReply>;
}
