/**
 * Scenario: one fresh account builds a whole contact center through the public API (/v1) and the
 * config file (POST /admin/config/apply on the control host), then checks that what it reads back,
 * page by page, is exactly what it built; that in-use resources refuse deletion; that the config export
 * re-applies as an empty plan without leaking a secret; and that a second account sees none of it.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createConfig, lintFromString } from "@redocly/openapi-core";
import type { Platform } from "../../src/core/platform.ts";
import { createPublicApp } from "../../src/public/app.ts";
import { createControlApp } from "../../src/control/app.ts";
import { buildWav } from "../../src/core/media/audio-fixtures.ts";
import { seedTenant, storeKind, TEST_ADMIN_TOKEN, testPlatform, type Tenant } from "../support/platform.ts";
import { call, type Json } from "../support/http.ts";

const ENV_VAR = "SCENARIO_CARRIER_PASSWORD";
const CARRIER_PASSWORD = `carrier-secret-${crypto.randomUUID()}`;
const DEVICE_PASSWORD = "device-pass-0123456789";
const admin = { "x-admin-token": TEST_ADMIN_TOKEN };

let platform: Platform;
let api: ReturnType<typeof createPublicApp>;
let control: ReturnType<typeof createControlApp>;
const savedEnv = process.env[ENV_VAR];

beforeAll(async () => {
  platform = await testPlatform();
  api = createPublicApp(platform);
  control = createControlApp(platform);
  process.env[ENV_VAR] = CARRIER_PASSWORD;
});
afterAll(async () => {
  if (savedEnv === undefined) delete process.env[ENV_VAR];
  else process.env[ENV_VAR] = savedEnv;
  await platform.close();
});

/** id → a stable symbolic name ("queue:sales"), so snapshots can be compared ids aside. */
const names = new Map<string, string>();
/** Every create request, by resource, as sent (ids replaced by their symbolic names when compared). */
const sent: Record<string, Json[]> = {};
let createCount = 0;

async function create(key: string, path: string, body: Json, label: string, resource: string): Promise<Json> {
  const r = await call(api, "POST", path, { key, body });
  expect(r.status, `POST ${path} ${label}: ${r.text}`).toBe(201);
  createCount++;
  const data = r.body.data as Json;
  if (data.id) names.set(data.id as string, label);
  (sent[resource] ??= []).push(body);
  return data;
}

/** Walks a list with limit=20; returns every item and the number of pages read. */
async function listAll(key: string, path: string): Promise<{ items: Json[]; pages: number }> {
  const items: Json[] = [];
  let cursor: string | undefined;
  let pages = 0;
  do {
    const sep = path.includes("?") ? "&" : "?";
    const r = await call(api, "GET", `${path}${sep}limit=20${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`, { key });
    expect(r.status, `GET ${path}: ${r.text}`).toBe(200);
    const page = r.body.data as Json[];
    expect(page.length).toBeLessThanOrEqual(20);
    items.push(...page);
    cursor = r.body.next_cursor as string | undefined;
    pages++;
    expect(pages).toBeLessThan(50);
  } while (cursor);
  return { items, pages };
}

/** Replaces every known id (anywhere in the value) with its symbolic name. */
function symbolic<T>(value: T): T {
  if (typeof value === "string") return (names.get(value) ?? value) as T;
  if (Array.isArray(value)) return value.map(symbolic) as T;
  if (value && typeof value === "object") return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, symbolic(v)])) as T;
  return value;
}

const WRITE_ONLY = new Set(["password", "pin", "webhook_secret"]);

/** `actual` reduced to the fields `shape` has (write-only ones dropped), recursing into arrays of objects. */
function pickLike(actual: Json, shape: Json): Json {
  const out: Json = {};
  for (const [k, v] of Object.entries(shape)) {
    if (WRITE_ONLY.has(k)) continue;
    if (Array.isArray(v) && v.every((x) => x && typeof x === "object")) {
      out[k] = (actual[k] as Json[] | undefined)?.map((a, i) => pickLike(a, (v[i] ?? {}) as Json));
    } else out[k] = actual[k];
  }
  return out;
}
const dropWriteOnly = (shape: Json): Json => pickLike(shape, shape);

