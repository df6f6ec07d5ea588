/** Use cases on webhook subscriptions: check the target, keep the signing secret in the secret store. */
import { randomBytes } from "node:crypto";
import type { DbOrTx } from "../db/db.ts";
import { conflict, notFound, validationFailed } from "../errors/app-error.ts";
import { newId } from "../ids/ids.ts";
import { nowSeconds } from "../db/columns.ts";
import { decodeCursor, toPage } from "../pagination/pagination.ts";
import type { SecretStore } from "../secrets/secrets.service.ts";
import { EVENT_NAMES, isEventName } from "./event-catalog.ts";
import type { WebhookModel } from "./webhooks.model.ts";
import type { WebhookSubscriptionRow } from "./webhooks.schema.ts";
import { deleteWebhookRow, insertWebhook, listWebhookRows, lockAccountForWebhooks, countWebhooks } from "./webhooks.store.ts";
import { checkWebhookUrl } from "./url-safety.ts";
import { standardWebhookKey } from "./delivery-signing.ts";

/** Most subscriptions one account may have (docs/resources/webhooks.md). */
export const MAX_WEBHOOKS_PER_ACCOUNT = 50;
/** Fewest bytes of key a secret must give the signatures (Standard Webhooks suggests 24 to 64). */
const MIN_SECRET_KEY_BYTES = 16;

/** Maps a row to the API shape; the secret ref never leaves. */
function toWebhook(row: WebhookSubscriptionRow): WebhookModel.Webhook {
  return {
    id: row.id,
    url: row.url,
    events: row.events,
    description: row.description,
    status: row.status as WebhookModel.Status,
    has_secret: row.secret_ref ? 1 : 0,
    created_at: row.created_at,
    updated_at: row.updated_at,
  };
}

/**
 * A new signing secret: `whsec_` and 32 random bytes in standard base64 (with its one `=`), the
 * form the Standard Webhooks libraries decode into their key (see delivery-signing.ts).
 */
export function generateWebhookSecret(): string {
  return `whsec_${randomBytes(32).toString("base64")}`;
}

/**
 * The `events` of a request as stored: catalog names de-duplicated in catalog order, or `["*"]` when
 * absent, `*`, or naming every event. Unknown names are a 400 at /events listing them all.
 * @example normalizeEvents("call.ended, call.started,call.ended") // ["call.started", "call.ended"]
 */
/** The refusal of a list with an empty name in it ("test,", "a,,b"): a typo, not "fewer events". */
export const EMPTY_EVENT_NAME = "An empty event name (a stray comma?): separate names with single commas.";

export function normalizeEvents(input: string | string[] | undefined): string[] {
  if (input === undefined) return ["*"];
  const names = (typeof input === "string" ? input.split(",") : input).map((n) => n.trim());
  if (names.every((n) => n === "")) throw validationFailed([{ path: "/events", message: "Name at least one event, or * for all." }]);
  if (names.includes("")) throw validationFailed([{ path: "/events", message: EMPTY_EVENT_NAME }]);
  if (names.includes("*")) {
    if (names.some((n) => n !== "*")) throw validationFailed([{ path: "/events", message: "* means every event; send it alone." }]);
    return ["*"];
  }
  const unknown = [...new Set(names.filter((n) => !isEventName(n)))];
  if (unknown.length) {
    throw validationFailed([{ path: "/events", message: `Unknown event${unknown.length > 1 ? "s" : ""}: ${unknown.join(", ")}. See GET /v1/webhooks/events.` }]);
  }
  const wanted = new Set(names);
  const ordered = EVENT_NAMES.filter((n) => wanted.has(n));
  return ordered.length === EVENT_NAMES.length ? ["*"] : ordered;
}

/**
 * Creates a subscription. Everything is checked (URL resolution included) before anything is
 * written; the row and its secret are written in one transaction. The generated secret is in the
 * reply only when the request sent none.
 */
