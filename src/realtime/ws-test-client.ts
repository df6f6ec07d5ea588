/**
 * A small WebSocket test client for the realtime stream (Bun's WebSocket, a real connection): records
 * every message and the close, and waits for what a test expects.
 */

// Messages are whatever JSON the server sent; tests narrow them.
// biome-ignore lint: test helper
export type StreamMessage = Record<string, any>;

export class StreamConnection {
  readonly messages: StreamMessage[] = [];
  readonly closed: Promise<{ code: number; reason: string }>;
  private readonly socket: WebSocket;
  private waiters: Array<() => void> = [];

  constructor(url: string) {
    this.socket = new WebSocket(url);
    this.socket.onmessage = (m) => {
      this.messages.push(JSON.parse(String(m.data)) as StreamMessage);
      this.wake();
    };
    this.closed = new Promise((resolve) => {
      this.socket.onclose = (e) => {
        resolve({ code: e.code, reason: e.reason });
        this.wake();
      };
    });
  }

  private wake(): void {
    const waiting = this.waiters;
    this.waiters = [];
    for (const w of waiting) w();
  }

  /** Waits until `done(messages)` holds; throws with what arrived when `timeoutMs` passes. */
  async until(done: (messages: StreamMessage[]) => boolean, timeoutMs = 10_000): Promise<StreamMessage[]> {
    const deadline = Date.now() + timeoutMs;
    while (!done(this.messages)) {
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`timed out; received: ${JSON.stringify(this.messages).slice(0, 2000)}`);
      await Promise.race([new Promise<void>((r) => this.waiters.push(r)), Bun.sleep(Math.min(left, 250))]);
    }
    return this.messages;
  }

  /** The first message of `type` (waiting for it). */
  async next(type: string, timeoutMs?: number): Promise<StreamMessage> {
    await this.until((ms) => ms.some((m) => m.type === type), timeoutMs);
    return this.messages.find((m) => m.type === type)!;
  }

  /** The `event` messages received so far. */
  events(): StreamMessage[] {
    return this.messages.filter((m) => m.type === "event");
  }

  send(message: unknown): void {
    this.socket.send(typeof message === "string" ? message : JSON.stringify(message));
  }

  close(): void {
    this.socket.close();
  }
}