describe(`scenario: a contact center built through the API and the config file [${storeKind}]`, () => {
  test(
    "build, read back, refuse in-use deletes, export idempotently, isolate from another account",
    async () => {
      const t: Tenant = await seedTenant(platform, { name: "Scenario Contact Center" });
      const key = t.key;
      const tag = crypto.randomUUID().slice(0, 8);

      // ---- media: two small synthetic WAVs used as music on hold --------------------------------
      const media: Json[] = [];
      for (const [i, name] of ["Hold music A", "Hold music B"].entries()) {
        const wav = buildWav({ code: 7, sampleRate: 8000, frames: 8000 * (i + 1) });
        const r = await api.handle(
          new Request(`http://localhost/v1/media?name=${encodeURIComponent(name)}&kind=moh`, {
            method: "POST",
            headers: { "x-api-key": key, "content-type": "audio/wav" },
            body: wav as BodyInit,
          }),
        );
        const body = (await r.json()) as Json;
        expect(r.status, JSON.stringify(body)).toBe(201);
        createCount++;
        expect(body.data).toMatchObject({ name, kind: "moh", format: "wav", duration_ms: 1000 * (i + 1), channels: 1, sample_rate: 8000 });
        names.set(body.data.id, `media:${i}`);
        media.push(body.data);
      }

      // ---- schedules --------------------------------------------------------------------------
      const bhRules = [1, 2, 3, 4, 5].map((dow) => ({ kind: "weekly", dow, start_time: "09:00", end_time: "17:00" }));
      const businessHours = await create(
        key,
        "/v1/schedules",
        {
          name: "Business hours",
          timezone: "America/New_York",
          rules: [
            ...bhRules,
            { kind: "date", start_date: "2026-07-03", is_closed: 1, label: "Independence Day (observed)" },
            { kind: "date", start_date: "2026-12-25", is_closed: 1, label: "Christmas" },
          ],
        },
        "schedule:business",
        "schedules",
      );
      expect(businessHours.rules).toHaveLength(7);
      const weekend = await create(
        key,
        "/v1/schedules",
        {
          name: "Weekend",
          timezone: "America/New_York",
          rules: [0, 6].map((dow) => ({ kind: "weekly", dow, start_time: "10:00", end_time: "14:00" })),
        },
        "schedule:weekend",
        "schedules",
      );

      // ---- voicemail boxes: one per department --------------------------------------------------
      const vm: Record<string, Json> = {};
      for (const [i, dept] of ["sales", "support", "billing"].entries()) {
        vm[dept] = await create(
          key,
          "/v1/voicemails",
          { name: `${dept} voicemail`, pin: `00${i}42`, notify_email: `${dept}@example.test`, max_message_sec: 120 },
          `vm:${dept}`,
          "voicemails",
        );
        expect(vm[dept]!.has_pin).toBe(1);
        expect(JSON.stringify(vm[dept])).not.toContain(`00${i}42`);
      }

      // ---- agent teams ------------------------------------------------------------------------
      const teamA = await create(key, "/v1/agent-teams", { name: "Team Atlantic" }, "team:a", "teams");
      const teamB = await create(key, "/v1/agent-teams", { name: "Team Pacific" }, "team:b", "teams");

      // ---- 50 users (1001–1050; 1001–1040 agents, split over the two teams), one device each -----
      const users: Json[] = [];
      const devices: Json[] = [];
      for (let i = 0; i < 50; i++) {
        const username = String(1001 + i);
        const isAgent = i < 40;
        const body: Json = { username, display_name: `Person ${username}`, email: `u${username}@example.test`, is_agent: isAgent ? 1 : 0 };
        if (isAgent) body.team_id = i < 20 ? teamA.id : teamB.id;
        const user = await create(key, "/v1/users", body, `user:${username}`, "users");
        expect(user.devices).toEqual([]);
        users.push(user);
        devices.push(await create(key, "/v1/devices", { user_id: user.id, password: DEVICE_PASSWORD, label: `desk ${username}` }, `device:${username}`, "devices"));
      }
      const agents = users.slice(0, 40);

      // ---- queues -----------------------------------------------------------------------------
      const vmDest = (dept: string, slot: string) => ({ [`${slot}_dest_kind`]: "voicemail", [`${slot}_dest_id`]: vm[dept]!.id });
      const q: Record<string, Json> = {};
      q.overflow = await create(
        key,
        "/v1/queues",
        { name: "overflow", strategy: "ring_all", max_wait_sec: 300, ...vmDest("support", "timeout"), ...vmDest("support", "no_agents"), moh_mode: "file", moh_media_id: media[1]!.id },
        "queue:overflow",
        "queues",
      );
      const queueSpecs: Array<[string, Json]> = [
        [
          "sales",
          {
            strategy: "longest_idle",
            max_wait_sec: 600,
            announce_position: 1,
            moh_mode: "file",
            moh_media_id: media[0]!.id,
            ...vmDest("sales", "timeout"),
            ...vmDest("sales", "no_agents"),
            schedule_id: businessHours.id,
            ...vmDest("sales", "closed"),
            ...vmDest("sales", "holiday"),
          },
        ],
        [
          "support",
          {
            strategy: "round_robin",
            max_wait_sec: 900,
            ...vmDest("support", "timeout"),
            ...vmDest("support", "no_agents"),
            max_queued: 10,
            queue_full_dest_kind: "queue",
            queue_full_dest_id: q.overflow.id,
            schedule_id: businessHours.id,
            ...vmDest("support", "closed"),
          },
        ],
        ["billing", { strategy: "top_down", max_wait_sec: 900, wrap_up_sec: 30, ...vmDest("billing", "timeout"), ...vmDest("billing", "no_agents"), moh_mode: "file", moh_media_id: media[1]!.id }],
        ["vip", { strategy: "sequential", agent_ring_timeout_sec: 15, max_wait_sec: 120, ...vmDest("sales", "timeout"), ...vmDest("sales", "no_agents") }],
      ];
      for (const [name, settings] of queueSpecs) q[name] = await create(key, "/v1/queues", { name, ...settings }, `queue:${name}`, "queues");
      const queueNames = ["sales", "support", "billing", "vip", "overflow"];
      const deptOf: Record<string, string> = { sales: "sales", support: "support", billing: "billing", vip: "sales", overflow: "support" };

      // Members: 4 tier-1 and 4 tier-2 agents per queue, added tier 2 first so the order has to come from the tier.
      const memberSpecs: Record<string, Json[]> = {};
      const optionSpecs: Record<string, Json[]> = {};
      for (const [k, name] of queueNames.entries()) {
        const members: Json[] = [];
        for (let j = 7; j >= 0; j--) {
          const agent = agents[k * 8 + j]!;
          const body = { user_id: agent.id, tier_level: j < 4 ? 1 : 2, position: j % 4, mode: "static" };
          const r = await call(api, "POST", `/v1/queues/${q[name]!.id}/members`, { key, body });
          expect(r.status, r.text).toBe(201);
          createCount++;
          members.push(body);
        }
        memberSpecs[name] = members.sort((a, b) => a.tier_level - b.tier_level || a.position - b.position);

        const options: Json[] = [
          { digit: "1", action: "deflect", dest_kind: "voicemail", dest_id: vm[deptOf[name]!]!.id, label: "Leave a message" },
          { digit: "9", action: "hangup", label: "Hang up" },
        ];
        if (name !== "overflow") options.splice(0, 0, { digit: "0", action: "route", dest_kind: "queue", dest_id: q.overflow.id, label: "Overflow" });
        for (const body of options) {
          const r = await call(api, "POST", `/v1/queues/${q[name]!.id}/options`, { key, body });
          expect(r.status, r.text).toBe(201);
          createCount++;
        }
        optionSpecs[name] = options;
      }

      // ---- ring groups ------------------------------------------------------------------------
      const frontDesk = await create(
        key,
        "/v1/ring-groups",
        { name: "Front desk", strategy: "ring_all", ring_timeout_sec: 30, members: users.slice(40, 45).map((u) => ({ user_id: u.id })), ...vmDest("sales", "exit") },
        "rg:front",
        "ring_groups",
      );
      const escalation = await create(
        key,
        "/v1/ring-groups",
        {
          name: "Escalation",
          strategy: "sequential",
          ring_timeout_sec: 60,
          moh_media_id: media[0]!.id,
          members: users.slice(45, 50).map((u, i) => ({ user_id: u.id, timeout_sec: 10 + 5 * i })),
          ...vmDest("support", "exit"),
        },
        "rg:escalation",
        "ring_groups",
      );
      expect(frontDesk.members).toHaveLength(5);
      expect((escalation.members as Json[]).map((m) => m.timeout_sec)).toEqual([10, 15, 20, 25, 30]);

      // ---- extensions: 10 routes plus a feature code -----------------------------------------
      const extTargets: Array<[string, string]> = [
        ["user", users[0]!.id],
        ["user", users[1]!.id],
        ["user", users[40]!.id],
        ["user", users[41]!.id],
        ["queue", q.sales!.id],
        ["queue", q.support!.id],
        ["queue", q.billing!.id],
        ["queue", q.vip!.id],
        ["ring_group", frontDesk.id],
        ["ring_group", escalation.id],
      ];
      const extensions: Json[] = [];
      for (const [i, [kind, id]] of extTargets.entries()) {
        const digits = String(2001 + i);
        const body: Json = { digits, dest_kind: kind, dest_id: id, label: `ext ${digits}` };
        if (kind === "queue") Object.assign(body, { schedule_id: weekend.id, ...vmDest("support", "closed") });
        extensions.push(await create(key, "/v1/extensions", body, `ext:${digits}`, "extensions"));
      }
      await create(key, "/v1/extensions", { digits: "*97", dest_kind: "feature", dest_id: "voicemail_main", label: "Voicemail" }, "ext:*97", "extensions");

      // ---- 20 numbers -------------------------------------------------------------------------
      const didBase = `1${String(200 + Math.floor(Math.random() * 700))}555${String(Math.floor(Math.random() * 10))}`; // 1NPA555X: 8 digits
      const numbers: Json[] = [];
      for (let i = 0; i < 20; i++) {
        const e164 = `${didBase}${String(i).padStart(3, "0")}`; // 11 digits
        let dest: [string, string];
        if (i < 5) dest = ["queue", q[queueNames[i]!]!.id];
        else if (i < 7) dest = ["ring_group", (i === 5 ? frontDesk : escalation).id];
        else dest = ["extension", extensions[(i - 7) % 10]!.id];
        const body: Json = { e164, dest_kind: dest[0], dest_id: dest[1], label: `DID ${i}` };
        if (i % 3 === 0) Object.assign(body, { schedule_id: businessHours.id, ...vmDest("sales", "closed"), holiday_dest_kind: "hangup" });
        if (i === 19) body.max_channels = 4;
        const n = await create(key, "/v1/numbers", body, `number:${i}`, "numbers");
        expect(n.e164).toBe(e164);
        numbers.push(n);
      }

      // ---- the config file, through the control host --------------------------------------------
      const yaml = [
        "version: 1",
        "sip_domains:",
        `  - domain: cc-${tag}.sip.example.com`,
        "    is_primary: 1",
        "trunks:",
        "  - name: carrier-main",
        "    provider: carrier",
        "    direction: both",
        "    proxy: sip.carrier.example.com:5060",
        "    do_register: 1",
        `    auth_username: cc${tag}`,
        `    auth_password: "\${${ENV_VAR}}"`,
        "    acl:",
        "      - 192.0.2.0/24",
        "      - 198.51.100.7",
        "outbound_routes:",
        "  - name: north-america",
        '    match_prefix: "1"',
        "    via: trunk",
        "    trunk: carrier-main",
        "    priority: 10",
        "  - name: germany",
        "    match_country: DE",
        "    via: carrier",
        "    priority: 20",
        "number_transforms:",
        "  - name: strip-us-country-code",
        "    scope_kind: trunk",
        "    scope: carrier-main",
        "    direction: inbound_dst",
        '    match_regex: "^1(\\\\d{10})$"',
        '    replacement: "1$1"',
        "call_limits:",
        "  - name: account-concurrent",
        "    max_count: 40",
        "recording_rules:",
        "  - name: record-everything",
        '    mode: "on"',
        "    stereo: 1",
        "forwards:",
        '  - user: "1001"',
        "    trigger: no_answer",
        '    number: "+44 7700 900123"',
        "    timeout_sec: 15",
        "    overflow_dest_kind: voicemail",
        `    overflow_dest_id: ${vm.sales!.id}`,
        '  - user: "1002"',
        "    trigger: busy",
        '    number: "447700900124"',
        "",
      ].join("\n");
      const plan = await call(control, "POST", "/admin/config/plan", { headers: admin, body: { account_id: t.accountId, content: yaml } });
      expect(plan.status, plan.text).toBe(200);
      const applied = await call(control, "POST", "/admin/config/apply", { headers: admin, body: { account_id: t.accountId, content: yaml } });
      expect(applied.status, applied.text).toBe(200);
      expect(applied.body.data.applied).toBe(1);
      expect(applied.body.data.plan).toEqual(plan.body.data);
      const res = applied.body.data.plan.resources as Record<string, { create: Json[]; update: Json[]; delete: Json[] }>;
      const createdKeys = (s: string) => res[s]!.create.map((c) => c.key);
      expect(createdKeys("sip_domains")).toEqual([`cc-${tag}.sip.example.com`]);
      expect(createdKeys("trunks")).toEqual(["carrier-main"]);
      expect(createdKeys("outbound_routes").sort()).toEqual(["germany", "north-america"]);
      expect(createdKeys("number_transforms")).toEqual(["strip-us-country-code"]);
      expect(createdKeys("call_limits")).toEqual(["account-concurrent"]);
      expect(createdKeys("recording_rules")).toEqual(["record-everything"]);
      expect(res.forwards!.create).toHaveLength(2);
      expect(applied.body.data.plan.changes).toBe(9);
      expect(applied.text).not.toContain(CARRIER_PASSWORD);
      expect(plan.text).not.toContain(CARRIER_PASSWORD);

      // ---- counts, walking pages of 20 ----------------------------------------------------------
      const usersList = await listAll(key, "/v1/users");
      expect(usersList.items).toHaveLength(50);
      expect(usersList.pages).toBe(3);
      expect((await listAll(key, "/v1/users?is_agent=1")).items).toHaveLength(40);
      expect((await listAll(key, `/v1/users?team_id=${teamA.id}`)).items).toHaveLength(20);
      expect((await listAll(key, `/v1/users?team_id=${teamB.id}`)).items).toHaveLength(20);
      const devicesList = await listAll(key, "/v1/devices");
      expect(devicesList.items).toHaveLength(50);
      const numbersList = await listAll(key, "/v1/numbers");
      expect(numbersList.items).toHaveLength(20);
      expect((await listAll(key, `/v1/numbers?schedule_id=${businessHours.id}`)).items).toHaveLength(7);
      const extList = await listAll(key, "/v1/extensions");
      expect(extList.items).toHaveLength(11);
      const queuesList = await listAll(key, "/v1/queues");
      expect(queuesList.items).toHaveLength(5);
      const rgList = await listAll(key, "/v1/ring-groups");
      expect(rgList.items).toHaveLength(2);
      const schList = await listAll(key, "/v1/schedules");
      expect(schList.items.map((s) => [s.name, s.rule_count])).toEqual([
        ["Business hours", 7],
        ["Weekend", 2],
      ]);
      const vmList = await listAll(key, "/v1/voicemails");
      expect(vmList.items).toHaveLength(3);
      expect(vmList.items.every((v) => v.has_pin === 1)).toBe(true);
      expect((await listAll(key, "/v1/media")).items).toHaveLength(2);
      const teamsList = await listAll(key, "/v1/agent-teams");
      expect(teamsList.items).toHaveLength(2);
      const teamDetail = await call(api, "GET", `/v1/agent-teams/${teamA.id}`, { key });
      expect((teamDetail.body.data.members as Json[]).map((m) => m.username).sort()).toEqual(users.slice(0, 20).map((u) => u.username));
      // A user's devices come back on the user.
      const oneUser = await call(api, "GET", `/v1/users/${users[7]!.id}`, { key });
      expect((oneUser.body.data.devices as Json[]).map((d) => d.id)).toEqual([devices[7]!.id]);
      expect(oneUser.text).not.toContain(DEVICE_PASSWORD);
      expect(JSON.stringify(devicesList.items)).not.toContain(DEVICE_PASSWORD);
      expect(devicesList.items.every((d) => !("password" in d) && !("ha1" in d))).toBe(true);

      // ---- a queue: members by tier, then position; options in keypad order -----------------------
      const sales = await call(api, "GET", `/v1/queues/${q.sales!.id}`, { key });
      expect(sales.status).toBe(200);
      const salesMembers = sales.body.data.members as Json[];
      expect(salesMembers.map((m) => [m.tier_level, m.position])).toEqual([
        [1, 0],
        [1, 1],
        [1, 2],
        [1, 3],
        [2, 0],
        [2, 1],
        [2, 2],
        [2, 3],
      ]);
      expect(salesMembers.map((m) => m.user_id)).toEqual(agents.slice(0, 8).map((a) => a.id));
      expect((sales.body.data.options as Json[]).map((o) => [o.digit, o.action, o.dest_kind, o.dest_id])).toEqual([
        ["0", "route", "queue", q.overflow.id],
        ["1", "deflect", "voicemail", vm.sales!.id],
        ["9", "hangup", null, null],
      ]);
      expect((await call(api, "GET", `/v1/queues?user_id=${agents[0]!.id}`, { key })).body.data.map((x: Json) => x.id)).toEqual([q.sales!.id]);

      // ---- in-use resources refuse deletion ---------------------------------------------------
      const billingNumber = numbers[2]!; // routes to the billing queue
      const delQueue = await call(api, "DELETE", `/v1/queues/${q.billing!.id}`, { key });
      expect(delQueue.status).toBe(409);
      expect(delQueue.body.error).toBe("conflict");
      expect(delQueue.body.used_by).toContainEqual({ kind: "number", id: billingNumber.id });
      const delSchedule = await call(api, "DELETE", `/v1/schedules/${businessHours.id}`, { key });
      expect(delSchedule.status).toBe(409);
      expect((delSchedule.body.used_by as Json[]).map((u) => u.kind)).toEqual(expect.arrayContaining(["number", "queue"]));
      const delWeekend = await call(api, "DELETE", `/v1/schedules/${weekend.id}`, { key });
      expect(delWeekend.status).toBe(409);
      expect(delWeekend.body.used_by).toContainEqual({ kind: "extension", id: extensions[4]!.id });
      const delVm = await call(api, "DELETE", `/v1/voicemails/${vm.sales!.id}`, { key });
      expect(delVm.status).toBe(409);
      expect((await call(api, "DELETE", `/v1/users/${agents[0]!.id}`, { key })).status).toBe(409);
      expect((await call(api, "DELETE", `/v1/media/${media[0]!.id}`, { key })).status).toBe(409);
      // ...and nothing was deleted.
      expect((await call(api, "GET", `/v1/queues/${q.billing!.id}`, { key })).status).toBe(200);
      expect((await call(api, "GET", `/v1/schedules/${businessHours.id}`, { key })).status).toBe(200);

      // ---- the OpenAPI document still lints ---------------------------------------------------
      const doc = await call(api, "GET", "/v1/openapi.json");
      expect(doc.status).toBe(200);
      const problems = await lintFromString({ source: doc.text, absoluteRef: "/openapi.json", config: await createConfig({ extends: ["recommended"] }) });
      expect(problems.filter((p) => p.severity === "error").map((p) => `${p.ruleId} ${p.message}`)).toEqual([]);

      // ---- config export: no secret, and applying it back is an empty plan ---------------------
      for (const format of ["yaml", "json"] as const) {
        const exported = await call(control, "GET", `/admin/config/export?account_id=${t.accountId}&format=${format}`, { headers: admin });
        expect(exported.status, exported.text).toBe(200);
        const content = exported.body.data.content as string;
        expect(content).not.toContain(CARRIER_PASSWORD);
        expect(content).toContain("<unchanged>");
        expect(content).toContain("carrier-main");
        expect(content).toContain(`cc-${tag}.sip.example.com`);
        const rePlan = await call(control, "POST", "/admin/config/plan", { headers: admin, body: { account_id: t.accountId, format, content } });
        expect(rePlan.status, rePlan.text).toBe(200);
        expect(rePlan.body.data.changes).toBe(0);
        const reApply = await call(control, "POST", "/admin/config/apply", { headers: admin, body: { account_id: t.accountId, format, content } });
        expect(reApply.body.data).toMatchObject({ applied: 0, plan: { changes: 0 } });
      }
      // The original file (with the ${VAR} password) is also a no-op now.
      const again = await call(control, "POST", "/admin/config/apply", { headers: admin, body: { account_id: t.accountId, content: yaml } });
      expect(again.body.data).toMatchObject({ applied: 0, plan: { changes: 0 } });

      // ---- a second account sees none of it ---------------------------------------------------
      const other = await seedTenant(platform, { name: "Scenario Other" });
      for (const path of ["/v1/users", "/v1/devices", "/v1/numbers", "/v1/extensions", "/v1/queues", "/v1/ring-groups", "/v1/schedules", "/v1/voicemails", "/v1/media", "/v1/agent-teams"]) {
        const r = await call(api, "GET", path, { key: other.key });
        expect(r.status, path).toBe(200);
        expect(r.body.data, path).toEqual([]);
      }
      for (const path of [
        `/v1/queues/${q.sales!.id}`,
        `/v1/users/${users[0]!.id}`,
        `/v1/numbers/${numbers[0]!.id}`,
        `/v1/schedules/${businessHours.id}`,
        `/v1/voicemails/${vm.sales!.id}`,
        `/v1/ring-groups/${frontDesk.id}`,
        `/v1/extensions/${extensions[0]!.id}`,
      ]) {
        expect((await call(api, "GET", path, { key: other.key })).status, path).toBe(404);
      }
      expect((await call(api, "DELETE", `/v1/numbers/${numbers[0]!.id}`, { key: other.key })).status).toBe(404);
      const otherExport = await call(control, "GET", `/admin/config/export?account_id=${other.accountId}&format=json`, { headers: admin });
      expect(otherExport.body.data.content).not.toContain("carrier-main");

      // ---- snapshot of the API-side configuration equals what was created (ids aside) -----------
      const detail = async (path: string, items: Json[]) =>
        Promise.all(items.map(async (i) => (await call(api, "GET", `${path}/${i.id}`, { key })).body.data as Json));
      const snapshot = symbolic({
        users: usersList.items.map((u, i) => pickLike(u, sent.users![i]!)),
        devices: devicesList.items.map((d, i) => pickLike(d, sent.devices![i]!)),
        teams: teamsList.items.map((x, i) => pickLike(x, sent.teams![i]!)),
        schedules: (await detail("/v1/schedules", schList.items)).map((s, i) => pickLike(s, sent.schedules![i]!)),
        voicemails: vmList.items.map((v, i) => pickLike(v, sent.voicemails![i]!)),
        queues: (await detail("/v1/queues", queuesList.items)).map((x, i) => ({
          ...pickLike(x, sent.queues![i]!),
          members: (x.members as Json[]).map((m, j) => pickLike(m, memberSpecs[x.name]![j]!)),
          options: (x.options as Json[]).map((o, j) => pickLike(o, optionSpecs[x.name]![j]!)),
        })),
        ring_groups: (await detail("/v1/ring-groups", rgList.items)).map((g, i) => pickLike(g, sent.ring_groups![i]!)),
        extensions: extList.items.map((e, i) => pickLike(e, sent.extensions![i]!)),
        numbers: numbersList.items.map((n, i) => pickLike(n, sent.numbers![i]!)),
      });
      const expected = symbolic({
        users: sent.users!,
        devices: sent.devices!.map(dropWriteOnly),
        teams: sent.teams!,
        schedules: sent.schedules!,
        voicemails: sent.voicemails!.map(dropWriteOnly),
        queues: sent.queues!.map((body) => ({ ...body, members: memberSpecs[body.name]!, options: optionSpecs[body.name]! })),
        ring_groups: sent.ring_groups!,
        extensions: sent.extensions!,
        numbers: sent.numbers!,
      });
      expect(snapshot).toEqual(expected);
      // Every create (media, members and options included) returned 201.
      expect(createCount).toBe(2 + 2 + 3 + 2 + 100 + 5 + 40 + 14 + 2 + 11 + 20);
    },
    120_000,
  );
});
