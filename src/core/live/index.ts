import type { LiveStore } from "./live-store.ts";
import { createMemoryLiveStore } from "./memory-live-store.ts";

export type { LiveStore, MessageHandler, WindowHit } from "./live-store.ts";
export { accountKey, globalKey } from "./live-store.ts";

/**
 * Opens the live store: Redis when a URL is configured (required as soon as more than one instance
 * runs), otherwise in-process. The Redis client is imported only when needed.
 */
export async function openLiveStore(redisUrl: string | undefined): Promise<LiveStore> {
  if (redisUrl) {
    const { createRedisLiveStore } = await import("./redis-live-store.ts");
    return createRedisLiveStore(redisUrl);
  }
  return createMemoryLiveStore();
}
