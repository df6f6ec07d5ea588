/** Admission (CAC, record, call.started), dialog lifecycle (answered, ended, cost) and CAC expiry/reset, on the configured stores. */
import { afterAll, afterEach, beforeAll, describe, expect, setSystemTime, test } from "bun:test";
import { Value } from "@sinclair/typebox/value";
import { and, eq, sql } from "drizzle-orm";
import type { Platform } from "../platform.ts";
import { seedTenant, storeKind, testPlatform } from "../../../test/support/platform.ts";
import { openLiveStore } from "../live/index.ts";
import type { LiveStore } from "../live/live-store.ts";
import { events } from "../events/events.schema.ts";
import { EventData } from "../webhooks/event-catalog.ts";
import { isId, newId } from "../ids/ids.ts";
import type { PlatformEvent } from "../events/bus.ts";
import { hasPlannedDeliveries, planWebhookDeliveries } from "../webhooks/delivery.service.ts";
import { createEventBus } from "../events/bus.ts";
import { webhookDeliveries, webhookDeliveriesDue } from "../webhooks/delivery.schema.ts";
import { webhookSubscriptions } from "../webhooks/webhooks.schema.ts";
import { nowSeconds } from "../db/columns.ts";
import { acquireSlots, cacSnapshot, resetCac } from "../cac/cac.service.ts";
import { insertRatePlan } from "../rates/rates.store.ts";
import { admissionClaim, admitCall, settleUndeliveredReply } from "./admission.ts";
import { createAdmissionWriter, type AdmissionRows } from "./admission-writer.ts";
import { handleDialogEvent, handleDialogEvents } from "./dialog.ts";
import { LOST_END_CAUSE, endStaleCalls, startStaleCallSweeper } from "./stale-calls.ts";
import { trackDialog, userCallCount } from "../presence/presence.service.ts";
import { findCallBySipId, findCallBySipIdAnyAccount, listTrace, monthStartMs } from "./calls.store.ts";
import { getCall, streamCallsCsv } from "./calls.service.ts";
import { callRecords } from "./calls.schema.ts";
import { callLimits } from "../policies/policies.schema.ts";
import { accountKey } from "../live/live-store.ts";
import { decision, routeRequest, sipCallId } from "./calls.fixture.ts";
import type { CacSlot } from "../routing/route-types.ts";
import { createUser } from "../users/users.service.ts";

/** A user of the account (a callee leg names a user the account has, or is no agent of the call). */
const userIn = async (accountId: string) => (await createUser(platform.db, accountId, { username: `u${Math.random().toString(36).slice(2, 10)}` })).id;

let platform: Platform;

beforeAll(async () => {
  platform = await testPlatform();
});
afterAll(() => platform.close());
// Tests that play a call's events ahead move the clock there (nothing is recorded after now).
afterEach(() => setSystemTime());

/** The clock at `ms` (epoch ms) until the test ends: the edge's events up to then have happened. */
const clockAt = (ms: number) => setSystemTime(new Date(ms));

async function eventsOf(accountId: string, name: string) {
  return platform.db.select().from(events).where(and(eq(events.account_id, accountId), eq(events.name, name)));
}

const slot = (level: CacSlot["level"], id: string, limit: number) => ({ level, id, limit });

/** Gives the account a default rate plan in USD with `rates`. */
function defaultRatePlan(accountId: string, rates: Parameters<typeof insertRatePlan>[1]["rates"]) {
  return insertRatePlan(platform.db, { account_id: accountId, id: newId("rp"), name: "standard", currency: "USD", is_default: 1, rates, created_at: nowSeconds(), updated_at: nowSeconds() });
}

