/**
 * The SIP bench's HTTP floor: a control plane that does no work. It stands where Parley does for a third
 * Kamailio (the same kamailio.cfg, the same async workers and keep-alive connections), so that the bench
 * can show what the edge and one HTTP hop cost on this machine before any routing, database or live
 * store: no control plane, however fast, answers the edge faster than this.
 *
 * POST /route is answered from memory: the first request for each (credentials or not, dialled user)
 * goes to Parley (STUB_UPSTREAM) and its reply is kept and replayed for every later call to that user
 * (the bench's caller i always calls callee i, so the replayed digest result names the right caller).
 * Only the body is parsed, as any hook must. POST /presence/events (dialog events) is answered 200 and
 * dropped: no call record. Everything else (/auth, registrations, security reports) goes to Parley.
 *
 *   STUB_UPSTREAM=http://127.0.0.1:8083 PORT=0 bun bench/sip/stub-control.ts
 *
 * Prints `listening on http://HOST:PORT` once it accepts connections.
 */

const upstream = process.env.STUB_UPSTREAM;
if (!upstream) throw new Error("STUB_UPSTREAM (Parley's control URL) is required");

const JSON_TYPE = { "content-type": "application/json" };
const EVENTS_TAKEN = JSON.stringify({ ok: true });
/** `${1 if credentials}:${dialled}` → Parley's reply text. */
const routes = new Map<string, string>();

async function forward(path: string, body: string, contentType: string): Promise<Response> {
  const reply = await fetch(`${upstream}${path}`, { method: "POST", body, headers: { "content-type": contentType } });
  return new Response(await reply.text(), { status: reply.status, headers: JSON_TYPE });
}

const server = Bun.serve({
  hostname: "127.0.0.1",
  port: Number(process.env.PORT ?? 0),
  async fetch(request) {
    const path = new URL(request.url).pathname;
    const body = await request.text();
    if (path === "/presence/events") return new Response(EVENTS_TAKEN, { headers: JSON_TYPE });
    if (path !== "/route") return forward(path, body, request.headers.get("content-type") ?? "application/json");
    const req = JSON.parse(body) as { to?: string; auth?: unknown };
    const key = `${req.auth ? 1 : 0}:${req.to ?? ""}`;
    const kept = routes.get(key);
    if (kept) return new Response(kept, { headers: JSON_TYPE });
    const reply = await forward(path, body, "application/json");
    const text = await reply.text();
    // A refusal of a call with credentials (CAC, mostly) is not what that user's next call gets.
    if (reply.status === 200 && (!req.auth || (JSON.parse(text) as { rtjson?: { action?: string } }).rtjson?.action !== "reject")) routes.set(key, text);
    return new Response(text, { status: reply.status, headers: JSON_TYPE });
  },
});

process.stdout.write(`listening on http://${server.hostname}:${server.port}\n`);

export {}; // a module: its names are its own
