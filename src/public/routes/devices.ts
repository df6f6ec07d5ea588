/** GET, POST /v1/devices; GET, PATCH, DELETE /v1/devices/{id}. */
import { Elysia, t } from "elysia";
import { Type as T } from "@sinclair/typebox";
import type { Platform } from "../../core/platform.ts";
import { DeviceModel } from "../../core/devices/devices.model.ts";
import { createDevice, deleteDevice, getDevice, listDevices, updateDevice } from "../../core/devices/devices.service.ts";
import { forgetDevice } from "../../core/presence/presence.service.ts";
import { DEFAULT_PAGE_SIZE } from "../../core/pagination/pagination.ts";
import { FlagQuery, PageQuery } from "../../http/page-query.ts";
import { apiModels } from "../../http/api-models.ts";
import { DataReply, ListReply, OkReply, errorReplies } from "../../http/reply-models.ts";
import { apiAccess } from "../plugins/api-access.ts";

// A 0/1 flag in a query string: literal strings, since query values are text and Elysia does not
// coerce them into a numeric union (an Integer with bounds would report its error without the field's path).

/** Query of GET /v1/devices: the page plus filters. */
const DeviceListQuery = t.Object(
  {
    ...PageQuery.properties,
    user_id: t.Optional(t.String({ minLength: 1, maxLength: 64, description: "Only devices of this user." })),
    status: t.Optional(t.Union([t.Literal("active"), t.Literal("disabled")], { description: "Only devices with this status." })),
    transport: t.Optional(t.Union([t.Literal("udp"), t.Literal("tcp"), t.Literal("tls"), t.Literal("wss")], { description: "Only devices on this transport." })),
    is_webrtc: t.Optional(FlagQuery("1: only WebRTC devices; 0: only the others.")),
  },
  { additionalProperties: false },
);

const IdParams = T.Object({ id: T.String({ minLength: 1, maxLength: 64, description: "dev_… id." }) });

export function deviceRoutes(platform: Platform) {
  const tags = ["Users"];
  return new Elysia({ name: "routes-devices", prefix: "/v1/devices", normalize: false })
    .use(apiModels)
    .use(apiAccess(platform))
    .get(
      "",
      async ({ principal, query }) =>
        ({ ok: true as const, ...(await listDevices(platform.db, principal.accountId, { ...query, is_webrtc: query.is_webrtc === undefined ? undefined : Number(query.is_webrtc), limit: query.limit ?? DEFAULT_PAGE_SIZE })) }),
      {
        scope: "users",
        query: DeviceListQuery,
        response: { 200: ListReply(DeviceModel.Device), ...errorReplies(400, 401, 403, 429) },
        detail: {
          tags,
          summary: "List devices",
          description: "Keyset-paginated in creation order. Filters: user_id, status, transport, is_webrtc (0/1). Never carries passwords or digest hashes.",
        },
      },
    )
    .post(
      "",
      async ({ principal, body, status }) => status(201, { ok: true as const, data: await createDevice(platform.db, principal.accountId, body) }),
      {
        scope: "users",
        idempotent: true,
        parse: "json",
        body: DeviceModel.Create,
        response: { 201: DataReply(DeviceModel.Device), ...errorReplies(400, 401, 403, 409, 415, 422, 429) },
        detail: {
          tags,
          summary: "Create a device (SIP credential) for a user",
          description:
            "The password becomes the digest hashes ha1 = MD5(auth_username:realm:password) and ha1b = MD5(auth_username@realm:realm:password) and is never stored or returned. " +
            "Defaults: auth_username = the user's username; realm = the account's primary SIP domain, else <account id lower-cased>.sip.parley.local; transport udp; is_webrtc 1 for wss. " +
            "(realm, auth_username) is unique across the platform: 409 with field auth_username.",
        },
      },
    )
    .get("/:id", async ({ principal, params }) => ({ ok: true as const, data: await getDevice(platform.db, principal.accountId, params.id) }), {
      scope: "users",
      params: IdParams,
      response: { 200: DataReply(DeviceModel.Device), ...errorReplies(400, 401, 403, 404, 429) },
      detail: { tags, summary: "One device" },
    })
    .patch(
      "/:id",
      async ({ principal, params, body }) => {
        const before = await getDevice(platform.db, principal.accountId, params.id);
        const device = await updateDevice(platform.db, principal.accountId, params.id, body);
        // Its registrations end when it can no longer authenticate as what it registered as.
        const moved = device.user_id !== before.user_id || device.auth_username !== before.auth_username || device.realm !== before.realm;
        if (device.status !== "active" || moved || body.password !== undefined) await forgetDevice(platform.live, principal.accountId, before.user_id, device.id);
        return { ok: true as const, data: device };
      },
      {
        scope: "users",
        idempotent: true,
        parse: "json",
        params: IdParams,
        body: DeviceModel.Patch,
        response: { 200: DataReply(DeviceModel.Device), ...errorReplies(400, 401, 403, 404, 409, 415, 422, 429) },
        detail: {
          tags,
          summary: "Update a device",
          description:
            "Only the fields sent change. Changing auth_username or realm needs password in the same request (400 on /password): the digest hashes cover all three. " +
            "409 with field auth_username when the new identity is taken.",
        },
      },
    )
    .delete(
      "/:id",
      async ({ principal, params }) => {
        const before = await getDevice(platform.db, principal.accountId, params.id);
        await deleteDevice(platform.db, principal.accountId, params.id);
        await forgetDevice(platform.live, principal.accountId, before.user_id, before.id);
        return { ok: true as const };
      },
      {
        scope: "users",
        idempotent: true,
        params: IdParams,
        response: { 200: OkReply, ...errorReplies(400, 401, 403, 404, 409, 422, 429) },
        detail: { tags, summary: "Delete a device", description: "Its SIP credential stops working at once. 409 with used_by while a ring group rings the device." },
      },
    );
}
