/** SIP messages by hand for the SIP tests: building them, answering digest challenges, reading them off a stream. */
import { createHash } from "node:crypto";

/** A message from its lines; `raw` lines may hold any bytes (header values that are not UTF-8). */
export function sipMessage(lines: Array<string | Buffer>, body = ""): Buffer {
  return Buffer.concat([...lines.flatMap((l) => [typeof l === "string" ? Buffer.from(l) : l, Buffer.from("\r\n")]), Buffer.from("\r\n"), Buffer.from(body)]);
}

const md5 = (text: string) => createHash("md5").update(text).digest("hex");

/** The Authorization value answering `challenge` (qop=auth) for `method` `uri`. */
export function digestAnswer(challenge: string, method: string, uri: string, user: string, realm: string, password: string): string {
  const nonce = /nonce="([^"]+)"/.exec(challenge)![1]!;
  const cnonce = crypto.randomUUID().slice(0, 8);
  const nc = "00000001";
  const response = md5(`${md5(`${user}:${realm}:${password}`)}:${nonce}:${nc}:${cnonce}:auth:${md5(`${method}:${uri}`)}`);
  return `Digest username="${user}", realm="${realm}", nonce="${nonce}", uri="${uri}", response="${response}", algorithm=MD5, qop=auth, nc=${nc}, cnonce="${cnonce}"`;
}

/** A header's values in a message (case-insensitive name, in order). */
export function headers(message: string, name: string): string[] {
  const head = message.slice(0, message.indexOf("\r\n\r\n"));
  return head
    .split("\r\n")
    .slice(1)
    .filter((line) => line.slice(0, line.indexOf(":")).trim().toLowerCase() === name.toLowerCase())
    .map((line) => line.slice(line.indexOf(":") + 1).trim());
}

/**
 * Cuts SIP messages out of a stream (TCP, TLS): each whole message (head and its Content-Length of
 * body) as it completes.
 */
export function sipStreamReader(onMessage: (message: string) => void): (chunk: Buffer) => void {
  let pending = Buffer.alloc(0);
  return (chunk) => {
    pending = Buffer.concat([pending, chunk]);
    for (;;) {
      // Keep-alive CRLFs between messages.
      while (pending.length >= 2 && pending[0] === 13 && pending[1] === 10) pending = pending.subarray(2);
      const end = pending.indexOf("\r\n\r\n");
      if (end < 0) return;
      const head = pending.subarray(0, end).toString();
      const length = Number(/^content-length:\s*(\d+)/im.exec(head)?.[1] ?? 0);
      if (pending.length < end + 4 + length) return;
      onMessage(pending.subarray(0, end + 4 + length).toString());
      pending = pending.subarray(end + 4 + length);
    }
  };
}