describe(`admission [${storeKind}]`, () => {
  test("a routed call is recorded with its trace, holds its slots and emits call.started", async () => {
    const t = await seedTenant(platform);
    const cid = sipCallId();
    const reply = await admitCall(platform, decision(t.accountId, { slots: [slot("account_out", t.accountId, 2)], userId: "us_X" }), routeRequest(cid));
    expect(reply.rtjson.action).toBe("outbound");
    const row = await findCallBySipId(platform.db, t.accountId, cid);
    expect(row).toMatchObject({ status: "routed", direction: "outbound", from: "14155550123", to: "442071234567", user_id: "us_X", answered: 0 });
    // The columns admission does not give take their defaults.
    expect(row).toMatchObject({ billsec: 0, cost_micro: 0, recording_ids: [], legs: [], ended_ms: null, agent_id: null, slots: [{ level: "account_out", id: t.accountId, limit: 2 }] });
    expect(reply.rtjson.vars.call_id).toBe(row!.id);
    const steps = await listTrace(platform.db, t.accountId, row!.id);
    expect(steps.map((s) => s.step)).toEqual(["classify", "outbound_route", "cac"]);
    const started = await eventsOf(t.accountId, "call.started");
    expect(started).toHaveLength(1);
    expect(Value.Check(EventData["call.started"], started[0]!.data)).toBe(true);
    const snap = await cacSnapshot(platform.live, t.accountId);
    expect(snap).toEqual([{ level: "account_out", id: t.accountId, limit: 2, active: 1, call_ids: [row!.id] }]);
  });

  test("a caller's number is recorded E.164 without +, like the called number (record and call.started); a SIP user stays as given", async () => {
    const t = await seedTenant(platform);
    const plus = sipCallId();
    await admitCall(platform, decision(t.accountId, { direction: "inbound", from: "+447700900123", to: "14155550100" }), routeRequest(plus));
    expect(await findCallBySipId(platform.db, t.accountId, plus)).toMatchObject({ from: "447700900123", to: "14155550100" });
    expect((await eventsOf(t.accountId, "call.started"))[0]!.data).toMatchObject({ from: "447700900123" });
    const user = sipCallId();
    await admitCall(platform, decision(t.accountId, { from: "+alice" }), routeRequest(user));
    expect(await findCallBySipId(platform.db, t.accountId, user)).toMatchObject({ from: "+alice" });
  });

  test("all or nothing: a refusal at a later slot gives back the earlier ones; user level is 486, others 503", async () => {
    const t = await seedTenant(platform);
    const slots = [slot("account_out", t.accountId, 5), slot("trunk", "trk_A", 1), slot("user", "us_A", 3)];
    const first = await admitCall(platform, decision(t.accountId, { slots }), routeRequest(sipCallId()));
    expect(first.rtjson.action).toBe("outbound");
    const cid = sipCallId();
    const second = await admitCall(platform, decision(t.accountId, { slots }), routeRequest(cid));
    expect(second.rtjson).toMatchObject({ action: "reject", code: 503, reason: "Service Unavailable" });
    const snap = await cacSnapshot(platform.live, t.accountId);
    expect(snap.map((c) => [c.level, c.active])).toEqual([["account_out", 1], ["trunk", 1], ["user", 1]]);
    const rejected = await findCallBySipId(platform.db, t.accountId, cid);
    expect(rejected).toMatchObject({ status: "rejected", sip_code: 503, hangup_cause: "NORMAL_TEMPORARY_FAILURE" });
    expect((await listTrace(platform.db, t.accountId, rejected!.id)).map((s) => s.step)).toEqual(["classify", "outbound_route", "cac", "reject"]);
    expect(await eventsOf(t.accountId, "call.started")).toHaveLength(1);

    const userSlots = [slot("account_out", t.accountId, 5), slot("user", "us_B", 1)];
    expect((await admitCall(platform, decision(t.accountId, { slots: userSlots }), routeRequest(sipCallId()))).rtjson.action).toBe("outbound");
    const busy = await admitCall(platform, decision(t.accountId, { slots: userSlots }), routeRequest(sipCallId()));
    expect(busy.rtjson).toMatchObject({ action: "reject", code: 486, reason: "Busy Here" });
  });

  test("limits hold at each level", async () => {
    const t = await seedTenant(platform);
    for (const level of ["account_in", "account_out", "account_dialer", "number", "trunk", "user"] as const) {
      const s = [slot(level, `${level}_id`, 2)];
      const codes: string[] = [];
      for (let i = 0; i < 3; i++) codes.push((await admitCall(platform, decision(t.accountId, { slots: s }), routeRequest(sipCallId()))).rtjson.action);
      expect([level, ...codes]).toEqual([level, "outbound", "outbound", "reject"]);
    }
  });

  test("a limit of 0 refuses every call", async () => {
    const t = await seedTenant(platform);
    const reply = await admitCall(platform, decision(t.accountId, { slots: [slot("number", "num_Z", 0)] }), routeRequest(sipCallId()));
    expect(reply.rtjson.code).toBe(503);
  });

  test("a retransmitted /route gets the same reply, one record, slots taken once (also when concurrent)", async () => {
    const t = await seedTenant(platform);
    const cid = sipCallId();
    const d = decision(t.accountId, { slots: [slot("account_out", t.accountId, 1)] });
    const [a, b, c] = await Promise.all([admitCall(platform, d, routeRequest(cid)), admitCall(platform, d, routeRequest(cid)), admitCall(platform, d, routeRequest(cid))]);
    expect(b).toEqual(a);
    expect(c).toEqual(a);
    expect(a.rtjson.action).toBe("outbound");
    const again = await admitCall(platform, d, routeRequest(cid));
    expect(again).toEqual(a);
    const snap = await cacSnapshot(platform.live, t.accountId);
    expect(snap[0]!.active).toBe(1);
    expect(await eventsOf(t.accountId, "call.started")).toHaveLength(1);
  });

  test("a new INVITE reusing a Call-ID (another CSeq) is a call of its own: recorded, counted, billed, decided anew", async () => {
    const t = await seedTenant(platform);
    await defaultRatePlan(t.accountId, [{ prefix: "44", direction: "outbound", per_minute_micro: 60_000, initial_sec: 1, increment_sec: 1, connection_fee_micro: 0 }]);
    const cid = sipCallId();
    const d = decision(t.accountId, { slots: [slot("account_out", t.accountId, 5)] });
    const first = await admitCall(platform, d, routeRequest(cid, { cseq: 1 }));
    // The same INVITE again (a retransmission, the edge's retry): its stored reply.
    expect(await admitCall(platform, d, routeRequest(cid, { cseq: 1 }))).toEqual(first);
    const t0 = Date.now();
    clockAt(t0 + 70_000);
    await handleDialogEvents(platform, [
      { type: "dialog", callId: cid, account_id: t.accountId, state: "confirmed", ts: t0 + 1_000 },
      { type: "dialog", callId: cid, account_id: t.accountId, state: "terminated", sip_code: 200, ts: t0 + 61_000 },
    ]);
    // The first INVITE sent again past SIP's Timer B is no retransmission but a replay: 482, nothing placed.
    expect((await admitCall(platform, d, routeRequest(cid, { cseq: 1 }))).rtjson).toMatchObject({ action: "reject", code: 482 });
    expect(await cacSnapshot(platform.live, t.accountId)).toEqual([]);
    // A new INVITE with that Call-ID, decided anew (now refused): its own record and reply, not the first's.
    const refused = decision(t.accountId, { reply: { rtjson: { action: "reject", account_id: t.accountId, flow_id: null, vars: {}, code: 403, reason: "Forbidden" } } });
    const again = await admitCall(platform, refused, routeRequest(cid, { cseq: 3 }));
    expect(again.rtjson).toMatchObject({ action: "reject", code: 403 });
    // And one routed: recorded, counted by CAC, billed by its own events (which name their record).
    const third = await admitCall(platform, d, routeRequest(cid, { cseq: 5 }));
    expect(third.rtjson.action).toBe("outbound");
    const thirdId = third.rtjson.vars.call_id as string;
    expect(thirdId).not.toBe(first.rtjson.vars.call_id);
    expect((await cacSnapshot(platform.live, t.accountId))[0]).toMatchObject({ active: 1, call_ids: [thirdId] });
    clockAt(t0 + 200_000);
    await handleDialogEvents(platform, [
      { type: "dialog", callId: cid, record_id: thirdId, account_id: t.accountId, state: "confirmed", ts: t0 + 100_000 },
      { type: "dialog", callId: cid, record_id: thirdId, account_id: t.accountId, state: "terminated", sip_code: 200, ts: t0 + 130_000 },
    ]);
    const records = await platform.db.select().from(callRecords).where(and(eq(callRecords.account_id, t.accountId), eq(callRecords.sip_call_id, cid)));
    expect(records.map((r) => [r.sip_cseq, r.status, r.billsec, r.cost_micro]).sort()).toEqual([
      [1, "completed", 60, 60_000],
      [3, "rejected", 0, 0],
      [5, "completed", 30, 30_000],
    ]);
    expect(await cacSnapshot(platform.live, t.accountId)).toEqual([]);
    expect(await eventsOf(t.accountId, "call.ended")).toHaveLength(2);
  });

  test("without a CSeq, one call per Call-ID: within SIP's Timer B a /route gets the stored reply, later 482", async () => {
    const t = await seedTenant(platform);
    const cid = sipCallId();
    const d = decision(t.accountId);
    const first = await admitCall(platform, d, routeRequest(cid));
    await handleDialogEvent(platform, { type: "dialog", callId: cid, account_id: t.accountId, state: "terminated", sip_code: 486 });
    expect(await admitCall(platform, d, routeRequest(cid))).toEqual(first);
    clockAt(Date.now() + 33_000);
    expect((await admitCall(platform, d, routeRequest(cid))).rtjson).toMatchObject({ action: "reject", code: 482 });
    expect(await platform.db.select().from(callRecords).where(and(eq(callRecords.account_id, t.accountId), eq(callRecords.sip_call_id, cid)))).toHaveLength(1);
  });

  test("an INVITE reusing a Call-ID is admitted while an earlier INVITE of it still holds its admission claim", async () => {
    const t = await seedTenant(platform);
    const cid = sipCallId();
    const held = admissionClaim(t.accountId, cid, 1);
    expect(await platform.live.setIfAbsent(held.key, held.value, held.ttlMs)).toBe(true);
    const second = await admitCall(platform, decision(t.accountId), routeRequest(cid, { cseq: 2 }));
    expect(second.rtjson.action).toBe("outbound");
    // The same INVITE as the held one waits for it (here: in vain, 503), as a retransmission does.
    expect((await admitCall(platform, decision(t.accountId), routeRequest(cid, { cseq: 1 }))).rtjson).toMatchObject({ action: "reject", code: 503 });
  });

  test("a reply the edge never got is settled by its own record, whatever another INVITE of its Call-ID was served", async () => {
    const t = await seedTenant(platform);
    const cid = sipCallId();
    const d = decision(t.accountId, { slots: [slot("account_out", t.accountId, 5)] });
    await admitCall(platform, d, routeRequest(cid, { cseq: 1 }));
    // CSeq 1's stored reply served once (a retransmission): that says nothing of CSeq 2's reply.
    await admitCall(platform, d, routeRequest(cid, { cseq: 1 }));
    const second = await admitCall(platform, d, routeRequest(cid, { cseq: 2 }));
    expect(await settleUndeliveredReply(platform, second, cid)).toBe("ended");
    expect(await getCall(platform.db, t.accountId, second.rtjson.vars.call_id as string)).toMatchObject({ status: "failed", sip_code: 503 });
    expect((await cacSnapshot(platform.live, t.accountId))[0]).toMatchObject({ active: 1 });
  });

  test("an event naming its record goes to it; one that names none goes to the Call-ID's newest record", async () => {
    const t = await seedTenant(platform);
    const cid = sipCallId();
    const d = decision(t.accountId);
    const first = await admitCall(platform, d, routeRequest(cid, { cseq: 1 }));
    const second = await admitCall(platform, d, routeRequest(cid, { cseq: 2 }));
    // The first call's end arrives after the second was admitted (a 422, the phone's retry at once).
    await handleDialogEvent(platform, { type: "dialog", callId: cid, record_id: first.rtjson.vars.call_id as string, account_id: t.accountId, state: "terminated", sip_code: 422 });
    expect(await getCall(platform.db, t.accountId, second.rtjson.vars.call_id as string)).toMatchObject({ status: "routed" });
    expect(await getCall(platform.db, t.accountId, first.rtjson.vars.call_id as string)).toMatchObject({ status: "failed" });
    await handleDialogEvent(platform, { type: "dialog", callId: cid, account_id: t.accountId, state: "confirmed" });
    expect(await getCall(platform.db, t.accountId, second.rtjson.vars.call_id as string)).toMatchObject({ status: "answered" });
  });

  test("a router's reject is recorded (no slots, no call.started); no account → nothing recorded", async () => {
    const t = await seedTenant(platform);
    const cid = sipCallId();
    const d = decision(t.accountId, {
      slots: [slot("account_in", t.accountId, 1)],
      reply: { rtjson: { action: "reject", account_id: t.accountId, flow_id: null, vars: {}, code: 403, reason: "Forbidden" } },
    });
    const reply = await admitCall(platform, d, routeRequest(cid));
    expect(reply.rtjson.code).toBe(403);
    expect(await findCallBySipId(platform.db, t.accountId, cid)).toMatchObject({ status: "rejected", sip_code: 403, hangup_cause: "CALL_REJECTED" });
    expect(await cacSnapshot(platform.live, t.accountId)).toEqual([]);
    const unowned = sipCallId();
    const none = await admitCall(platform, { ...decision(t.accountId), accountId: null }, routeRequest(unowned));
    expect(none.rtjson.action).toBe("outbound");
    // No account: nothing recorded, no call id handed out.
    expect(await findCallBySipIdAnyAccount(platform.db, unowned)).toBeNull();
    expect(none.rtjson.vars.call_id).toBeUndefined();
  });
});

