/** What every host shares: probes, request ids, error mapping, CORS, body limits, logs without secrets. */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { Elysia } from "elysia";
import type { Platform } from "../core/platform.ts";
import { hostBase } from "./host-base.ts";
import { createPublicApp } from "../public/app.ts";
import { createConsoleApp } from "../console/app.ts";
import { createRealtimeApp } from "../realtime/app.ts";
import { createControlApp } from "../control/app.ts";
import { seedConsoleUser, seedTenant, storeKind, TEST_ADMIN_TOKEN, testPlatform } from "../../test/support/platform.ts";
import { call } from "../../test/support/http.ts";
import { listenControl } from "../control/routes/control-listener.fixture.ts";
import { edgeAuthRoutes } from "../control/routes/edge-auth.ts";
import { routeRoutes } from "../control/routes/route.ts";

let platform: Platform;
const lines: string[] = [];

beforeAll(async () => {
  platform = await testPlatform({ logLines: lines, logLevel: "info", env: { CORS_ORIGINS: "https://console.example" } });
});
afterAll(() => platform.close());

describe(`host base [${storeKind}]`, () => {
  test("/healthz and /readyz answer on every host", async () => {
    for (const app of [createPublicApp(platform), createConsoleApp(platform), createRealtimeApp(platform), createControlApp(platform)]) {
      expect((await call(app, "GET", "/healthz")).body).toEqual({ ok: true });
      expect((await call(app, "GET", "/readyz")).body).toEqual({ ok: true });
    }
  });

  test("/readyz is 503 when a store is down", async () => {
    const broken = { ...platform, database: { ...platform.database, ping: async () => Promise.reject(new Error("connection refused")) } };
    const r = await call(createPublicApp(broken), "GET", "/readyz");
    expect(r.status).toBe(503);
    expect(r.body.ok).toBe(false);
  });

  test("every reply carries a request id; a sane client id is echoed", async () => {
    const app = createPublicApp(platform);
    const r = await call(app, "GET", "/v1");
    expect(r.headers.get("x-request-id")).toMatch(/^[0-9a-f]{12}-[0-9a-z]+$/);
    expect((await call(app, "GET", "/v1")).headers.get("x-request-id")).not.toBe(r.headers.get("x-request-id"));
    expect((await call(app, "GET", "/v1", { headers: { "x-request-id": "trace-123" } })).headers.get("x-request-id")).toBe("trace-123");
    expect((await call(app, "GET", "/v1", { headers: { "x-request-id": "bad id with spaces" } })).headers.get("x-request-id")).not.toBe("bad id with spaces");
  });

  test("JSON replies, errors included, say their charset on every host", async () => {
    for (const app of [createPublicApp(platform), createConsoleApp(platform), createRealtimeApp(platform), createControlApp(platform)]) {
      expect((await call(app, "GET", "/healthz")).headers.get("content-type")).toBe("application/json;charset=utf-8");
      const missing = await call(app, "GET", "/no-such-path");
      expect(missing.status).toBe(404);
      expect(missing.headers.get("content-type")).toBe("application/json;charset=utf-8");
    }
    const refused = await call(createPublicApp(platform), "GET", "/v1/whoami");
    expect(refused.status).toBe(401);
    expect(refused.headers.get("content-type")).toBe("application/json;charset=utf-8");
  });

  test("an unexpected error is a 500 internal with no stack, no SQL and no message leak", async () => {
    const app = new Elysia().use(hostBase(platform, { host: "public", cors: false, accept: ["json"] })).get("/boom", () => {
      throw new Error('Failed query: select secret from x where password = $1\nparams: hunter2');
    });
    const r = await call(app, "GET", "/boom");
    expect(r.status).toBe(500);
    expect(r.body).toEqual({ ok: false, error: "internal", message: expect.any(String) });
    expect(r.text).not.toContain("select");
    expect(r.text).not.toContain("hunter2");
    expect(lines.join("\n")).not.toContain("hunter2");
    expect(lines.join("\n")).not.toContain("select secret");
  });

  test("a body that does not parse is a 400 naming only the formats the host takes", async () => {
    const json = new Elysia().use(hostBase(platform, { host: "public", cors: false, accept: ["json"] })).post("/echo", ({ body }) => ({ ok: true, body }));
    const both = new Elysia().use(hostBase(platform, { host: "control", cors: false, accept: ["json", "form"] })).post("/echo", ({ body }) => ({ ok: true, body }));
    const send = (app: typeof json) => app.handle(new Request("http://localhost/echo", { method: "POST", headers: { "content-type": "application/json" }, body: "{" }));
    const onJson = await send(json);
    expect(onJson.status).toBe(400);
    expect((await onJson.json()).details).toEqual([{ path: "", message: "Body is not valid JSON." }]);
    const onBoth = await send(both);
    expect(onBoth.status).toBe(400);
    expect((await onBoth.json()).details).toEqual([{ path: "", message: "Body is not valid JSON or form data." }]);
  });

  test("a JSON body over 1 MiB is a 413", async () => {
    const t = await seedTenant(platform);
    const big = JSON.stringify({ label: "x".repeat(1024 * 1024 + 10) });
    const r = await call(createPublicApp(platform), "POST", "/v1/keys", { key: t.key, body: big, headers: { "content-length": String(big.length) } });
    expect(r.status).toBe(413);
    expect(r.body.error).toBe("payload_too_large");
  });

  test("a chunked JSON body (no content-length) is held to the same rules: strict UTF-8, 1 MiB, parsed", async () => {
    const t = await seedTenant(platform);
    const server = createPublicApp(platform).listen({ hostname: "127.0.0.1", port: 0 });
    const chunked = (...parts: Array<string | Uint8Array>) =>
      new ReadableStream<Uint8Array>({
        start(controller) {
          for (const part of parts) controller.enqueue(typeof part === "string" ? new TextEncoder().encode(part) : part);
          controller.close();
        },
      });
    const post = (body: ReadableStream<Uint8Array>) =>
      fetch(`http://127.0.0.1:${server.server!.port}/v1/keys`, { method: "POST", headers: { "x-api-key": t.key, "content-type": "application/json" }, body });
    try {
      const before = (await call(server, "GET", "/v1/keys", { key: t.key })).body.data.length;
      const ok = await post(chunked('{"label":', '"chunked"}'));
      expect(ok.status).toBe(201);
      expect(ok.headers.get("content-length")).not.toBeNull(); // the reply is ours, not a stream
      expect(((await ok.json()) as { data: { label: string } }).data.label).toBe("chunked");
      const raw = await post(chunked('{"label":"caf', new Uint8Array([0xc3, 0xa9, 0xff]), '"}'));
      expect(raw.status).toBe(400);
      expect(((await raw.json()) as { details: unknown }).details).toEqual([{ path: "", message: expect.stringContaining("UTF-8") }]);
      const huge = await post(chunked('{"label":"', "x".repeat(600 * 1024), "x".repeat(600 * 1024), '"}'));
      expect(huge.status).toBe(413);
      expect(((await huge.json()) as { error: string }).error).toBe("payload_too_large");
      const broken = await post(chunked('{"label":'));
      expect(broken.status).toBe(400);
      // Forms, where a host takes them (the edge's), too.
      const control = listenControl(platform, [edgeAuthRoutes]);
      try {
        const form = await fetch(`${control.base}/auth`, {
          method: "POST",
          headers: { "content-type": "application/x-www-form-urlencoded" },
          body: chunked("username=", "x".repeat(700 * 1024), "&realm=", "y".repeat(700 * 1024)),
        });
        expect(form.status).toBe(413);
      } finally {
        await control.stop();
      }
      expect((await call(server, "GET", "/v1/keys", { key: t.key })).body.data.length).toBe(before + 1);
    } finally {
      await server.stop();
    }
  });

  test("a NUL character in the URL or anywhere in a body is a 400 naming where, and changes nothing", async () => {
    const t = await seedTenant(platform);
    const app = createPublicApp(platform);
    const query = await call(app, "GET", "/v1/calls?format=csv&user_id=a%00b", { key: t.key });
    expect(query.status).toBe(400);
    expect(query.body.details).toEqual([{ path: "/query/user_id", message: expect.stringContaining("NUL") }]);
    expect((await call(app, "GET", "/v1/calls?number_id=%00", { key: t.key })).status).toBe(400);
    const inPath = await call(app, "GET", "/v1/calls/call_%00", { key: t.key });
    expect(inPath.status).toBe(400);
    expect(inPath.body.details[0].path).toBe("/path");
    const keysBefore = (await call(app, "GET", "/v1/keys", { key: t.key })).body.data.length;
    const body = await call(app, "POST", "/v1/keys", { key: t.key, body: { label: "ok", scopes: ["cdr"], meta: [{ note: "x\u0000y" }] } });
    expect(body.status).toBe(400);
    expect(body.body.details).toEqual([{ path: "/meta/0/note", message: expect.stringContaining("NUL") }]);
    const key = await call(app, "POST", "/v1/keys", { key: t.key, body: { label: "a\u0000" } });
    expect(key.body.details[0].path).toBe("/label");
    expect((await call(app, "GET", "/v1/keys", { key: t.key })).body.data.length).toBe(keysBefore);
    // Form bodies (the edge's, on the control host) too.
    const control = listenControl(platform, [edgeAuthRoutes]);
    try {
      const form = await control.post("/auth", { username: "1001\u0000", realm: "r", nonce: "n", uri: "sip:x", response: "0".repeat(32), method: "REGISTER" }, "form");
      expect(form.status).toBe(400);
      expect((form.body as { details: Array<{ path: string }> }).details[0]!.path).toBe("/username");
    } finally {
      await control.stop();
    }
  });

  test("a query parameter a route does not take, or one given twice, is a 400 naming it, on every host and method, after the credential, changing nothing", async () => {
    const t = await seedTenant(platform);
    const app = createPublicApp(platform);
    const expectRefused = (r: { status: number; body: any }, name: string) => {
      expect(r.status, JSON.stringify(r.body)).toBe(400);
      expect(r.body.details).toEqual([{ path: `/query/${name}`, message: "This field cannot be set here." }]);
    };
    const before = (await call(app, "GET", "/v1/keys", { key: t.key })).body.data.length;
    expectRefused(await call(app, "POST", "/v1/keys?label=ignored&x=1", { key: t.key, body: { label: "k", scopes: ["cdr"] } }), "label");
    expectRefused(await call(app, "POST", "/v1/keys?dry_run=1", { key: t.key, headers: { "idempotency-key": "q-1" }, body: { label: "k", scopes: ["cdr"] } }), "dry_run");
    expect((await call(app, "GET", "/v1/keys", { key: t.key })).body.data.length).toBe(before);
    const user = await call(app, "POST", "/v1/users", { key: t.key, body: { username: `q${Date.now()}`, display_name: "Q" } });
    expect(user.status).toBe(201);
    const id = user.body.data.id;
    expectRefused(await call(app, "PATCH", `/v1/users/${id}?force=1`, { key: t.key, body: { display_name: "R" } }), "force");
    expectRefused(await call(app, "DELETE", `/v1/users/${id}?cascade=1`, { key: t.key }), "cascade");
    expectRefused(await call(app, "GET", `/v1/users/${id}?expand=devices`, { key: t.key }), "expand");
    const still = await call(app, "GET", `/v1/users/${id}`, { key: t.key });
    expect(still.body.data.display_name).toBe("Q");
    // A bare "?" or "?&" sets nothing; a route that takes a query still names its own refusals.
    expect((await call(app, "GET", `/v1/users/${id}?`, { key: t.key })).status).toBe(200);
    expect((await call(app, "GET", `/v1/users/${id}?&`, { key: t.key })).status).toBe(200);
    expect((await call(app, "GET", "/v1/users?limit=1", { key: t.key })).status).toBe(200);
    expectRefused(await call(app, "GET", "/v1/users?limit=1&nope=1", { key: t.key }), "nope");
    // A name given twice is refused where a route takes it: which value counts would be a guess.
    const twice = await call(app, "GET", "/v1/users?limit=2&limit=3", { key: t.key });
    expect(twice.status).toBe(400);
    expect(twice.body.details).toEqual([{ path: "/query/limit", message: "Given more than once; send one value." }]);
    // Without a valid credential the answer is 401, whatever the URL says.
    expect((await call(app, "POST", "/v1/keys?x=1", { body: { label: "k" } })).status).toBe(401);
    // The other hosts: the console's login, the edge's /route, the realtime host's probes.
    expectRefused(await call(createConsoleApp(platform), "POST", "/login?next=/x", { body: { email: "a@example.test", password: "p" } }), "next");
    expectRefused(await call(createRealtimeApp(platform), "GET", "/healthz?x=1"), "x");
    const control = listenControl(platform, [edgeAuthRoutes]);
    try {
      const digest = { username: "1001", realm: "r", nonce: "n", uri: "sip:x", response: "0".repeat(32), method: "REGISTER" };
      const r = await fetch(`${control.base}/auth?trace=1`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(digest) });
      expectRefused({ status: r.status, body: await r.json() }, "trace");
    } finally {
      await control.stop();
    }
    // The WebSocket path keeps its own rules: a plain GET is still told it is a WebSocket endpoint.
    const plain = await call(createRealtimeApp(platform), "GET", "/v1/events/stream?ticket=x");
    expect(plain.body.details).toEqual([{ path: "/headers/upgrade", message: expect.stringContaining("WebSocket") }]);
  });

  test("a JSON member or form field given twice is a 400 naming it, on the API and at the edge, and changes nothing", async () => {
    const t = await seedTenant(platform);
    const app = createPublicApp(platform);
    const before = (await call(app, "GET", "/v1/keys", { key: t.key })).body.data.length;
    // JSON.parse alone keeps the last: the key would have been made with the "cdr" scope only.
    const twice = await call(app, "POST", "/v1/keys", { key: t.key, body: '{"label":"k","scopes":["*"],"scopes":["cdr"]}' });
    expect(twice.status).toBe(400);
    expect(twice.body).toMatchObject({ ok: false, error: "validation_failed", details: [{ path: "/scopes", message: "Given more than once; send one value." }] });
    const nested = await call(app, "POST", "/v1/keys", { key: t.key, body: '{"label":"k","meta":[{"note":"a","note":"b"}]}' });
    expect(nested.body.details).toEqual([{ path: "/meta/0/note", message: "Given more than once; send one value." }]);
    expect((await call(app, "GET", "/v1/keys", { key: t.key })).body.data.length).toBe(before);
    expect((await call(app, "POST", "/v1/keys", { key: t.key, body: '{"label":"k2","scopes":["cdr"]}' })).status).toBe(201);
    const control = listenControl(platform, [routeRoutes]);
    try {
      const r = await fetch(`${control.base}/route`, { method: "POST", headers: { "content-type": "application/json" }, body: '{"callId":"c1","from":"1001","to":"1002","to":"+14155550123","source_ip":"127.0.0.1"}' });
      expect(r.status).toBe(400);
      expect(((await r.json()) as { details: unknown }).details).toEqual([{ path: "/to", message: "Given more than once; send one value." }]);
      // A form field given twice, the same.
      const form = await fetch(`${control.base}/route`, { method: "POST", headers: { "content-type": "application/x-www-form-urlencoded" }, body: "callId=c2&from=1001&to=1002&to=1003&source_ip=127.0.0.1" });
      expect(form.status).toBe(400);
      expect(((await form.json()) as { details: unknown }).details).toEqual([{ path: "/to", message: "Given more than once; send one value." }]);
    } finally {
      await control.stop();
    }
  });

  test("a body nested deeper than 64 levels is a 400 naming where, on the API (before the credential is even needed) and at the edge, changing nothing", async () => {
    const t = await seedTenant(platform);
    const app = createPublicApp(platform);
    const before = (await call(app, "GET", "/v1/keys", { key: t.key })).body.data.length;
    const deep = (depth: number) => `{"label":"k","meta":${"[".repeat(depth)}${"]".repeat(depth)}}`;
    for (const body of [deep(64), deep(100_000)]) {
      for (const key of [t.key, undefined]) {
        const r = await call(app, "POST", "/v1/keys", { key, body });
        expect(r.status).toBe(400);
        expect(r.body).toMatchObject({ ok: false, error: "validation_failed", details: [{ path: `/meta${"/0".repeat(63)}`, message: expect.stringContaining("64") }] });
      }
    }
    expect((await call(app, "GET", "/v1/keys", { key: t.key })).body.data.length).toBe(before);
    const control = listenControl(platform, [edgeAuthRoutes, routeRoutes]);
    try {
      for (const path of ["/auth", "/route"]) {
        const r = await fetch(`${control.base}${path}`, { method: "POST", headers: { "content-type": "application/json" }, body: `{"x":${"[".repeat(20_000)}${"]".repeat(20_000)}}` });
        expect(r.status, path).toBe(400);
        expect(((await r.json()) as { error: string }).error).toBe("validation_failed");
      }
    } finally {
      await control.stop();
    }
  });

  test("a lone UTF-16 surrogate in a body (not Unicode text) is a 400 naming where, on the API and at the edge", async () => {
    const t = await seedTenant(platform);
    const app = createPublicApp(platform);
    const keysBefore = (await call(app, "GET", "/v1/keys", { key: t.key })).body.data.length;
    for (const label of ["a\ud800", "\udfffb"]) {
      const r = await call(app, "POST", "/v1/keys", { key: t.key, body: { label } });
      expect(r.status).toBe(400);
      expect(r.body.details).toEqual([{ path: "/label", message: expect.stringContaining("surrogate") }]);
    }
    expect((await call(app, "GET", "/v1/keys", { key: t.key })).body.data.length).toBe(keysBefore);
    // A pair is a character like any other.
    expect((await call(app, "POST", "/v1/keys", { key: t.key, body: { label: "emoji \ud83d\ude00" } })).status).toBe(201);
    const control = listenControl(platform, [routeRoutes]);
    try {
      const r = await control.post("/route", { callId: "lone-surrogate", from: "a\ud800", fromDomain: "x", to: "1002", source_ip: "192.0.2.1" });
      expect(r.status).toBe(400);
      expect((r.body as { details: Array<{ path: string }> }).details[0]!.path).toBe("/from");
    } finally {
      await control.stop();
    }
  });

  test("bytes that are not UTF-8 (raw, or behind a form's %XX escape) are a 400, never stored changed", async () => {
    const t = await seedTenant(platform);
    const app = createPublicApp(platform);
    // A raw 0xFF in a JSON body: request.text() would have made it U+FFFD (a webhook URL was stored so).
    const raw = new Uint8Array([...new TextEncoder().encode('{"url":"https://1.1.1.1/caf'), 0xff, ...new TextEncoder().encode('"}')]);
    const json = await app.handle(
      new Request("http://localhost/v1/webhooks", { method: "POST", headers: { "x-api-key": t.key, "content-type": "application/json", "content-length": String(raw.length) }, body: raw }),
    );
    expect(json.status).toBe(400);
    expect(((await json.json()) as { details: unknown }).details).toEqual([{ path: "", message: expect.stringContaining("not UTF-8") }]);
    expect((await call(app, "GET", "/v1/webhooks", { key: t.key })).body.data).toEqual([]);
    // Forms at the edge: an escape that does not decode to UTF-8 names its field (it was kept as "%FF" text).
    const control = listenControl(platform, [routeRoutes, edgeAuthRoutes]);
    const form = (path: string, text: string) => fetch(control.base + path, { method: "POST", headers: { "content-type": "application/x-www-form-urlencoded" }, body: text });
    try {
      for (const [path, text, field] of [
        ["/route", "callId=form-pct&from=caf%C3%A9%FF&fromDomain=x&to=1002&source_ip=192.0.2.1", "/from"],
        ["/route", "callId=form-pct2&from=a%ZZb&fromDomain=x&to=1002&source_ip=192.0.2.1", "/from"],
        ["/route", "callId=form-pct3&from=%ED%A0%80&fromDomain=x&to=1002&source_ip=192.0.2.1", "/from"],
        ["/auth", `username=%FF&realm=x&nonce=n&uri=sip:x&response=${"0".repeat(32)}&method=REGISTER`, "/username"],
      ] as const) {
        const r = await form(path, text);
        expect(r.status, text).toBe(400);
        expect(((await r.json()) as { details: unknown }).details, text).toEqual([{ path: field, message: expect.stringContaining("not UTF-8") }]);
      }
      // Well-formed forms still read as before: + and %20 are spaces, UTF-8 escapes decode.
      const ok = await form("/route", "callId=form-ok&from=caf%C3%A9+au+lait&fromDomain=x&to=1002&source_ip=192.0.2.1");
      expect(ok.status).toBe(200);
      expect(((await ok.json()) as { rtjson: { vars: { from: string } } }).rtjson.vars.from).toBe("café au lait");
    } finally {
      await control.stop();
    }
  });

  test("CORS: allowed origins get the headers, others do not; preflight lists our headers", async () => {
    const app = createPublicApp(platform);
    const pre = await call(app, "OPTIONS", "/v1/keys", {
      headers: { origin: "https://console.example", "access-control-request-method": "POST", "access-control-request-headers": "x-api-key, idempotency-key" },
    });
    expect(pre.status).toBe(204);
    expect(pre.headers.get("access-control-allow-origin")).toBe("https://console.example");
    const allowed = (pre.headers.get("access-control-allow-headers") ?? "").toLowerCase();
    for (const h of ["x-api-key", "authorization", "idempotency-key", "content-type"]) expect(allowed).toContain(h);
    expect(pre.headers.get("access-control-allow-credentials")).toBeNull();
    const t = await seedTenant(platform);
    const r = await call(app, "GET", "/v1/whoami", { key: t.key, headers: { origin: "https://console.example" } });
    expect(r.headers.get("access-control-allow-origin")).toBe("https://console.example");
    expect(r.headers.get("access-control-expose-headers")).toContain("ratelimit-remaining");
    const foreign = await call(app, "GET", "/v1/whoami", { key: t.key, headers: { origin: "https://evil.example" } });
    expect(foreign.headers.get("access-control-allow-origin")).toBeNull();
    // The control plane is not for browsers.
    const ctl = await call(createControlApp(platform), "OPTIONS", "/admin/accounts", { headers: { origin: "https://console.example", "access-control-request-method": "POST" } });
    expect(ctl.headers.get("access-control-allow-origin")).toBeNull();
  });

  test("logs have one line per request and never a key, token, password or admin token", async () => {
    await Bun.sleep(50); // access lines are written after the response is sent
    lines.length = 0;
    const t = await seedTenant(platform);
    const user = await seedConsoleUser(platform, t.accountId);
    const consoleApp = createConsoleApp(platform);
    const session = await call(consoleApp, "POST", "/login", { body: user });
    await call(consoleApp, "POST", "/login", { body: { email: user.email, password: "wrong password here" } });
    const pub = createPublicApp(platform);
    await call(pub, "GET", "/v1/whoami", { key: t.key });
    await call(pub, "GET", "/v1/whoami", { token: session.body.token });
    const minted = await call(pub, "POST", "/v1/keys", { key: t.key, body: { label: "x" } });
    await call(createControlApp(platform), "POST", "/admin/accounts", { headers: { "x-admin-token": TEST_ADMIN_TOKEN }, body: { name: "Logged" } });
    await Bun.sleep(50);
    const all = lines.join("\n");
    for (const secret of [t.key, session.body.token, user.password, "wrong password here", minted.body.data.secret, TEST_ADMIN_TOKEN]) {
      expect(all).not.toContain(secret);
    }
    const requests = lines.map((l) => JSON.parse(l)).filter((l) => l.msg === "request");
    expect(requests.length).toBe(6);
    for (const l of requests) {
      expect(l).toEqual(expect.objectContaining({ level: "info", request_id: expect.any(String), method: expect.any(String), path: expect.any(String), status: expect.any(Number) }));
    }
    expect(requests.find((l) => l.path === "/v1/whoami")?.account_id).toBe(t.accountId);
    expect(requests.filter((l) => l.path === "/login").map((l) => l.status).sort()).toEqual([200, 401]);
  });

  test("a request's log line carries the status the client got, refusals included", async () => {
    await Bun.sleep(50);
    lines.length = 0;
    const t = await seedTenant(platform);
    const pub = createPublicApp(platform);
    const sent = [
      await call(pub, "POST", "/v1/keys", { key: t.key, body: { label: 5 } }), // validation: 400 (Elysia's own code is 422)
      await call(pub, "POST", "/v1/keys", { key: t.key, body: "label=x", headers: { "content-type": "text/plain" } }), // 415
      await call(pub, "GET", "/v1/whoami", { key: "sk_not_a_key" }), // 401
      await call(pub, "GET", "/v1/no-such-thing", { key: t.key }), // 404
      await call(pub, "POST", "/v1/keys", { key: t.key, body: { label: "ok" } }), // 201
    ].map((r) => r.status);
    expect(sent).toEqual([400, 415, 401, 404, 201]);
    await Bun.sleep(50);
    // A refusal before routing is logged at once, the others after their response: compare as sets.
    const logged = lines.map((l) => JSON.parse(l)).filter((l) => l.msg === "request").map((l) => l.status);
    expect(logged.sort()).toEqual([...sent].sort());
    // A WebSocket upgrade is logged as the 101 it was (a refused ticket is a close code after it).
    lines.length = 0;
    const realtime = createRealtimeApp(platform).listen({ hostname: "127.0.0.1", port: 0 });
    try {
      const socket = new WebSocket(`ws://127.0.0.1:${realtime.server!.port}/v1/events/stream?ticket=nope`);
      const code = await new Promise<number>((resolve) => socket.addEventListener("close", (e) => resolve(e.code)));
      expect(code).toBe(4401);
      await Bun.sleep(50);
      const upgrade = lines.map((l) => JSON.parse(l)).filter((l) => l.msg === "request" && l.path === "/v1/events/stream");
      expect(upgrade.map((l) => l.status)).toEqual([101]);
    } finally {
      await realtime.stop();
    }
  });
});

