/** GET /v1/calls (+csv), /v1/calls/{id}(/trace), POST /v1/cac/reset, /v1/usage, /v1/balance, /v1/live(/interactions). */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Platform } from "../../core/platform.ts";
import { createPublicApp } from "../app.ts";
import { callRoutes, MAX_EXPORTS_PER_ACCOUNT } from "./calls.ts";
import { usageRoutes } from "./usage.ts";
import { keyWithScopes, seedTenant, storeKind, testPlatform } from "../../../test/support/platform.ts";
import { call, type Json } from "../../../test/support/http.ts";
import { newId } from "../../core/ids/ids.ts";
import { nowSeconds } from "../../core/db/columns.ts";
import { callRecords } from "../../core/calls/calls.schema.ts";
import { admitCall } from "../../core/calls/admission.ts";
import { acquireSlots } from "../../core/cac/cac.service.ts";
import { cacTtlMs } from "../../core/calls/cac-config.ts";
import { handleDialogEvent } from "../../core/calls/dialog.ts";
import { decision, routeRequest, sipCallId } from "../../core/calls/calls.fixture.ts";
import { findCallBySipId } from "../../core/calls/calls.store.ts";
import { and, eq } from "drizzle-orm";
import { insertRatePlan } from "../../core/rates/rates.store.ts";
import { updateAccount } from "../../core/accounts/accounts.store.ts";
import { CSV_PAGE } from "../../core/calls/calls.service.ts";
import { createUser } from "../../core/users/users.service.ts";
import { createConsoleUser, login } from "../../core/auth/auth.service.ts";
import { createQueue } from "../../core/queues/queues.service.ts";
import { handleAgent } from "../../core/presence/presence-events.ts";
import { listenControl } from "../../control/routes/control-listener.fixture.ts";
import { cacRoutes } from "../../control/routes/cac.ts";

let platform: Platform;
let app: ReturnType<typeof createPublicApp>;

beforeAll(async () => {
  platform = await testPlatform();
  app = createPublicApp(platform, [callRoutes, usageRoutes]);
});
afterAll(() => platform.close());

/** Ended calls written directly (fast): `n` calls one second apart from `startSec`. */
async function seedCalls(accountId: string, n: number, startSec: number, over: (i: number) => Partial<typeof callRecords.$inferInsert> = () => ({})) {
  const rows = Array.from({ length: n }, (_, i) => {
    const started = (startSec + i) * 1000;
    return {
      account_id: accountId,
      id: newId("call"),
      sip_call_id: sipCallId(),
      direction: "outbound",
      from: "14155550123",
      to: `4420712345${String(i % 100).padStart(2, "0")}`,
      status: "completed",
      answered: 1,
      started_ms: started,
      answered_ms: started + 2000,
      ended_ms: started + 62_000,
      billsec: 60,
      hangup_cause: "NORMAL_CLEARING",
      cost_micro: 1000,
      currency: "USD",
      reply: { rtjson: { action: "outbound" as const, account_id: accountId, flow_id: null, vars: {} } },
      ...over(i),
    };
  });
  for (let i = 0; i < rows.length; i += 500) await platform.db.insert(callRecords).values(rows.slice(i, i + 500));
  return rows;
}

function parseCsv(text: string): string[][] {
  const rows: string[][] = [];
  let row: string[] = [];
  let cell = "";
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (quoted) {
      if (c === '"' && text[i + 1] === '"') (cell += '"'), i++;
      else if (c === '"') quoted = false;
      else cell += c;
    } else if (c === '"') quoted = true;
    else if (c === ",") row.push(cell), (cell = "");
    else if (c === "\r" && text[i + 1] === "\n") {
      row.push(cell), rows.push(row), (row = []), (cell = ""), i++;
    } else cell += c;
  }
  return rows;
}

