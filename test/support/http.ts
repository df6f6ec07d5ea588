/** Calls an Elysia app in-process (app.handle) and returns status, headers and parsed JSON. */

export interface Reply<T = Record<string, unknown>> {
  status: number;
  headers: Headers;
  body: T;
  text: string;
}

export interface CallOptions {
  key?: string;
  token?: string;
  body?: unknown;
  headers?: Record<string, string>;
}

interface Handler {
  handle(request: Request): Promise<Response> | Response;
}

// Any body type the tests care about; `unknown` members make tests narrow before use.
// biome-ignore lint: test helper
export type Json = Record<string, any>;

export async function call<T = Json>(app: Handler, method: string, path: string, options: CallOptions = {}): Promise<Reply<T>> {
  const headers: Record<string, string> = { ...options.headers };
  if (options.key !== undefined) headers["x-api-key"] = options.key;
  if (options.token !== undefined) headers["authorization"] = `Bearer ${options.token}`;
  let body: string | undefined;
  let raw: BodyInit | undefined;
  if (options.body instanceof Uint8Array || options.body instanceof ArrayBuffer || options.body instanceof Blob) {
    // Binary bodies (media uploads) go as they are; the caller sets their content type.
    raw = options.body as BodyInit;
  } else if (options.body !== undefined) {
    body = typeof options.body === "string" ? options.body : JSON.stringify(options.body);
    headers["content-type"] ??= "application/json";
  }
  const response = await app.handle(new Request(`http://localhost${path}`, { method, headers, body: raw ?? body }));
  const text = await response.text();
  let parsed: unknown = null;
  try {
    parsed = text ? JSON.parse(text) : null;
  } catch {
    parsed = null; // Not JSON (an HTML page): tests look at text instead.
  }
  return { status: response.status, headers: response.headers, body: parsed as T, text };
}
