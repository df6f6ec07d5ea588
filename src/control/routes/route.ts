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
import { RouteRequest, type RouteDecision, type RouteReply } from "../../core/routing/route-types.ts";
import { decideRoute, routeDeps } from "../../core/routing/decide.ts";
import { UNDELIVERED_GRACE_MS, admissionClaim, admitCall, releaseAdmissionClaim, settleUndeliveredReply } from "../../core/calls/admission.ts";
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

const prepareRoute = edgeBodyPreparer(RouteBody);
const prepareAuth = edgeBodyPreparer(SipAuthModel.Request);

/** The reply: the rtjson document, and who authenticated when the request carried `auth`. */
type RouteResult = RouteReply & { auth?: DigestAuthResult };

export interface RouteRoutesOptions {
  /** How long after an undelivered reply its call is settled (default UNDELIVERED_GRACE_MS; tests shorten it). */
  undeliveredGraceMs?: number;
}

export function routeRoutes(platform: Platform, options: RouteRoutesOptions = {}) {
  const deps = routeDeps(platform);
  const authDeps = digestAuthDeps(platform);
  const graceMs = options.undeliveredGraceMs ?? UNDELIVERED_GRACE_MS;
  const pending = new Set<ReturnType<typeof setTimeout>>();
  // A connection the edge closed is noticed when the event loop polls the network. Against
  // PostgreSQL and Redis every decision waits on the network, so it has been polled by the reply;
  // on the embedded stores a whole decision can run without one (the request and the edge's close
  // read together, e.g. after a stall): a few turns of the loop let the close be seen (seen: one is
  // not always enough in Bun 1.4, three were).
  const loopTurns = platform.config.databaseUrl ? 0 : 3;

  /**
   * The edge closed the connection before the reply (it stopped waiting and refused the caller): the
   * admitted call is settled a little later (settleUndeliveredReply), unless the edge asks again.
   */
  function undelivered(reply: RouteReply, sipCallId: string): void {
    platform.log.info("the edge stopped waiting for a /route reply: the call is ended unless the edge asks again", { account_id: reply.rtjson.account_id });
    const timer = setTimeout(() => {
      pending.delete(timer);
      settleUndeliveredReply(platform, reply, sipCallId).then(
        (outcome) => platform.log.info("undelivered /route reply settled", { account_id: reply.rtjson.account_id, outcome }),
        (error: unknown) => platform.log.warn("undelivered /route reply not settled (its slots are freed by CAC_MAX_CALL_SEC)", { account_id: reply.rtjson.account_id, error: String(error) }),
      );
    }, graceMs);
    timer.unref?.();
    pending.add(timer);
  }

  /** The reply; when the edge is gone already, the call it would have placed is settled later. */
  async function answer<R extends RouteReply>(reply: R, request: Request, sipCallId: string): Promise<R> {
    if (reply.rtjson.action === "reject" || !reply.rtjson.account_id) return reply;
    for (let turn = 0; turn < loopTurns; turn++) await new Promise((resolve) => setImmediate(resolve));
    if (request.signal.aborted) undelivered(reply, sipCallId);
    return reply;
  }

  return new Elysia({ name: "control-route", normalize: false })
    .onStop(() => {
      for (const timer of pending) clearTimeout(timer);
      pending.clear();
    })
    .post(
      "/route",
      async ({ body, request }): Promise<RouteResult> => {
        const { auth, ...req } = body;
        if (!auth) return answer(await admitCall(platform, await decideRoute(deps, req), req), request, req.callId);
        const named = (["account_id", "user_id", "device_id", "trunk_id"] as const).filter((k) => req[k]);
        if (named.length) throw validationFailed(named.map((k) => ({ path: `/${k}`, message: "Not allowed with auth: the digest names the device." })));
        // The credential and the device's routing context in one query; the context is used only once
        // the digest is verified. The call's admission claim is taken with the nonce (one round trip).
        const { result: who, device, also } = await authenticateDigestForRoute(authDeps, auth, req.to, {
          alsoTake: (accountId) => admissionClaim(accountId, req.callId, req.cseq),
        });
        // A device's call, or a trunk's (inbound_auth register or digest): routed as from that trunk.
        const routed = who.trunk_id
          ? { ...req, account_id: who.account_id, trunk_id: who.trunk_id }
          : { ...req, account_id: who.account_id, user_id: who.user_id ?? undefined, device_id: who.device_id ?? undefined };
        const held = also ? { claim: also.entry, taken: also.taken } : undefined;
        let decision: RouteDecision;
        try {
          decision = await decideRoute(deps, routed, device ? { device } : {});
        } catch (error) {
          if (held?.taken) releaseAdmissionClaim(platform, held.claim);
          throw error;
        }
        return answer({ ...(await admitCall(platform, decision, routed, held)), auth: who }, request, req.callId);
      },
      {
        // Empty optional digest fields count as absent, as on /auth. In a form body `auth` is text, which
        // the schema refuses (400 at /auth): it is taken in JSON bodies only.
        transform: ({ body, request }) => {
          prepareRoute(body, request);
          prepareAuth((body as { auth?: unknown } | null)?.auth, request);
        },
        body: RouteBody,
        detail: { summary: "Routing decision for a new call (the edge's rtjson document)" },
      },
    );
}