describe(`admission writer [${storeKind}]`, () => {
  /** One routed call's rows, as admission writes them. */
  function admission(accountId: string, over: { sip_call_id?: string; direction?: string } = {}): AdmissionRows {
    const id = newId("call");
    const now = Date.now();
    const direction = (over.direction ?? "outbound") as "outbound";
    return {
      call: {
        account_id: accountId,
        id,
        sip_call_id: over.sip_call_id ?? sipCallId(),
        direction,
        from: "14155550123",
        to: "442071234567",
        status: "routed",
        started_ms: now,
        slots: [],
        reply: { rtjson: { action: "outbound", account_id: accountId, flow_id: null, vars: { call_id: id } } },
      },
      steps: [
        { account_id: accountId, call_id: id, at_ms: now, step: "classify", result: "outbound call from a device", data: null },
        { account_id: accountId, call_id: id, at_ms: now, step: "outbound_route", result: "carrier", data: null },
      ],
      started: { accountId, event: "call.started", data: { callId: id, direction, from: "14155550123", to: "442071234567", number_id: null, ts: now }, ts: now },
    };
  }

  test("calls admitted while a write is in flight go together in the next transaction, each with its trace and call.started", async () => {
    const t = await seedTenant(platform);
    const writer = createAdmissionWriter(platform, { writers: 1 });
    const list = Array.from({ length: 10 }, () => admission(t.accountId));
    expect(await Promise.all(list.map((rows) => writer.write(rows)))).toEqual(Array(10).fill(true));
    // The first went alone at once; the nine that came while it was written, together.
    expect(writer.batches).toBe(2);
    for (const rows of list) {
      expect(await findCallBySipId(platform.db, t.accountId, rows.call.sip_call_id)).toMatchObject({ id: rows.call.id, status: "routed" });
      expect((await listTrace(platform.db, t.accountId, rows.call.id)).map((s) => s.step)).toEqual(["classify", "outbound_route"]);
    }
    const started = await eventsOf(t.accountId, "call.started");
    expect(started.map((e) => (e.data as { callId: string }).callId).sort()).toEqual(list.map((rows) => rows.call.id).sort());
  });

  test("a Call-ID already recorded is answered false and the rest of its batch is written; a bad row fails alone", async () => {
    const t = await seedTenant(platform);
    const writer = createAdmissionWriter(platform, { writers: 1 });
    const first = admission(t.accountId);
    expect(await writer.write(first)).toBe(true);

    // A batch with a taken Call-ID: rolled back and written again without it.
    const taken = admission(t.accountId, { sip_call_id: first.call.sip_call_id });
    const batch = [admission(t.accountId), taken, admission(t.accountId), admission(t.accountId)];
    expect(await Promise.all(batch.map((rows) => writer.write(rows)))).toEqual([true, false, true, true]);
    expect(await findCallBySipId(platform.db, t.accountId, first.call.sip_call_id)).toMatchObject({ id: first.call.id });
    expect(await listTrace(platform.db, t.accountId, taken.call.id)).toEqual([]);

    // Two admissions of one INVITE in one batch (a claim that expired meanwhile): only the one inserted is written.
    const twin = admission(t.accountId);
    const pair = [admission(t.accountId), twin, admission(t.accountId, { sip_call_id: twin.call.sip_call_id })];
    expect(await Promise.all(pair.map((rows) => writer.write(rows)))).toEqual([true, true, false]);

    // A batch with a row the database refuses (a direction its check does not allow): only that one fails.
    const bad = admission(t.accountId, { direction: "sideways" });
    const mixed = [admission(t.accountId), admission(t.accountId), bad, admission(t.accountId)];
    const outcomes = await Promise.allSettled(mixed.map((rows) => writer.write(rows)));
    expect(outcomes.map((o) => o.status)).toEqual(["fulfilled", "fulfilled", "rejected", "fulfilled"]);
    expect(await findCallBySipId(platform.db, t.accountId, bad.call.sip_call_id)).toBeNull();
    for (const rows of [...batch.filter((r) => r !== taken), ...mixed.filter((r) => r !== bad)]) {
      expect(await findCallBySipId(platform.db, t.accountId, rows.call.sip_call_id)).toMatchObject({ id: rows.call.id });
    }
    // One call.started per call written, none for the taken Call-ID or the refused row.
    expect(await eventsOf(t.accountId, "call.started")).toHaveLength(1 + 2 + 3 + 3);
  });

  test("call.started is planned for the account's webhooks in the calls' own statement, as subscriptions come and go", async () => {
    const t = await seedTenant(platform);
    const other = await seedTenant(platform);
    const writer = createAdmissionWriter(platform, { writers: 1 });
    const hook = (accountId: string, events: string[], status = "active") => ({
      account_id: accountId,
      id: newId("wh"),
      url: "https://hooks.example.com/h",
      events,
      status,
      created_at: nowSeconds(),
      updated_at: nowSeconds(),
    });
    const planned: PlatformEvent[] = [];
    const stop = platform.events.onCommitted((list) => planned.push(...list.filter(hasPlannedDeliveries)));
    /** The subscriptions each call's call.started was planned for (webhook ids, sorted), by call id. */
    async function deliveriesOf(list: AdmissionRows[]) {
      const byCall = new Map<string, string[]>();
      for (const rows of list) {
        const [event] = (await eventsOf(rows.call.account_id, "call.started")).filter((e) => (e.data as { callId: string }).callId === rows.call.id);
        const found = await platform.db
          .select()
          .from(webhookDeliveries)
          .where(and(eq(webhookDeliveries.account_id, rows.call.account_id), eq(webhookDeliveries.event_id, event!.id)));
        for (const d of found) expect(isId(d.id, "whd")).toBe(true);
        byCall.set(rows.call.id, found.map((d) => d.webhook_id).sort());
      }
      return byCall;
    }
    const written = async (list: AdmissionRows[]) => expect(await Promise.all(list.map((rows) => writer.write(rows)))).toEqual(Array(list.length).fill(true));

    // No subscription yet: nothing planned.
    const before = [admission(t.accountId), admission(other.accountId)];
    await written(before);
    expect([...(await deliveriesOf(before)).values()]).toEqual([[], []]);

    // Subscriptions appear (the writer planned none last time): each call to those receiving call.started.
    const started = hook(t.accountId, ["call.started"]);
    const all = hook(t.accountId, ["*"]);
    const otherAll = hook(other.accountId, ["*"]);
    await platform.db.insert(webhookSubscriptions).values([started, all, hook(t.accountId, ["call.ended"]), hook(t.accountId, ["*"], "disabled"), otherAll]);
    const second = [admission(t.accountId), admission(t.accountId), admission(other.accountId), admission(t.accountId)];
    await written(second);
    const mine = [started.id, all.id].sort();
    expect([...(await deliveriesOf(second)).values()]).toEqual([mine, mine, [otherAll.id], mine]);

    // One more, then one fewer: each batch sees the subscriptions of its own moment.
    const third = hook(t.accountId, ["call.started", "call.ended"]);
    await platform.db.insert(webhookSubscriptions).values(third);
    const afterAdd = [admission(t.accountId), admission(t.accountId)];
    await written(afterAdd);
    expect([...(await deliveriesOf(afterAdd)).values()]).toEqual([[started.id, all.id, third.id].sort(), [started.id, all.id, third.id].sort()]);
    await platform.db.delete(webhookSubscriptions).where(and(eq(webhookSubscriptions.account_id, t.accountId), eq(webhookSubscriptions.id, all.id)));
    const afterDelete = [admission(t.accountId)];
    await written(afterDelete);
    expect([...(await deliveriesOf(afterDelete)).values()]).toEqual([[started.id, third.id].sort()]);

    // Each queued at once, and the worker told about exactly the events that got deliveries.
    const log = await platform.db.select().from(webhookDeliveries).where(eq(webhookDeliveries.account_id, t.accountId));
    const due = new Set((await platform.db.select().from(webhookDeliveriesDue).where(eq(webhookDeliveriesDue.account_id, t.accountId))).map((d) => d.id));
    expect(log).toHaveLength(3 * 2 + 2 * 3 + 2);
    for (const d of log) if (d.status === "pending" || d.status === "retrying") expect(due.has(d.id)).toBe(true);
    stop();
    const withPlans = [...second, ...afterAdd, ...afterDelete].map((rows) => rows.call.id).sort();
    expect(planned.map((e) => (e.data as { callId: string }).callId).sort()).toEqual(withPlans);
  });

  test("the webhook planner's SQL form plans as its transaction form does: a test event naming a webhook goes to it alone", async () => {
    // A bus with the webhook planner alone (the platform's also logs test events, which has no SQL form).
    const bus = createEventBus({ db: platform.db, live: platform.live, log: platform.log, ids: platform.events.ids });
    bus.addPlanner(planWebhookDeliveries);
    const t = await seedTenant(platform);
    const subs = [
      { id: newId("wh"), events: ["call.ended"] },
      { id: newId("wh"), events: ["*"] },
      { id: newId("wh"), events: ["call.ended"], status: "disabled" },
    ];
    await platform.db.insert(webhookSubscriptions).values(
      subs.map((w) => ({ account_id: t.accountId, url: "https://hooks.example.com/h", created_at: nowSeconds(), updated_at: nowSeconds(), ...w })),
    );
    const ts = Date.now();
    const written = async (viaStatement: boolean, webhookId: string | null) => {
      const input = { accountId: t.accountId, event: "test" as const, data: { message: "hi", webhook_id: webhookId, ts } };
      const [event] = viaStatement
        ? (await bus.statement({ ctes: (gate) => sql`none as (select 1 where ${gate})`, events: [{ ...input, key: "k" }], keep: sql`true`, result: sql`(select 1)` })).events
        : await bus.transaction((_tx, _emit, emitMany) => emitMany([input]));
      const rows = await platform.db.select().from(webhookDeliveries).where(and(eq(webhookDeliveries.account_id, t.accountId), eq(webhookDeliveries.event_id, event!.id)));
      return rows.map((d) => d.webhook_id).sort();
    };
    for (const target of [null, subs[0]!.id, subs[2]!.id]) {
      expect(await written(true, target), String(target)).toEqual(await written(false, target));
    }
    expect(await written(true, subs[0]!.id)).toEqual([subs[0]!.id]);
    expect(await written(true, null)).toEqual([subs[1]!.id]);
    expect(await written(true, subs[2]!.id)).toEqual([]);
  });

  test("the one statement refuses events a planner can plan only in a transaction (test events)", async () => {
    const t = await seedTenant(platform);
    const attempt = platform.events.statement({
      ctes: (gate) => sql`nothing as (select 1 where ${gate})`,
      events: [{ accountId: t.accountId, event: "test", data: { message: "hi", webhook_id: null, ts: Date.now() }, key: "k" }],
      keep: sql`true`,
      result: sql`(select 1)`,
    });
    await expect(attempt).rejects.toThrow(/no SQL form/);
    expect(await eventsOf(t.accountId, "test")).toEqual([]);
  });
});

