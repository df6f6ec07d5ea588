/**
 * The dialog path's statements are fixed texts read as raw rows (calls.store.ts, rates.service.ts,
 * presence.store.ts, delivery.store.ts): they must give what the query builder gave, with the same
 * types on both drivers (postgres.js gives a bigint as text, PGlite as a number).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { and, eq } from "drizzle-orm";
import type { Platform } from "../platform.ts";
import { seedTenant, storeKind, testPlatform } from "../../../test/support/platform.ts";
import { newId } from "../ids/ids.ts";
import { nowSeconds } from "../db/columns.ts";
import { insertRatePlan } from "../rates/rates.store.ts";
import { ratePlans } from "../rates/rates.schema.ts";
import { defaultRatePlan, defaultRatePlans } from "../rates/rates.service.ts";
import { existingAccountIds, existingUserKeys } from "../presence/presence.store.ts";
import { createUser } from "../users/users.service.ts";
import { activeSubscriptions } from "../webhooks/delivery.store.ts";
import { webhookSubscriptions } from "../webhooks/webhooks.schema.ts";
import { callRecords, type CallRecordRow } from "./calls.schema.ts";
import { findCallBySipId, findCallsBySipIds, lockLiveCalls, markAnsweredMany, markEndedMany, markRingingMany, type DialogCall } from "./calls.store.ts";
import { sipCallId } from "./calls.fixture.ts";

let platform: Platform;

beforeAll(async () => {
  platform = await testPlatform();
});
afterAll(() => platform.close());

const DIALOG_FIELDS = ["account_id", "id", "sip_call_id", "direction", "to", "started_ms", "answered", "answered_ms", "ended_ms", "billsec", "queue_id", "agent_id", "slots"] as const;

/** The dialog fields of a row the query builder read. */
const dialogView = (row: CallRecordRow): DialogCall => Object.fromEntries(DIALOG_FIELDS.map((k) => [k, row[k]])) as DialogCall;

async function newCall(accountId: string, over: Partial<CallRecordRow> = {}): Promise<CallRecordRow> {
  const sip = sipCallId();
  await platform.db.insert(callRecords).values({
    account_id: accountId,
    id: newId("call"),
    sip_call_id: sip,
    direction: "internal",
    from: "1001",
    to: "1002",
    status: "routed",
    started_ms: Date.now() - 5_000,
    slots: [{ level: "user", id: "us_A", limit: 3 }],
    reply: { rtjson: { action: "proxy" } } as never,
    ...over,
  });
  return (await findCallBySipId(platform.db, accountId, sip))!;
}

