/**
 * A SIP phone on a connection for the SIP tests, over TLS (sipp is built without TLS) or a WebSocket
 * (RFC 7118, as browser softphones): it registers with its digest on its one connection and answers
 * calls arriving on it (180, 200 with SDP, then the ACK and the BYE) and places calls (INVITE, its 407
 * with the digest, the ACK and the BYE along the route set), with SDP of its own or a browser's. Its
 * Contact cannot be reached
 * directly (TLS: a port where nothing listens, like a phone behind NAT; WebSocket: an `.invalid` host,
 * as browsers write it): the edge can reach it only over its connection.
 */
import { connect } from "node:tls";
import { digestAnswer, headers, sipMessage, sipStreamReader } from "./sip-message.ts";

export interface ConnectionPhone {
  /** REGISTER (401, then with the digest): the final status. */
  register(): Promise<number>;
  /**
   * INVITEs `target` (a user or number of the phone's domain) with `sdp`, answering the 407 with the
   * digest: the final status, and for a 2xx the answer's SDP and a hang-up (BYE: its final status).
   */
  call(target: string, sdp: string): Promise<PlacedCall>;
  /**
   * Re-INVITEs the caller of a call this phone answered (`callId`) with `sdp` (a hold, a new offer),
   * along the call's route set, and ACKs a 2xx: the final status and its SDP.
   */
  reinvite(callId: string, sdp: string): Promise<{ status: number; answer: string }>;
  /** Calls answered so far (their Call-IDs), and BYEs taken (answered 200). */
  readonly answered: string[];
  readonly byes: string[];
  close(): void;
}

export interface PlacedCall {
  status: number;
  /** Its SIP Call-ID. */
  callId: string;
  /** The 2xx's SDP. */
  answer: string;
  /** Sends the BYE along the route set: its final status. */
  hangup(): Promise<number>;
}

export interface ConnectionPhoneOptions {
  /** tls: SIP over TLS; ws: SIP over a WebSocket (subprotocol sip). */
  transport: "tls" | "ws";
  /** The edge's TLS or TCP (WebSocket) socket. */
  port: number;
  /** TLS: PEM of the CA (or self-signed certificate) the edge's certificate is checked against, for "localhost". */
  ca?: string;
  user: string;
  domain: string;
  password: string;
  /** TLS: the port the Contact names (where nothing should listen). */
  contactPort?: number;
  /** WebSocket: the Origin header the handshake sends (a browser page's origin). */
  origin?: string;
  /**
   * The SDP answering an INVITE's offer (a browser's); `reinvite`: an offer within the call (a
   * re-INVITE). Default: a fixed PCMU answer.
   */
  answerOffer?: (offer: string, reinvite: boolean) => Promise<string>;
}

/** A connection carrying SIP messages: each sent whole, each received whole. */
interface Carrier {
  send(message: Buffer): void;
  onMessage(handler: (message: string) => void): void;
  /** How the phone names itself in Via. */
  sentBy: string;
  close(): void;
}

async function tlsCarrier(port: number, ca: string | undefined): Promise<Carrier> {
  const socket = await new Promise<ReturnType<typeof connect>>((resolve, reject) => {
    const s = connect({ host: "127.0.0.1", port, servername: "localhost", ca }, () => resolve(s));
    s.once("error", reject);
  });
  return {
    send: (message) => void socket.write(message),
    onMessage: (handler) => void socket.on("data", sipStreamReader(handler)),
    sentBy: `127.0.0.1:${socket.localPort}`,
    close: () => socket.destroy(),
  };
}

/** A WebSocket to the edge (subprotocol sip), sending `origin` as a browser would. */
export async function wsCarrier(port: number, origin?: string): Promise<Carrier> {
  // Bun's WebSocket takes headers beside the protocols (browsers set Origin themselves).
  const ws = new WebSocket(`ws://127.0.0.1:${port}`, { protocols: ["sip"], ...(origin ? { headers: { Origin: origin } } : {}) } as unknown as string[]);
  await new Promise<void>((resolve, reject) => {
    ws.onopen = () => resolve();
    ws.onerror = () => reject(new Error("WebSocket to the edge failed"));
  });
  if (ws.protocol !== "sip") throw new Error(`the edge answered subprotocol ${JSON.stringify(ws.protocol)}`);
  return {
    send: (message) => ws.send(message.toString()),
    onMessage: (handler) => {
      ws.onmessage = (event) => handler(typeof event.data === "string" ? event.data : Buffer.from(event.data as ArrayBuffer).toString());
    },
    sentBy: `${crypto.randomUUID().slice(0, 8)}.invalid`,
    close: () => ws.close(),
  };
}

