/** GET, POST /v1/users; GET, POST, PATCH, DELETE /v1/users/{id}; GET /v1/users/{id}/devices. */
import { Elysia, t } from "elysia";
import { Type as T } from "@sinclair/typebox";
import type { Platform } from "../../core/platform.ts";
import { UserModel } from "../../core/users/users.model.ts";
import { DeviceModel } from "../../core/devices/devices.model.ts";
import { createUser, deleteUser, getUser, listUserDevices, listUsers, updateUser } from "../../core/users/users.service.ts";
import { DEFAULT_PAGE_SIZE } from "../../core/pagination/pagination.ts";
import { FlagQuery, PageQuery } from "../../http/page-query.ts";
import { apiModels } from "../../http/api-models.ts";
import { DataReply, ListReply, OkReply, errorReplies } from "../../http/reply-models.ts";
import { apiAccess } from "../plugins/api-access.ts";
import { forgetDevice } from "../../core/presence/presence.service.ts";
import { retireAgent } from "../../core/presence/agent-state.ts";

// A 0/1 flag in a query string: literal strings, since query values are text and Elysia does not
// coerce them into a numeric union (an Integer with bounds would report its error without the field's path).

/** Query of GET /v1/users: the page plus filters. */
const UserListQuery = t.Object(
  {
    ...PageQuery.properties,
    status: t.Optional(t.Union([t.Literal("active"), t.Literal("disabled")], { description: "Only users with this status." })),
    is_agent: t.Optional(FlagQuery("1: only agents; 0: only non-agents.")),
    team_id: t.Optional(t.String({ minLength: 1, maxLength: 64, description: "Only members of this agent team." })),
    q: t.Optional(t.String({ minLength: 1, maxLength: 100, description: "Case-insensitive prefix of the username or the display name." })),
  },
  { additionalProperties: false },
);

const IdParams = T.Object({ id: T.String({ minLength: 1, maxLength: 64, description: "us_… id." }) });

const PATCH_DESCRIPTION =
  "Only the fields sent change. A new username must be unique in the account (409 with field username); the user's devices keep their auth_username. " +
  "voicemail_id and team_id must name a voicemail box / agent team of this account (400).";

export function userRoutes(platform: Platform) {
  const tags = ["Users"];
  const rules = { emergencyNumbers: platform.config.routing.emergencyNumbers };
  const patch = async (accountId: string, id: string, body: UserModel.Patch) => {
    const user = await updateUser(platform.db, accountId, id, body, rules);
    // A disabled user can no longer register or take calls: the roster stops counting their
    // registrations and agent state at once (as a disabled device's), and a former agent is logged out.
    if (user.status !== "active") await Promise.all(user.devices.map((device) => forgetDevice(platform.live, accountId, id, device.id)));
    if (user.status !== "active" || user.is_agent !== 1) await retireAgent(platform, accountId, id);
    return { ok: true as const, data: user };
  };
  return new Elysia({ name: "routes-users", prefix: "/v1/users", normalize: false })
    .use(apiModels)
    .use(apiAccess(platform))
    .get(
      "",
      async ({ principal, query }) =>
        ({ ok: true as const, ...(await listUsers(platform.db, principal.accountId, { ...query, is_agent: query.is_agent === undefined ? undefined : Number(query.is_agent), limit: query.limit ?? DEFAULT_PAGE_SIZE })) }),
      {
        scope: "users",
        query: UserListQuery,
        response: { 200: ListReply(UserModel.User), ...errorReplies(400, 401, 403, 429) },
        detail: {
          tags,
          summary: "List users",
          description:
            "Keyset-paginated in creation order, without their devices (GET /v1/users/{id} has them). Filters: status, is_agent (0/1), team_id, q (case-insensitive prefix of username or display_name).",
        },
      },
    )
    .post(
      "",
      async ({ principal, body, status }) => status(201, { ok: true as const, data: await createUser(platform.db, principal.accountId, body, rules) }),
      {
        scope: "users",
        idempotent: true,
        parse: "json",
        body: UserModel.Create,
        response: { 201: DataReply(UserModel.UserWithDevices), ...errorReplies(400, 401, 403, 409, 415, 422, 429) },
        detail: {
          tags,
          summary: "Create a user",
          description:
            "username is required and unique in the account (409 with field username). Defaults: display_name = username, is_agent 0, max_simultaneous 2, ring_timeout_sec 25, status active. " +
            "out_cid_number is normalized to E.164 without +. Add devices with POST /v1/devices.",
        },
      },
    )
    .get("/:id", async ({ principal, params }) => ({ ok: true as const, data: await getUser(platform.db, principal.accountId, params.id) }), {
      scope: "users",
      params: IdParams,
      response: { 200: DataReply(UserModel.UserWithDevices), ...errorReplies(400, 401, 403, 404, 429) },
      detail: { tags, summary: "One user with its devices", description: "devices never carry the password or the digest hashes." },
    })
    .post("/:id", async ({ principal, params, body }) => patch(principal.accountId, params.id, body), {
      scope: "users",
      idempotent: true,
      parse: "json",
      params: IdParams,
      body: UserModel.Patch,
      response: { 200: DataReply(UserModel.UserWithDevices), ...errorReplies(400, 401, 403, 404, 409, 415, 422, 429) },
      detail: { tags, summary: "Update a user (POST form of PATCH)", description: `The same as PATCH /v1/users/{id}, for clients that cannot send PATCH. ${PATCH_DESCRIPTION}` },
    })
    .patch("/:id", async ({ principal, params, body }) => patch(principal.accountId, params.id, body), {
      scope: "users",
      idempotent: true,
      parse: "json",
      params: IdParams,
      body: UserModel.Patch,
      response: { 200: DataReply(UserModel.UserWithDevices), ...errorReplies(400, 401, 403, 404, 409, 415, 422, 429) },
      detail: { tags, summary: "Update a user", description: PATCH_DESCRIPTION },
    })
    .delete(
      "/:id",
      async ({ principal, params }) => {
        const { deviceIds } = await deleteUser(platform.db, principal.accountId, params.id);
        // The devices went with the user: so do their registrations.
        await Promise.all(deviceIds.map((deviceId) => forgetDevice(platform.live, principal.accountId, params.id, deviceId)));
        await retireAgent(platform, principal.accountId, params.id);
        return { ok: true as const };
      },
      {
        scope: "users",
        idempotent: true,
        params: IdParams,
        response: { 200: OkReply, ...errorReplies(400, 401, 403, 404, 409, 422, 429) },
        detail: {
          tags,
          summary: "Delete a user and its devices",
          description:
            "The user's devices and their SIP credentials go with it, in one transaction. 409 with used_by while a route target, ring group or queue refers to the user, or a ring group to one of its devices.",
        },
      },
    )
    .get(
      "/:id/devices",
      async ({ principal, params, query }) =>
        ({ ok: true as const, ...(await listUserDevices(platform.db, principal.accountId, params.id, { limit: query.limit ?? DEFAULT_PAGE_SIZE, cursor: query.cursor })) }),
      {
        scope: "users",
        params: IdParams,
        query: PageQuery,
        response: { 200: ListReply(DeviceModel.Device), ...errorReplies(400, 401, 403, 404, 429) },
        detail: { tags, summary: "Devices of one user", description: "Keyset-paginated in creation order; 404 when the user is not in the account." },
      },
    );
}