describe(`dialog events [${storeKind}]`, () => {
  /**
   * Counts the bus's transactions and statements from now until restore(); `beforeStatement` runs
   * ahead of each statement (told its number, from 1).
   */
  function countWrites(beforeStatement?: (n: number) => Promise<void>) {
    const { transaction, statement } = platform.events;
    const counts = {
      transactions: 0,
      statements: 0,
      restore() {
        platform.events.transaction = transaction;
        platform.events.statement = statement;
      },
    };
    platform.events.transaction = (fn) => {
      counts.transactions += 1;
      return transaction(fn);
    };
    platform.events.statement = async (spec) => {
      counts.statements += 1;
      await beforeStatement?.(counts.statements);
      return statement(spec);
    };
    return counts;
  }

  async function admitted(accountId: string, slots = [slot("account_out", accountId, 10)], over: Parameters<typeof decision>[1] = {}) {
    const cid = sipCallId();
    await admitCall(platform, decision(accountId, { slots, ...over }), routeRequest(cid));
    return cid;
  }

  test("billsec never exceeds duration_sec: both count each started second", async () => {
    const t = await seedTenant(platform);
    const cid = await admitted(t.accountId);
    const row0 = (await findCallBySipId(platform.db, t.accountId, cid))!;
    clockAt(row0.started_ms + 20_000);
    await handleDialogEvent(platform, { type: "dialog", callId: cid, state: "confirmed", account_id: t.accountId, ts: row0.started_ms + 100 });
    await handleDialogEvent(platform, { type: "dialog", callId: cid, state: "terminated", account_id: t.accountId, sip_code: 200, ts: row0.started_ms + 10_400 });
    const call = await getCall(platform.db, t.accountId, row0.id);
    // 10.3 s answered of 10.4 s: 11 started seconds each (rounding the duration to nearest gave 10 < 11).
    expect([call.billsec, call.duration_sec]).toEqual([11, 11]);
    // The CSV export (written by the database) counts the same way.
    const [header, row] = (await new Response(streamCallsCsv(platform.database, t.accountId, {})).text()).trim().split("\r\n").map((l) => l.split(","));
    expect([row![header!.indexOf("billsec")], row![header!.indexOf("duration_sec")]]).toEqual(["11", "11"]);
  });

  test("early → confirmed → terminated: answered, billsec, call.answered and call.ended (catalog-valid), slots released", async () => {
    const t = await seedTenant(platform);
    const cid = await admitted(t.accountId, [slot("account_out", t.accountId, 1)], { queueId: "q_1" });
    const row0 = (await findCallBySipId(platform.db, t.accountId, cid))!;
    const agentId = await userIn(t.accountId);
    clockAt(row0.started_ms + 70_000);
    await handleDialogEvent(platform, { type: "dialog", callId: cid, state: "early", account_id: t.accountId });
    expect((await findCallBySipId(platform.db, t.accountId, cid))!.status).toBe("ringing");
    await handleDialogEvent(platform, {
      type: "dialog",
      callId: cid,
      state: "confirmed",
      ts: row0.started_ms + 5_000,
      legs: [{ role: "caller", device_id: "dev_1" }, { role: "callee", user_id: agentId, state: "confirmed" }],
    });
    const answered = (await findCallBySipId(platform.db, t.accountId, cid))!;
    expect(answered).toMatchObject({ status: "answered", answered: 1, answered_ms: row0.started_ms + 5_000, agent_id: agentId });
    const ans = await eventsOf(t.accountId, "call.answered");
    expect(ans).toHaveLength(1);
    expect(Value.Check(EventData["call.answered"], ans[0]!.data)).toBe(true);
    expect(ans[0]!.data).toMatchObject({ wait_sec: 5, agent_id: agentId, queue_id: "q_1" });

    await handleDialogEvent(platform, { type: "dialog", callId: cid, state: "terminated", sip_code: 200, ts: row0.started_ms + 5_000 + 61_500 });
    const ended = (await findCallBySipId(platform.db, t.accountId, cid))!;
    expect(ended).toMatchObject({ status: "completed", billsec: 62, hangup_cause: "NORMAL_CLEARING" });
    const end = await eventsOf(t.accountId, "call.ended");
    expect(end).toHaveLength(1);
    expect(Value.Check(EventData["call.ended"], end[0]!.data)).toBe(true);
    expect(Object.keys(end[0]!.data as object).sort()).toEqual(["agent_id", "answered", "billsec", "callId", "direction", "hangup_cause", "queue_id", "ts"]);
    expect(end[0]!.data).toEqual({
      callId: row0.id,
      direction: "outbound",
      answered: 1,
      billsec: 62,
      hangup_cause: "NORMAL_CLEARING",
      queue_id: "q_1",
      agent_id: agentId,
      ts: row0.started_ms + 66_500,
    });
    expect(await cacSnapshot(platform.live, t.accountId)).toEqual([]);
    // The freed slot admits the next call.
    expect((await admitCall(platform, decision(t.accountId, { slots: [slot("account_out", t.accountId, 1)] }), routeRequest(sipCallId()))).rtjson.action).toBe("outbound");
  });

  test("busy, cancel and no answer end unanswered with their causes", async () => {
    const t = await seedTenant(platform);
    const cases: Array<[number | undefined, string | undefined, string, string]> = [
      [486, undefined, "USER_BUSY", "busy"],
      [487, undefined, "ORIGINATOR_CANCEL", "canceled"],
      [480, undefined, "NO_ANSWER", "no_answer"],
      [undefined, "NO_USER_RESPONSE", "NO_USER_RESPONSE", "no_answer"],
      [503, undefined, "NORMAL_TEMPORARY_FAILURE", "failed"],
    ];
    for (const [code, cause, expectCause, expectStatus] of cases) {
      const cid = await admitted(t.accountId);
      await handleDialogEvent(platform, { type: "dialog", callId: cid, state: "early" });
      await handleDialogEvent(platform, { type: "dialog", callId: cid, state: "terminated", ...(code ? { sip_code: code } : {}), ...(cause ? { hangup_cause: cause } : {}) });
      expect(await findCallBySipId(platform.db, t.accountId, cid)).toMatchObject({ answered: 0, billsec: 0, hangup_cause: expectCause, status: expectStatus, cost_micro: 0 });
    }
    expect(await cacSnapshot(platform.live, t.accountId)).toEqual([]);
    const ended = await eventsOf(t.accountId, "call.ended");
    expect(ended.map((e) => (e.data as { answered: number }).answered)).toEqual([0, 0, 0, 0, 0]);
  });

  test("out of order and duplicates: terminated twice ends once; confirmed after terminated is ignored", async () => {
    const t = await seedTenant(platform);
    const cid = await admitted(t.accountId);
    await handleDialogEvent(platform, { type: "dialog", callId: cid, state: "terminated", sip_code: 487 });
    await handleDialogEvent(platform, { type: "dialog", callId: cid, state: "confirmed" });
    await handleDialogEvent(platform, { type: "dialog", callId: cid, state: "early" });
    await handleDialogEvent(platform, { type: "dialog", callId: cid, state: "terminated", sip_code: 200 });
    expect(await findCallBySipId(platform.db, t.accountId, cid)).toMatchObject({ status: "canceled", answered: 0, hangup_cause: "ORIGINATOR_CANCEL" });
    expect(await eventsOf(t.accountId, "call.ended")).toHaveLength(1);
    expect(await eventsOf(t.accountId, "call.answered")).toHaveLength(0);

    const cid2 = await admitted(t.accountId);
    await handleDialogEvent(platform, { type: "dialog", callId: cid2, state: "confirmed" });
    await handleDialogEvent(platform, { type: "dialog", callId: cid2, state: "confirmed" });
    await Promise.all([
      handleDialogEvent(platform, { type: "dialog", callId: cid2, state: "terminated" }),
      handleDialogEvent(platform, { type: "dialog", callId: cid2, state: "terminated" }),
    ]);
    expect(await eventsOf(t.accountId, "call.answered")).toHaveLength(1);
    expect(await eventsOf(t.accountId, "call.ended")).toHaveLength(2);
  });

  test("a call the edge's failover forwarded out (a media engine placed the forward) ends outbound to the forward's number, billed as such, on both paths", async () => {
    const t = await seedTenant(platform);
    await defaultRatePlan(t.accountId, [
      { prefix: "1", direction: "inbound", per_minute_micro: 1_000, initial_sec: 60, increment_sec: 60, connection_fee_micro: 0 },
      { prefix: "44", direction: "outbound", per_minute_micro: 60_000, initial_sec: 60, increment_sec: 60, connection_fee_micro: 0 },
    ]);
    // The forward's number as /route gave it to the edge: whatever becomes of the forward since (here,
    // it never existed in the forwards table) does not change the bill.
    const fwd = newId("fwd");
    const vars = { direction: "inbound", did: "14155560100", failover_busy: `forward:${fwd}`, failover_busy_number: "447700900555", failover_no_answer: "voicemail:vm_1" };
    const inbound = decision(t.accountId, { direction: "inbound", to: "14155560100", reply: { rtjson: { action: "proxy", account_id: t.accountId, flow_id: null, vars } } });
    const run = async (locked: boolean) => {
      const cid = sipCallId();
      await admitCall(platform, inbound, routeRequest(cid, { to: "14155560100" }));
      const started = (await findCallBySipId(platform.db, t.accountId, cid))!.started_ms;
      clockAt(started + 120_000);
      const confirmed = { type: "dialog" as const, callId: cid, account_id: t.accountId, state: "confirmed" as const, failover: `forward:${fwd}`, ts: started + 5_000 };
      const terminated = { type: "dialog" as const, callId: cid, account_id: t.accountId, state: "terminated" as const, failover: `forward:${fwd}`, sip_code: 200, ts: started + 65_000 };
      if (!locked) await handleDialogEvents(platform, [confirmed, terminated]);
      else {
        // The end's round read the call unanswered; another round answers it before it writes: the
        // end is applied the locked way.
        const counts = countWrites(async (n) => {
          if (n === 1) await handleDialogEvents(platform, [confirmed]);
        });
        try {
          await handleDialogEvents(platform, [terminated]);
        } finally {
          counts.restore();
        }
        expect(counts.transactions).toBe(1);
      }
      return (await findCallBySipId(platform.db, t.accountId, cid))!;
    };
    for (const locked of [false, true]) {
      const row = await run(locked);
      expect(row, String(locked)).toMatchObject({ direction: "outbound", to: "447700900555", status: "completed", billsec: 60, cost_micro: 60_000 });
      expect((await listTrace(platform.db, t.accountId, row.id)).at(-1)!.result).toContain("forwarded out to 447700900555: outbound");
    }
    const ended = await eventsOf(t.accountId, "call.ended");
    expect(ended.map((e) => (e.data as { direction: string }).direction)).toEqual(["outbound", "outbound"]);
    // A voicemail failover is no forward: the call keeps its direction.
    const cid = sipCallId();
    await admitCall(platform, inbound, routeRequest(cid, { to: "14155560100" }));
    await handleDialogEvents(platform, [{ type: "dialog", callId: cid, account_id: t.accountId, state: "terminated", failover: "voicemail:vm_1", sip_code: 200 }]);
    expect(await findCallBySipId(platform.db, t.accountId, cid)).toMatchObject({ direction: "inbound", to: "14155560100" });
  });

  test("a forward the edge's failover placed counts in the windows of the limits of calls out (/route only checked them); a window the inbound call was counted in has it already", async () => {
    const t = await seedTenant(platform);
    const limit = async (direction: string) => {
      const id = newId("cl");
      await platform.db.insert(callLimits).values({ account_id: t.accountId, id, name: `${direction}-${id}`, scope_kind: "account", scope_id: t.accountId, direction, period_sec: 3600, max_count: 5, hard: 1, created_at: nowSeconds(), updated_at: nowSeconds() });
      return id;
    };
    const out = await limit("out");
    const any = await limit("any");
    const fwd = newId("fwd");
    const vars = { direction: "inbound", did: "14155560100", failover_busy: `forward:${fwd}`, failover_busy_number: "447700900555" };
    const cid = sipCallId();
    await admitCall(platform, decision(t.accountId, { direction: "inbound", to: "14155560100", reply: { rtjson: { action: "proxy", account_id: t.accountId, flow_id: null, vars } } }), routeRequest(cid, { to: "14155560100" }));
    const id = (await findCallBySipId(platform.db, t.accountId, cid))!.id;
    const end = { type: "dialog" as const, callId: cid, account_id: t.accountId, state: "terminated" as const, failover: `forward:${fwd}`, sip_code: 200 };
    await handleDialogEvents(platform, [end]);
    // The same end sent again (an edge's retried batch) counts nothing more.
    await handleDialogEvents(platform, [end]);
    expect(await platform.live.zliveMembers(accountKey(t.accountId, "call_limit_log", out))).toEqual([`forward:${id}`]);
    expect(await platform.live.zliveMembers(accountKey(t.accountId, "call_limit_log", any))).toEqual([]);
    // A voicemail failover is no call out.
    const vm = sipCallId();
    await admitCall(platform, decision(t.accountId, { direction: "inbound", to: "14155560100" }), routeRequest(vm, { to: "14155560100" }));
    await handleDialogEvents(platform, [{ type: "dialog", callId: vm, account_id: t.accountId, state: "terminated", failover: "voicemail:vm_1", sip_code: 200 }]);
    expect(await platform.live.zliveMembers(accountKey(t.accountId, "call_limit_log", out))).toHaveLength(1);
  });

  test("an emergency call is not billed (its digits are no country's prefix: 911 is not +91)", async () => {
    const t = await seedTenant(platform);
    await defaultRatePlan(t.accountId, [{ prefix: "91", direction: "outbound", per_minute_micro: 60_000, initial_sec: 60, increment_sec: 60, connection_fee_micro: 5_000 }]);
    const cid = sipCallId();
    await admitCall(platform, decision(t.accountId, { to: "911" }), routeRequest(cid, { to: "911" }));
    const started = (await findCallBySipId(platform.db, t.accountId, cid))!.started_ms;
    clockAt(started + 120_000);
    await handleDialogEvents(platform, [
      { type: "dialog", callId: cid, account_id: t.accountId, state: "confirmed", ts: started + 1_000 },
      { type: "dialog", callId: cid, account_id: t.accountId, state: "terminated", sip_code: 200, ts: started + 61_000 },
    ]);
    expect(await findCallBySipId(platform.db, t.accountId, cid)).toMatchObject({ to: "911", status: "completed", billsec: 60, cost_micro: 0 });
  });

  test("in one set, a confirmation after the end is ignored when the two events name the call differently (one with its record, one without)", async () => {
    const t = await seedTenant(platform);
    const cid = sipCallId();
    const record = String((await admitCall(platform, decision(t.accountId), routeRequest(cid))).rtjson.vars.call_id);
    const started = (await findCallBySipId(platform.db, t.accountId, cid))!.started_ms;
    clockAt(started + 60_000);
    await handleDialogEvents(platform, [
      { type: "dialog", callId: cid, account_id: t.accountId, state: "terminated", sip_code: 487, ts: started + 10_000 },
      { type: "dialog", callId: cid, account_id: t.accountId, record_id: record, state: "confirmed", ts: started + 20_000 },
    ]);
    expect(await findCallBySipId(platform.db, t.accountId, cid)).toMatchObject({ status: "canceled", answered: 0, answered_ms: null, billsec: 0, hangup_cause: "ORIGINATOR_CANCEL" });
    expect(await eventsOf(t.accountId, "call.answered")).toHaveLength(0);

    // The same when the set is applied the locked way (another round rang the call between its read and write).
    const cid2 = sipCallId();
    const record2 = String((await admitCall(platform, decision(t.accountId), routeRequest(cid2))).rtjson.vars.call_id);
    const started2 = (await findCallBySipId(platform.db, t.accountId, cid2))!.started_ms;
    clockAt(started2 + 60_000);
    const counts = countWrites(async (n) => {
      if (n === 1) await handleDialogEvents(platform, [{ type: "dialog", callId: cid2, account_id: t.accountId, record_id: record2, state: "early", ts: started2 + 1_000 }]);
    });
    try {
      await handleDialogEvents(platform, [
        { type: "dialog", callId: cid2, account_id: t.accountId, state: "terminated", sip_code: 487, ts: started2 + 10_000 },
        { type: "dialog", callId: cid2, account_id: t.accountId, record_id: record2, state: "confirmed", ts: started2 + 20_000 },
      ]);
    } finally {
      counts.restore();
    }
    expect(counts.transactions).toBe(1);
    expect(await findCallBySipId(platform.db, t.accountId, cid2)).toMatchObject({ status: "canceled", answered: 0, answered_ms: null, billsec: 0 });
    expect(await eventsOf(t.accountId, "call.answered")).toHaveLength(0);

    // The time decides, not the place in the set: an answer before the end, named the other way and
    // listed after it, is the call's answer.
    const cid3 = sipCallId();
    const record3 = String((await admitCall(platform, decision(t.accountId), routeRequest(cid3))).rtjson.vars.call_id);
    const started3 = (await findCallBySipId(platform.db, t.accountId, cid3))!.started_ms;
    clockAt(started3 + 60_000);
    await handleDialogEvents(platform, [
      { type: "dialog", callId: cid3, account_id: t.accountId, record_id: record3, state: "early", ts: started3 + 1_000 },
      { type: "dialog", callId: cid3, account_id: t.accountId, state: "confirmed", ts: started3 + 5_000 },
      { type: "dialog", callId: cid3, account_id: t.accountId, record_id: record3, state: "terminated", sip_code: 200, ts: started3 + 50_000 },
    ]);
    expect(await findCallBySipId(platform.db, t.accountId, cid3)).toMatchObject({ status: "completed", answered: 1, answered_ms: started3 + 5_000, billsec: 45 });
  });

  test("a set of events (handleDialogEvents): each call's events in order, many calls and accounts at once, repeats change nothing", async () => {
    const a = await seedTenant(platform);
    const b = await seedTenant(platform);
    const whole = await admitted(a.accountId, [slot("account_out", a.accountId, 10)]);
    const early = await admitted(a.accountId, [slot("account_out", a.accountId, 10)]);
    const busy = await admitted(b.accountId, [slot("account_out", b.accountId, 10)]);
    const answered = await admitted(b.accountId, [slot("account_out", b.accountId, 10)]);
    const canceled = await admitted(b.accountId, [slot("account_out", b.accountId, 10)]);
    const start = (await findCallBySipId(platform.db, a.accountId, whole))!.started_ms;
    const ag = await userIn(a.accountId);
    const batch: Parameters<typeof handleDialogEvents>[1] = [
      { type: "dialog", callId: whole, account_id: a.accountId, state: "early", ts: start + 1000 },
      { type: "dialog", callId: busy, account_id: b.accountId, state: "terminated", sip_code: 486 },
      { type: "dialog", callId: whole, account_id: a.accountId, state: "confirmed", ts: start + 3000, legs: [{ role: "callee", user_id: ag }] },
      { type: "dialog", callId: early, account_id: a.accountId, state: "early" },
      { type: "dialog", callId: answered, account_id: b.accountId, state: "confirmed" },
      { type: "dialog", callId: whole, account_id: a.accountId, state: "terminated", sip_code: 200, ts: start + 13_000 },
      { type: "dialog", callId: "unknown-" + sipCallId(), account_id: a.accountId, state: "terminated" },
      // Its end arrives before its confirmation: the confirmation, later in the set, must change nothing.
      { type: "dialog", callId: canceled, account_id: b.accountId, state: "terminated", sip_code: 487 },
      { type: "dialog", callId: canceled, account_id: b.accountId, state: "confirmed" },
    ];
    clockAt(start + 20_000);
    await handleDialogEvents(platform, batch);
    await handleDialogEvents(platform, batch); // the edge sends a batch again when it got no answer
    expect(await findCallBySipId(platform.db, a.accountId, whole)).toMatchObject({
      status: "completed", ringing_ms: start + 1000, answered_ms: start + 3000, ended_ms: start + 13_000, billsec: 10, agent_id: ag, hangup_cause: "NORMAL_CLEARING",
    });
    expect(await findCallBySipId(platform.db, a.accountId, early)).toMatchObject({ status: "ringing", ended_ms: null });
    expect(await findCallBySipId(platform.db, b.accountId, busy)).toMatchObject({ status: "busy", hangup_cause: "USER_BUSY", answered: 0 });
    expect(await findCallBySipId(platform.db, b.accountId, answered)).toMatchObject({ status: "answered", answered: 1, ended_ms: null });
    expect(await findCallBySipId(platform.db, b.accountId, canceled)).toMatchObject({ status: "canceled", answered: 0, answered_ms: null, hangup_cause: "ORIGINATOR_CANCEL" });
    expect((await eventsOf(a.accountId, "call.answered")).map((e) => (e.data as { callId: string }).callId)).toHaveLength(1);
    expect(await eventsOf(a.accountId, "call.ended")).toHaveLength(1);
    expect(await eventsOf(b.accountId, "call.answered")).toHaveLength(1);
    expect((await eventsOf(b.accountId, "call.ended")).map((e) => (e.data as { hangup_cause: string }).hangup_cause).sort()).toEqual(["ORIGINATOR_CANCEL", "USER_BUSY"]);
    const wholeRow = (await findCallBySipId(platform.db, a.accountId, whole))!;
    expect((await listTrace(platform.db, a.accountId, wholeRow.id)).filter((s) => s.step === "dialog").map((s) => s.result)).toEqual([
      "early: ringing",
      "confirmed: answered",
      "terminated: NORMAL_CLEARING, billsec 10",
    ]);
    // Slots: the ended calls gave theirs back, the live ones hold theirs.
    expect((await cacSnapshot(platform.live, a.accountId)).map((c) => c.active)).toEqual([1]);
    expect((await cacSnapshot(platform.live, b.accountId)).map((c) => c.active)).toEqual([1]);
  });

  test("a call's ringing, answer and end in one set cost one round (one statement, no transaction); a step back starts the next round", async () => {
    const t = await seedTenant(platform);
    const cids = [await admitted(t.accountId), await admitted(t.accountId), await admitted(t.accountId)];
    const whole = await admitted(t.accountId);
    const start = (await findCallBySipId(platform.db, t.accountId, cids[0]!))!.started_ms;
    clockAt(start + 20_000);
    const counts = countWrites();
    try {
      await handleDialogEvents(
        platform,
        cids.flatMap((callId) => [
          { type: "dialog" as const, callId, account_id: t.accountId, state: "early" as const, ts: start + 1000 },
          { type: "dialog" as const, callId, account_id: t.accountId, state: "confirmed" as const, ts: start + 2000 },
        ]),
      );
      expect([counts.statements, counts.transactions]).toEqual([1, 0]);
      for (const cid of cids) expect(await findCallBySipId(platform.db, t.accountId, cid)).toMatchObject({ status: "answered", ringing_ms: start + 1000, answered_ms: start + 2000 });
      // Whole calls in one round; a repeat after the end (a step back) goes in a second round, which
      // finds the call ended and writes nothing.
      counts.statements = 0;
      await handleDialogEvents(platform, [
        { type: "dialog", callId: whole, account_id: t.accountId, state: "early", ts: start + 1000 },
        { type: "dialog", callId: whole, account_id: t.accountId, state: "confirmed", ts: start + 3000 },
        { type: "dialog", callId: whole, account_id: t.accountId, state: "terminated", sip_code: 200, ts: start + 13_000 },
        { type: "dialog", callId: whole, account_id: t.accountId, state: "confirmed", ts: start + 14_000 },
      ]);
      expect([counts.statements, counts.transactions]).toEqual([1, 0]);
    } finally {
      counts.restore();
    }
    const wholeRow = (await findCallBySipId(platform.db, t.accountId, whole))!;
    expect(wholeRow).toMatchObject({ answered_ms: start + 3000, ended_ms: start + 13_000, billsec: 10 });
    expect((await listTrace(platform.db, t.accountId, wholeRow.id)).filter((s) => s.step === "dialog").map((s) => s.result)).toEqual([
      "early: ringing",
      "confirmed: answered",
      "terminated: NORMAL_CLEARING, billsec 10",
    ]);
    expect((await eventsOf(t.accountId, "call.answered")).filter((e) => (e.data as { callId: string }).callId === wholeRow.id)).toHaveLength(1);
    // The ended call's slot is given back; the three answered calls hold theirs (ended here: later
    // tests sweep calls left open).
    expect((await cacSnapshot(platform.live, t.accountId)).map((c) => c.active)).toEqual([3]);
    await handleDialogEvents(platform, cids.map((callId) => ({ type: "dialog" as const, callId, account_id: t.accountId, state: "terminated" as const, ts: start + 5000 })));
    expect(await cacSnapshot(platform.live, t.accountId)).toEqual([]);
  });


  test("a call changed between a round's read and its write (another round got there first) is applied again the locked way", async () => {
    const t = await seedTenant(platform);
    const cid = await admitted(t.accountId);
    const call = (await findCallBySipId(platform.db, t.accountId, cid))!;
    const start = call.started_ms;
    clockAt(start + 20_000);
    // The end's round has read the call unanswered; before it writes, another round answers it.
    const counts = countWrites(async (n) => {
      if (n === 1) await handleDialogEvents(platform, [{ type: "dialog", callId: cid, account_id: t.accountId, state: "confirmed", ts: start + 2000 }]);
    });
    try {
      await handleDialogEvents(platform, [{ type: "dialog", callId: cid, account_id: t.accountId, state: "terminated", sip_code: 200, ts: start + 12_000 }]);
    } finally {
      counts.restore();
    }
    // The end's statement found the record changed and wrote nothing; the locked way ended the
    // answered call (not a missed one).
    expect([counts.statements, counts.transactions]).toEqual([2, 1]);
    expect(await findCallBySipId(platform.db, t.accountId, cid)).toMatchObject({ status: "completed", answered_ms: start + 2000, ended_ms: start + 12_000, billsec: 10 });
    expect((await listTrace(platform.db, t.accountId, call.id)).filter((s) => s.step === "dialog").map((s) => s.result)).toEqual([
      "confirmed: answered",
      "terminated: NORMAL_CLEARING, billsec 10",
    ]);
    const mine = async (name: "call.answered" | "call.ended") => (await eventsOf(t.accountId, name)).filter((e) => (e.data as { callId: string }).callId === call.id);
    expect(await mine("call.answered")).toHaveLength(1);
    expect((await mine("call.ended")).map((e) => e.data)).toMatchObject([{ answered: 1, billsec: 10, hangup_cause: "NORMAL_CLEARING" }]);
    // Its slot given back (no counter holds a call).
    expect((await cacSnapshot(platform.live, t.accountId)).filter((c) => c.active > 0)).toEqual([]);
  });
  test("an unknown Call-ID is ignored with a log line; an event for another account's call changes nothing", async () => {
    const lines: string[] = [];
    const logged = await testPlatform({ logLines: lines });
    try {
      await handleDialogEvent(logged, { type: "dialog", callId: sipCallId(), state: "terminated" });
      expect(lines.some((l) => l.includes("unknown call"))).toBe(true);
      const a = await seedTenant(platform);
      const b = await seedTenant(platform);
      const cid = await admitted(a.accountId);
      await handleDialogEvent(platform, { type: "dialog", callId: cid, state: "terminated", account_id: b.accountId });
      expect((await findCallBySipId(platform.db, a.accountId, cid))!.ended_ms).toBeNull();
    } finally {
      await logged.close();
    }
  });

  test("cost from the default rate plan: longest prefix, increments, connection fee", async () => {
    const t = await seedTenant(platform);
    await defaultRatePlan(t.accountId, [
      { prefix: "", direction: "any", per_minute_micro: 100_000, initial_sec: 60, increment_sec: 60, connection_fee_micro: 0 },
      { prefix: "44", direction: "outbound", per_minute_micro: 12_000, initial_sec: 60, increment_sec: 60, connection_fee_micro: 0 },
      { prefix: "4420", direction: "outbound", per_minute_micro: 6_000, initial_sec: 30, increment_sec: 6, connection_fee_micro: 1_000 },
      { prefix: "1415", direction: "inbound", per_minute_micro: 3_000, initial_sec: 1, increment_sec: 1, connection_fee_micro: 0 },
    ]);
    async function cost(to: string, direction: "inbound" | "outbound" | "internal", billMs: number) {
      const cid = sipCallId();
      await admitCall(platform, decision(t.accountId, { to, direction }), routeRequest(cid));
      const row = (await findCallBySipId(platform.db, t.accountId, cid))!;
      clockAt(row.started_ms + billMs + 1_000);
      await handleDialogEvent(platform, { type: "dialog", callId: cid, state: "confirmed", ts: row.started_ms });
      await handleDialogEvent(platform, { type: "dialog", callId: cid, state: "terminated", ts: row.started_ms + billMs });
      const ended = (await findCallBySipId(platform.db, t.accountId, cid))!;
      return [ended.billsec, ended.cost_micro, ended.currency];
    }
    // 4420…: 30/6 → 61 s bills 66 s: 1,000 + 6,000 × 66 / 60 = 7,600.
    expect(await cost("442071234567", "outbound", 61_000)).toEqual([61, 7_600, "USD"]);
    // 44 (not 4420): 60/60 → 61 s bills 120 s = 24,000.
    expect(await cost("441612345678", "outbound", 61_000)).toEqual([61, 24_000, "USD"]);
    // Short call: the initial period: 10 s on 60/60 bills 60 s.
    expect(await cost("441612345678", "outbound", 10_000)).toEqual([10, 12_000, "USD"]);
    // Inbound 1415…: 1/1 → 45 s = 2,250.
    expect(await cost("14155550100", "inbound", 45_000)).toEqual([45, 2_250, "USD"]);
    // The catch-all line: 30 s → 60 s at 100,000.
    expect(await cost("33123456789", "outbound", 30_000)).toEqual([30, 100_000, "USD"]);
    // Internal calls are free.
    expect(await cost("1001", "internal", 30_000)).toEqual([30, 0, "USD"]);
  });

  test("inbound calls are priced by the DID called, not by `to` as a number transform rewrote it", async () => {
    const t = await seedTenant(platform);
    await defaultRatePlan(t.accountId, [
      { prefix: "", direction: "any", per_minute_micro: 100_000, initial_sec: 60, increment_sec: 60, connection_fee_micro: 0 },
      { prefix: "1415", direction: "inbound", per_minute_micro: 3_000, initial_sec: 1, increment_sec: 1, connection_fee_micro: 0 },
    ]);
    const base = decision(t.accountId);
    const cid = sipCallId();
    await admitCall(
      platform,
      decision(t.accountId, {
        direction: "inbound",
        to: "0100",
        reply: { rtjson: { ...base.reply.rtjson, action: "proxy", vars: { direction: "inbound", did: "14155550100", dest_kind: "user", dest_id: "us_CALLED" } } },
      }),
      routeRequest(cid, { to: "14155550100" }),
    );
    const row = (await findCallBySipId(platform.db, t.accountId, cid))!;
    clockAt(row.started_ms + 12_000);
    await handleDialogEvent(platform, { type: "dialog", callId: cid, state: "confirmed", ts: row.started_ms + 1_000 });
    await handleDialogEvent(platform, { type: "dialog", callId: cid, state: "terminated", sip_code: 200, ts: row.started_ms + 11_000 });
    // 10 s at 3,000 µ/min (1/1) = 500; the catch-all line would have billed 100,000.
    expect(await findCallBySipId(platform.db, t.accountId, cid)).toMatchObject({ to: "0100", billsec: 10, cost_micro: 500, agent_id: "us_CALLED" });
  });

  test("an answered call of 0 s pays the connection fee; an end the edge puts before the answer ends the call at its answer", async () => {
    const t = await seedTenant(platform);
    await defaultRatePlan(t.accountId, [{ prefix: "44", direction: "outbound", per_minute_micro: 6_000, initial_sec: 30, increment_sec: 6, connection_fee_micro: 1_000 }]);
    for (const endOffset of [1_000, 400]) {
      const cid = await admitted(t.accountId);
      const row = (await findCallBySipId(platform.db, t.accountId, cid))!;
      clockAt(row.started_ms + 2_000);
      await handleDialogEvent(platform, { type: "dialog", callId: cid, state: "confirmed", ts: row.started_ms + 1_000 });
      await handleDialogEvent(platform, { type: "dialog", callId: cid, state: "terminated", sip_code: 200, ts: row.started_ms + endOffset });
      const ended = (await findCallBySipId(platform.db, t.accountId, cid))!;
      expect(ended).toMatchObject({ status: "completed", answered: 1, billsec: 0, cost_micro: 1_000, answered_ms: row.started_ms + 1_000, ended_ms: row.started_ms + 1_000 });
    }
  });

  test("times from an edge clock ahead of ours are taken as now: a bad clock cannot bill the future", async () => {
    const t = await seedTenant(platform);
    await defaultRatePlan(t.accountId, [{ prefix: "", direction: "any", per_minute_micro: 60_000, initial_sec: 1, increment_sec: 1, connection_fee_micro: 0 }]);
    const cid = await admitted(t.accountId);
    const row = (await findCallBySipId(platform.db, t.accountId, cid))!;
    clockAt(row.started_ms + 5_000);
    await handleDialogEvent(platform, { type: "dialog", callId: cid, state: "confirmed", ts: row.started_ms + 2_000 });
    // Ended "400 days later" (a clock, or a ts unit, gone wrong), received 5 s after the start.
    await handleDialogEvent(platform, { type: "dialog", callId: cid, state: "terminated", sip_code: 200, ts: row.started_ms + 400 * 86_400_000 });
    expect(await findCallBySipId(platform.db, t.accountId, cid)).toMatchObject({ ended_ms: row.started_ms + 5_000, billsec: 3, cost_micro: 3_000 });
    const ended = (await eventsOf(t.accountId, "call.ended")).map((e) => e.data as { billsec: number; ts: number });
    expect(ended).toEqual([expect.objectContaining({ billsec: 3, ts: row.started_ms + 5_000 })]);
  });

  test("an end that says when the call was answered answers it, though its confirmed event was lost or comes after", async () => {
    const t = await seedTenant(platform);
    await defaultRatePlan(t.accountId, [{ prefix: "", direction: "any", per_minute_micro: 60_000, initial_sec: 1, increment_sec: 1, connection_fee_micro: 0 }]);
    const base = decision(t.accountId);
    const toUser = { reply: { rtjson: { ...base.reply.rtjson, vars: { direction: "outbound", dest_kind: "user", dest_id: "us_ROUTED" } } } };
    const lost = await admitted(t.accountId, [slot("account_out", t.accountId, 10)], toUser);
    const named = await admitted(t.accountId, [slot("account_out", t.accountId, 10)], toUser);
    const leg = await userIn(t.accountId);
    const start = (await findCallBySipId(platform.db, t.accountId, lost))!.started_ms;
    clockAt(start + 70_000);
    // No confirmed at all; the end carries the answer time (as the shipped edge sends it).
    await handleDialogEvent(platform, { type: "dialog", callId: lost, account_id: t.accountId, state: "terminated", sip_code: 200, ts: start + 65_000, answered_ts: start + 4_000 });
    // The end first, its callee leg naming the user; the confirmed behind it changes nothing.
    await handleDialogEvents(platform, [
      {
        type: "dialog", callId: named, account_id: t.accountId, state: "terminated", sip_code: 200, ts: start + 30_000, answered_ts: start + 10_000,
        legs: [{ role: "callee", user_id: leg, state: "terminated" }],
      },
      { type: "dialog", callId: named, account_id: t.accountId, state: "confirmed", ts: start + 10_000 },
    ]);
    const a = (await findCallBySipId(platform.db, t.accountId, lost))!;
    expect(a).toMatchObject({ status: "completed", answered: 1, answered_ms: start + 4_000, ended_ms: start + 65_000, billsec: 61, cost_micro: 61_000, agent_id: "us_ROUTED", hangup_cause: "NORMAL_CLEARING" });
    const b = (await findCallBySipId(platform.db, t.accountId, named))!;
    expect(b).toMatchObject({ status: "completed", answered: 1, answered_ms: start + 10_000, billsec: 20, agent_id: leg });
    // call.answered (once, at the answer) comes before call.ended, as for any answered call.
    const answered = (await eventsOf(t.accountId, "call.answered")).map((e) => e.data as { callId: string; ts: number; agent_id: string; wait_sec: number });
    expect(answered.sort((x, y) => x.ts - y.ts)).toEqual([
      expect.objectContaining({ callId: a.id, ts: start + 4_000, agent_id: "us_ROUTED", wait_sec: 4 }),
      expect.objectContaining({ callId: b.id, ts: start + 10_000, agent_id: leg, wait_sec: 10 }),
    ]);
    for (const e of await eventsOf(t.accountId, "call.answered")) expect(Value.Check(EventData["call.answered"], e.data)).toBe(true);
    expect((await listTrace(platform.db, t.accountId, a.id)).filter((x) => x.step === "dialog").map((x) => x.result)).toEqual([
      "confirmed: answered (reported with the end)",
      "terminated: NORMAL_CLEARING, billsec 61",
    ]);
    // An end without answered_ts and no confirmed stays an unanswered call.
    const unanswered = await admitted(t.accountId);
    await handleDialogEvent(platform, { type: "dialog", callId: unanswered, account_id: t.accountId, state: "terminated", sip_code: 487 });
    expect(await findCallBySipId(platform.db, t.accountId, unanswered)).toMatchObject({ status: "canceled", answered: 0, answered_ms: null, billsec: 0, cost_micro: 0 });
  });

  test("a callee leg naming no user of the call's account (another account's, or none at all) names no agent", async () => {
    const t = await seedTenant(platform);
    const other = await seedTenant(platform);
    const theirs = await userIn(other.accountId);
    const foreign = await admitted(t.accountId);
    const made = await admitted(t.accountId);
    const start = (await findCallBySipId(platform.db, t.accountId, foreign))!.started_ms;
    clockAt(start + 20_000);
    await handleDialogEvents(platform, [
      { type: "dialog", callId: foreign, account_id: t.accountId, state: "confirmed", ts: start + 1000, legs: [{ role: "callee", user_id: theirs, state: "confirmed" }] },
      { type: "dialog", callId: made, account_id: t.accountId, state: "terminated", sip_code: 200, ts: start + 9000, answered_ts: start + 2000, legs: [{ role: "callee", user_id: "us_MADE_UP" }] },
    ]);
    await handleDialogEvent(platform, { type: "dialog", callId: foreign, account_id: t.accountId, state: "terminated", sip_code: 200, ts: start + 5000 });
    expect(await findCallBySipId(platform.db, t.accountId, foreign)).toMatchObject({ answered: 1, agent_id: null, status: "completed" });
    expect(await findCallBySipId(platform.db, t.accountId, made)).toMatchObject({ answered: 1, agent_id: null, status: "completed" });
    for (const e of [...(await eventsOf(t.accountId, "call.answered")), ...(await eventsOf(t.accountId, "call.ended"))]) {
      expect((e.data as { agent_id: string | null }).agent_id).toBeNull();
    }
  });

  test("overlapping batches of the same calls in other orders, at once, all go through (a deadlock's victim runs again)", async () => {
    const t = await seedTenant(platform);
    const shuffled = <T>(list: T[]) => list.map((v) => [Math.random(), v] as const).sort((a, b) => a[0] - b[0]).map(([, v]) => v);
    for (let round = 0; round < 6; round++) {
      const cids = Array.from({ length: 30 }, () => sipCallId());
      await Promise.all(cids.map((cid) => admitCall(platform, decision(t.accountId), routeRequest(cid))));
      const event = (callId: string, state: "early" | "confirmed" | "terminated") =>
        ({ type: "dialog" as const, callId, account_id: t.accountId, state, ...(state === "terminated" ? { sip_code: 200, hangup_cause: "NORMAL_CLEARING" } : {}) });
      const batches = Array.from({ length: 6 }, (_, k) =>
        shuffled(cids).flatMap((cid) => (k % 3 === 0 ? [event(cid, "early")] : k % 3 === 1 ? [event(cid, "confirmed")] : [event(cid, "early"), event(cid, "confirmed"), event(cid, "terminated")])),
      );
      const outcomes = await Promise.allSettled(batches.map((batch) => handleDialogEvents(platform, batch)));
      expect(outcomes.filter((o) => o.status === "rejected").map((o) => { const e = (o as PromiseRejectedResult).reason; return `${e?.code ?? e?.cause?.code} ${e?.cause?.message ?? e?.message}`.slice(0, 120); })).toEqual([]);
      for (const cid of cids) expect((await findCallBySipId(platform.db, t.accountId, cid))!.status).toBe("completed");
    }
  }, 60_000);

  test("a confirmed call to a user is answered by that user when the edge names no callee user", async () => {
    const t = await seedTenant(platform);
    const base = decision(t.accountId);
    const cid = await admitted(t.accountId, [], { reply: { rtjson: { ...base.reply.rtjson, vars: { direction: "internal", dest_kind: "user", dest_id: "us_CALLEE" } } } });
    await handleDialogEvent(platform, { type: "dialog", callId: cid, state: "confirmed", legs: [{ role: "caller", user_id: "us_CALLER" }, { role: "callee", uri: "sip:1002@192.0.2.7", state: "confirmed" }] });
    expect(await findCallBySipId(platform.db, t.accountId, cid)).toMatchObject({ answered: 1, agent_id: "us_CALLEE" });
    // After the edge's failover (the user's phone busy, the voicemail answering): nobody is guessed.
    const failedOver = await admitted(t.accountId, [], { reply: { rtjson: { ...base.reply.rtjson, vars: { direction: "internal", dest_kind: "user", dest_id: "us_CALLEE" } } } });
    await handleDialogEvent(platform, { type: "dialog", callId: failedOver, state: "confirmed", failover: "voicemail:vm_1", legs: [{ role: "caller", user_id: "us_CALLER" }, { role: "callee", uri: "sip:1002@192.0.2.7", state: "confirmed" }] });
    expect(await findCallBySipId(platform.db, t.accountId, failedOver)).toMatchObject({ answered: 1, agent_id: null });
    // Not a user destination (a trunk, a flow): no agent guessed.
    const out = await admitted(t.accountId);
    await handleDialogEvent(platform, { type: "dialog", callId: out, state: "confirmed" });
    expect(await findCallBySipId(platform.db, t.accountId, out)).toMatchObject({ answered: 1, agent_id: null });
  });
});

