/**
 * The webhook worker's HTTPS client: HTTP/1.1 POSTs over TLS connections kept alive per
 * (certificate name, address, port), on Bun's sockets.
 *
 * Why not fetch: a webhook attempt needs only the status of a POST, and Bun's fetch hands every
 * request to its HTTP thread and back and builds Request, Headers and Response objects around it.
 * On the benchmark machine that cost ~40 µs of CPU per POST (the receiver's share aside) against
 * ~13 µs here, with the HTTP thread competing with PostgreSQL for the second core (docs/decisions.md).
 *
 * What it does, and no more: connects to the address the caller checked, verifies the certificate
 * against `serverName` (or the address when the URL named one) with the given CAs, writes one
 * request, reads the reply's head (1xx skipped), answers with its status, and drains a body of at
 * most `maxDrainBytes` (Content-Length, chunked, or up to the close) before the connection goes
 * back to the pool. No redirects, no compression, no pipelining, no HTTP/2. A connection is reused
 * only when the reply allows it and for at most `idleMs` (or the server's Keep-Alive timeout, less
 * a second). A POST on a reused connection that closes before any byte of its reply is sent once
 * more, on a new connection (the server closed an idle connection as we wrote: it never saw the
 * request, or, rarely, saw it and answered nothing; receivers dedupe on `webhook-id`). What a reply
 * may cost is bounded: its heads (1xx included) together by `maxHeadBytes`, everything after the
 * final head (chunk framing and trailers included) by `maxDrainBytes`, and the whole by the timeout.
 */

/** One POST. Path, Host and header lines are printable ASCII (tab allowed); anything else is EBADREQUEST. */
export interface HttpsPost {
  /** The checked IP address to connect to. */
  address: string;
  port: number;
  /** The URL's host name: SNI and the certificate's name; null when the URL's host is an address. */
  serverName: string | null;
  /** The Host header (the URL's host and port). */
  hostHeader: string;
  /** Path and query, as in the URL. */
  path: string;
  /** Further request headers, each `name: value\r\n`. */
  headers: string;
  body: string;
  /** Time limit of the whole POST (connecting, TLS, reply head), ms. */
  timeoutMs: number;
  /**
   * Time limit of opening a new connection (TCP and TLS), ms, when shorter than `timeoutMs`: the
   * caller has another address of the host to try if this one does not answer.
   */
  connectTimeoutMs?: number;
}

/** Why a POST got no status. `code` is short and secret-free. */
export class HttpsPostError extends Error {
  constructor(
    /** ECONNREFUSED, ECONNRESET, ETIMEDOUT, EBADREPLY, EBADREQUEST, or the TLS verification's code. */
    readonly code: string,
    message: string,
    /** The connection closed before any byte of the reply (a stale keep-alive, when it was reused). */
    readonly beforeReply = false,
    /** Some of the request may have reached the server (false: it failed while connecting). */
    readonly sent = true,
  ) {
    super(message);
    this.name = code === "ETIMEDOUT" ? "TimeoutError" : "HttpsPostError";
  }
}

export interface HttpsPoolOptions {
  /** Trusted CAs (PEM); Bun's bundled roots when absent. */
  ca?: string[];
  /** How long an idle connection is kept, ms (default 4000: under the 5 s of common servers). */
  idleMs?: number;
  /** Most idle connections kept in all (default 512; the least recently used go first). */
  maxIdle?: number;
  /** Largest reply body read to keep its connection; a longer one closes it (default 64 KiB). */
  maxDrainBytes?: number;
  /** Largest reply head (default 16 KiB); a longer one is a bad reply. */
  maxHeadBytes?: number;
  /**
   * Most connects given up on (their time ran out) and still waiting for the network, per address and
   * port (default 8); while that many wait, a new connection there fails at once (ECONNPENDING,
   * nothing sent). Bun's sockets cannot cancel a pending connect: the kernel keeps it, and its
   * descriptor, until the address answers or it gives up (about two minutes for one that drops
   * packets), so this bounds what one unreachable endpoint holds. Connects in progress are not
   * counted (a burst of new connections to a healthy receiver is never refused).
   */
  maxPendingConnects?: number;
}

