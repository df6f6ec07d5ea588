/** Live stores as one instance sees them when something goes wrong, for tests. */
import type { LiveStore } from "../../src/core/live/live-store.ts";

/**
 * `live` as an instance whose own connection to it fails for its next `failures` publishes (`publish`
 * or `publishLogged`: they throw "connection lost"); everything else goes to `live` itself.
 * @example const flaky = failingPublishes(platform.live, 2);
 */
export function failingPublishes(live: LiveStore, failures: number): LiveStore {
  let left = failures;
  return new Proxy(live, {
    get(target, prop, receiver) {
      if (prop === "publish" || prop === "publishLogged") {
        const publish = (target[prop] as (...args: unknown[]) => Promise<unknown>).bind(target);
        return async (...args: unknown[]) => {
          if (left > 0) {
            left--;
            throw new Error("connection lost");
          }
          return publish(...args);
        };
      }
      const value = Reflect.get(target, prop, receiver);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
}

/**
 * `live` as an instance whose publishes hang: until `release()` (a slow publish), or for ever (an
 * instance stopped between its commit and its publish). Only `publishLogged` (the event bus's) is held.
 * @example const slow = heldPublishes(platform.live); … slow.release();
 */
export function heldPublishes(live: LiveStore): { live: LiveStore; release(): void } {
  let release!: () => void;
  const gate = new Promise<void>((resolve) => (release = resolve));
  const held = new Proxy(live, {
    get(target, prop, receiver) {
      if (prop === "publishLogged") {
        return async (...args: Parameters<LiveStore["publishLogged"]>) => {
          await gate;
          return target.publishLogged(...args);
        };
      }
      const value = Reflect.get(target, prop, receiver);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
  return { live: held, release };
}
