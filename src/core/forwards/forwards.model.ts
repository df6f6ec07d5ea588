/** TypeBox model of the config file's `forwards` section (forwards have no /v1 surface). */
import { Type as T, type Static } from "@sinclair/typebox";
import { Flag, Nullable, PhoneInput } from "../validation/fields.ts";
import { routeTargetFields } from "../routing/route-target.ts";

export namespace ForwardModel {
  export const TRIGGERS = ["always", "busy", "no_answer", "unreachable"] as const;
  export const CID_MODES = ["passthrough", "did", "custom"] as const;

  /** One forward of the file, keyed by (user or did, trigger). */
  export const ForwardEntry = T.Object(
    {
      user: T.Optional(T.String({ minLength: 1, maxLength: 64, description: "Username of the user whose calls forward. Give user or did." })),
      did: T.Optional(PhoneInput("The DID (a number of the account) whose calls forward. Give user or did.")),
      trigger: T.Union(TRIGGERS.map((v) => T.Literal(v)), { description: "When the forward fires." }),
      number: PhoneInput("Where calls go: an E.164 number."),
      timeout_sec: T.Optional(Nullable(T.Integer({ minimum: 5, maximum: 120, description: "no_answer only: seconds of ringing before forwarding. Default 20." }))),
      cid_mode: T.Optional(T.Union(CID_MODES.map((v) => T.Literal(v)), { description: "Caller-ID on the forwarded leg: the caller's (passthrough), the DID called (did), or cid_number (custom). Default passthrough." })),
      cid_number: T.Optional(Nullable(PhoneInput("custom only: the caller-ID presented."))),
      confirm: T.Optional(Flag("1: the person answering must press 1 to take the call, so a mobile voicemail cannot swallow it. Default 0.")),
      ...routeTargetFields("overflow_dest"),
    },
    { additionalProperties: false, description: "A call forward." },
  );
  export type ForwardEntry = Static<typeof ForwardEntry>;
}
