/** Use cases on agent scripts: store the blob, version it, hand it back for the client to render. */
import type { DbOrTx } from "../db/db.ts";
import { notFound, validationFailed } from "../errors/app-error.ts";
import { newId } from "../ids/ids.ts";
import { nowSeconds } from "../db/columns.ts";
import { decodeCursor, toPage } from "../pagination/pagination.ts";
import { MAX_SCRIPT_BYTES, type ScriptModel } from "./scripts.model.ts";
import type { ScriptRow } from "./scripts.schema.ts";
import { deleteScript as deleteScriptRow, findScript, insertScript, listScriptSummaries, updateScript as updateScriptRow, type ScriptSummaryRow } from "./scripts.store.ts";

function toSummary(row: ScriptSummaryRow): ScriptModel.Summary {
  return {
    id: row.id,
    name: row.name,
    description: row.description,
    content_type: row.content_type as ScriptModel.ContentType,
    body_bytes: row.body_bytes,
    version: row.version,
    created_at: row.created_at,
    updated_at: row.updated_at,
  };
}

/** Maps a row to the API shape, body included. */
export function toScript(row: ScriptRow): ScriptModel.Script {
  return { ...toSummary({ ...row, body_bytes: Buffer.byteLength(row.body, "utf8") }), body: row.body };
}

/** Why `body` cannot be stored as `contentType`, or null. */
function bodyProblem(contentType: ScriptModel.ContentType, body: string): string | null {
  if (Buffer.byteLength(body, "utf8") > MAX_SCRIPT_BYTES) return `At most ${MAX_SCRIPT_BYTES} bytes (UTF-8).`;
  if (contentType === "application/json") {
    try {
      JSON.parse(body);
    } catch {
      return "Not valid JSON, which content_type application/json requires."; // The parse error itself says nothing more useful.
    }
  }
  return null;
}

export async function createScript(db: DbOrTx, accountId: string, input: ScriptModel.Create): Promise<ScriptModel.Script> {
  const problem = bodyProblem(input.content_type, input.body);
  if (problem) throw validationFailed([{ path: "/body", message: problem }]);
  const now = nowSeconds();
  const row = await insertScript(db, {
    account_id: accountId,
    id: newId("scr"),
    name: input.name,
    description: input.description ?? null,
    content_type: input.content_type,
    body: input.body,
    version: 1,
    created_at: now,
    updated_at: now,
  });
  return toScript(row);
}

export async function getScript(db: DbOrTx, accountId: string, id: string): Promise<ScriptModel.Script> {
  const row = await findScript(db, accountId, id);
  if (!row) throw notFound("script");
  return toScript(row);
}

/** Scripts of the account without their bodies, keyset-paginated. */
export async function listScripts(
  db: DbOrTx,
  accountId: string,
  query: { limit: number; cursor?: string; q?: string; content_type?: ScriptModel.ContentType },
): Promise<{ data: ScriptModel.Summary[]; next_cursor?: string }> {
  const rows = await listScriptSummaries(
    db,
    accountId,
    { namePrefix: query.q?.toLowerCase(), contentType: query.content_type },
    decodeCursor(query.cursor, "scr"),
    query.limit,
  );
  return toPage(rows, query.limit, toSummary);
}

/** Changes a script; only sent fields change and the version goes up by one. */
export async function updateScript(db: DbOrTx, accountId: string, id: string, input: ScriptModel.Update): Promise<ScriptModel.Script> {
  const row = await findScript(db, accountId, id);
  if (!row) throw notFound("script");
  const contentType = input.content_type ?? (row.content_type as ScriptModel.ContentType);
  const problem = bodyProblem(contentType, input.body ?? row.body);
  if (problem) throw validationFailed([{ path: input.body !== undefined ? "/body" : "/content_type", message: problem }]);
  const updated = await updateScriptRow(db, accountId, id, {
    ...(input.name !== undefined ? { name: input.name } : {}),
    ...(input.description !== undefined ? { description: input.description } : {}),
    ...(input.content_type !== undefined ? { content_type: input.content_type } : {}),
    ...(input.body !== undefined ? { body: input.body } : {}),
    updated_at: nowSeconds(),
  });
  if (!updated) throw notFound("script");
  return toScript(updated);
}

export async function deleteScript(db: DbOrTx, accountId: string, id: string): Promise<void> {
  if (!(await deleteScriptRow(db, accountId, id))) throw notFound("script");
}

/** The raw body and its type, for GET …/render. */
export async function renderScript(db: DbOrTx, accountId: string, id: string): Promise<{ contentType: ScriptModel.ContentType; body: string; version: number }> {
  const row = await findScript(db, accountId, id);
  if (!row) throw notFound("script");
  return { contentType: row.content_type as ScriptModel.ContentType, body: row.body, version: row.version };
}
