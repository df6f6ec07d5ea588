/**
 * Column helpers so every table stores time and booleans the one way SPEC.md fixes:
 * epoch seconds as numbers (never strings from postgres.js), booleans as the integers 0 and 1.
 */
import { bigint, smallint } from "drizzle-orm/pg-core";

/** Epoch seconds, returned as a JS number on both stores. */
export const epochSeconds = (name: string) => bigint(name, { mode: "number" });

/** Epoch milliseconds, returned as a JS number on both stores. */
export const epochMillis = (name: string) => bigint(name, { mode: "number" });

/** A 0/1 flag (SPEC.md: booleans are the integers 0 and 1). */
export const flag = (name: string) => smallint(name);

/** Now in epoch seconds. */
export const nowSeconds = (): number => Math.floor(Date.now() / 1000);
