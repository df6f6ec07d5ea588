/** Digest response computation against vectors computed independently (node:crypto) and RFC 2617's example. */
import { describe, expect, test } from "bun:test";
import { createHash } from "node:crypto";
import { digestEquals, expectedResponse } from "./sip-digest.ts";

const md5 = (text: string) => createHash("md5").update(text).digest("hex");

describe("expectedResponse", () => {
  test("RFC 2617 section 3.5 example (qop=auth)", () => {
    const ha1 = md5("Mufasa:testrealm@host.com:Circle Of Life");
    expect(ha1).toBe("939e7578ed9e3c518a452acee763bce9");
    const response = expectedResponse(ha1, {
      method: "GET",
      uri: "/dir/index.html",
      nonce: "dcd98b7102dd2f0e8b11d0f600bfb0c093",
      qop: "auth",
      nc: "00000001",
      cnonce: "0a4f113b",
    });
    expect(response).toBe("6629fae49393a05397450978507c4ef1");
  });

  test("RFC 2069 form (no qop): MD5(HA1:nonce:HA2)", () => {
    const ha1 = md5("1001:acme.example.com:pw");
    const ha2 = md5("REGISTER:sip:acme.example.com");
    expect(expectedResponse(ha1, { method: "REGISTER", uri: "sip:acme.example.com", nonce: "abc" })).toBe(md5(`${ha1}:abc:${ha2}`));
  });

  test("MD5-sess: HA1 becomes MD5(HA1:nonce:cnonce), in any letter case of the algorithm name", () => {
    const ha1 = md5("1001:acme.example.com:pw");
    const sessHa1 = md5(`${ha1}:n1:c1`);
    const ha2 = md5("INVITE:sip:2000@acme.example.com");
    const want = md5(`${sessHa1}:n1:00000002:c1:auth:${ha2}`);
    for (const algorithm of ["MD5-sess", "md5-SESS"]) {
      expect(expectedResponse(ha1, { method: "INVITE", uri: "sip:2000@acme.example.com", nonce: "n1", qop: "auth", nc: "00000002", cnonce: "c1", algorithm })).toBe(want);
    }
    // Plain MD5 gives a different answer for the same inputs.
    expect(expectedResponse(ha1, { method: "INVITE", uri: "sip:2000@acme.example.com", nonce: "n1", qop: "auth", nc: "00000002", cnonce: "c1", algorithm: "MD5" })).not.toBe(want);
  });
});

describe("digestEquals", () => {
  test("equal hex digests match regardless of letter case; any difference does not", () => {
    const a = md5("x");
    expect(digestEquals(a, a)).toBe(true);
    expect(digestEquals(a, a.toUpperCase())).toBe(true);
    expect(digestEquals(a, md5("y"))).toBe(false);
    expect(digestEquals(a, a.slice(0, 31))).toBe(false);
    expect(digestEquals(a, "")).toBe(false);
  });
});
