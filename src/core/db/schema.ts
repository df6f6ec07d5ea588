/** Every table of the platform, for drizzle-kit and the migration check. Each lives with its capability. */
export * from "../accounts/accounts.schema.ts";
export * from "../auth/auth.schema.ts";
export * from "../idempotency/idempotency.schema.ts";
export * from "../secrets/secrets.schema.ts";
