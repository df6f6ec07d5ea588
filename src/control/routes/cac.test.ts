/** Control host: GET /cac, POST /cac/reset, GET /calls/{callId}/trace over a real listener (the address gate needs a peer). */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Platform } from "../../core/platform.ts";
import { createControlApp } from "../app.ts";
import { cacRoutes } from "./cac.ts";
import { seedTenant, storeKind, testPlatform } from "../../../test/support/platform.ts";
import type { Json } from "../../../test/support/http.ts";
import { admitCall } from "../../core/calls/admission.ts";
import { decision, routeRequest, sipCallId } from "../../core/calls/calls.fixture.ts";

let platform: Platform;
let server: ReturnType<ReturnType<typeof createControlApp>["listen"]>;
let base: string;

beforeAll(async () => {
  platform = await testPlatform();
  server = createControlApp(platform, [cacRoutes]).listen({ hostname: "127.0.0.1", port: 0 });
  base = `http://127.0.0.1:${server.server!.port}`;
});
afterAll(async () => {
  await server.stop();
  await platform.close();
});

async function get(path: string) {
  const r = await fetch(base + path);
  return { status: r.status, body: (await r.json()) as Json };
}

describe(`control CAC and trace [${storeKind}]`, () => {
  test("GET /cac shows counters and active calls; POST /cac/reset (form or JSON) clears them", async () => {
    const t = await seedTenant(platform);
    const cid = sipCallId();
    const reply = await admitCall(platform, decision(t.accountId, { slots: [{ level: "trunk", id: "trk_1", limit: 4 }] }), routeRequest(cid));
    const snap = await get(`/cac?accountId=${t.accountId}`);
    expect(snap.status).toBe(200);
    expect(snap.body.data.cac).toEqual([{ level: "trunk", id: "trk_1", limit: 4, active: 1, call_ids: [reply.rtjson.vars.call_id] }]);
    expect(snap.body.data.calls.map((c: Json) => c.id)).toEqual([reply.rtjson.vars.call_id]);

    const form = await fetch(`${base}/cac/reset`, { method: "POST", headers: { "content-type": "application/x-www-form-urlencoded" }, body: `accountId=${t.accountId}` });
    expect(form.status).toBe(200);
    expect(((await form.json()) as Json).data).toEqual({ counters: 1, calls: 1 });
    expect((await get(`/cac?accountId=${t.accountId}`)).body.data.cac).toEqual([]);
    const json = await fetch(`${base}/cac/reset`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ accountId: t.accountId }) });
    expect(((await json.json()) as Json).data).toEqual({ counters: 0, calls: 0 });
  });

  test("bad input: 400 without accountId, 404 for an unknown account", async () => {
    expect((await get("/cac")).status).toBe(400);
    expect((await get("/cac?accountId=acc_nope")).status).toBe(404);
    const r = await fetch(`${base}/cac/reset`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({}) });
    expect(r.status).toBe(400);
    const unknown = await fetch(`${base}/cac/reset`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ accountId: "acc_nope" }) });
    expect(unknown.status).toBe(404);
  });

  test("GET /calls/{callId}/trace by SIP Call-ID, ordered; 404 for an unknown one", async () => {
    const t = await seedTenant(platform);
    const cid = sipCallId();
    await admitCall(platform, decision(t.accountId, { slots: [{ level: "user", id: "us_1", limit: 0 }] }), routeRequest(cid));
    const r = await get(`/calls/${encodeURIComponent(cid)}/trace`);
    expect(r.status).toBe(200);
    expect(r.body.data).toMatchObject({ sip_call_id: cid, account_id: t.accountId });
    expect(r.body.data.steps.map((s: Json) => s.step)).toEqual(["classify", "outbound_route", "cac", "reject"]);
    expect(r.body.data.steps[3].result).toBe("486 Busy Here");
    expect((await get(`/calls/nope-${cid}/trace`)).status).toBe(404);
  });

  test("GET /calls/{callId}/trace?accountId= finds that account's call by its Call-ID, though another account used the Call-ID since", async () => {
    const [a, b] = [await seedTenant(platform), await seedTenant(platform)];
    const cid = sipCallId();
    await admitCall(platform, decision(a.accountId), routeRequest(cid));
    await admitCall(platform, decision(b.accountId), routeRequest(cid));
    for (const t of [a, b]) {
      const r = await get(`/calls/${encodeURIComponent(cid)}/trace?accountId=${t.accountId}`);
      expect(r.status, t.accountId).toBe(200);
      expect(r.body.data).toMatchObject({ sip_call_id: cid, account_id: t.accountId });
    }
    expect((await get(`/calls/${encodeURIComponent(cid)}/trace?accountId=${(await seedTenant(platform)).accountId}`)).status).toBe(404);
  });
});
