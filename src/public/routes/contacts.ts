/** GET, POST /v1/contacts; GET, POST, DELETE /v1/contacts/{id}; GET /v1/directory. */
import { Elysia } from "elysia";
import { Type as T } from "@sinclair/typebox";
import type { Platform } from "../../core/platform.ts";
import { ContactModel } from "../../core/contacts/contacts.model.ts";
import { createContact, deleteContact, getContact, listContacts, updateContact } from "../../core/contacts/contacts.service.ts";
import { listDirectory } from "../../core/contacts/directory.service.ts";
import { DEFAULT_PAGE_SIZE } from "../../core/pagination/pagination.ts";
import { apiModels } from "../../http/api-models.ts";
import { DataReply, ListReply, OkReply, errorReplies } from "../../http/reply-models.ts";
import { apiAccess } from "../plugins/api-access.ts";

const IdParams = T.Object({ id: T.String({ maxLength: 64, description: "ct_… id." }) });

export function contactRoutes(platform: Platform) {
  const tags = ["Contacts"];
  return new Elysia({ name: "routes-contacts", prefix: "/v1", normalize: false })
    .use(apiModels)
    .use(apiAccess(platform))
    .get(
      "/contacts",
      async ({ principal, query }) =>
        ({ ok: true as const, ...(await listContacts(platform.db, principal.accountId, { ...query, limit: query.limit ?? DEFAULT_PAGE_SIZE })) }),
      {
        scope: "contacts",
        query: ContactModel.ListQuery,
        response: { 200: ListReply(ContactModel.Contact), ...errorReplies(400, 401, 403, 429) },
        detail: {
          tags,
          summary: "List or search contacts; reverse lookup by number",
          description:
            "Filters combine: q (prefix of first, last, display name or company, any case), phone (reverse lookup: any typed form of a number, " +
            "exact match on one of the contact's numbers: the screen-pop source), tag, external_id. Creation order, keyset-paginated.",
        },
      },
    )
    .post(
      "/contacts",
      async ({ principal, body, status }) => status(201, { ok: true as const, data: await createContact(platform.db, principal.accountId, body) }),
      {
        scope: "contacts",
        idempotent: true,
        parse: "json",
        body: ContactModel.Create,
        response: { 201: DataReply(ContactModel.Contact), ...errorReplies(400, 401, 403, 409, 415, 422, 429) },
        detail: {
          tags,
          summary: "Create a contact",
          description:
            "Needs at least a name, company, email or number. Numbers are normalized to E.164; custom values are checked against the " +
            "account's contact custom fields (unknown key, wrong type or a missing required value: 400 at /custom/<key>). 409 when external_id is taken.",
        },
      },
    )
    .get("/contacts/:id", async ({ principal, params }) => ({ ok: true as const, data: await getContact(platform.db, principal.accountId, params.id) }), {
      scope: "contacts",
      params: IdParams,
      response: { 200: DataReply(ContactModel.Contact), ...errorReplies(400, 401, 403, 404, 429) },
      detail: { tags, summary: "One contact" },
    })
    .post(
      "/contacts/:id",
      async ({ principal, params, body }) => ({ ok: true as const, data: await updateContact(platform.db, principal.accountId, params.id, body) }),
      {
        scope: "contacts",
        idempotent: true,
        parse: "json",
        params: IdParams,
        body: ContactModel.Update,
        response: { 200: DataReply(ContactModel.Contact), ...errorReplies(400, 401, 403, 404, 409, 415, 422, 429) },
        detail: {
          tags,
          summary: "Update a contact",
          description:
            "Only sent fields change. phones and tags are replaced as a whole; custom is merged key by key (null removes a value; " +
            "a required field's value cannot be removed). A derived display_name follows name changes; send display_name null to derive it again.",
        },
      },
    )
    .delete(
      "/contacts/:id",
      async ({ principal, params }) => {
        await deleteContact(platform.db, principal.accountId, params.id);
        return { ok: true as const };
      },
      {
        scope: "contacts",
        idempotent: true,
        params: IdParams,
        response: { 200: OkReply, ...errorReplies(400, 401, 403, 404, 409, 422, 429) },
        detail: { tags, summary: "Delete a contact", description: "Its numbers leave the reverse lookup at once." },
      },
    )
    .get(
      "/directory",
      async ({ principal, query }) =>
        ({ ok: true as const, ...(await listDirectory(platform.db, principal.accountId, { ...query, limit: query.limit ?? DEFAULT_PAGE_SIZE })) }),
      {
        scope: "contacts",
        query: ContactModel.DirectoryQuery,
        response: { 200: ListReply(ContactModel.DirectoryEntry), ...errorReplies(400, 401, 403, 429) },
        detail: {
          tags,
          summary: "Internal directory (dial-by-name)",
          description:
            "The account's active users with their extension. digits: dial-by-name, users whose first or last name spelled on a keypad " +
            "(abc=2 … wxyz=9) starts with the 2–10 digits; q: prefix of the name, the last name or the extension. Keyset-paginated by user id.",
        },
      },
    );
}
