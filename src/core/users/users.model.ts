/** TypeBox models of users: request validation, TypeScript types and OpenAPI from one place. */
import { Type as T, type Static } from "@sinclair/typebox";
import { CallerNameText, E164, Flag, IdOf, Nullable, PhoneInput } from "../validation/fields.ts";
import { DeviceModel } from "../devices/devices.model.ts";

/** The SIP user part: what a phone dials and registers as. */
export const USERNAME_PATTERN = "^[A-Za-z0-9._-]{1,64}$";

/** Default of max_simultaneous: one call plus one consultation or transfer leg. */
export const DEFAULT_MAX_SIMULTANEOUS = 2;
/** Default of ring_timeout_sec (SPEC.md). */
export const DEFAULT_RING_TIMEOUT_SEC = 25;

export namespace UserModel {
  export const Status = T.Union([T.Literal("active"), T.Literal("disabled")], {
    description: "active, or disabled: a disabled user keeps its devices, but none of them can authenticate.",
  });

  const username = () =>
    T.String({ pattern: USERNAME_PATTERN, description: "Extension / SIP user part, unique in the account: 1–64 of A-Z a-z 0-9 . _ -." });
  const displayName = () => T.String({ minLength: 1, maxLength: 100, description: "Name shown to callers and in the console; 1–100 characters; default the username." });
  const email = () => T.String({ format: "email", maxLength: 254, description: "Contact email (not a login)." });
  const outCidNumber = () => PhoneInput("Outbound caller-ID number; +, spaces, dots, dashes and parentheses are ignored. Stored as E.164 without +.");
  const outCidName = () => CallerNameText({ description: "Outbound caller-ID name, up to 40 characters, one line." });
  const maxSimultaneous = () =>
    T.Integer({ minimum: 1, maximum: 100, description: `Calls the user may have at once, 1–100; default ${DEFAULT_MAX_SIMULTANEOUS}.` });
  const ringTimeout = () =>
    T.Integer({ minimum: 5, maximum: 300, description: `Seconds the user's devices ring before the call moves on, 5–300; default ${DEFAULT_RING_TIMEOUT_SEC}.` });
  const voicemailId = () => IdOf("vm", "Default mailbox (a voicemail box of this account).");
  const teamId = () => IdOf("team", "Agent team for reporting rollups (an agent team of this account).");

  /** A user as the API shows it (lists). */
  export const User = T.Object(
    {
      id: T.String({ description: "us_… id." }),
      username: T.String({ description: "Extension / SIP user part, unique in the account." }),
      display_name: T.String(),
      email: Nullable(T.String()),
      is_agent: Flag("1 when the user takes queue calls as an agent."),
      out_cid_number: Nullable(E164("Outbound caller-ID number, E.164 without +.")),
      out_cid_name: Nullable(T.String({ description: "Outbound caller-ID name." })),
      max_simultaneous: T.Integer({ description: "Per-user concurrency ceiling." }),
      ring_timeout_sec: T.Integer({ description: "Seconds the user's devices ring." }),
      voicemail_id: Nullable(T.String({ description: "Default mailbox (vm_…)." })),
      team_id: Nullable(T.String({ description: "Agent team (team_…)." })),
      status: Status,
      created_at: T.Integer({ description: "Epoch seconds." }),
      updated_at: T.Integer({ description: "Epoch seconds." }),
    },
    { additionalProperties: false },
  );
  export type User = Static<typeof User>;

  /** One user with its devices (GET, POST and PATCH of one user). */
  export const UserWithDevices = T.Composite([User, T.Object({ devices: T.Array(DeviceModel.Device, { description: "The user's devices, oldest first." }) })], {
    additionalProperties: false,
  });
  export type UserWithDevices = Static<typeof UserWithDevices>;

  /** POST /v1/users. */
  export const Create = T.Object(
    {
      username: username(),
      display_name: T.Optional(displayName()),
      email: T.Optional(Nullable(email())),
      is_agent: T.Optional(Flag("1 when the user takes queue calls as an agent; default 0.")),
      out_cid_number: T.Optional(Nullable(outCidNumber())),
      out_cid_name: T.Optional(Nullable(outCidName())),
      max_simultaneous: T.Optional(maxSimultaneous()),
      ring_timeout_sec: T.Optional(ringTimeout()),
      voicemail_id: T.Optional(Nullable(voicemailId())),
      team_id: T.Optional(Nullable(teamId())),
      status: T.Optional(Status),
    },
    { additionalProperties: false },
  );
  export type Create = Static<typeof Create>;

  /** PATCH (or POST) /v1/users/{id}: only the fields sent change. */
  export const Patch = T.Object(
    {
      username: T.Optional(username()),
      display_name: T.Optional(displayName()),
      email: T.Optional(Nullable(email())),
      is_agent: T.Optional(Flag()),
      out_cid_number: T.Optional(Nullable(outCidNumber())),
      out_cid_name: T.Optional(Nullable(outCidName())),
      max_simultaneous: T.Optional(maxSimultaneous()),
      ring_timeout_sec: T.Optional(ringTimeout()),
      voicemail_id: T.Optional(Nullable(voicemailId())),
      team_id: T.Optional(Nullable(teamId())),
      status: T.Optional(Status),
    },
    { additionalProperties: false, minProperties: 1 },
  );
  export type Patch = Static<typeof Patch>;
}