type TlsSocket = Bun.Socket<Connection>;

const CRLFCRLF = Buffer.from("\r\n\r\n");
const STATUS_LINE = /^HTTP\/1\.([01]) (\d{3})(?: |$)/;
/** A header name's characters (RFC 9110 token). */
const TOKEN_CHARS = "[!#$%&'*+\\-.^_`|~0-9A-Za-z]+";
const TOKEN = new RegExp(`^${TOKEN_CHARS}$`);
/** A request target or Host value: visible ASCII, no spaces. */
const TARGET = /^[\x21-\x7e]+$/;
/** Header lines: a token, a colon, visible ASCII, spaces and tabs, CRLF; each of them. */
const HEADER_LINES = new RegExp(`^(?:${TOKEN_CHARS}:[\\t\\x20-\\x7e]*\\r\\n)*$`);

/** The reply being read on a connection. */
interface Exchange {
  resolve(status: number): void;
  reject(error: HttpsPostError): void;
  timer: ReturnType<typeof setTimeout>;
  /** Some byte of the reply arrived. */
  answered: boolean;
  /** Its status was given to the caller (the body is being drained). */
  settled: boolean;
}

/** One TLS connection and the state of its HTTP/1.1 reply parser. */
class Connection {
  socket: TlsSocket | null = null;
  ready = false;
  closed = false;
  exchange: Exchange | null = null;
  /** Bytes received and not yet parsed. */
  buffer: Buffer | null = null;
  /** Unwritten request bytes (the socket took part of them). */
  unwritten: Buffer | null = null;
  phase: "idle" | "head" | "length" | "chunk-size" | "chunk-data" | "chunk-crlf" | "trailers" | "close" = "idle";
  /** Body bytes still expected (length and chunk-data phases). */
  left = 0;
  /** Bytes of the reply's heads so far (1xx included). */
  headBytes = 0;
  /** Bytes received after the final head (body, chunk framing, trailers). */
  afterHead = 0;
  keepAlive = true;
  /** When the connection stops being reusable (ms epoch), from the server's Keep-Alive timeout. */
  reuseUntil = Infinity;
  idleTimer: ReturnType<typeof setTimeout> | null = null;
  constructor(readonly key: string) {}
}

/**
 * A pool of keep-alive HTTPS connections.
 * @example const pool = new HttpsPool({ ca }); const status = await pool.post({ address: "203.0.113.7", port: 443, serverName: "hooks.example.com", hostHeader: "hooks.example.com", path: "/in", headers: "content-type: application/json\r\n", body: "{}", timeoutMs: 5000 });
 */
export class HttpsPool {
  private readonly idle = new Map<string, Connection[]>();
  /** Every idle connection, least recently parked first (eviction order). */
  private readonly idleOrder = new Set<Connection>();
  private readonly open = new Set<Connection>();
  private readonly idleMs: number;
  private readonly maxIdle: number;
  readonly maxDrainBytes: number;
  readonly maxHeadBytes: number;
  private closing = false;
  private readonly maxPendingConnects: number;
  /** Connects not yet opened or failed, per address and port (given up on or not). */
  private readonly pendingConnects = new Map<string, number>();

  constructor(private readonly options: HttpsPoolOptions = {}) {
    this.maxPendingConnects = options.maxPendingConnects ?? 8;
    this.idleMs = options.idleMs ?? 4000;
    this.maxIdle = options.maxIdle ?? 512;
    this.maxDrainBytes = options.maxDrainBytes ?? 64 * 1024;
    this.maxHeadBytes = options.maxHeadBytes ?? 16 * 1024;
  }

  /** Connections open now (idle or busy). */
  get size(): number {
    return this.open.size;
  }