describe(`GET /v1/calls [${storeKind}]`, () => {
  test("newest first, keyset pages, range and filters", async () => {
    const t = await seedTenant(platform);
    const rows = await seedCalls(t.accountId, 5, 1_700_000_000, (i) => ({ direction: i % 2 ? "inbound" : "outbound", user_id: i === 4 ? "us_F" : null }));
    const first = await call(app, "GET", "/v1/calls?limit=2", { key: t.key });
    expect(first.status).toBe(200);
    expect(first.body.data.map((c: Json) => c.id)).toEqual([rows[4]!.id, rows[3]!.id]);
    expect(first.body.data[0]).toMatchObject({ started_at: 1_700_000_004, answered_at: 1_700_000_006, ended_at: 1_700_000_066, billsec: 60, duration_sec: 62, cost_micro: 1000 });
    const second = await call(app, "GET", `/v1/calls?limit=2&cursor=${first.body.next_cursor}`, { key: t.key });
    const third = await call(app, "GET", `/v1/calls?limit=2&cursor=${second.body.next_cursor}`, { key: t.key });
    expect(second.body.data.map((c: Json) => c.id)).toEqual([rows[2]!.id, rows[1]!.id]);
    expect(third.body.data.map((c: Json) => c.id)).toEqual([rows[0]!.id]);
    expect(third.body.next_cursor).toBeUndefined();
    const ranged = await call(app, "GET", "/v1/calls?since=1700000001&until=1700000003", { key: t.key });
    expect(ranged.body.data.map((c: Json) => c.id)).toEqual([rows[2]!.id, rows[1]!.id]);
    const inbound = await call(app, "GET", "/v1/calls?direction=inbound", { key: t.key });
    expect(inbound.body.data.map((c: Json) => c.id)).toEqual([rows[3]!.id, rows[1]!.id]);
    const byUser = await call(app, "GET", "/v1/calls?user_id=us_F", { key: t.key });
    expect(byUser.body.data.map((c: Json) => c.id)).toEqual([rows[4]!.id]);
  });

  test("a next_cursor sent back alone continues the same listing (its range and filters); repeated with other filters it is a 400", async () => {
    const t = await seedTenant(platform);
    const rows = await seedCalls(t.accountId, 6, 1_700_000_000, (i) => ({ direction: i % 2 ? "inbound" : "outbound" }));
    const first = await call(app, "GET", "/v1/calls?since=1700000001&until=1700000005&limit=2", { key: t.key });
    expect(first.body.data.map((c: Json) => c.id)).toEqual([rows[4]!.id, rows[3]!.id]);
    const second = await call(app, "GET", `/v1/calls?cursor=${first.body.next_cursor}&limit=2`, { key: t.key });
    expect(second.body.data.map((c: Json) => c.id)).toEqual([rows[2]!.id, rows[1]!.id]);
    const last = await call(app, "GET", `/v1/calls?cursor=${second.body.next_cursor}&limit=2`, { key: t.key });
    expect(last.body.data).toEqual([]);
    // The same filters again are fine; other ones, or one the listing did not have, are refused.
    const same = await call(app, "GET", `/v1/calls?since=1700000001&until=1700000005&cursor=${first.body.next_cursor}&limit=2`, { key: t.key });
    expect(same.body.data.map((c: Json) => c.id)).toEqual([rows[2]!.id, rows[1]!.id]);
    const inbound = await call(app, "GET", "/v1/calls?direction=inbound&limit=1", { key: t.key });
    expect(inbound.body.data.map((c: Json) => c.id)).toEqual([rows[5]!.id]);
    expect((await call(app, "GET", `/v1/calls?cursor=${inbound.body.next_cursor}&limit=1`, { key: t.key })).body.data.map((c: Json) => c.id)).toEqual([rows[3]!.id]);
    for (const q of [`direction=outbound&cursor=${inbound.body.next_cursor}`, `user_id=us_X&cursor=${inbound.body.next_cursor}`]) {
      const r = await call(app, "GET", `/v1/calls?${q}&limit=1`, { key: t.key });
      expect(r.status, q).toBe(400);
      expect(r.body.details.map((d: { path: string }) => d.path)).toEqual(["/query/cursor"]);
    }
    // Every filter at once, the longest ids: the cursor carrying them is taken back.
    const long = `us_${"X".repeat(61)}`;
    const all = `since=1700000000&until=1700000009&direction=inbound&user_id=${long}&number_id=${`num_${"Y".repeat(60)}`}&limit=1`;
    await platform.db.update(callRecords).set({ user_id: long }).where(eq(callRecords.account_id, t.accountId));
    const filtered = await call(app, "GET", `/v1/calls?${all}`, { key: t.key });
    expect(filtered.status, JSON.stringify(filtered.body)).toBe(200);
    const wide = await call(app, "GET", "/v1/calls?since=1700000000&until=1700000009&direction=inbound&user_id=" + long + "&limit=1", { key: t.key });
    expect(wide.body.next_cursor.length).toBeGreaterThan(200);
    const onward = await call(app, "GET", `/v1/calls?cursor=${wide.body.next_cursor}&limit=1`, { key: t.key });
    expect(onward.status, JSON.stringify(onward.body)).toBe(200);
    expect(onward.body.data.map((c: Json) => c.id)).toEqual([rows[3]!.id]);
    // A made-up cursor's filters are checked like the query's.
    const forged = Buffer.from(`f1:${JSON.stringify({ c: Buffer.from(`k1:1700000000000:${rows[0]!.id}`).toString("base64url"), q: { direction: "sideways" } })}`).toString("base64url");
    const refused = await call(app, "GET", `/v1/calls?cursor=${forged}`, { key: t.key });
    expect(refused.status).toBe(400);
    expect(refused.body.details.map((d: { path: string }) => d.path)).toEqual(["/query/direction"]);
  });

  test("a call admitted and ended through the call path, its detail and trace", async () => {
    const t = await seedTenant(platform);
    const cid = sipCallId();
    const reply = await admitCall(platform, decision(t.accountId, { slots: [{ level: "account_out", id: t.accountId, limit: 5 }] }), routeRequest(cid));
    const id = reply.rtjson.vars.call_id as string;
    await handleDialogEvent(platform, { type: "dialog", callId: cid, state: "confirmed" });
    await handleDialogEvent(platform, { type: "dialog", callId: cid, state: "terminated", sip_code: 200 });
    const detail = await call(app, "GET", `/v1/calls/${id}`, { key: t.key });
    expect(detail.status).toBe(200);
    expect(detail.body.data).toMatchObject({ id, sip_call_id: cid, status: "completed", answered: 1, hangup_cause: "NORMAL_CLEARING", recording_ids: [] });
    const trace = await call(app, "GET", `/v1/calls/${id}/trace`, { key: t.key });
    expect(trace.body.data.steps.map((s: Json) => s.step)).toEqual(["classify", "outbound_route", "cac", "dialog", "dialog"]);
    expect(trace.body.data.steps[4].result).toContain("NORMAL_CLEARING");
  });

  test("errors: 400 bad cursor / reversed range / over-limit; 401; 403 without cdr; 404 for another account's call", async () => {
    const t = await seedTenant(platform);
    const other = await seedTenant(platform);
    const [row] = await seedCalls(other.accountId, 1, 1_700_000_000);
    for (const q of ["cursor=abc", "since=10&until=5", "limit=501", "direction=sideways", "format=xml", "bogus=1", "until=1e20", "since=253402300800", "until=99999999999999999999"]) {
      const r = await call(app, "GET", `/v1/calls?${q}`, { key: t.key });
      expect(r.status, q).toBe(400);
      expect(r.body.error).toBe("validation_failed");
    }
    // A choice names every value it accepts, not only the first.
    const choices: Array<[string, string, string]> = [
      ["format", "xml", "Expected one of 'json' or 'csv'."],
      ["direction", "sideways", "Expected one of 'inbound', 'outbound' or 'internal'."],
    ];
    for (const [name, value, message] of choices) {
      const r = await call(app, "GET", `/v1/calls?${name}=${value}`, { key: t.key });
      expect(r.body.details, name).toEqual([{ path: `/query/${name}`, message }]);
    }
    // A whole number is written in decimal digits: other notations Number() would read are refused,
    // named by their field, not taken as another number than the text says.
    for (const q of ["limit=0x3", "limit=0b11", "limit=0o7", "limit=1e1", "limit=3.", "limit=%203%20", "since=%2B5", "since=0x6A000000", "limit=1.5"]) {
      const r = await call(app, "GET", `/v1/calls?${q}`, { key: t.key });
      expect(r.status, q).toBe(400);
      expect(r.body.details.map((d: Json) => d.path), q).toEqual([`/query/${q.split("=")[0]}`]);
    }
    expect((await call(app, "GET", "/v1/calls?limit=03", { key: t.key })).status).toBe(200);
    // A bound broken by a number written another way is still named by its field.
    for (const [q, path] of [["until=1e20", "/query/until"], ["since=2.534023008e11", "/query/since"], ["limit=0501", "/query/limit"]]) {
      const r = await call(app, "GET", `/v1/calls?${q}`, { key: t.key });
      expect(r.body.details.map((d: Json) => d.path), q).toEqual([path]);
    }
    expect((await call(app, "GET", "/v1/calls")).status).toBe(401);
    const noScope = await keyWithScopes(platform, t.accountId, ["usage"]);
    const denied = await call(app, "GET", "/v1/calls", { key: noScope });
    expect(denied.status).toBe(403);
    expect(denied.body.need).toBe("cdr");
    expect((await call(app, "GET", `/v1/calls/${row!.id}`, { key: t.key })).status).toBe(404);
    expect((await call(app, "GET", `/v1/calls/${row!.id}/trace`, { key: t.key })).status).toBe(404);
    expect((await call(app, "GET", "/v1/calls", { key: t.key })).body.data).toEqual([]);
    expect((await call(app, "GET", `/v1/calls/${row!.id}`, { key: other.key })).status).toBe(200);
  });
});

