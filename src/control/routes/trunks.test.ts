/** POST /trunks/tick and GET /trunks/status over a real socket: probes due, outcomes recorded, registrations to keep. */
import { describe, expect, test } from "bun:test";
import { createHash, randomUUID } from "node:crypto";
import { and, eq } from "drizzle-orm";
import { seedTenant, storeKind, testPlatform } from "../../../test/support/platform.ts";
import { applyConfig } from "../../core/config-file/applier.ts";
import { sipTrunks, trunkCredentials } from "../../core/trunks/trunks.schema.ts";
import { secrets } from "../../core/secrets/secrets.schema.ts";
import { probeDue, trunkTicker } from "../../core/trunks/trunk-tick.service.ts";
import { readTrunkHealth, recordTrunkProbes } from "../../core/trunks/trunk-health.ts";
import { applyTrunkRegistration } from "../../core/presence/presence.service.ts";
import { newId } from "../../core/ids/ids.ts";
import { trunkRoutes } from "./trunks.ts";
import { controlTestHost, listenControl } from "./control-listener.fixture.ts";

const md5 = (text: string) => createHash("md5").update(text).digest("hex");

const host = controlTestHost([trunkRoutes]);

/** A tenant with a probed trunk, a registered-with trunk (for any node), one for node edge-2 only, and one that registers to us. */
async function seed() {
  const t = await seedTenant(host.platform);
  const tag = randomUUID().slice(0, 8);
  await applyConfig(host.platform.db, host.platform.secrets, t.accountId, {
    version: 1,
    trunks: [
      { name: "probed", direction: "outbound", proxy: "probe.example:5070", transport: "tcp", ping_sec: 5 },
      { name: "registered", direction: "outbound", proxy: "10.0.0.9", do_register: 1, auth_username: `acct-${tag}`, auth_password: "reg-pa$$", realm: "reg.example", expire_sec: 600, ping_sec: 60 },
      { name: "edge2-only", direction: "outbound", proxy: "sip.two.example", do_register: 1, auth_username: "two", auth_password: "two-pass", reg_node: "edge-2" },
      { name: "pbx", role: "pbx", direction: "both", inbound_auth: "register", inbound_username: `pbx-${tag}`, inbound_password: "pbx-pass" },
    ],
  });
  const ids = Object.fromEntries((await host.platform.db.select().from(sipTrunks).where(eq(sipTrunks.account_id, t.accountId))).map((r) => [r.name, r.id])) as Record<string, string>;
  return { accountId: t.accountId, ids, tag };
}

const tick = (body: Record<string, unknown>) => host.client.post("/trunks/tick", { node: "edge-1", interval: 5, ...body });