  /** POSTs and resolves with the reply's status; rejects with an HttpsPostError. */
  async post(request: HttpsPost): Promise<number> {
    if (this.closing) throw new HttpsPostError("ECONNRESET", "the pool is closed");
    const deadline = Date.now() + request.timeoutMs;
    const head = requestHead(request);
    const key = `${request.serverName ?? ""}|${request.address}|${request.port}`;
    let retried = false;
    for (;;) {
      const reused = retried ? null : this.takeIdle(key);
      const connectBy = request.connectTimeoutMs === undefined ? deadline : Math.min(deadline, Date.now() + request.connectTimeoutMs);
      const connection = reused ?? (await this.connect(key, request, connectBy));
      try {
        return await this.exchange(connection, head, deadline);
      } catch (error) {
        const e = error as HttpsPostError;
        // A stale keep-alive connection: closed before any byte of the reply came back. Once, on a
        // new connection (never from one idle connection to the next).
        if (reused && e.beforeReply && Date.now() < deadline) {
          retried = true;
          continue;
        }
        throw error;
      }
    }
  }

  /** Closes every connection (requests in flight fail with ECONNRESET). */
  close(): void {
    this.closing = true;
    for (const connection of this.open) connection.socket?.terminate();
    this.open.clear();
    this.idle.clear();
    this.idleOrder.clear();
  }

  private takeIdle(key: string): Connection | null {
    const list = this.idle.get(key);
    while (list?.length) {
      const connection = list.pop()!;
      if (!list.length) this.idle.delete(key);
      this.idleOrder.delete(connection);
      if (connection.idleTimer) clearTimeout(connection.idleTimer);
      connection.idleTimer = null;
      if (!connection.closed && Date.now() < connection.reuseUntil) return connection;
      this.destroy(connection);
    }
    return null;
  }

  private park(connection: Connection): void {
    if (this.closing || connection.closed || !connection.keepAlive || Date.now() >= connection.reuseUntil) {
      this.destroy(connection);
      return;
    }
    connection.phase = "idle";
    connection.buffer = null;
    const list = this.idle.get(connection.key);
    if (list) list.push(connection);
    else this.idle.set(connection.key, [connection]);
    this.idleOrder.add(connection);
    const wait = Math.max(0, Math.min(this.idleMs, connection.reuseUntil - Date.now()));
    connection.idleTimer = setTimeout(() => this.destroy(connection), wait);
    if (this.idleOrder.size > this.maxIdle) this.destroy(this.idleOrder.values().next().value as Connection);
  }

  private forget(connection: Connection): void {
    this.open.delete(connection);
    if (this.idleOrder.delete(connection)) {
      const list = this.idle.get(connection.key);
      const at = list?.indexOf(connection) ?? -1;
      if (list && at >= 0) list.splice(at, 1);
      if (list && !list.length) this.idle.delete(connection.key);
    }
    if (connection.idleTimer) clearTimeout(connection.idleTimer);
    connection.idleTimer = null;
  }

  private destroy(connection: Connection): void {
    connection.closed = true;
    this.forget(connection);
    connection.socket?.terminate();
  }

  /** Connects given up on and still pending now to `address`:`port` (tests). */
  pendingTo(address: string, port: number): number {
    return this.pendingConnects.get(`${address}|${port}`) ?? 0;
  }

