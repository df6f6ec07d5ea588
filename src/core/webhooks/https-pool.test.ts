/**
 * The webhook worker's HTTPS client against real TLS servers: Bun.serve for well-behaved replies,
 * and a raw node:tls server that writes exactly the bytes a test gives (chunked bodies, 1xx, no
 * length, garbage, replies cut off or dribbled a byte at a time, stale keep-alive connections).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { rmSync } from "node:fs";
import { createServer, type TLSSocket } from "node:tls";
import { makeSelfSignedCert } from "./delivery-test-receiver.ts";
import { startBlackhole } from "../../../test/support/blackhole.ts";
import { eventually } from "../../../test/support/eventually.ts";
import { HttpsPool, HttpsPostError, type HttpsPoolOptions, type HttpsPost } from "./https-pool.ts";

let cert: Awaited<ReturnType<typeof makeSelfSignedCert>>;
beforeAll(async () => {
  cert = await makeSelfSignedCert();
});
afterAll(() => rmSync(cert.dir, { recursive: true, force: true }));

function request(port: number, over: Partial<HttpsPost> = {}): HttpsPost {
  return {
    address: "127.0.0.1",
    port,
    serverName: "localhost",
    hostHeader: `localhost:${port}`,
    path: "/in?x=1",
    headers: "content-type: application/json\r\nwebhook-id: evt_1\r\n",
    body: '{"event":"test","name":"Zoë ☎"}',
    timeoutMs: 3000,
    ...over,
  };
}

async function failure(promise: Promise<unknown>): Promise<HttpsPostError> {
  try {
    await promise;
  } catch (error) {
    expect(error).toBeInstanceOf(HttpsPostError);
    return error as HttpsPostError;
  }
  throw new Error("expected the POST to fail");
}

/** One request a raw server read: its head and body text, and which connection (1 = first) it came on. */
interface RawRequest {
  head: string;
  body: string;
  connection: number;
  socket: TLSSocket;
}