describe(`calls whose end was never reported [${storeKind}]`, () => {
  test("closed at the call ceiling: not billed, RECOVERY_ON_TIMER_EXPIRE, call.ended, slots and the users' call state freed; a late end changes nothing", async () => {
    const t = await seedTenant(platform);
    await defaultRatePlan(t.accountId, [{ prefix: "", direction: "any", per_minute_micro: 100_000, initial_sec: 1, increment_sec: 1, connection_fee_micro: 5_000 }]);
    const ceiling = platform.config.cacMaxCallSec * 1000;
    const s = [slot("account_out", t.accountId, 5)];
    const [answered, ringing, fresh] = [sipCallId(), sipCallId(), sipCallId()];
    for (const cid of [answered, ringing, fresh]) await admitCall(platform, decision(t.accountId, { slots: s }), routeRequest(cid));
    const a0 = (await findCallBySipId(platform.db, t.accountId, answered))!;
    // Ten minutes on (the events below have happened by then).
    clockAt(a0.started_ms + 600_000);
    await handleDialogEvent(platform, { type: "dialog", callId: answered, state: "confirmed", ts: a0.started_ms + 2_000 });
    await handleDialogEvent(platform, { type: "dialog", callId: ringing, state: "early" });
    // Answered ten minutes in: its ceiling runs from then.
    await handleDialogEvent(platform, { type: "dialog", callId: fresh, state: "confirmed", ts: a0.started_ms + 600_000 });
    await trackDialog(platform.live, t.accountId, answered, "confirmed", ["us_LOST"], Date.now());
    expect(await userCallCount(platform.live, t.accountId, "us_LOST")).toBe(1);

    // Up to these calls' ceiling: none of them closes (calls of earlier tests, started before, may).
    await endStaleCalls(platform, a0.started_ms + ceiling);
    expect((await findCallBySipId(platform.db, t.accountId, ringing))!.ended_ms).toBeNull();

    // Past the ringing call's ceiling (counted from its start), not the answered one's (from its answer).
    expect(await endStaleCalls(platform, a0.started_ms + ceiling + 1_000)).toBe(1);
    const r = (await findCallBySipId(platform.db, t.accountId, ringing))!;
    expect(r).toMatchObject({ status: "failed", hangup_cause: LOST_END_CAUSE, billsec: 0, cost_micro: 0 });
    expect(r.ended_ms).toBe(r.started_ms + ceiling);
    expect((await findCallBySipId(platform.db, t.accountId, answered))!.ended_ms).toBeNull();

    // Past the answered call's: closed at answer + ceiling, not billed though answered.
    expect(await endStaleCalls(platform, a0.started_ms + 2_000 + ceiling + 1_000)).toBe(1);
    const a = (await findCallBySipId(platform.db, t.accountId, answered))!;
    expect(a).toMatchObject({ status: "completed", answered: 1, hangup_cause: LOST_END_CAUSE, billsec: 0, cost_micro: 0 });
    expect(a.ended_ms).toBe(a0.started_ms + 2_000 + ceiling);
    const trace = await listTrace(platform.db, t.accountId, a.id);
    expect(trace.at(-1)).toMatchObject({ step: "dialog", result: `terminated: ${LOST_END_CAUSE}, billsec 0` });
    expect(trace.at(-1)!.data).toMatchObject({ unbilled: "the end was never reported" });
    const ends = (await eventsOf(t.accountId, "call.ended")).map((e) => e.data as { callId: string; hangup_cause: string; billsec: number });
    expect(ends.map((e) => e.callId).sort()).toEqual([a.id, r.id].sort());
    for (const e of ends) expect(e).toMatchObject({ hangup_cause: LOST_END_CAUSE, billsec: 0 });
    expect(await userCallCount(platform.live, t.accountId, "us_LOST")).toBe(0);
    // The call answered later keeps its slot, the only one left.
    expect((await cacSnapshot(platform.live, t.accountId)).map((c) => c.active)).toEqual([1]);

    // The real end arriving afterwards changes nothing; the sweep closes nothing twice.
    await handleDialogEvent(platform, { type: "dialog", callId: answered, state: "terminated", sip_code: 200, ts: a0.started_ms + 60_000 });
    expect(await findCallBySipId(platform.db, t.accountId, answered)).toEqual(a);
    expect(await endStaleCalls(platform, a0.started_ms + 2_000 + ceiling + 1_000)).toBe(0);
    expect(await eventsOf(t.accountId, "call.ended")).toHaveLength(2);
    expect((await findCallBySipId(platform.db, t.accountId, fresh))!.ended_ms).toBeNull();
  });

  test("the sweeper closes them on its own", async () => {
    const t = await seedTenant(platform);
    const short = await testPlatform();
    short.config.cacMaxCallSec = 1;
    const sweeper = startStaleCallSweeper(short, 100);
    try {
      const cid = sipCallId();
      await admitCall(short, decision(t.accountId), routeRequest(cid));
      const deadline = Date.now() + 5_000;
      while ((await findCallBySipId(short.db, t.accountId, cid))!.ended_ms === null && Date.now() < deadline) await Bun.sleep(100);
      expect(await findCallBySipId(short.db, t.accountId, cid)).toMatchObject({ status: "failed", hangup_cause: LOST_END_CAUSE });
    } finally {
      sweeper.stop();
      await short.close();
    }
  });
});

