/**
 * POST /route (the call routing decision): decide, then admit (CAC, call record, call.started).
 * With `auth` (the INVITE's parsed digest, as POST /auth takes it), the digest is verified first and
 * the call is routed as that device's: one round trip from the edge instead of /auth then /route, and
 * one query for the credential and the device's routing context.
 */
import { Elysia } from "elysia";
import { Type as T } from "@sinclair/typebox";
import type { Platform } from "../../core/platform.ts";
import { validationFailed } from "../../core/errors/app-error.ts";
import { RouteRequest, type RouteReply } from "../../core/routing/route-types.ts";
import { decideRoute, routeDeps } from "../../core/routing/decide.ts";
import { admitCall } from "../../core/calls/admission.ts";
import { SipAuthModel } from "../../core/sip-auth/sip-auth.model.ts";
import { authenticateDigestForRoute, digestAuthDeps, type DigestAuthResult } from "../../core/sip-auth/sip-auth.service.ts";
import { edgeBodyPreparer } from "../edge-body.ts";

/** The contract's request plus the optional fields the router also reads. */
const RouteBody = T.Object(
  {
    ...RouteRequest.properties,
    trunk_id: T.Optional(T.String({ maxLength: 64, description: "A register/digest trunk the edge authenticated (with account_id)." })),
    source_country: T.Optional(T.String({ pattern: "^[A-Za-z]{2}$", description: "ISO alpha-2 country of source_ip (edge GeoIP), for geo ACL rules." })),
    /** The INVITE's digest, exactly as POST /auth takes it (docs/edge-protocols.md, POST /route). */
    auth: T.Optional(SipAuthModel.Request),
  },
  { additionalProperties: true, description: "POST /route request: form or JSON, same names." },
);

const prepareAuth = edgeBodyPreparer(SipAuthModel.Request);

/** The reply: the rtjson document, and who authenticated when the request carried `auth`. */
type RouteResult = RouteReply & { auth?: DigestAuthResult };

export function routeRoutes(platform: Platform) {
  const deps = routeDeps(platform);
  const authDeps = digestAuthDeps(platform);
  return new Elysia({ name: "control-route", normalize: false }).post(
    "/route",
    async ({ body }): Promise<RouteResult> => {
      const { auth, ...req } = body;
      if (!auth) return admitCall(platform, await decideRoute(deps, req), req);
      const named = (["account_id", "user_id", "device_id"] as const).filter((k) => req[k]);
      if (named.length) throw validationFailed(named.map((k) => ({ path: `/${k}`, message: "Not allowed with auth: the digest names the device." })));
      // The credential and the device's routing context in one query; the context is used only once
      // the digest is verified.
      const { result: who, device } = await authenticateDigestForRoute(authDeps, auth, req.to);
      const routed = { ...req, account_id: who.account_id, user_id: who.user_id, device_id: who.device_id };
      return { ...(await admitCall(platform, await decideRoute(deps, routed, { device }), routed)), auth: who };
    },
    {
      // Empty optional digest fields count as absent, as on /auth. In a form body `auth` is text, which
      // the schema refuses (400 at /auth): it is taken in JSON bodies only.
      transform: ({ body, request }) => prepareAuth((body as { auth?: unknown } | null)?.auth, request),
      body: RouteBody,
      detail: { summary: "Routing decision for a new call (the edge's rtjson document)" },
    },
  );
}