export async function createWebhook(
  db: DbOrTx,
  secrets: SecretStore,
  accountId: string,
  input: WebhookModel.Create,
  options: { allowPrivate?: boolean } = {},
): Promise<WebhookModel.Created> {
  const events = normalizeEvents(input.events);
  if (input.secret !== undefined) checkSecret(input.secret);
  const url = await checkWebhookUrl(input.url, { path: "/url", allowPrivate: options.allowPrivate });
  const generated = input.secret === undefined ? generateWebhookSecret() : null;
  const now = nowSeconds();
  const row = await db.transaction(async (tx) => {
    await lockAccountForWebhooks(tx, accountId);
    const existing = await countWebhooks(tx, accountId);
    // Each subscription is a queue of its own for the workers: a cap keeps one account from holding
    // up the deliveries of the others. Copies (same URL and events) are allowed: a secret is rotated
    // by subscribing again with the new one and deleting the old subscription once receivers take it.
    if (existing >= MAX_WEBHOOKS_PER_ACCOUNT) {
      throw conflict(`An account has at most ${MAX_WEBHOOKS_PER_ACCOUNT} webhook subscriptions; delete one first.`, { limit: MAX_WEBHOOKS_PER_ACCOUNT });
    }
    return insertWebhook(tx, {
      account_id: accountId,
      id: newId("wh"),
      url,
      events,
      description: input.description ?? null,
      secret_ref: await secrets.put(tx, accountId, generated ?? input.secret!),
      status: "active",
      created_at: now,
      updated_at: now,
    });
  });
  return generated ? { ...toWebhook(row), secret: generated } : toWebhook(row);
}

/** Subscriptions of the account without secrets, keyset-paginated; `event` keeps those receiving it. */
export async function listWebhooks(
  db: DbOrTx,
  accountId: string,
  query: { limit: number; cursor?: string; event?: string },
): Promise<{ data: WebhookModel.Webhook[]; next_cursor?: string }> {
  if (query.event !== undefined && query.event !== "*" && !isEventName(query.event)) {
    throw validationFailed([{ path: "/query/event", message: `Unknown event: ${query.event}. See GET /v1/webhooks/events.` }]);
  }
  const filter = query.event === undefined || query.event === "*" ? {} : { event: query.event };
  const rows = await listWebhookRows(db, accountId, filter, decodeCursor(query.cursor, "wh"), query.limit);
  return toPage(rows, query.limit, toWebhook);
}

/** Removes a subscription and its secret together; another account's id is a 404. */
export async function deleteWebhook(db: DbOrTx, secrets: SecretStore, accountId: string, id: string): Promise<void> {
  await db.transaction(async (tx) => {
    const row = await deleteWebhookRow(tx, accountId, id);
    if (!row) throw notFound("webhook");
    if (row.secret_ref) await secrets.remove(tx, accountId, row.secret_ref);
  });
}

/**
 * A secret the caller chose must be a key worth signing with: no control characters, not blank, and (a `whsec_`
 * one, which receivers decode) at least MIN_SECRET_KEY_BYTES bytes once decoded.
 */
function checkSecret(secret: string): void {
  if (/[\u0000-\u001f\u007f-\u009f]/.test(secret) || secret.trim() === "") {
    throw validationFailed([{ path: "/secret", message: "no control characters, not blank" }], "secret must have no control characters and not be blank.");
  }
  if (secret.startsWith("whsec_")) {
    // Receivers pass it unchanged to their Standard Webhooks library, which decodes it as base64: only
    // the canonical padded form decodes the same in every one (spare low bits in the last character
    // are dropped by some and refused by others, missing padding likewise).
    const encoded = secret.slice("whsec_".length);
    if (!/^[A-Za-z0-9+/]+={0,2}$/.test(encoded) || Buffer.from(encoded, "base64").toString("base64") !== encoded) {
      throw validationFailed([{ path: "/secret", message: "a whsec_ secret is canonical, padded base64 after its prefix" }], "secret starts with whsec_ but is not canonical, padded base64 after it.");
    }
  }
  if (standardWebhookKey(secret).length < MIN_SECRET_KEY_BYTES) {
    throw validationFailed([{ path: "/secret", message: `at least ${MIN_SECRET_KEY_BYTES} bytes of key` }], `secret gives a key under ${MIN_SECRET_KEY_BYTES} bytes (a whsec_ secret is base64 after its prefix).`);
  }
}
