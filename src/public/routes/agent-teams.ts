/** GET, POST /v1/agent-teams; GET, PATCH, DELETE /v1/agent-teams/{id}. */
import { Elysia } from "elysia";
import { Type as T } from "@sinclair/typebox";
import type { Platform } from "../../core/platform.ts";
import { AgentTeamModel } from "../../core/agent-teams/agent-teams.model.ts";
import { createTeam, deleteTeam, getTeam, listAgentTeams, patchTeam } from "../../core/agent-teams/agent-teams.service.ts";
import { DEFAULT_PAGE_SIZE } from "../../core/pagination/pagination.ts";
import { apiModels } from "../../http/api-models.ts";
import { DataReply, ListReply, OkReply, errorReplies } from "../../http/reply-models.ts";
import { apiAccess } from "../plugins/api-access.ts";

const IdParams = T.Object({ id: T.String({ maxLength: 64, description: "team_… id." }) });

export function agentTeamRoutes(platform: Platform) {
  const tags = ["Agent teams"];
  return new Elysia({ name: "routes-agent-teams", prefix: "/v1/agent-teams", normalize: false })
    .use(apiModels)
    .use(apiAccess(platform))
    .get(
      "",
      async ({ principal, query }) =>
        ({ ok: true as const, ...(await listAgentTeams(platform.db, principal.accountId, { ...query, limit: query.limit ?? DEFAULT_PAGE_SIZE })) }),
      {
        scope: "reports",
        query: AgentTeamModel.ListQuery,
        response: { 200: ListReply(AgentTeamModel.Team), ...errorReplies(400, 401, 403, 429) },
        detail: { tags, summary: "List agent teams", description: "Filter: q (name prefix, any case). Creation order, keyset-paginated; without members." },
      },
    )
    .post("", async ({ principal, body, status }) => status(201, { ok: true as const, data: await createTeam(platform.db, principal.accountId, body) }), {
      scope: "reports",
      idempotent: true,
      parse: "json",
      body: AgentTeamModel.Create,
      response: { 201: DataReply(AgentTeamModel.TeamWithMembers), ...errorReplies(400, 401, 403, 409, 415, 422, 429) },
      detail: { tags, summary: "Create an agent team", description: "Names are unique per account, ignoring case (409)." },
    })
    .get("/:id", async ({ principal, params }) => ({ ok: true as const, data: await getTeam(platform.db, principal.accountId, params.id) }), {
      scope: "reports",
      params: IdParams,
      response: { 200: DataReply(AgentTeamModel.TeamWithMembers), ...errorReplies(400, 401, 403, 404, 429) },
      detail: { tags, summary: "One agent team with its members" },
    })
    .patch(
      "/:id",
      async ({ principal, params, body }) => ({ ok: true as const, data: await patchTeam(platform.db, principal.accountId, params.id, body) }),
      {
        scope: "reports",
        idempotent: true,
        parse: "json",
        params: IdParams,
        body: AgentTeamModel.Patch,
        response: { 200: DataReply(AgentTeamModel.TeamWithMembers), ...errorReplies(400, 401, 403, 404, 409, 415, 422, 429) },
        detail: { tags, summary: "Rename an agent team" },
      },
    )
    .delete(
      "/:id",
      async ({ principal, params }) => {
        await deleteTeam(platform.db, principal.accountId, params.id);
        return { ok: true as const };
      },
      {
        scope: "reports",
        idempotent: true,
        params: IdParams,
        response: { 200: OkReply, ...errorReplies(400, 401, 403, 404, 409, 422, 429) },
        detail: { tags, summary: "Delete an agent team", description: "Refused (409, used_by lists them) while users are in it." },
      },
    );
}
