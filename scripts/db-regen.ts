/**
 * Regenerates the unreleased migration from the current schema, for development:
 * migrations committed at HEAD are released and never touched; every other migration file is removed
 * and one new migration is generated in its place (drizzle-kit), then drizzle/index.ts is rewritten.
 * Safe to run from several shells at once: a lock serializes runs.
 *
 *   bun run db:regen [name]     # default name: next
 */
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";

const ROOT = join(import.meta.dir, "..");
const DRIZZLE = join(ROOT, "drizzle");
const LOCK = "/tmp/parley-db-regen.lock";

async function withLock<T>(fn: () => T): Promise<T> {
  const deadline = Date.now() + 180_000;
  for (;;) {
    try {
      mkdirSync(LOCK);
      break;
    } catch {
      if (Date.now() > deadline) throw new Error(`could not take ${LOCK} (remove it if no regen is running)`);
      await Bun.sleep(200);
    }
  }
  try {
    return fn();
  } finally {
    rmSync(LOCK, { recursive: true, force: true });
  }
}

function releasedTags(): Set<string> {
  const out = execFileSync("git", ["ls-tree", "--name-only", "HEAD", "drizzle/"], { cwd: ROOT, encoding: "utf8" });
  return new Set(out.split("\n").filter((f) => f.endsWith(".sql")).map((f) => f.replace(/^drizzle\//, "").replace(/\.sql$/, "")));
}

await withLock(() => {
  const released = releasedTags();
  const journalPath = join(DRIZZLE, "meta", "_journal.json");
  const journal = JSON.parse(readFileSync(journalPath, "utf8")) as { entries: Array<{ idx: number; tag: string }> };
  journal.entries = journal.entries.filter((e) => released.has(e.tag));
  writeFileSync(journalPath, JSON.stringify(journal, null, 2));
  for (const file of readdirSync(DRIZZLE)) {
    if (file.endsWith(".sql") && !released.has(file.replace(/\.sql$/, ""))) rmSync(join(DRIZZLE, file));
  }
  const keepSnapshots = new Set(journal.entries.map((e) => `${String(e.idx).padStart(4, "0")}_snapshot.json`));
  for (const file of readdirSync(join(DRIZZLE, "meta"))) {
    if (file.endsWith("_snapshot.json") && !keepSnapshots.has(file)) rmSync(join(DRIZZLE, "meta", file));
  }
  const name = process.argv[2] ?? "next";
  execFileSync("bun", ["--bun", "x", "drizzle-kit", "generate", "--name", name], { cwd: ROOT, stdio: "inherit" });
  execFileSync("bun", [join(ROOT, "scripts", "gen-migrations.ts")], { cwd: ROOT, stdio: "inherit" });
  if (!existsSync(join(DRIZZLE, "index.ts"))) throw new Error("drizzle/index.ts was not written");
});