describe(`POST /trunks/tick [${storeKind}]`, () => {
  test("probeDue: each trunk once per ping_sec, at its own offset, whatever the tick length", () => {
    for (const [pingSec, interval] of [[5, 1], [30, 5], [7, 5], [60, 60]] as const) {
      const id = newId("trk");
      let due = 0;
      for (let t = 1_795_000_000; t < 1_795_000_000 + pingSec * 20; t += interval) if (probeDue(id, pingSec, t, interval)) due++;
      expect(due, `${pingSec}/${interval}`).toBe(20);
    }
  });

  /**
   * Ticks as an edge node does until nothing changes: it keeps what each reply adds (at its version)
   * and drops what it says to unregister. The database holds other tests' trunks too (and a reply
   * carries a few registrations at a time): the node's whole set, by trunk id.
   */
  async function syncNode(node: string, held = new Map<string, { account_id: string; version: string; rpc: string }>()) {
    const dropped: string[] = [];
    for (let round = 0; round < 1000; round++) {
      const registrations = [...held].map(([trunk_id, r]) => ({ account_id: r.account_id, trunk_id, status: 1, version: r.version }));
      const r = await host.client.post("/trunks/tick", { node, interval: 5, registrations });
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      expect(r.body.registrations.length).toBeLessThanOrEqual(40);
      for (const x of r.body.registrations) held.set(x.trunk_id, { account_id: x.account_id, version: x.version, rpc: x.rpc });
      for (const id of r.body.unregister) {
        held.delete(id);
        dropped.push(id);
      }
      if (!r.body.registrations.length && !r.body.unregister.length) return { held, dropped };
    }
    throw new Error("the node's registrations never settled");
  }

  test("a node gets every registration it should keep, as uac.reg_add with the HA1 for the trunk's realm (never the password), a few per tick until it keeps them all; a changed one again; a dropped one to unregister; nothing of another node's", async () => {
    const s = await seed();
    const { held } = await syncNode("edge-1");
    const mine = [...held].filter(([, r]) => r.account_id === s.accountId);
    expect(mine.map(([id]) => id)).toEqual([s.ids.registered!]);
    const rpc = JSON.parse(mine[0]![1].rpc);
    expect(rpc).toEqual({
      jsonrpc: "2.0",
      method: "uac.reg_add",
      params: [s.ids.registered, s.ids.registered, "parley", `acct-${s.tag}`, "10.0.0.9", "reg.example", `acct-${s.tag}`, ".", md5(`acct-${s.tag}:reg.example:reg-pa$$`), "sip:10.0.0.9", 600, 0, 0, ".", "."],
      id: 1,
    });
    expect(JSON.stringify([...held])).not.toContain("reg-pa$$");
    expect(host.logged.join("\n")).not.toContain("reg-pa$$");
    // Kept at its version: not sent again.
    const again = await host.client.post("/trunks/tick", { node: "edge-1", interval: 5, registrations: [...held].map(([trunk_id, r]) => ({ account_id: r.account_id, trunk_id, status: 1, version: r.version })) });
    expect(again.body.registrations).toEqual([]);
    const two = await syncNode("edge-2");
    expect([...two.held].filter(([, r]) => r.account_id === s.accountId).map(([id]) => id).sort()).toEqual([s.ids.registered!, s.ids["edge2-only"]!].sort());
    // A tick covering a whole ping_sec (5) lists the probed trunk, at its transport (probeDue above: when).
    const probedPing = (await tick({ interval: 5 })).body.ping.find((p: any) => p.trunk_id === s.ids.probed);
    expect(probedPing).toEqual({ account_id: s.accountId, trunk_id: s.ids.probed, uri: "sip:probe.example:5070;transport=tcp" });
    // A changed trunk comes again at a new version; a disabled one is to be unregistered.
    const version = mine[0]![1].version;
    await applyConfig(host.platform.db, host.platform.secrets, s.accountId, {
      version: 1,
      trunks: [{ name: "registered", direction: "outbound", proxy: "10.0.0.9", do_register: 1, auth_username: `acct-${s.tag}`, auth_password: "new-pass", realm: "reg.example", expire_sec: 600 }],
    });
    const changed = (await syncNode("edge-1", held)).held.get(s.ids.registered!)!;
    expect(changed.version).not.toBe(version);
    expect(JSON.parse(changed.rpc).params[8]).toBe(md5(`acct-${s.tag}:reg.example:new-pass`));
    await host.platform.db.update(sipTrunks).set({ status: "disabled", updated_at: 1 }).where(eq(sipTrunks.id, s.ids.registered!));
    const after = await syncNode("edge-1", held);
    expect(after.dropped).toContain(s.ids.registered!);
    expect(after.held.has(s.ids.registered!)).toBe(false);
  });

  test("a trunk whose password cannot be read is left out of the registrations, host.logged; the tick still answers, with the others", async () => {
    const t = await seedTenant(host.platform);
    const node = `edge-sec-${randomUUID().slice(0, 8)}`;
    await applyConfig(host.platform.db, host.platform.secrets, t.accountId, {
      version: 1,
      trunks: [
        { name: "readable", direction: "outbound", proxy: "10.2.0.1", do_register: 1, auth_username: "ok-user", auth_password: "ok-password", reg_node: node },
        { name: "unreadable", direction: "outbound", proxy: "10.2.0.2", do_register: 1, auth_username: "bad-user", auth_password: "bad-password", reg_node: node },
      ],
    });
    const rows = await host.platform.db.select().from(sipTrunks).where(eq(sipTrunks.account_id, t.accountId));
    const ids = Object.fromEntries(rows.map((r) => [r.name, r.id])) as Record<string, string>;
    const refs = Object.fromEntries(rows.map((r) => [r.name, r.auth_secret_ref!])) as Record<string, string>;
    // The other trunk's ciphertext under this one's ref: its AAD (account and ref) no longer matches.
    const [good] = await host.platform.db.select().from(secrets).where(and(eq(secrets.accountId, t.accountId), eq(secrets.id, refs.readable!)));
    await host.platform.db.update(secrets).set({ ciphertext: good!.ciphertext }).where(and(eq(secrets.accountId, t.accountId), eq(secrets.id, refs.unreadable!)));
    try {
      const reply = await host.client.post("/trunks/tick", { node, interval: 5 });
      expect(reply.status).toBe(200);
      const mine = (reply.body.registrations as Array<{ trunk_id: string }>).map((r) => r.trunk_id);
      expect(mine).toContain(ids.readable!);
      expect(mine).not.toContain(ids.unreadable!);
      expect(host.logged.join("\n")).toContain("a do_register trunk's password cannot be read: not registered");
    } finally {
      // Not left for other tests' ticks (the test database is shared).
      await host.platform.db.update(sipTrunks).set({ status: "disabled", updated_at: 2 }).where(eq(sipTrunks.account_id, t.accountId));
    }
  });

  test("a trunk changed while a tick runs is handed out with its new settings (the cached registration is built from the trunk as read inside the cache's guard)", async () => {
    const platform = host.platform;
    const t = await seedTenant(platform);
    const node = `edge-race-${randomUUID().slice(0, 8)}`;
    const file = (proxy: string) => ({ version: 1, trunks: [{ name: "reg", direction: "outbound", proxy, do_register: 1, auth_username: "u1", auth_password: "reg-password", reg_node: node }] });
    await applyConfig(platform.db, platform.secrets, t.accountId, file("10.9.0.1"));
    await platform.configCache.settle();
    const [row] = await platform.db.select().from(sipTrunks).where(eq(sipTrunks.account_id, t.accountId));
    // The tick pauses once it has listed the trunks (its first live-store write comes after).
    let release!: () => void;
    let paused!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const isPaused = new Promise<void>((resolve) => (paused = resolve));
    let pauseOnce = true;
    const live = new Proxy(platform.live, {
      get(target, name) {
        const value = Reflect.get(target, name);
        if (name === "hset") {
          return async (...args: unknown[]) => {
            if (pauseOnce) {
              pauseOnce = false;
              paused();
              await gate;
            }
            return (value as (...a: unknown[]) => unknown).apply(target, args);
          };
        }
        return typeof value === "function" ? value.bind(target) : value;
      },
    });
    const ticker = trunkTicker({ db: platform.db, live, secrets: platform.secrets, log: platform.log, configCache: platform.configCache });
    const report = (version: string) => [{ account_id: t.accountId, trunk_id: row!.id, status: 1, version }];
    try {
      const first = ticker.tick({ node, interval: 5, registrations: report("none") });
      await isPaused;
      // Changed meanwhile, within the same second as before (updated_at is in seconds).
      await applyConfig(platform.db, platform.secrets, t.accountId, file("10.9.0.2"));
      await platform.db.update(sipTrunks).set({ updated_at: row!.updated_at }).where(and(eq(sipTrunks.account_id, t.accountId), eq(sipTrunks.id, row!.id)));
      await platform.configCache.settle();
      release();
      let held = (await first).registrations.find((r) => r.trunk_id === row!.id)!;
      for (let i = 0; i < 3; i++) {
        const next = (await ticker.tick({ node, interval: 5, registrations: report(held.version) })).registrations.find((r) => r.trunk_id === row!.id);
        if (next) held = next;
      }
      expect(held.rpc).toContain("10.9.0.2");
    } finally {
      await platform.db.update(sipTrunks).set({ status: "disabled", updated_at: 2 }).where(eq(sipTrunks.account_id, t.accountId));
    }
  });

  test("reg_node must be a node name (letters, digits, ., _, -): any other is a 400, nothing applied", async () => {
    const t = await seedTenant(host.platform);
    await expect(
      applyConfig(host.platform.db, host.platform.secrets, t.accountId, { version: 1, trunks: [{ name: "spaced", direction: "outbound", proxy: "10.2.0.3", do_register: 1, auth_username: "u", auth_password: "password-1", reg_node: "edge 1" }] }),
    ).rejects.toMatchObject({ status: 400 });
    expect(await host.platform.db.select().from(sipTrunks).where(eq(sipTrunks.account_id, t.accountId))).toEqual([]);
  });

  test("GET /trunks/status shows what nodes keep now: a registration moved to another node leaves the first one's report; a node that stopped reporting drops out", async () => {
    let clock = Date.now();
    const ticker = trunkTicker({ db: host.platform.db, live: host.platform.live, secrets: host.platform.secrets, log: host.platform.log, now: () => clock });
    const t = await seedTenant(host.platform);
    const cfg = (node: string) => applyConfig(host.platform.db, host.platform.secrets, t.accountId, { version: 1, trunks: [{ name: "moving", direction: "outbound", proxy: "10.3.0.1", do_register: 1, auth_username: "mv", auth_password: "moving-pass", reg_node: node }] });
    await cfg("edge-a");
    const [row] = await host.platform.db.select().from(sipTrunks).where(eq(sipTrunks.account_id, t.accountId));
    const report = (node: string, version = "v") => ticker.tick({ node, interval: 5, registrations: [{ account_id: t.accountId, trunk_id: row!.id, status: 1, version }] });
    const nodes = async () => (await ticker.status(t.accountId)).data[0]!.registrations.map((r) => `${r.node}:${r.state}`);
    await report("edge-a");
    expect(await nodes()).toEqual(["edge-a:registered"]);
    // Moved to edge-b: edge-a is told to drop it, and its report goes with it.
    await cfg("edge-b");
    expect((await report("edge-a")).unregister).toContain(row!.id);
    await report("edge-b");
    expect(await nodes()).toEqual(["edge-b:registered"]);
    // edge-b stops ticking: three minutes on, its report no longer says registered.
    clock += 181_000;
    expect(await nodes()).toEqual([]);
  });

  test("two trunks of one account swap their inbound usernames in one apply, or one takes the other's as that one takes a new one", async () => {
    const t = await seedTenant(host.platform);
    const tag = randomUUID().slice(0, 8);
    const [x, y, z] = [`x-${tag}`, `y-${tag}`, `z-${tag}`];
    const pbx = (name: string, username: string) => ({ name, role: "pbx", direction: "inbound", inbound_auth: "digest", inbound_username: username, inbound_password: "pbx-password" });
    const owners = async () => {
      const rows = await host.platform.db.select().from(trunkCredentials).where(eq(trunkCredentials.account_id, t.accountId));
      const names = Object.fromEntries((await host.platform.db.select().from(sipTrunks).where(eq(sipTrunks.account_id, t.accountId))).map((r) => [r.id, r.name]));
      return Object.fromEntries(rows.map((r) => [r.username, names[r.trunk_id]]));
    };
    await applyConfig(host.platform.db, host.platform.secrets, t.accountId, { version: 1, trunks: [pbx("a", x), pbx("b", y)] });
    expect(await owners()).toEqual({ [x]: "a", [y]: "b" });
    // Before, the first update's insert met the other trunk's row: 409 "taken while it was being applied", every time.
    await applyConfig(host.platform.db, host.platform.secrets, t.accountId, { version: 1, trunks: [pbx("a", y), pbx("b", x)] });
    expect(await owners()).toEqual({ [y]: "a", [x]: "b" });
    await applyConfig(host.platform.db, host.platform.secrets, t.accountId, { version: 1, trunks: [pbx("a", x), pbx("b", z)] });
    expect(await owners()).toEqual({ [x]: "a", [z]: "b" });
  });

  test("more trunks due than one tick probes: consecutive ticks take turns, so every trunk is probed", async () => {
    const t = await seedTenant(host.platform);
    const trunks = Array.from({ length: 230 }, (_, i) => ({ name: `p${i}`, direction: "outbound", proxy: `10.4.${Math.floor(i / 200)}.${(i % 200) + 1}`, ping_sec: 5 }));
    await applyConfig(host.platform.db, host.platform.secrets, t.accountId, { version: 1, trunks });
    let clock = Math.floor(Date.now() / 5000) * 5000;
    const ticker = trunkTicker({ db: host.platform.db, live: host.platform.live, secrets: host.platform.secrets, log: host.platform.log, now: () => clock });
    const probed = new Set<string>();
    // Every trunk with ping_sec 5 is due at each 5 s tick; a reply holds at most 200. (Other tests' trunks
    // in a shared database are due too: enough ticks for all of them.)
    for (let i = 0; i < 8; i++, clock += 5000) {
      const reply = await ticker.tick({ node: "edge-turns", interval: 5 });
      expect(reply.ping.length).toBeLessThanOrEqual(200);
      for (const p of reply.ping) if (p.account_id === t.accountId) probed.add(p.trunk_id);
    }
    expect(probed.size).toBe(230);
    await host.platform.db.update(sipTrunks).set({ status: "disabled", updated_at: 3 }).where(eq(sipTrunks.account_id, t.accountId));
  });

  test("a trunk's probe record goes once it is no longer probed (deleted, or ping_sec dropped): the account's next probe report clears it", async () => {
    const t = await seedTenant(host.platform);
    const apply = (trunks: unknown[]) => applyConfig(host.platform.db, host.platform.secrets, t.accountId, { version: 1, trunks });
    await apply([
      { name: "keeps", direction: "outbound", proxy: "10.5.0.1", ping_sec: 30 },
      { name: "goes", direction: "outbound", proxy: "10.5.0.2", ping_sec: 30 },
    ]);
    const ids = Object.fromEntries((await host.platform.db.select().from(sipTrunks).where(eq(sipTrunks.account_id, t.accountId))).map((r) => [r.name, r.id])) as Record<string, string>;
    const report = () => tick({ probes: [ids.keeps, ids.goes].map((trunk_id) => ({ account_id: t.accountId, trunk_id, code: 200 })) });
    await report();
    expect([...(await readTrunkHealth(host.platform.live, t.accountId)).keys()].sort()).toEqual([ids.keeps!, ids.goes!].sort());
    await apply([{ name: "keeps", direction: "outbound", proxy: "10.5.0.1", ping_sec: 30 }]);
    await report();
    expect([...(await readTrunkHealth(host.platform.live, t.accountId)).keys()]).toEqual([ids.keeps!]);
  });

  test("a reply holds at most 40 registrations: a node with more gets them over several ticks", async () => {
    const t = await seedTenant(host.platform);
    const trunks = Array.from({ length: 45 }, (_, i) => ({ name: `r${i}`, direction: "outbound", proxy: `10.1.0.${i + 1}`, do_register: 1, auth_username: `u${i}`, auth_password: `p${i}-password`, reg_node: "edge-many" }));
    await applyConfig(host.platform.db, host.platform.secrets, t.accountId, { version: 1, trunks });
    const first = await host.client.post("/trunks/tick", { node: "edge-many", interval: 5 });
    expect(first.body.registrations.length).toBe(40);
    const { held } = await syncNode("edge-many");
    expect([...held].filter(([, r]) => r.account_id === t.accountId)).toHaveLength(45);
  });

  test("probe outcomes make a trunk down after two misses and up again at an answer; registration states show per node; GET /trunks/status", async () => {
    const s = await seed();
    const probe = (code: number) => tick({ probes: [{ account_id: s.accountId, trunk_id: s.ids.probed, code }] });
    expect((await probe(200)).status).toBe(200);
    await probe(408);
    let status = await host.client.get(`/trunks/status?accountId=${s.accountId}`);
    expect(status.status).toBe(200);
    const probed = () => status.body.data.find((t: any) => t.name === "probed");
    expect(probed().ping).toMatchObject({ state: "up", code: 408, fails: 1, node: "edge-1", stale: 0 });
    await probe(0);
    status = await host.client.get(`/trunks/status?accountId=${s.accountId}`);
    expect(probed().ping).toMatchObject({ state: "down", code: 0, fails: 2 });
    expect(host.logged.join("\n")).toContain("trunk stopped answering OPTIONS");
    await probe(404);
    status = await host.client.get(`/trunks/status?accountId=${s.accountId}`);
    expect(probed().ping).toMatchObject({ state: "up", code: 404, fails: 0 });
    expect(host.logged.join("\n")).toContain("trunk answers OPTIONS again");

    await tick({ registrations: [{ account_id: s.accountId, trunk_id: s.ids.registered, status: 1 }] });
    await host.client.post("/trunks/tick", { node: "edge-2", interval: 5, registrations: [{ account_id: s.accountId, trunk_id: s.ids.registered, status: -99 }] });
    await applyTrunkRegistration(host.platform.live, { account_id: s.accountId, trunk_id: s.ids.pbx!, contact: "sip:pbx@192.0.2.80", expires: 60 });
    status = await host.client.get(`/trunks/status?accountId=${s.accountId}`);
    const byName = Object.fromEntries(status.body.data.map((t: any) => [t.name, t]));
    expect(byName.registered.registrations).toEqual([
      { node: "edge-1", state: "registered", at: expect.any(Number) },
      { node: "edge-2", state: "failed", at: expect.any(Number) },
    ]);
    expect(byName.registered.ping).toBeNull();
    expect(byName.pbx).toMatchObject({ registered_contacts: 1, registrations: [], ping: null });
  });

  test("two nodes' misses reported at once both count (no lost update between instances); a node's probe older than its last one changes nothing", async () => {
    const s = await seed();
    const at = Date.now();
    const miss = (node: string, when: number) => recordTrunkProbes(host.platform.live, s.accountId, [{ trunk_id: s.ids.probed!, code: 408, node, at: when }]);
    // edge-2's tick began a moment before edge-1's (its instance read longer, or its clock is behind).
    await Promise.all([miss("edge-1", at), miss("edge-2", at - 1)]);
    expect((await readTrunkHealth(host.platform.live, s.accountId)).get(s.ids.probed!)).toMatchObject({ state: "down", fails: 2 });
    await recordTrunkProbes(host.platform.live, s.accountId, [{ trunk_id: s.ids.probed!, code: 200, node: "edge-1", at: at + 1000 }]);
    const late = await recordTrunkProbes(host.platform.live, s.accountId, [{ trunk_id: s.ids.probed!, code: 408, node: "edge-1", at: at + 500 }]);
    expect(late[s.ids.probed!]!.after).toMatchObject({ state: "up", fails: 0, code: 200 });
    expect((await readTrunkHealth(host.platform.live, s.accountId)).get(s.ids.probed!)).toMatchObject({ state: "up", fails: 0, code: 200, node: "edge-1" });
    // One after the other (whatever order the two writes above took): another node's probe a moment
    // older than the last one written still counts.
    await miss("edge-1", at + 2000);
    await miss("edge-2", at + 1999);
    expect((await readTrunkHealth(host.platform.live, s.accountId)).get(s.ids.probed!)).toMatchObject({ fails: 2 });
  });

  test("reports of what the node was not asked to do are left out: a probe of a trunk that is not probed or of another account, the state of another node's registration", async () => {
    const s = await seed();
    const stranger = newId("acc");
    for (let i = 0; i < 2; i++) {
      const r = await tick({
        probes: [
          { account_id: s.accountId, trunk_id: s.ids.pbx, code: 408 },
          { account_id: stranger, trunk_id: s.ids.probed, code: 408 },
        ],
        registrations: [{ account_id: s.accountId, trunk_id: s.ids["edge2-only"], status: 1, version: "x" }],
      });
      expect(r.status).toBe(200);
    }
    const status = await host.client.get(`/trunks/status?accountId=${s.accountId}`);
    const byName = Object.fromEntries(status.body.data.map((t: any) => [t.name, t]));
    expect([...(await readTrunkHealth(host.platform.live, s.accountId)).keys()]).toEqual([]);
    expect(byName.probed.ping).toBeNull();
    expect(byName["edge2-only"].registrations).toEqual([]);
    expect(await readTrunkHealth(host.platform.live, stranger)).toEqual(new Map());
  });

  test("malformed ticks: 400 naming the field; an unknown account's status: 404; another address: 403", async () => {
    for (const [body, path] of [
      [{ node: "edge 1", interval: 5 }, "/node"],
      [{ node: "edge-1", interval: 0 }, "/interval"],
      [{ node: "edge-1", interval: 5, probes: [{ account_id: "acc_x", trunk_id: newId("trk"), code: 200 }] }, "/probes/0/account_id"],
      [{ node: "edge-1", interval: 5, probes: [{ account_id: newId("acc"), trunk_id: newId("trk"), code: 900 }] }, "/probes/0/code"],
    ] as const) {
      const r = await host.client.post("/trunks/tick", body);
      expect(r.status, JSON.stringify(body)).toBe(400);
      expect(r.body.details.map((d: any) => d.path)).toContain(path);
    }
    expect((await host.client.get(`/trunks/status?accountId=${newId("acc")}`)).status).toBe(404);
    expect((await host.client.get(`/trunks/status?accountId=nope`)).status).toBe(400);
    const closed = await testPlatform({ env: { CONTROL_ALLOW: "10.255.0.0/16" } });
    const gated = listenControl(closed, [trunkRoutes]);
    try {
      expect((await gated.post("/trunks/tick", { node: "edge-1", interval: 5 })).status).toBe(403);
    } finally {
      await gated.stop();
      await closed.close();
    }
  });
});
