/** TypeBox models of rate plans as the config file writes them (section `rate_plans`). */
import { Type as T, type Static } from "@sinclair/typebox";
import { Flag } from "../validation/fields.ts";

const Micro = (description: string) => T.Integer({ minimum: 0, maximum: 1_000_000_000_000, description });

export namespace RateModel {
  /** One price line. */
  export const RateEntry = T.Object(
    {
      prefix: T.String({ pattern: "^[0-9]{0,15}$", description: "Digits the billed number (E.164 without +) starts with; \"\" matches every number. The longest match wins." }),
      direction: T.Optional(T.Union([T.Literal("outbound"), T.Literal("inbound"), T.Literal("any")], { description: "Calls the line prices: outbound (default; by the number called), inbound (by the account's number that was called), any." })),
      per_minute_micro: Micro("Price per minute in micro-units of the currency (1,000,000 = 1 unit)."),
      increment: T.Optional(T.String({ pattern: "^[1-9][0-9]{0,3}/[1-9][0-9]{0,3}$", description: "initial/increment seconds: 60/60 (default) bills whole minutes, 1/1 whole seconds, 30/6 a 30-second minimum then 6-second steps." })),
      connection_fee_micro: T.Optional(Micro("Charged once per answered call; default 0.")),
    },
    { additionalProperties: false },
  );
  export type RateEntry = Static<typeof RateEntry>;

  /** One rate plan (`rate_plans[]`), keyed by name. */
  export const RatePlanEntry = T.Object(
    {
      name: T.String({ minLength: 1, maxLength: 100, description: "Unique in the account (case-insensitive)." }),
      currency: T.String({ pattern: "^[A-Z]{3}$", description: "ISO 4217, e.g. USD." }),
      default: T.Optional(Flag("1 for the plan that prices the account's calls (exactly one when any plan is listed). Default 0.")),
      rates: T.Array(RateEntry, { maxItems: 20_000, description: "Price lines; one per (prefix, direction)." }),
    },
    { additionalProperties: false },
  );
  export type RatePlanEntry = Static<typeof RatePlanEntry>;
}
