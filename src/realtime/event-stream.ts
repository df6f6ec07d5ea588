/**
 * The realtime event stream: GET /v1/events/stream?ticket=…[&events=a,b][&last_event_id=evt_…] upgrades
 * to a WebSocket that carries one account's events as JSON messages (docs/realtime.md).
 *
 * Each socket: redeems its single-use ticket, attaches to the instance's EventHub (one pub/sub
 * subscription per account per instance), then, when resuming, reads stored events after
 * last_event_id while live ones wait in a buffer, and flushes the buffer skipping ids already sent:
 * no gap and no duplicate at the seam. Sends go through a bounded buffer; a client that reads too
 * slowly is closed with 4429 instead of growing the server's memory. A socket lives only as long as
 * the credential that minted its ticket, and is closed with 4403 when it ends: when that console
 * session expires (a timer), when that API key is revoked or the account stops being active (at once on
 * the revocation message from any instance, else at the next periodic check).
 */
import { Elysia } from "elysia";
import type { ServerWebSocket } from "bun";
import type { Platform } from "../core/platform.ts";
import type { PlatformEvent } from "../core/events/bus.ts";
import type { EventName } from "../core/webhooks/event-catalog.ts";
import { redeemTicket, type TicketKind, type TicketRefusal } from "../core/tickets/tickets.service.ts";
import { describeError } from "../http/describe-error.ts";
import { validationFailed } from "../core/errors/app-error.ts";
import type { StreamCredential } from "../core/auth/credential-resolver.ts";
import { EventHub } from "./event-hub.ts";
import { CLOSE, STREAM_PATH, closeReason, parseClientMessage, parseEventFilter, readStreamQuery, streamQueryProblem } from "./stream-protocol.ts";

/** Tunables of the stream; defaults suit production, tests shorten them. */
export interface EventStreamOptions {
  /** Milliseconds between `{ type: "ping" }` messages. Default 25,000. */
  heartbeatMs?: number;
  /** Most stored events a resume replays before it sends `{ type: "resync" }`. Default 1,000. */
  backfillLimit?: number;
  /** Bytes a socket may have queued and unsent before it is closed as a slow consumer. Default 1 MiB. */
  maxBufferedBytes?: number;
  /** Live events a socket may hold while its resume reads stored ones. Default 10,000. */
  maxPendingEvents?: number;
  /** Open sockets of one account on this instance; one more is closed 4429 at once. Default 1,000. */
  maxSocketsPerAccount?: number;
  /**
   * Longest time between two checks that the credential behind each socket still stands (a safety
   * net for a missed revocation message), in ms. Default 60,000.
   */
  recheckMs?: number;
  /** Clock for ticket expiry (epoch ms); tests step it past a ticket's 60 s. */
  clock?: () => number;
  /** The instance's fan-out hub; tests pass their own to watch subscriptions. */
  hub?: EventHub;
}

const REFUSALS: Record<TicketRefusal | "missing", string> = {
  missing: "connect with ?ticket= from POST /v1/events/ticket",
  malformed: "not a ticket this platform issued",
  unknown: "unknown or already used (or expired over 5 minutes ago); tickets are single-use",
  expired: "expired; tickets are valid for 60 s",
};
const BAD_RESUME_ID = "last_event_id must be an event id (evt_…) as the stream sends them";
/** Longest delay setTimeout keeps (longer ones fire at once); a later expiry is left to the periodic check. */
const MAX_TIMER_MS = 2 ** 31 - 1;
/** Client messages a connection holds unhandled at most (a well-behaved client waits for each reply). */
export const MAX_PENDING_MESSAGES = 16;
/**
 * Resume messages a connection may send: RESUME_BURST at once, then one per RESUME_EVERY_MS (each reads
 * up to a thousand stored events; a client that lost events reconnects with last_event_id instead).
 */
export const RESUME_BURST = 10;
const RESUME_EVERY_MS = 6000;

/** Ids recently sent on one socket, bounded: what dedupes the resume seam. */
class RecentIds {
  private readonly ids = new Set<number>();
  constructor(private readonly capacity: number) {}
  has(id: number): boolean {
    return this.ids.has(id);
  }
  add(id: number): void {
    this.ids.add(id);
    if (this.ids.size > this.capacity) this.ids.delete(this.ids.values().next().value!);
  }
}

