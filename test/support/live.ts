/** Live stores as one instance sees them when something goes wrong, for tests. */
import type { LiveStore } from "../../src/core/live/live-store.ts";

type Publish = (...args: unknown[]) => Promise<unknown>;

/** `live` with the methods named in `methods` replaced by `wrap(the method)`; the rest go to `live` itself. */
function wrapping(live: LiveStore, methods: ReadonlyArray<keyof LiveStore>, wrap: (publish: Publish) => Publish): LiveStore {
  return new Proxy(live, {
    get(target, prop, receiver) {
      const value = Reflect.get(target, prop, receiver);
      if (typeof value !== "function") return value;
      const bound = value.bind(target) as Publish;
      return methods.includes(prop as keyof LiveStore) ? wrap(bound) : bound;
    },
  });
}

/**
 * `live` as an instance whose own connection to it fails for its next `failures` publishes (`publish`
 * or `publishLogged`: they throw "connection lost"); everything else goes to `live` itself.
 * @example const flaky = failingPublishes(platform.live, 2);
 */
export function failingPublishes(live: LiveStore, failures: number): LiveStore {
  let left = failures;
  return wrapping(live, ["publish", "publishLogged"], (publish) => async (...args) => {
    if (left > 0) {
      left--;
      throw new Error("connection lost");
    }
    return publish(...args);
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
  const held = wrapping(live, ["publishLogged"], (publish) => async (...args) => {
    await gate;
    return publish(...args);
  });
  return { live: held, release };
}
