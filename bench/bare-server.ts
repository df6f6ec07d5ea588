/**
 * The benchmark's baseline: a bare Bun.serve that answers GET /v1/whoami with a fixed body of the
 * same shape and size as Parley's. It measures what this machine, Bun and wrk can do at all, so
 * that Parley's number can be read as a fraction of it. Started by bench/run.ts.
 *
 *   PORT=9000 bun bench/bare-server.ts
 *
 * Prints `listening on http://HOST:PORT` once it accepts connections.
 */

// A ULID-length id, like the accounts Parley creates, so that both replies are the same size.
const BODY = JSON.stringify({ accountId: "acc_01JBENCH0BARE0BASE0L1NE000", scopes: ["*"], via: "key" });
const UNAUTHORIZED = JSON.stringify({ ok: false, error: "unauthorized", message: "Send an API key." });

const server = Bun.serve({
  hostname: process.env.HOST ?? "127.0.0.1",
  port: Number(process.env.PORT ?? 0),
  routes: {
    "/v1/whoami": {
      // Reading the header keeps the baseline honest: Parley must at least look at it too.
      GET: (request) =>
        request.headers.get("x-api-key")
          ? new Response(BODY, { headers: { "content-type": "application/json" } })
          : new Response(UNAUTHORIZED, { status: 401, headers: { "content-type": "application/json" } }),
    },
  },
  fetch: () => new Response("not found", { status: 404 }),
});

process.stdout.write(`listening on http://${server.hostname}:${server.port}\n`);

for (const signal of ["SIGTERM", "SIGINT"] as const) {
  process.on(signal, () => {
    void server.stop(true).then(() => process.exit(0));
  });
}