interface StreamDeps {
  platform: Platform;
  hub: EventHub;
  heartbeatMs: number;
  backfillLimit: number;
  maxBufferedBytes: number;
  maxPendingEvents: number;
  maxSocketsPerAccount: number;
  recheckMs: number;
  clock: () => number;
}

type Query = Record<string, string | string[] | undefined>;

/** One connected socket and its stream state. */
/**
 * What a wallboard ticket's socket is sent: the calls and agents a wallboard shows. The wallboard scope
 * grants no more (SPEC.md section 5): message bodies, faxes, recordings and campaigns need their own
 * scopes over REST, so an `events` ticket (scope events) is needed for them here too.
 */
export const WALLBOARD_EVENTS: ReadonlySet<EventName> = new Set<EventName>(["call.started", "call.answered", "call.ended", "agent.state"]);

class StreamClient {
  private accountId: string | null = null;
  /** The credential that minted the ticket (null until the ticket is redeemed). */
  private minter: StreamCredential | null = null;
  /** Ends the socket when the minting session expires. */
  private expiry: ReturnType<typeof setTimeout> | null = null;
  private kind: TicketKind | null = null;
  private filter: Set<EventName> | null = null;
  /** While true, live events wait in `pending` (until start-up or a resume has sent stored ones). */
  private buffering = true;
  private pending: PlatformEvent[] = [];
  private readonly sent: RecentIds;
  private chain: Promise<void> = Promise.resolve();
  /** Client messages received and not handled yet. */
  private unhandled = 0;
  /** Resume messages this connection may send now (refilled over time, see RESUME_BURST). */
  private resumes = RESUME_BURST;
  private resumesAt = Date.now();
  private closed = false;
  private readonly listener = (event: PlatformEvent) => this.onLive(event);

  constructor(
    private readonly raw: ServerWebSocket<unknown>,
    private readonly deps: StreamDeps,
  ) {
    this.sent = new RecentIds(Math.max(4096, deps.backfillLimit * 2));
  }

  /** Start-up and every client message run one at a time, in arrival order. */
  private enqueue(step: () => Promise<void> | void): void {
    this.chain = this.chain
      .then(() => (this.closed ? undefined : step()))
      .catch((error) => {
        this.deps.platform.log.error("event stream failed", { account_id: this.accountId, error: describeError(error) });
        this.close(CLOSE.internal, closeReason("internal", "stream failed; reconnect and resume"));
      });
  }

  start(query: Query): void {
    this.enqueue(() => this.init(query));
  }

  receive(message: unknown): void {
    // Each message waits for the one before (a resume reads up to a thousand stored events): a client
    // that keeps sending faster than that is closed instead of queueing reads of the store without bound.
    if (this.unhandled >= MAX_PENDING_MESSAGES) {
      return this.close(CLOSE.tooManyMessages, closeReason("too_many_messages", `more than ${MAX_PENDING_MESSAGES} messages waiting; wait for each reply`));
    }
    this.unhandled++;
    this.enqueue(async () => {
      try {
        await this.handle(message);
      } finally {
        this.unhandled--;
      }
    });
  }

