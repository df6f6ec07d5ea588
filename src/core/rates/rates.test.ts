/** Rate plans: the docs/config-file.md example applied through the config file, exported back unchanged, and pricing calls. */
import { afterAll, beforeAll, describe, expect, setSystemTime, test } from "bun:test";
import type { Platform } from "../platform.ts";
import { seedTenant, storeKind, testPlatform } from "../../../test/support/platform.ts";
import { applyConfig } from "../config-file/applier.ts";
import { planConfig } from "../config-file/planner.ts";
import { exportConfig } from "../config-file/exporter.ts";
import { parseConfigText } from "../config-file/config-file.format.ts";
import { AppError } from "../errors/app-error.ts";
import { admitCall } from "../calls/admission.ts";
import { handleDialogEvent } from "../calls/dialog.ts";
import { findCallBySipId } from "../calls/calls.store.ts";
import { decision, routeRequest, sipCallId } from "../calls/calls.fixture.ts";
import { billedSeconds, defaultRatePlan, matchRate } from "./rates.service.ts";

/** The rate_plans example of docs/config-file.md, as written there. */
const doc = await Bun.file(new URL("../../../docs/config-file.md", import.meta.url)).text();
const RATE_PLAN_EXAMPLE = /### rate_plans[\s\S]*?```yaml\n([\s\S]*?)```/.exec(doc)?.[1] ?? "";

let platform: Platform;

beforeAll(async () => {
  platform = await testPlatform();
});
afterAll(() => platform.close());

describe("rating arithmetic", () => {
  test("increments and longest prefix", () => {
    expect([billedSeconds(0, 60, 60), billedSeconds(1, 60, 60), billedSeconds(60, 60, 60), billedSeconds(61, 60, 60)]).toEqual([0, 60, 60, 120]);
    expect([billedSeconds(1, 1, 1), billedSeconds(29, 30, 6), billedSeconds(31, 30, 6), billedSeconds(37, 30, 6)]).toEqual([1, 30, 36, 42]);
    const lines = [
      { prefix: "", direction: "any" as const, per_minute_micro: 1, initial_sec: 1, increment_sec: 1, connection_fee_micro: 0 },
      { prefix: "44", direction: "outbound" as const, per_minute_micro: 2, initial_sec: 1, increment_sec: 1, connection_fee_micro: 0 },
      { prefix: "44", direction: "any" as const, per_minute_micro: 3, initial_sec: 1, increment_sec: 1, connection_fee_micro: 0 },
    ];
    expect(matchRate(lines, "outbound", "+4412")?.per_minute_micro).toBe(2);
    expect(matchRate(lines, "inbound", "4412")?.per_minute_micro).toBe(3);
    expect(matchRate(lines, "inbound", "3312")?.per_minute_micro).toBe(1);
  });
});

describe(`rate_plans in the config file [${storeKind}]`, () => {
  test("the documented example applies, exports back to a no-op plan, and prices calls", async () => {
    expect(RATE_PLAN_EXAMPLE).toContain("rate_plans:");
    const t = await seedTenant(platform);
    const file = parseConfigText(RATE_PLAN_EXAMPLE, "yaml");
    const result = await applyConfig(platform.db, platform.secrets, t.accountId, file);
    expect(result.applied).toBe(1);
    expect(result.plan.resources.rate_plans.create.map((c) => c.key)).toEqual(["retail", "wholesale"]);
    const plan = await defaultRatePlan(platform.db, t.accountId);
    expect(plan).toMatchObject({ name: "retail", currency: "USD", is_default: 1 });
    expect(plan!.rates).toHaveLength(4);

    const exported = await exportConfig(platform.db, t.accountId);
    expect((await planConfig(platform.db, t.accountId, exported)).changes).toBe(0);
    expect((exported as { rate_plans: unknown[] }).rate_plans[0]).toEqual({
      name: "retail",
      currency: "USD",
      default: 1,
      rates: [
        { prefix: "", direction: "any", per_minute_micro: 50000 },
        { prefix: "1415", direction: "inbound", per_minute_micro: 3000, increment: "1/1" },
        { prefix: "44", per_minute_micro: 12000 },
        { prefix: "4420", per_minute_micro: 6000, increment: "30/6", connection_fee_micro: 1000 },
      ],
    });

    const cid = sipCallId();
    await admitCall(platform, decision(t.accountId, { to: "442079460000" }), routeRequest(cid));
    const row = (await findCallBySipId(platform.db, t.accountId, cid))!;
    // The call's events as they happen: the clock at its end (nothing is recorded after now).
    setSystemTime(new Date(row.started_ms + 31_000));
    try {
      await handleDialogEvent(platform, { type: "dialog", callId: cid, state: "confirmed", ts: row.started_ms });
      await handleDialogEvent(platform, { type: "dialog", callId: cid, state: "terminated", ts: row.started_ms + 31_000 });
    } finally {
      setSystemTime();
    }
    // 4420, 30/6: 31 s bills 36 s → 1,000 + 6,000 × 36 / 60 = 4,600.
    expect(await findCallBySipId(platform.db, t.accountId, cid)).toMatchObject({ billsec: 31, cost_micro: 4600, currency: "USD", rate_plan_id: plan!.id });

    // A changed line shows as one line leaving and one joining; moving the default is an update.
    const changed = parseConfigText(RATE_PLAN_EXAMPLE.replace("per_minute_micro: 12000", "per_minute_micro: 13000"), "yaml");
    const p2 = await planConfig(platform.db, t.accountId, changed);
    expect(p2.resources.rate_plans.update).toHaveLength(1);
    expect(p2.resources.rate_plans.update[0]!.changes).toEqual([{ field: "rates", added: ["44|outbound|13000|60/60|0"], removed: ["44|outbound|12000|60/60|0"] }]);

    // Leaving the section out deletes the plans: calls are then free.
    await applyConfig(platform.db, platform.secrets, t.accountId, { version: 1 });
    expect(await defaultRatePlan(platform.db, t.accountId)).toBeNull();
  });

  test("refused files: no default, two defaults, a prefix priced twice, bad increment or currency", async () => {
    const t = await seedTenant(platform);
    const cases: Array<[string, string]> = [
      [RATE_PLAN_EXAMPLE.replace("    default: 1\n", ""), "/rate_plans/0/default"],
      [RATE_PLAN_EXAMPLE.replace("  - name: wholesale\n    currency: USD\n", "  - name: wholesale\n    currency: USD\n    default: 1\n"), "/rate_plans/1/default"],
      [RATE_PLAN_EXAMPLE.replace('- prefix: "4420"', '- prefix: "44"'), "/rate_plans/0/rates/2/prefix"],
      [RATE_PLAN_EXAMPLE.replace("increment: 30/6", "increment: 0/6"), "/rate_plans/0/rates/2/increment"],
      [RATE_PLAN_EXAMPLE.replace("currency: USD", "currency: usd"), "/rate_plans/0/currency"],
      [RATE_PLAN_EXAMPLE.replace("name: wholesale", "name: RETAIL"), "/rate_plans/1/name"],
    ];
    for (const [text, path] of cases) {
      const error = await applyConfig(platform.db, platform.secrets, t.accountId, parseConfigText(text, "yaml")).catch((e: unknown) => e);
      expect(error, path).toBeInstanceOf(AppError);
      expect((error as AppError).status, path).toBe(400);
      expect(((error as AppError).extra.details as Array<{ path: string }>).map((d) => d.path), path).toContain(path);
    }
    expect(await defaultRatePlan(platform.db, t.accountId)).toBeNull();
  });
});
