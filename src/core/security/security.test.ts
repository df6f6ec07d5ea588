/** Ban snapshots and the allowlist, on the stores (bans are global: each test uses its own addresses and node names). */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Platform } from "../platform.ts";
import { storeKind, testPlatform } from "../../../test/support/platform.ts";
import { canonicalIp, canonicalRange } from "./address.ts";
import { addToAllowlist, listAllowlist, parseReport, removeFromAllowlist, reportBans, searchBans, SILENT_NODE_SEC } from "./security.service.ts";
import { AppError } from "../errors/app-error.ts";
import { MAX_REPORT_BANS } from "./security.model.ts";
import { securityBans } from "./security.schema.ts";
import { and, count, eq } from "drizzle-orm";

let platform: Platform;
beforeAll(async () => {
  platform = await testPlatform();
});
afterAll(() => platform.close());

/** A /24 of 10.0.0.0/8 nobody else in this run uses: "10.a.b." */
let netCounter = 0;
function freshNet(): string {
  const n = (Date.now() % 60_000) * 4 + (++netCounter % 4) + Math.floor(Math.random() * 4096) * 240_000;
  return `10.${(n >> 8) & 0xff}.${n & 0xff}.`;
}
const node = () => `edge-${crypto.randomUUID().slice(0, 8)}`;

describe("address canonical text", () => {
  test("one address is one text whatever way it is written; bad input is null", () => {
    expect(canonicalIp("::FFFF:10.0.0.1")).toBe("10.0.0.1");
    expect(canonicalIp("2001:DB8:0:0:0:0:0:1")).toBe("2001:db8::1");
    expect(canonicalIp("2001:db8:0:1:0:0:0:0")).toBe("2001:db8:0:1::");
    expect(canonicalIp("[::1]")).toBe("::1");
    expect(canonicalIp("10.0.0.256")).toBeNull();
    expect(canonicalIp("example.com")).toBeNull();
    expect(canonicalRange("10.1.2.3/8")?.text).toBe("10.0.0.0/8");
    expect(canonicalRange("10.1.2.3/32")?.text).toBe("10.1.2.3");
    expect(canonicalRange("2001:db8::7/64")?.text).toBe("2001:db8::/64");
    expect(canonicalRange("10.0.0.0/33")).toBeNull();
    expect(canonicalRange("10.0.0.0/")).toBeNull();
  });
});

