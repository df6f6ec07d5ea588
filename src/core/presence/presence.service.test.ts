/** Registrations in the live store: what the router reads (userContacts), expiry with an injected clock, bounds, dialogs. */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { randomUUID } from "node:crypto";
import type { Platform } from "../platform.ts";
import { storeKind, testPlatform } from "../../../test/support/platform.ts";
import { newId } from "../ids/ids.ts";
import { presenceKeys } from "./presence-keys.ts";
import { applyAgentEvent } from "./agent-state.ts";
import type { EventBus } from "../events/bus.ts";
import { MAX_CONTACTS_PER_DEVICE, MAX_DIALOG_MS, accountRegistrations, applyRegistration, endDialog, trackDialog, userCallCount, userCallStates, userContacts } from "./presence.service.ts";

let platform: Platform;
beforeAll(async () => {
  platform = await testPlatform();
});
afterAll(() => platform.close());

const ids = () => ({ acc: newId("acc"), user: newId("us"), dev: newId("dev") });
const T0 = Date.now();

describe(`registrations [${storeKind}]`, () => {
  test("a binding is readable with every field the router needs, and expires on its own", async () => {
    const { acc, user, dev } = ids();
    await applyRegistration(
      platform.live,
      { account_id: acc, user_id: user, device_id: dev, contact: "sip:1001@192.0.2.10:5062;transport=tcp", expires: 60, webrtc: 0, received: "sip:203.0.113.5:40000", path: "<sip:edge1;lr>", socket: "udp:10.0.0.1:5060", transport: "tcp", user_agent: "Yealink", source_ip: "203.0.113.5" },
      T0,
    );
    expect(await userContacts(platform.live, acc, user, T0 + 1000)).toEqual([
      {
        device_id: dev,
        user_id: user,
        contact: "sip:1001@192.0.2.10:5062;transport=tcp",
        received: "sip:203.0.113.5:40000",
        path: "<sip:edge1;lr>",
        socket: "udp:10.0.0.1:5060",
        transport: "tcp",
        user_agent: "Yealink",
        source_ip: "203.0.113.5",
        expires_at: T0 + 60_000,
        webrtc: 0,
      },
    ]);
    expect(await userContacts(platform.live, acc, user, T0 + 59_999)).toHaveLength(1);
    expect(await userContacts(platform.live, acc, user, T0 + 60_000)).toEqual([]);
    expect((await accountRegistrations(platform.live, acc, T0 + 61_000)).size).toBe(0);
  });

  test("re-registering refreshes the deadline; expires 0 removes only that binding", async () => {
    const { acc, user, dev } = ids();
    const dev2 = newId("dev");
    await applyRegistration(platform.live, { account_id: acc, user_id: user, device_id: dev, contact: "sip:a@192.0.2.1", expires: 60, webrtc: 0 }, T0);
    await applyRegistration(platform.live, { account_id: acc, user_id: user, device_id: dev2, contact: "sip:b@192.0.2.2", expires: 60, webrtc: 1 }, T0);
    await applyRegistration(platform.live, { account_id: acc, user_id: user, device_id: dev, contact: "sip:a@192.0.2.1", expires: 120, webrtc: 0 }, T0 + 50_000);
    const at90 = await userContacts(platform.live, acc, user, T0 + 90_000);
    expect(at90.map((c) => [c.contact, c.expires_at])).toEqual([["sip:a@192.0.2.1", T0 + 170_000]]);
    const reg = (await accountRegistrations(platform.live, acc, T0 + 1000)).get(user)!;
    expect(reg.contacts).toBe(2);
    expect([...reg.devices].sort()).toEqual([dev, dev2].sort());
    await applyRegistration(platform.live, { account_id: acc, user_id: user, device_id: dev2, contact: "sip:b@192.0.2.2", expires: 0, webrtc: 1 }, T0 + 1000);
    expect((await userContacts(platform.live, acc, user, T0 + 2000)).map((c) => c.device_id)).toEqual([dev]);
    expect((await accountRegistrations(platform.live, acc, T0 + 2000)).get(user)!.devices.size).toBe(1);
  });

  test(`one device keeps at most ${MAX_CONTACTS_PER_DEVICE} bindings: the soonest-expiring go first`, async () => {
    const { acc, user, dev } = ids();
    for (let i = 0; i < MAX_CONTACTS_PER_DEVICE + 2; i++) {
      await applyRegistration(platform.live, { account_id: acc, user_id: user, device_id: dev, contact: `sip:x@192.0.2.${i + 1}`, expires: 100 + i, webrtc: 0 }, T0);
    }
    const live = await userContacts(platform.live, acc, user, T0 + 1);
    expect(live).toHaveLength(MAX_CONTACTS_PER_DEVICE);
    expect(live.map((c) => c.contact)).not.toContain("sip:x@192.0.2.1");
    expect(live.map((c) => c.contact)).not.toContain("sip:x@192.0.2.2");
    expect((await accountRegistrations(platform.live, acc, T0 + 1)).get(user)!.contacts).toBe(MAX_CONTACTS_PER_DEVICE);
  });

  test("accounts do not see each other's bindings", async () => {
    const a = ids();
    const b = ids();
    await applyRegistration(platform.live, { account_id: a.acc, user_id: a.user, device_id: a.dev, contact: "sip:1@192.0.2.1", expires: 60, webrtc: 0 }, T0);
    // The binding is there for its own account…
    expect((await userContacts(platform.live, a.acc, a.user, T0 + 1)).map((c) => c.contact)).toEqual(["sip:1@192.0.2.1"]);
    expect((await accountRegistrations(platform.live, a.acc, T0 + 1)).size).toBe(1);
    // …and not for another.
    expect(await userContacts(platform.live, b.acc, a.user, T0 + 1)).toEqual([]);
    expect((await accountRegistrations(platform.live, b.acc, T0 + 1)).size).toBe(0);
  });
});