describe(`CAC expiry, reset and instances [${storeKind}]`, () => {
  test("a leaked slot expires after the call ceiling", async () => {
    const t = await seedTenant(platform);
    const short = await testPlatform();
    short.config.cacMaxCallSec = 1;
    try {
      const s = [slot("trunk", "trk_LEAK", 1)];
      expect((await admitCall(short, decision(t.accountId, { slots: s }), routeRequest(sipCallId()))).rtjson.action).toBe("outbound");
      expect((await admitCall(short, decision(t.accountId, { slots: s }), routeRequest(sipCallId()))).rtjson.action).toBe("reject");
      await Bun.sleep(1_100);
      expect(await cacSnapshot(short.live, t.accountId)).toEqual([]);
      expect((await admitCall(short, decision(t.accountId, { slots: s }), routeRequest(sipCallId()))).rtjson.action).toBe("outbound");
    } finally {
      await short.close();
    }
  });

  test("reset clears the account's counters only", async () => {
    const a = await seedTenant(platform);
    const b = await seedTenant(platform);
    await admitCall(platform, decision(a.accountId, { slots: [slot("account_out", a.accountId, 1), slot("user", "us_R", 1)] }), routeRequest(sipCallId()));
    await admitCall(platform, decision(b.accountId, { slots: [slot("account_out", b.accountId, 1)] }), routeRequest(sipCallId()));
    expect(await resetCac(platform.live, a.accountId)).toEqual({ counters: 2, calls: 2 });
    expect(await cacSnapshot(platform.live, a.accountId)).toEqual([]);
    expect(await cacSnapshot(platform.live, b.accountId)).toHaveLength(1);
    expect((await admitCall(platform, decision(a.accountId, { slots: [slot("account_out", a.accountId, 1)] }), routeRequest(sipCallId()))).rtjson.action).toBe("outbound");
  });

  // In-process state belongs to one process: two instances share counters only through Redis.
  test.skipIf(!process.env.TEST_REDIS_URL)("two instances share the counters (Redis)", async () => {
    const t = await seedTenant(platform);
    const otherLive: LiveStore = await openLiveStore(process.env.TEST_REDIS_URL!);
    expect(otherLive).not.toBe(platform.live);
    const other = await testPlatform({ live: otherLive });
    try {
      const s = [slot("account_in", t.accountId, 1)];
      const first = await admitCall(platform, decision(t.accountId, { slots: s }), routeRequest(sipCallId()));
      expect(first.rtjson.action).toBe("outbound");
      expect((await admitCall(other, decision(t.accountId, { slots: s }), routeRequest(sipCallId()))).rtjson.code).toBe(503);
      // Released on one instance, free on the other.
      const cid = (await cacSnapshot(other.live, t.accountId))[0]!.call_ids[0]!;
      const row = (await platform.db.select().from((await import("./calls.schema.ts")).callRecords).where(eq((await import("./calls.schema.ts")).callRecords.id, cid)))[0]!;
      await handleDialogEvent(other, { type: "dialog", callId: row.sip_call_id, state: "terminated" });
      expect((await admitCall(platform, decision(t.accountId, { slots: s }), routeRequest(sipCallId()))).rtjson.action).toBe("outbound");
    } finally {
      await other.close();
      await otherLive.close();
    }
  });

  test("acquireSlots never over-admits under concurrency", async () => {
    const t = await seedTenant(platform);
    const s = [slot("account_out", t.accountId, 3)];
    const results = await Promise.all(Array.from({ length: 12 }, (_, i) => acquireSlots(platform.live, t.accountId, `call_${i}`, s, 60_000)));
    const admittedCount = results.filter((r) => r.ok).length;
    expect(admittedCount).toBeGreaterThanOrEqual(1);
    expect(admittedCount).toBeLessThanOrEqual(3);
    expect((await cacSnapshot(platform.live, t.accountId))[0]!.active).toBe(admittedCount);
  });
});

describe(`monthStartMs [${storeKind}]`, () => {
  test("the first instant of the month in the account's zone, also when its midnight happens twice (Havana, 1 November 2026)", async () => {
    const at = (iso: string) => Date.parse(iso);
    const cases: Array<[string, string, string]> = [
      ["UTC", "2026-11-15T12:00:00Z", "2026-11-01T00:00:00Z"],
      ["Asia/Kolkata", "2026-11-15T12:00:00Z", "2026-10-31T18:30:00Z"],
      ["America/New_York", "2026-11-15T12:00:00Z", "2026-11-01T04:00:00Z"],
      // Clocks go back from 01:00 CDT to 00:00 CST: local midnight is 04:00Z and 05:00Z; the month began at the first.
      ["America/Havana", "2026-11-01T04:30:00Z", "2026-11-01T04:00:00Z"],
      ["America/Havana", "2026-11-15T12:00:00Z", "2026-11-01T04:00:00Z"],
      ["America/Havana", "2026-12-15T12:00:00Z", "2026-12-01T05:00:00Z"],
    ];
    for (const [zone, now, start] of cases) expect(await monthStartMs(platform.db, zone, at(now)), `${zone} ${now}`).toBe(at(start));
  });
});