  /** Opens a connection and waits for its verified TLS handshake. */
  private connect(key: string, request: HttpsPost, deadline: number): Promise<Connection> {
    const connection = new Connection(key);
    const pool = this;
    const target = `${request.address}|${request.port}`;
    if ((this.pendingConnects.get(target) ?? 0) >= this.maxPendingConnects) {
      return Promise.reject(new HttpsPostError("ECONNPENDING", "too many connects to this address given up on and still waiting", false, false));
    }
    /** The kernel answered for this connect (opened, refused, failed), and whether it was counted as given up on. */
    let answered = false;
    let abandoned = false;
    const settled = () => {
      answered = true;
      if (!abandoned) return;
      abandoned = false;
      const left = (pool.pendingConnects.get(target) ?? 1) - 1;
      if (left > 0) pool.pendingConnects.set(target, left);
      else pool.pendingConnects.delete(target);
    };
    /** Its time ran out before the kernel answered: counted until it does. */
    const abandon = () => {
      if (answered || abandoned) return;
      abandoned = true;
      pool.pendingConnects.set(target, (pool.pendingConnects.get(target) ?? 0) + 1);
    };
    return new Promise<Connection>((resolve, reject) => {
      let done = false;
      const fail = (error: HttpsPostError) => {
        if (done) return;
        done = true;
        clearTimeout(timer);
        pool.destroy(connection);
        reject(error);
      };
      const timer = setTimeout(() => {
        abandon();
        fail(new HttpsPostError("ETIMEDOUT", "timed out connecting", false, false));
      }, Math.max(0, deadline - Date.now()));
      const tls = {
        ...(this.options.ca ? { ca: this.options.ca } : {}),
        ...(request.serverName ? { serverName: request.serverName } : {}),
        rejectUnauthorized: true,
      };
      const connectFailed = (error: unknown) => {
        const code = (error as { code?: string } | null)?.code;
        fail(new HttpsPostError(code || "ECONNRESET", code === "ECONNREFUSED" ? "connection refused" : "connection failed", false, false));
      };
      try {
        Bun.connect<Connection>({
          hostname: request.address,
          port: request.port,
          tls,
          data: connection,
          socket: {
            open(socket) {
              settled();
              // Opened after the attempt gave up (its time ran out): not ours to keep.
              if (done) {
                socket.terminate();
                return;
              }
              connection.socket = socket;
              pool.open.add(connection);
            },
            handshake(socket, ok, error) {
              if (done) {
                socket.terminate();
                return;
              }
              if (!ok) {
                const code = (error as { code?: string } | null)?.code || "TLS_HANDSHAKE_FAILED";
                const closed = code === "ECONNRESET" || code === "EPIPE";
                fail(new HttpsPostError(code, closed ? "connection closed during the TLS handshake" : `TLS certificate not accepted (${code})`, false, false));
                return;
              }
              if (pool.closing) {
                fail(new HttpsPostError("ECONNRESET", "the pool is closed", false, false));
                return;
              }
              done = true;
              clearTimeout(timer);
              connection.ready = true;
              resolve(connection);
            },
            data(_socket, bytes) {
              pool.received(connection, bytes);
            },
            drain(socket) {
              const rest = connection.unwritten;
              if (!rest) return;
              const written = socket.write(rest);
              connection.unwritten = written < rest.length ? rest.subarray(Math.max(0, written)) : null;
            },
            close() {
              settled();
              connection.closed = true;
              pool.forget(connection);
              if (!connection.ready) fail(new HttpsPostError("ECONNRESET", "connection closed during the TLS handshake", false, false));
              else pool.ended(connection);
            },
            error(_socket, error) {
              if (!connection.ready) connectFailed(error);
            },
            connectError(_socket, error) {
              settled();
              connectFailed(error);
            },
          },
        }).catch((error: unknown) => {
          settled();
          connectFailed(error);
        });
      } catch (error) {
        // Bun refuses some arguments at once (a port out of range).
        settled();
        connectFailed(error);
      }
    });
  }

  /** Writes one request on a ready connection and resolves with the reply's status. */
  private exchange(connection: Connection, head: Buffer, deadline: number): Promise<number> {
    return new Promise<number>((resolve, reject) => {
      const timer = setTimeout(() => {
        connection.exchange = null;
        this.destroy(connection);
        reject(new HttpsPostError("ETIMEDOUT", "timed out waiting for the reply"));
      }, Math.max(0, deadline - Date.now()));
      connection.exchange = { resolve, reject, timer, answered: false, settled: false };
      connection.phase = "head";
      connection.buffer = null;
      connection.unwritten = null;
      connection.headBytes = 0;
      connection.afterHead = 0;
      connection.keepAlive = true;
      const socket = connection.socket!;
      const written = socket.write(head);
      if (written < head.length) connection.unwritten = head.subarray(Math.max(0, written));
    });
  }

  /** The connection closed: ends the reply being read, if any. */
  private ended(connection: Connection): void {
    const exchange = connection.exchange;
    if (!exchange) return;
    connection.exchange = null;
    clearTimeout(exchange.timer);
    if (exchange.settled) return;
    exchange.reject(new HttpsPostError("ECONNRESET", exchange.answered ? "connection closed in the middle of the reply" : "connection closed before the reply", !exchange.answered));
  }

  /** Gives the status to the caller (once); the body may still be drained. */
  private settle(connection: Connection, status: number): void {
    const exchange = connection.exchange!;
    if (exchange.settled) return;
    exchange.settled = true;
    exchange.resolve(status);
  }

