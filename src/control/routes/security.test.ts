/** /security/* on the control host over a real listener (the CONTROL_ALLOW gate needs a client address). */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Platform } from "../../core/platform.ts";
import { createControlApp } from "../app.ts";
import { securityRoutes } from "./security.ts";
import { storeKind, testPlatform } from "../../../test/support/platform.ts";
import type { Json } from "../../../test/support/http.ts";

let platform: Platform;
let closed: Platform;
let server: ReturnType<ReturnType<typeof createControlApp>["listen"]>;
let gated: ReturnType<ReturnType<typeof createControlApp>["listen"]>;
let base: string;

beforeAll(async () => {
  platform = await testPlatform();
  closed = await testPlatform({ env: { CONTROL_ALLOW: "10.255.0.0/16" } });
  server = createControlApp(platform, [securityRoutes]).listen({ hostname: "127.0.0.1", port: 0 });
  gated = createControlApp(closed, [securityRoutes]).listen({ hostname: "127.0.0.1", port: 0 });
  base = `http://127.0.0.1:${server.server!.port}`;
});
afterAll(async () => {
  await server.stop();
  await gated.stop();
  await platform.close();
  await closed.close();
});

async function send(method: string, path: string, body?: unknown, form = false): Promise<{ status: number; body: Json }> {
  const init: RequestInit = { method };
  if (body !== undefined) {
    init.headers = { "content-type": form ? "application/x-www-form-urlencoded" : "application/json" };
    init.body = form ? new URLSearchParams(body as Record<string, string>).toString() : JSON.stringify(body);
  }
  const r = await fetch(`${base}${path}`, init);
  return { status: r.status, body: (await r.json()) as Json };
}

const net = `10.${Math.floor(Math.random() * 200) + 20}.${Math.floor(Math.random() * 256)}.`;
const node = `edge-${crypto.randomUUID().slice(0, 8)}`;

describe(`/security endpoints: happy [${storeKind}]`, () => {
  test("report, list, allow (lifts), report again (told to lift), remove from the allowlist", async () => {
    const report = await send("POST", "/security/report", { node, bans: [{ ip: `${net}5`, reason: "pike", hits: 12 }, { ip: `${net}6`, reason: "auth" }], ts: 1 });
    expect(report).toMatchObject({ status: 200, body: { ok: true, lift: [] } });

    const listed = await send("GET", `/security/bans?q=${net}&status=active&limit=10`);
    expect(listed.status).toBe(200);
    expect(listed.body.data.map((b: Json) => [b.ip, b.node, b.status, b.reason, b.hits]).sort()).toEqual([
      [`${net}5`, node, "active", "pike", 12],
      [`${net}6`, node, "active", "auth", 0],
    ]);
    expect((await send("GET", `/security/bans?q=${net}&limit=1`)).body.data).toHaveLength(1);

    const allow = await send("POST", "/security/allow", { address: `${net}5`, note: "our office" });
    expect(allow.status).toBe(201);
    expect(allow.body.data).toMatchObject({ entry: { address: `${net}5`, note: "our office" }, lifted: 1 });
    expect((await send("POST", "/security/allow", { address: `${net}5` })).status).toBe(200);
    expect((await send("GET", "/security/allow")).body.data).toContainEqual(expect.objectContaining({ address: `${net}5`, note: "our office" }));
    expect((await send("GET", `/security/bans?q=${net}5`)).body.data[0].status).toBe("lifted");

    // A form body: bans as JSON text.
    const again = await send("POST", "/security/report", { node, bans: JSON.stringify([{ ip: `${net}5` }, { ip: `${net}6` }]) }, true);
    // The reply carries the allowlist, each range with its prefix, for the edge (it bans none of them).
    expect(String(again.body.allow).split(",")).toContain(`${net}5/32`);
    expect(again).toMatchObject({ status: 200, body: { ok: true, lift: [`${net}5`] } });

    const cidr = await send("POST", "/security/allow", { address: `${net}0/24` }, true);
    expect(cidr.status).toBe(201);
    expect(cidr.body.data.lifted).toBe(1);
    expect((await send("DELETE", `/security/allow/${net}0/24`)).body).toEqual({ ok: true });
    expect((await send("DELETE", `/security/allow/${encodeURIComponent(`${net}5`)}`)).body).toEqual({ ok: true });
    expect((await send("GET", "/security/allow")).body.data.map((a: Json) => a.address)).not.toContain(`${net}5`);
  });
});

