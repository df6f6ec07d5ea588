/** Live stores as one instance sees them when something goes wrong, for tests. */
import type { LiveStore } from "../../src/core/live/live-store.ts";

/**
 * `live` as an instance whose own connection to it fails for its next `failures` publishes (they throw
 * "connection lost"); everything else goes to `live` itself.
 * @example const flaky = failingPublishes(platform.live, 2);
 */
export function failingPublishes(live: LiveStore, failures: number): LiveStore {
  let left = failures;
  return new Proxy(live, {
    get(target, prop, receiver) {
      if (prop === "publish") {
        return async (channel: string, message: string) => {
          if (left > 0) {
            left--;
            throw new Error("connection lost");
          }
          return target.publish(channel, message);
        };
      }
      const value = Reflect.get(target, prop, receiver);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
}
