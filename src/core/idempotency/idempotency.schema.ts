import { integer, pgTable, primaryKey, text } from "drizzle-orm/pg-core";
import { epochMillis } from "../db/columns.ts";

/**
 * Idempotency-Key records, scoped to the account. `state` is `in_flight` while the first request
 * runs (a concurrent duplicate gets 409) and `done` once its reply is stored for replay.
 */
export const idempotencyKeys = pgTable(
  "idempotency_key",
  {
    account_id: text("account_id").notNull(),
    key: text("key").notNull(),
    /** SHA-256 of method, path and body: the same key with another request is refused (422). */
    request_hash: text("request_hash").notNull(),
    state: text("state").notNull(),
    status: integer("status"),
    /** The stored reply body, exactly as first sent. */
    body: text("body"),
    content_type: text("content_type"),
    /** An in-flight claim older than this is abandoned (its instance died) and may be retaken. */
    locked_until: epochMillis("locked_until").notNull(),
    created_at: epochMillis("created_at").notNull(),
  },
  (t) => [primaryKey({ columns: [t.account_id, t.key] })],
);