describe(`ban reports [${storeKind}]`, () => {
  test("two nodes reporting the same banned addresses at once both succeed (they deadlocked on PostgreSQL: a 500, the lifts lost)", async () => {
    const net = freshNet();
    const [a, b] = [node(), node()];
    const bans = Array.from({ length: 20 }, (_, i) => ({ ip: `${net}${i + 1}`, reason: "pike", hits: i }));
    const t0 = Math.floor(Date.now() / 1000);
    await reportBans(platform.db, { node: a, bans }, { now: t0 });
    await reportBans(platform.db, { node: b, bans }, { now: t0 });
    const rounds = Array.from({ length: 30 }, (_, i) => [
      reportBans(platform.db, { node: a, bans }, { now: t0 + i }),
      reportBans(platform.db, { node: b, bans: [...bans].reverse() }, { now: t0 + i }),
    ]).flat();
    const outcomes = await Promise.allSettled(rounds);
    expect(outcomes.filter((o) => o.status === "rejected").map((o) => String((o as PromiseRejectedResult).reason))).toEqual([]);
    // Held by both nodes: flagged everywhere.
    const rows = await platform.db.select().from(securityBans).where(eq(securityBans.ip, `${net}1`));
    expect(rows.map((r) => r.flagged)).toEqual([1, 1]);
  });

  test("a snapshot of the most bans a report may carry is recorded whole, and the next one expires them", async () => {
    const n = node();
    const prefix = `2001:db8:${crypto.randomUUID().slice(0, 4)}:${crypto.randomUUID().slice(0, 4)}::`;
    const bans = Array.from({ length: MAX_REPORT_BANS }, (_, i) => ({ ip: `${prefix}${(i + 1).toString(16)}`, reason: "pike", hits: i }));
    const t0 = 1_900_000_000;
    expect(await reportBans(platform.db, parseReport({ node: n, bans }), { now: t0 })).toMatchObject({ lift: [] });
    const active = async () => (await platform.db.select({ n: count() }).from(securityBans).where(and(eq(securityBans.node, n), eq(securityBans.status, "active"))))[0]!.n;
    expect(await active()).toBe(MAX_REPORT_BANS);
    // A partial snapshot (the node could not send them all) expires none of those it left out.
    await reportBans(platform.db, parseReport({ node: n, bans: bans.slice(0, 10), partial: 1 }), { now: t0 + 20 });
    expect(await active()).toBe(MAX_REPORT_BANS);
    await reportBans(platform.db, parseReport({ node: n, bans: bans.slice(0, 10) }), { now: t0 + 30 });
    expect(await active()).toBe(10);
  });

  test("a snapshot records bans; the next snapshot without one expires it; a ban coming back is a repeat offender", async () => {
    const net = freshNet();
    const n = node();
    const t0 = 1_900_000_000;
    const a = `${net}1`;
    const b = `${net}2`;
    expect(await reportBans(platform.db, { node: n, bans: [{ ip: a, reason: "pike", hits: 40, expires_at: t0 + 300 }, { ip: b, reason: "auth" }] }, { now: t0 })).toMatchObject({ lift: [] });
    let bans = await searchBans(platform.db, { q: net }, t0);
    expect(bans.map((x) => [x.ip, x.status, x.reason, x.hits, x.flagged, x.ban_count]).sort()).toEqual([
      [a, "active", "pike", 40, 0, 1],
      [b, "active", "auth", 0, 0, 1],
    ]);
    expect(bans.find((x) => x.ip === a)).toMatchObject({ node: n, first_seen: t0, last_seen: t0, expires_at: t0 + 300 });

    await reportBans(platform.db, { node: n, bans: [{ ip: a, reason: "pike", hits: 90 }] }, { now: t0 + 30 });
    bans = await searchBans(platform.db, { q: net }, t0 + 30);
    expect(bans.find((x) => x.ip === a)).toMatchObject({ status: "active", hits: 90, first_seen: t0, last_seen: t0 + 30 });
    expect(bans.find((x) => x.ip === b)).toMatchObject({ status: "expired", last_seen: t0 });

    // b comes back: banned a second time by this node.
    await reportBans(platform.db, { node: n, bans: [{ ip: a }, { ip: b, reason: "pike" }] }, { now: t0 + 60 });
    expect((await searchBans(platform.db, { q: b }, t0 + 60))[0]).toMatchObject({ status: "active", ban_count: 2, flagged: 1, first_seen: t0 });
    expect(await searchBans(platform.db, { q: net, flagged: "1" }, t0 + 60)).toHaveLength(1);
    expect((await searchBans(platform.db, { q: net, status: "expired" }, t0 + 60))).toHaveLength(0);
  });

  test("the same address banned by two nodes is flagged on both; many failed digests flag it too", async () => {
    const net = freshNet();
    const [n1, n2] = [node(), node()];
    const t0 = 1_900_000_000;
    await reportBans(platform.db, { node: n1, bans: [{ ip: `${net}7` }] }, { now: t0 });
    expect((await searchBans(platform.db, { q: `${net}7` }, t0))[0]!.flagged).toBe(0);
    await reportBans(platform.db, { node: n2, bans: [{ ip: `${net}7` }] }, { now: t0 + 1 });
    const rows = await searchBans(platform.db, { q: `${net}7` }, t0 + 1);
    expect(rows.map((r) => `${r.node}:${r.flagged}`).sort()).toEqual([`${n1}:1`, `${n2}:1`].sort());

    const failures = async (ip: string) => (ip === `${net}8` ? 25 : 3);
    await reportBans(platform.db, { node: n1, bans: [{ ip: `${net}7` }, { ip: `${net}8` }, { ip: `${net}9` }] }, { now: t0 + 2, authFailures: failures });
    const flagged = (await searchBans(platform.db, { q: net, flagged: "1" }, t0 + 2)).map((r) => r.ip);
    expect(flagged).toContain(`${net}8`);
    expect(flagged).not.toContain(`${net}9`);
  });

  test("a ban that ended long ago on a node gone silent does not flag another node's new ban of the address", async () => {
    const net = freshNet();
    const [n1, n2] = [node(), node()];
    const t0 = 1_900_100_000;
    await reportBans(platform.db, { node: n1, bans: [{ ip: `${net}7`, banned_at: t0 - 100, expires_at: t0 + 900 }] }, { now: t0 });
    // An hour later (n1 silent since, its ban's deadline long past), n2 bans the address.
    await reportBans(platform.db, { node: n2, bans: [{ ip: `${net}7`, banned_at: t0 + 3600, expires_at: t0 + 4500 }] }, { now: t0 + 3600 });
    const rows = await searchBans(platform.db, { q: `${net}7` }, t0 + 3600);
    expect(rows.map((r) => `${r.node}:${r.status}:${r.flagged}`).sort()).toEqual([`${n1}:expired:0`, `${n2}:active:0`].sort());
  });

  test("an allow-listed address is never recorded and comes back in lift; adding a range lifts existing bans", async () => {
    const net = freshNet();
    const n = node();
    const now = 1_900_000_000;
    await reportBans(platform.db, { node: n, bans: [{ ip: `${net}20` }, { ip: `${net}21` }, { ip: `${net}99` }] }, { now });
    const added = await addToAllowlist(platform.db, { address: `${net}16/28`, note: "carrier" }, now);
    expect(added).toMatchObject({ created: true, lifted: 2, entry: { address: `${net}16/28`, note: "carrier" } });
    const rows = await searchBans(platform.db, { q: net }, now);
    expect(rows.map((r) => [r.ip, r.status]).sort()).toEqual([[`${net}20`, "lifted"], [`${net}21`, "lifted"], [`${net}99`, "active"]]);

    // The node still holds them at its next report: it is told to lift them, and nothing is recorded.
    const r = await reportBans(platform.db, { node: n, bans: [{ ip: `${net}21` }, { ip: `${net}20` }, { ip: `${net}99` }, { ip: `${net}17` }] }, { now: now + 30 });
    expect(r.lift).toEqual([`${net}17`, `${net}20`, `${net}21`]);
    expect(await searchBans(platform.db, { q: `${net}17` }, now + 30)).toEqual([]);
    expect((await searchBans(platform.db, { q: `${net}2` }, now + 30)).map((x) => x.status)).toEqual(["lifted", "lifted"]);

    expect((await addToAllowlist(platform.db, { address: `${net}16/28` }, now)).created).toBe(false); // the same range again
    // Host bits below the prefix: refused (as in trunk ACLs), not widened to the range in silence.
    await expect(addToAllowlist(platform.db, { address: `${net}20/28` }, now)).rejects.toMatchObject({ code: "validation_failed" });
    expect((await listAllowlist(platform.db)).find((a) => a.address === `${net}16/28`)?.note).toBe("carrier");
    // lift names an address as the node wrote it: that text is the key of the node's own ban table.
    const v6 = `2001:db8:${(Math.floor(Math.random() * 0xfff0) + 1).toString(16)}`;
    await addToAllowlist(platform.db, { address: `${v6}::/48` }, now);
    const asSent = `${v6.toUpperCase()}:0:0:0:0:5`;
    expect((await reportBans(platform.db, { node: n, bans: [{ ip: asSent }] }, { now: now + 40 })).lift).toEqual([asSent]);
    await removeFromAllowlist(platform.db, `${v6}::/48`);
    await removeFromAllowlist(platform.db, `${net}16/28`);
    expect((await listAllowlist(platform.db)).some((a) => a.address === `${net}16/28`)).toBe(false);
    const again = await reportBans(platform.db, { node: n, bans: [{ ip: `${net}17` }] }, { now: now + 60 });
    expect(again.lift).toEqual([]);
    expect((await searchBans(platform.db, { q: `${net}17` }, now + 60))[0]?.status).toBe("active");
  });

  test("a ban past its deadline, or of a silent node, reads as expired", async () => {
    const net = freshNet();
    const t0 = 1_900_000_000;
    await reportBans(platform.db, { node: node(), bans: [{ ip: `${net}1`, expires_at: t0 + 100 }, { ip: `${net}2` }] }, { now: t0 });
    expect((await searchBans(platform.db, { q: net, status: "active" }, t0 + 50))).toHaveLength(2);
    expect((await searchBans(platform.db, { q: net, status: "active" }, t0 + 100)).map((r) => r.ip)).toEqual([`${net}2`]);
    expect((await searchBans(platform.db, { q: net, status: "active" }, t0 + SILENT_NODE_SEC + 1))).toHaveLength(0);
  });

  test("a ban the node held while it was silent is the same ban when it reports again; one set since is a new one", async () => {
    const net = freshNet();
    const n = node();
    const t0 = 1_900_000_000;
    const ban = { ip: `${net}3`, banned_at: t0, expires_at: t0 + 3600 };
    await reportBans(platform.db, { node: n, bans: [ban] }, { now: t0 });
    const quiet = t0 + SILENT_NODE_SEC + 30;
    expect((await searchBans(platform.db, { q: ban.ip }, quiet))[0]?.status).toBe("expired");
    await reportBans(platform.db, { node: n, bans: [ban] }, { now: quiet + 10 });
    expect((await searchBans(platform.db, { q: ban.ip }, quiet + 10))[0]).toMatchObject({ status: "active", ban_count: 1, flagged: 0 });
    await reportBans(platform.db, { node: n, bans: [{ ...ban, banned_at: quiet + 20 }] }, { now: quiet + 30 });
    expect((await searchBans(platform.db, { q: ban.ip }, quiet + 30))[0]).toMatchObject({ status: "active", ban_count: 2, flagged: 1 });
  });

  test("a node sending partial snapshots keeps the bans they leave out, however long; once it is silent they expire", async () => {
    const net = freshNet();
    const n = node();
    const t0 = 1_900_200_000;
    const [a, b] = [`${net}1`, `${net}2`];
    await reportBans(platform.db, parseReport({ node: n, bans: [{ ip: a, banned_at: t0 - 10 }, { ip: b, banned_at: t0 - 10 }], ts: t0 }), { now: t0 });
    // Its table walked in one order, the same ban falls past the cut of every report.
    for (let i = 1; i <= 6; i++) await reportBans(platform.db, parseReport({ node: n, bans: [{ ip: a, banned_at: t0 - 10 }], ts: t0 + i * 30, partial: 1 }), { now: t0 + i * 30 });
    const held = await searchBans(platform.db, { q: net }, t0 + 180);
    expect(held.map((r) => [r.ip, r.status, r.last_seen]).sort()).toEqual([
      [a, "active", t0 + 180],
      [b, "active", t0], // the last snapshot that carried it
    ]);
    // Silent: every ban of the node expires, the ones its reports left out too.
    expect((await searchBans(platform.db, { q: net, status: "active" }, t0 + 180 + SILENT_NODE_SEC + 1))).toEqual([]);
  });

  test("one ban held all along is banned once whatever the node's clock says; a ban set again still counts", async () => {
    const net = freshNet();
    const n = node();
    const t0 = 1_900_300_000;
    const report = (ip: string, bannedAt: number, ts: number, now: number) => reportBans(platform.db, parseReport({ node: n, bans: [{ ip, banned_at: bannedAt }], ts }), { now });
    const record = async (ip: string, now: number) => (await searchBans(platform.db, { q: ip }, now)).find((r) => r.ip === ip);
    // The node's clock 5 s ahead: its ban reads as set after our first sighting of it.
    await report(`${net}1`, t0 + 5, t0 + 7, t0 + 2);
    await report(`${net}1`, t0 + 5, t0 + 37, t0 + 32);
    expect(await record(`${net}1`, t0 + 33)).toMatchObject({ ban_count: 1, flagged: 0, first_seen: t0 });
    // 5 min ahead: a banned_at in our future at every report.
    for (let i = 0; i < 5; i++) await report(`${net}2`, t0 + 300, t0 + 300 + i * 30, t0 + i * 30);
    expect(await record(`${net}2`, t0 + 120)).toMatchObject({ ban_count: 1, flagged: 0, first_seen: t0 });
    // Without ts the gap is unknown: a banned_at in our future is no time we can compare, not a new ban each time.
    for (let i = 0; i < 5; i++) await reportBans(platform.db, parseReport({ node: n, bans: [{ ip: `${net}5`, banned_at: t0 + 300 }] }), { now: t0 + i * 30 });
    expect(await record(`${net}5`, t0 + 120)).toMatchObject({ ban_count: 1, flagged: 0, first_seen: t0 });
    // Banned in the second of a snapshot; the next took 30 s by the node's clock and 31 by ours (whole seconds).
    await report(`${net}3`, t0 + 10, t0 + 10, t0 + 10);
    await report(`${net}3`, t0 + 10, t0 + 40, t0 + 41);
    expect(await record(`${net}3`, t0 + 41)).toMatchObject({ ban_count: 1, flagged: 0 });
    // A banned_at later than the snapshot (the node's clock was set back since) is the snapshot's time.
    await report(`${net}4`, t0 + 900, t0 + 100, t0 + 100);
    expect(await record(`${net}4`, t0 + 100)).toMatchObject({ ban_count: 1, first_seen: t0 + 100 });
    // Still 5 s ahead, the node lets the ban of .1 end and bans it again: a second ban.
    await reportBans(platform.db, parseReport({ node: n, bans: [], ts: t0 + 67 }), { now: t0 + 62 });
    await report(`${net}1`, t0 + 80, t0 + 97, t0 + 92);
    expect(await record(`${net}1`, t0 + 92)).toMatchObject({ status: "active", ban_count: 2, flagged: 1 });
    // And banned again between two reports (its row never ended): banned_at after our last sighting.
    await report(`${net}1`, t0 + 110, t0 + 127, t0 + 122);
    expect(await record(`${net}1`, t0 + 122)).toMatchObject({ ban_count: 3 });
  });

  test("bad input changes nothing: every bad address is named", async () => {
    const net = freshNet();
    const n = node();
    const bad = (fn: () => unknown) => {
      try {
        fn();
      } catch (e) {
        return (e as AppError).extra.details;
      }
      throw new Error("no error");
    };
    expect(bad(() => parseReport({ node: n, bans: [{ ip: "1.2.3.4", hits: -1 }] }))).toEqual([{ path: "/bans/0/hits", message: expect.any(String) }]);
    expect(bad(() => parseReport({ node: "bad node", bans: [] }))).toEqual([{ path: "/node", message: expect.any(String) }]);
    expect(bad(() => parseReport({ node: n, bans: "[x" }))).toEqual([{ path: "/bans", message: expect.any(String) }]);
    expect(bad(() => parseReport({ node: n, bans: [], extra: 1 }))).toEqual([{ path: "/extra", message: expect.any(String) }]);
    expect(parseReport({ node: n, bans: JSON.stringify([{ ip: `${net}1` }]), ts: "1900000000" })).toEqual({ node: n, bans: [{ ip: `${net}1` }], ts: 1_900_000_000 });
    const error = await reportBans(platform.db, { node: n, bans: [{ ip: `${net}1` }, { ip: "not-an-ip" }, { ip: "10.0.0.300" }] }).catch((e: AppError) => e);
    expect((error as AppError).extra.details).toEqual([
      { path: "/bans/1/ip", message: "Not an IP address." },
      { path: "/bans/2/ip", message: "Not an IP address." },
    ]);
    expect(await searchBans(platform.db, { q: net })).toEqual([]);
    await expect(addToAllowlist(platform.db, { address: "10.0.0.0/40" })).rejects.toThrow(AppError);
    await expect(removeFromAllowlist(platform.db, `${net}0/24`)).rejects.toMatchObject({ code: "not_found" });
  });
});