describe("raw-body routes", () => {
  test("a raw route takes its own types and limit; JSON routes stay JSON-only", async () => {
    const p = await testPlatform();
    const app = new Elysia()
      .use(hostBase(p, { host: "public", cors: false, accept: ["json"], rawBodyRoutes: [{ method: "POST", path: /^\/up$/, contentTypes: ["audio/wav"], maxBytes: 10 }] }))
      .post("/up", async ({ request }) => ({ ok: true as const, size: (await request.arrayBuffer()).byteLength }), { parse: "none" })
      .post("/json", ({ body }) => ({ ok: true as const, body }), { parse: "json" });
    const bytes = new Uint8Array([1, 2, 3, 4]);
    const ok = await app.handle(new Request("http://localhost/up", { method: "POST", headers: { "content-type": "audio/wav", "content-length": "4" }, body: bytes }));
    expect(await ok.json()).toEqual({ ok: true, size: 4 });
    const big = await app.handle(new Request("http://localhost/up", { method: "POST", headers: { "content-type": "audio/wav", "content-length": "11" }, body: new Uint8Array(11) }));
    expect(big.status).toBe(413);
    const wrongType = await app.handle(new Request("http://localhost/up", { method: "POST", headers: { "content-type": "text/plain", "content-length": "4" }, body: bytes }));
    expect(wrongType.status).toBe(415);
    const jsonRouteRaw = await app.handle(new Request("http://localhost/json", { method: "POST", headers: { "content-type": "audio/wav", "content-length": "4" }, body: bytes }));
    expect(jsonRouteRaw.status).toBe(415);
    await p.close();
  });
});
