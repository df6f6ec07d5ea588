/** A small client for the public API, used by the console and the wallboard. Credentials are headers only. */

export interface ApiError {
  ok: false;
  error: string;
  message: string;
  need?: string;
  details?: Array<{ path: string; message: string }>;
}

export interface Endpoints {
  publicUrl: string;
  consoleUrl: string;
  realtimeUrl: string;
}

export async function loadEndpoints(): Promise<Endpoints> {
  const res = await fetch("/config.json");
  return (await res.json()) as Endpoints;
}

/** Throws the API's error body (with its message) for any non-2xx reply. */
export async function call<T>(url: string, init: RequestInit & { token?: string } = {}): Promise<T> {
  const headers = new Headers(init.headers);
  if (init.token) headers.set("authorization", `Bearer ${init.token}`);
  if (init.body) headers.set("content-type", "application/json");
  const res = await fetch(url, { ...init, headers });
  const body = (await res.json().catch(() => ({ ok: false, error: "internal", message: `HTTP ${res.status}` }))) as T | ApiError;
  if (!res.ok) throw body as ApiError;
  return body as T;
}

export function errorText(error: unknown): string {
  if (error && typeof error === "object" && "message" in error) {
    const e = error as ApiError;
    const details = e.details?.map((d) => `${d.path || "body"}: ${d.message}`).join("; ");
    return details ? `${e.message} (${details})` : e.message;
  }
  return String(error);
}