  private async init(query: Query): Promise<void> {
    // The URL as a whole first: a parameter we do not take (a typo) would otherwise pass in silence.
    const problem = streamQueryProblem(query);
    if (problem) return this.close(CLOSE.badRequest, closeReason("bad_request", problem));
    // Past that check, ticket and last_event_id are one text each.
    const ticket = query.ticket as string | undefined;
    const lastEventId = query.last_event_id as string | undefined;
    if (!ticket) return this.close(CLOSE.ticketRefused, closeReason("ticket_refused", REFUSALS.missing));
    // The query is checked before the ticket is spent, so a typo does not cost a ticket.
    try {
      // events=a,b&events=c is one list: a,b,c.
      this.filter = parseEventFilter(Array.isArray(query.events) ? query.events.join(",") : query.events);
    } catch (error) {
      return this.close(CLOSE.badRequest, closeReason("bad_request", (error as Error).message));
    }
    let resumeFrom: number | null = null;
    if (lastEventId !== undefined) {
      resumeFrom = this.deps.platform.events.ids.decode(lastEventId);
      if (resumeFrom === null) return this.close(CLOSE.badRequest, closeReason("bad_request", BAD_RESUME_ID));
    }
    const redeemed = await redeemTicket(this.deps.platform.live, ticket, this.deps.clock());
    if (!redeemed.ok) return this.close(CLOSE.ticketRefused, closeReason("ticket_refused", REFUSALS[redeemed.reason]));
    const { grant } = redeemed;
    const minter: StreamCredential = {
      accountId: grant.accountId,
      ...(grant.keyId === undefined ? {} : { keyId: grant.keyId }),
      ...(grant.credentialExpiresAt === undefined ? {} : { expiresAt: grant.credentialExpiresAt }),
    };
    // Known before the check below: a revocation told while that check's reply is on its way finds
    // this socket too (the at-once recheck skips sockets with no credential yet).
    this.minter = minter;
    // A ticket minted just before its key was revoked (or its account suspended) opens nothing.
    const ended = await this.deps.platform.credentials.credentialEnded(minter);
    if (ended) return this.close(CLOSE.ticketRefused, closeReason("ticket_refused", ended));
    if (this.closed) return;
    // Each socket holds memory here (its send buffer, up to maxBufferedBytes): one account's are bounded.
    if (this.deps.hub.listeners(grant.accountId) >= this.deps.maxSocketsPerAccount) {
      return this.close(CLOSE.slowConsumer, closeReason("too_many_sockets", `the account has ${this.deps.maxSocketsPerAccount} streams open on this instance; close one, then reconnect`));
    }
    this.accountId = grant.accountId;
    this.kind = grant.kind;
    if (minter.expiresAt !== undefined && minter.expiresAt - Date.now() <= MAX_TIMER_MS) {
      const reason = closeReason("credential_revoked", "the console session that minted the ticket expired");
      this.expiry = setTimeout(() => this.close(CLOSE.credentialRevoked, reason), minter.expiresAt - Date.now());
      this.expiry.unref();
    }
    // Live events this socket may have missed, which ones unknown (the live store reconnected): the
    // client resumes from the last id it got. (Events an instance could not publish are published by
    // the repair of the instances streaming the account: EventBus.subscribe.)
    await this.deps.hub.attach(this.accountId, this.listener, () => {
      this.close(CLOSE.internal, closeReason("interrupted", "the live feed was interrupted; reconnect and resume"));
    });
    if (this.closed) {
      // Closed while subscribing: dispose() ran before the listener was attached.
      this.deps.hub.detach(this.accountId, this.listener);
      return;
    }
    this.sendJson({
      type: "ready",
      kind: this.kind,
      account_id: this.accountId,
      events: this.filter ? [...this.filter] : "*",
      heartbeat_sec: this.deps.heartbeatMs / 1000,
      last_event_id: resumeFrom === null ? null : lastEventId,
    });
    if (resumeFrom !== null) await this.backfill(resumeFrom);
    else this.flush();
  }

  /** Sends stored events after `afterId` (bounded), then the live ones that arrived meanwhile. */
  private async backfill(afterId: number): Promise<void> {
    this.buffering = true;
    try {
      const limit = this.deps.backfillLimit;
      const names = this.visibleNames();
      const stored = names?.length === 0 ? [] : await this.deps.platform.events.since(this.accountId!, afterId, limit + 1, names);
      // The limit counts the events after the point (those before it, missed for other reasons, are
      // few and bounded, and all sent): the resync names the last of them sent.
      const after = stored.filter((e) => e.id > afterId);
      for (const event of stored) if (event.id < afterId) this.sendEvent(event);
      for (const event of after.slice(0, limit)) this.sendEvent(event);
      if (after.length > limit) {
        const last = after[limit - 1]!;
        this.sendJson({ type: "resync", reason: "too_many_missed", last_event_id: this.deps.platform.events.ids.encode(last.id, last.ts), limit });
      }
    } finally {
      this.flush();
    }
  }

  private flush(): void {
    this.buffering = false;
    const waiting = this.pending;
    this.pending = [];
    for (const event of waiting) this.sendEvent(event);
  }

  private onLive(event: PlatformEvent): void {
    // The channel is the account's own; the check keeps a mis-published message from crossing accounts.
    if (this.closed || event.account_id !== this.accountId) return;
    if (!this.buffering) return this.sendEvent(event);
    if (this.pending.length >= this.deps.maxPendingEvents) {
      return this.close(CLOSE.slowConsumer, closeReason("slow_consumer", "too many events while resuming; reconnect and resume"));
    }
    this.pending.push(event);
  }

