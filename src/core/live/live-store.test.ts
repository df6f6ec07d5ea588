/**
 * Runs the LiveStore contract against the in-process store always, and against Redis when
 * REDIS_URL is set (`REDIS_URL=redis://127.0.0.1:6379 bun test src/core/live`).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { tmpdir } from "node:os";
import { RedisClient, type Subprocess } from "bun";
import { openLiveStore } from "./index.ts";
import { eventually, runLiveStoreContract } from "./live-store.contract.ts";
import { accountKey, type LiveStore } from "./live-store.ts";
import { createMemoryLiveStore } from "./memory-live-store.ts";
import { createRedisLiveStore } from "./redis-live-store.ts";

const redisUrl = (process.env.TEST_REDIS_URL ?? process.env.REDIS_URL);

runLiveStoreContract("memory", async () => createMemoryLiveStore());

describe("openLiveStore", () => {
  test("opens the in-process store without a Redis URL", async () => {
    const store = await openLiveStore(undefined);
    expect(store.kind).toBe("memory");
    await store.close();
  });

  test.skipIf(!redisUrl)("opens the Redis store with a URL", async () => {
    const store = await openLiveStore(redisUrl);
    expect(store.kind).toBe("redis");
    await store.ping();
    await store.close();
  });
});

if (redisUrl) {
  const url = redisUrl;
  runLiveStoreContract("redis", () => createRedisLiveStore(url));

  describe("Redis scale-out: two instances on one Redis", () => {
    const account = `lst_${crypto.randomUUID().replaceAll("-", "")}`;
    const used: string[] = [];
    const key = (name: string): string => {
      const k = accountKey(account, name);
      used.push(k);
      return k;
    };
    let a: LiveStore;
    let b: LiveStore;

    beforeAll(async () => {
      [a, b] = await Promise.all([createRedisLiveStore(url), createRedisLiveStore(url)]);
    });

    afterAll(async () => {
      await a.del(...used);
      await Promise.all([a.close(), b.close()]);
    });

    test("each sees the other's counters and values", async () => {
      const k = key("shared-counter");
      await a.incr(k, 5, 10_000);
      expect(await b.incr(k, 2)).toBe(7);
      expect(await a.get(k)).toBe("7");
      const v = key("shared-value");
      await b.set(v, "from b");
      expect(await a.take(v)).toBe("from b");
      expect(await b.get(v)).toBeNull();
    });

    test("a limit is shared: racing from both, exactly `limit` succeed", async () => {
      const k = key("shared-cac");
      const limit = 50;
      const calls = Array.from({ length: 200 }, (_, i) => (i % 2 === 0 ? a : b).incrIfBelow(k, limit, 1, 10_000));
      const granted = (await Promise.all(calls)).filter((r) => r !== null);
      expect(granted).toHaveLength(limit);
      expect(await b.get(k)).toBe(String(limit));
    });

    test("a lease held by one is refused to the other", async () => {
      const k = key("shared-lease");
      expect(await a.acquireLease(k, "node-a", 10_000)).toBe(true);
      expect(await b.acquireLease(k, "node-b", 10_000)).toBe(false);
      expect(await b.releaseLease(k, "node-b")).toBe(false);
      expect(await a.releaseLease(k, "node-a")).toBe(true);
      expect(await b.acquireLease(k, "node-b", 10_000)).toBe(true);
    });

    test("a message published on one reaches subscribers on both", async () => {
      const ch = `${account}:broadcast`;
      const gotA: string[] = [];
      const gotB: string[] = [];
      const stopA = await a.subscribe(ch, (m) => gotA.push(m));
      const stopB = await b.subscribe(ch, (m) => gotB.push(m));
      await a.publish(ch, "from a");
      await b.publish(ch, "from b");
      await eventually(() => gotA.length === 2 && gotB.length === 2);
      expect(gotA).toEqual(["from a", "from b"]);
      expect(gotB).toEqual(["from a", "from b"]);
      await stopA();
      await stopB();
    });
  });

  const redisServer = Bun.which("redis-server");
  describe.skipIf(!redisServer)("Redis recovery (private redis-server)", () => {
    let port = 0;
    let server: Subprocess | null = null;
    let store: LiveStore;
    let raw: RedisClient;

    const startServer = async (): Promise<void> => {
      server = Bun.spawn(
        [redisServer ?? "redis-server", "--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", tmpdir()],
        { stdout: "ignore", stderr: "ignore" },
      );
      await waitForPort(port);
    };
    const stopServer = async (): Promise<void> => {
      const running = server;
      server = null;
      if (running === null) return;
      running.kill();
      await running.exited;
    };

    beforeAll(async () => {
      port = freePort();
      await startServer();
      store = await createRedisLiveStore(`redis://127.0.0.1:${port}`);
      raw = new RedisClient(`redis://127.0.0.1:${port}`);
    });

    afterAll(async () => {
      await store.close();
      raw.close();
      await stopServer();
    });

    test("scripts still run after the server's script cache was flushed (NOSCRIPT)", async () => {
      const k = accountKey("acc_recovery", "cas");
      expect(await store.compareAndSet(k, null, "a")).toBe(true);
      await raw.send("SCRIPT", ["FLUSH"]);
      expect(await store.compareAndSet(k, "a", "b")).toBe(true);
      expect(await store.incrIfBelow(accountKey("acc_recovery", "cac"), 1)).toBe(1);
      expect(await store.get(k)).toBe("b");
    });

    test("after a Redis restart, commands work again and each subscription delivers exactly once", async () => {
      const ch = "recovery:channel";
      const got: string[] = [];
      let gaps = 0;
      const unsubscribe = await store.subscribe(ch, (m) => got.push(m), () => gaps++);
      expect(gaps).toBe(0);

      await stopServer();
      await startServer();

      await eventuallyAsync(async () => {
        await store.ping();
      });
      expect(await store.incr(accountKey("acc_recovery", "after-restart"))).toBe(1);

      // The subscriber reconnects on its own schedule; probe until it hears again.
      const publisher = new RedisClient(`redis://127.0.0.1:${port}`);
      try {
        await eventuallyAsync(async () => {
          await publisher.send("PUBLISH", [ch, "probe"]);
          await Bun.sleep(50);
          if (!got.includes("probe")) throw new Error("subscriber not back yet");
        });
        await publisher.send("PUBLISH", [ch, "final"]);
        await eventually(() => got.includes("final"));
        await Bun.sleep(100);
        expect(got.filter((m) => m === "final")).toHaveLength(1);
        // What was published while it was down is lost: the subscriber was told.
        expect(gaps).toBeGreaterThanOrEqual(1);
      } finally {
        publisher.close();
      }
      await unsubscribe();
    }, 30_000); // Bun's reconnect backoff can take a few seconds
  });
}

/** A port nothing listens on right now (the OS picks it, we release it). */
function freePort(): number {
  const listener = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } });
  const { port } = listener;
  listener.stop(true);
  return port;
}

async function waitForPort(port: number): Promise<void> {
  await eventuallyAsync(async () => {
    const socket = await Bun.connect({ hostname: "127.0.0.1", port, socket: { data() {} } });
    socket.end();
  });
}

/** Retries `attempt` until it resolves; fails with its last error after `timeoutMs`. */
async function eventuallyAsync(attempt: () => Promise<void>, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      await attempt();
      return;
    } catch (error) {
      if (Date.now() > deadline) throw error;
      await Bun.sleep(100);
    }
  }
}
