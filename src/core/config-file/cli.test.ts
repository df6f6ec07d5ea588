/** `parley config plan | apply | export | schema` with a scripted terminal. */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Platform } from "../platform.ts";
import { storeKind, testPlatform } from "../../../test/support/platform.ts";
import { runConfigCommand, type ConfigCliIo } from "./cli.ts";
import { REALISTIC_ENV, realisticYaml, seedConfigAccount, snapshotAccount } from "./config-file.fixture.ts";

let platform: Platform;
const dir = mkdtempSync(join(tmpdir(), "parley-config-cli-"));

beforeAll(async () => {
  platform = await testPlatform();
});
afterAll(async () => {
  await platform.close();
  rmSync(dir, { recursive: true, force: true });
});

/** A terminal that records what was printed and answers the confirmation with `answer`. */
function terminal(answer = false) {
  const out: string[] = [];
  const err: string[] = [];
  const questions: string[] = [];
  const io: ConfigCliIo = {
    out: (t) => void out.push(t),
    err: (t) => void err.push(t),
    readFile: async (path) => readFileSync(path, "utf8"),
    writeFile: async (path, text) => writeFileSync(path, text),
    confirm: async (q) => {
      questions.push(q);
      return answer;
    },
    env: { ...REALISTIC_ENV },
  };
  return { io, out: () => out.join(""), err: () => err.join(""), questions };
}

describe(`parley config [${storeKind}]`, () => {
  test("plan prints the changes, apply asks before writing, export writes a file that plans as no change", async () => {
    const seed = await seedConfigAccount(platform);
    const path = join(dir, `${seed.tag}.yaml`);
    writeFileSync(path, realisticYaml(seed));

    const plan = terminal();
    expect(await runConfigCommand(platform, ["plan", path, "--account-id", seed.accountId], plan.io)).toBe(0);
    expect(plan.out()).toContain("trunks:\n  + carrier-a\n  + office-pbx");
    expect(plan.out()).toContain("24 to create, 0 to update, 0 to delete");
    expect(plan.out()).not.toContain(REALISTIC_ENV.CARRIER_PASSWORD);

    const json = terminal();
    expect(await runConfigCommand(platform, ["plan", path, "--account-id", seed.accountId, "--json"], json.io)).toBe(0);
    expect(JSON.parse(json.out())).toMatchObject({ account_id: seed.accountId, changes: 24 });

    const before = await snapshotAccount(platform, seed.accountId);
    const declined = terminal(false);
    expect(await runConfigCommand(platform, ["apply", path, "--account-id", seed.accountId], declined.io)).toBe(1);
    expect(declined.questions[0]).toContain("Apply these 24 changes");
    expect(declined.err()).toContain("Nothing was applied");
    expect(await snapshotAccount(platform, seed.accountId)).toBe(before);

    const confirmed = terminal(true);
    expect(await runConfigCommand(platform, ["apply", path, "--account-id", seed.accountId], confirmed.io)).toBe(0);
    expect(confirmed.out()).toContain("Applied 24 changes.");

    const again = terminal();
    expect(await runConfigCommand(platform, ["apply", path, "--account-id", seed.accountId, "--yes"], again.io)).toBe(0);
    expect(again.out()).toContain("No changes");
    expect(again.questions).toEqual([]);

    for (const format of ["yaml", "json"] as const) {
      const exported = join(dir, `${seed.tag}-export.${format}`);
      const exp = terminal();
      expect(await runConfigCommand(platform, ["export", "--account-id", seed.accountId, "--output", exported], exp.io)).toBe(0);
      const text = readFileSync(exported, "utf8");
      if (format === "json") expect(JSON.parse(text).version).toBe(1);
      else expect(text.startsWith("# Parley config for account")).toBe(true);
      expect(text).not.toContain(REALISTIC_ENV.CARRIER_PASSWORD);
      const replan = terminal();
      expect(await runConfigCommand(platform, ["plan", exported, "--account-id", seed.accountId], replan.io)).toBe(0);
      expect(replan.out()).toContain("No changes");
    }
    const stdout = terminal();
    expect(await runConfigCommand(platform, ["export", "--account-id", seed.accountId, "--format", "json"], stdout.io)).toBe(0);
    expect(JSON.parse(stdout.out()).trunks.map((t: { name: string }) => t.name)).toEqual(["carrier-a", "office-pbx"]);
  });

  test("a plan that went stale between the question and the answer is not applied", async () => {
    const seed = await seedConfigAccount(platform);
    const path = join(dir, `${seed.tag}-stale.yaml`);
    writeFileSync(path, realisticYaml(seed));
    const t = terminal(true);
    // Someone applies another file while the operator reads the plan.
    t.io.confirm = async () => {
      const other = terminal();
      const otherPath = join(dir, `${seed.tag}-other.yaml`);
      writeFileSync(otherPath, "version: 1\ncall_limits:\n  - name: x\n    max_count: 1\n");
      await runConfigCommand(platform, ["apply", otherPath, "--account-id", seed.accountId, "--yes"], other.io);
      return true;
    };
    expect(await runConfigCommand(platform, ["apply", path, "--account-id", seed.accountId], t.io)).toBe(1);
    expect(t.err()).toContain("plan again");
  });

  test("a bad file exits 1 with each problem's path; bad usage exits 2", async () => {
    const seed = await seedConfigAccount(platform);
    const path = join(dir, `${seed.tag}-bad.yaml`);
    writeFileSync(path, realisticYaml(seed).replace("trunk: carrier-a", "trunk: carrier-z"));
    const bad = terminal();
    expect(await runConfigCommand(platform, ["apply", path, "--account-id", seed.accountId, "--yes"], bad.io)).toBe(1);
    expect(bad.err()).toContain("/outbound_routes/0/trunk: No trunk named 'carrier-z' in this file.");

    const unknownAccount = terminal();
    expect(await runConfigCommand(platform, ["export", "--account-id", "acc_nope"], unknownAccount.io)).toBe(1);
    expect(unknownAccount.err()).toContain("--account-id");

    const missing = terminal();
    expect(await runConfigCommand(platform, ["plan", join(dir, "missing.yaml"), "--account-id", seed.accountId], missing.io)).toBe(1);
    expect(missing.err()).toContain("Cannot read");

    for (const args of [[], ["plan"], ["plan", path], ["frobnicate", "--account-id", "x"], ["plan", path, "--account-id", "x", "--format", "xml"], ["plan", path, "--nope"], ["plan", "a", "b", "--account-id", "x"]]) {
      const usage = terminal();
      expect(await runConfigCommand(platform, args, usage.io), args.join(" ")).toBe(2);
      expect(usage.err()).toContain("Usage:");
    }
  });

  test("schema prints the file's JSON Schema", async () => {
    const t = terminal();
    expect(await runConfigCommand(platform, ["schema"], t.io)).toBe(0);
    const schema = JSON.parse(t.out());
    expect(schema.properties.trunks.items.properties.auth_password).toBeDefined();
    expect(schema.required).toEqual(["version"]);
  });
});