describe(`GET /v1/calls?format=csv [${storeKind}]`, () => {
  test("streams a range bigger than one page, RFC 4180 quoting, formula injection guarded", async () => {
    const t = await seedTenant(platform);
    const n = CSV_PAGE + 7; // more than one page
    const rows = await seedCalls(t.accountId, n, 1_710_000_000, (i) =>
      i === 0 ? { from: '=HYPERLINK("http://evil.test","x")', to: "+14155557700" } : i === 1 ? { from: 'Smith, "Bob"\nJr', to: "@SUM(A1)" } : i === 2 ? { from: "-2+3" } : i === 3 ? { to: "", hangup_cause: null } : i === 4 ? { status: "answered", ended_ms: null, billsec: 0 } : i === 5 ? { from: "  =SUM(A1)", to: " Smith" } : i === 6 ? { agent_id: 'x,"=cmd"\r\nfoo' } : {},
    );
    const r = await app.handle(new Request("http://localhost/v1/calls?format=csv&since=1710000000", { headers: { "x-api-key": t.key } }));
    expect(r.status).toBe(200);
    expect(r.headers.get("content-type")).toBe("text/csv; charset=utf-8");
    expect(r.headers.get("ratelimit-limit")).not.toBeNull();
    expect(r.headers.get("content-length")).toBeNull();
    // Streamed: the body arrives in pieces as the rows are read, not as one text built in memory.
    const chunks: Uint8Array[] = [];
    const reader = r.body!.getReader();
    for (let next = await reader.read(); !next.done; next = await reader.read()) chunks.push(next.value);
    expect(chunks.length).toBeGreaterThan(1);
    const text = Buffer.concat(chunks).toString("utf8");
    const table = parseCsv(text);
    expect(table[0]!.slice(0, 5)).toEqual(["id", "sip_call_id", "direction", "from", "to"]);
    expect(table.length).toBe(n + 1);
    expect(new Set(table.slice(1).map((line) => line[0])).size).toBe(n);
    expect(table[1]![0]).toBe(rows[n - 1]!.id);
    const byId = new Map(table.slice(1).map((line) => [line[0], line]));
    expect(byId.get(rows[0]!.id)!.slice(3, 5)).toEqual(['\'=HYPERLINK("http://evil.test","x")', "'+14155557700"]);
    expect(byId.get(rows[1]!.id)!.slice(3, 5)).toEqual(['Smith, "Bob"\nJr', "'@SUM(A1)"]);
    expect(byId.get(rows[2]!.id)![3]).toBe("'-2+3");
    // Spaces before the formula do not hide it; a space before plain text changes nothing.
    expect(byId.get(rows[5]!.id)!.slice(3, 5)).toEqual(["'  =SUM(A1)", " Smith"]);
    // agent_id too (records written before it was checked against the account's users held the edge's text).
    expect(byId.get(rows[6]!.id)![table[0]!.indexOf("agent_id")]).toBe('x,"=cmd"\r\nfoo');
    expect(text).toContain('"Smith, ""Bob""\nJr"');
    // An empty text is "" and a missing one nothing, the same bytes on both stores (COPY's way).
    const line3 = text.split("\r\n").find((l) => l.startsWith(`${rows[3]!.id},`))!;
    expect(line3.split(",")[4]).toBe('""');
    expect(line3.split(",")[12]).toBe("");
    // A call still up has no end and no duration yet (empty cells, as null in JSON), an ended one its seconds.
    const up = byId.get(rows[4]!.id)!;
    const columns = table[0]!;
    expect([up[columns.indexOf("ended_at")], up[columns.indexOf("duration_sec")]]).toEqual(["", ""]);
    expect(byId.get(rows[5]!.id)![columns.indexOf("duration_sec")]).toBe("62");
    // Every row has every column.
    expect(table.every((line) => line.length === table[0]!.length)).toBe(true);
  });

  test("a reversed range is a 400 before any CSV is sent; an empty range is a header line", async () => {
    const t = await seedTenant(platform);
    expect((await call(app, "GET", "/v1/calls?format=csv&since=10&until=5", { key: t.key })).status).toBe(400);
    // Page parameters do not apply to the export: refused, not ignored.
    const paged = await call(app, "GET", "/v1/calls?format=csv&limit=2&cursor=abc", { key: t.key });
    expect(paged.status).toBe(400);
    expect(paged.body.details.map((d: { path: string }) => d.path)).toEqual(["/query/limit", "/query/cursor"]);
    const empty = await call(app, "GET", "/v1/calls?format=csv", { key: t.key });
    expect(empty.text.split("\r\n").filter(Boolean)).toHaveLength(1);
    // An empty cursor is the first page, as docs/api-conventions.md says: for the export too.
    expect((await call(app, "GET", "/v1/calls?format=csv&cursor=", { key: t.key })).status).toBe(200);
  });

  test(`an account runs at most ${MAX_EXPORTS_PER_ACCOUNT} exports at once: one more is a 429 (its slow downloads cannot hold every export connection); a finished or cancelled one makes room`, async () => {
    const t = await seedTenant(platform);
    const other = await seedTenant(platform);
    await seedCalls(t.accountId, 3, 1_710_200_000);
    const exportOf = (key: string) => app.handle(new Request("http://localhost/v1/calls?format=csv", { headers: { "x-api-key": key } }));
    // Started, not read.
    const held = [await exportOf(t.key), await exportOf(t.key)];
    for (const r of held) expect(r.status).toBe(200);
    const refused = await exportOf(t.key);
    expect(refused.status).toBe(429);
    expect(refused.headers.get("retry-after")).toBe("10");
    expect(await refused.json()).toMatchObject({ ok: false, error: "rate_limited", hint: expect.stringContaining("narrow the range"), retry_after_sec: 10 });
    // Another account's export is not affected.
    const theirs = await exportOf(other.key);
    expect(theirs.status).toBe(200);
    await theirs.text();
    // One read to its end, one cancelled: room for two more.
    expect((await held[0]!.text()).split("\r\n").filter(Boolean)).toHaveLength(4);
    await held[1]!.body!.cancel();
    const next = [await exportOf(t.key), await exportOf(t.key)];
    for (const r of next) {
      expect(r.status).toBe(200);
      await r.text();
    }
  });

  test("an empty user_id or number_id filter is a 400, never every call of the account", async () => {
    const t = await seedTenant(platform);
    await seedCalls(t.accountId, 2, 1_710_100_000);
    for (const q of ["user_id=", "number_id=", "user_id=&format=csv"]) {
      const r = await call(app, "GET", `/v1/calls?${q}`, { key: t.key });
      expect(r.status, q).toBe(400);
      expect(r.body.details[0].path, q).toBe(`/query/${q.split("=")[0]}`);
    }
  });
});

