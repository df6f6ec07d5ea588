/** POST /route on a real listener (the control host's address gate needs a client IP). */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Platform } from "../../core/platform.ts";
import { storeKind, testPlatform } from "../../../test/support/platform.ts";
import { createControlApp } from "../app.ts";
import { routeRoutes } from "./route.ts";
import { routeFixture } from "../../core/routing/decide.fixture.ts";
import type { Json } from "../../../test/support/http.ts";

let platform: Platform;
let server: { server: { port?: number } | null; stop(): Promise<unknown> | unknown };
let base: string;

beforeAll(async () => {
  platform = await testPlatform({ env: { CARRIER_ADDRESSES: "192.0.2.0/24", MEDIA_ENGINES: "sip:10.0.0.5:5080", CARRIER_URI: "sip:carrier.example.net" } });
  server = createControlApp(platform, [routeRoutes]).listen({ hostname: "127.0.0.1", port: 0 });
  base = `http://127.0.0.1:${server.server!.port}`;
});
afterAll(async () => {
  await server.stop();
  await platform.close();
});

const post = async (body: string, contentType: string) => {
  const r = await fetch(`${base}/route`, { method: "POST", headers: { "content-type": contentType }, body });
  return { status: r.status, body: (await r.json()) as Json };
};
const json = (body: unknown) => post(JSON.stringify(body), "application/json");

describe(`POST /route [${storeKind}]`, () => {
  test("JSON and form bodies get the same decision: rtjson for the media engine", async () => {
    const f = await routeFixture(platform);
    const flow = await f.flow();
    const did = await f.number({ dest_kind: "flow", dest_id: flow });
    const a = await json({ callId: `r-${Date.now()}-a`, from: "14155550000", fromDomain: "carrier", to: did.e164, source_ip: "192.0.2.1" });
    expect(a.status).toBe(200);
    expect(a.body).toEqual({
      rtjson: expect.objectContaining({ action: "flow", account_id: f.accountId, flow_id: flow, version: "1.0", routing: "serial" }),
    });
    expect(a.body.rtjson.routes[0]).toMatchObject({ uri: `sip:${did.e164}@10.0.0.5:5080`, dst_uri: "sip:10.0.0.5:5080" });
    expect(a.body.rtjson.routes[0].headers.extra).toBe(`X-Account-Id: ${f.accountId}\r\nX-Flow-Id: ${flow}\r\nX-Dest: flow:${flow}\r\nX-Call-Direction: inbound\r\nX-Number-Id: ${did.id}\r\n`);
    const form = new URLSearchParams({ callId: `r-${Date.now()}-b`, from: "14155550000", fromDomain: "carrier", to: `+${did.e164}`, source_ip: "192.0.2.1" });
    const b = await post(form.toString(), "application/x-www-form-urlencoded");
    expect(b.status).toBe(200);
    expect(b.body.rtjson).toMatchObject({ action: "flow", flow_id: flow });
  });

  test("a refusal is a 200 carrying a reject action with the SIP code", async () => {
    const r = await json({ callId: `r-${Date.now()}-c`, from: "x", fromDomain: "y", to: "14155550100", source_ip: "198.51.100.1" });
    expect(r.status).toBe(200);
    expect(r.body.rtjson).toMatchObject({ action: "reject", code: 407, reason: "Proxy Authentication Required", account_id: null });
  });

  test("malformed input is 400 validation_failed", async () => {
    for (const body of [{}, { callId: "", from: "", fromDomain: "", to: "1" }, { callId: "x", from: "", fromDomain: "", to: "1", source_country: "USA" }, { callId: 5, from: "", fromDomain: "", to: "1" }]) {
      const r = await json(body);
      expect(r.status, JSON.stringify(body)).toBe(400);
      expect(r.body).toMatchObject({ ok: false, error: "validation_failed" });
    }
    const bad = await post("{not json", "application/json");
    expect(bad.status).toBe(400);
  });
});
