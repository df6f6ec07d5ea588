/** Helpers for tests that run `parley` as a real process. */
import type { Subprocess } from "bun";

/** A port nothing listens on right now. */
export function freePort(): number {
  return freePorts(1)[0]!;
}

/** Ports the OS just handed out; all are held at once so that they differ. */
export function freePorts(count: number): number[] {
  const listeners = Array.from({ length: count }, () => Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } }));
  const ports = listeners.map((l) => l.port);
  for (const l of listeners) l.stop(true);
  return ports;
}

/**
 * Appends a stream to a string as it arrives (draining also keeps a child from blocking on a full
 * pipe); returns a reader of what arrived so far. Past 64 MB only the last 32 MB are kept: long runs
 * (benchmarks) read lines as they come and need only the tail for diagnosis.
 */
export function collect(stream: ReadableStream<Uint8Array>): () => string {
  let text = "";
  const decoder = new TextDecoder();
  const reader = stream.getReader();
  void (async () => {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      text += decoder.decode(value, { stream: true });
      if (text.length > 64_000_000) text = text.slice(-32_000_000);
    }
  })();
  return () => text;
}

/** Reads a process's stdout until `done(text)` holds or the time runs out; returns all text read. */
export async function readUntil(proc: Subprocess<"ignore" | "pipe", "pipe", "pipe" | "inherit" | "ignore">, done: (text: string) => boolean, timeoutMs = 60_000): Promise<string> {
  const reader = proc.stdout.getReader();
  const decoder = new TextDecoder();
  let text = "";
  const deadline = Date.now() + timeoutMs;
  try {
    while (!done(text)) {
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`timed out; output so far:\n${text}`);
      const chunk = await Promise.race([reader.read(), Bun.sleep(left).then(() => null)]);
      if (!chunk) continue;
      if (chunk.done) throw new Error(`process ended; output:\n${text}`);
      text += decoder.decode(chunk.value, { stream: true });
    }
  } finally {
    reader.releaseLock();
  }
  return text;
}

/** The first-run credentials printed in the banner, if any. */
export function bannerCredentials(text: string): { email: string; password: string; apiKey: string } | null {
  const login = /Console login\s+(\S+)\s+\/\s+(\S+)/.exec(text);
  const key = /API key\s+(sk_[0-9A-Za-z]+)/.exec(text);
  return login && key ? { email: login[1]!, password: login[2]!, apiKey: key[1]! } : null;
}
