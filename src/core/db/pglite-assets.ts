/**
 * PGlite's three runtime files, imported as files so that `bun build --compile` embeds them
 * (PGlite otherwise looks for them beside its own module, which a compiled binary does not have).
 */
import wasmPath from "@electric-sql/pglite/pglite.wasm" with { type: "file" };
import initdbPath from "@electric-sql/pglite/initdb.wasm" with { type: "file" };
import dataPath from "@electric-sql/pglite/pglite.data" with { type: "file" };

/** The options PGlite.create needs to boot from the embedded files. */
export async function pgliteAssets(): Promise<{
  pgliteWasmModule: WebAssembly.Module;
  initdbWasmModule: WebAssembly.Module;
  fsBundle: Blob;
}> {
  const [pgliteWasmModule, initdbWasmModule] = await Promise.all([
    WebAssembly.compile(await Bun.file(wasmPath).arrayBuffer()),
    WebAssembly.compile(await Bun.file(initdbPath).arrayBuffer()),
  ]);
  return { pgliteWasmModule, initdbWasmModule, fsBundle: Bun.file(dataPath) };
}