  /** The reply was read whole: the connection goes back to the pool. */
  private finish(connection: Connection): void {
    const exchange = connection.exchange;
    connection.exchange = null;
    if (exchange) clearTimeout(exchange.timer);
    if (connection.buffer?.length || connection.unwritten) {
      // Bytes after the reply (nothing was asked for), or a reply that came before the whole request
      // was written (the next request would land inside this one's body): not reusable.
      this.destroy(connection);
      return;
    }
    this.park(connection);
  }

  /** Stops reading a reply whose status was given (a body too long to drain): the connection closes. */
  private abandon(connection: Connection): void {
    const exchange = connection.exchange;
    connection.exchange = null;
    if (exchange) clearTimeout(exchange.timer);
    this.destroy(connection);
  }

  private bad(connection: Connection, why: string): void {
    const exchange = connection.exchange;
    connection.exchange = null;
    if (exchange) {
      clearTimeout(exchange.timer);
      if (!exchange.settled) exchange.reject(new HttpsPostError("EBADREPLY", why));
    }
    this.destroy(connection);
  }

  /** Parses what arrived. */
  private received(connection: Connection, bytes: Buffer): void {
    const exchange = connection.exchange;
    if (!exchange) {
      // Nothing was asked (an idle connection spoke): it cannot be reused.
      this.destroy(connection);
      return;
    }
    exchange.answered = true;
    if (exchange.settled) connection.afterHead += bytes.length;
    const buffer = connection.buffer?.length ? Buffer.concat([connection.buffer, bytes]) : bytes;
    let at = 0;
    while (connection.exchange) {
      if (connection.phase === "head") {
        const end = buffer.indexOf(CRLFCRLF, at);
        if (end < 0) {
          if (connection.headBytes + buffer.length - at > this.maxHeadBytes) return this.bad(connection, "reply head too large");
          if (buffer.indexOf("\n\n", at, "latin1") >= 0) return this.bad(connection, "reply head lines do not end with CRLF");
          break;
        }
        // Every head counts (a server may send 1xx heads without end).
        if ((connection.headBytes += end + 4 - at) > this.maxHeadBytes) return this.bad(connection, "reply head too large");
        const head = buffer.toString("latin1", at, end);
        at = end + 4;
        const problem = this.readHead(connection, head);
        if (problem) return this.bad(connection, problem);
        if (exchange.settled) connection.afterHead = buffer.length - at;
        continue;
      }
      if (connection.phase === "length" || connection.phase === "chunk-data") {
        const take = Math.min(connection.left, buffer.length - at);
        at += take;
        connection.left -= take;
        if (connection.left > 0) break;
        if (connection.phase === "length") {
          connection.buffer = buffer.subarray(at);
          return this.finish(connection);
        }
        connection.phase = "chunk-crlf";
        continue;
      }
      if (connection.phase === "chunk-crlf") {
        if (buffer.length - at < 2) break;
        if (buffer[at] !== 13 || buffer[at + 1] !== 10) return this.bad(connection, "bad chunked body");
        at += 2;
        connection.phase = "chunk-size";
        continue;
      }
      if (connection.phase === "chunk-size") {
        const end = buffer.indexOf("\r\n", at, "latin1");
        if (end < 0) {
          if (buffer.length - at > 1024) return this.bad(connection, "bad chunked body");
          break;
        }
        const size = /^([0-9a-fA-F]{1,8})[ \t]*(?:;.*)?$/.exec(buffer.toString("latin1", at, end));
        if (!size) return this.bad(connection, "bad chunked body");
        at = end + 2;
        connection.left = parseInt(size[1]!, 16);
        connection.phase = connection.left === 0 ? "trailers" : "chunk-data";
        continue;
      }
      if (connection.phase === "trailers") {
        const end = buffer.indexOf("\r\n", at, "latin1");
        if (end < 0) {
          if (buffer.length - at > this.maxHeadBytes) return this.bad(connection, "reply trailers too large");
          break;
        }
        const empty = end === at;
        at = end + 2;
        if (empty) {
          connection.buffer = buffer.subarray(at);
          return this.finish(connection);
        }
        continue;
      }
      // "close": the body runs to the end of the connection.
      at = buffer.length;
      break;
    }
    if (!connection.exchange) return;
    // Body, chunk framing and trailers together: more than we read to keep a connection.
    if (connection.afterHead > this.maxDrainBytes) return this.abandon(connection);
    connection.buffer = at < buffer.length ? Buffer.from(buffer.subarray(at)) : null;
  }

