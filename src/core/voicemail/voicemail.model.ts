/** TypeBox models of voicemail boxes: request validation, TypeScript types and OpenAPI from one place. */
import { Type as T, type Static } from "@sinclair/typebox";
import { Flag, IdOf, Language, Name, Nullable, Pin } from "../validation/fields.ts";

export namespace VoicemailModel {
  /** A box as the API shows it: never the PIN, never its secret ref. */
  export const Voicemail = T.Object(
    {
      id: T.String({ description: "vm_… id." }),
      name: T.String({ description: "Label shown in the console and to routing pickers." }),
      greeting_media_id: Nullable(T.String({ description: "Media file (med_…) played as the greeting; null = the system greeting." })),
      skip_instructions: Flag("1 = go straight to the beep after the greeting, without the 'leave a message' prompt."),
      quota_mb: T.Integer({ description: "Storage for messages, MB (1–10240; default 100). A full box takes no new messages." }),
      notify_email: Nullable(T.String({ description: "Where new-message notices are mailed; null = no mail." })),
      has_pin: Flag("1 when the box has a PIN (the PIN itself is never shown)."),
      max_message_sec: T.Integer({ description: "Longest message, seconds (10–3600; default 300)." }),
      language: Nullable(T.String({ description: "Prompt language (BCP 47); null = the account's language." })),
      created_at: T.Integer({ description: "Epoch seconds." }),
      updated_at: T.Integer({ description: "Epoch seconds." }),
    },
    { additionalProperties: false },
  );
  export type Voicemail = Static<typeof Voicemail>;

  /** The writable fields; each is optional here (create requires name, checked by the service). */
  const writable = {
    name: T.Optional({ ...Name(), description: "Label of the box, 1–200 characters; required to create." }),
    greeting_media_id: T.Optional(Nullable(IdOf("med", "Media file (med_…) of this account played as the greeting; null = the system greeting."))),
    skip_instructions: T.Optional(Flag("1 = skip the 'leave a message' prompt; default 0.")),
    quota_mb: T.Optional(T.Integer({ minimum: 1, maximum: 10240, description: "Message storage, MB: 1–10240; default 100." })),
    notify_email: T.Optional(Nullable(T.String({ format: "email", maxLength: 254, description: "Address mailed on each new message; null = none." }))),
    pin: T.Optional(Nullable(Pin("4–12 digits, as a string. Stored encrypted; null removes the PIN. Never returned."))),
    max_message_sec: T.Optional(T.Integer({ minimum: 10, maximum: 3600, description: "Longest message, seconds: 10–3600; default 300." })),
    language: T.Optional(Nullable(Language("Prompt language (BCP 47, e.g. en-US); null = the account's language."))),
  };

  /**
   * POST /v1/voicemails: create-or-update. Without `id` a new box is made (name required); with the
   * `id` of a box of this account that box is updated with the fields sent.
   */
  export const Upsert = T.Object(
    {
      id: T.Optional(T.String({ minLength: 1, maxLength: 64, description: "vm_… of an existing box to update; omit to create." })),
      ...writable,
    },
    { additionalProperties: false },
  );
  export type Upsert = Static<typeof Upsert>;

  /** POST or PATCH /v1/voicemails/{id}: only the fields sent change. */
  export const Patch = T.Object(writable, { additionalProperties: false, minProperties: 1 });
  export type Patch = Static<typeof Patch>;
}
