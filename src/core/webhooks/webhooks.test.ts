/** The SSRF guard's address classification, event-name normalization, and the catalog's samples. */
import { describe, expect, test } from "bun:test";
import { Value } from "@sinclair/typebox/value";
import { blockedReason, checkWebhookUrl } from "./url-safety.ts";
import { EVENT_NAMES, EventData, eventCatalog, type EventName } from "./event-catalog.ts";
import { generateWebhookSecret, normalizeEvents } from "./webhooks.service.ts";
import { AppError } from "../errors/app-error.ts";

async function refusal(url: string, allowPrivate = false): Promise<string> {
  try {
    await checkWebhookUrl(url, { allowPrivate });
  } catch (error) {
    expect(error).toBeInstanceOf(AppError);
    const details = (error as AppError).extra.details as Array<{ path: string; message: string }>;
    expect(details[0]?.path).toBe("/url");
    return details[0]!.message;
  }
  throw new Error(`${url} was accepted`);
}

describe("blockedReason", () => {
  const blocked: Array<[string, RegExp]> = [
    ["127.0.0.1", /loopback/],
    ["127.255.255.254", /loopback/],
    ["::1", /loopback/],
    ["[::1]", /loopback/],
    ["::ffff:127.0.0.1", /loopback/],
    ["::ffff:7f00:1", /loopback/],
    ["10.0.0.1", /private/],
    ["10.255.255.255", /private/],
    ["172.16.0.1", /private/],
    ["172.31.255.255", /private/],
    ["192.168.1.10", /private/],
    ["::ffff:192.168.1.10", /private/],
    ["fc00::1", /private/],
    ["fd12:3456::1", /private/],
    ["169.254.169.254", /link-local.*metadata/],
    ["169.254.0.1", /link-local/],
    ["fe80::1", /link-local/],
    ["fe80::1%eth0", /link-local/],
    ["febf::1", /link-local/],
    ["fec0::1", /site-local/],
    ["feff::1", /site-local/],
    ["3fff::1", /documentation/],
    ["5f00::1", /SRv6/],
    ["100.64.0.1", /carrier-grade NAT/],
    ["100.127.255.255", /carrier-grade NAT/],
    ["0.0.0.0", /this network/],
    ["0.1.2.3", /this network/],
    ["::", /unspecified/],
    ["224.0.0.1", /multicast/],
    ["239.255.255.250", /multicast/],
    ["ff02::1", /multicast/],
    ["255.255.255.255", /reserved/],
    ["not-an-ip", /not an IP/],
    ["64:ff9b::a9fe:a9fe", /link-local.*inside an IPv6/],
    ["64:ff9b::7f00:1", /loopback.*inside an IPv6/],
    ["2002:a9fe:a9fe::", /link-local.*inside an IPv6/],
    ["2002:0a00:0001:1::1", /private.*inside an IPv6/],
    ["64:ff9b:1::1", /local-use NAT64/],
    ["2001:0:4136:e378::1", /Teredo/],
    ["198.18.0.1", /benchmarking/],
    ["198.19.255.254", /benchmarking/],
    ["192.0.0.8", /IETF protocol/],
    ["192.0.2.1", /documentation/],
    ["198.51.100.7", /documentation/],
    ["203.0.113.9", /documentation/],
    ["2001:db8::1", /documentation/],
    ["100::1", /discard-only/],
    ["::127.0.0.1", /IPv4-compatible/],
    ["::8.8.8.8", /IPv4-compatible/],
    ["::ffff:0:7f00:1", /IPv4-translated/],
    ["::ffff:127.0.0.1", /loopback/],
  ];
  for (const [address, why] of blocked) {
    test(`${address} is refused`, () => {
      expect(blockedReason(address)).toMatch(why);
    });
  }

  const allowed = ["8.8.8.8", "1.1.1.1", "172.15.255.255", "172.32.0.1", "100.63.255.255", "100.128.0.1", "169.253.255.255", "11.0.0.1", "192.167.1.1", "2606:4700:4700::1111", "2a00:1450:4001:80b::200e", "::ffff:8.8.8.8", "198.17.255.255", "198.20.0.1", "192.0.1.255", "203.0.114.1", "2001:4860:4860::8888", "64:ff9b::808:808", "2002:808:808::1"];
  for (const address of allowed) {
    test(`${address} is public`, () => {
      expect(blockedReason(address)).toBeNull();
    });
  }
});

