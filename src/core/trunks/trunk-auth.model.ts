/** TypeBox models of POST /route/trunk-auth (the edge answers a trunk's digest challenge). */
import { Type as T, type Static } from "@sinclair/typebox";

export namespace TrunkAuthModel {
  export const Request = T.Object(
    {
      account_id: T.String({ minLength: 1, maxLength: 64, description: "The call's account (the /route reply's account_id)." }),
      trunk_id: T.String({ minLength: 1, maxLength: 64, description: "The route's auth_trunk: the trunk that challenged." }),
      challenge: T.String({
        minLength: 1,
        maxLength: 2048,
        description: "The challenge as the trunk sent it: the value of its WWW-Authenticate (401) or Proxy-Authenticate (407) header.",
      }),
      callId: T.Optional(T.String({ maxLength: 255, description: "The SIP Call-ID, for the logs." })),
    },
    { additionalProperties: false },
  );
  export type Request = Static<typeof Request>;

  export const Reply = T.Object(
    {
      username: T.String({ description: "The trunk's auth_username." }),
      realm: T.String({ description: "The challenge's realm (the trunk's realm when it has one)." }),
      ha1: T.String({ pattern: "^[0-9a-f]{32}$", description: "MD5(username:realm:password), for the edge's uac_auth in HA1 mode: the password itself never leaves the platform." }),
    },
    { additionalProperties: false },
  );
  export type Reply = Static<typeof Reply>;
}
