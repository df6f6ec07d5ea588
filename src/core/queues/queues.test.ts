/** Service-level edge cases of queues: digit spellings, KPIs before CDRs, enum lists, concurrent writes. */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { sql } from "drizzle-orm";
import type { Platform } from "../platform.ts";
import { newId } from "../ids/ids.ts";
import { nowSeconds } from "../db/columns.ts";
import { seedTenant, storeKind, testPlatform } from "../../../test/support/platform.ts";
import { QueueModel } from "./queues.model.ts";
import { MEMBER_MODES, MOH_MODES, OPTION_ACTIONS, QUEUE_STRATEGIES } from "./queues.schema.ts";
import { queueKpis } from "./queue-kpis.ts";
import { MAX_QUEUE_OPTIONS, createQueue, getQueue, parseDigitParam, upsertQueueMember, upsertQueueOption } from "./queues.service.ts";

let platform: Platform;

beforeAll(async () => {
  platform = await testPlatform();
});
afterAll(() => platform.close());

describe("parseDigitParam", () => {
  test("reads every key, encoded or spelled out, and nothing else", () => {
    for (const d of "0123456789*#") expect(parseDigitParam(d)).toBe(d);
    expect(parseDigitParam("%2A")).toBe("*");
    expect(parseDigitParam("%2a")).toBe("*");
    expect(parseDigitParam("%23")).toBe("#");
    expect(parseDigitParam("star")).toBe("*");
    expect(parseDigitParam("Hash")).toBe("#");
    for (const bad of ["", "10", "a", "%", "%E0%A4%A", "%2A%2A", "pound", " 1"]) expect(parseDigitParam(bad)).toBeNull();
  });
});

describe("queue models and tables agree", () => {
  test("the request unions list exactly the values the CHECK constraints allow", () => {
    const values = (schema: { anyOf: Array<{ const: string }> }) => schema.anyOf.map((s) => s.const);
    expect(values(QueueModel.Strategy)).toEqual([...QUEUE_STRATEGIES]);
    expect(values(QueueModel.MohMode)).toEqual([...MOH_MODES]);
    expect(values(QueueModel.MemberMode)).toEqual([...MEMBER_MODES]);
    expect(values(QueueModel.OptionAction)).toEqual([...OPTION_ACTIONS]);
  });
});

describe(`queue services [${storeKind}]`, () => {
  test("queueKpis reports no calls for every queue asked, over the window asked", async () => {
    const kpis = await queueKpis(platform.db, "acc_x", ["q_a", "q_b"], 1234);
    expect([...kpis.keys()]).toEqual(["q_a", "q_b"]);
    for (const k of kpis.values()) {
      expect(k).toEqual({ since: 1234, calls_offered: 0, calls_answered: 0, calls_abandoned: 0, avg_wait_sec: null, service_level_pct: null });
    }
    expect((await queueKpis(platform.db, "acc_x", [], 0)).size).toBe(0);
  });

  test("every key of the keypad can hold an option: twelve at most", async () => {
    const t = await seedTenant(platform);
    const q = await createQueue(platform.db, t.accountId, { name: "Keypad" });
    for (const digit of "0123456789*#") {
      const { created } = await upsertQueueOption(platform.db, platform.secrets, t.accountId, q.id, { digit, action: "hangup" });
      expect(created).toBe(true);
    }
    const detail = await getQueue(platform.db, t.accountId, q.id);
    expect(detail.options.length).toBe(MAX_QUEUE_OPTIONS);
    expect(detail.options.map((o) => o.digit).join("")).toBe("0123456789*#");
  });

  test("concurrent upserts of one member: one adds, the others update, none fails", async () => {
    const t = await seedTenant(platform);
    const q = await createQueue(platform.db, t.accountId, { name: "Race" });
    const userId = newId("us");
    const now = nowSeconds();
    await platform.db.execute(
      sql`insert into app_user (account_id, id, username, display_name, is_agent, created_at, updated_at) values (${t.accountId}, ${userId}, ${"race"}, ${"Race"}, ${1}, ${now}, ${now})`,
    );
    const results = await Promise.all([1, 2, 3, 4].map((tier) => upsertQueueMember(platform.db, t.accountId, q.id, { user_id: userId, tier_level: tier })));
    expect(results.filter((r) => r.created).length).toBe(1);
    const detail = await getQueue(platform.db, t.accountId, q.id);
    expect(detail.members.length).toBe(1);
  });
});