describe(`/security endpoints: errors [${storeKind}]`, () => {
  test("bad input is a 400 naming the field, and records nothing", async () => {
    const cases: Array<[string, string, unknown, string]> = [
      ["POST", "/security/report", { node, bans: [{ ip: "999.1.1.1" }] }, "/bans/0/ip"],
      ["POST", "/security/report", { bans: [] }, "/node"],
      ["POST", "/security/report", { node, bans: [{ ip: `${net}9`, hits: "x" }] }, "/bans/0/hits"],
      ["POST", "/security/report", { node, bans: [{ ip: `${net}9`, banned_at: 1e20 }] }, "/bans/0/banned_at"],
      ["POST", "/security/report", { node, bans: [{ ip: `${net}9`, expires_at: 253402300800 }] }, "/bans/0/expires_at"],
      ["POST", "/security/report", { node, bans: [], ts: 1e20 }, "/ts"],
      ["POST", "/security/report", { node, bans: [{ ip: `${net}9`, banned_at: 1_700_000_000, expires_at: 5 }] }, "/bans/0/expires_at"],
      ["POST", "/security/allow", { address: "10.0.0.0/99" }, "/address"],
      ["POST", "/security/allow", { address: "not an address" }, "/address"],
      // Host bits below the prefix: refused as in trunk ACLs, not widened to 10.0.0.0/8 in silence.
      ["POST", "/security/allow", { address: "10.0.0.1/8" }, "/address"],
      ["POST", "/security/allow", { address: `${net}1`, extra: 1 }, "/extra"],
      ["GET", "/security/bans?status=gone", undefined, "/query/status"],
      ["GET", "/security/bans?q=x'--", undefined, "/query/q"],
      ["GET", "/security/bans?limit=0", undefined, "/query/limit"],
    ];
    for (const [method, path, body, field] of cases) {
      const r = await send(method, path, body);
      expect(r.status, `${method} ${path}`).toBe(400);
      expect(r.body.details.map((d: Json) => d.path), `${method} ${path}`).toContain(field);
    }
    // The messages say what is wrong, as everywhere else (not TypeBox's "Expected union value").
    const negative = await send("POST", "/security/report", { node, bans: [{ ip: `${net}9`, expires_at: -5 }] });
    expect(negative.body.details).toEqual([{ path: "/bans/0/expires_at", message: "Expected integer to be greater or equal to 0" }]);
    const long = await send("POST", "/security/report", { node, bans: [{ ip: `${net}9`, reason: "x".repeat(65) }] });
    expect(long.body.details).toEqual([{ path: "/bans/0/reason", message: "Expected string length less or equal to 64" }]);
    expect((await send("GET", `/security/bans?q=${net}9`)).body.data).toEqual([]);
    const allowed = (await send("GET", "/security/allow")).body.data.map((a: Json) => a.address);
    for (const address of [`${net}1`, "10.0.0.0/8", "10.0.0.1/8", "10.0.0.0/99"]) expect(allowed).not.toContain(address);
    // Host bits below the prefix: refused as POST refuses them, never taken as the range they fall in.
    expect((await send("POST", "/security/allow", { address: "203.0.113.0/24" })).status).toBe(201);
    const hostBits = await send("DELETE", "/security/allow/203.0.113.1%2F24");
    expect(hostBits.status).toBe(400);
    expect((await send("GET", "/security/allow")).body.data.map((a: Json) => a.address)).toContain("203.0.113.0/24");
    expect((await send("DELETE", "/security/allow/203.0.113.0%2F24")).status).toBe(200);
    for (const bad of ["not-an-ip", "10.0.0.0%2F99", "%E0%A4%A"]) {
      const r = await send("DELETE", `/security/allow/${bad}`);
      expect(r.status, bad).toBe(400);
      expect(r.body.details.map((d: Json) => d.path), bad).toEqual(["/params/ip"]);
    }
    expect((await send("DELETE", `/security/allow/${net}77`)).status).toBe(404);
  });
});