/** A TLS server that hands each whole request to `reply`, which writes whatever bytes it likes. */
async function rawServer(reply: (request: RawRequest, n: number) => void) {
  let connections = 0;
  let requests = 0;
  const seen: RawRequest[] = [];
  const server = createServer({ cert: cert.cert, key: cert.key }, (socket) => {
    const connection = ++connections;
    let buffer = Buffer.alloc(0);
    socket.on("error", () => {});
    socket.on("data", (chunk: Buffer) => {
      buffer = Buffer.concat([buffer, chunk]);
      for (;;) {
        const end = buffer.indexOf("\r\n\r\n");
        if (end < 0) return;
        const head = buffer.toString("latin1", 0, end);
        const length = Number(/content-length: (\d+)/i.exec(head)?.[1] ?? 0);
        if (buffer.length < end + 4 + length) return;
        const body = buffer.toString("utf8", end + 4, end + 4 + length);
        buffer = buffer.subarray(end + 4 + length);
        const received = { head, body, connection, socket };
        seen.push(received);
        reply(received, ++requests);
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as { port: number }).port;
  return {
    port,
    seen,
    get connections() {
      return connections;
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** Runs `body` with a raw server answering as `reply` and a pool trusting the test certificate; closes both. */
async function withRaw(reply: (request: RawRequest, n: number) => void, options: Omit<HttpsPoolOptions, "ca">, body: (raw: Awaited<ReturnType<typeof rawServer>>, pool: HttpsPool) => Promise<void>): Promise<void> {
  const raw = await rawServer(reply);
  const pool = new HttpsPool({ ca: [cert.cert], ...options });
  try {
    await body(raw, pool);
  } finally {
    pool.close();
    await raw.close();
  }
}

describe("HttpsPool with a real HTTPS server", () => {
  test("POSTs the request line, Host, the given headers, Content-Length and the UTF-8 body; keeps the connection alive", async () => {
    const seen: Array<{ method: string; url: string; headers: Record<string, string>; body: string; port: number }> = [];
    const server = Bun.serve({
      hostname: "127.0.0.1",
      port: 0,
      tls: { cert: cert.cert, key: cert.key },
      async fetch(req, srv) {
        seen.push({ method: req.method, url: req.url, headers: Object.fromEntries(req.headers), body: await req.text(), port: srv.requestIP(req)!.port });
        return new Response(seen.length === 2 ? "accepted" : null, { status: seen.length === 2 ? 202 : 200 });
      },
    });
    const pool = new HttpsPool({ ca: [cert.cert] });
    try {
      const port = server.port!;
      expect(await pool.post(request(port))).toBe(200);
      expect(await pool.post(request(port))).toBe(202);
      expect(await pool.post(request(port, { body: "" }))).toBe(200);
      expect(seen[0]!.method).toBe("POST");
      expect(seen[0]!.url).toBe(`https://localhost:${port}/in?x=1`);
      expect(seen[0]!.headers).toMatchObject({ host: `localhost:${port}`, "content-type": "application/json", "webhook-id": "evt_1", "content-length": String(Buffer.byteLength(request(port).body)) });
      expect(seen[0]!.body).toBe('{"event":"test","name":"Zoë ☎"}');
      expect(seen[2]!.body).toBe("");
      // One connection served all three.
      expect(new Set(seen.map((s) => s.port)).size).toBe(1);
      expect(pool.size).toBe(1);
    } finally {
      pool.close();
      await server.stop(true);
    }
  });

  test("a body larger than the socket takes at once is written whole as the socket drains", async () => {
    let length = -1;
    const server = Bun.serve({
      hostname: "127.0.0.1",
      port: 0,
      tls: { cert: cert.cert, key: cert.key },
      async fetch(req) {
        const text = await req.text();
        length = text.length;
        return new Response(text.endsWith("end") ? "ok" : "short", { status: text.endsWith("end") ? 200 : 400 });
      },
    });
    const pool = new HttpsPool({ ca: [cert.cert] });
    try {
      const body = `${"é".repeat(2_000_000)}end`;
      expect(await pool.post(request(server.port!, { body, timeoutMs: 10_000 }))).toBe(200);
      expect(length).toBe(body.length);
    } finally {
      pool.close();
      await server.stop(true);
    }
  });

  test("a certificate for another name, or from a CA not trusted, is refused before any request is sent", async () => {
    const raw = await rawServer((r) => r.socket.write("HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n"));
    try {
      const trusting = new HttpsPool({ ca: [cert.cert] });
      const wrongName = await failure(trusting.post(request(raw.port, { serverName: "hooks.example.com" })));
      expect(wrongName.code).toBe("ERR_TLS_CERT_ALTNAME_INVALID");
      const untrusted = await failure(new HttpsPool().post(request(raw.port)));
      expect(untrusted.code).toMatch(/SELF_SIGNED|UNABLE_TO|CERT/);
      // An address URL (no server name) is checked against the certificate's IP entries: 127.0.0.1 is one.
      expect(await trusting.post(request(raw.port, { serverName: null }))).toBe(200);
      expect(raw.seen).toHaveLength(1);
      trusting.close();
    } finally {
      await raw.close();
    }
  });

  test("a refused connection is ECONNREFUSED; a server that never answers is a TimeoutError and its connection is closed", async () => {
    const probe = await rawServer(() => {});
    const closedPort = probe.port;
    await probe.close();
    const pool = new HttpsPool({ ca: [cert.cert] });
    expect((await failure(pool.post(request(closedPort)))).code).toBe("ECONNREFUSED");
    const silent = await rawServer(() => {});
    try {
      const timedOut = await failure(pool.post(request(silent.port, { timeoutMs: 300 })));
      expect(timedOut.code).toBe("ETIMEDOUT");
      expect(timedOut.name).toBe("TimeoutError");
      expect(silent.seen).toHaveLength(1);
      expect(pool.size).toBe(0);
    } finally {
      pool.close();
      await silent.close();
    }
  });

  test("a header value with a line break, or anything but visible ASCII, is refused before connecting", async () => {
    const pool = new HttpsPool({ ca: [cert.cert] });
    const bads: Array<Partial<HttpsPost>> = [
      { headers: "x-a: 1\r\nx-b: 2\nx-c: 3\r\n" },
      { headers: "x-a: 1" },
      { hostHeader: "a\r\nx: y" },
      { path: "/in\r\nx: y" },
      // Characters that become CR and LF when written as latin1.
      { headers: "x-a: \u010d\u010aPOST /smuggled HTTP/1.1\r\n" },
      { hostHeader: "localhost\u010d\u010ax: y" },
      { path: "/in x" },
      { headers: "bad name: 1\r\n" },
    ];
    for (const bad of bads) {
      expect((await failure(pool.post(request(1, bad)))).code).toBe("EBADREQUEST");
    }
    pool.close();
  });
});

describe("HttpsPool reading replies", () => {
  test("a chunked body with extensions and trailers is read whole and the connection is reused", async () => {
    const reply = "HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n5;ext=1\r\nhello\r\n6\r\n world\r\n0\r\nx-trailer: yes\r\n\r\n";
    await withRaw((r) => r.socket.write(reply), {}, async (raw, pool) => {
      expect(await pool.post(request(raw.port))).toBe(200);
      expect(await pool.post(request(raw.port))).toBe(200);
      expect(raw.seen.map((r) => r.connection)).toEqual([1, 1]);
    });
  });

  test("replies dribbled one byte at a time parse the same (head, chunked body, then a Content-Length reply)", async () => {
    const replies = [
      "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\ntransfer-encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n",
      "HTTP/1.1 200 OK\r\ncontent-length: 4\r\n\r\nokay",
    ];
    let written = Promise.resolve();
    await withRaw((r, n) => {
      written = (async () => {
        for (const byte of Buffer.from(replies[n - 1]!)) {
          r.socket.write(Buffer.from([byte]));
          await Bun.sleep(1);
        }
      })();
    }, {}, async (raw, pool) => {
      // The status is given once the head is read; the body is drained after it.
      expect(await pool.post(request(raw.port))).toBe(201);
      await written;
      await Bun.sleep(50);
      expect(await pool.post(request(raw.port))).toBe(200);
      expect(raw.connections).toBe(1);
    });
  });

  test("1xx replies are skipped; 204 has no body; a reply without a length runs to the close and its connection is not reused", async () => {
    const replies = [
      "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nlink: </a>\r\n\r\nHTTP/1.1 204 No Content\r\n\r\n",
      "HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\n\r\nall of it",
      "HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n",
    ];
    await withRaw((r, n) => {
      r.socket.write(replies[n - 1]!);
      if (n === 2) r.socket.end();
    }, {}, async (raw, pool) => {
      expect(await pool.post(request(raw.port))).toBe(204);
      expect(await pool.post(request(raw.port))).toBe(200);
      expect(await pool.post(request(raw.port))).toBe(200);
      expect(raw.seen.map((r) => r.connection)).toEqual([1, 1, 2]);
    });
  });

  test("Connection: close, HTTP/1.0 without keep-alive and a Keep-Alive timeout under a second are not reused", async () => {
    const replies = [
      "HTTP/1.1 200 OK\r\nconnection: close\r\ncontent-length: 0\r\n\r\n",
      "HTTP/1.0 200 OK\r\ncontent-length: 0\r\n\r\n",
      "HTTP/1.1 200 OK\r\nkeep-alive: timeout=1\r\ncontent-length: 0\r\n\r\n",
      "HTTP/1.0 200 OK\r\nconnection: keep-alive\r\ncontent-length: 0\r\n\r\n",
      "HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n",
    ];
    await withRaw((r, n) => r.socket.write(replies[n - 1]!), {}, async (raw, pool) => {
      for (let i = 0; i < replies.length; i++) expect(await pool.post(request(raw.port))).toBe(200);
      expect(raw.seen.map((r) => r.connection)).toEqual([1, 2, 3, 4, 4]);
    });
  });

  test("a body longer than maxDrainBytes gives its status, then the connection is closed rather than read", async () => {
    await withRaw((r) => r.socket.write(`HTTP/1.1 200 OK\r\ncontent-length: 5000\r\n\r\n${"x".repeat(5000)}`), { maxDrainBytes: 1000 }, async (raw, pool) => {
      expect(await pool.post(request(raw.port))).toBe(200);
      expect(await pool.post(request(raw.port))).toBe(200);
      expect(raw.seen.map((r) => r.connection)).toEqual([1, 2]);
    });
  });

  test("not HTTP, a bad Content-Length or status or header name, heads over maxHeadBytes (1xx counted) or a protocol switch is EBADREPLY and closes the connection", async () => {
    const replies = [
      "hello there\r\n\r\n",
      "HTTP/1.1 200 OK\r\ncontent-length: 1\r\ncontent-length: 2\r\n\r\nab",
      `HTTP/1.1 200 OK\r\nx-big: ${"y".repeat(3000)}\r\n\r\n`,
      "HTTP/1.1 101 Switching Protocols\r\nupgrade: websocket\r\n\r\n",
      "HTTP/1.1 099 Odd\r\ncontent-length: 0\r\n\r\n",
      "HTTP/1.1 200 OK\r\ncontent-length : 0\r\n\r\n",
      "HTTP/1.1 200 OK\ncontent-length: 0\n\n",
      `${"HTTP/1.1 100 Continue\r\n\r\n".repeat(200)}HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n`,
    ];
    await withRaw((r, n) => r.socket.write(replies[n - 1]!), { maxHeadBytes: 2048 }, async (raw, pool) => {
      for (let i = 0; i < replies.length; i++) expect((await failure(pool.post(request(raw.port)))).code, replies[i]!.slice(0, 40)).toBe("EBADREPLY");
      expect(raw.seen.map((r) => r.connection)).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
      expect(pool.size).toBe(0);
    });
  });

  test("a bad chunked body after a good head keeps the status but closes the connection", async () => {
    await withRaw((r) => r.socket.write("HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\nzz\r\n"), {}, async (raw, pool) => {
      expect(await pool.post(request(raw.port))).toBe(200);
      expect(await pool.post(request(raw.port))).toBe(200);
      expect(raw.seen.map((r) => r.connection)).toEqual([1, 2]);
      expect(pool.size).toBe(0);
    });
  });

  test("a reply cut off after its first bytes is ECONNRESET and not sent again", async () => {
    await withRaw((r) => r.socket.end("HTTP/1.1 20"), {}, async (raw, pool) => {
      const cut = await failure(pool.post(request(raw.port)));
      expect(cut.code).toBe("ECONNRESET");
      expect(cut.beforeReply).toBe(false);
      expect(raw.seen).toHaveLength(1);
    });
  });

  test("a kept-alive connection the server closed is replaced: the POST goes out once more on a new connection", async () => {
    await withRaw((r, n) => {
      // The second request arrives on the first connection, which the server then drops unanswered.
      if (n === 2) r.socket.destroy();
      else r.socket.write("HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n");
    }, {}, async (raw, pool) => {
      expect(await pool.post(request(raw.port))).toBe(200);
      expect(await pool.post(request(raw.port))).toBe(200);
      expect(raw.seen.map((r) => r.connection)).toEqual([1, 1, 2]);
      // A new connection that closes unanswered is not tried again.
      const fresh = new HttpsPool({ ca: [cert.cert] });
      const dropping = await rawServer((r) => r.socket.destroy());
      const dropped = await failure(fresh.post(request(dropping.port)));
      expect(dropped.code).toBe("ECONNRESET");
      expect(dropping.seen).toHaveLength(1);
      fresh.close();
      await dropping.close();
    });
  });

  test("an idle connection is closed after idleMs, and one the server closes leaves the pool", async () => {
    await withRaw((r, n) => {
      r.socket.write("HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n");
      if (n === 2) setTimeout(() => r.socket.end(), 20);
    }, { idleMs: 100 }, async (raw, pool) => {
      expect(await pool.post(request(raw.port))).toBe(200);
      expect(pool.size).toBe(1);
      await Bun.sleep(250);
      expect(pool.size).toBe(0);
      expect(await pool.post(request(raw.port))).toBe(200);
      await Bun.sleep(80);
      expect(pool.size).toBe(0);
      expect(await pool.post(request(raw.port))).toBe(200);
      expect(raw.seen.map((r) => r.connection)).toEqual([1, 2, 3]);
    });
  });

  test("Transfer-Encoding: chunked wins over Content-Length, a coding after chunked runs to the close; neither connection is reused", async () => {
    const replies = [
      "HTTP/1.1 200 OK\r\ncontent-length: 100\r\ntransfer-encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n",
      "HTTP/1.1 200 OK\r\ntransfer-encoding: chunked, gzip\r\n\r\nxyz",
      "HTTP/1.1 200 OK\r\ntransfer-encoding: gzip\r\ntransfer-encoding: chunked\r\n\r\n0\r\n\r\n",
      "HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n",
    ];
    await withRaw((r, n) => {
      r.socket.write(replies[n - 1]!);
      if (n === 2) r.socket.end();
    }, {}, async (raw, pool) => {
      for (let i = 0; i < replies.length; i++) expect(await pool.post(request(raw.port))).toBe(200);
      // The last coding chunked (given over two headers) keeps its connection.
      expect(raw.seen.map((r) => r.connection)).toEqual([1, 2, 3, 3]);
    });
  });

  test("endless trailers after the status are cut at maxDrainBytes: the status stands, the connection is closed", async () => {
    await withRaw((r) => {
      r.socket.write("HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n0\r\n");
      r.socket.write(`x-trailer: ${"t".repeat(100)}\r\n`.repeat(2000));
    }, { maxDrainBytes: 4096 }, async (raw, pool) => {
      expect(await pool.post(request(raw.port))).toBe(200);
      await Bun.sleep(50);
      expect(pool.size).toBe(0);
    });
  });

  test("a reply that comes before the whole request was written closes the connection: the next request does not land in the old body", async () => {
    const server = Bun.serve({
      hostname: "127.0.0.1",
      port: 0,
      tls: { cert: cert.cert, key: cert.key },
      // Refuses at once, without reading the body.
      fetch: (req) => (new URL(req.url).pathname === "/big" ? new Response("no", { status: 401 }) : new Response("ok")),
    });
    const pool = new HttpsPool({ ca: [cert.cert] });
    try {
      expect(await pool.post(request(server.port!, { path: "/big", body: "x".repeat(8_000_000), timeoutMs: 10_000 }))).toBe(401);
      expect(await pool.post(request(server.port!, { path: "/small" }))).toBe(200);
    } finally {
      pool.close();
      await server.stop(true);
    }
  });

  test("the stale-connection retry happens once, on a new connection, however many idle connections there are", async () => {
    let drop = false;
    await withRaw((r) => {
      if (drop) r.socket.destroy();
      else r.socket.write("HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n");
    }, {}, async (raw, pool) => {
      // Four connections parked.
      expect(await Promise.all([1, 2, 3, 4].map(() => pool.post(request(raw.port))))).toEqual([200, 200, 200, 200]);
      expect(raw.connections).toBe(4);
      drop = true;
      const dropped = await failure(pool.post(request(raw.port, { headers: "webhook-id: evt_once\r\n" })));
      expect(dropped.code).toBe("ECONNRESET");
      const copies = raw.seen.filter((r) => r.head.includes("evt_once"));
      expect(copies).toHaveLength(2);
      expect(copies[1]!.connection).toBe(5);
    });
  });

  test("connects to an address that drops packets are bounded: past maxPendingConnects a new one fails at once; connectTimeoutMs cuts the connect short", async () => {
    const hole = await startBlackhole();
    const pool = new HttpsPool({ ca: [cert.cert], maxPendingConnects: 2 });
    try {
      // The POST's own limit is a minute: only the connect limit ends it within the test's time.
      const cut = await failure(pool.post(request(hole.port, { timeoutMs: 60_000, connectTimeoutMs: 150 })));
      expect(cut).toMatchObject({ code: "ETIMEDOUT", sent: false });
      expect((await failure(pool.post(request(hole.port, { timeoutMs: 150 })))).code).toBe("ETIMEDOUT");
      // Both given up on, both still held by the kernel (Bun cannot cancel a pending connect).
      expect(pool.pendingTo("127.0.0.1", hole.port)).toBe(2);
      const refused = await failure(pool.post(request(hole.port, { timeoutMs: 5000 })));
      expect(refused).toMatchObject({ code: "ECONNPENDING", sent: false });
      // Once the address answers (here: refuses), the kernel lets them go and they no longer count.
      await hole.stop();
      await eventually(() => expect(pool.pendingTo("127.0.0.1", hole.port)).toBe(0), 10_000);
    } finally {
      pool.close();
      await hole.stop();
    }
    // Connects in progress are not counted: a burst of new connections to a healthy receiver all go.
    const server = Bun.serve({ hostname: "127.0.0.1", port: 0, tls: { cert: cert.cert, key: cert.key }, fetch: () => new Response("ok") });
    const burst = new HttpsPool({ ca: [cert.cert], maxPendingConnects: 1 });
    try {
      const statuses = await Promise.all(Array.from({ length: 32 }, () => burst.post(request(server.port!))));
      expect(statuses).toEqual(Array(32).fill(200));
      expect(burst.size).toBe(32);
    } finally {
      burst.close();
      await server.stop(true);
    }
  });

  test("a connection that opens after its attempt timed out is closed, not kept", async () => {
    // Our SYN is dropped (the listener's accept queue is full) and resent by the kernel a second later,
    // after the attempt's 300 ms ran out; the queue is drained meanwhile, so that connection then opens.
    const listener = await startBlackhole("127.0.0.1", 0, { acceptAfterMs: 500 });
    const pool = new HttpsPool({ ca: [cert.cert] });
    try {
      expect((await failure(pool.post(request(listener.port, { timeoutMs: 300 })))).code).toBe("ETIMEDOUT");
      await Bun.sleep(1800);
      expect(pool.size).toBe(0);
    } finally {
      pool.close();
      await listener.stop();
    }
  }, 15_000);
});
