/** COPY TO STDOUT as a stream (PostgreSQL only): literals, CSV framing, back-pressure, cancel. */
import { afterAll, describe, expect, test } from "bun:test";
import postgres from "postgres";
import { sql } from "drizzle-orm";
import { copyCsvOut, inlineSql } from "./copy-out.ts";

const url = process.env.TEST_DATABASE_URL;

describe.skipIf(!url)("copyCsvOut [postgres]", () => {
  // A pool of 2: a leaked connection shows up as an export that never starts.
  const client = postgres(url ?? "", { max: 2, onnotice: () => {}, connection: { standard_conforming_strings: "on", application_name: "copy-out-test" } });
  afterAll(() => client.end({ timeout: 5 }));

  const read = async (stream: ReadableStream<Uint8Array>) => Buffer.from(await new Response(stream).arrayBuffer()).toString("utf8");

  /** Waits (up to 2 s) until the COPY of `applicationName` waits to write to its client; its last wait event. */
  async function copyBlockedOnClient(applicationName: string): Promise<string> {
    let waiting = "";
    for (let i = 0; i < 100 && waiting !== "ClientWrite"; i++) {
      await Bun.sleep(20);
      const [row] = await client`select wait_event from pg_stat_activity where application_name = ${applicationName} and query like 'copy (%'`;
      waiting = row?.wait_event ?? "";
    }
    return waiting;
  }

  test("parameters become exact literals; anything without one is refused", async () => {
    const tricky = "it's a 'quote' \\ backslash; drop table x; --";
    const text = await read(copyCsvOut(client, sql`select ${tricky} as a, ${42} as b, ${-1.5} as c, ${null} as d`, { header: "a,b,c,d", lineEnd: "\r\n" }));
    expect(text).toBe(`a,b,c,d\r\n${tricky},42,-1.5,\r\n`);
    expect(() => inlineSql(sql`select ${Number.NaN}`)).toThrow(TypeError);
    expect(() => inlineSql(sql`select ${"a\u0000b"}`)).toThrow(TypeError);
  });

  test("CSV quoting by the server; the line end replaces COPY's own, not a value's line break", async () => {
    const text = await read(
      copyCsvOut(client, sql`select * from (values (1, ${'x, "y"\nz'}), (2, ${""}), (3, null)) v(n, s) order by n`, { header: "n,s", lineEnd: "\r\n" }),
    );
    expect(text).toBe('n,s\r\n1,"x, ""y""\nz"\r\n2,""\r\n3,\r\n');
    const lf = await read(copyCsvOut(client, sql`select 1, 2`, { header: "a,b", lineEnd: "\n" }));
    expect(lf).toBe("a,b\n1,2\n");
  });

  test("many rows arrive whole and in order across chunk boundaries", async () => {
    const stream = copyCsvOut(client, sql`select g, repeat('x', g % 700) from generate_series(1, 20000) g order by g`, { header: "g,x", lineEnd: "\r\n" });
    let chunks = 0;
    const parts: Uint8Array[] = [];
    const reader = stream.getReader();
    for (let next = await reader.read(); !next.done; next = await reader.read()) {
      chunks++;
      parts.push(next.value);
    }
    const lines = Buffer.concat(parts).toString("utf8").split("\r\n");
    expect(chunks).toBeGreaterThan(10);
    expect(lines).toHaveLength(20002);
    expect(lines.at(-1)).toBe("");
    for (let g = 1; g <= 20000; g += 997) expect(lines[g]).toBe(`${g},${"x".repeat(g % 700)}`);
  });

  test("a reader that stops reading pauses the server; one that cancels frees the connection", async () => {
    const big = sql`select g, repeat('y', 500) from generate_series(1, 200000) g`;
    const stream = copyCsvOut(client, big, { header: "g,y", lineEnd: "\r\n" });
    const reader = stream.getReader();
    expect((await reader.read()).done).toBe(false);
    // Not reading: the server blocks writing to its client (100 MB would have arrived long since).
    expect(await copyBlockedOnClient("copy-out-test")).toBe("ClientWrite");
    await reader.cancel();
    // The statement ends (cancelled) and both connections of the pool serve again: two exports at once.
    let running = 1;
    for (let i = 0; i < 100 && running; i++) {
      await Bun.sleep(20);
      const [row] = await client`select count(*)::int as n from pg_stat_activity where application_name = 'copy-out-test' and query like 'copy (%' and state = 'active'`;
      running = row!.n;
    }
    expect(running).toBe(0);
    const both = await Promise.all([0, 1].map((i) => read(copyCsvOut(client, sql`select ${i}, pg_sleep(0.05)`, { header: "i,s", lineEnd: "\n" }))));
    expect(both).toEqual(["i,s\n0,\"\"\n", "i,s\n1,\"\"\n"]);
  });

  test("more exports than connections: each waits for a connection of its own, none fails", async () => {
    const rows = 3000;
    const texts = await Promise.all(
      [0, 1, 2, 3, 4].map((i) => read(copyCsvOut(client, sql`select ${i}::int, g, repeat('w', 300) from generate_series(1, ${rows}) g order by g`, { header: "i,g,w", lineEnd: "\n" }))),
    );
    texts.forEach((text, i) => {
      const lines = text.split("\n");
      expect(lines).toHaveLength(rows + 2);
      expect(lines[rows]).toBe(`${i},${rows},${"w".repeat(300)}`);
    });
  });

  test("after a cancelled export its connection serves the next statement, which is neither refused nor cancelled", async () => {
    // One connection: the statement after the cancel runs where the export ran. The export is just
    // big enough to block the server, so what is left drains in a moment once the reader is gone.
    const single = postgres(url ?? "", { max: 1, onnotice: () => {}, connection: { standard_conforming_strings: "on", application_name: "copy-out-single" } });
    try {
      for (let round = 0; round < 10; round++) {
        const stream = copyCsvOut(single, sql`select g, repeat('z', 500) from generate_series(1, 30000) g`, { header: "g,z", lineEnd: "\n" });
        const reader = stream.getReader();
        expect((await reader.read()).done).toBe(false);
        await copyBlockedOnClient("copy-out-single");
        await reader.cancel();
        const [row] = await single`select pg_sleep(0.02) as slept, ${round}::int as round`;
        expect(row!.round).toBe(round);
      }
    } finally {
      await single.end({ timeout: 5 });
    }
  });

  test("a failing statement errors the stream", async () => {
    await expect(read(copyCsvOut(client, sql`select 1 / (g - 3) from generate_series(1, 5) g`, { header: "x", lineEnd: "\n" }))).rejects.toThrow();
  });
});
