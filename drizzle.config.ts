import { defineConfig } from "drizzle-kit";

export default defineConfig({
  dialect: "postgresql",
  // Every capability keeps its tables in its own *.schema.ts; drizzle-kit finds them all.
  schema: "./src/core/**/*.schema.ts",
  out: "./drizzle",
});
