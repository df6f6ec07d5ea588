import { describe, expect, test } from "bun:test";
import { availableParallelism, tmpdir } from "node:os";
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { ConfigError, defaultPoolSize, loadConfig } from "./config.ts";

describe("loadConfig", () => {
  test("defaults match the README table", () => {
    const c = loadConfig({});
    expect(c.host).toBe("127.0.0.1");
    expect(c.ports).toEqual({ public: 8080, console: 8081, realtime: 8082, control: 8083 });
    expect(c.dataDir).toBe("./data");
    expect(c.rateLimit).toEqual({ requests: 100, windowSec: 60 });
    expect(c.corsOrigins).toBe("*");
    expect(c.logLevel).toBe("info");
    expect(c.controlAllow.map((r) => r.text)).toEqual(["127.0.0.0/8", "::1/128"]);
    expect(c.urls.public).toBe("http://127.0.0.1:8080");
    expect(c.databasePoolSize).toBe(defaultPoolSize());
    expect(defaultPoolSize()).toBe(2 * availableParallelism() + 2);
  });

  test("DATABASE_POOL_SIZE: a whole number of connections from 1 to 1000", () => {
    expect(loadConfig({ DATABASE_POOL_SIZE: "6" }).databasePoolSize).toBe(6);
    for (const bad of ["0", "1001", "4.5", "six", "-2"]) expect(() => loadConfig({ DATABASE_POOL_SIZE: bad })).toThrow(/DATABASE_POOL_SIZE/);
  });

  test("converts numbers and lists", () => {
    const c = loadConfig({ PORT_PUBLIC: "9000", CORS_ORIGINS: "https://a.example, https://b.example", RATE_LIMIT_REQUESTS: "5" });
    expect(c.ports.public).toBe(9000);
    expect(c.corsOrigins).toEqual(["https://a.example", "https://b.example"]);
    expect(c.rateLimit.requests).toBe(5);
  });

  test("a bad value names the variable", () => {
    expect(() => loadConfig({ PORT_PUBLIC: "eighty" })).toThrow(/PORT_PUBLIC/);
    expect(() => loadConfig({ LOG_LEVEL: "loud" })).toThrow(/LOG_LEVEL/);
    expect(() => loadConfig({ CONTROL_ALLOW: "10.0.0.0/99" })).toThrow(/CONTROL_ALLOW/);
    // A range with host bits set would let in all of the range it names (192.168.1.10/8: 192.0.0.0/8).
    expect(() => loadConfig({ CONTROL_ALLOW: "127.0.0.1/8" })).toThrow(/CONTROL_ALLOW: '127.0.0.1\/8' has host bits set below \/8; the range is 127.0.0.0\/8/);
    expect(() => loadConfig({ CONTROL_ALLOW: "10.0.0.1/0" })).toThrow(/CONTROL_ALLOW/);
    expect(() => loadConfig({ CARRIER_ADDRESSES: "192.0.2.1/24" })).toThrow(/CARRIER_ADDRESSES: '192.0.2.1\/24' has host bits/);
    expect(loadConfig({ CONTROL_ALLOW: "10.1.0.0/16, 192.0.2.7, ::1/128" }).controlAllow.map((r) => r.text)).toEqual(["10.1.0.0/16", "192.0.2.7", "::1/128"]);
    expect(() => loadConfig({ RATE_LIMIT_REQUESTS: "0" })).toThrow(ConfigError);
    // A fraction is refused, not truncated.
    expect(() => loadConfig({ PORT_PUBLIC: "8080.5" })).toThrow(/PORT_PUBLIC: Expected a whole number \(got "8080.5"\)/);
    expect(() => loadConfig({ RATE_LIMIT_REQUESTS: "4.5" })).toThrow(/RATE_LIMIT_REQUESTS/);
  });

  test("never echoes a secret's value", () => {
    try {
      loadConfig({ JWT_SECRET: "short-but-secret" });
      throw new Error("should have thrown");
    } catch (error) {
      expect((error as Error).message).toContain("JWT_SECRET");
      expect((error as Error).message).not.toContain("short-but-secret");
    }
  });

  test("a master key that is not 32 bytes of hex or base64, and an unreadable CA file, stop start-up naming the variable", () => {
    const nearMiss = "x".repeat(40);
    try {
      loadConfig({ PARLEY_MASTER_KEY: nearMiss });
      throw new Error("should have thrown");
    } catch (error) {
      expect(error).toBeInstanceOf(ConfigError);
      expect((error as Error).message).toContain("PARLEY_MASTER_KEY: The master key must be 32 bytes");
      expect((error as Error).message).not.toContain(nearMiss);
    }
    expect(loadConfig({ PARLEY_MASTER_KEY: "ab".repeat(32) }).masterKey).toBe("ab".repeat(32));
    expect(() => loadConfig({ WEBHOOK_CA_FILE: "/nonexistent/ca.pem" })).toThrow(/WEBHOOK_CA_FILE: cannot read "\/nonexistent\/ca.pem" \(ENOENT\)/);
  });

  test("WEBHOOK_CA_FILE must hold PEM certificates: an empty file, a DER one or a broken block stops start-up", () => {
    const dir = mkdtempSync(join(tmpdir(), "parley-ca-"));
    try {
      const pem = join(dir, "ca.pem");
      execFileSync("openssl", ["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-subj", "/CN=test-ca", "-days", "1", "-keyout", join(dir, "key.pem"), "-out", pem], { stdio: "ignore" });
      expect(loadConfig({ WEBHOOK_CA_FILE: pem }).webhookCaFile).toBe(pem);
      const der = join(dir, "ca.der");
      execFileSync("openssl", ["x509", "-in", pem, "-outform", "der", "-out", der], { stdio: "ignore" });
      const empty = join(dir, "empty.pem");
      writeFileSync(empty, "");
      for (const file of [der, empty, join(dir, "key.pem")]) expect(() => loadConfig({ WEBHOOK_CA_FILE: file })).toThrow(/WEBHOOK_CA_FILE: .* holds no PEM certificate/);
      const broken = join(dir, "broken.pem");
      const text = readFileSync(pem, "utf8");
      writeFileSync(broken, text + text.replace(/\n[A-Za-z0-9+/]{20}/, "\n" + "A".repeat(20)));
      expect(() => loadConfig({ WEBHOOK_CA_FILE: broken })).toThrow(/WEBHOOK_CA_FILE: certificate 2 of .* does not parse/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test("EMERGENCY_NUMBERS: 911 and 112 unless set; numbers of 2 to 6 digits; the word none for none", () => {
    expect(loadConfig({}).routing.emergencyNumbers).toEqual(["911", "112"]);
    expect(loadConfig({ EMERGENCY_NUMBERS: " 999, 112,999 " }).routing.emergencyNumbers).toEqual(["999", "112"]);
    expect(loadConfig({ EMERGENCY_NUMBERS: "none" }).routing.emergencyNumbers).toEqual([]);
    for (const bad of ["9", "9111111", "+911", "911,abc"]) expect(() => loadConfig({ EMERGENCY_NUMBERS: bad })).toThrow(/EMERGENCY_NUMBERS: not a number of 2 to 6 digits/);
  });

  test("PostgreSQL mode requires shared secrets", () => {
    expect(() => loadConfig({ DATABASE_URL: "postgres://127.0.0.1/x" })).toThrow(/JWT_SECRET and PARLEY_MASTER_KEY/);
  });
});
