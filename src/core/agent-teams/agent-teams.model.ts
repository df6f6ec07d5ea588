/** TypeBox models of agent teams. */
import { Type as T, type Static } from "@sinclair/typebox";
import { t } from "elysia";
import { Name } from "../validation/fields.ts";
import { PageQuery } from "../../http/page-query.ts";

export namespace AgentTeamModel {
  const teamFields = {
    id: T.String({ description: "team_… id." }),
    name: T.String({ description: "Unique per account, ignoring case." }),
    created_at: T.Integer({ description: "Epoch seconds." }),
    updated_at: T.Integer({ description: "Epoch seconds." }),
  };

  /** A team as listed. */
  export const Team = T.Object(teamFields, { additionalProperties: false });
  export type Team = Static<typeof Team>;

  /** A member: a user whose team_id is the team. */
  export const Member = T.Object(
    {
      id: T.String({ description: "us_… id." }),
      username: T.String({ description: "The user's extension." }),
      display_name: T.String(),
    },
    { additionalProperties: false },
  );
  export type Member = Static<typeof Member>;

  /** One team with its members. */
  export const TeamWithMembers = T.Object(
    {
      ...teamFields,
      members: T.Array(Member, { description: "Users whose team_id is this team, by display name. A user joins or leaves a team through its team_id (users API)." }),
    },
    { additionalProperties: false },
  );
  export type TeamWithMembers = Static<typeof TeamWithMembers>;

  /** POST /v1/agent-teams. */
  export const Create = T.Object({ name: Name(100) }, { additionalProperties: false });
  export type Create = Static<typeof Create>;

  /** PATCH /v1/agent-teams/{id}. */
  export const Patch = T.Object({ name: T.Optional(Name(100)) }, { additionalProperties: false, minProperties: 1 });
  export type Patch = Static<typeof Patch>;

  /** GET /v1/agent-teams query. */
  export const ListQuery = t.Object(
    {
      ...PageQuery.properties,
      q: t.Optional(t.String({ minLength: 1, maxLength: 100, description: "Case-insensitive prefix of the name." })),
    },
    { additionalProperties: false },
  );
}