  private sendEvent(event: PlatformEvent): void {
    if (this.filter && !this.filter.has(event.event)) return;
    if (this.kind === "wallboard" && !WALLBOARD_EVENTS.has(event.event)) return;
    if (this.sent.has(event.id)) return;
    this.sent.add(event.id);
    this.sendJson({ type: "event", id: this.deps.platform.events.ids.encode(event.id, event.ts), event: event.event, account_id: event.account_id, data: event.data, ts: event.ts });
  }

  /** The event names this socket is sent (its filter, within its ticket kind's events), or undefined for all. */
  private visibleNames(): EventName[] | undefined {
    if (this.kind !== "wallboard") return this.filter ? [...this.filter] : undefined;
    return [...WALLBOARD_EVENTS].filter((n) => !this.filter || this.filter.has(n));
  }

  private sendJson(message: Record<string, unknown>): void {
    if (this.closed) return;
    if (this.raw.getBufferedAmount() > this.deps.maxBufferedBytes) {
      return this.close(CLOSE.slowConsumer, closeReason("slow_consumer", "the client reads too slowly; reconnect and resume"));
    }
    this.raw.send(JSON.stringify(message));
  }

  /** The credential behind the socket, once its ticket is redeemed (null before, and once closed). */
  credential(): StreamCredential | null {
    return this.closed ? null : this.minter;
  }

  /** A heartbeat; sockets still starting up get none. */
  ping(now: number): void {
    if (this.accountId !== null && !this.buffering) this.sendJson({ type: "ping", ts: now });
  }

  private async handle(raw: unknown): Promise<void> {
    if (this.accountId === null) return;
    const message = parseClientMessage(raw);
    if (!message) {
      return this.sendJson({ type: "error", error: "bad_message", message: "Send { type: 'pong' | 'subscribe' | 'resume', … } as JSON." });
    }
    switch (message.type) {
      case "pong":
        return;
      case "subscribe": {
        try {
          this.filter = parseEventFilter(message.events);
        } catch (error) {
          return this.sendJson({ type: "error", error: "bad_filter", message: `${(error as Error).message}; the filter is unchanged.` });
        }
        return this.sendJson({ type: "subscribed", events: this.filter ? [...this.filter] : "*" });
      }
      case "resume": {
        const now = Date.now();
        this.resumes = Math.min(RESUME_BURST, this.resumes + (now - this.resumesAt) / RESUME_EVERY_MS);
        this.resumesAt = now;
        if (this.resumes < 1) {
          return this.close(CLOSE.tooManyMessages, closeReason("too_many_messages", `more than ${RESUME_BURST} resume messages a minute; reconnect with last_event_id instead`));
        }
        this.resumes -= 1;
        const afterId = this.deps.platform.events.ids.decode(message.last_event_id);
        if (afterId === null) return this.sendJson({ type: "error", error: "bad_message", message: BAD_RESUME_ID });
        return this.backfill(afterId);
      }
    }
  }

  /** Closes the socket (once) and releases its subscription. */
  close(code: number, reason: string): void {
    if (this.closed) return;
    this.dispose();
    try {
      this.raw.close(code, reason);
    } catch {
      // Already closed by the peer: nothing left to tell it.
    }
  }

  /** Releases the socket's subscription; called on close from either side. */
  dispose(): void {
    if (this.closed && this.accountId === null) return;
    this.closed = true;
    this.pending = [];
    if (this.expiry) clearTimeout(this.expiry);
    if (this.accountId !== null) this.deps.hub.detach(this.accountId, this.listener);
  }
}

/**
 * The stream as an Elysia plugin for the realtime host. `closeAll()` ends every socket with 1001
 * (call it before stopping the server: open sockets would otherwise hold a graceful stop).
 */
