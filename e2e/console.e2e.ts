/**
 * The console in a real browser (Debian's Chromium driven by playwright-core): sign in with the
 * first-run credentials, see the account, mint a key and see its secret once, sign out.
 * Run: bun test ./e2e/console.e2e.ts (needs /usr/bin/chromium; `apt-get install -y chromium`).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Subprocess } from "bun";
import { chromium, type Browser } from "playwright-core";
import { bannerCredentials, freePort, readUntil } from "../test/support/processes.ts";

const CHROMIUM = "/usr/bin/chromium";
const dataDir = mkdtempSync(join(tmpdir(), "parley-console-e2e-"));
const ports = { PORT_PUBLIC: freePort(), PORT_CONSOLE: freePort(), PORT_REALTIME: freePort(), PORT_CONTROL: freePort() };
let proc: Subprocess | undefined;
let browser: Browser | undefined;
let creds: { email: string; password: string; apiKey: string };

beforeAll(async () => {
  if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: apt-get install -y chromium`);
  proc = Bun.spawn(["bun", join(import.meta.dir, "..", "src", "main.ts"), "serve"], {
    env: { ...process.env, DATA_DIR: dataDir, LOG_LEVEL: "warn", ...Object.fromEntries(Object.entries(ports).map(([k, v]) => [k, String(v)])) },
    stdout: "pipe",
    stderr: "inherit",
  });
  creds = bannerCredentials(await readUntil(proc, (t) => t.includes("Try: curl")))!;
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-quic"],
  });
}, 60_000);

afterAll(async () => {
  await browser?.close();
  proc?.kill("SIGTERM");
  await proc?.exited;
  rmSync(dataDir, { recursive: true, force: true });
});

describe("console in a browser", () => {
  test("sign in, see the account, mint a key, sign out", async () => {
    const page = await browser!.newPage();
    const consoleUrl = `http://127.0.0.1:${ports.PORT_CONSOLE}/`;
    await page.goto(consoleUrl);
    await page.getByLabel("Email").fill(creds.email);
    await page.getByLabel("Password").fill("wrong password");
    await page.getByRole("button", { name: "Sign in" }).click();
    await expect(page.getByRole("alert").textContent()).resolves.toContain("Wrong email or password");
    await page.getByLabel("Password").fill(creds.password);
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.getByRole("heading", { name: "Default" }).waitFor();
    // The first-run key is listed by its hint only.
    await page.getByText(`…${creds.apiKey.slice(-4)}`).waitFor();
    await page.getByLabel("New key label").fill("from the browser");
    await page.getByRole("button", { name: "Create key" }).click();
    const secret = await page.getByTestId("new-secret").textContent();
    expect(secret).toMatch(/^sk_[0-9A-Za-z]{48}$/);
    const who = await fetch(`http://127.0.0.1:${ports.PORT_PUBLIC}/v1/whoami`, { headers: { "x-api-key": secret! } });
    expect(who.status).toBe(200);
    await page.screenshot({ path: join(tmpdir(), "parley-console.png") });
    await page.getByRole("button", { name: "Sign out" }).click();
    await page.getByRole("button", { name: "Sign in" }).waitFor();
  }, 60_000);
});
