import { describe, expect, test } from "bun:test";
import { sql } from "drizzle-orm";
import { rawRows } from "./migrate.ts";
import { likePrefix } from "./sql-text.ts";
import { sharedStores } from "../../../test/support/platform.ts";

describe("likePrefix", () => {
  test("escapes the LIKE wildcards and the escape character", () => {
    expect(likePrefix("Sales")).toBe("Sales%");
    expect(likePrefix("50%_off\\x")).toBe("50\\%\\_off\\\\x%");
  });

  test("matches literally in the database", async () => {
    const { database } = await sharedStores();
    const match = async (value: string, prefix: string) =>
      (await rawRows<{ m: boolean }>(database.db, sql`select ${value} ilike ${likePrefix(prefix)} as m`))[0]!.m;
    expect(await match("50%_off sale", "50%_off")).toBe(true);
    expect(await match("50 percent off", "50%")).toBe(false);
    expect(await match("5a_b", "5_")).toBe(false);
    expect(await match("SALES team", "sales")).toBe(true);
  });
});
