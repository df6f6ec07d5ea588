/** POST /route/trunk-auth (the edge answers a trunk's digest challenge on an outbound call). */
import { Elysia } from "elysia";
import type { Platform } from "../../core/platform.ts";
import { TrunkAuthModel } from "../../core/trunks/trunk-auth.model.ts";
import { answerTrunkChallenge, type TrunkAuthDeps } from "../../core/trunks/trunk-auth.service.ts";
import { apiModels } from "../../http/api-models.ts";
import { errorReplies } from "../../http/reply-models.ts";
import { edgeBodyPreparer } from "../edge-body.ts";

const prepareBody = edgeBodyPreparer(TrunkAuthModel.Request);

export function trunkAuthRoutes(platform: Platform) {
  const deps: TrunkAuthDeps = { db: platform.db, secrets: platform.secrets, log: platform.log.child({ component: "trunk-auth" }) };
  return new Elysia({ name: "control-trunk-auth", normalize: false })
    .use(apiModels)
    .post("/route/trunk-auth", ({ body }) => answerTrunkChallenge(deps, body), {
      transform: ({ body, request }) => prepareBody(body, request),
      body: TrunkAuthModel.Request,
      response: { 200: TrunkAuthModel.Reply, ...errorReplies(400, 403, 404, 415) },
      detail: {
        summary: "Credentials to answer a trunk's digest challenge",
        description:
          "The edge sends the challenge a trunk answered an outbound INVITE with (a route's auth_trunk); 200 with the trunk's username and the HA1 for the challenge's realm (the password never leaves the platform). 404 when the account has no active outbound trunk with credentials by that id, 403 when the trunk has a realm and the challenge names another, 400 for a challenge that is not Digest with a realm or asks an algorithm other than MD5 or MD5-sess.",
      },
    });
}