describe("checkWebhookUrl", () => {
  
  test("refuses what is not an https URL, carries credentials, or is too long", async () => {
    expect(await refusal("http://8.8.8.8/hook")).toMatch(/https/);
    expect(await refusal("ftp://8.8.8.8/hook")).toMatch(/https/);
    expect(await refusal("not a url")).toMatch(/Not a URL/);
    expect(await refusal("https://user:pass@8.8.8.8/hook")).toMatch(/user name or password/);
    expect(await refusal("https://user@8.8.8.8/hook")).toMatch(/user name or password/);
    expect(await refusal(`https://8.8.8.8/${"a".repeat(2048)}`)).toMatch(/2048/);
    expect(await refusal("https://8.8.8.8:0/hook")).toBe("Port 0 cannot be delivered to.");
  });

  test("refuses IP literals in blocked ranges, in every spelling the URL parser accepts", async () => {
    for (const url of [
      "https://127.0.0.1/hook",
      "https://[::1]/hook",
      "https://[::ffff:127.0.0.1]/hook",
      "https://169.254.169.254/latest/meta-data/",
      "https://10.1.2.3:8443/x",
      "https://2130706433/hook", // 127.0.0.1 as one number
      "https://0x7f.1/hook", // 127.0.0.1 in hex shorthand
      "https://0/hook",
      "https://[fe80::1]/hook",
      "https://[fd00::5]/hook",
      "https://100.64.1.1/hook",
    ]) {
      expect(await refusal(url), url).toMatch(/not a public address: .+\. Webhooks may only target public addresses\.$/);
    }
  });

  test("resolves names: localhost is refused as loopback", async () => {
    expect(await refusal("https://localhost/hook")).toMatch(/localhost.*loopback/);
  });

  test("a host that does not resolve is refused", async () => {
    expect(await refusal("https://no-such-host.invalid/hook")).toMatch(/does not resolve/);
  });

  test("public literals pass and come back normalized", async () => {
    expect(await checkWebhookUrl("https://8.8.8.8/hook?a=1")).toBe("https://8.8.8.8/hook?a=1");
    expect(await checkWebhookUrl("HTTPS://[2606:4700:4700::1111]:8443/x")).toBe("https://[2606:4700:4700::1111]:8443/x");
  });

  test("allowPrivate (WEBHOOK_ALLOW_PRIVATE=1) lets private targets through, but never http or credentials", async () => {
    expect(await checkWebhookUrl("https://127.0.0.1/hook", { allowPrivate: true })).toBe("https://127.0.0.1/hook");
    expect(await checkWebhookUrl("https://localhost/hook", { allowPrivate: true })).toBe("https://localhost/hook");
    expect(await refusal("http://127.0.0.1/hook", true)).toMatch(/https/);
    expect(await refusal("https://a:b@127.0.0.1/hook", true)).toMatch(/user name/);
    expect(await refusal("https://127.0.0.1/hook", false)).toMatch(/loopback/);
  });
});

describe("normalizeEvents", () => {
  const paths = (fn: () => unknown) => {
    try {
      fn();
    } catch (error) {
      return ((error as AppError).extra.details as Array<{ path: string; message: string }>)[0]!;
    }
    throw new Error("accepted");
  };

  test("defaults to *, de-duplicates, orders by catalog, collapses the full set to *", () => {
    expect(normalizeEvents(undefined)).toEqual(["*"]);
    expect(normalizeEvents("*")).toEqual(["*"]);
    expect(normalizeEvents(" * ")).toEqual(["*"]);
    expect(normalizeEvents("call.ended, call.started,call.ended")).toEqual(["call.started", "call.ended"]);
    expect(normalizeEvents(["fax.sent", "test", "fax.sent"])).toEqual(["fax.sent", "test"]);
    expect(normalizeEvents([...EVENT_NAMES])).toEqual(["*"]);
    expect(normalizeEvents(EVENT_NAMES.join(","))).toEqual(["*"]);
  });

  test("unknown names are listed in one /events detail; empty lists and * mixed with names are refused", () => {
    const d = paths(() => normalizeEvents("call.ended,call.exploded,nope,nope"));
    expect(d.path).toBe("/events");
    expect(d.message).toContain("call.exploded, nope");
    expect(d.message).not.toContain("call.ended");
    expect(paths(() => normalizeEvents(" , ")).path).toBe("/events");
    expect(paths(() => normalizeEvents("*,call.ended")).path).toBe("/events");
    expect(paths(() => normalizeEvents(["CALL.ENDED"])).path).toBe("/events");
  });
});

describe("event catalog", () => {
  test("lists every event of SPEC.md section 6, in order", () => {
    expect(eventCatalog().map((e) => e.name)).toEqual([
      "call.started",
      "call.answered",
      "call.ended",
      "agent.state",
      "message.received",
      "message.status",
      "recording.available",
      "fax.received",
      "fax.sent",
      "fax.failed",
      "campaign.started",
      "campaign.completed",
      "campaign.contact",
      "test",
    ]);
  });

  test("every sample is a full delivery body whose data validates against the event's schema", () => {
    for (const entry of eventCatalog()) {
      expect(Object.keys(entry.sample).sort()).toEqual(["account_id", "data", "event", "ts"]);
      expect(entry.sample.event).toBe(entry.name);
      expect(entry.sample.account_id).toMatch(/^acc_/);
      expect(Number.isInteger(entry.sample.ts) && entry.sample.ts > 1e12).toBe(true); // milliseconds
      expect(entry.description.length).toBeGreaterThan(5);
      const schema = EventData[entry.name as EventName];
      expect(Value.Check(schema, entry.sample.data), `${entry.name}: ${JSON.stringify([...Value.Errors(schema, entry.sample.data)].map((e) => e.path))}`).toBe(true);
    }
  });

  test("call.ended data holds exactly the SPEC fields, and the schema refuses a wrong answered value", () => {
    const ended = eventCatalog().find((e) => e.name === "call.ended")!;
    expect(Object.keys(ended.sample.data).sort()).toEqual(["agent_id", "answered", "billsec", "callId", "direction", "hangup_cause", "queue_id", "ts"]);
    expect(Object.keys(EventData["call.ended"].properties).sort()).toEqual(Object.keys(ended.sample.data).sort());
    expect(Value.Check(EventData["call.ended"], { ...ended.sample.data, answered: true })).toBe(false);
    expect(Value.Check(EventData["call.ended"], { ...ended.sample.data, extra: 1 })).toBe(false);
  });
});

test("generated secrets are whsec_ and 32 random bytes, standard base64 (what Standard Webhooks libraries decode)", () => {
  const a = generateWebhookSecret();
  expect(a).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
  expect(Buffer.from(a.slice(6), "base64").length).toBe(32);
  expect(generateWebhookSecret()).not.toBe(a);
});
