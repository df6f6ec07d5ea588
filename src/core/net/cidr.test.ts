import { describe, expect, test } from "bun:test";
import { ipAllowed, parseCidr, parseCidrList, parseIp } from "./cidr.ts";

describe("cidr", () => {
  const loopback = parseCidrList("127.0.0.0/8,::1/128");

  test("loopback in both families, and IPv4-mapped IPv6", () => {
    expect(ipAllowed("127.0.0.1", loopback)).toBe(true);
    expect(ipAllowed("127.9.9.9", loopback)).toBe(true);
    expect(ipAllowed("::1", loopback)).toBe(true);
    expect(ipAllowed("::ffff:127.0.0.1", loopback)).toBe(true);
    expect(ipAllowed("10.0.0.1", loopback)).toBe(false);
    expect(ipAllowed("::2", loopback)).toBe(false);
  });

  test("prefixes cut at the right bit", () => {
    const r = [parseCidr("10.1.2.128/25"), parseCidr("2001:db8::/32")];
    expect(ipAllowed("10.1.2.200", r)).toBe(true);
    expect(ipAllowed("10.1.2.127", r)).toBe(false);
    expect(ipAllowed("2001:db8:ffff::1", r)).toBe(true);
    expect(ipAllowed("2001:db9::1", r)).toBe(false);
  });

  test("refuses garbage and never matches unparseable addresses", () => {
    expect(() => parseCidr("300.1.1.1/8")).toThrow();
    expect(() => parseCidr("10.0.0.0/33")).toThrow();
    expect(() => parseCidr("10.0.0.0/x")).toThrow();
    expect(() => parseCidr("nope")).toThrow();
    expect(ipAllowed("", loopback)).toBe(false);
    expect(ipAllowed(null, loopback)).toBe(false);
    expect(ipAllowed("localhost", loopback)).toBe(false);
    expect(parseIp("1:2:3:4:5:6:7:8:9")).toBeNull();
    // "::" stands for at least one zero group (PostgreSQL's inet refuses it for none: a 500 before).
    for (const text of ["1::2:3:4:5:6:7:8", "1:2:3:4::5:6:7:8", "::1:2:3:4:5:6:7:8", "1:2:3:4:5:6:7:8::"]) expect(parseIp(text), text).toBeNull();
    expect(parseIp("1::3:4:5:6:7:8")).toEqual({ family: 6, value: 0x0001_0000_0003_0004_0005_0006_0007_0008n });
    // A leading zero reads as octal to URL parsers and inet_aton, as decimal elsewhere: refused.
    for (const text of ["010.0.0.1", "10.00.0.1", "127.0.0.01", "::ffff:010.0.0.1"]) expect(parseIp(text), text).toBeNull();
    expect(() => parseCidr("010.0.0.0/8")).toThrow();
    // One prefix, in plain decimal; a zone only after an IPv6 address.
    for (const text of ["10.77.0.0/16/99", "10.79.0.0/016", "10.0.0.0/", "10.0.0.0/+8"]) expect(() => parseCidr(text), text).toThrow();
    expect(parseIp("10.78.0.1%foo")).toBeNull();
    expect(parseIp("fe80::1%eth0")).not.toBeNull();
    expect(parseIp("10.0.0.0")).not.toBeNull();
    // Brackets only as a pair around IPv6 text; a zone is not empty.
    for (const text of ["[10.0.0.1", "10.0.0.1]", "[10.0.0.1]", "[::1", "::1]", "[[::1]]", "fe80::1%", "[fe80::1%]", "fe80::1%a b"]) expect(parseIp(text), text).toBeNull();
    expect(parseIp("[2001:db8::1]")).toEqual(parseIp("2001:db8::1"));
    expect(parseIp("[fe80::1%25eth0]")).not.toBeNull();
    expect(() => parseCidr("[10.0.0.1/32")).toThrow();
  });

  test("an IPv4-mapped IPv6 range is the IPv4 range it maps, its prefix counting the mapping's 96 bits", () => {
    const r = parseCidr("::ffff:192.0.2.0/120");
    expect(r).toMatchObject({ family: 4, prefix: 24, network: parseIp("192.0.2.0")!.value });
    expect(ipAllowed("192.0.2.77", [r])).toBe(true);
    expect(ipAllowed("::ffff:192.0.2.77", [r])).toBe(true);
    expect(ipAllowed("192.0.3.1", [r])).toBe(false);
    expect(parseCidr("::ffff:0:0/96")).toMatchObject({ family: 4, prefix: 0 });
    expect(parseCidr("::ffff:192.0.2.9")).toMatchObject({ family: 4, prefix: 32 });
    expect(parseCidr("[::ffff:c000:209]/128")).toMatchObject({ family: 4, prefix: 32 });
    // Shorter than the mapping reaches past IPv4 space; longer than 128 is no prefix at all.
    expect(() => parseCidr("::ffff:192.0.2.0/95")).toThrow(/96 or more/);
    expect(() => parseCidr("::ffff:192.0.2.0/129")).toThrow(/prefix/);
    expect(() => parseCidr("192.0.2.0/120")).toThrow(/prefix/);
  });

  test("0.0.0.0/0 allows every IPv4 address", () => {
    expect(ipAllowed("203.0.113.9", parseCidrList("0.0.0.0/0"))).toBe(true);
  });
});
