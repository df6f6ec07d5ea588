/** Helpers for tests that run `parley` as a real process. */
import type { Subprocess } from "bun";

/** A port nothing listens on right now. */
export function freePort(): number {
  const server = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } });
  const port = server.port;
  server.stop(true);
  return port;
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
