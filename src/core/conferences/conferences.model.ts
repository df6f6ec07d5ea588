/** TypeBox models of conference rooms: request validation, TypeScript types and OpenAPI from one place. */
import { Type as T, type Static } from "@sinclair/typebox";
import { Flag, IdOf, Name, Nullable } from "../validation/fields.ts";
import { Pin } from "../validation/fields.ts";

export namespace ConferenceModel {
  /** A room as the API shows it: never a PIN, never a secret ref. */
  export const Conference = T.Object(
    {
      id: T.String({ description: "conf_… id." }),
      name: T.String({ description: "Label shown in the console and to routing pickers." }),
      has_pin: Flag("1 when joining needs the member PIN (the PIN itself is never shown)."),
      has_admin_pin: Flag("1 when the room has an admin (moderator) PIN."),
      max_members: T.Integer({ description: "Most people in the room at once (2–1000; default 50)." }),
      moh_media_id: Nullable(T.String({ description: "Media file (med_…) played while waiting; null = the system music." })),
      record: Flag("1 = the conference is recorded."),
      wait_for_admin: Flag("1 = members wait (with music) until someone joins with the admin PIN."),
      announce_join_leave: Flag("1 = joins and departures are announced."),
      created_at: T.Integer({ description: "Epoch seconds." }),
      updated_at: T.Integer({ description: "Epoch seconds." }),
    },
    { additionalProperties: false },
  );
  export type Conference = Static<typeof Conference>;

  /** The writable fields; each is optional here (create requires name, checked by the service). */
  const writable = {
    name: T.Optional({ ...Name(), description: "Label of the room, 1–200 characters; required to create." }),
    pin: T.Optional(Nullable(Pin("Member PIN: 4–12 digits, as a string. Stored encrypted; null removes it (anyone routed here joins). Never returned."))),
    admin_pin: T.Optional(
      Nullable(Pin("Admin (moderator) PIN: 4–12 digits, as a string, different from pin. Stored encrypted; null removes it. Never returned.")),
    ),
    max_members: T.Optional(T.Integer({ minimum: 2, maximum: 1000, description: "Most people in the room at once: 2–1000; default 50." })),
    moh_media_id: T.Optional(Nullable(IdOf("med", "Media file (med_…) of this account played while waiting; null = the system music."))),
    record: T.Optional(Flag("1 = record the conference; default 0.")),
    wait_for_admin: T.Optional(Flag("1 = hold members until the admin joins; needs an admin_pin. Default 0.")),
    announce_join_leave: T.Optional(Flag("1 = announce joins and departures; default 1.")),
  };

  /**
   * POST /v1/conferences: create-or-update. Without `id` a new room is made (name required); with the
   * `id` of a room of this account that room is updated with the fields sent.
   */
  export const Upsert = T.Object(
    {
      id: T.Optional(T.String({ minLength: 1, maxLength: 64, description: "conf_… of an existing room to update; omit to create." })),
      ...writable,
    },
    { additionalProperties: false },
  );
  export type Upsert = Static<typeof Upsert>;

  /** POST or PATCH /v1/conferences/{id}: only the fields sent change. */
  export const Patch = T.Object(writable, { additionalProperties: false, minProperties: 1 });
  export type Patch = Static<typeof Patch>;
}
