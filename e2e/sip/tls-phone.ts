/**
 * A SIP phone over TLS for the SIP tests (sipp is built without TLS): it registers with its digest on
 * one TLS connection and answers calls arriving on that connection (180, 200 with SDP, then the ACK and
 * the BYE). Its Contact names a port where nothing listens, like a phone behind NAT: the edge can reach
 * it only over its connection.
 */
import { connect, type TLSSocket } from "node:tls";
import { digestAnswer, headers, sipMessage, sipStreamReader } from "./sip-message.ts";

export interface TlsPhone {
  /** REGISTER (401, then with the digest): the final status. */
  register(): Promise<number>;
  /** Calls answered so far (their Call-IDs), and BYEs taken (answered 200). */
  readonly answered: string[];
  readonly byes: string[];
  close(): void;
}

export interface TlsPhoneOptions {
  /** The edge's TLS socket. */
  port: number;
  /** PEM of the CA (or self-signed certificate) the edge's certificate is checked against, for "localhost". */
  ca: string;
  user: string;
  domain: string;
  password: string;
  /** The port the Contact names (where nothing should listen). */
  contactPort: number;
}

export async function startTlsPhone(options: TlsPhoneOptions): Promise<TlsPhone> {
  const { user, domain, password } = options;
  const socket: TLSSocket = await new Promise((resolve, reject) => {
    const s = connect({ host: "127.0.0.1", port: options.port, servername: "localhost", ca: options.ca }, () => resolve(s));
    s.once("error", reject);
  });
  const contact = `<sip:${user}@127.0.0.1:${options.contactPort};transport=tls>`;
  const via = () => `SIP/2.0/TLS 127.0.0.1:${socket.localPort};branch=z9hG4bK${crypto.randomUUID().slice(0, 12)};rport`;
  const waiting = new Map<string, (reply: string) => void>();
  const answered: string[] = [];
  const byes: string[] = [];

  /** A reply to `request`: its Vias, Record-Routes, From, To (with our tag), Call-ID and CSeq. */
  const reply = (request: string, status: string, extra: string[] = [], body = "") =>
    socket.write(
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

  socket.on(
    "data",
    sipStreamReader((message) => {
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
        reply(message, "180 Ringing", [`Contact: ${contact}`]);
        const sdp = ["v=0", "o=tls 1 1 IN IP4 127.0.0.1", "s=-", "c=IN IP4 127.0.0.1", "t=0 0", "m=audio 40000 RTP/AVP 0", "a=rtpmap:0 PCMU/8000", ""].join("\r\n");
        reply(message, "200 OK", [`Contact: ${contact}`, "Content-Type: application/sdp"], sdp);
        answered.push(callId);
      } else if (method === "BYE") {
        reply(message, "200 OK");
        byes.push(callId);
      }
      // ACK: nothing to answer.
    }),
  );

  /** Sends a request and waits for its final reply. */
  function request(lines: string[], callId: string, cseq: string): Promise<string> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no reply to ${cseq}`)), 5000);
      waiting.set(`${callId} ${cseq}`, (message) => {
        clearTimeout(timer);
        resolve(message);
      });
      socket.write(sipMessage(lines));
    });
  }

  return {
    async register() {
      const callId = `${crypto.randomUUID()}@tls`;
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
    close: () => socket.destroy(),
  };
}
