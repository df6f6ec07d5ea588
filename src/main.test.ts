/**
 * The `parley` command as a user runs it (`bun src/main.ts`, what `npm start` runs): first run,
 * graceful shutdown, restart, the admin commands, and refusing bad configuration.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Subprocess } from "bun";
import { bannerCredentials, freePort, readUntil } from "../test/support/processes.ts";

const MAIN = join(import.meta.dir, "main.ts");
const dataDir = mkdtempSync(join(tmpdir(), "parley-cli-"));
const ports = { PORT_PUBLIC: freePort(), PORT_CONSOLE: freePort(), PORT_REALTIME: freePort(), PORT_CONTROL: freePort() };
const env = { ...process.env, DATA_DIR: dataDir, LOG_LEVEL: "warn", ...Object.fromEntries(Object.entries(ports).map(([k, v]) => [k, String(v)])) };
const running: Subprocess[] = [];

function start() {
  const proc = Bun.spawn(["bun", MAIN, "serve"], { env, stdout: "pipe", stderr: "inherit" });
  running.push(proc);
  return proc;
}

afterAll(() => {
  for (const p of running) p.kill("SIGKILL");
  rmSync(dataDir, { recursive: true, force: true });
});

describe("parley serve", () => {
  let apiKey = "";

  test("first run prints the four URLs and working credentials, once", async () => {
    const proc = start();
    const out = await readUntil(proc, (t) => t.includes("Try: curl"));
    for (const port of Object.values(ports)) expect(out).toContain(`http://127.0.0.1:${port}`);
    const creds = bannerCredentials(out);
    expect(creds).not.toBeNull();
    apiKey = creds!.apiKey;
    const who = await fetch(`http://127.0.0.1:${ports.PORT_PUBLIC}/v1/whoami`, { headers: { "x-api-key": apiKey } });
    expect(await who.json()).toMatchObject({ via: "key", scopes: ["*"] });
    // A login in flight when SIGTERM arrives still completes (Argon2id keeps it busy for a while).
    const login = fetch(`http://127.0.0.1:${ports.PORT_CONSOLE}/login`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ email: creds!.email, password: creds!.password }),
    });
    await Bun.sleep(15);
    proc.kill("SIGTERM");
    const reply = await login;
    expect(reply.status).toBe(200);
    expect(((await reply.json()) as { token_type: string }).token_type).toBe("Bearer");
    expect(await proc.exited).toBe(0);
    for (const host of Object.values(ports)) {
      await expect(fetch(`http://127.0.0.1:${host}/healthz`)).rejects.toThrow();
    }
  }, 60_000);

  test("a restart keeps the data and prints no credentials", async () => {
    const proc = start();
    const out = await readUntil(proc, (t) => t.includes("Parley is running.") && t.trimEnd().endsWith("logins."), 30_000);
    expect(bannerCredentials(out)).toBeNull();
    expect(out).not.toContain("sk_");
    const who = await fetch(`http://127.0.0.1:${ports.PORT_PUBLIC}/v1/whoami`, { headers: { "x-api-key": apiKey } });
    expect(who.status).toBe(200);
    for (const port of Object.values(ports)) expect((await fetch(`http://127.0.0.1:${port}/readyz`)).status).toBe(200);
    proc.kill("SIGTERM");
    expect(await proc.exited).toBe(0);
  }, 60_000);

  test("parley admin creates an account, a key and a console login, printing JSON", async () => {
    const run = async (...args: string[]) => {
      const p = Bun.spawn(["bun", MAIN, "admin", ...args], { env, stdout: "pipe", stderr: "pipe" });
      const [out, err, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
      return { out, err, code };
    };
    // A fresh data directory: migrations run and log, but stdout carries only the JSON (pipeable to jq).
    const fresh = mkdtempSync(join(tmpdir(), "parley-cli-fresh-"));
    const first = Bun.spawn(["bun", MAIN, "admin", "account", "create", "--name", "Fresh"], { env: { ...env, DATA_DIR: fresh, LOG_LEVEL: "info" }, stdout: "pipe", stderr: "pipe" });
    const [firstOut, firstErr] = await Promise.all([new Response(first.stdout).text(), new Response(first.stderr).text()]);
    expect(await first.exited, firstErr).toBe(0);
    expect(JSON.parse(firstOut).data.name).toBe("Fresh");
    expect(firstErr).toContain("migrations applied");
    rmSync(fresh, { recursive: true, force: true });
    const acc = await run("account", "create", "--name", "Initech", "--timezone", "America/Chicago");
    expect(acc.code).toBe(0);
    const account = JSON.parse(acc.out).data;
    expect(account).toMatchObject({ name: "Initech", timezone: "America/Chicago" });
    const key = await run("key", "create", "--account-id", account.id, "--scopes", "cdr,keys");
    expect(JSON.parse(key.out).data).toMatchObject({ scopes: ["cdr", "keys"], secret: expect.stringMatching(/^sk_/) });
    const p = Bun.spawn(["bun", MAIN, "admin", "console-user", "create", "--account-id", account.id, "--email", "boss@initech.test", "--password-stdin"], {
      env, stdin: new Blob(["tps reports 4ever\n"]), stdout: "pipe", stderr: "pipe",
    });
    expect(await p.exited).toBe(0);
    const user = JSON.parse(await new Response(p.stdout).text()).data;
    expect(user).toMatchObject({ email: "boss@initech.test", account_id: account.id });
    const bad = await run("account", "create", "--timezone", "Nowhere/Land");
    expect(bad.code).toBe(2);
    expect(bad.err).toContain("--name");
    expect(bad.err).toContain("--timezone");
  }, 180_000);

  test("a bad configuration stops start-up with a message naming the variable", async () => {
    const p = Bun.spawn(["bun", MAIN, "serve"], { env: { ...env, PORT_PUBLIC: "eighty", JWT_SECRET: "tiny-secret" }, stdout: "pipe", stderr: "pipe" });
    expect(await p.exited).toBe(2);
    const err = await new Response(p.stderr).text();
    expect(err).toContain("PORT_PUBLIC");
    expect(err).toContain("JWT_SECRET");
    expect(err).not.toContain("tiny-secret");
    const hosts = Bun.spawn(["bun", MAIN, "serve", "--hosts", "public,pbx"], { env, stdout: "pipe", stderr: "pipe" });
    expect(await hosts.exited).toBe(2);
  });
});