describe(`usage, balance, live, CAC reset [${storeKind}]`, () => {
  test("usage without until ends at the second it reports (exclusive): a call started in the current second is in the next window, not in two", async () => {
    const t = await seedTenant(platform);
    const now = Date.now();
    // Started inside the current second (as late in it as the test allows).
    await seedCalls(t.accountId, 1, 0, () => ({ started_ms: now, answered_ms: now, ended_ms: now + 1000 }));
    const first = await call(app, "GET", `/v1/usage?since=${Math.floor(now / 1000) - 60}`, { key: t.key });
    expect(first.status).toBe(200);
    const next = await call(app, "GET", `/v1/usage?since=${first.body.data.until}&until=${first.body.data.until + 60}`, { key: t.key });
    expect(first.body.data.count + next.body.data.count).toBe(1);
  });

  test("usage totals and a daily series in the account's timezone", async () => {
    const t = await seedTenant(platform);
    await updateAccount(platform.db, t.accountId, { timezone: "America/New_York" });
    // 2024-03-10 03:30 UTC = 2024-03-09 22:30 in New York; 2024-03-10 15:00 UTC = 2024-03-10 11:00 there.
    const late = Date.UTC(2024, 2, 10, 3, 30) / 1000;
    const noon = Date.UTC(2024, 2, 10, 15, 0) / 1000;
    await seedCalls(t.accountId, 2, late, () => ({ billsec: 90, cost_micro: 1500 }));
    await seedCalls(t.accountId, 1, noon, () => ({ billsec: 30, cost_micro: 500 }));
    await seedCalls(t.accountId, 1, noon + 10, () => ({ answered: 0, billsec: 0, cost_micro: 0, status: "no_answer" }));
    await seedCalls(t.accountId, 1, noon + 20, () => ({ status: "rejected", answered: 0, billsec: 0, cost_micro: 0 }));
    const since = Date.UTC(2024, 2, 9) / 1000;
    const until = Date.UTC(2024, 2, 12) / 1000;
    const r = await call(app, "GET", `/v1/usage?since=${since}&until=${until}&daily=1`, { key: t.key });
    expect(r.status).toBe(200);
    expect(r.body.data).toMatchObject({ since, until, timezone: "America/New_York", count: 4, answered: 3, billsec: 210, minutes: 3.5, spend_micro: 3500 });
    expect(r.body.data.daily).toEqual([
      { day: "2024-03-09", count: 2, answered: 2, billsec: 180, minutes: 3, spend_micro: 3000 },
      { day: "2024-03-10", count: 2, answered: 1, billsec: 30, minutes: 0.5, spend_micro: 500 },
    ]);
    const plain = await call(app, "GET", `/v1/usage?since=${since}&until=${until}`, { key: t.key });
    expect(plain.body.data.daily).toBeUndefined();
    expect((await call(app, "GET", `/v1/usage?since=${until}&until=${since}`, { key: t.key })).status).toBe(400);
    // until alone: the month it falls in, up to it (not this month, which would end before it began).
    const monthOfUntil = await call(app, "GET", `/v1/usage?until=${until}`, { key: t.key });
    expect(monthOfUntil.status).toBe(200);
    // 2024-03-01 00:00 in New York is 05:00 UTC.
    expect(monthOfUntil.body.data).toMatchObject({ since: Date.UTC(2024, 2, 1, 5) / 1000, until, count: 4 });
    // An until in the account's first local month of 1970 (New York: before 05:00 UTC on 1 January):
    // that month starts at the epoch, not before it (it was a 500, the reply's since below 0).
    const early = await call(app, "GET", "/v1/usage?until=3600", { key: t.key });
    expect(early.status).toBe(200);
    expect(early.body.data).toMatchObject({ since: 0, until: 3600, count: 0 });
    // Past the year 9999 is a mistake, refused before the database sees it.
    for (const q of ["until=1e20", "since=0&until=99999999999999999999&daily=1"]) {
      const far = await call(app, "GET", `/v1/usage?${q}`, { key: t.key });
      expect(far.status, q).toBe(400);
      expect(far.body.error).toBe("validation_failed");
    }
    const cdrOnly = await keyWithScopes(platform, t.accountId, ["cdr"]);
    expect((await call(app, "GET", "/v1/usage", { key: cdrOnly })).status).toBe(403);
  });

  test("balance: status, rate plan, month-to-date spend", async () => {
    const t = await seedTenant(platform);
    const none = await call(app, "GET", "/v1/balance", { key: t.key });
    expect(none.body.data).toMatchObject({ status: "active", rate_plan: null, currency: null, month_to_date_spend_micro: 0 });
    const planId = newId("rp");
    await insertRatePlan(platform.db, { account_id: t.accountId, id: planId, name: "Retail", currency: "EUR", is_default: 1, rates: [], created_at: nowSeconds(), updated_at: nowSeconds() });
    await seedCalls(t.accountId, 3, nowSeconds() - 120, () => ({ cost_micro: 2500, currency: "EUR" }));
    await seedCalls(t.accountId, 1, none.body.data.month_start - 3600, () => ({ cost_micro: 99_999, currency: "EUR" }));
    const r = await call(app, "GET", "/v1/balance", { key: t.key });
    expect(r.body.data).toMatchObject({ status: "active", rate_plan: { id: planId, name: "Retail", currency: "EUR" }, currency: "EUR", month_to_date_spend_micro: 7500, month_to_date_calls: 3 });
    expect(r.body.data.month_to_date_spend_by_currency).toEqual({ EUR: 7500 });
  });

  test("spend priced in different currencies (a plan's currency changed) is never added up", async () => {
    const t = await seedTenant(platform);
    const at = nowSeconds() - 600;
    await seedCalls(t.accountId, 2, at, () => ({ cost_micro: 4000, currency: "USD" }));
    // Without a plan: one currency used is the one reported; two are reported apart only.
    expect((await call(app, "GET", "/v1/balance", { key: t.key })).body.data).toMatchObject({ currency: "USD", month_to_date_spend_micro: 8000 });
    await seedCalls(t.accountId, 1, at + 1, () => ({ cost_micro: 50_000, currency: "EUR" }));
    const mixed = (await call(app, "GET", "/v1/balance", { key: t.key })).body.data;
    expect(mixed).toMatchObject({ currency: null, month_to_date_spend_micro: 0, month_to_date_spend_by_currency: { USD: 8000, EUR: 50_000 }, month_to_date_calls: 3 });
    // With a plan in EUR: EUR spend is the figure, USD stays beside it.
    await insertRatePlan(platform.db, { account_id: t.accountId, id: newId("rp"), name: "Euro", currency: "EUR", is_default: 1, rates: [], created_at: nowSeconds(), updated_at: nowSeconds() });
    const balance = (await call(app, "GET", "/v1/balance", { key: t.key })).body.data;
    expect(balance).toMatchObject({ currency: "EUR", month_to_date_spend_micro: 50_000, month_to_date_spend_by_currency: { USD: 8000, EUR: 50_000 } });
    const usage = (await call(app, "GET", `/v1/usage?since=${at - 1}&daily=1`, { key: t.key })).body.data;
    expect(usage).toMatchObject({ currency: "EUR", count: 3, spend_micro: 50_000, spend_by_currency: { USD: 8000, EUR: 50_000 } });
    expect(usage.daily.reduce((sum: number, d: Json) => sum + d.spend_micro, 0)).toBe(50_000);
  });

  test("GET /v1/live lists the account's agents (state, pause reason) and queue configs, never another account's", async () => {
    const t = await seedTenant(platform);
    const other = await seedTenant(platform);
    const agent = await createUser(platform.db, t.accountId, { username: "301", display_name: "Ada", is_agent: 1 });
    await createUser(platform.db, t.accountId, { username: "302", display_name: "Not an agent" });
    const idle = await createUser(platform.db, t.accountId, { username: "303", display_name: "Bo", is_agent: 1 });
    await createUser(platform.db, other.accountId, { username: "301", display_name: "Theirs", is_agent: 1 });
    const sales = await createQueue(platform.db, t.accountId, { name: "Sales" });
    await createQueue(platform.db, other.accountId, { name: "Theirs" });
    await handleAgent(platform, { type: "agent", account_id: t.accountId, user_id: agent.id, event: "login", queues: [sales.id] });
    await handleAgent(platform, { type: "agent", account_id: t.accountId, user_id: agent.id, event: "pause", reason: "lunch" });
    const r = await call(app, "GET", "/v1/live", { key: t.key });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body.data.agents.map((a: Json) => [a.id, a.agent_state, a.reason])).toEqual([
      [agent.id, "paused", "lunch"],
      [idle.id, "logged_out", null],
    ]);
    expect(r.body.data.agents[0].since).toEqual(expect.any(Number));
    expect(r.body.data.queues.map((q: Json) => [q.id, q.name])).toEqual([[sales.id, "Sales"]]);
    expect(r.body.data.queues[0]).toMatchObject({ strategy: sales.strategy, max_wait_sec: sales.max_wait_sec });
    expect(r.body.data).toMatchObject({ active_calls: 0, calls: [], cac: [] });
    // No query parameters here: one is a 400 naming it, as on the lists.
    for (const path of ["/v1/live?foo=1", "/v1/live/interactions?foo=1", "/v1/balance?foo=1", "/v1/calls/call_x?foo=1", "/v1/calls/call_x/trace?foo=1"]) {
      const bad = await call(app, "GET", path, { key: t.key });
      expect(bad.status, path).toBe(400);
      expect(bad.body.details).toEqual([{ path: "/query/foo", message: expect.any(String) }]);
    }
  });

  test("GET /v1/live lists a call up now that rang or queued long before its answer, as its CAC slot counts it", async () => {
    const t = await seedTenant(platform);
    const cid = sipCallId();
    await admitCall(platform, decision(t.accountId, { slots: [{ level: "account_out", id: t.accountId, limit: 3 }] }), routeRequest(cid));
    const row = (await findCallBySipId(platform.db, t.accountId, cid))!;
    const ceiling = platform.config.cacMaxCallSec * 1000;
    // Started longer ago than the call ceiling, answered well within it: up now.
    await platform.db.update(callRecords).set({ started_ms: Date.now() - ceiling - 600_000, answered_ms: Date.now() - 60_000, answered: 1, status: "answered" })
      .where(and(eq(callRecords.account_id, t.accountId), eq(callRecords.id, row.id)));
    const live = await call(app, "GET", "/v1/live", { key: t.key });
    expect(live.body.data.calls.map((c: Json) => c.id)).toEqual([row.id]);
    expect(live.body.data.active_calls).toBe(1);
  });

  test("GET /v1/live counts every call up, also beyond the 500 it lists (the oldest)", async () => {
    const t = await seedTenant(platform);
    const now = Math.floor(Date.now() / 1000);
    const rows = await seedCalls(t.accountId, 503, now - 600, () => ({ status: "answered", ended_ms: null }));
    const live = (await call(app, "GET", "/v1/live", { key: t.key })).body.data;
    expect(live.active_calls).toBe(503);
    expect(live.calls).toHaveLength(500);
    expect(live.calls[0].id).toBe(rows[0]!.id);
    const control = listenControl(platform, [cacRoutes]);
    try {
      expect((await control.get(`/cac?accountId=${t.accountId}`)).body.data).toMatchObject({ active_calls: 503 });
    } finally {
      await control.stop();
    }
  });

  test("live snapshot, interactions and POST /v1/cac/reset", async () => {
    const t = await seedTenant(platform);
    const other = await seedTenant(platform);
    await updateAccount(platform.db, t.accountId, { max_out: 3 });
    const cid = sipCallId();
    const reply = await admitCall(platform, decision(t.accountId, { slots: [{ level: "account_out", id: t.accountId, limit: 3 }] }), routeRequest(cid));
    await admitCall(platform, decision(other.accountId, { slots: [{ level: "account_out", id: other.accountId, limit: 3 }] }), routeRequest(sipCallId()));
    const live = await call(app, "GET", "/v1/live", { key: t.key });
    expect(live.status).toBe(200);
    expect(live.body.data).toMatchObject({ active_calls: 1, ceilings: { max_in: null, max_out: 3, max_dialer: null } });
    expect(live.body.data.calls[0].id).toBe(reply.rtjson.vars.call_id);
    expect(live.body.data.cac).toEqual([{ level: "account_out", id: t.accountId, limit: 3, active: 1, call_ids: [reply.rtjson.vars.call_id] }]);
    const interactions = await call(app, "GET", "/v1/live/interactions", { key: t.key });
    expect(interactions.body.data.map((c: Json) => c.id)).toEqual([reply.rtjson.vars.call_id]);
    const cdrOnly = await keyWithScopes(platform, t.accountId, ["cdr"]);
    expect((await call(app, "GET", "/v1/live/interactions", { key: cdrOnly })).status).toBe(403);

    const noKey = await call(app, "POST", "/v1/cac/reset");
    expect(noKey.status).toBe(401);
    // It takes no fields: one naming an account, or any other body, is refused and resets nothing.
    for (const body of [{ accountId: other.accountId }, { account_id: t.accountId }, "[1,2]", "{", '"x"']) {
      const refused = await call(app, "POST", "/v1/cac/reset", { key: t.key, body });
      expect(refused.status, JSON.stringify(body)).toBe(400);
      expect(refused.body.error).toBe("validation_failed");
    }
    expect((await call(app, "GET", "/v1/live", { key: t.key })).body.data.cac).toHaveLength(1);
    // The call is up: its slot is not leaked and stays (an account's own key cannot lift the ceilings
    // its operator set by resetting them).
    const kept = await call(app, "POST", "/v1/cac/reset", { key: t.key });
    expect(kept.status).toBe(200);
    expect(kept.body.data).toEqual({ counters: 0, calls: 0 });
    expect((await call(app, "GET", "/v1/live", { key: t.key })).body.data.cac).toHaveLength(1);
    // Its record ended without the slot being released (an end event lost): leaked, and cleared.
    await platform.db.update(callRecords).set({ ended_ms: Date.now(), status: "completed" }).where(and(eq(callRecords.account_id, t.accountId), eq(callRecords.id, reply.rtjson.vars.call_id as string)));
    const reset = await call(app, "POST", "/v1/cac/reset", { key: t.key, headers: { "idempotency-key": `r-${cid}` } });
    expect(reset.status).toBe(200);
    expect(reset.body.data).toEqual({ counters: 1, calls: 1 });
    expect((await call(app, "GET", "/v1/live", { key: t.key })).body.data.cac).toEqual([]);
    expect((await call(app, "GET", "/v1/live", { key: other.key })).body.data.cac).toHaveLength(1);
    // A call being admitted holds its slots before its record is written: not leaked for a minute.
    const ttl = cacTtlMs(platform);
    const slot = [{ level: "account_out" as const, id: t.accountId, limit: 3 }];
    expect((await acquireSlots(platform.live, t.accountId, newId("call"), slot, ttl)).ok).toBe(true);
    expect((await call(app, "POST", "/v1/cac/reset", { key: t.key })).body.data).toEqual({ counters: 0, calls: 0 });
    // One taken over a minute ago whose record never came: leaked.
    expect((await acquireSlots(platform.live, t.accountId, newId("call"), slot, ttl - 61_000)).ok).toBe(true);
    expect((await call(app, "POST", "/v1/cac/reset", { key: t.key })).body.data).toEqual({ counters: 1, calls: 1 });
    expect((await call(app, "GET", "/v1/live", { key: t.key })).body.data.cac[0].active).toBe(1);

    await handleDialogEvent(platform, { type: "dialog", callId: cid, state: "terminated" });
    expect((await call(app, "GET", "/v1/live", { key: t.key })).body.data.active_calls).toBe(0);
  });
});

