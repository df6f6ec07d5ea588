/**
 * POST /security/report, GET /security/bans, GET/POST /security/allow, DELETE /security/allow/{ip}
 * (control host, behind the CONTROL_ALLOW gate): the edge nodes' ban snapshots and the allowlist.
 */
import { Elysia } from "elysia";
import { Type as T } from "@sinclair/typebox";
import type { Platform } from "../../core/platform.ts";
import { SecurityModel } from "../../core/security/security.model.ts";
import { addToAllowlist, listAllowlist, parseReport, removeFromAllowlist, reportBans, searchBans, type ReportOptions } from "../../core/security/security.service.ts";
import { DataReply, OkReply, errorReplies } from "../../http/reply-models.ts";
import { apiModels } from "../../http/api-models.ts";
import { NoQuery } from "../../http/page-query.ts";
import { authFailures } from "../../core/sip-auth/sip-auth.service.ts";
import { validationFailed } from "../../core/errors/app-error.ts";

const tags = ["Edge security"];

/** Failed digests per address come from the /auth service's counters (tests may pass their own). */
export function securityRoutes(platform: Platform, options: Pick<ReportOptions, "authFailures"> = {}) {
  const { db, live } = platform;
  const failures = options.authFailures ?? ((ip: string) => authFailures(live, ip));
  return new Elysia({ name: "control-security", prefix: "/security", normalize: false })
    .use(apiModels)
    .post(
      "/report",
      async ({ body }) => {
        const report = parseReport(body);
        const { lift, allow } = await reportBans(db, report, { authFailures: failures });
        return { ok: true as const, lift, allow };
      },
      {
        // Checked by parseReport: a form body carries `bans` as JSON text.
        body: T.Unknown(),
        response: { 200: SecurityModel.ReportReply, ...errorReplies(400, 403, 415) },
        detail: {
          tags,
          summary: "A node's ban snapshot",
          description:
            "Body: the model SecurityReport ({ node, bans: [{ ip, reason?, hits?, banned_at?, expires_at? }], ts? }). The whole ban table of the node, about every 30 s; an address it no longer reports is expired. Allow-listed addresses are not recorded and come back in lift.",
        },
      },
    )
    .get("/bans", async ({ query }) => ({ ok: true as const, data: await searchBans(db, query) }), {
      query: SecurityModel.BanQuery,
      response: { 200: T.Object({ ok: T.Literal(true), data: T.Array(SecurityModel.Ban) }), ...errorReplies(400, 403) },
      detail: { tags, summary: "List and search bans", description: "Most recently seen first. q is an address prefix." },
    })
    .get("/allow", async () => ({ ok: true as const, data: await listAllowlist(db) }), {
      query: NoQuery,
      response: { 200: T.Object({ ok: T.Literal(true), data: T.Array(SecurityModel.Allow) }), ...errorReplies(400, 403) },
      detail: { tags, summary: "The allowlist" },
    })
    .post(
      "/allow",
      async ({ body, status }) => {
        const { created, ...data } = await addToAllowlist(db, body);
        return status(created ? 201 : 200, { ok: true as const, data });
      },
      {
        body: SecurityModel.AddAllow,
        response: { 200: DataReply(SecurityModel.AddAllowResult), 201: DataReply(SecurityModel.AddAllowResult), ...errorReplies(400, 403, 415) },
        detail: { tags, summary: "Allow an address or range", description: "201 when added, 200 when it was listed already. Lifts the active bans it covers." },
      },
    )
    .delete(
      "/allow/*",
      async ({ params }) => {
        let address: string;
        try {
          address = decodeURIComponent(params["*"]);
        } catch {
          throw validationFailed([{ path: "/params/ip", message: "Not an IP address or CIDR range (bad percent-encoding)." }]);
        }
        await removeFromAllowlist(db, address, "/params/ip");
        return { ok: true as const };
      },
      {
        response: { 200: OkReply, ...errorReplies(400, 403, 404) },
        detail: { tags, summary: "Remove an address or range from the allowlist", description: "The path is the address or range as listed (a CIDR's / may be sent as is or as %2F)." },
      },
    );
}