  /** Reads a reply head; returns what is wrong with it, or null. */
  private readHead(connection: Connection, head: string): string | null {
    const lines = head.split("\r\n");
    const status = STATUS_LINE.exec(lines[0]!);
    if (!status) return "not an HTTP/1.x reply";
    const code = Number(status[2]);
    if (code < 100) return "not an HTTP status";
    if (code < 200) {
      // Informational (100 Continue, 103 Early Hints): the final reply follows; 101 would switch protocols.
      return code === 101 ? "unexpected protocol switch" : null;
    }
    let length: number | null = null;
    let codings: string[] | null = null;
    let keepAlive = status[1] === "1";
    let keepAliveSeconds: number | null = null;
    for (let i = 1; i < lines.length; i++) {
      const line = lines[i]!;
      const colon = line.indexOf(":");
      if (colon <= 0) return "bad reply header";
      // No whitespace before the colon (RFC 9112 5.1: a reply with it is refused, not guessed at).
      if (!TOKEN.test(line.slice(0, colon))) return "bad reply header";
      const name = line.slice(0, colon).toLowerCase();
      const value = line.slice(colon + 1).trim();
      if (name === "content-length") {
        if (!/^\d{1,15}$/.test(value) || (length !== null && length !== Number(value))) return "bad Content-Length";
        length = Number(value);
      } else if (name === "transfer-encoding") {
        codings = [...(codings ?? []), ...value.toLowerCase().split(",").map((v) => v.trim()).filter(Boolean)];
      } else if (name === "connection") {
        const tokens = value.toLowerCase().split(",").map((v) => v.trim());
        if (tokens.includes("close")) keepAlive = false;
        else if (tokens.includes("keep-alive")) keepAlive = true;
      } else if (name === "keep-alive") {
        const timeout = /(?:^|,)\s*timeout=(\d+)/i.exec(value);
        if (timeout) keepAliveSeconds = Number(timeout[1]);
      }
    }
    // RFC 9112 6.3: chunked must be the last coding, else the body runs to the close; with both
    // Transfer-Encoding and Content-Length the former wins and the connection is not reused.
    const chunked = codings !== null && codings.at(-1) === "chunked";
    if (codings !== null && (!chunked || length !== null)) keepAlive = false;
    if (codings !== null) length = null;
    connection.keepAlive = keepAlive;
    if (keepAliveSeconds !== null) connection.reuseUntil = Date.now() + Math.max(0, keepAliveSeconds - 1) * 1000;
    this.settle(connection, code);
    if (code === 204 || code === 304) {
      connection.phase = "length";
      connection.left = 0;
    } else if (chunked) {
      connection.phase = "chunk-size";
    } else if (length !== null) {
      connection.phase = "length";
      connection.left = length;
      if (length > this.maxDrainBytes) this.abandon(connection);
    } else {
      connection.phase = "close";
      connection.keepAlive = false;
    }
    return null;
  }
}

/** The request's bytes: request line, Host, the caller's headers, Content-Length, body. */
function requestHead(request: HttpsPost): Buffer {
  const lines = request.headers;
  if (!TARGET.test(request.path) || !TARGET.test(request.hostHeader) || !HEADER_LINES.test(lines)) {
    throw new HttpsPostError("EBADREQUEST", "a request line or header holds a character HTTP does not allow", false, false);
  }
  const bodyBytes = Buffer.byteLength(request.body, "utf8");
  const head = `POST ${request.path} HTTP/1.1\r\nhost: ${request.hostHeader}\r\n${lines}content-length: ${bodyBytes}\r\n\r\n`;
  // One buffer, written in place: the head is visible ASCII (checked above), one byte a character.
  const bytes = Buffer.allocUnsafe(head.length + bodyBytes);
  bytes.write(head, 0, "latin1");
  bytes.write(request.body, head.length, "utf8");
  return bytes;
}
