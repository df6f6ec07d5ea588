/** POST /trunks/tick (the edge's keep-alive probes and registrations with trunks) and GET /trunks/status (control host). */
import { Elysia } from "elysia";
import type { Platform } from "../../core/platform.ts";
import { notFound } from "../../core/errors/app-error.ts";
import { accountExists } from "../../core/presence/presence.store.ts";
import { TrunkTickModel } from "../../core/trunks/trunk-tick.model.ts";
import { trunkTicker } from "../../core/trunks/trunk-tick.service.ts";
import { apiModels } from "../../http/api-models.ts";
import { errorReplies } from "../../http/reply-models.ts";

export function trunkRoutes(platform: Platform) {
  const ticker = trunkTicker({ db: platform.db, live: platform.live, secrets: platform.secrets, log: platform.log.child({ component: "trunks" }), configCache: platform.configCache });
  return new Elysia({ name: "control-trunks", normalize: false })
    .use(apiModels)
    .post("/trunks/tick", ({ body }) => ticker.tick(body), {
      parse: "json",
      body: TrunkTickModel.Request,
      response: { 200: TrunkTickModel.Reply, ...errorReplies(400, 415) },
      detail: {
        summary: "The edge's trunk tick: probe outcomes and registration states in, probes due and registrations to keep out",
        description:
          "Each edge node calls it every few seconds (kamailio.cfg TRUNK_TICK). It reports the outcome of the OPTIONS probes it sent since its last tick (a trunk that misses two in a row is tried after the others by outbound routing) and where each registration it keeps stands; the reply lists the trunks to probe now (ping_sec) and every registration the node should keep (do_register, reg_node unset or the node), each as a ready uac.reg_add request with the HA1 of the password, never the password.",
      },
    })
    .get(
      "/trunks/status",
      async ({ query }) => {
        if (!(await accountExists(platform.db, query.accountId))) throw notFound("account");
        return ticker.status(query.accountId);
      },
      {
        query: TrunkTickModel.StatusQuery,
        response: { 200: TrunkTickModel.StatusReply, ...errorReplies(400, 404) },
        detail: {
          summary: "An account's trunks: whether they answer OPTIONS, our registrations with them, theirs with us",
          description: "For operators: each trunk's probe state (up, down since when, the last code, stale when the probes stopped), each edge node's registration with it (registered, registering, failed, disabled) and how many live registrations a trunk that registers to us has.",
        },
      },
    );
}