describe(`dialog bookkeeping [${storeKind}]`, () => {
  test("early and confirmed count; terminated releases every user; a late event does not revive the call", async () => {
    const { acc, user } = ids();
    const other = newId("us");
    const callId = randomUUID();
    await trackDialog(platform.live, acc, callId, "early", [user, other]);
    expect(await userCallStates(platform.live, acc, user)).toEqual({ early: 1, confirmed: 0 });
    await trackDialog(platform.live, acc, callId, "confirmed", [user]);
    await trackDialog(platform.live, acc, callId, "early", [user]); // reordered: stays confirmed
    expect(await userCallStates(platform.live, acc, user)).toEqual({ early: 0, confirmed: 1 });
    await trackDialog(platform.live, acc, randomUUID(), "confirmed", [user]);
    expect(await userCallCount(platform.live, acc, user)).toBe(2);
    // Terminated without legs still finds the users the dialog touched.
    expect((await endDialog(platform.live, acc, callId, [])).sort()).toEqual([user, other].sort());
    expect(await userCallCount(platform.live, acc, user)).toBe(1);
    expect(await userCallCount(platform.live, acc, other)).toBe(0);
    await trackDialog(platform.live, acc, callId, "confirmed", [user]);
    expect(await userCallCount(platform.live, acc, user)).toBe(1);
  });

  test("a user's calls are counted by state however many there are; an entry older than MAX_DIALOG_MS stops counting and is dropped", async () => {
    const { acc, user } = ids();
    const now = Date.now();
    const old = randomUUID();
    await trackDialog(platform.live, acc, old, "confirmed", [user], now - MAX_DIALOG_MS - 60_000);
    const calls = Array.from({ length: 300 }, () => randomUUID());
    await Promise.all(calls.map((c, i) => trackDialog(platform.live, acc, c, i % 3 === 0 ? "confirmed" : "early", [user], now)));
    expect(await userCallStates(platform.live, acc, user, now)).toEqual({ early: 200, confirmed: 100 });
    // An early call confirmed later keeps the time it was first seen; the stale one was pruned by the writes.
    await trackDialog(platform.live, acc, calls[1]!, "confirmed", [user], now + 5_000);
    expect(await userCallStates(platform.live, acc, user, now)).toEqual({ early: 199, confirmed: 101 });
    const key = presenceKeys.userDialogs(acc, user);
    expect(await platform.live.zscore(key, calls[1]!)).toBe(now);
    expect(await platform.live.zscore(key, old)).toBeNull();
    // Counted at a later time, the calls first seen now are stale too.
    expect(await userCallStates(platform.live, acc, user, now + MAX_DIALOG_MS + 1)).toEqual({ early: 0, confirmed: 0 });
  });
});

describe(`agent state and its event [${storeKind}]`, () => {
  /** The bus, whose transactions fail as `fail` says: in the emit, or at the commit (after the body ran). */
  function failingBus(fail: { at: "emit" | "commit" | null }): EventBus {
    return {
      ...platform.events,
      transaction: (fn) =>
        platform.events.transaction(async (tx, emit, emitMany) => {
          const result = await fn(tx, async (...args) => {
            if (fail.at === "emit") {
              fail.at = null;
              throw new Error("database unavailable");
            }
            return emit(...args);
          }, emitMany);
          if (fail.at === "commit") {
            fail.at = null;
            throw new Error("commit failed");
          }
          return result;
        }),
    };
  }

  test("a state change whose event cannot be written does not happen: the retry changes it and emits agent.state once", async () => {
    const acc = newId("acc");
    const user = newId("us");
    for (const at of ["emit", "commit"] as const) {
      const events = failingBus({ at });
      const before = await platform.live.get(presenceKeys.agentState(acc, user));
      const input = at === "emit" ? {} : { reason: "lunch" };
      await expect(applyAgentEvent({ live: platform.live, events }, acc, user, at === "emit" ? "login" : "pause", input)).rejects.toThrow(at === "emit" ? "database unavailable" : "commit failed");
      expect(await platform.live.get(presenceKeys.agentState(acc, user))).toBe(before);
      const state = await applyAgentEvent({ live: platform.live, events }, acc, user, at === "emit" ? "login" : "pause", input);
      expect(state.state).toBe(at === "emit" ? "ready" : "paused");
    }
    const stored = await platform.events.since(acc, 0, 10);
    expect(stored.map((e) => [e.event, e.data.state, e.data.previous_state])).toEqual([
      ["agent.state", "ready", "logged_out"],
      ["agent.state", "paused", "ready"],
    ]);
  });
});
