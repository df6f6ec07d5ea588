/** TypeBox models of POST /auth (the edge asks whether a SIP digest is right). */
import { Type as T, type Static } from "@sinclair/typebox";
import { Flag, IpAddress } from "../validation/fields.ts";

export namespace SipAuthModel {
  /**
   * The parsed digest parameters, form or JSON with the same names (DESIGN.md section 4). Optional
   * fields sent empty are treated as absent (edge configs often send empty variables).
   */
  export const Request = T.Object(
    {
      username: T.String({ minLength: 1, maxLength: 255, description: "Digest username: the auth username, or `user@realm` (then verified against ha1b)." }),
      realm: T.String({ minLength: 1, maxLength: 253, description: "Digest realm: the account's SIP domain (any realm the edge challenged with, for a trunk)." }),
      // No colon: MD5(HA1:N:nc:C:auth:HA2), a qop response, is also the RFC 2069 response for the nonce
      // "N:nc:C:auth", which the replay memory would take for a new nonce. Edges' nonces never hold one.
      nonce: T.String({
        minLength: 1,
        maxLength: 255,
        pattern: '^[^:"\\s\\u0000-\\u001f\\u007f]+$',
        description: "The edge's nonce (the edge checks its freshness): no colon, quote, space or control character.",
      }),
      uri: T.String({ minLength: 1, maxLength: 1024, description: "The digest uri as sent in the Authorization header (not the Request-URI)." }),
      response: T.String({ pattern: "^[0-9a-fA-F]{32}$", description: "The digest response: 32 hex characters." }),
      method: T.String({ pattern: "^[A-Za-z]{1,32}$", description: "SIP method of the request (REGISTER, INVITE, …)." }),
      qop: T.Optional(T.Literal("auth", { description: "auth when the challenge offered qop (then nc and cnonce are required); absent for the RFC 2069 form." })),
      nc: T.Optional(T.String({ pattern: "^[0-9a-fA-F]{8}$", description: "Nonce count: 8 hex digits (with qop)." })),
      cnonce: T.Optional(T.String({ minLength: 1, maxLength: 255, description: "Client nonce (with qop)." })),
      algorithm: T.Optional(
        T.String({ pattern: "^[Mm][Dd]5(-[Ss][Ee][Ss][Ss])?$", description: "MD5 (default) or MD5-sess; any other algorithm is refused." }),
      ),
      opaque: T.Optional(T.String({ maxLength: 255, description: "Echoed by the client; the edge owns it, we ignore it." })),
      source_ip: T.Optional(IpAddress("Address the request came from; failed attempts are counted per address.")),
      transport: T.Optional(T.String({ maxLength: 16, description: "udp, tcp, tls, ws or wss." })),
      user_agent: T.Optional(T.String({ maxLength: 255, description: "User-Agent header, for the logs." })),
    },
    { additionalProperties: false },
  );
  export type Request = Static<typeof Request>;

  /**
   * The success reply: SPEC.md's fields for a device. A trunk that authenticates towards us
   * (inbound_auth register or digest) answers with `trunk_id` instead, and null user and device.
   */
  export const Reply = T.Object(
    {
      ok: T.Literal(true),
      account_id: T.String({ description: "acc_… of the device (or trunk)." }),
      user_id: T.Union([T.String(), T.Null()], { description: "us_… owning the device; null for a trunk." }),
      device_id: T.Union([T.String(), T.Null()], { description: "dev_… that authenticated; null for a trunk." }),
      webrtc: Flag("1 when the device is a WebRTC endpoint (0 for a trunk)."),
      trunk_id: T.Optional(T.String({ description: "trk_… when a trunk (inbound_auth register or digest) authenticated instead of a device." })),
    },
    { additionalProperties: false },
  );
  export type Reply = Static<typeof Reply>;
}
