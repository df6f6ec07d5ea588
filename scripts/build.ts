/**
 * Builds dist/parley: one self-contained executable (Bun runtime, the server, the migrations,
 * PGlite's wasm and data files, and the console and wallboard SPAs). Run by `bun run build`.
 *
 *   bun scripts/build.ts [--target bun-linux-arm64] [--outfile dist/parley]
 */
import { mkdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { parseArgs } from "node:util";
import { renderMigrationIndex } from "./gen-migrations.ts";

const ROOT = resolve(import.meta.dir, "..");

/** The options of one build; the defaults are what `bun run build` produces. */
export interface BuildOptions {
  /** Where the executable goes. */
  outfile: string;
  /** A cross-compilation target such as `bun-linux-arm64`; the host platform when undefined. */
  target: Bun.Build.CompileTarget | undefined;
}

/** What a successful build produced. */
export interface BuildResult {
  outfile: string;
  bytes: number;
  ms: number;
}

/**
 * The migrations reach the binary only through drizzle/index.ts (text imports); a stale index would
 * ship a binary that silently skips a migration, so refuse to build rather than find out in production.
 */
function assertMigrationIndexCurrent(): void {
  const dir = join(ROOT, "drizzle");
  const onDisk = readFileSync(join(dir, "index.ts"), "utf8");
  if (onDisk !== renderMigrationIndex(dir)) {
    throw new Error("drizzle/index.ts does not list every migration in drizzle/; run `bun scripts/gen-migrations.ts` first.");
  }
}

const PRODUCTION_ENV_MODULE = "parley-build:production-env";

/**
 * Elysia decides production mode when its module loads, from Bun.env.NODE_ENV at run time, which
 * `define` cannot reach (it then skips building "expected value" details for every validation
 * error, and defaults Bun.serve to production where a caller does not set `development`). This
 * makes src/main.ts import, first, a module that defaults NODE_ENV to production (an operator's
 * explicit NODE_ENV still wins). ES modules evaluate in import order, so it runs before Elysia's.
 * A `banner` would do the same but is also prepended to the browser chunks, where `process` does
 * not exist.
 */
function productionEnvPlugin(): Bun.BunPlugin {
  const entry = join(ROOT, "src", "main.ts");
  return {
    name: "parley-production-env",
    setup(build) {
      build.onResolve({ filter: /^parley-build:production-env$/ }, (args) => ({ path: args.path, namespace: "parley-build" }));
      build.onLoad({ filter: /.*/, namespace: "parley-build" }, () => ({
        contents: 'Bun.env.NODE_ENV ??= "production";\n',
        loader: "js",
      }));
      build.onLoad({ filter: /[\\/]src[\\/]main\.ts$/ }, async (args) => {
        const source = await Bun.file(args.path).text();
        if (resolve(args.path) !== entry) return { contents: source, loader: "ts" };
        // The import goes after the shebang line, which must stay first.
        const cut = source.startsWith("#!") ? source.indexOf("\n") + 1 : 0;
        return { contents: `${source.slice(0, cut)}import "${PRODUCTION_ENV_MODULE}";\n${source.slice(cut)}`, loader: "ts" };
      });
    },
  };
}

/** Compiles src/main.ts into a standalone executable and returns its path, size and build time. */
export async function buildBinary(options: BuildOptions): Promise<BuildResult> {
  assertMigrationIndexCurrent();
  const outfile = resolve(ROOT, options.outfile);
  mkdirSync(dirname(outfile), { recursive: true });
  const started = performance.now();
  const result = await Bun.build({
    entrypoints: [join(ROOT, "src/main.ts")],
    target: "bun",
    format: "esm",
    compile: {
      outfile,
      ...(options.target ? { target: options.target } : {}),
      // Configuration comes from the environment alone: the binary must behave the same in any
      // working directory, so a stray .env or bunfig.toml (which can preload code) is not read.
      autoloadDotenv: false,
      autoloadBunfig: false,
    },
    // No identifier mangling: Elysia reads handler and hook sources to decide what to parse per
    // request (headers, body, ...); renamed parameters make it skip them (GET /v1/whoami then
    // fails with 500). Whitespace and syntax minification are safe, as Elysia's docs note.
    minify: { whitespace: true, syntax: true, identifiers: false },
    // React in the SPAs (and anything else that branches on it at build time) ships its production build.
    define: { "process.env.NODE_ENV": JSON.stringify("production") },
    plugins: [productionEnvPlugin()],
  });
  const ms = performance.now() - started;
  for (const log of result.logs) console.error(log);
  if (!result.success) throw new Error("the build failed (see the messages above)");
  return { outfile, bytes: statSync(outfile).size, ms };
}

/**
 * Runs the binary once (`parley --help`, which opens no store) so that a build that cannot even
 * start is caught here, not on a server.
 */
async function smokeTest(outfile: string): Promise<void> {
  const proc = Bun.spawn([outfile, "--help"], { stdout: "pipe", stderr: "pipe", env: { PATH: process.env.PATH ?? "" } });
  const [out, err, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  if (code !== 0 || !out.includes("Usage:")) {
    throw new Error(`${outfile} --help exited with ${code}:\n${out}${err}`);
  }
}

function formatBytes(bytes: number): string {
  return `${(bytes / 1024 / 1024).toFixed(1)} MiB (${bytes.toLocaleString("en-US")} bytes)`;
}

if (import.meta.main) {
  const { values } = parseArgs({
    args: process.argv.slice(2),
    options: { target: { type: "string" }, outfile: { type: "string", default: "dist/parley" } },
    strict: true,
  });
  try {
    const built = await buildBinary({ outfile: values.outfile, target: values.target as Bun.Build.CompileTarget | undefined });
    // A cross-compiled binary cannot run here.
    if (!values.target) await smokeTest(built.outfile);
    console.log(`built ${relative(process.cwd(), built.outfile) || built.outfile}: ${formatBytes(built.bytes)} in ${(built.ms / 1000).toFixed(1)} s`);
  } catch (error) {
    console.error(`build: ${error instanceof Error ? error.message : String(error)}`);
    process.exit(1);
  }
}