describe(`fixed-text statements of the dialog path [${storeKind}]`, () => {
  test("calls read and updated by key come back as the query builder reads them, typed", async () => {
    const t = await seedTenant(platform);
    const [a, b] = [await newCall(t.accountId), await newCall(t.accountId, { queue_id: "q_1" })];
    const one = await findCallsBySipIds(platform.db, [{ account_id: t.accountId, sip_call_id: a.sip_call_id }]);
    // As read before a round's write: also the status, the DID and the user it was routed to.
    const seenView = (row: CallRecordRow) => ({ ...dialogView(row), status: row.status, did: null, routed_user: null });
    expect(one).toEqual([seenView(a)]);
    const two = await findCallsBySipIds(platform.db, [a, b].map((c) => ({ account_id: c.account_id, sip_call_id: c.sip_call_id })));
    expect(two.sort((x, y) => x.id.localeCompare(y.id))).toEqual([seenView(a), seenView(b)].sort((x, y) => x.id.localeCompare(y.id)));
    expect(typeof one[0]!.started_ms).toBe("number");
    expect(one[0]!.slots).toEqual([{ level: "user", id: "us_A", limit: 3 }]);

    const now = Date.now();
    const ringing = await markRingingMany(platform.db, [{ account_id: t.accountId, id: a.id, ringing_ms: now }]);
    expect(ringing).toEqual([dialogView((await findCallBySipId(platform.db, t.accountId, a.sip_call_id))!)]);
    const legs = [{ role: "callee", user_id: "us_B" }];
    const answered = await markAnsweredMany(platform.db, [{ account_id: t.accountId, id: a.id, answered_ms: now + 1, agent_id: "us_B", legs }]);
    const afterAnswer = (await findCallBySipId(platform.db, t.accountId, a.sip_call_id))!;
    expect(answered).toEqual([dialogView(afterAnswer)]);
    expect(afterAnswer).toMatchObject({ status: "answered", answered: 1, answered_ms: now + 1, agent_id: "us_B", legs });
    // Answered once: a second confirmation changes nothing.
    expect(await markAnsweredMany(platform.db, [{ account_id: t.accountId, id: a.id, answered_ms: now + 9, agent_id: null, legs: null }])).toEqual([]);

    const ended = await platform.db.transaction(async (tx) => {
      const locked = await lockLiveCalls(tx, [a, b].map((c) => ({ account_id: c.account_id, id: c.id })));
      expect(locked.map((c) => c.id)).toEqual([a.id, b.id].sort());
      return markEndedMany(tx, [
        { account_id: t.accountId, id: a.id, status: "completed", ended_ms: now + 2_001, billsec: 3, hangup_cause: "NORMAL_CLEARING", sip_code: 200, cost_micro: 1_500, currency: "USD", rate_plan_id: "rp_x", legs: null },
      ]);
    });
    const afterEnd = (await findCallBySipId(platform.db, t.accountId, a.sip_call_id))!;
    expect(ended).toEqual([dialogView(afterEnd)]);
    expect(afterEnd).toMatchObject({ status: "completed", ended_ms: now + 2_001, billsec: 3, cost_micro: 1_500, currency: "USD", legs });
    // Ended once; an ended call is neither locked nor ended again.
    expect(await lockLiveCalls(platform.db, [{ account_id: t.accountId, id: a.id }])).toEqual([]);
    expect(
      await markEndedMany(platform.db, [
        { account_id: t.accountId, id: a.id, status: "failed", ended_ms: now + 9_000, billsec: 0, hangup_cause: "X", sip_code: 500, cost_micro: 0, currency: null, rate_plan_id: null, legs: null },
      ]),
    ).toEqual([]);
    // Another account's key finds nothing.
    const other = await seedTenant(platform);
    expect(await findCallsBySipIds(platform.db, [{ account_id: other.accountId, sip_call_id: b.sip_call_id }])).toEqual([]);
  });

  test("an answer or an end reported with the edge's failover names no routed user as the answerer (the locked path)", async () => {
    const t = await seedTenant(platform);
    const toUser = { reply: { rtjson: { action: "proxy", vars: { dest_kind: "user", dest_id: "us_RUNG" } } } as never };
    const [plain, failedOver, endedOver] = [await newCall(t.accountId, toUser), await newCall(t.accountId, toUser), await newCall(t.accountId, toUser)];
    const now = Date.now();
    await markAnsweredMany(platform.db, [
      { account_id: t.accountId, id: plain.id, answered_ms: now, agent_id: null, legs: null },
      { account_id: t.accountId, id: failedOver.id, answered_ms: now, agent_id: null, legs: null, no_routed: true },
    ]);
    expect((await findCallBySipId(platform.db, t.accountId, plain.sip_call_id))!.agent_id).toBe("us_RUNG");
    expect((await findCallBySipId(platform.db, t.accountId, failedOver.sip_call_id))!.agent_id).toBeNull();
    await markEndedMany(platform.db, [
      { account_id: t.accountId, id: endedOver.id, status: "completed", ended_ms: now + 2_000, billsec: 1, hangup_cause: "NORMAL_CLEARING", sip_code: 200, cost_micro: 0, currency: null, rate_plan_id: null, legs: null, answered_ms: now, agent_id: null, no_routed: true },
    ]);
    expect((await findCallBySipId(platform.db, t.accountId, endedOver.sip_call_id))).toMatchObject({ answered: 1, agent_id: null });
  });

  test("default rate plans, users, accounts and subscriptions read as the query builder reads them", async () => {
    const t = await seedTenant(platform);
    const other = await seedTenant(platform);
    const rates = [{ prefix: "44", direction: "any" as const, per_minute_micro: 20_000, initial_sec: 60, increment_sec: 60, connection_fee_micro: 0 }];
    await insertRatePlan(platform.db, { account_id: t.accountId, id: newId("rp"), name: "spare", currency: "EUR", is_default: 0, rates, created_at: nowSeconds(), updated_at: nowSeconds() });
    await insertRatePlan(platform.db, { account_id: t.accountId, id: newId("rp"), name: "standard", currency: "USD", is_default: 1, rates, created_at: nowSeconds(), updated_at: nowSeconds() });
    const [built] = await platform.db.select().from(ratePlans).where(and(eq(ratePlans.account_id, t.accountId), eq(ratePlans.is_default, 1)));
    expect(await defaultRatePlan(platform.db, t.accountId)).toEqual(built!);
    expect(await defaultRatePlan(platform.db, other.accountId)).toBeNull();
    expect([...(await defaultRatePlans(platform.db, [t.accountId, other.accountId]))]).toEqual([[t.accountId, built!]]);

    expect(await existingAccountIds(platform.db, [t.accountId])).toEqual(new Set([t.accountId]));
    expect(await existingAccountIds(platform.db, [t.accountId, other.accountId, "acc_missing"])).toEqual(new Set([t.accountId, other.accountId]));
    expect(await existingUserKeys(platform.db, [{ account_id: t.accountId, id: "us_missing" }])).toEqual(new Map());
    const agent = await createUser(platform.db, t.accountId, { username: "601", display_name: "Agent", is_agent: 1 });
    const plain = await createUser(platform.db, t.accountId, { username: "602", display_name: "Plain" });
    // is_agent comes back a number on both stores; one key alone and several keys take different texts.
    expect(await existingUserKeys(platform.db, [{ account_id: t.accountId, id: agent.id }])).toEqual(new Map([[`${t.accountId}\u0000${agent.id}`, { is_agent: 1 }]]));
    const several = [
      { account_id: t.accountId, id: agent.id },
      { account_id: t.accountId, id: plain.id },
      { account_id: other.accountId, id: plain.id },
    ];
    expect(await existingUserKeys(platform.db, several)).toEqual(
      new Map([
        [`${t.accountId}\u0000${agent.id}`, { is_agent: 1 }],
        [`${t.accountId}\u0000${plain.id}`, { is_agent: 0 }],
      ]),
    );

    await platform.db.insert(webhookSubscriptions).values([
      { account_id: t.accountId, id: newId("wh"), url: "https://a.example.com/h", events: ["call.ended", "call.started"], created_at: nowSeconds(), updated_at: nowSeconds() },
      { account_id: t.accountId, id: newId("wh"), url: "https://b.example.com/h", events: ["*"], status: "disabled", created_at: nowSeconds(), updated_at: nowSeconds() },
      { account_id: other.accountId, id: newId("wh"), url: "https://c.example.com/h", events: ["*"], created_at: nowSeconds(), updated_at: nowSeconds() },
    ]);
    const active = await activeSubscriptions(platform.db, [t.accountId]);
    expect(active.map((s) => s.events)).toEqual([["call.ended", "call.started"]]);
    expect((await activeSubscriptions(platform.db, [t.accountId, other.accountId])).map((s) => s.account_id).sort()).toEqual([t.accountId, other.accountId].sort());
  });
});
