// Files imported `with { type: "text" }` or `{ type: "file" }` so the compiled binary embeds them.
declare module "*.sql" {
  const text: string;
  export default text;
}
declare module "@electric-sql/pglite/pglite.wasm" {
  const path: string;
  export default path;
}
declare module "@electric-sql/pglite/initdb.wasm" {
  const path: string;
  export default path;
}
declare module "@electric-sql/pglite/pglite.data" {
  const path: string;
  export default path;
}