describe(`GET /v1/calls/mine [${storeKind}]`, () => {
  /** A console login acting as `userId` (or as no user), and its session token. */
  async function tokenOf(accountId: string, userId?: string, scopes: string[] = ["calls"]): Promise<string> {
    const email = `mine${Date.now()}${Math.floor(Math.random() * 1e6)}@example.test`;
    const password = "correct horse battery staple";
    await createConsoleUser(platform.db, { account_id: accountId, email, password, scopes, ...(userId ? { user_id: userId } : {}) });
    return (await login(platform.db, platform.tokens, { email, password })).token;
  }
  /** A call routed to `userId` (an internal call from `fromUser`, when given). */
  async function callTo(accountId: string, userId: string, fromUser: string | null = null) {
    const cid = sipCallId();
    const routed = decision(accountId, {
      direction: "internal",
      userId: fromUser,
      reply: { rtjson: { action: "proxy", account_id: accountId, flow_id: null, vars: { direction: "internal", dest_kind: "user", dest_id: userId } } },
    });
    const reply = await admitCall(platform, routed, routeRequest(cid));
    return { cid, id: reply.rtjson.vars.call_id as string };
  }

  test("the call the login's user is rung by, then answers; none once it ends", async () => {
    const t = await seedTenant(platform);
    const ann = await createUser(platform.db, t.accountId, { username: "401", display_name: "Ann", is_agent: 1 });
    const bob = await createUser(platform.db, t.accountId, { username: "402", display_name: "Bob" });
    const annToken = await tokenOf(t.accountId, ann.id);
    const bobToken = await tokenOf(t.accountId, bob.id);
    expect((await call(app, "GET", "/v1/calls/mine", { token: annToken })).status).toBe(404);

    const first = await callTo(t.accountId, ann.id, bob.id);
    const ringing = await call(app, "GET", "/v1/calls/mine", { token: annToken });
    expect(ringing.status).toBe(200);
    expect(ringing.body.data).toMatchObject({ id: first.id, direction: "internal", user_id: bob.id });
    // The caller is on it too.
    expect((await call(app, "GET", "/v1/calls/mine", { token: bobToken })).body.data.id).toBe(first.id);

    await handleDialogEvent(platform, { type: "dialog", callId: first.cid, state: "confirmed" });
    const answered = await call(app, "GET", "/v1/calls/mine", { token: annToken });
    expect(answered.body.data).toMatchObject({ id: first.id, status: "answered", agent_id: ann.id });

    await handleDialogEvent(platform, { type: "dialog", callId: first.cid, state: "terminated", sip_code: 200 });
    const after = await call(app, "GET", "/v1/calls/mine", { token: annToken });
    expect(after.status).toBe(404);
    expect(after.body).toEqual({ ok: false, error: "not_found", message: "Your user is on no call now." });
  });

  test("a call rung to the user but answered by another is not the user's", async () => {
    const t = await seedTenant(platform);
    const ann = await createUser(platform.db, t.accountId, { username: "411", display_name: "Ann" });
    const cat = await createUser(platform.db, t.accountId, { username: "412", display_name: "Cat" });
    const annToken = await tokenOf(t.accountId, ann.id);
    const placed = await callTo(t.accountId, ann.id);
    // Forwarded on no answer: the call is answered by Cat.
    await handleDialogEvent(platform, { type: "dialog", callId: placed.cid, state: "confirmed", legs: [{ role: "callee", user_id: cat.id }] } as never);
    const mine = await call(app, "GET", "/v1/calls/mine", { token: annToken });
    expect(mine.status).toBe(404);
    expect((await call(app, "GET", "/v1/calls/mine", { token: await tokenOf(t.accountId, cat.id) })).body.data.id).toBe(placed.id);
  });

  test("another account's calls are not the user's; keys and logins without a user get 404 saying why; other scopes 403", async () => {
    const t = await seedTenant(platform);
    const other = await seedTenant(platform);
    const ann = await createUser(platform.db, t.accountId, { username: "421", display_name: "Ann" });
    // Same user id text in another account: not Ann's.
    await callTo(other.accountId, ann.id);
    expect((await call(app, "GET", "/v1/calls/mine", { token: await tokenOf(t.accountId, ann.id) })).status).toBe(404);

    const key = await keyWithScopes(platform, t.accountId, ["calls"]);
    const byKey = await call(app, "GET", "/v1/calls/mine", { key });
    expect(byKey.status).toBe(404);
    expect(byKey.body).toMatchObject({ ok: false, error: "not_found" });
    expect(byKey.body.message).toContain("API key acts as no user");
    const noUser = await call(app, "GET", "/v1/calls/mine", { token: await tokenOf(t.accountId) });
    expect(noUser.status).toBe(404);
    expect(noUser.body.message).toContain("without a user_id");
    const cdrOnly = await call(app, "GET", "/v1/calls/mine", { token: await tokenOf(t.accountId, ann.id, ["cdr"]) });
    expect(cdrOnly.status).toBe(403);
    expect(cdrOnly.body).toMatchObject({ error: "forbidden", need: "calls" });
  });

  test("a login's user_id must be a user of its account", async () => {
    const t = await seedTenant(platform);
    const other = await seedTenant(platform);
    const stranger = await createUser(platform.db, other.accountId, { username: "431", display_name: "Not here" });
    const input = { account_id: t.accountId, email: `x${Date.now()}@example.test`, password: "correct horse battery staple", user_id: stranger.id };
    await expect(createConsoleUser(platform.db, input)).rejects.toMatchObject({ code: "validation_failed" });
  });
});
