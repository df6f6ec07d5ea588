/**
 * Per-instance fan-out of account events to local sockets. Each instance subscribes once per account
 * that has at least one open socket here (the bus's pub/sub: Redis channels in scale-out, in-process
 * otherwise) and hands each event to that account's local listeners; the subscription is dropped when
 * the account's last local socket closes.
 */
import type { EventBus, PlatformEvent } from "../core/events/bus.ts";
import type { Logger } from "../core/log/logger.ts";
import { describeError } from "../http/describe-error.ts";

export type EventListener = (event: PlatformEvent) => void;

/** Told when the account's live events may have missed some, which ones unknown (the live store reconnected; see EventBus.subscribe). */
export type GapListener = () => void;

interface AccountSubscription {
  /** Each listener with its gap listener. */
  listeners: Map<EventListener, GapListener | undefined>;
  /** Resolves once the pub/sub subscription is active, to its unsubscribe function. */
  ready: Promise<() => Promise<void>>;
}

export class EventHub {
  private readonly accounts = new Map<string, AccountSubscription>();

  constructor(
    private readonly bus: EventBus,
    private readonly log: Logger,
  ) {}

  /**
   * Adds a listener for one account's live events; resolves once events published from now on will
   * reach it (the subscription is active). Throws (and leaves nothing behind) if subscribing fails.
   * `onGap` is told when some may have been missed since (the live store reconnected).
   */
  async attach(accountId: string, listener: EventListener, onGap?: GapListener): Promise<void> {
    let entry = this.accounts.get(accountId);
    if (!entry) {
      const created: AccountSubscription = { listeners: new Map(), ready: Promise.resolve(async () => {}) };
      // The handlers read this entry, not the map: a later subscription of the same account
      // (after this one emptied) never receives this one's messages twice.
      created.ready = this.bus.subscribe(
        accountId,
        (event) => {
          for (const l of created.listeners.keys()) {
            try {
              l(event);
            } catch (error) {
              this.log.error("stream listener failed", { error: describeError(error) });
            }
          }
        },
        () => {
          this.log.warn("live events of an account may have been missed (the live store reconnected)", { account_id: accountId });
          for (const gap of [...created.listeners.values()]) {
            try {
              gap?.();
            } catch (error) {
              this.log.error("stream gap listener failed", { error: describeError(error) });
            }
          }
        },
      );
      this.accounts.set(accountId, created);
      entry = created;
    }
    entry.listeners.set(listener, onGap);
    try {
      await entry.ready;
    } catch (error) {
      this.detach(accountId, listener);
      throw error;
    }
  }

  /** How many listeners (sockets) the account has on this instance. */
  listeners(accountId: string): number {
    return this.accounts.get(accountId)?.listeners.size ?? 0;
  }

  /** Removes a listener; the account's subscription ends with its last listener. */
  detach(accountId: string, listener: EventListener): void {
    const entry = this.accounts.get(accountId);
    if (!entry || !entry.listeners.delete(listener) || entry.listeners.size > 0) return;
    this.accounts.delete(accountId);
    entry.ready
      .then((unsubscribe) => unsubscribe())
      .catch((error) => this.log.warn("stream unsubscribe failed", { account_id: accountId, error: describeError(error) }));
  }

  /** Accounts this instance is subscribed to (one pub/sub subscription each). */
  subscribedAccounts(): string[] {
    return [...this.accounts.keys()];
  }

  /** Local listeners of one account. */
  listenerCount(accountId: string): number {
    return this.accounts.get(accountId)?.listeners.size ?? 0;
  }
}
