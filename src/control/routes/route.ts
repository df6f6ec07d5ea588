/** POST /route (the call routing decision): decide, then admit (CAC, call record, call.started). */
import { Elysia } from "elysia";
import { Type as T } from "@sinclair/typebox";
import type { Platform } from "../../core/platform.ts";
import { RouteRequest } from "../../core/routing/route-types.ts";
import { decideRoute, routeDeps } from "../../core/routing/decide.ts";
import { admitCall } from "../../core/calls/admission.ts";

/** The contract's request plus the optional fields the router also reads. */
const RouteBody = T.Object(
  {
    ...RouteRequest.properties,
    trunk_id: T.Optional(T.String({ maxLength: 64, description: "A register/digest trunk the edge authenticated (with account_id)." })),
    source_country: T.Optional(T.String({ pattern: "^[A-Za-z]{2}$", description: "ISO alpha-2 country of source_ip (edge GeoIP), for geo ACL rules." })),
  },
  { additionalProperties: true, description: "POST /route request: form or JSON, same names." },
);

export function routeRoutes(platform: Platform) {
  const deps = routeDeps(platform);
  return new Elysia({ name: "control-route", normalize: false }).post(
    "/route",
    async ({ body }) => {
      const decision = await decideRoute(deps, body);
      return admitCall(platform, decision, body);
    },
    {
      body: RouteBody,
      detail: { summary: "Routing decision for a new call (the edge's rtjson document)" },
    },
  );
}
