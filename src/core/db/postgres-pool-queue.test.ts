/**
 * postgres.js (3.4.9) keeps its pool's connection queues in an array that a `shift` only empties
 * when the queue drains: under steady load a queue never drains, the array grows by one dead slot
 * per query, and `remove` scanned all of it, so every query of a busy process cost more than the
 * one before (measured: 7 µs a query at first, 35 µs after 240,000 queries on 4 connections;
 * porsager/postgres#747). patches/postgres@3.4.9.patch bounds the array. These tests check that the
 * installed copy carries the patch, by counting the elements `remove` is asked to search.
 */
import { afterEach, describe, expect, test } from "bun:test";

type Queue<T> = { readonly length: number; push(x: T): T; shift(): T; remove(x: T): T | null };
type MakeQueue = <T>() => Queue<T>;
// The module files themselves (the package exports only its entry point, and ships no types for them).
const load = async (file: string): Promise<MakeQueue> => ((await import(file)) as { default: MakeQueue }).default;
const QueueEsm = await load("../../../node_modules/postgres/src/queue.js");
const QueueCjs = await load("../../../node_modules/postgres/cjs/src/queue.js");

const realIndexOf = Array.prototype.indexOf;
afterEach(() => {
  Array.prototype.indexOf = realIndexOf;
});

/** Runs `fn` and returns the longest array that `indexOf` searched meanwhile (from where it started). */
function longestSearch(fn: () => void): number {
  let longest = 0;
  Array.prototype.indexOf = function (this: unknown[], ...args: [unknown, number?]) {
    longest = Math.max(longest, this.length - (args[1] ?? 0));
    return realIndexOf.apply(this, args);
  } as typeof Array.prototype.indexOf;
  try {
    fn();
  } finally {
    Array.prototype.indexOf = realIndexOf;
  }
  return longest;
}

for (const [name, Queue] of [["ESM (what Bun loads)", QueueEsm], ["CommonJS", QueueCjs]] as const) {
  describe(`postgres.js pool queue, ${name}`, () => {
    const make = Queue;

    test("a queue that never drains stays as long as what it holds", () => {
      const q = make<number>();
      q.push(-1);
      q.push(-2);
      // A busy pool: connections leave the front and come back at the end, never all at once.
      for (let i = 0; i < 100_000; i++) q.push(q.shift());
      expect(q.length).toBe(2);
      const searched = longestSearch(() => {
        expect(q.remove(-1)).toBe(-1);
      });
      expect(searched).toBeLessThan(200);
      expect(q.length).toBe(1);
      expect(q.shift()).toBe(-2);
      expect(q.length).toBe(0);
    });

    test("it stays a FIFO queue through compaction, removals and draining", () => {
      const q = make<number>();
      const model: number[] = [];
      let next = 0;
      // A fixed pseudo-random walk (reproducible), long enough to compact many times.
      let seed = 7;
      const rand = () => (seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648;
      for (let step = 0; step < 20_000; step++) {
        const r = rand();
        if (r < 0.5 || !model.length) {
          q.push(next);
          model.push(next++);
        } else if (r < 0.9) {
          expect(q.shift()).toBe(model.shift()!);
        } else {
          const victim = model[Math.floor(rand() * model.length)]!;
          expect(q.remove(victim)).toBe(victim);
          model.splice(model.indexOf(victim), 1);
          expect(q.remove(victim)).toBeNull();
        }
        expect(q.length).toBe(model.length);
      }
      while (model.length) expect(q.shift()).toBe(model.shift()!);
      expect(q.length).toBe(0);
    });
  });
}