export async function startConnectionPhone(options: ConnectionPhoneOptions): Promise<ConnectionPhone> {
  const { user, domain, password, transport } = options;
  const carrier = transport === "tls" ? await tlsCarrier(options.port, options.ca) : await wsCarrier(options.port, options.origin);
  const contact = transport === "tls" ? `<sip:${user}@127.0.0.1:${options.contactPort};transport=tls>` : `<sip:${user}@${carrier.sentBy};transport=ws>`;
  const via = () => `SIP/2.0/${transport.toUpperCase()} ${carrier.sentBy};branch=z9hG4bK${crypto.randomUUID().slice(0, 12)};rport`;
  const waiting = new Map<string, (reply: string) => void>();
  const answered: string[] = [];
  const byes: string[] = [];
  /** The INVITE of each call answered, for requests of ours within it. */
  const invites = new Map<string, string>();

  /** A reply to `request`: its Vias, Record-Routes, From, To (with our tag), Call-ID and CSeq. */
  const reply = (request: string, status: string, extra: string[] = [], body = "") =>
    carrier.send(
      sipMessage(
        [
          `SIP/2.0 ${status}`,
          ...headers(request, "Via").map((v) => `Via: ${v}`),
          ...headers(request, "Record-Route").map((r) => `Record-Route: ${r}`),
          `From: ${headers(request, "From")[0]}`,
          `To: ${headers(request, "To")[0]}${/;tag=/.test(headers(request, "To")[0]!) ? "" : ";tag=tlsphone"}`,
          `Call-ID: ${headers(request, "Call-ID")[0]}`,
          `CSeq: ${headers(request, "CSeq")[0]}`,
          ...extra,
          `Content-Length: ${Buffer.byteLength(body)}`,
        ],
        body,
      ),
    );

  carrier.onMessage((message) => {
    if (message.startsWith("SIP/2.0 ")) {
      if (/^SIP\/2\.0 1\d\d/.test(message)) return;
      const key = `${headers(message, "Call-ID")[0]} ${headers(message, "CSeq")[0]}`;
      waiting.get(key)?.(message);
      waiting.delete(key);
      return;
    }
    const method = message.slice(0, message.indexOf(" "));
    const callId = headers(message, "Call-ID")[0]!;
    if (method === "INVITE") {
      const reinvite = /;tag=/.test(headers(message, "To")[0] ?? "");
      if (!reinvite) reply(message, "180 Ringing", [`Contact: ${contact}`]);
      const offer = message.slice(message.indexOf("\r\n\r\n") + 4);
      const fixed = ["v=0", "o=phone 1 1 IN IP4 127.0.0.1", "s=-", "c=IN IP4 127.0.0.1", "t=0 0", "m=audio 40000 RTP/AVP 0", "a=rtpmap:0 PCMU/8000", ""].join("\r\n");
      void (options.answerOffer ? options.answerOffer(offer, reinvite) : Promise.resolve(fixed)).then(
        (sdp) => {
          reply(message, "200 OK", [`Contact: ${contact}`, "Content-Type: application/sdp"], sdp);
          if (!reinvite) {
            answered.push(callId);
            invites.set(callId, message);
          }
        },
        () => reply(message, "488 Not Acceptable Here"),
      );
    } else if (method === "BYE") {
      reply(message, "200 OK");
      byes.push(callId);
    }
    // ACK: nothing to answer.
  });

  /** Sends a request and waits for its final reply. */
  function request(lines: string[], callId: string, cseq: string, body = ""): Promise<string> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no reply to ${cseq}`)), 10_000);
      waiting.set(`${callId} ${cseq}`, (message) => {
        clearTimeout(timer);
        resolve(message);
      });
      carrier.send(sipMessage(lines, body));
    });
  }

  /** An in-dialog request along the route set of a call we placed. */
  function inDialog(method: string, d: { target: string; routes: string[]; from: string; to: string; callId: string; cseq: number }): string[] {
    return [
      `${method} ${d.target} SIP/2.0`,
      `Via: ${via()}`,
      ...d.routes.map((r) => `Route: ${r}`),
      "Max-Forwards: 70",
      `From: ${d.from}`,
      `To: ${d.to}`,
      `Call-ID: ${d.callId}`,
      `CSeq: ${d.cseq} ${method}`,
      "Content-Length: 0",
    ];
  }

  return {
    async call(target, sdp) {
      const callId = `${crypto.randomUUID()}@${transport}`;
      const uri = `sip:${target}@${domain}`;
      const from = `<sip:${user}@${domain}>;tag=${crypto.randomUUID().slice(0, 8)}`;
      const invite = (cseq: number, branchVia: string, auth?: string) => [
        `INVITE ${uri} SIP/2.0`,
        `Via: ${branchVia}`,
        "Max-Forwards: 70",
        `From: ${from}`,
        `To: <${uri}>`,
        `Call-ID: ${callId}`,
        `CSeq: ${cseq} INVITE`,
        `Contact: ${contact}`,
        ...(auth ? [`Proxy-Authorization: ${auth}`] : []),
        "Content-Type: application/sdp",
        `Content-Length: ${Buffer.byteLength(sdp)}`,
      ];
      const firstVia = via();
      let final = await request(invite(1, firstVia), callId, "1 INVITE", sdp);
      let cseq = 1;
      if (final.startsWith("SIP/2.0 407")) {
        // The ACK of a negative reply: hop by hop, the INVITE's branch and the reply's To.
        carrier.send(sipMessage([`ACK ${uri} SIP/2.0`, `Via: ${firstVia}`, "Max-Forwards: 70", `From: ${from}`, `To: ${headers(final, "To")[0]}`, `Call-ID: ${callId}`, "CSeq: 1 ACK", "Content-Length: 0"]));
        const auth = digestAnswer(headers(final, "Proxy-Authenticate")[0]!, "INVITE", uri, user, domain, password);
        cseq = 2;
        final = await request(invite(2, via(), auth), callId, "2 INVITE", sdp);
      }
      const status = Number(final.slice(8, 11));
      if (status < 200 || status >= 300) return { status, callId, answer: "", hangup: async () => 0 };
      // The route set: the Record-Routes in reverse; the target: the callee's Contact.
      const routes = headers(final, "Record-Route").flatMap((h) => h.split(/,\s*(?=<)/)).reverse();
      const dialog = { target: /<([^>]+)>/.exec(headers(final, "Contact")[0]!)![1]!, routes, from, to: headers(final, "To")[0]!, callId, cseq };
      carrier.send(sipMessage(inDialog("ACK", dialog)));
      return {
        status,
        callId,
        answer: final.slice(final.indexOf("\r\n\r\n") + 4),
        async hangup() {
          const bye = inDialog("BYE", { ...dialog, cseq: cseq + 1 });
          return Number((await request(bye, callId, `${cseq + 1} BYE`)).slice(8, 11));
        },
      };
    },
    async reinvite(callId, sdp) {
      const invite = invites.get(callId);
      if (!invite) throw new Error(`no call ${callId} answered here`);
      // As its callee: the route set is the INVITE's Record-Routes in order, the target its caller's
      // Contact, From our To (with the tag we answered with), To its From.
      const d = {
        target: /<([^>]+)>/.exec(headers(invite, "Contact")[0]!)![1]!,
        routes: headers(invite, "Record-Route").flatMap((h) => h.split(/,\s*(?=<)/)),
        from: `${headers(invite, "To")[0]}${/;tag=/.test(headers(invite, "To")[0]!) ? "" : ";tag=tlsphone"}`,
        to: headers(invite, "From")[0]!,
        callId,
        cseq: 101,
      };
      const lines = inDialog("INVITE", d).filter((l) => !l.startsWith("Content-Length"));
      lines.push(`Contact: ${contact}`, "Content-Type: application/sdp", `Content-Length: ${Buffer.byteLength(sdp)}`);
      const final = await request(lines, callId, "101 INVITE", sdp);
      const status = Number(final.slice(8, 11));
      if (status >= 200 && status < 300) carrier.send(sipMessage(inDialog("ACK", d)));
      return { status, answer: final.slice(final.indexOf("\r\n\r\n") + 4) };
    },
    async register() {
      const callId = `${crypto.randomUUID()}@${transport}`;
      const lines = (cseq: number, auth?: string) => [
        `REGISTER sip:${domain} SIP/2.0`,
        `Via: ${via()}`,
        "Max-Forwards: 70",
        `From: <sip:${user}@${domain}>;tag=tlsreg`,
        `To: <sip:${user}@${domain}>`,
        `Call-ID: ${callId}`,
        `CSeq: ${cseq} REGISTER`,
        `Contact: ${contact}`,
        "Expires: 300",
        ...(auth ? [`Authorization: ${auth}`] : []),
        "Content-Length: 0",
      ];
      const challenge = await request(lines(1), callId, "1 REGISTER");
      if (!challenge.startsWith("SIP/2.0 401")) return Number(challenge.slice(8, 11));
      const auth = digestAnswer(headers(challenge, "WWW-Authenticate")[0]!, "REGISTER", `sip:${domain}`, user, domain, password);
      return Number((await request(lines(2, auth), callId, "2 REGISTER")).slice(8, 11));
    },
    answered,
    byes,
    close: () => carrier.close(),
  };
}