describe(`/security endpoints: what a node's own text holds [${storeKind}]`, () => {
  test("bans as JSON text: an escaped NUL or lone surrogate inside is a 400 naming it (form and JSON), and records nothing", async () => {
    const cases: Array<[string, string]> = [
      [`[{"ip":"${net}40","reason":"a\\u0000b"}]`, "/bans/0/reason"],
      [`[{"ip":"${net}40","reason":"a\\ud800b"}]`, "/bans/0/reason"],
      [`[{"ip":"${net}40","reason":"ok"},{"ip":"${net}41","reason":"\\udfff"}]`, "/bans/1/reason"],
    ];
    for (const [bans, path] of cases) {
      for (const form of [true, false]) {
        const r = await send("POST", "/security/report", { node, bans }, form);
        expect(r.status, `${bans} form=${form}`).toBe(400);
        expect(r.body.details, `${bans} form=${form}`).toEqual([{ path, message: expect.stringContaining("NUL") }]);
      }
    }
    expect((await send("GET", `/security/bans?q=${net}4`)).body.data).toEqual([]);
  });

  test("an allow-listed address the node holds in two spellings is lifted in both; two spellings are one record", async () => {
    const four = `${net}50`;
    const first = await send("POST", "/security/report", { node, bans: [{ ip: four, hits: 1 }, { ip: `::ffff:${four}`, hits: 9 }] });
    expect(first).toMatchObject({ status: 200, body: { ok: true, lift: [] } });
    const listed = (await send("GET", `/security/bans?q=${four}`)).body.data;
    expect(listed.map((b: Json) => [b.ip, b.hits])).toEqual([[four, 9]]);

    expect((await send("POST", "/security/allow", { address: four })).status).toBe(201);
    const again = await send("POST", "/security/report", { node, bans: [{ ip: four }, { ip: `::ffff:${four}` }, { ip: `${net}51` }] });
    expect(again).toMatchObject({ status: 200, body: { ok: true, lift: [four, `::ffff:${four}`].sort() } });
    expect((await send("DELETE", `/security/allow/${four}`)).status).toBe(200);
  });

  test("an IPv4-mapped range on the allowlist is the IPv4 range it maps: one entry, lifting both spellings", async () => {
    const mapped = `::ffff:${net}0/120`;
    const added = await send("POST", "/security/allow", { address: mapped });
    expect(added.status).toBe(201);
    expect(added.body.data.entry.address).toBe(`${net}0/24`);
    expect((await send("POST", "/security/allow", { address: `${net}0/24` })).status).toBe(200);
    const report = await send("POST", "/security/report", { node, bans: [{ ip: `::ffff:${net}60` }, { ip: `${net}61` }] });
    expect(report).toMatchObject({ status: 200, body: { ok: true, lift: [`${net}61`, `::ffff:${net}60`].sort() } });
    expect((await send("POST", "/security/allow", { address: `::ffff:${net}0/95` })).status).toBe(400);
    expect((await send("DELETE", `/security/allow/${encodeURIComponent(mapped)}`)).status).toBe(200);
    expect((await send("GET", "/security/allow")).body.data.map((a: Json) => a.address)).not.toContain(`${net}0/24`);
  });

  test("an empty ts in a form is absent, as every optional field the edge sends", async () => {
    const r = await send("POST", "/security/report", { node: `${node}-ts`, bans: "[]", ts: "" }, true);
    expect(r).toMatchObject({ status: 200, body: { ok: true, lift: [] } });
  });

  test("partial in a form is decimal text; empty, it is absent", async () => {
    const n = `${node}-partial`;
    const [a, b] = [`${net}70`, `${net}71`];
    expect((await send("POST", "/security/report", { node: n, bans: JSON.stringify([{ ip: a }, { ip: b }]) }, true)).status).toBe(200);
    const partial = await send("POST", "/security/report", { node: n, bans: JSON.stringify([{ ip: a }]), partial: "1" }, true);
    expect(partial).toMatchObject({ status: 200, body: { ok: true, lift: [] } });
    expect((await send("GET", `/security/bans?q=${b}`)).body.data.map((x: Json) => x.status)).toEqual(["active"]);
    expect((await send("POST", "/security/report", { node: n, bans: JSON.stringify([{ ip: a }]), partial: "2" }, true)).status).toBe(400);
    // Absent: a complete snapshot, which no longer carries b.
    expect((await send("POST", "/security/report", { node: n, bans: JSON.stringify([{ ip: a }]), partial: "" }, true)).status).toBe(200);
    expect((await send("GET", `/security/bans?q=${b}`)).body.data.map((x: Json) => x.status)).toEqual(["expired"]);
  });

  test("bans as JSON text: a member given twice in a ban is the 400 a JSON body gets, and records nothing", async () => {
    const bans = `[{"ip":"${net}80","ip":"${net}81"}]`;
    const asJson = await fetch(`${base}/security/report`, { method: "POST", headers: { "content-type": "application/json" }, body: `{"node":"${node}","bans":${bans}}` });
    const json = { status: asJson.status, body: (await asJson.json()) as Json };
    expect(json).toMatchObject({ status: 400, body: { details: [{ path: "/bans/0/ip", message: expect.stringContaining("more than once") }] } });
    expect(await send("POST", "/security/report", { node, bans }, true)).toEqual(json);
    expect((await send("GET", `/security/bans?q=${net}8`)).body.data).toEqual([]);
  });
});

describe(`/security endpoints: security [${storeKind}]`, () => {
  test("an address outside CONTROL_ALLOW gets 403 on every endpoint", async () => {
    const url = `http://127.0.0.1:${gated.server!.port}`;
    for (const [method, path] of [["POST", "/security/report"], ["GET", "/security/bans"], ["GET", "/security/allow"], ["POST", "/security/allow"], ["DELETE", "/security/allow/10.0.0.1"]]) {
      const r = await fetch(`${url}${path}`, { method, headers: { "content-type": "application/json" }, body: method === "GET" ? undefined : JSON.stringify({ node, address: "10.0.0.1", bans: [] }) });
      expect(r.status, `${method} ${path}`).toBe(403);
    }
    expect((await send("GET", "/security/allow")).body.data.map((a: Json) => a.address)).not.toContain("10.0.0.1");
  });
});