export function eventStream(platform: Platform, options: EventStreamOptions = {}) {
  const deps: StreamDeps = {
    platform,
    hub: options.hub ?? new EventHub(platform.events, platform.log.child({ host: "realtime" })),
    heartbeatMs: options.heartbeatMs ?? 25_000,
    backfillLimit: options.backfillLimit ?? 1000,
    maxBufferedBytes: options.maxBufferedBytes ?? 1024 * 1024,
    maxPendingEvents: options.maxPendingEvents ?? 10_000,
    maxSocketsPerAccount: options.maxSocketsPerAccount ?? 1000,
    recheckMs: options.recheckMs ?? 60_000,
    clock: options.clock ?? Date.now,
  };
  const clients = new Map<string, StreamClient>();
  let timer: ReturnType<typeof setInterval> | null = null;
  let lastPing = Date.now();
  let lastRecheck = Date.now();

  /**
   * Checks the credentials of the sockets `which` picks (each distinct credential once) and closes
   * the sockets of those that no longer stand. A failed check closes nothing (the next one decides).
   */
  const recheck = async (which: (credential: StreamCredential) => boolean): Promise<void> => {
    const groups = new Map<string, { credential: StreamCredential; sockets: StreamClient[] }>();
    for (const client of clients.values()) {
      const credential = client.credential();
      if (!credential || !which(credential)) continue;
      const key = `${credential.accountId} ${credential.keyId ?? ""} ${credential.expiresAt ?? ""}`;
      const group = groups.get(key);
      if (group) group.sockets.push(client);
      else groups.set(key, { credential, sockets: [client] });
    }
    for (const { credential, sockets } of groups.values()) {
      let ended: string | null;
      try {
        ended = await platform.credentials.credentialEnded(credential);
      } catch (error) {
        platform.log.warn("event stream credential check failed", { account_id: credential.accountId, error: describeError(error) });
        continue;
      }
      if (ended) for (const socket of sockets) socket.close(CLOSE.credentialRevoked, closeReason("credential_revoked", ended));
    }
  };
  let rechecking = false;
  const recheckAll = () => {
    if (rechecking) return;
    rechecking = true;
    void recheck(() => true).finally(() => (rechecking = false));
  };
  // A key revoked or an account changed on any instance: its sockets here are checked at once.
  const stopListening = platform.credentials.onInvalidate((kind, id) => {
    void recheck((c) => (kind === "key" ? c.keyId === id : c.accountId === id));
  });

  // One timer for heartbeats and the periodic credential check, running while sockets are open.
  const tick = Math.min(deps.heartbeatMs, deps.recheckMs);
  const startTimer = () => {
    if (timer) return;
    timer = setInterval(() => {
      const now = Date.now();
      if (now - lastPing >= deps.heartbeatMs - tick / 2) {
        lastPing = now;
        for (const client of clients.values()) client.ping(now);
      }
      if (now - lastRecheck >= deps.recheckMs - tick / 2) {
        lastRecheck = now;
        recheckAll();
      }
    }, tick);
    timer.unref();
  };
  const stopTimerWhenIdle = () => {
    if (timer && clients.size === 0) {
      clearInterval(timer);
      timer = null;
    }
  };
  const closeAll = () => {
    stopListening();
    for (const client of clients.values()) client.close(CLOSE.goingAway, closeReason("going_away", "server shutting down; reconnect and resume"));
    clients.clear();
    stopTimerWhenIdle();
  };

  const plugin = new Elysia({ name: "realtime-event-stream", normalize: false })
    .onStop(closeAll)
    .ws(STREAM_PATH, {
      detail: { hide: true },
      open(ws) {
        const client = new StreamClient(ws.raw as ServerWebSocket<unknown>, deps);
        clients.set(ws.id, client);
        if (!timer) lastPing = lastRecheck = Date.now();
        startTimer();
        // Read from the URL itself: Elysia's query keeps one value of a repeated name.
        client.start(readStreamQuery(ws.data.request.url));
      },
      message(ws, message) {
        clients.get(ws.id)?.receive(message);
      },
      close(ws) {
        clients.get(ws.id)?.dispose();
        clients.delete(ws.id);
        stopTimerWhenIdle();
      },
    })
    // A plain GET (no WebSocket upgrade) is told what this is, not "no such endpoint".
    .get(
      STREAM_PATH,
      () => {
        throw validationFailed([
          { path: "/headers/upgrade", message: "This is a WebSocket endpoint: connect with Upgrade: websocket and ?ticket= from POST /v1/events/ticket." },
        ]);
      },
      { detail: { hide: true } },
    );
  return { plugin, hub: deps.hub, closeAll, connections: () => clients.size };
}
