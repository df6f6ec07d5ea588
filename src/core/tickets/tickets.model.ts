/** TypeBox models of realtime tickets (POST /v1/events/ticket). */
import { Type as T, type Static } from "@sinclair/typebox";

export namespace TicketModel {
  /** What a ticket opens. Both open the same event stream today; wallboard tickets will also get snapshots. */
  export const Kind = T.Union([T.Literal("events"), T.Literal("wallboard")], {
    description: "events: the realtime event stream (scope events). wallboard: the wallboard feed (scope wallboard); today the same stream.",
  });
  export type Kind = Static<typeof Kind>;

  /** POST /v1/events/ticket body (optional). */
  export const Mint = T.Object(
    {
      kind: T.Optional(Kind),
    },
    {
      additionalProperties: false,
      description: "Without kind: an events ticket when the credential has scope events, else a wallboard ticket when it has scope wallboard.",
    },
  );
  export type Mint = Static<typeof Mint>;

  export const Minted = T.Object(
    {
      ticket: T.String({ description: "Single-use; send it as the ticket query parameter of the WebSocket URL within expires_in seconds." }),
      kind: Kind,
      expires_in: T.Integer({ description: "Seconds the ticket stays valid (60)." }),
      url: T.String({ description: "The WebSocket URL on the realtime host, ticket included; add events= and last_event_id= as needed." }),
    },
    { additionalProperties: false },
  );
  export type Minted = Static<typeof Minted>;
}
