/** TypeBox models of devices. Replies never carry the password or the digest hashes. */
import { Type as T, type Static } from "@sinclair/typebox";
import { Flag, IdOf, Nullable } from "../validation/fields.ts";

/** A digest username: what the phone sends in its Authorization header. */
export const AUTH_USERNAME_PATTERN = "^[A-Za-z0-9._-]{1,64}$";
/** A realm: a DNS name (lower case), as the account's SIP domains are. */
export const REALM_PATTERN = "^(?=.{1,253}$)[a-z0-9]([a-z0-9_-]{0,61}[a-z0-9])?(\\.[a-z0-9]([a-z0-9_-]{0,61}[a-z0-9])?)*$";

export namespace DeviceModel {
  export const Status = T.Union([T.Literal("active"), T.Literal("disabled")], {
    description: "active, or disabled: a disabled device cannot authenticate.",
  });
  export const Transport = T.Union([T.Literal("udp"), T.Literal("tcp"), T.Literal("tls"), T.Literal("wss")], {
    description: "SIP transport the device registers over: udp, tcp, tls or wss.",
  });

  const authUsername = () =>
    T.String({ pattern: AUTH_USERNAME_PATTERN, description: "Digest username: 1–64 of A-Z a-z 0-9 . _ -; unique per realm across the platform." });
  const realm = () =>
    T.String({
      pattern: REALM_PATTERN,
      description: "Digest realm: one of the account's SIP domains (lower case), or its default realm <account id>.sip.parley.local.",
    });
  const password = (description: string) =>
    T.String({ minLength: 8, maxLength: 128, description, writeOnly: true });
  const label = () => T.String({ minLength: 1, maxLength: 100, description: "Free text to tell devices apart (\"desk phone\"), up to 100 characters." });

  /** A device as the API shows it: the digest identity, never the password nor its hashes. */
  export const Device = T.Object(
    {
      id: T.String({ description: "dev_… id." }),
      user_id: T.String({ description: "The owning user (us_…)." }),
      auth_username: T.String({ description: "Digest username." }),
      realm: T.String({ description: "Digest realm: the account's SIP domain." }),
      transport: Transport,
      is_webrtc: Flag("1 for a browser (WebRTC) endpoint; those register over wss."),
      status: Status,
      label: Nullable(T.String()),
      created_at: T.Integer({ description: "Epoch seconds." }),
      updated_at: T.Integer({ description: "Epoch seconds." }),
    },
    { additionalProperties: false },
  );
  export type Device = Static<typeof Device>;

  /** POST /v1/devices. */
  export const Create = T.Object(
    {
      user_id: IdOf("us", "The owning user, a user of this account."),
      password: password("SIP password, 8–128 characters. Turned into the digest hashes at once; never stored, never returned."),
      auth_username: T.Optional(authUsername()),
      realm: T.Optional(realm()),
      transport: T.Optional(Transport),
      is_webrtc: T.Optional(Flag("1 for a browser endpoint (needs transport wss); default 1 when transport is wss, else 0.")),
      status: T.Optional(Status),
      label: T.Optional(Nullable(label())),
    },
    { additionalProperties: false },
  );
  export type Create = Static<typeof Create>;

  /** PATCH /v1/devices/{id}: only the fields sent change. */
  export const Patch = T.Object(
    {
      user_id: T.Optional(IdOf("us", "Move the device to another user of this account.")),
      password: T.Optional(
        password("New SIP password, 8–128 characters. Required whenever auth_username or realm changes, because the digest hashes cover all three."),
      ),
      auth_username: T.Optional(authUsername()),
      realm: T.Optional(realm()),
      transport: T.Optional(Transport),
      is_webrtc: T.Optional(Flag()),
      status: T.Optional(Status),
      label: T.Optional(Nullable(label())),
    },
    { additionalProperties: false, minProperties: 1 },
  );
  export type Patch = Static<typeof Patch>;
}
