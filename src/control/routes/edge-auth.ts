/** POST /auth (SIP digest verification for the edge). */
import { Elysia } from "elysia";
import type { Platform } from "../../core/platform.ts";
import { SipAuthModel } from "../../core/sip-auth/sip-auth.model.ts";
import { authenticateDigest, digestAuthDeps } from "../../core/sip-auth/sip-auth.service.ts";
import { apiModels } from "../../http/api-models.ts";
import { errorReplies } from "../../http/reply-models.ts";
import { edgeBodyPreparer } from "../edge-body.ts";

const prepareAuthBody = edgeBodyPreparer(SipAuthModel.Request);

export function edgeAuthRoutes(platform: Platform) {
  const deps = digestAuthDeps(platform);
  return new Elysia({ name: "control-edge-auth", normalize: false })
    .use(apiModels).post("/auth", ({ body }) => authenticateDigest(deps, body), {
    transform: ({ body, request }) => prepareAuthBody(body, request),
    body: SipAuthModel.Request,
    response: { 200: SipAuthModel.Reply, ...errorReplies(400, 401, 403, 415) },
    detail: {
      summary: "Verify a SIP digest",
      description: "The edge forwards the parsed Authorization header; 200 with the account context, 401 for any wrong or unknown credential or a replay, 403 when the device, its user or its account is not active.",
    },
  });
}
