/**
 * The SIP path for real: Parley (public + control hosts) ← Kamailio (deploy/kamailio/kamailio.cfg) ←
 * sipp. Run with `bun run test:sip` (root: Kamailio runs in the foreground). Stores: PGlite by
 * default; PostgreSQL + Redis when SIP_E2E_DATABASE_URL and SIP_E2E_REDIS_URL are set.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { chromium, type Page } from "playwright-core";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ADMIN_TOKEN, api, freePorts, freeUdpPort, nextMediaPort, HAVE_RTPENGINE, HAVE_SIP_TOOLS, IN_CI, runSipp, SCENARIOS, sipOptionsPing, startKamailio, startParley, startRtpengine, startSipp, type Kamailio, type Parley, type Proc } from "./harness.ts";
import { addSipUser, applyTenantConfig, createSipTenant, PASSWORD, type SipTenant } from "./tenant.ts";
import { countryDatabase } from "./mmdb.ts";
import { digestAnswer, headers, sipMessage } from "./sip-message.ts";
import { startConnectionPhone, wsCarrier, type ConnectionPhone } from "./connection-phone.ts";
import { eventually as eventuallyPasses } from "../../test/support/eventually.ts";

const RUN = HAVE_SIP_TOOLS || IN_CI;
const CHROMIUM = "/usr/bin/chromium";
/** The WebRTC test needs rtpengine and Chromium too (CI installs both). */
const RUN_WEBRTC = RUN && ((HAVE_RTPENGINE && existsSync(CHROMIUM)) || IN_CI);

/**
 * A page for the WebRTC test: peers by name, each with the fake microphone's audio, whose SDP the test
 * carries over SIP (offer, accept an answer, answer an offer: ICE gathered first, no trickle), and the
 * audio packets each has received.
 */
const RTC_PAGE = `<!doctype html><title>rtc</title><script>
window.rtc = {
  peers: {},
  async peer(name) {
    const pc = new RTCPeerConnection();
    this.peers[name] = pc;
    const stream = await navigator.mediaDevices.getUserMedia({ audio: true });
    for (const track of stream.getTracks()) pc.addTrack(track, stream);
    return pc;
  },
  gathered(pc) {
    return new Promise((resolve) => {
      if (pc.iceGatheringState === "complete") return resolve();
      pc.addEventListener("icegatheringstatechange", () => pc.iceGatheringState === "complete" && resolve());
      setTimeout(resolve, 5000);
    });
  },
  async offer(name) {
    const pc = await this.peer(name);
    await pc.setLocalDescription(await pc.createOffer());
    await this.gathered(pc);
    return pc.localDescription.sdp;
  },
  async accept(name, sdp) {
    await this.peers[name].setRemoteDescription({ type: "answer", sdp });
  },
  async reoffer(name) {
    const pc = this.peers[name];
    await pc.setLocalDescription(await pc.createOffer());
    return pc.localDescription.sdp;
  },
  async reanswer(name, sdp) {
    const pc = this.peers[name];
    await pc.setRemoteDescription({ type: "offer", sdp });
    await pc.setLocalDescription(await pc.createAnswer());
    return pc.localDescription.sdp;
  },
  async answer(name, sdp) {
    const pc = await this.peer(name);
    await pc.setRemoteDescription({ type: "offer", sdp });
    await pc.setLocalDescription(await pc.createAnswer());
    await this.gathered(pc);
    return pc.localDescription.sdp;
  },
  async received(name) {
    let n = 0;
    (await this.peers[name].getStats()).forEach((s) => { if (s.type === "inbound-rtp" && s.kind === "audio") n += s.packetsReceived; });
    return n;
  },
};
</script>`;
const stores = process.env.SIP_E2E_DATABASE_URL ? { databaseUrl: process.env.SIP_E2E_DATABASE_URL, redisUrl: process.env.SIP_E2E_REDIS_URL } : {};
const storeKind = stores.databaseUrl ? "postgres+redis" : "pglite+memory";

/** The IP-authenticated trunk's source address (its ACL); another loopback address is a stranger. */
const TRUNK_IP = "127.0.0.3";
const STRANGER_IP = "127.0.0.4";

let parley: Parley;
let kamailio: Kamailio;
let tenant: SipTenant;
let deviceUas: Proc;
let carrierUas: Proc;
let busyUas: Proc;
let engineUas: Proc;
let devicePort: number;
let carrierPort: number;
/** A device that answers every call 486 Busy Here. */
let busyPort: number;
/** The sipp standing in for a media engine (MEDIA_ENGINES): it takes failovers, and checks their X-Dest. */
let enginePort: number;

beforeAll(async () => {
  if (!RUN) return;
  [devicePort, carrierPort, busyPort, enginePort] = freePorts(4) as [number, number, number, number];
  parley = await startParley(stores, { MEDIA_ENGINES: `sip:127.0.0.1:${enginePort}` });
  tenant = await createSipTenant(parley, { carrierPort, maxOut: null, users: [{ username: "1001" }, { username: "1002" }, { username: "1003", max: 1 }], inboundAcl: [TRUNK_IP] });
  kamailio = await startKamailio({
    controlPort: parley.controlPort,
    node: "edge-e2e",
    // Report bans every 2 s; ban after 3 failed digests.
    // Ticks of the trunk work every second, registrations managed every second.
    defines: ['REPORT_TIMER="name=secreport;mode=1;interval=2"', "AUTH_FAILS_TO_BAN=3", "TRUNK_TICK=1", 'TRUNK_TIMER="name=trunks;mode=1;interval=1"', "REG_TIMER=1"],
  });
  deviceUas = startSipp("uas.xml", ["-p", String(devicePort), "-mp", String(nextMediaPort())]);
  carrierUas = startSipp("uas.xml", ["-p", String(carrierPort), "-mp", String(nextMediaPort())]);
  busyUas = startSipp("uas-busy.xml", ["-p", String(busyPort)]);
  engineUas = startSipp("media-engine.xml", ["-p", String(enginePort), "-mp", String(nextMediaPort())]);
  await Bun.sleep(300);
}, 180_000);

afterAll(async () => {
  // SIP_E2E_LOG=<file>: keep Kamailio's log for diagnosis.
  if (process.env.SIP_E2E_LOG && kamailio) await Bun.write(process.env.SIP_E2E_LOG, kamailio.log());
  for (const p of [deviceUas, carrierUas, busyUas, engineUas, kamailio, parley]) await p?.stop();
});

const edge = () => `127.0.0.1:${kamailio.port}`;
const escapeRe = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");

function register(user: string, contactPort: number, password = PASSWORD) {
  return runSipp("register.xml", edge(), ["-s", user, "-au", user, "-ap", password, "-key", "domain", tenant.domain, "-key", "contact_port", String(contactPort), "-key", "expires", "300", "-m", "1", "-timeout", "15s"]);
}

function invite(from: string, to: string, scenario = "invite.xml", extra: string[] = [], via = edge(), of = tenant) {
  return runSipp(scenario, via, ["-s", to, "-au", from, "-ap", PASSWORD, "-key", "from_user", from, "-key", "domain", of.domain, ...(extra.includes("-d") ? [] : ["-d", "500"]), "-m", "1", "-timeout", "20s", ...extra]);
}

async function calls(): Promise<any[]> {
  const r = await api("GET", `${parley.publicUrl}/v1/calls?limit=100`, undefined, { "x-api-key": tenant.key });
  expect(r.status).toBe(200);
  return r.body.data;
}

async function cac(): Promise<any> {
  const r = await api("GET", `${parley.controlUrl}/cac?accountId=${tenant.accountId}`);
  expect(r.status).toBe(200);
  return r.body;
}

/** Waits until `check` passes (events reach Parley asynchronously). */
const eventually = <T>(check: () => Promise<T>, timeoutMs = 5000) => eventuallyPasses(check, timeoutMs, 200);

/**
 * Runs `during` with Parley frozen (SIGSTOP): its control calls hang as on a stalled host. `thaw` lets
 * it go on before `during` ends; it goes on afterwards in any case.
 */
async function whileParleyFrozen<T>(during: (thaw: () => void) => Promise<T>): Promise<T> {
  const thaw = () => process.kill(parley.proc.pid, "SIGCONT");
  process.kill(parley.proc.pid, "SIGSTOP");
  try {
    return await during(thaw);
  } finally {
    thaw();
  }
}

/** `count` REGISTERs of 1002 (its device's port as the Contact) through the edge on `port`, by sipp. */
const register1002 = (port: number, count: number) =>
  runSipp("register.xml", `127.0.0.1:${port}`, ["-s", "1002", "-au", "1002", "-ap", PASSWORD, "-key", "domain", tenant.domain, "-key", "contact_port", String(devicePort), "-key", "expires", "300", "-m", String(count), "-r", "50", "-l", String(count), "-timeout", "10s"]);

/** Waits until Parley's presence shows the user of `extension` registered. */
async function isRegistered(extension: string): Promise<void> {
  await eventually(async () => {
    const roster = await api("GET", `${parley.controlUrl}/presence/users?accountId=${tenant.accountId}`);
    expect(roster.body.data.find((u: any) => u.extension === extension)).toMatchObject({ registered: 1 });
  }, 10_000);
}

/**
 * A phone on a connection registers through `edge`, then 1001 calls it over UDP (`udp`: the edge's UDP
 * socket): it answers, gets the caller's BYE, and the call's record completes with it as the agent.
 */
async function registersAndTakesACall(phone: ConnectionPhone, extension: string, userId: string, udp: string, edge: Kamailio): Promise<void> {
  expect(await phone.register()).toBe(200);
  await isRegistered(extension);
  const call = await invite("1001", extension, "invite.xml", [], udp);
  expect(call.code, call.stderr + edge.log().slice(-3000)).toBe(0);
  expect(call.statuses).toContain(200);
  const callId = call.callIds.at(-1)!;
  expect(phone.answered).toEqual([callId]);
  await eventually(async () => expect(phone.byes).toEqual([callId]));
  await eventually(async () => expect((await calls()).find((x) => x.sip_call_id === callId)).toMatchObject({ status: "completed", answered: 1, agent_id: userId }));
}

describe.skipIf(!RUN)(`SIP through Kamailio [${storeKind}]`, () => {
  test("REGISTER: 401 challenge, then 200 with digest; Parley's presence shows the binding", async () => {
    const r = await register("1002", devicePort);
    expect(r.code, r.stderr).toBe(0);
    expect(r.statuses).toEqual([401, 200]);
    const roster = await api("GET", `${parley.controlUrl}/presence/users?accountId=${tenant.accountId}`);
    expect(roster.body.data.find((u: any) => u.extension === "1002")).toMatchObject({ registered: 1, contacts: 1 });
    expect(kamailio.log()).toMatch(/ctl \/presence\/event register rc=200/);
  });

  test("REGISTER the way many desk phones write it (a display name, the lifetime as the Contact's expires) keeps its lifetime; too brief a one gets 423 with Min-Expires; one too long for an int is MAX_EXPIRES", async () => {
    const u = await addSipUser(parley, tenant, "1901");
    const args = (expires: number) => ["-s", "1901", "-au", "1901", "-ap", PASSWORD, "-key", "domain", tenant.domain, "-key", "contact_port", String(devicePort), "-key", "expires", String(expires), "-m", "1", "-timeout", "15s"];
    const named = await runSipp("register-named.xml", edge(), args(300));
    expect(named.code, named.stderr + named.messages.slice(-1500)).toBe(0);
    expect(named.statuses).toEqual([401, 200]);
    expect(kamailio.log()).toMatch(new RegExp(`ctl /presence/event register rc=200 us=\\d+ dev=${u.deviceId} expires=300 `));
    await isRegistered("1901");
    // A lifetime past what an int holds is long, not zero: MAX_EXPIRES (3600), still registered (it
    // wrapped, and the binding was removed).
    const huge = await runSipp("register-named.xml", edge(), args(4294967295));
    expect(huge.statuses, huge.stderr).toEqual([401, 200]);
    expect(huge.messages).toMatch(/^Contact: [^\r\n]*;expires=3600\r$/m);
    await isRegistered("1901");
    const brief = await runSipp("register-brief.xml", edge(), args(30));
    expect(brief.code, brief.stderr + brief.messages.slice(-1500)).toBe(0);
    expect(brief.messages).toContain("Min-Expires: 60\r\n");
  });

  test("a REGISTER with several Contacts (in one header and in two, a display name with a comma) binds each with its own lifetime, and the 200 lists them all", async () => {
    const { userId } = await addSipUser(parley, tenant, "1490");
    const dir = mkdtempSync(join(tmpdir(), "sipp-multi-"));
    const scenario = join(dir, "register-multi.xml");
    const contact = "Contact: <sip:[service]@[local_ip]:[contact_port];transport=[transport]>";
    const several =
      'Contact: "Desk, Front" <sip:[service]@[local_ip]:[contact_port];transport=[transport]>;expires=600, <sip:[service]-2@[local_ip]:[contact_port];transport=[transport]>\n' +
      "      Contact: <sip:[service]-3@[local_ip]:[contact_port];transport=[transport]>;expires=120";
    writeFileSync(scenario, readFileSync(join(SCENARIOS, "register.xml"), "utf8").replaceAll(contact, several));
    const reg = await runSipp(scenario, edge(), ["-s", "1490", "-au", "1490", "-ap", PASSWORD, "-key", "domain", tenant.domain, "-key", "contact_port", String(devicePort), "-key", "expires", "300", "-m", "1", "-timeout", "15s"]);
    expect(reg.code, reg.stderr + reg.messages.slice(-2000) + kamailio.log().slice(-2000)).toBe(0);
    const ok = sippMessages(reg.messages).find((m) => /^SIP\/2\.0 200 /m.test(m))!;
    const granted = [...ok.matchAll(/^Contact: <sip:(1490(?:-\d)?)@[^>]+>;expires=(\d+)\r?$/gim)].map((m) => `${m[1]} ${m[2]}`).sort();
    expect(granted).toEqual(["1490 600", "1490-2 300", "1490-3 120"]);
    await eventually(async () => {
      const roster = await api("GET", `${parley.controlUrl}/presence/users?accountId=${tenant.accountId}`);
      expect(roster.body.data.find((u: any) => u.id === userId)).toMatchObject({ registered: 1, contacts: 3 });
    });
  });

  test("a digest with an expired nonce (NONCE_EXPIRE) is challenged again with stale=true, and the phone's answer to the new nonce registers", async () => {
    const short = await startKamailio({ controlPort: parley.controlPort, node: "edge-stale", defines: ["NONCE_EXPIRE=1"] });
    try {
      const r = await runSipp("register-stale.xml", `127.0.0.1:${short.port}`, ["-s", "1002", "-au", "1002", "-ap", PASSWORD, "-key", "domain", tenant.domain, "-key", "contact_port", String(devicePort), "-key", "expires", "300", "-m", "1", "-timeout", "15s"]);
      expect(r.code, r.stderr + r.messages.slice(-2000)).toBe(0);
      expect(r.statuses).toEqual([401, 200, 401, 200]);
    } finally {
      await short.stop();
    }
  });

  test("the static-route variant of the config (bench:sip's baseline, -A STATIC_ROUTE) starts and answers", async () => {
    // Kamailio checks a config's routes only when it starts: a route called outside an #!ifndef block
    // but defined inside one passes `kamailio -c` and fails here.
    const statik = await startKamailio({ controlPort: parley.controlPort, node: "edge-static", defines: ["STATIC_ROUTE"] });
    try {
      expect(statik.log()).not.toMatch(/ERROR: <core>/);
    } finally {
      await statik.stop();
    }
  });

  test("a phone whose digest username carries the domain (1002@domain, ha1b) registers; so does one writing its domain in capitals, challenged in lower case", async () => {
    const withDomain = await runSipp("register.xml", edge(), ["-s", "1002", "-au", `1002@${tenant.domain}`, "-ap", PASSWORD, "-key", "domain", tenant.domain, "-key", "contact_port", String(devicePort), "-key", "expires", "300", "-m", "1", "-timeout", "15s"]);
    expect(withDomain.code, withDomain.stderr + withDomain.messages.slice(-1500)).toBe(0);
    expect(withDomain.statuses).toEqual([401, 200]);
    expect(kamailio.log()).toContain(`ctl /auth rc=200`);
    const capitals = await runSipp("register.xml", edge(), ["-s", "1002", "-au", "1002", "-ap", PASSWORD, "-key", "domain", tenant.domain.toUpperCase(), "-key", "contact_port", String(devicePort), "-key", "expires", "300", "-m", "1", "-timeout", "15s"]);
    expect(capitals.code, capitals.stderr + capitals.messages.slice(-1500)).toBe(0);
    expect(capitals.statuses).toEqual([401, 200]);
    expect(capitals.messages).toContain(`realm="${tenant.domain.toLowerCase()}"`);
  });

  test("a wrong password is refused (403) and never registers", async () => {
    const r = await register("1001", devicePort, "wrong-password");
    expect(r.code).not.toBe(0);
    expect(r.statuses).toContain(403);
    const roster = await api("GET", `${parley.controlUrl}/presence/users?accountId=${tenant.accountId}`);
    expect(roster.body.data.find((u: any) => u.extension === "1001")).toMatchObject({ registered: 0 });
  });

  test("a replayed Authorization header is refused at the edge", async () => {
    const replay = await replayRegister(kamailio.port, tenant.domain, "1001", PASSWORD);
    expect(replay.first).toBe(200);
    expect(replay.replayed).toBe(401);
  });

  test("a User-Agent that is not UTF-8 (cut inside a character) does not stop a REGISTER: it is sent without it", async () => {
    // The edge's JSON encoder refuses a document with one such value; the edge drops the free text.
    const cut = Buffer.concat([Buffer.from("Phone/1.0 caf"), Buffer.from([0xc3])]);
    const r = await replayRegister(kamailio.port, tenant.domain, "1001", PASSWORD, cut);
    expect(r.first).toBe(200);
    expect(r.replayed).toBe(401);
    // This REGISTER's binding reached Parley (the roster below may still show an earlier one).
    await eventually(async () => expect(kamailio.log()).toMatch(new RegExp(`ctl /presence/event register rc=200 [^\n]*call=${escapeRe(r.callId)}`)));
    expect(kamailio.log()).not.toMatch(/is not UTF-8: sent empty|REGISTER from \S+ refused: Contact or Call-ID is not UTF-8/);
    const roster = await api("GET", `${parley.controlUrl}/presence/users?accountId=${tenant.accountId}`);
    expect(roster.body.data.find((u: any) => u.extension === "1001")).toMatchObject({ registered: 1 });
  });

  test("INVITE: 407, then authenticated to a registered device; call completes, BYE; CDR written, CAC back to zero", async () => {
    const before = (await calls()).length;
    // The callee's own console login (an agent's): GET /v1/calls/mine answers the call it is on.
    const email = `agent-1002-${Date.now()}@e2e.test`;
    const login = await api("POST", `${parley.controlUrl}/admin/console-users`, { account_id: tenant.accountId, email, password: PASSWORD, user_id: tenant.users["1002"]!.userId }, { "x-admin-token": ADMIN_TOKEN });
    expect(login.status, JSON.stringify(login.body)).toBe(201);
    const token = (await api("POST", `${parley.consoleUrl}/login`, { email, password: PASSWORD })).body.token as string;
    const mine = () => api("GET", `${parley.publicUrl}/v1/calls/mine`, undefined, { authorization: `Bearer ${token}` });
    expect((await mine()).status).toBe(404);
    const call = invite("1001", "1002", "invite.xml", ["-d", "1500"]);
    // While it lasts, both ends are on the call in the roster (the callee named by the edge's events).
    const status = async (ext: string) =>
      (await api("GET", `${parley.controlUrl}/presence/users?accountId=${tenant.accountId}`)).body.data.find((u: any) => u.extension === ext);
    await eventually(async () => {
      expect(await status("1002")).toMatchObject({ status: "on_call", on_call: 1 });
      expect(await status("1001")).toMatchObject({ on_call: 1 });
      // The call holds its slots meanwhile: the callee's own (internal calls hold the callee's `user` slot).
      expect((await cac()).data.cac).toContainEqual(expect.objectContaining({ level: "user", id: tenant.users["1002"]!.userId, active: 1 }));
      expect((await mine()).body.data).toMatchObject({ status: "answered", agent_id: tenant.users["1002"]!.userId, to: "1002" });
    }, 4000);
    const r = await call;
    expect(r.code, r.stderr).toBe(0);
    // No credentials: 100 Trying, /route asked first (not a trunk, not the carrier) → 407; then the digest.
    expect(r.statuses.slice(0, 3)).toEqual([100, 407, 100]);
    expect(r.statuses).toContain(200);
    const cdrs = await eventually(async () => {
      const list = await calls();
      expect(list.length).toBe(before + 1);
      return list;
    });
    expect(JSON.stringify(cdrs[0])).toContain("1002");
    // The callee answered: the user the call was routed to, not the caller.
    const cdr = await eventually(async () => {
      const c = (await calls())[0];
      expect(c).toMatchObject({ status: "completed", answered: 1 });
      return c;
    });
    expect(cdr.agent_id).toMatch(/^us_/);
    expect(cdr.agent_id).not.toBe(cdr.user_id);
    // The end carries the answer's time (answered_ts), the same the confirmed event gave.
    const trace = await api("GET", `${parley.publicUrl}/v1/calls/${cdr.id}/trace`, undefined, { "x-api-key": tenant.key });
    const steps = trace.body.data.steps as Array<{ step: string; result: string; at: number; data: Record<string, unknown> | null }>;
    const confirmed = steps.find((x) => x.step === "dialog" && x.result.startsWith("confirmed"));
    const end = steps.find((x) => x.step === "dialog" && x.result.startsWith("terminated"));
    expect(end?.data?.answered_ts, JSON.stringify(steps)).toBe(confirmed!.at);
    await eventually(async () => expect((await cac()).data.cac).toEqual([]));
    await eventually(async () => expect(await status("1002")).toMatchObject({ on_call: 0 }));
    const after = await mine();
    expect(after.status).toBe(404);
    // The digest went to /route with the call (no separate /auth for an INVITE).
    expect(kamailio.log()).toMatch(new RegExp(`ctl /route rc=200 us=\\d+ action=proxy to=1002 call=${escapeRe(r.callIds.at(-1)!)}`));
    expect(kamailio.log()).not.toMatch(new RegExp(`ctl /auth .*call=${escapeRe(r.callIds.at(-1)!)}`));
  });

  test("a new call under a Call-ID used before (a higher CSeq) is a call of its own: routed, recorded and billed apart; the edge's events name their record", async () => {
    const callId = `reused-${crypto.randomUUID()}@e2e`;
    const first = await invite("1001", "1002", "invite.xml", ["-cid_str", callId]);
    expect(first.code, first.stderr).toBe(0);
    // Another phone answers the second call: sipp's answering side keeps a finished call's Call-ID
    // for half a minute and ignores a new INVITE with it (a real phone takes it).
    await addSipUser(parley, tenant, "1899");
    const [port] = freePorts(1) as [number];
    const phone = startSipp("uas.xml", ["-p", String(port), "-mp", String(nextMediaPort()), "-m", "1"]);
    await Bun.sleep(200);
    let second: Awaited<ReturnType<typeof invite>>;
    try {
      expect((await register("1899", port)).code).toBe(0);
      second = await invite("1001", "1899", "invite-later-cseq.xml", ["-cid_str", callId, "-d", "1200"]);
    } finally {
      await phone.stop();
    }
    expect(second.code, second.stderr + kamailio.log().split("\n").filter((l) => l.includes(callId)).join("\n")).toBe(0);
    const records = await eventually(async () => {
      const list = (await calls()).filter((c) => c.sip_call_id === callId);
      expect(list).toHaveLength(2);
      for (const c of list) expect(c).toMatchObject({ status: "completed", answered: 1 });
      return list;
    });
    expect(new Set(records.map((c) => c.id)).size).toBe(2);
    // Each ended by its own events: the second held its call longer.
    expect(records.map((c) => c.to).sort()).toEqual(["1002", "1899"]);
    await eventually(async () => expect((await cac()).data.cac).toEqual([]));
  });

  test("a phone behind a NAT on UDP (its Contact a private address) is called at the address it registered from, and the caller's ACK and BYE reach it there too", async () => {
    await addSipUser(parley, tenant, "1460");
    const phonePort = await freeUdpPort();
    const dir = mkdtempSync(join(tmpdir(), "sipp-nat-"));
    // The phone's own view of itself: a private address in every Contact it writes (no STUN).
    const behindNat = (name: string, replace: [string, string]) => {
      const path = join(dir, name);
      writeFileSync(path, readFileSync(join(SCENARIOS, name), "utf8").replaceAll(replace[0], replace[1]));
      return path;
    };
    const registering = behindNat("register.xml", ["@[local_ip]:[contact_port]", "@10.255.0.7:[contact_port]"]);
    const answering = behindNat("uas.xml", ["<sip:[local_ip]:[local_port]", "<sip:1460@10.255.0.7:[local_port]"]);
    // Registered from the port it then answers on, as a phone's one socket behind its NAT.
    const reg = await runSipp(registering, edge(), ["-p", String(phonePort), "-s", "1460", "-au", "1460", "-ap", PASSWORD, "-key", "domain", tenant.domain, "-key", "contact_port", String(phonePort), "-key", "expires", "300", "-m", "1", "-timeout", "15s"]);
    expect(reg.code, reg.stderr + reg.messages.slice(-1500)).toBe(0);
    // It asked for 300 s; behind a NAT it gets NAT_MAX_EXPIRES, so its re-registering keeps the NAT open.
    expect(reg.messages).toMatch(/^Contact: <sip:1460@10\.255\.0\.7:\d+;transport=UDP>;expires=60\r?$/im);
    const phone = startSipp(answering, ["-p", String(phonePort), "-mp", String(nextMediaPort()), "-m", "1"]);
    try {
      const r = await invite("1001", "1460");
      expect(r.code, `${r.stderr}${r.messages.slice(-2500)}\nphone: ${phone.stderr()}${phone.stdout().slice(-800)}\n${kamailio.log().slice(-2000)}`).toBe(0);
      expect(r.statuses).toContain(200);
      // The caller's BYE got its 200 from the phone: it went to the NAT's address, not to 10.255.0.7.
      expect(sippMessages(r.messages).some((m) => /^SIP\/2\.0 200 /m.test(m) && /^CSeq: *\d+ BYE/m.test(m))).toBe(true);
      expect(await exitOf(phone), phone.stderr() + phone.stdout().slice(-1500)).toBe(0);
      const callId = r.callIds.at(-1)!;
      await eventually(async () => expect((await calls()).find((x) => x.sip_call_id === callId)).toMatchObject({ status: "completed", answered: 1 }));
    } finally {
      await phone.stop();
    }
  });

  test("a busy callee's call goes on to their voicemail at the media engine: the edge's failover, with X-Dest", async () => {
    const h = { "x-api-key": tenant.key };
    const busy = await addSipUser(parley, tenant, "1004");
    const box = await api("POST", `${parley.publicUrl}/v1/voicemails`, { name: "1004's box" }, h);
    expect(box.status, JSON.stringify(box.body)).toBe(201);
    expect((await api("PATCH", `${parley.publicUrl}/v1/users/${busy.userId}`, { voicemail_id: box.body.data.id }, h)).status).toBe(200);
    expect((await register("1004", busyPort)).code).toBe(0);
    const r = await invite("1001", "1004");
    // The phone said 486; the caller got the media engine's 200 (which it gives only with X-Dest and X-Failover).
    expect(r.code, r.stderr + r.stdout.slice(-1500)).toBe(0);
    expect(r.statuses).toContain(200);
    const callId = r.callIds.at(-1)!;
    expect(kamailio.log()).toMatch(new RegExp(`failover: 486 to voicemail:${escapeRe(box.body.data.id)} via sip:127\\.0\\.0\\.1:${enginePort} call=${escapeRe(callId)}`));
    expect(r.messages).toContain(`X-Taken: X-Dest: voicemail:${box.body.data.id}; X-Failover: 486; \r\n`);
    const cdr = await eventually(async () => {
      const c = (await calls()).find((x) => x.sip_call_id === callId);
      expect(c).toMatchObject({ status: "completed", answered: 1 });
      return c;
    });
    expect(cdr.to).toBe("1004");
    // The phone that said busy answered nothing: the media engine did (the edge's events stop naming 1004).
    expect(cdr.agent_id).toBeNull();
  });

  test("a callee that rings and never answers is cancelled after the user's ring timeout, and the call goes on to voicemail (408); the branch carries /route's headers", async () => {
    const h = { "x-api-key": tenant.key };
    const ringing = await addSipUser(parley, tenant, "1801");
    const box = await api("POST", `${parley.publicUrl}/v1/voicemails`, { name: "1801's box" }, h);
    expect(box.status, JSON.stringify(box.body)).toBe(201);
    const patch = await api("PATCH", `${parley.publicUrl}/v1/users/${ringing.userId}`, { voicemail_id: box.body.data.id, ring_timeout_sec: 5 }, h);
    expect(patch.status, JSON.stringify(patch.body)).toBe(200);
    const [port] = freePorts(1) as [number];
    // The phone fails its call unless the INVITE carries X-Account-Id and X-Call-Direction (check_it).
    const phone = startSipp("uas-ringing.xml", ["-p", String(port), "-mp", String(nextMediaPort()), "-m", "1"]);
    await Bun.sleep(200);
    try {
      expect((await register("1801", port)).code).toBe(0);
      // The caller's sipp gives up after 20 s: the edge's own INVITE timeout (60 s) would be too late.
      const r = await invite("1001", "1801");
      expect(r.code, r.stderr + r.stdout.slice(-1500) + kamailio.log().slice(-2000)).toBe(0);
      expect(r.statuses).toContain(200);
      const callId = r.callIds.at(-1)!;
      expect(kamailio.log()).toMatch(new RegExp(`failover: 408 to voicemail:${escapeRe(box.body.data.id)} via sip:127\\.0\\.0\\.1:${enginePort} call=${escapeRe(callId)}`));
      expect(r.messages).toContain(`X-Taken: X-Dest: voicemail:${box.body.data.id}; X-Failover: 408; \r\n`);
      // The phone saw the headers, was cancelled and ended its one call cleanly.
      expect(await exitOf(phone), phone.stderr() + phone.stdout().slice(-1500)).toBe(0);
    } finally {
      await phone.stop();
    }
  });

  test("a callee whose contact never answers at all (no reply, not even ringing) takes the unreachable failover, not the no-answer one", async () => {
    const h = { "x-api-key": tenant.key };
    await addSipUser(parley, tenant, "1803");
    const box = await api("POST", `${parley.publicUrl}/v1/voicemails`, { name: "1803's box" }, h);
    expect(box.status, JSON.stringify(box.body)).toBe(201);
    expect((await api("PATCH", `${parley.publicUrl}/v1/users/${tenant.users["1803"]!.userId}`, { voicemail_id: box.body.data.id, ring_timeout_sec: 30 }, h)).status).toBe(200);
    const before = tenant.config;
    await applyTenantConfig(parley, tenant, { forwards: [...((before.forwards as unknown[] | undefined) ?? []), { user: "1803", trigger: "unreachable", number: "+447700900123" }] });
    // A phone that hears its INVITEs and answers none (gone, or its NAT mapping lost).
    const silent = await Bun.udpSocket({ hostname: "127.0.0.1", port: 0, socket: { data() {} } });
    try {
      expect((await register("1803", silent.port)).code).toBe(0);
      const r = await invite("1001", "1803");
      expect(r.code, r.stderr + r.messages.slice(-1500) + kamailio.log().slice(-2000)).toBe(0);
      expect(r.statuses).toContain(200);
      // No reply at all: the unreachable forward (the no-answer failover would be the mailbox).
      expect(kamailio.log()).toMatch(new RegExp(`failover: 408 to forward:fwd_\\w+ via sip:127\\.0\\.0\\.1:${enginePort} call=${escapeRe(r.callIds.at(-1)!)}`));
      expect(r.messages).toMatch(/X-Taken: X-Dest: forward:fwd_\w+; X-Failover: 408; /);
    } finally {
      silent.close();
      await applyTenantConfig(parley, tenant, { ...before, forwards: before.forwards ?? [] });
    }
  });

  test("a callee's final refusal reaches the caller, and the CDR's hangup cause is the edge's mapping of its code", async () => {
    // No voicemail or forward: the refusal is the call's end (a busy callee with voicemail fails over, above).
    const cases: Array<[number, string, string]> = [
      [604, "Does Not Exist Anywhere", "UNALLOCATED_NUMBER"],
      [403, "Forbidden", "CALL_REJECTED"],
      [488, "Not Acceptable Here", "CALL_REJECTED"],
      [480, "Temporarily Unavailable", "NO_ANSWER"],
      [486, "Busy Here", "USER_BUSY"],
      [500, "Server Internal Error", "NORMAL_TEMPORARY_FAILURE"],
    ];
    for (const [i, [code, reason, cause]] of cases.entries()) {
      // A user of its own (one contact): forked to several, the caller gets the best of their replies.
      const callee = String(1005 + i);
      await addSipUser(parley, tenant, callee);
      const [port] = freePorts(1) as [number];
      const scenario = join(mkdtempSync(join(tmpdir(), "sipp-reply-")), "uas-reply.xml");
      writeFileSync(scenario, readFileSync(join(import.meta.dir, "scenarios", "uas-reply.template.xml"), "utf8").replaceAll("{{code}}", String(code)).replaceAll("{{reason}}", reason));
      const uas = startSipp(scenario, ["-p", String(port), "-mp", String(nextMediaPort())]);
      await Bun.sleep(200);
      try {
        expect((await register(callee, port)).code).toBe(0);
        const r = await invite("1001", callee, "invite-refused.xml");
        expect(r.code, `${code}: ${JSON.stringify(r.statuses)} ${r.stderr}${r.stdout.slice(-800)} UAS: ${uas.stderr()}`).toBe(0);
        expect(r.statuses.at(-1)).toBe(code);
        const callId = r.callIds.at(-1)!;
        await eventually(async () => {
          const c = (await calls()).find((x) => x.sip_call_id === callId);
          expect(c, String(code)).toMatchObject({ answered: 0, sip_code: code, hangup_cause: cause });
        });
      } finally {
        await uas.stop();
      }
    }
  });

  test("a callee's redirect (302) reaches the caller, even when the user has voicemail", async () => {
    const h = { "x-api-key": tenant.key };
    const u = await addSipUser(parley, tenant, "1802");
    const box = await api("POST", `${parley.publicUrl}/v1/voicemails`, { name: "1802's box" }, h);
    expect((await api("PATCH", `${parley.publicUrl}/v1/users/${u.userId}`, { voicemail_id: box.body.data.id }, h)).status).toBe(200);
    const [port] = freePorts(1) as [number];
    const scenario = join(mkdtempSync(join(tmpdir(), "sipp-reply-")), "uas-302.xml");
    writeFileSync(scenario, readFileSync(join(import.meta.dir, "scenarios", "uas-reply.template.xml"), "utf8").replaceAll("{{code}}", "302").replaceAll("{{reason}}", "Moved Temporarily"));
    const uas = startSipp(scenario, ["-p", String(port), "-mp", String(nextMediaPort())]);
    await Bun.sleep(200);
    try {
      expect((await register("1802", port)).code).toBe(0);
      const r = await invite("1001", "1802", "invite-refused.xml");
      expect(r.code, r.stderr + r.messages.slice(-1500)).toBe(0);
      expect(r.statuses.at(-1)).toBe(302);
      expect(kamailio.log()).not.toMatch(new RegExp(`failover: 302 [^\n]*call=${escapeRe(r.callIds.at(-1)!)}`));
    } finally {
      await uas.stop();
    }
  });

  test("a request that claims to be in a dialog the edge does not know is refused (404), never relayed", async () => {
    // A to-tag and a Route naming the edge, towards the carrier: loose routing alone would relay it.
    const sock = await Bun.udpSocket({ hostname: "127.0.0.1", port: 0, socket: { data(_s, data) { replies.push(data.toString()); }, error() {} } });
    const replies: string[] = [];
    try {
      const branch = `z9hG4bK${crypto.randomUUID().slice(0, 12)}`;
      sock.send(
        `INVITE sip:19005551234@127.0.0.1:${carrierPort} SIP/2.0\r\nVia: SIP/2.0/UDP 127.0.0.1:${sock.port};branch=${branch}\r\nRoute: <sip:127.0.0.1:${kamailio.port};lr>\r\n` +
          `Max-Forwards: 70\r\nFrom: <sip:fraud@127.0.0.1>;tag=f1\r\nTo: <sip:19005551234@127.0.0.1>;tag=t1\r\nCall-ID: ${branch}@forged\r\nCSeq: 1 INVITE\r\n` +
          `Contact: <sip:fraud@127.0.0.1:${sock.port}>\r\nContent-Length: 0\r\n\r\n`,
        kamailio.port,
        "127.0.0.1",
      );
      await eventually(async () => expect(replies.length).toBeGreaterThan(0));
      await Bun.sleep(500);
      expect(replies.map((m) => m.split("\r\n")[0])).toEqual(["SIP/2.0 404 Not here"]);
      expect(kamailio.log()).toMatch(/in-dialog INVITE from 127\.0\.0\.1 matches no call: refused/);
    } finally {
      sock.close();
    }
  });

  test("a second INVITE without credentials from the same address is challenged at once, without asking /route", async () => {
    // Whatever the tests before left in the edge's challenge cache has gone (10 s after it was set; a
    // hit does not renew it): the first INVITE asks /route and marks the address, the second is within 10 s.
    await Bun.sleep(10_500);
    const first = await invite("1001", "1002");
    expect(first.code, first.stderr).toBe(0);
    expect(first.statuses.slice(0, 2)).toEqual([100, 407]);
    const r = await invite("1001", "1002");
    expect(r.code, r.stderr).toBe(0);
    // Challenged statelessly (no 100 Trying first), then authenticated and routed.
    expect(r.statuses.slice(0, 2)).toEqual([407, 100]);
    expect(r.statuses).toContain(200);
    const routed = kamailio.log().match(new RegExp(`ctl /route rc=\\d+ .*call=${escapeRe(r.callIds[0]!)}`, "g")) ?? [];
    expect(routed.length).toBe(1);
  });

  test("an INVITE with a wrong password is refused (403) and never routed", async () => {
    const before = (await calls()).length;
    const r = await runSipp("invite-refused.xml", edge(), ["-s", "1002", "-au", "1001", "-ap", "not-the-password", "-key", "from_user", "1001", "-key", "domain", tenant.domain, "-m", "1", "-timeout", "10s"]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.statuses.at(-1)).toBe(403);
    expect(kamailio.log()).toMatch(new RegExp(`ctl /route rc=401 .*call=${escapeRe(r.callIds[0]!)}`));
    expect((await calls()).length).toBe(before);
  });

  test("INVITE to a number routed to the carrier trunk reaches the carrier's UAS", async () => {
    const r = await invite("1001", tenant.trunkNumber);
    expect(r.code, r.stderr).toBe(0);
    expect(r.statuses).toContain(200);
    expect(kamailio.log()).toMatch(/ctl \/route rc=200 us=\d+ action=outbound to=14155550123/);
  });

  test("an outbound call fails over from a trunk that answers 503 to the next route's trunk, which gets its own caller ID and /route's headers", async () => {
    const [primaryPort, backupPort] = await twoUdpPorts();
    const dir = mkdtempSync(join(tmpdir(), "sipp-trunks-"));
    const refusing = replyingUas(dir, 503, "Service Unavailable");
    // The backup carrier fails the call (check_it) unless the INVITE is From the backup trunk's caller
    // ID (not the primary's, whose branch came first) and carries X-Account-Id.
    const checking = checkingUas(dir, "uas-backup.xml", ["from", "acc"], `
      <ereg regexp="From: [^\\r\\n]*sip:13125557722@" search_in="msg" check_it="true" assign_to="from"/>
      <ereg regexp="X-Account-Id: ${tenant.accountId}" search_in="msg" check_it="true" assign_to="acc"/>`);
    const primary = startSipp(refusing, ["-p", String(primaryPort), "-mp", String(nextMediaPort()), "-m", "1"]);
    const backup = startSipp(checking, ["-p", String(backupPort), "-mp", String(nextMediaPort()), "-m", "1"]);
    const before = tenant.config;
    await applyTenantConfig(parley, tenant, withTrunkPair(before, "chi", "1312", [primaryPort, backupPort], [{ cid_number: "13125557711" }, { cid_number: "13125557722" }]));
    await Bun.sleep(500);
    try {
      const r = await invite("1001", "13125557799");
      expect(r.code, `${r.stderr}${r.messages.slice(-2500)}\nprimary: ${primary.stderr()}${primary.stdout().slice(-800)}\nbackup: ${backup.stderr()}${backup.stdout().slice(-800)}\n${kamailio.log().slice(-2000)}`).toBe(0);
      expect(r.statuses).toContain(200);
      expect(r.statuses).not.toContain(503);
      expect(await exitOf(primary), primary.stderr()).toBe(0);
      expect(await exitOf(backup), backup.stderr() + backup.stdout().slice(-1500)).toBe(0);
      const callId = r.callIds.at(-1)!;
      await eventually(async () => expect((await calls()).find((x) => x.sip_call_id === callId)).toMatchObject({ status: "completed", answered: 1, direction: "outbound" }));
    } finally {
      await applyTenantConfig(parley, tenant, before);
      await primary.stop();
      await backup.stop();
    }
  });

  test("a trunk's 6xx (declined everywhere) reaches the caller: the next route's trunk is not tried", async () => {
    const [primaryPort, backupPort] = await twoUdpPorts();
    const declining = replyingUas(mkdtempSync(join(tmpdir(), "sipp-6xx-")), 603, "Decline");
    const primary = startSipp(declining, ["-p", String(primaryPort), "-mp", String(nextMediaPort()), "-m", "1"]);
    const backup = startSipp("uas.xml", ["-p", String(backupPort), "-mp", String(nextMediaPort()), "-m", "1"]);
    const before = tenant.config;
    await applyTenantConfig(parley, tenant, withTrunkPair(before, "dec", "1646", [primaryPort, backupPort]));
    await Bun.sleep(500);
    try {
      const r = await invite("1001", "16465557788", "invite-refused.xml");
      expect(r.code, `${r.stderr}${r.messages.slice(-2500)}\n${kamailio.log().slice(-2000)}`).toBe(0);
      expect(r.statuses).toContain(603);
      expect(r.statuses).not.toContain(200);
      expect(await exitOf(primary), primary.stderr()).toBe(0);
      // The backup trunk got no INVITE: its one call never happened.
      expect(await exitOf(backup, 1000)).toBe("still running");
    } finally {
      await applyTenantConfig(parley, tenant, before);
      await primary.stop();
      await backup.stop();
    }
  });

  test("a trunk that challenges (401) gets its credentials' digest for its realm and nonce, with the next CSeq; the call completes, BYE included; wrong credentials fail the call over to the next route, or with none left 503: a trunk's 401 never reaches the caller", async () => {
    const [trunkPort, backupPort] = await twoUdpPorts();
    const dir = mkdtempSync(join(tmpdir(), "sipp-challenge-"));
    const trace = join(dir, "trunk-messages.log");
    const trunk = startSipp("uas-challenging.xml", ["-p", String(trunkPort), "-mp", String(nextMediaPort()), "-m", "1", "-trace_msg", "-message_file", trace]);
    const before = tenant.config;
    const credentials = { auth_username: "acct-77", realm: "carrier.test", from_user: "acct-77", cid_number: "13135557733" };
    // The trunk with credentials first; its backup has none.
    const challengingPair = (password: string) => withTrunkPair(before, "chal", "1313", [trunkPort, backupPort], [{ ...credentials, auth_password: password }, {}]);
    await applyTenantConfig(parley, tenant, challengingPair("trunk-s3cret"));
    await Bun.sleep(500);
    try {
      const r = await invite("1001", "13135557700");
      expect(r.code, `${r.stderr}${r.messages.slice(-2500)}\ntrunk: ${trunk.stderr()}${trunk.stdout().slice(-800)}\n${kamailio.log().slice(-2500)}`).toBe(0);
      expect(r.statuses).toContain(200);
      expect(r.statuses).not.toContain(401);
      expect(await exitOf(trunk), trunk.stderr() + trunk.stdout().slice(-1500)).toBe(0);
      // What the trunk received: the challenged INVITE, then the authenticated one with the next CSeq,
      // whose ACK and the caller's BYE carry CSeqs of the raised sequence.
      const received = sippMessages(readFileSync(trace, "utf8")).filter((m) => /^(INVITE|ACK|BYE) sip:/m.test(m));
      const cseq = (m: string) => /^CSeq:\s*(\d+) (\w+)/im.exec(m)!.slice(1, 3).join(" ");
      const [invite1, ack1, invite2, ack2, bye] = received.map(cseq);
      const n = Number(invite1!.split(" ")[0]);
      expect([invite1, ack1, invite2, ack2, bye]).toEqual([`${n} INVITE`, `${n} ACK`, `${n + 1} INVITE`, `${n + 1} ACK`, expect.stringMatching(/ BYE$/)]);
      expect(Number(bye!.split(" ")[0])).toBeGreaterThan(n + 1);
      const callId = r.callIds.at(-1)!;
      await eventually(async () => expect((await calls()).find((x) => x.sip_call_id === callId)).toMatchObject({ status: "completed", answered: 1, direction: "outbound" }));
      expect(kamailio.log()).toMatch(/trunk trk_\w+ challenged \(401\): retried with its credentials/);
      // Neither the password nor its HA1 is logged.
      expect(kamailio.log()).not.toContain("trunk-s3cret");
      expect(kamailio.log()).not.toContain(new Bun.CryptoHasher("md5").update("acct-77:carrier.test:trunk-s3cret").digest("hex"));

      // Wrong credentials: the trunk challenges again (as carriers do for a wrong digest). The edge does
      // not answer twice: the backup route takes the call, and the caller never sees a 401.
      await applyTenantConfig(parley, tenant, challengingPair("not-the-password"));
      await Bun.sleep(500);
      let primary = startSipp(challengingTwice(dir), ["-p", String(trunkPort), "-mp", String(nextMediaPort()), "-m", "1"]);
      let backup = startSipp("uas.xml", ["-p", String(backupPort), "-mp", String(nextMediaPort()), "-m", "1"]);
      try {
        const failedOver = await invite("1001", "13135557701");
        expect(failedOver.code, `${failedOver.stderr}${failedOver.messages.slice(-2500)}\n${kamailio.log().slice(-2500)}`).toBe(0);
        expect(failedOver.statuses).toContain(200);
        expect(failedOver.statuses).not.toContain(401);
        expect(await exitOf(backup), backup.stderr()).toBe(0);
        expect(kamailio.log()).toMatch(/outbound route 0 challenged \(401\) again: its credentials were refused/);
      } finally {
        await primary.stop();
        await backup.stop();
      }

      // The backup challenges too, and has no credentials: no route is left, and the caller gets 503
      // from the edge (not the trunk's 401); the call is recorded failed with that code.
      primary = startSipp(challengingTwice(dir), ["-p", String(trunkPort), "-mp", String(nextMediaPort()), "-m", "1"]);
      backup = startSipp(challengingTwice(dir), ["-p", String(backupPort), "-mp", String(nextMediaPort()), "-m", "1"]);
      try {
        const refused = await invite("1001", "13135557702", "invite-refused.xml");
        expect(refused.code, `${refused.stderr}${refused.messages.slice(-2500)}\n${kamailio.log().slice(-2500)}`).toBe(0);
        expect(refused.statuses).toContain(503);
        expect(refused.statuses).not.toContain(401);
        expect(refused.messages).toContain("503 Trunk Authentication Failed");
        expect(kamailio.log()).toMatch(/outbound route 1 challenged \(401\): its trunk has no credentials/);
        await eventually(async () => expect((await calls()).find((x) => x.sip_call_id === refused.callIds.at(-1))).toMatchObject({ answered: 0, sip_code: 503 }));
      } finally {
        await primary.stop();
        await backup.stop();
      }
    } finally {
      await applyTenantConfig(parley, tenant, before);
      await trunk.stop();
    }
  });

  test("the edge probes trunks with ping_sec (OPTIONS): one that stops answering is tried after the one that answers, and comes back when it answers again; GET /trunks/status shows it", async () => {
    const [upPort, downPort] = await twoUdpPorts();
    const dir = mkdtempSync(join(tmpdir(), "sipp-probed-"));
    const downTrace = join(dir, "down-messages.log");
    const before = tenant.config;
    let down = startSipp(probedUas(dir, 503), ["-p", String(downPort), "-mp", String(nextMediaPort()), "-trace_msg", "-message_file", downTrace]);
    const up = startSipp(probedUas(dir, 200), ["-p", String(upPort), "-mp", String(nextMediaPort())]);
    await applyTenantConfig(parley, tenant, withTrunkPair(before, "probed", "1414", [downPort, upPort], [{ ping_sec: 5 }, { ping_sec: 5 }]));
    try {
      const status = async () => (await api("GET", `${parley.controlUrl}/trunks/status?accountId=${tenant.accountId}`)).body.data as any[];
      const of = (rows: any[], name: string) => rows.find((t) => t.name === name);
      // Two refused probes (503) make the primary down; the backup answers.
      await eventually(async () => {
        const rows = await status();
        expect(of(rows, "probed-primary").ping).toMatchObject({ state: "down", node: "edge-e2e", stale: 0 });
        expect(of(rows, "probed-primary").ping.fails).toBeGreaterThanOrEqual(2);
        expect(of(rows, "probed-backup").ping).toMatchObject({ state: "up", code: 200, fails: 0 });
      }, 20_000);
      expect(kamailio.log()).not.toMatch(/ctl \/trunks\/tick rc=(?!200)/);
      const r = await invite("1001", "14147770100");
      expect(r.code, r.stderr + kamailio.log().slice(-2000)).toBe(0);
      expect(r.statuses).toContain(200);
      // The call went to the backup first: the primary never got its INVITE.
      expect(sippMessages(readFileSync(downTrace, "utf8")).filter((m) => /^INVITE sip:/m.test(m))).toEqual([]);
      const record = await eventually(async () => {
        const c = (await calls()).find((x) => x.sip_call_id === r.callIds.at(-1));
        expect(c).toMatchObject({ status: "completed", direction: "outbound" });
        return c;
      });
      const trace = await api("GET", `${parley.publicUrl}/v1/calls/${record.id}/trace`, undefined, { "x-api-key": tenant.key });
      expect(JSON.stringify(trace.body)).toContain("not answering OPTIONS since");
      // It answers again: up at its next probe.
      await down.stop();
      down = startSipp(probedUas(dir, 200), ["-p", String(downPort), "-mp", String(nextMediaPort())]);
      await eventually(async () => expect(of(await status(), "probed-primary").ping).toMatchObject({ state: "up", code: 200 }), 15_000);
    } finally {
      await applyTenantConfig(parley, tenant, before);
      await down.stop();
      await up.stop();
    }
  });

  test("the edge registers with a trunk that has do_register, answering its challenge with the HA1 of the trunk's password for its realm, with a Contact the trunk's calls come back to; it unregisters when the configuration drops it", async () => {
    const port = await freeUdpPort();
    const before = tenant.config;
    let registrar = startSipp("uas-registrar.xml", ["-p", String(port), "-m", "1"]);
    const trunk = { name: "reg-carrier", role: "carrier", direction: "both", proxy: `127.0.0.1:${port}`, do_register: 1, auth_username: "acct-88", auth_password: "reg-s3cret", realm: "registrar.test", from_domain: "carrier-reg.test", expire_sec: 300, acl: ["127.0.0.8"] };
    await applyTenantConfig(parley, tenant, { trunks: [...(before.trunks as unknown[]), trunk] });
    try {
      const status = async () => ((await api("GET", `${parley.controlUrl}/trunks/status?accountId=${tenant.accountId}`)).body.data as any[]).find((t) => t.name === "reg-carrier");
      const row = await eventually(async () => {
        const t = await status();
        expect(t.registrations).toEqual([{ node: "edge-e2e", state: "registered", at: expect.any(Number) }]);
        return t;
      }, 20_000);
      expect(await exitOf(registrar), registrar.stderr() + registrar.stdout().slice(-1500)).toBe(0);
      expect(kamailio.log()).toContain(`registration with trunk ${row.trunk_id} (account ${tenant.accountId}) set: 200`);
      // Neither the password nor its HA1 is in the edge's log.
      expect(kamailio.log()).not.toContain("reg-s3cret");
      expect(kamailio.log()).not.toContain(new Bun.CryptoHasher("md5").update("acct-88:registrar.test:reg-s3cret").digest("hex"));

      // A call the trunk sends to our registration's Contact (its user the trunk's id, the number in To)
      // is for the number in To.
      expect((await register("1002", devicePort)).code).toBe(0);
      const did = `1626${String(Math.floor(Math.random() * 1e7)).padStart(7, "0")}`;
      const num = await api("POST", `${parley.publicUrl}/v1/numbers`, { e164: did, dest_kind: "user", dest_id: tenant.users["1002"]!.userId }, { "x-api-key": tenant.key });
      expect(num.status).toBe(201);
      const toOurContact = join(mkdtempSync(join(tmpdir(), "sipp-to-contact-")), "invite-to-contact.xml");
      writeFileSync(toOurContact, readFileSync(join(import.meta.dir, "scenarios", "invite-noauth.xml"), "utf8").replaceAll("To: <sip:[service]@[domain]>", `To: <sip:${did}@[domain]>`));
      const inbound = await runSipp(toOurContact, edge(), ["-i", "127.0.0.8", "-s", row.trunk_id, "-key", "from_user", "14155559878", "-key", "domain", "127.0.0.1", "-d", "300", "-m", "1", "-timeout", "20s"]);
      expect(inbound.code, inbound.stderr + kamailio.log().slice(-2000)).toBe(0);
      expect(inbound.statuses).toContain(200);
      await eventually(async () => expect((await calls()).find((x) => x.sip_call_id === inbound.callIds.at(-1))).toMatchObject({ direction: "inbound", number_id: num.body.data.id, status: "completed" }));

      // A new password reaches the edge: it registers again with it (uac.reg_add refuses an id it holds,
      // so before the edge removed the old registration first, the change never took effect).
      const rotated = join(mkdtempSync(join(tmpdir(), "sipp-registrar-")), "uas-registrar-rotated.xml");
      writeFileSync(rotated, readFileSync(join(import.meta.dir, "scenarios", "uas-registrar.xml"), "utf8").replace('password="reg-s3cret"', 'password="reg-r0tated"'));
      registrar = startSipp(rotated, ["-p", String(port), "-m", "1"]);
      await applyTenantConfig(parley, tenant, { trunks: [...(before.trunks as unknown[]), { ...trunk, auth_password: "reg-r0tated" }] });
      expect(await exitOf(registrar, 20_000), registrar.stderr() + registrar.stdout().slice(-1500) + kamailio.log().slice(-1500)).toBe(0);
      expect(kamailio.log().split(`registration with trunk ${row.trunk_id} (account ${tenant.accountId}) set: 200`).length - 1).toBe(2);

      // Disabled, then enabled again: unregistered, then registered again under the same id (the module
      // keeps an unregistered record, idle, which the new add replaces).
      registrar = startSipp("uas-unregister.xml", ["-p", String(port), "-m", "1"]);
      await applyTenantConfig(parley, tenant, { trunks: [...(before.trunks as unknown[]), { ...trunk, status: "disabled" }] });
      expect(await exitOf(registrar, 15_000), registrar.stderr() + registrar.stdout().slice(-1500) + kamailio.log().slice(-1500)).toBe(0);
      registrar = startSipp("uas-registrar.xml", ["-p", String(port), "-m", "1"]);
      await applyTenantConfig(parley, tenant, { trunks: [...(before.trunks as unknown[]), trunk] });
      expect(await exitOf(registrar, 20_000), registrar.stderr() + registrar.stdout().slice(-1500) + kamailio.log().slice(-1500)).toBe(0);
      expect((await status()).trunk_id).toBe(row.trunk_id);

      // Dropped from the configuration: unregistered (expires 0).
      registrar = startSipp("uas-unregister.xml", ["-p", String(port), "-m", "1"]);
      await applyTenantConfig(parley, tenant, before);
      expect(await exitOf(registrar, 15_000), registrar.stderr() + registrar.stdout().slice(-1500) + kamailio.log().slice(-1500)).toBe(0);
      expect(kamailio.log()).toContain(`registration with trunk ${row.trunk_id} dropped: 200`);
    } finally {
      await applyTenantConfig(parley, tenant, before);
      await registrar.stop();
    }
  });

  test("what a device writes into its INVITE that only the edge may say (identity, X- headers, a preloaded Route) does not reach the trunk; /route's headers do", async () => {
    const trunkPort = await freeUdpPort();
    const dir = mkdtempSync(join(tmpdir(), "sipp-hygiene-"));
    // The caller's INVITE with credentials also carries headers of its own making.
    const forging = join(dir, "invite-forging.xml");
    writeFileSync(
      forging,
      readFileSync(join(import.meta.dir, "scenarios", "invite.xml"), "utf8").replace(
        "      [authentication]\n",
        "      [authentication]\n      P-Asserted-Identity: \"Bank\" <sip:+18005551234@bank.example>\n      Remote-Party-ID: <sip:+18005551234@bank.example>;screen=yes\n      X-Dest: forward:fwd_ATTACKER\n      X-Account-Id: acc_OTHER\n      Route: <sip:198.51.100.99:5060;lr>\n",
      ),
    );
    // The trunk fails the call (check_it_inverse) if any of them arrives, or (check_it) if /route's X-Account-Id does not.
    const checking = checkingUas(dir, "uas-hygiene.xml", ["forged", "acc"], `
      <ereg regexp="P-Asserted-Identity|Remote-Party-ID|fwd_ATTACKER|acc_OTHER|198\\.51\\.100\\.99" search_in="msg" check_it_inverse="true" assign_to="forged"/>
      <ereg regexp="X-Account-Id: ${tenant.accountId}" search_in="msg" check_it="true" assign_to="acc"/>`);
    const trunk = startSipp(checking, ["-p", String(trunkPort), "-mp", String(nextMediaPort()), "-m", "1"]);
    const before = tenant.config;
    await applyTenantConfig(parley, tenant, {
      trunks: [...(before.trunks as unknown[]), { name: "hyg", role: "carrier", direction: "outbound", proxy: `127.0.0.1:${trunkPort}`, transport: "udp" }],
      outbound_routes: [...(before.outbound_routes as unknown[]), { name: "hyg", match_prefix: "1415777", via: "trunk", trunk: "hyg", priority: 10 }],
    });
    await Bun.sleep(500);
    try {
      const r = await invite("1001", "14157770100", forging);
      expect(r.code, `${r.stderr}${r.messages.slice(-2500)}\ntrunk: ${trunk.stderr()}${trunk.stdout().slice(-800)}\n${kamailio.log().slice(-2000)}`).toBe(0);
      expect(await exitOf(trunk), trunk.stderr() + trunk.stdout().slice(-1500)).toBe(0);
    } finally {
      await applyTenantConfig(parley, tenant, before);
      await trunk.stop();
    }
  });

  test("an emergency number (911) dialled by a phone goes out through the route for it, past the account's limits, with the phone's callback number; recorded and logged", async () => {
    const psapPort = await freeUdpPort();
    const dir = mkdtempSync(join(tmpdir(), "sipp-emergency-"));
    // The caller asks for its identity to be withheld (Privacy: id): not on an emergency call.
    const checking = checkingUas(dir, "uas-psap.xml", ["ruri", "cid", "privacy"], `
      <ereg regexp="^INVITE sip:911@127\\.0\\.0\\.1:${psapPort}" search_in="msg" check_it="true" assign_to="ruri"/>
      <ereg regexp="From:[^@]*sip:14155550911@" search_in="msg" check_it="true" assign_to="cid"/>
      <ereg regexp="\\nPrivacy:" search_in="msg" check_it_inverse="true" assign_to="privacy"/>`);
    const withheld = join(dir, "invite-privacy.xml");
    writeFileSync(withheld, readFileSync(join(import.meta.dir, "scenarios", "invite.xml"), "utf8").replaceAll("      Max-Forwards: 70\n      Content-Type: application/sdp", "      Max-Forwards: 70\n      Privacy: id\n      Content-Type: application/sdp"));
    expect(readFileSync(withheld, "utf8").match(/Privacy: id/g)).toHaveLength(2);
    const psap = startSipp(checking, ["-p", String(psapPort), "-mp", String(nextMediaPort()), "-m", "1"]);
    const before = tenant.config;
    await applyTenantConfig(parley, tenant, {
      trunks: [...(before.trunks as unknown[]), { name: "psap", role: "carrier", direction: "outbound", proxy: `127.0.0.1:${psapPort}`, transport: "udp" }],
      outbound_routes: [...(before.outbound_routes as unknown[]), { name: "emergency", match_prefix: "911", via: "trunk", trunk: "psap", priority: 1 }],
      // Every call out refused by the account's own limit: not an emergency call.
      call_limits: [...((before.call_limits as unknown[] | undefined) ?? []), { name: "no-calls-out", direction: "out", max_count: 0 }],
    });
    const user = await api("PATCH", `${parley.publicUrl}/v1/users/${tenant.users["1001"]!.userId}`, { out_cid_number: "14155550911" }, { "x-api-key": tenant.key });
    expect(user.status, JSON.stringify(user.body)).toBe(200);
    try {
      const blocked = await invite("1001", tenant.trunkNumber, "invite-refused.xml");
      expect(blocked.statuses.at(-1), blocked.stderr).toBeGreaterThanOrEqual(400);
      const r = await invite("1001", "911", withheld);
      expect(r.code, `${r.stderr}${r.messages.slice(-2000)}\npsap: ${psap.stderr()}${psap.stdout().slice(-1500)}\n${kamailio.log().slice(-2000)}`).toBe(0);
      expect(r.statuses).toContain(200);
      expect(await exitOf(psap), psap.stderr() + psap.stdout().slice(-1500)).toBe(0);
      const record = await eventually(async () => {
        const c = (await calls()).find((x) => x.sip_call_id === r.callIds.at(-1));
        expect(c).toMatchObject({ direction: "outbound", status: "completed", answered: 1, to: "911" });
        return c;
      });
      const logs = await api("GET", `${parley.publicUrl}/v1/logs?level=warn&limit=50`, undefined, { "x-api-key": tenant.key });
      expect((logs.body.data as Array<{ call_id: string; message: string }>).find((l) => l.call_id === record.id)?.message).toBe("Emergency call from 14155550911 to 911 placed.");
    } finally {
      await api("PATCH", `${parley.publicUrl}/v1/users/${tenant.users["1001"]!.userId}`, { out_cid_number: null }, { "x-api-key": tenant.key });
      // A section the test added is given back empty: applying `before` alone would keep it (merged).
      await applyTenantConfig(parley, tenant, { ...before, call_limits: before.call_limits ?? [] });
      await psap.stop();
    }
  });

  test("an extension's caller name prefix (dest_xform.cid_name_prefix) is in the From's display name the callee's phone gets; the call completes", async () => {
    const { userId } = await addSipUser(parley, tenant, "1502");
    const ext = await api("POST", `${parley.publicUrl}/v1/extensions`, { digits: "7502", dest_kind: "user", dest_id: userId, dest_xform: { cid_name_prefix: "Sales: " } }, { "x-api-key": tenant.key });
    expect(ext.status, JSON.stringify(ext.body)).toBe(201);
    const dir = mkdtempSync(join(tmpdir(), "sipp-prefix-"));
    /** Calls 7502 from 1001 (with `caller`, a scenario of the caller's own) to a phone on 1502 that checks the From's display name. */
    async function callExpecting(display: string, name: string, caller?: string) {
      const [port] = freePorts(1) as [number];
      const checking = checkingUas(dir, `${name}.xml`, ["display"], `
      <ereg regexp="From: *&quot;${display}&quot; *&lt;sip:1001@" search_in="msg" check_it="true" assign_to="display"/>`);
      const phone = startSipp(checking, ["-p", String(port), "-mp", String(nextMediaPort()), "-m", "1"]);
      await Bun.sleep(200);
      try {
        expect((await register("1502", port)).code).toBe(0);
        const r = await invite("1001", "7502", caller);
        expect(r.code, `${r.stderr}${r.messages.slice(-1500)}\nphone: ${phone.stderr()}${phone.stdout().slice(-1500)}`).toBe(0);
        expect(r.statuses).toContain(200);
        expect(await exitOf(phone), phone.stderr() + phone.stdout().slice(-1500)).toBe(0);
        return r;
      } finally {
        await phone.stop();
      }
    }
    try {
      const r = await callExpecting("Sales: 1001", "uas-prefix");
      await eventually(async () => expect((await calls()).find((x) => x.sip_call_id === r.callIds.at(-1))).toMatchObject({ status: "completed", answered: 1 }));
      // A caller that sends its name as a quoted string: the prefix goes before the name, not its quotes.
      const caller = join(dir, "invite-named.xml");
      writeFileSync(caller, readFileSync(join(import.meta.dir, "scenarios", "invite.xml"), "utf8").replaceAll("From: <sip:", 'From: "Alice B" <sip:'));
      await callExpecting("Sales: Alice B", "uas-prefix-named", caller);
    } finally {
      await api("DELETE", `${parley.publicUrl}/v1/extensions/${ext.body.data.id}`, undefined, { "x-api-key": tenant.key });
    }
  });

  test("requests the edge cannot serve get the RFC's answers: no From tag 400, a CANCEL of nothing 481, an unknown method 405 with Allow", async () => {
    const client = await handClient();
    try {
      const request = (method: string, fromTag: string | null, extra: string[] = []) =>
        sipMessage([
          `${method} sip:1002@${tenant.domain} SIP/2.0`,
          `Via: SIP/2.0/UDP 127.0.0.1:${client.port};branch=z9hG4bK${crypto.randomUUID().slice(0, 12)};rport`,
          "Max-Forwards: 70",
          `From: <sip:1001@${tenant.domain}>${fromTag === null ? "" : `;tag=${fromTag}`}`,
          `To: <sip:1002@${tenant.domain}>`,
          `Call-ID: ${crypto.randomUUID()}`,
          `CSeq: 1 ${method}`,
          `Contact: <sip:1001@127.0.0.1:${client.port}>`,
          ...extra,
          "Content-Length: 0",
        ]);
      // Routed before, the dialog module could not track it: its ACK and BYE were refused and the call never ended.
      client.send(request("INVITE", null), kamailio.port);
      expect(await client.next()).toStartWith("SIP/2.0 400 Missing From Tag");
      client.send(request("CANCEL", "c1"), kamailio.port);
      expect(await client.next()).toStartWith("SIP/2.0 481 ");
      client.send(request("SUBSCRIBE", "s1", ["Event: presence"]), kamailio.port);
      const refused = await client.next();
      expect(refused).toStartWith("SIP/2.0 405 ");
      expect(headers(refused, "Allow")[0]).toContain("INVITE");
    } finally {
      client.close();
    }
  });

  test("INVITE to a DNC number is refused with 603 by the routing decision", async () => {
    const r = await invite("1001", tenant.dnc, "invite-refused.xml");
    expect(r.code, r.stderr).toBe(0);
    expect(r.statuses.at(-1)).toBe(603);
    expect(kamailio.log()).toMatch(new RegExp(`ctl /route rc=200 us=\\d+ action=reject .*call=${escapeRe(r.callIds.at(-1)!)}`));
  });

  test("CAC: a user with max_simultaneous 1 gets 486 for a second call while the first lasts", async () => {
    // Outbound calls hold the caller's `user` slot (internal calls hold the callee's), so 1003 calls out.
    const first = invite("1003", tenant.trunkNumber, "invite.xml", ["-d", "4000"]);
    await eventually(
      async () => expect((await cac()).data.cac).toContainEqual(expect.objectContaining({ level: "user", id: tenant.users["1003"]!.userId, active: 1 })),
      3000,
    );
    const second = await invite("1003", tenant.trunkNumber, "invite-refused.xml");
    expect(second.code, second.stderr + second.stdout.slice(-800)).toBe(0);
    expect(second.statuses.at(-1)).toBe(486);
    // Refused by CAC at the user's ceiling, not by a failing control plane (which is a 503 too).
    const refused = await eventually(async () => {
      const list = (await calls()).filter((c: any) => c.sip_call_id === second.callIds.at(-1));
      expect(list).toHaveLength(1);
      return list[0];
    });
    expect(refused).toMatchObject({ status: "rejected", sip_code: 486 });
    const steps = (await api("GET", `${parley.publicUrl}/v1/calls/${refused.id}/trace`, undefined, { "x-api-key": tenant.key })).body.data.steps;
    expect(steps.at(-2)).toMatchObject({ step: "cac", result: expect.stringContaining("refused: user") });
    expect(steps.at(-1)).toMatchObject({ step: "reject", result: "486 Busy Here" });
    expect((await first).code).toBe(0);
  });

  test("another account's phone behind a PBX trunk's address is challenged, not routed as the PBX's; the challenge is not cached for the address, so the PBX's next call goes through at once", async () => {
    const other = await createSipTenant(parley, { carrierPort, users: [{ username: "5001" }] });
    // From the PBX's address, in the other account's domain, to a name that is no DID: before, routed as
    // the PBX's own (internal) call without credentials.
    const foreign = await runSipp("invite-refused.xml", edge(), ["-i", TRUNK_IP, "-s", "5001", "-au", "5001", "-ap", PASSWORD, "-key", "from_user", "5001", "-key", "domain", other.domain, "-m", "1", "-timeout", "20s"]);
    expect(foreign.code, foreign.stderr + kamailio.log().slice(-2000)).toBe(0);
    expect(foreign.statuses).toContain(407);
    expect(kamailio.log()).toContain(`INVITE from ${TRUNK_IP} challenged, not cached`);
    // Its digest answered, it is that account's device's call (to its own user, not registered: refused).
    await eventually(async () => {
      const list = (await api("GET", `${parley.publicUrl}/v1/calls?limit=20`, undefined, { "x-api-key": other.key })).body.data as any[];
      expect(list.find((c) => c.sip_call_id === foreign.callIds.at(-1))).toMatchObject({ status: "rejected", direction: "internal", device_id: other.users["5001"]!.deviceId });
    });
    // The PBX's own call right after (within the edge's challenge cache window): not challenged.
    expect((await register("1002", devicePort)).code).toBe(0);
    const did = `1627${String(Math.floor(Math.random() * 1e7)).padStart(7, "0")}`;
    const num = await api("POST", `${parley.publicUrl}/v1/numbers`, { e164: did, dest_kind: "user", dest_id: tenant.users["1002"]!.userId }, { "x-api-key": tenant.key });
    expect(num.status, JSON.stringify(num.body)).toBe(201);
    const r = await runSipp("invite-noauth.xml", edge(), ["-i", TRUNK_IP, "-s", did, "-key", "from_user", "14155559875", "-key", "domain", "127.0.0.1", "-d", "300", "-m", "1", "-timeout", "20s"]);
    expect(r.code, r.stderr + kamailio.log().slice(-2000)).toBe(0);
    expect(r.statuses).not.toContain(407);
    expect(r.statuses).toContain(200);
  });

  test("inbound from an IP-authenticated trunk to a DID → registered user: no challenge; CDR inbound with number and trunk", async () => {
    expect((await register("1002", devicePort)).code).toBe(0);
    const did = `1628${String(Math.floor(Math.random() * 1e7)).padStart(7, "0")}`;
    const num = await api("POST", `${parley.publicUrl}/v1/numbers`, { e164: did, dest_kind: "user", dest_id: tenant.users["1002"]!.userId }, { "x-api-key": tenant.key });
    expect(num.status, JSON.stringify(num.body)).toBe(201);
    const r = await runSipp("invite-noauth.xml", edge(), ["-i", TRUNK_IP, "-s", did, "-key", "from_user", "14155559876", "-key", "domain", "127.0.0.1", "-d", "500", "-m", "1", "-timeout", "20s"]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.statuses).not.toContain(407);
    expect(r.statuses).toContain(200);
    const cdr = await eventually(async () => {
      const list = (await api("GET", `${parley.publicUrl}/v1/calls?direction=inbound&limit=100`, undefined, { "x-api-key": tenant.key })).body.data as any[];
      const c = list.find((x) => x.number_id === num.body.data.id);
      expect(c).toMatchObject({ direction: "inbound", status: "completed" });
      return c;
    });
    expect(cdr.trunk_id).toMatch(/^trk_/);
    expect(cdr.ended_at).toBeGreaterThan(0);
    expect(kamailio.log()).toMatch(new RegExp(`ctl /route rc=200 us=\\d+ action=proxy to=${did}`));
  });

  test("a withheld caller's call from the carrier, forwarded out: the trunk out gets one P-Asserted-Identity, Parley's, with the number the carrier asserted and Privacy: id; the carrier's own identity headers do not pass, on the failover leg either", async () => {
    const [refusingPort, outPort] = await twoUdpPorts();
    const dir = mkdtempSync(join(tmpdir(), "sipp-pai-"));
    const did = `1629${String(Math.floor(Math.random() * 1e7)).padStart(7, "0")}`;
    // The carrier's INVITE: an anonymous From, its caller's number asserted, and an identity header of its own.
    const withheld = join(dir, "invite-withheld.xml");
    writeFileSync(
      withheld,
      readFileSync(join(import.meta.dir, "scenarios", "invite-noauth.xml"), "utf8").replace(
        "      Max-Forwards: 70\n",
        "      Max-Forwards: 70\n      P-Asserted-Identity: <sip:+14155550777@carrier-pai.example>\n      Remote-Party-ID: <sip:+14155550777@carrier-pai.example>;privacy=full;screen=yes\n      Privacy: id\n",
      ),
    );
    // The trunk out fails the call (check_it_inverse) on a second PAI, the carrier's host or its
    // Remote-Party-ID, or (check_it) without Parley's assertion of the number and Privacy: id.
    const checking = checkingUas(dir, "uas-pai.xml", ["twice", "carrier", "pai", "privacy", "from"], `
      <ereg regexp="P-Asserted-Identity:.*P-Asserted-Identity:" search_in="msg" check_it_inverse="true" assign_to="twice"/>
      <ereg regexp="carrier-pai\\.example|Remote-Party-ID" search_in="msg" check_it_inverse="true" assign_to="carrier"/>
      <ereg regexp="P-Asserted-Identity: &lt;sip:\\+?14155550777@" search_in="msg" check_it="true" assign_to="pai"/>
      <ereg regexp="Privacy: id" search_in="msg" check_it="true" assign_to="privacy"/>
      <ereg regexp="From:[^@]*sip:anonymous@anonymous\\.invalid" search_in="msg" check_it="true" assign_to="from"/>`);
    // The first route's trunk answers 503: the leg checked is the failover's, built after /route's answer.
    const refusing = startSipp(replyingUas(dir, 503, "Service Unavailable"), ["-p", String(refusingPort), "-mp", String(nextMediaPort()), "-m", "1"]);
    const out = startSipp(checking, ["-p", String(outPort), "-mp", String(nextMediaPort()), "-m", "1"]);
    const before = tenant.config;
    const num = await api("POST", `${parley.publicUrl}/v1/numbers`, { e164: did, dest_kind: "hangup", allow_anonymous: 1 }, { "x-api-key": tenant.key });
    expect(num.status, JSON.stringify(num.body)).toBe(201);
    await applyTenantConfig(parley, tenant, {
      ...withTrunkPair(before, "pai", "1415888", [refusingPort, outPort]),
      forwards: [...((before.forwards as unknown[] | undefined) ?? []), { did: `+${did}`, trigger: "always", number: "+14158880199" }],
    });
    try {
      const r = await runSipp(withheld, edge(), ["-i", TRUNK_IP, "-s", did, "-key", "from_user", "anonymous", "-key", "domain", "127.0.0.1", "-d", "200", "-m", "1", "-timeout", "20s"]);
      expect(r.code, `${r.stderr}${r.messages.slice(-2500)}\nout: ${out.stderr()}${out.stdout().slice(-1500)}\n${kamailio.log().slice(-2000)}`).toBe(0);
      expect(r.statuses).toContain(200);
      expect(await exitOf(refusing), refusing.stderr()).toBe(0);
      expect(await exitOf(out), out.stderr() + out.stdout().slice(-1500)).toBe(0);
      await eventually(async () => expect((await calls()).find((x) => x.sip_call_id === r.callIds.at(-1))).toMatchObject({ direction: "outbound", status: "completed", answered: 1 }));
    } finally {
      await applyTenantConfig(parley, tenant, { ...before, forwards: before.forwards ?? [] });
      await refusing.stop();
      await out.stop();
      await api("DELETE", `${parley.publicUrl}/v1/numbers/${num.body.data.id}`, undefined, { "x-api-key": tenant.key });
    }
  });

  test("trunks that authenticate towards us: a digest trunk's call is challenged and, answered with its inbound credentials, reaches the DID (only from its acl, never with a wrong password); a PBX trunk registers (inbound_auth register), calls routed through it reach its registration, and its own calls reach the account's users and go out", async () => {
    const before = tenant.config;
    const tag = crypto.randomUUID().slice(0, 8);
    const digestUser = `dg-${tag}`;
    const pbxUser = `pbx-${tag}`;
    const pbxPort = await freeUdpPort();
    await applyTenantConfig(parley, tenant, {
      trunks: [
        ...(before.trunks as unknown[]),
        { name: "digest-carrier", role: "carrier", direction: "inbound", inbound_auth: "digest", inbound_username: digestUser, inbound_password: "dg-pass-1", acl: ["127.0.0.5"] },
        { name: "office-pbx", role: "pbx", direction: "both", inbound_auth: "register", inbound_username: pbxUser, inbound_password: "pbx-pass-1" },
      ],
      outbound_routes: [...(before.outbound_routes as unknown[]), { name: "office", match_prefix: "1555777", via: "trunk", trunk: "office-pbx", priority: 5 }],
    });
    const pbx = startSipp("uas.xml", ["-p", String(pbxPort), "-mp", String(nextMediaPort()), "-m", "1"]);
    try {
      expect((await register("1002", devicePort)).code).toBe(0);
      const did = `1627${String(Math.floor(Math.random() * 1e7)).padStart(7, "0")}`;
      const num = await api("POST", `${parley.publicUrl}/v1/numbers`, { e164: did, dest_kind: "user", dest_id: tenant.users["1002"]!.userId }, { "x-api-key": tenant.key });
      expect(num.status, JSON.stringify(num.body)).toBe(201);
      const fromTrunk = (ip: string, password: string, scenario = "invite.xml") =>
        runSipp(scenario, edge(), ["-i", ip, "-s", did, "-au", digestUser, "-ap", password, "-key", "from_user", "14155559111", "-key", "domain", "carrier-dg.example", "-d", "300", "-m", "1", "-timeout", "20s"]);

      // The digest trunk: no address of an ip trunk, so challenged; its answer is verified against the
      // trunk's inbound password, and the call is the trunk's, inbound to the DID.
      const call = await fromTrunk("127.0.0.5", "dg-pass-1");
      expect(call.code, call.stderr + kamailio.log().slice(-2500)).toBe(0);
      expect(call.statuses).toContain(407);
      expect(call.statuses).toContain(200);
      const callId = call.callIds.at(-1)!;
      const record = await eventually(async () => {
        const c = (await calls()).find((x) => x.sip_call_id === callId);
        expect(c).toMatchObject({ direction: "inbound", status: "completed", answered: 1, number_id: num.body.data.id });
        return c;
      });
      const trace = await api("GET", `${parley.publicUrl}/v1/calls/${record.id}/trace`, undefined, { "x-api-key": tenant.key });
      expect(JSON.stringify(trace.body)).toContain("inbound from trunk digest-carrier");
      expect(record.trunk_id).toMatch(/^trk_/);

      // A wrong password is refused; the right one from outside the trunk's acl too.
      const wrong = await fromTrunk("127.0.0.5", "not-the-password", "invite-refused.xml");
      expect(wrong.statuses.at(-1), wrong.stderr).toBe(403);
      const elsewhere = await fromTrunk("127.0.0.6", "dg-pass-1", "invite-refused.xml");
      expect(elsewhere.statuses.at(-1), elsewhere.stderr).toBe(403);
      expect(kamailio.log()).toMatch(new RegExp(`ctl /route rc=403 .*call=${escapeRe(elsewhere.callIds.at(-1)!)}`));

      // The PBX registers with its trunk's credentials; a call routed through its trunk (no proxy) goes
      // to the Contact it registered.
      const reg = await runSipp("register.xml", edge(), ["-s", pbxUser, "-au", pbxUser, "-ap", "pbx-pass-1", "-key", "domain", tenant.domain, "-key", "contact_port", String(pbxPort), "-key", "expires", "300", "-m", "1", "-timeout", "15s"]);
      expect(reg.code, reg.stderr + kamailio.log().slice(-2000)).toBe(0);
      expect(kamailio.log()).toMatch(/ctl \/presence\/event register rc=200 .* expires=300 .* trk=trk_\w+/);
      const out = await invite("1001", "15557770042");
      expect(out.code, out.stderr + kamailio.log().slice(-2500)).toBe(0);
      expect(out.statuses).toContain(200);
      expect(await exitOf(pbx), pbx.stderr()).toBe(0);
      await eventually(async () => expect((await calls()).find((x) => x.sip_call_id === out.callIds.at(-1))).toMatchObject({ direction: "outbound", status: "completed", answered: 1 }));
      // The PBX's own calls (role pbx), challenged and answered with its credentials: to a user of the
      // account (internal), and out through the account's routes.
      const pbxCall = (to: string) => runSipp("invite.xml", edge(), ["-s", to, "-au", pbxUser, "-ap", "pbx-pass-1", "-key", "from_user", "14155559177", "-key", "domain", tenant.domain, "-d", "300", "-m", "1", "-timeout", "20s"]);
      const internal = await pbxCall("1002");
      expect(internal.code, internal.stderr + kamailio.log().slice(-2000)).toBe(0);
      await eventually(async () => expect((await calls()).find((x) => x.sip_call_id === internal.callIds.at(-1))).toMatchObject({ direction: "internal", status: "completed", answered: 1 }));
      const outward = await pbxCall(tenant.trunkNumber);
      expect(outward.code, outward.stderr + kamailio.log().slice(-2000)).toBe(0);
      await eventually(async () => expect((await calls()).find((x) => x.sip_call_id === outward.callIds.at(-1))).toMatchObject({ direction: "outbound", status: "completed", answered: 1 }));
      // A digest trunk does not register.
      const digestReg = await runSipp("register.xml", edge(), ["-s", digestUser, "-au", digestUser, "-ap", "dg-pass-1", "-i", "127.0.0.5", "-key", "domain", tenant.domain, "-key", "contact_port", String(pbxPort), "-key", "expires", "300", "-m", "1", "-timeout", "10s"]);
      expect(digestReg.statuses.at(-1)).toBe(403);
    } finally {
      await pbx.stop();
      await applyTenantConfig(parley, tenant, before);
    }
  });

  test("inbound from a trunk to a DID whose destination is a voicemail box: a flow action, the call handed to the media engine with what to run", async () => {
    const h = { "x-api-key": tenant.key };
    const box = await api("POST", `${parley.publicUrl}/v1/voicemails`, { name: "front desk" }, h);
    expect(box.status, JSON.stringify(box.body)).toBe(201);
    const did = `1629${String(Math.floor(Math.random() * 1e7)).padStart(7, "0")}`;
    const num = await api("POST", `${parley.publicUrl}/v1/numbers`, { e164: did, dest_kind: "voicemail", dest_id: box.body.data.id }, h);
    expect(num.status, JSON.stringify(num.body)).toBe(201);
    const r = await runSipp("invite-noauth.xml", edge(), ["-i", TRUNK_IP, "-s", did, "-key", "from_user", "14155559877", "-key", "domain", "127.0.0.1", "-d", "500", "-m", "1", "-timeout", "20s"]);
    expect(r.code, r.stderr + r.stdout.slice(-1500)).toBe(0);
    expect(r.statuses).toContain(200);
    expect(kamailio.log()).toMatch(new RegExp(`ctl /route rc=200 us=\\d+ action=flow to=${did}`));
    // The media engine was told what to run (no failover, no flow id for a voicemail box).
    expect(r.messages).toContain(`X-Taken: X-Dest: voicemail:${box.body.data.id}; ; \r\n`);
    const callId = r.callIds.at(-1)!;
    await eventually(async () => expect((await calls()).find((x) => x.sip_call_id === callId)).toMatchObject({ direction: "inbound", status: "completed", answered: 1, number_id: num.body.data.id }));
  });

  test("a caller withholding its identity (Privacy: id) is refused 433 by a number that refuses anonymous calls", async () => {
    const did = `1629${String(Math.floor(Math.random() * 1e7)).padStart(7, "0")}`;
    const num = await api("POST", `${parley.publicUrl}/v1/numbers`, { e164: did, dest_kind: "user", dest_id: tenant.users["1002"]!.userId, allow_anonymous: 0 }, { "x-api-key": tenant.key });
    expect(num.status, JSON.stringify(num.body)).toBe(201);
    const r = await runSipp("invite-withheld.xml", edge(), ["-i", TRUNK_IP, "-s", did, "-key", "from_user", "14155559876", "-key", "domain", "127.0.0.1", "-m", "1", "-timeout", "10s"]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.statuses.filter((c) => c >= 200)).toEqual([433]);
    const cdr = await eventually(async () => {
      const list = (await api("GET", `${parley.publicUrl}/v1/calls?limit=100`, undefined, { "x-api-key": tenant.key })).body.data as any[];
      const c = list.find((x) => x.number_id === num.body.data.id);
      expect(c).toMatchObject({ direction: "inbound", status: "rejected", sip_code: 433 });
      return c;
    });
    const steps = (await api("GET", `${parley.publicUrl}/v1/calls/${cdr.id}/trace`, undefined, { "x-api-key": tenant.key })).body.data.steps;
    expect(steps.map((s: { step: string }) => s.step)).toContain("anonymous");
  });

  test("with GEOIP2_DB the edge sends the caller's country: geo ACL rules refuse (403) or admit calls; without it they are skipped", async () => {
    // A country database of our own: the devices' address (sipp, 127.0.0.1) is in France, the trunk's in the US.
    const dir = mkdtempSync(join(tmpdir(), "parley-geo-"));
    const database = join(dir, "country.mmdb");
    writeFileSync(database, countryDatabase([{ cidr: "127.0.0.1/32", country: "FR" }, { cidr: `${TRUNK_IP}/32`, country: "US" }]));
    const geoEdge = await startKamailio({ controlPort: parley.controlPort, node: "edge-geo", defines: [`GEOIP2_DB="${database}"`] });
    try {
      const via = `127.0.0.1:${geoEdge.port}`;
      // Outbound: user 4001 may not call from France, user 4002 only from France.
      const geo = await createSipTenant(parley, { carrierPort, users: [{ username: "4001" }, { username: "4002" }] });
      await applyTenantConfig(parley, geo, {
        acl_rules: [
          { name: "not-from-france", rule_type: "geo_deny", value: "FR", scope_kind: "user", scope: "4001" },
          { name: "france-only", rule_type: "geo_allow", value: "FR", scope_kind: "user", scope: "4002" },
        ],
      });
      const traceOf = async (of: SipTenant, callId: string) => {
        const cdr = await eventually(async () => {
          const list = (await api("GET", `${parley.publicUrl}/v1/calls?limit=100`, undefined, { "x-api-key": of.key })).body.data as any[];
          const c = list.find((x) => x.sip_call_id === callId);
          expect(c).toBeDefined();
          return c;
        });
        const steps = (await api("GET", `${parley.publicUrl}/v1/calls/${cdr.id}/trace`, undefined, { "x-api-key": of.key })).body.data.steps as Array<{ step: string; result: string }>;
        return { cdr, acl: steps.filter((x) => x.step === "acl").map((x) => x.result) };
      };
      const denied = await invite("4001", geo.trunkNumber, "invite-refused.xml", [], via, geo);
      expect(denied.code, denied.stderr).toBe(0);
      expect(denied.statuses.at(-1)).toBe(403);
      const deniedCall = await traceOf(geo, denied.callIds.at(-1)!);
      expect(deniedCall.cdr).toMatchObject({ status: "rejected", sip_code: 403 });
      expect(deniedCall.acl).toEqual(["source country FR refused by not-from-france"]);
      const allowed = await invite("4002", geo.trunkNumber, "invite.xml", [], via, geo);
      expect(allowed.code, allowed.stderr).toBe(0);
      expect(allowed.statuses).toContain(200);
      expect((await traceOf(geo, allowed.callIds.at(-1)!)).acl).toEqual(["passed 1 rule(s)"]);
      // The same refused caller through the edge without a database: the rule cannot be applied.
      const unknown = await invite("4001", geo.trunkNumber, "invite.xml", [], edge(), geo);
      expect(unknown.code, unknown.stderr).toBe(0);
      expect((await traceOf(geo, unknown.callIds.at(-1)!)).acl).toEqual(["geo rules skipped: the edge sent no source_country", "passed 1 rule(s)"]);

      // Inbound: a DID that takes no calls from the US, called from the trunk's (American) address.
      const did = `1627${String(Math.floor(Math.random() * 1e7)).padStart(7, "0")}`;
      const num = await api("POST", `${parley.publicUrl}/v1/numbers`, { e164: did, dest_kind: "user", dest_id: tenant.users["1002"]!.userId }, { "x-api-key": tenant.key });
      expect(num.status, JSON.stringify(num.body)).toBe(201);
      await applyTenantConfig(parley, tenant, { acl_rules: [{ name: "no-us-callers", rule_type: "geo_deny", value: "US", scope_kind: "did", scope: did }] });
      const r = await runSipp("invite-noauth.xml", via, ["-i", TRUNK_IP, "-s", did, "-key", "from_user", "14155559876", "-key", "domain", "127.0.0.1", "-m", "1", "-timeout", "10s"]);
      // (This scenario does not expect a 403, so sipp leaves it unacknowledged and the edge sends it again.)
      expect([...new Set(r.statuses.filter((c) => c >= 200))]).toEqual([403]);
      const inbound = await traceOf(tenant, r.callIds.at(-1)!);
      expect(inbound.cdr).toMatchObject({ direction: "inbound", status: "rejected", sip_code: 403, number_id: num.body.data.id });
      expect(inbound.acl).toEqual(["source country US refused by no-us-callers"]);
    } finally {
      await applyTenantConfig(parley, tenant, { acl_rules: [] });
      await geoEdge.stop();
    }
  });

  test("over TCP (LISTEN_TCP): a phone registered on its connection is called over it, BYE included; a caller on TCP reaches a UDP carrier", async () => {
    const tcpEdge = await startEdgeOnFreePort((port) => ({ port, controlPort: parley.controlPort, node: "edge-tcp", defines: [`LISTEN_TCP=tcp:127.0.0.1:${port}`] }));
    const port = tcpEdge.port;
    let phone: Proc | undefined;
    try {
      const via = `127.0.0.1:${port}`;
      const { userId } = await addSipUser(parley, tenant, "1201");
      // The phone registers over TCP and stays up, its connection open; calls to it are answered there.
      // Its Contact names a port where nothing listens (a phone behind NAT): the INVITE and the BYE can
      // reach it only over the connection it registered on.
      const [unreachable] = freePorts(1) as [number];
      phone = startSipp("register-stay.xml", [
        via, "-t", "t1", "-s", "1201", "-au", "1201", "-ap", PASSWORD, "-key", "domain", tenant.domain, "-key", "contact_port", String(unreachable),
        "-d", "60000", "-oocsf", join(SCENARIOS, "uas-on-connection.xml"), "-m", "1", "-p", String(await freeUdpPort()), "-mp", String(nextMediaPort()),
      ]);
      await isRegistered("1201");
      expect(tcpEdge.log()).toMatch(/ctl \/presence\/event register rc=200/);
      // A caller on UDP to the TCP phone: the INVITE and the caller's BYE reach it over its connection.
      const toPhone = await invite("1001", "1201", "invite.xml", [], via);
      expect(toPhone.code, toPhone.stderr + toPhone.stdout.slice(-1500) + tcpEdge.log().slice(-3000)).toBe(0);
      expect(toPhone.statuses).toContain(200);
      const answered = await eventually(async () => {
        const c = (await calls()).find((x) => x.sip_call_id === toPhone.callIds.at(-1));
        expect(c).toMatchObject({ status: "completed", answered: 1, agent_id: userId });
        return c;
      });
      expect(answered.billsec).toBeGreaterThanOrEqual(0);
      // A caller on TCP to the carrier's UAS (UDP): the edge switches transports both ways.
      const fromTcp = await invite("1001", tenant.trunkNumber, "invite.xml", ["-t", "t1"], via);
      expect(fromTcp.code, fromTcp.stderr + tcpEdge.log().slice(-3000)).toBe(0);
      expect(fromTcp.statuses).toContain(200);
      await eventually(async () => expect((await calls()).find((x) => x.sip_call_id === fromTcp.callIds.at(-1))).toMatchObject({ status: "completed" }));
    } finally {
      await phone?.stop();
      await tcpEdge.stop();
    }
  });

  test("over TLS (LISTEN_TLS): a phone registers on its TLS connection and is called over it, BYE included", async () => {
    // The edge's certificate: self-signed for localhost, which the phone trusts.
    const dir = mkdtempSync(join(tmpdir(), "parley-tls-"));
    const [certFile, keyFile] = [join(dir, "cert.pem"), join(dir, "key.pem")];
    const made = Bun.spawnSync(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", keyFile, "-out", certFile, "-days", "1", "-subj", "/CN=localhost", "-addext", "subjectAltName=DNS:localhost"]);
    expect(made.exitCode, made.stderr.toString()).toBe(0);
    // The TLS port is a TCP one; the UDP port is chosen by startKamailio, which chooses again if it is
    // taken before Kamailio binds it (a port free for TCP may be in use for UDP: a CI run met one).
    const [tlsPort] = freePorts(1) as [number];
    const tlsEdge = await startKamailio({
      controlPort: parley.controlPort,
      node: "edge-tls",
      defines: [`LISTEN_TLS=tls:127.0.0.1:${tlsPort}`, `TLS_CERTIFICATE="${certFile}"`, `TLS_PRIVATE_KEY="${keyFile}"`],
    });
    let phone: ConnectionPhone | undefined;
    try {
      const { userId, deviceId } = await addSipUser(parley, tenant, "1301");
      // A device configured for TLS: its right password over UDP is refused.
      const patched = await api("PATCH", `${parley.publicUrl}/v1/devices/${deviceId}`, { transport: "tls" }, { "x-api-key": tenant.key });
      expect(patched.status, JSON.stringify(patched.body)).toBe(200);
      const overUdp = await runSipp("register.xml", `127.0.0.1:${tlsEdge.port}`, ["-s", "1301", "-au", "1301", "-ap", PASSWORD, "-key", "domain", tenant.domain, "-key", "contact_port", "5999", "-key", "expires", "300", "-m", "1", "-timeout", "5s"]);
      expect([...new Set(overUdp.statuses)]).toEqual([401, 403]);
      phone = await startConnectionPhone({ transport: "tls", port: tlsPort, ca: readFileSync(certFile, "utf8"), user: "1301", domain: tenant.domain, password: PASSWORD, contactPort: freePorts(1)[0]! });
      // A caller on UDP: the INVITE, and then the caller's BYE, reach the phone over its TLS connection.
      await registersAndTakesACall(phone, "1301", userId, `127.0.0.1:${tlsEdge.port}`, tlsEdge);
    } finally {
      phone?.close();
      await tlsEdge.stop();
    }
  });

  test("over IPv6: a phone behind a NAT (its Contact another host than its source) registers and is called through an edge listening on ::1, at the address it registered from, BYE included", async () => {
    const v6 = await startKamailio({ controlPort: parley.controlPort, node: "edge-v6", ipv6: true });
    const phonePort = await freeUdpPort();
    const { userId } = await addSipUser(parley, tenant, "1480");
    const dir = mkdtempSync(join(tmpdir(), "sipp-v6-"));
    // The phone's own view of itself: a name of its LAN in its Contact; the edge sees ::1.
    const registering = join(dir, "register-v6.xml");
    writeFileSync(registering, readFileSync(join(SCENARIOS, "register.xml"), "utf8").replaceAll("@[local_ip]:[contact_port]", "@phone-1480.lan:[contact_port]"));
    let phone: Proc | null = null;
    try {
      const via = `[::1]:${v6.port}`;
      // Registered from the port it then answers on, as a phone's one socket behind its NAT.
      const reg = await runSipp(registering, via, ["-i", "::1", "-p", String(phonePort), "-s", "1480", "-au", "1480", "-ap", PASSWORD, "-key", "domain", tenant.domain, "-key", "contact_port", String(phonePort), "-key", "expires", "300", "-m", "1", "-timeout", "15s"]);
      expect(reg.code, reg.stderr + v6.log().slice(-2000)).toBe(0);
      expect(v6.log()).toMatch(/ctl \/presence\/event register rc=200 /);
      phone = startSipp("uas.xml", ["-i", "::1", "-p", String(phonePort), "-mp", String(nextMediaPort()), "-m", "1"]);
      const call = await invite("1001", "1480", "invite.xml", ["-i", "::1"], via);
      expect(call.code, `${call.stderr}${call.messages.slice(-2000)}\n${v6.log().slice(-2500)}`).toBe(0);
      expect(call.statuses).toContain(200);
      expect(await exitOf(phone), phone.stderr() + phone.stdout().slice(-1500)).toBe(0);
      await eventually(async () => expect((await calls()).find((x) => x.sip_call_id === call.callIds.at(-1))).toMatchObject({ status: "completed", answered: 1, agent_id: userId }));
    } finally {
      await phone?.stop();
      await v6.stop();
    }
  });

  test("over WebSocket (WEBSOCKET): a browser-style phone registers on its WebSocket and is called over it; WEBSOCKET_ORIGIN refuses other pages", async () => {
    const origin = "https://softphone.example.com";
    const wsEdge = await startEdgeOnFreePort((port) => ({
      port,
      controlPort: parley.controlPort,
      node: "edge-ws",
      defines: [`LISTEN_TCP=tcp:127.0.0.1:${port}`, "WEBSOCKET", `WEBSOCKET_ORIGIN="${origin}"`],
    }));
    const port = wsEdge.port;
    let phone: ConnectionPhone | undefined;
    try {
      // Another page's origin (or none) gets no WebSocket.
      await expect(wsCarrier(port, "https://elsewhere.example.com")).rejects.toThrow();
      await expect(wsCarrier(port)).rejects.toThrow();
      expect(wsEdge.log()).toContain("refused: origin https://elsewhere.example.com");
      const { userId } = await addSipUser(parley, tenant, "1401");
      phone = await startConnectionPhone({ transport: "ws", port, origin, user: "1401", domain: tenant.domain, password: PASSWORD });
      // A caller on UDP: the INVITE and the caller's BYE reach the phone over its WebSocket (its
      // Contact's host is .invalid, as browsers write it).
      await registersAndTakesACall(phone, "1401", userId, `127.0.0.1:${port}`, wsEdge);
      // The edge sends to the WebSocket's own socket (no "ws:" socket name it cannot parse).
      expect(wsEdge.log()).not.toContain("bad protocol in ws:");
      // The browser goes away with its registration still valid: its WebSocket cannot be reopened.
      // The callee is unreachable (480, and so its call record), not a server error.
      phone.close();
      await Bun.sleep(300);
      const gone = await invite("1001", "1401", "invite-refused.xml", [], `127.0.0.1:${port}`);
      expect(gone.code, gone.stderr + wsEdge.log().slice(-2000)).toBe(0);
      expect(gone.statuses).toContain(480);
      expect(gone.statuses).not.toContain(500);
      await eventually(async () => expect((await calls()).find((x) => x.sip_call_id === gone.callIds.at(-1))).toMatchObject({ answered: 0, sip_code: 480 }));
    } finally {
      phone?.close();
      await wsEdge.stop();
    }
  });

  /**
   * An edge with RTPENGINE (and WEBSOCKET on its TCP socket) before a real rtpengine, and a Chromium
   * page with a fake microphone whose peers (window.rtc) carry their SDP over SIP through the test.
   */
  async function webrtcRig(run: (rig: { port: number; rtpengine: Proc; edge: Kamailio; page: Page; dir: string }) => Promise<void>): Promise<void> {
    const port = freePorts(1)[0]!;
    const ngPort = await freeUdpPort();
    const rtpengine = await startRtpengine(ngPort, 61000, 61998);
    const edge = await startKamailio({
      port,
      controlPort: parley.controlPort,
      node: "edge-webrtc",
      defines: [`LISTEN_TCP=tcp:127.0.0.1:${port}`, "WEBSOCKET", `RTPENGINE="udp:127.0.0.1:${ngPort}"`],
    });
    const pageServer = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => new Response(RTC_PAGE, { headers: { "content-type": "text/html" } }) });
    const browser = await chromium.launch({
      executablePath: CHROMIUM,
      // A fake microphone (a tone), no permission prompt, and ICE candidates on loopback (where rtpengine is).
      args: ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run", "--use-fake-device-for-media-stream", "--use-fake-ui-for-media-stream", "--allow-loopback-in-peer-connection"],
    });
    const dir = mkdtempSync(join(tmpdir(), "parley-webrtc-"));
    try {
      const page = await browser.newPage();
      await page.goto(`http://127.0.0.1:${pageServer.port}/`);
      await run({ port, rtpengine, edge, page, dir });
    } finally {
      await browser.close();
      pageServer.stop(true);
      await edge.stop();
      await rtpengine.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  }
  /** Audio packets the page's peer `name` has received. */
  const received = (page: Page, name: string): Promise<number> => page.evaluate(([n]) => (window as any).rtc.received(n), [name]);
  /** A media session deleted at rtpengine (a BYE, a failed call), as its log counts them. */
  const deletes = (rtpengine: Proc) => (rtpengine.stderr().match(/Received command 'delete'/g) ?? []).length;

  test.skipIf(!RUN_WEBRTC)("WebRTC (RTPENGINE): a browser on a WebSocket and an RTP phone hear each other through rtpengine, whoever calls or re-INVITEs", () =>
    webrtcRig(async ({ port, rtpengine, edge, page, dir }) => {
      const phonePort = await freeUdpPort(); // see deskPort below
      // The RTP phone: answers and echoes the media it gets; its messages are kept to read the SDP it saw.
      const rtpPhone = startSipp("uas.xml", ["-p", String(phonePort), "-mp", String(nextMediaPort()), "-rtp_echo", "-trace_msg", "-message_file", join(dir, "uas.log")]);
      let phone: ConnectionPhone | undefined;
      try {
        const { userId: browserUser } = await addSipUser(parley, tenant, "1701");
        await addSipUser(parley, tenant, "1702");
        expect((await register("1702", phonePort)).code).toBe(0);
        const offers: string[] = [];
        phone = await startConnectionPhone({
          transport: "ws",
          port,
          user: "1701",
          domain: tenant.domain,
          password: PASSWORD,
          answerOffer: async (offer, reinvite) => {
            offers.push(offer);
            return page.evaluate(([sdp, again]) => (window as any).rtc[again ? "reanswer" : "answer"]("in", sdp), [offer, reinvite] as const);
          },
        });
        expect(await phone.register()).toBe(200);
        await isRegistered("1701");

        // The browser calls the RTP phone: the phone is offered plain RTP, the browser gets DTLS-SRTP with ICE.
        const offer: string = await page.evaluate(() => (window as any).rtc.offer("out"));
        expect(offer).toContain("UDP/TLS/RTP/SAVPF");
        const placed = await phone.call("1702", offer);
        expect(placed.status).toBe(200);
        expect(placed.answer).toMatch(/^m=audio \d+ UDP\/TLS\/RTP\/SAVPF /m);
        expect(placed.answer).toMatch(/^a=fingerprint:/m);
        expect(placed.answer).toMatch(/^a=candidate:.* 127\.0\.0\.1 6\d{4} typ host/m);
        const seen = readFileSync(join(dir, "uas.log"), "utf8");
        const phoneOffer = seen.slice(seen.indexOf("INVITE sip:"));
        expect(phoneOffer).toMatch(/^m=audio 6\d{4} RTP\/AVP /m);
        expect(phoneOffer).not.toMatch(/fingerprint|ice-ufrag|SAVPF/);
        await page.evaluate(([sdp]) => (window as any).rtc.accept("out", sdp), [placed.answer]);
        // The browser's audio reaches the phone through rtpengine and the phone's echo comes back.
        const state = () => page.evaluate(() => `${(window as any).rtc.peers.out.connectionState} (ICE ${(window as any).rtc.peers.out.iceConnectionState})`);
        await eventually(async () => expect(await received(page, "out"), `${await state()}\n${rtpengine.stderr().slice(-3000)}`).toBeGreaterThan(25), 15_000);
        // The BYE ends the media session.
        expect(await placed.hangup()).toBe(200);
        await eventually(async () => expect(deletes(rtpengine)).toBe(1));

        // The RTP phone (a sipp caller echoing its media) calls the browser over the same edge, and
        // sends a re-INVITE halfway: the browser is offered DTLS-SRTP again, the phone must get plain
        // RTP in the 200 (its scenario checks), and the media go on.
        const inbound = invite("1702", "1701", "invite-reinvite.xml", ["-d", "5000", "-rtp_echo"], `127.0.0.1:${port}`);
        await eventually(async () => expect(offers.length).toBe(1), 10_000);
        expect(offers[0]).toMatch(/^m=audio \d+ UDP\/TLS\/RTP\/SAVPF /m);
        await eventually(async () => expect(await received(page, "in")).toBeGreaterThan(25), 15_000);
        await eventually(async () => expect(offers.length).toBe(2), 10_000);
        expect(offers[1]).toMatch(/^m=audio \d+ UDP\/TLS\/RTP\/SAVPF /m);
        expect(offers[1]).toMatch(/^a=fingerprint:/m);
        const before = await received(page, "in");
        await eventually(async () => expect(await received(page, "in")).toBeGreaterThan(before + 25), 4000);
        const r = await inbound;
        expect(r.code, r.stderr).toBe(0);
        await eventually(async () => expect(phone!.byes.length).toBe(1));
        await eventually(async () => expect(deletes(rtpengine)).toBe(2));

        // The browser, answering, re-INVITEs its caller (a hold, a new offer): its DTLS-SRTP offer
        // reaches the RTP caller as RTP/AVP (its scenario checks), the caller's plain answer comes back
        // as DTLS-SRTP, and the media go on.
        const reinvited = invite("1702", "1701", "invite-reinvited.xml", ["-d", "4000", "-rtp_echo"], `127.0.0.1:${port}`);
        await eventually(async () => expect(phone!.answered.length).toBe(2), 10_000);
        await eventually(async () => expect(await received(page, "in")).toBeGreaterThan(25), 15_000);
        const reoffer: string = await page.evaluate(() => (window as any).rtc.reoffer("in"));
        const re = await phone.reinvite(phone.answered[1]!, reoffer);
        expect(re.status).toBe(200);
        expect(re.answer).toMatch(/^m=audio \d+ UDP\/TLS\/RTP\/SAVPF /m);
        expect(re.answer).toMatch(/^a=fingerprint:/m);
        await page.evaluate(([sdp]) => (window as any).rtc.accept("in", sdp), [re.answer]);
        const heard = await received(page, "in");
        await eventually(async () => expect(await received(page, "in")).toBeGreaterThan(heard + 25), 4000);
        const r2 = await reinvited;
        expect(r2.code, r2.stderr).toBe(0);
        await eventually(async () => expect(deletes(rtpengine)).toBe(3));
        await eventually(async () => expect((await calls()).filter((c) => c.user_id === browserUser || c.agent_id === browserUser).length).toBeGreaterThanOrEqual(2));
        expect(edge.log()).not.toMatch(/rtpengine refused/);
      } finally {
        phone?.close();
        await rtpPhone.stop();
      }
    }));

  test.skipIf(!RUN_WEBRTC)("WebRTC (RTPENGINE): a forked call offers each branch its own kind of media (a browser and a desk phone of one user ring together); a failed call's media session ends with it; without the relay, 503", () =>
    webrtcRig(async ({ port, rtpengine, edge, page, dir }) => {
      // 1601 calls from a browser; 1602 has a browser and a desk phone (busy: 486). The desk phone's
      // branch is offered plain RTP, the browser's DTLS-SRTP, in sessions of their own: the browsers
      // then hear each other through rtpengine.
      // Free for UDP (sipp's): a port free for TCP may be a UDP port in use, and the desk phone then
      // never answers (seen once in CI: its call got 408 instead of 486).
      const deskPort = await freeUdpPort();
      const desk = startSipp("uas-busy.xml", ["-p", String(deskPort), "-trace_msg", "-message_file", join(dir, "desk.log")]);
      const phones: ConnectionPhone[] = [];
      try {
        await addSipUser(parley, tenant, "1601");
        await addSipUser(parley, tenant, "1602");
        expect((await register("1602", deskPort)).code).toBe(0);
        const offers: string[] = [];
        const caller = await startConnectionPhone({ transport: "ws", port, user: "1601", domain: tenant.domain, password: PASSWORD });
        phones.push(caller);
        const callee = await startConnectionPhone({
          transport: "ws",
          port,
          user: "1602",
          domain: tenant.domain,
          password: PASSWORD,
          answerOffer: async (offer) => {
            offers.push(offer);
            return page.evaluate(([sdp]) => (window as any).rtc.answer("callee", sdp), [offer]);
          },
        });
        phones.push(callee);
        expect(await caller.register()).toBe(200);
        expect(await callee.register()).toBe(200);
        await eventually(async () => {
          const roster = await api("GET", `${parley.controlUrl}/presence/users?accountId=${tenant.accountId}`);
          expect(roster.body.data.find((u: any) => u.extension === "1602")).toMatchObject({ registered: 1, contacts: 2 });
        }, 10_000);

        // A call every branch of which fails (1603's one device is the busy desk phone): its media
        // session ends with it.
        await addSipUser(parley, tenant, "1603");
        expect((await register("1603", deskPort)).code).toBe(0);
        const refused = await caller.call("1603", await page.evaluate(() => (window as any).rtc.offer("refused")));
        expect(refused.status).toBe(486);
        await eventually(async () => expect(deletes(rtpengine)).toBe(1));
        // The same from an RTP caller to a browser that declines (488): the branch's session ends too.
        await addSipUser(parley, tenant, "1604");
        const declining = await startConnectionPhone({
          transport: "ws", port, user: "1604", domain: tenant.domain, password: PASSWORD,
          answerOffer: async () => {
            throw new Error("declined");
          },
        });
        phones.push(declining);
        expect(await declining.register()).toBe(200);
        await isRegistered("1604");
        const declined = await invite("1603", "1604", "invite.xml", [], `127.0.0.1:${port}`);
        expect(declined.statuses).toContain(488);
        await eventually(async () => expect(deletes(rtpengine)).toBe(2));

        const offer: string = await page.evaluate(() => (window as any).rtc.offer("caller"));
        const placed = await caller.call("1602", offer);
        expect(placed.status).toBe(200);
        expect(placed.answer).toMatch(/^m=audio \d+ UDP\/TLS\/RTP\/SAVPF /m);
        // Each branch got its own kind: the desk phone plain RTP, the browser DTLS-SRTP.
        const deskSaw = readFileSync(join(dir, "desk.log"), "utf8");
        const deskOffer = deskSaw.slice(deskSaw.lastIndexOf("INVITE sip:"));
        expect(deskOffer).toMatch(/^m=audio 6\d{4} RTP\/AVP /m);
        expect(deskOffer).not.toMatch(/fingerprint|ice-ufrag|SAVPF/);
        expect(offers).toHaveLength(1);
        expect(offers[0]).toMatch(/^m=audio 6\d{4} UDP\/TLS\/RTP\/SAVPF /m);
        await page.evaluate(([sdp]) => (window as any).rtc.accept("caller", sdp), [placed.answer]);
        // Both browsers hear each other's microphone.
        await eventually(async () => {
          expect(await received(page, "caller")).toBeGreaterThan(25);
          expect(await received(page, "callee")).toBeGreaterThan(25);
        }, 15_000);
        expect(await placed.hangup()).toBe(200);
        await eventually(async () => expect(callee.byes).toHaveLength(1));
        await eventually(async () => expect(deletes(rtpengine)).toBe(3));
        expect(edge.log()).not.toMatch(/rtpengine refused/);

        // The relay gone: a call that needs it gets 503 (its branch dropped), recorded so.
        await rtpengine.stop();
        const unrelayed = await caller.call("1603", await page.evaluate(() => (window as any).rtc.offer("unrelayed")));
        expect(unrelayed.status).toBe(503);
        expect(edge.log()).toMatch(/rtpengine refused the media of the branch/);
        await eventually(async () => expect((await calls()).find((c) => c.sip_call_id === unrelayed.callId)).toMatchObject({ status: "failed", sip_code: 503 }));
      } finally {
        for (const p of phones) p.close();
        await desk.stop();
      }
    }));

  test("flood detection (pike) spares a trunk's steady calls and its dialogs, and still bans an address flooding the edge", async () => {
    const h = { "x-api-key": tenant.key };
    const box = await api("POST", `${parley.publicUrl}/v1/voicemails`, { name: "pike test" }, h);
    const did = `1630${String(Math.floor(Math.random() * 1e7)).padStart(7, "0")}`;
    expect((await api("POST", `${parley.publicUrl}/v1/numbers`, { e164: did, dest_kind: "voicemail", dest_id: box.body.data.id }, h)).status).toBe(201);
    // An edge that bans past 3 requests in 2 s: 8 calls from the trunk are 24 requests in about 2 s.
    const strict = await startKamailio({ controlPort: parley.controlPort, node: "edge-pike", defines: ["PIKE_DENSITY=3"] });
    try {
      const r = await runSipp("invite-noauth.xml", `127.0.0.1:${strict.port}`, ["-i", TRUNK_IP, "-s", did, "-key", "from_user", "14155559878", "-key", "domain", "127.0.0.1", "-d", "200", "-m", "8", "-r", "8", "-l", "8", "-timeout", "20s"]);
      expect(r.code, r.stderr + strict.log().slice(-2000)).toBe(0);
      expect(Number(r.stats["SuccessfulCall(C)"]), JSON.stringify(r.stats)).toBe(8);
      expect(strict.log()).not.toMatch(/ban 127\.0\.0\.3/);
      // A stranger's burst of OPTIONS is still a flood.
      const sock = await Bun.udpSocket({ hostname: STRANGER_IP, port: 0, socket: { data() {}, error() {} } });
      try {
        for (let i = 0; i < 30; i++) {
          const branch = `z9hG4bK${crypto.randomUUID().slice(0, 12)}`;
          sock.send(`OPTIONS sip:127.0.0.1:${strict.port} SIP/2.0\r\nVia: SIP/2.0/UDP ${STRANGER_IP}:${sock.port};branch=${branch}\r\nMax-Forwards: 70\r\nFrom: <sip:flood@${STRANGER_IP}>;tag=f${i}\r\nTo: <sip:127.0.0.1:${strict.port}>\r\nCall-ID: ${branch}@flood\r\nCSeq: 1 OPTIONS\r\nContent-Length: 0\r\n\r\n`, strict.port, "127.0.0.1");
        }
        await eventually(async () => expect(strict.log()).toMatch(new RegExp(`ban ${escapeRe(STRANGER_IP)}: flood \\(pike\\)`)));
      } finally {
        sock.close();
      }
    } finally {
      await strict.stop();
    }
  });

  test("a call whose BYE never comes is ended by the edge MAX_CALL_SEC after its answer, however often its phones refresh it: a BYE to each side, recorded answered and ended by the timer, its slots given back", async () => {
    const callee = "1891";
    const { userId } = await addSipUser(parley, tenant, callee);
    // An edge whose calls last at most 3 s from their answer (4 h by default).
    const brief = await startKamailio({ controlPort: parley.controlPort, node: "edge-maxcall", defines: ["MAX_CALL_SEC=3"] });
    const [port] = freePorts(1) as [number];
    // The callee answers and waits for a BYE; so does the caller, which never hangs up but sends an
    // INFO in the dialog each second (invite-refreshing.xml): requests in the dialog do not put the
    // end off (the scenario fails at its -timeout if the BYE never comes). The INFOs carry credentials,
    // which the callee must not get (uas-info.xml fails the call if it does).
    const uas = startSipp("uas-info.xml", ["-p", String(port), "-mp", String(nextMediaPort()), "-m", "1"]);
    await Bun.sleep(200);
    try {
      const via = `127.0.0.1:${brief.port}`;
      const reg = await runSipp("register.xml", via, ["-s", callee, "-au", callee, "-ap", PASSWORD, "-key", "domain", tenant.domain, "-key", "contact_port", String(port), "-key", "expires", "300", "-m", "1", "-timeout", "15s"]);
      expect(reg.code, reg.stderr).toBe(0);
      const r = await invite("1001", callee, "invite-refreshing.xml", ["-timeout", "12s"], via);
      expect(r.code, r.stderr + r.messages.slice(-1500) + brief.log().slice(-2000)).toBe(0);
      // The caller sent its INFOs (one a second) before the end came.
      expect([...r.messages.matchAll(/^INFO sip:/gm)].length, r.messages.slice(-3000)).toBeGreaterThanOrEqual(2);
      // The callee got its BYE too: its scenario (one call, ending with the BYE's 200) finished. The
      // edge's BYE is a transaction of its own, retransmitted (0.5, 1, 2, 4 s…) if a loaded machine
      // drops it: seen twice in CI with 5 s here.
      expect(await exitOf(uas, 15_000), `${uas.stderr()}${uas.stdout().slice(-2000)}\n${brief.log().slice(-3000)}`).toBe(0);
      const callId = r.callIds.at(-1)!;
      const cdr = await eventually(async () => {
        const c = (await calls()).find((x) => x.sip_call_id === callId);
        expect(c, `${JSON.stringify(c)}\n${brief.log().slice(-4000)}`).toMatchObject({ answered: 1, hangup_cause: "RECOVERY_ON_TIMER_EXPIRE" });
        return c;
      }, 10_000);
      expect(cdr.billsec).toBeGreaterThanOrEqual(2);
      // Reported once, by the edge's timeout route (not again by the end of the dialog).
      const trace = await api("GET", `${parley.publicUrl}/v1/calls/${cdr.id}/trace`, undefined, { "x-api-key": tenant.key });
      expect(trace.body.data.steps.filter((x: any) => x.step === "dialog" && x.result.startsWith("terminated"))).toHaveLength(1);
      expect(brief.log()).not.toMatch(/ERROR/);
      await eventually(async () => expect((await cac()).data.cac.filter((c: any) => c.id === userId)).toEqual([]));
    } finally {
      await uas.stop();
      await brief.stop();
    }
  });

  test("a call without credentials from an address no trunk knows is challenged (407)", async () => {
    const r = await runSipp("invite-noauth.xml", edge(), ["-i", STRANGER_IP, "-s", tenant.trunkNumber, "-key", "from_user", "14155559876", "-key", "domain", "127.0.0.1", "-m", "1", "-timeout", "10s"]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.statuses.filter((c) => c >= 200)).toEqual([407]);
    expect(r.statuses).not.toContain(200);
  });

  test("failed digests ban the address; the ban reaches /security/bans; allow-listing lifts it at the edge", async () => {
    // From 127.0.0.2, so the other tests' address stays unbanned.
    for (let i = 0; i < 3; i++) {
      const r = await runSipp("register.xml", edge(), ["-i", "127.0.0.2", "-s", "1001", "-au", "1001", "-ap", "bad-password", "-key", "domain", tenant.domain, "-key", "contact_port", "5999", "-key", "expires", "300", "-m", "1", "-timeout", "5s"]);
      expect(r.code).not.toBe(0);
    }
    const bans = await eventually(async () => {
      const r = await api("GET", `${parley.controlUrl}/security/bans?q=127.0.0.2&status=active`);
      expect(r.body.data.length).toBe(1);
      return r.body.data;
    }, 8000);
    expect(bans[0]).toMatchObject({ ip: "127.0.0.2", node: "edge-e2e", reason: "auth" });
    // Banned: silence.
    const silent = await runSipp("register.xml", edge(), ["-i", "127.0.0.2", "-s", "1001", "-au", "1001", "-ap", PASSWORD, "-key", "domain", tenant.domain, "-key", "contact_port", "5999", "-key", "expires", "300", "-m", "1", "-timeout", "3s"]);
    expect(silent.statuses).toEqual([]);
    expect((await api("POST", `${parley.controlUrl}/security/allow`, { address: "127.0.0.2", note: "e2e" })).status).toBe(201);
    await eventually(async () => expect(kamailio.log()).toContain("ban lifted by the control plane: 127.0.0.2"), 8000);
    const after = await runSipp("register.xml", edge(), ["-i", "127.0.0.2", "-s", "1001", "-au", "1001", "-ap", PASSWORD, "-key", "domain", tenant.domain, "-key", "contact_port", "5999", "-key", "expires", "300", "-m", "1", "-timeout", "5s"]);
    expect(after.code, after.stderr).toBe(0);
    // The report's reply gave the edge the allowlist: more failed digests from the address are refused,
    // never banned again (before, it was banned until the next report lifted it).
    const bansBefore = kamailio.log().split("ban 127.0.0.2:").length;
    for (let i = 0; i < 3; i++) {
      const r = await runSipp("register.xml", edge(), ["-i", "127.0.0.2", "-s", "1001", "-au", "1001", "-ap", "bad-password", "-key", "domain", tenant.domain, "-key", "contact_port", "5999", "-key", "expires", "300", "-m", "1", "-timeout", "5s"]);
      expect(r.code).not.toBe(0);
    }
    const still = await runSipp("register.xml", edge(), ["-i", "127.0.0.2", "-s", "1001", "-au", "1001", "-ap", PASSWORD, "-key", "domain", tenant.domain, "-key", "contact_port", "5999", "-key", "expires", "300", "-m", "1", "-timeout", "5s"]);
    expect(still.code, still.stderr).toBe(0);
    expect(kamailio.log().split("ban 127.0.0.2:").length).toBe(bansBefore);
    await api("DELETE", `${parley.controlUrl}/security/allow/127.0.0.2`);
  });

  test("an INVITE whose display name is not UTF-8 is routed without it; one whose Call-ID is not gets 400", async () => {
    const bad = Buffer.concat([Buffer.from("Caf"), Buffer.from([0xc3])]);
    // To an extension nobody has: the router's own answer shows the INVITE reached it.
    const named = await handInvite(kamailio.port, tenant.domain, "1001", PASSWORD, "7999", { displayName: bad });
    expect(named.status).not.toBe(400);
    await eventually(async () => expect(kamailio.log()).toMatch(new RegExp(`ctl /route rc=200 [^\n]* call=${escapeRe(named.callId)} [^\n]*auth=1`)));
    // (A From or To URI with such bytes is refused earlier, by the edge's sanity checks.)
    const tag = crypto.randomUUID();
    const broken = await handInvite(kamailio.port, tenant.domain, "1001", PASSWORD, "7999", { callId: Buffer.concat([Buffer.from(tag), Buffer.from([0xff]), Buffer.from("@hand")]) });
    expect(broken.status).toBe(400);
    expect(kamailio.log()).not.toMatch(new RegExp(`ctl /route [^\n]*call=${tag}`));
    // The edge's log reaches us through a pipe, possibly after its reply.
    await eventually(async () => expect(kamailio.log()).toMatch(/INVITE from 127\.0\.0\.1 refused: From, To or Call-ID is not UTF-8/));
  });

  test("a /route the edge stopped waiting for (503 to the caller) is ended as not placed, and its CAC slot given back", async () => {
    // From here the next INVITE without credentials is challenged by the edge itself (its challenge
    // cache), so the only control call of the call below is its /route with the digest. From an address
    // of this test's own: an entry another test left for 127.0.0.1 would not be renewed by this call (the
    // edge answers it alone) and could expire before the next.
    const from = ["-i", "127.0.0.6"];
    expect((await invite("1003", tenant.dnc, "invite-refused.xml", from)).code).toBe(0);
    // Parley frozen: the edge's /route times out (HTTP_TIMEOUT, 2 s), it answers the caller 503 and closes
    // the connection. Thawed, Parley reads the request, admits the call (its user's slot), and finds
    // the edge gone.
    const r = await whileParleyFrozen(() => invite("1003", tenant.trunkNumber, "invite-refused.xml", from));
    expect(r.code, r.stderr).toBe(0);
    expect(r.statuses.at(-1)).toBe(503);
    expect(kamailio.log()).toMatch(new RegExp(`ctl /route rc=28 [^\n]*call=${escapeRe(r.callIds.at(-1)!)}`));
    // Ten seconds later (nobody asked for the reply again) the call is ended as the caller saw it.
    const cdr = await eventually(async () => {
      const c = (await calls()).find((x) => x.sip_call_id === r.callIds.at(-1));
      expect(c).toMatchObject({ status: "failed", sip_code: 503, hangup_cause: "NORMAL_TEMPORARY_FAILURE", billsec: 0 });
      return c;
    }, 30_000);
    const trace = await api("GET", `${parley.publicUrl}/v1/calls/${cdr.id}/trace`, undefined, { "x-api-key": tenant.key });
    expect(trace.body.data.steps.map((s: { step: string }) => s.step)).toEqual(expect.arrayContaining(["cac", "edge", "dialog"]));
    await eventually(async () => expect((await cac()).data.cac).toEqual([]));
  });

  test("while the control plane is slow, a request's retransmissions do not hold the edge's receivers: other requests are answered at once", async () => {
    // One UDP receiver. The control calls are made outside the request's transaction: before, they
    // ran under its reply lock, and each retransmission waited for that lock in a receiver.
    const single = await startKamailio({ controlPort: parley.controlPort, node: "edge-one-receiver", children: 1, defines: ["SIP_QUEUE_MAX=3"] });
    try {
      await whileParleyFrozen(async (thaw) => {
        // A REGISTER waiting on /auth, retransmitted every 500 ms by the phone.
        const registering = register1002(single.port, 1);
        await Bun.sleep(1100);
        // Answered within the ping's 500 ms while /auth still waits (HTTP_TIMEOUT, 2 s), not after it.
        expect(await sipOptionsPing(single.port)).toBe(true);
        // Five more REGISTERs wait on the control plane side by side, each in a worker of its own: none
        // waits for a worker (the overload guard, SIP_QUEUE_MAX 3 here, would log it). Kamailio sends
        // async_task_data to its default worker group, which must be the SIP workers, not one worker.
        const five = register1002(single.port, 5);
        await Bun.sleep(400);
        thaw();
        await registering;
        expect((await five).code, single.log().slice(-2000)).toBe(0);
      });
      expect(single.log()).not.toMatch(/overload: /);
    } finally {
      await single.stop();
    }
  });

  test("a caller that hangs up while its call is routed gets 487, and the call is recorded as cancelled, its CAC slot given back", async () => {
    // An address of this test's own, challenged by the edge itself from here (see above), so the
    // call's one control call is its /route with the digest.
    const from = ["-i", "127.0.0.8"];
    expect((await invite("1003", tenant.dnc, "invite-refused.xml", from)).code).toBe(0);
    // Parley frozen for a second (under HTTP_TIMEOUT): the caller's CANCEL comes while /route waits.
    const r = await whileParleyFrozen(async (thaw) => {
      const cancelled = invite("1003", tenant.trunkNumber, "invite-cancel.xml", from);
      await Bun.sleep(1200);
      thaw();
      return cancelled;
    });
    expect(r.code, r.stderr + r.messages.slice(-2000)).toBe(0);
    expect(r.statuses).toContain(487);
    expect(r.statuses).not.toContain(500);
    await eventually(async () => {
      const c = (await calls()).find((x) => x.sip_call_id === r.callIds.at(-1));
      expect(c).toMatchObject({ answered: 0, sip_code: 487, hangup_cause: "ORIGINATOR_CANCEL", billsec: 0 });
    }, 15_000);
    await eventually(async () => expect((await cac()).data.cac).toEqual([]));
  });

  // Last of this group: the restart empties in-process live state (PGlite + memory), registrations included.
  test("with the control plane down, a call's end waits at the edge and is recorded once it answers again, at the time it happened", async () => {
    const before = new Set((await calls()).map((c) => c.id));
    const held = invite("1001", tenant.trunkNumber, "invite.xml", ["-d", "2500"]);
    const answered = await eventually(async () => {
      const c = (await calls()).find((x) => !before.has(x.id) && x.status === "answered");
      expect(c).toBeDefined();
      return c!;
    }, 5000);
    const refusedBefore = (kamailio.log().match(/ctl \/presence\/events rc=\d+ .*not taken \(try 1\), kept/g) ?? []).length;
    let hungUpBy = 0;
    await parley.restart(async () => {
      // The call ends (BYE through the edge) while nothing answers it: the end event is kept and retried.
      const done = await held;
      hungUpBy = Date.now();
      expect(done.code, done.stderr).toBe(0);
      await eventually(async () => {
        expect((kamailio.log().match(/ctl \/presence\/events rc=\d+ .*not taken \(try 1\), kept/g) ?? []).length).toBeGreaterThan(refusedBefore);
      }, 8000);
    });
    const cdr = await eventually(async () => {
      const c = (await calls()).find((x) => x.id === answered.id);
      expect(c).toMatchObject({ status: "completed", hangup_cause: "NORMAL_CLEARING" });
      return c;
    }, 15000);
    expect(cdr.billsec).toBeGreaterThanOrEqual(2);
    // The end is the edge's time of the BYE (the event says when it happened), not when the event
    // was finally taken after the restart: the call was over before sipp returned.
    const trace = await api("GET", `${parley.publicUrl}/v1/calls/${answered.id}/trace`, undefined, { "x-api-key": tenant.key });
    expect(trace.status).toBe(200);
    const end = trace.body.data.steps.find((s: { step: string; result: string }) => s.step === "dialog" && s.result.startsWith("terminated"));
    expect(end, JSON.stringify(trace.body.data)).toBeDefined();
    expect(end.at).toBeLessThanOrEqual(hungUpBy);
    expect(cdr.ended_at).toBeLessThanOrEqual(Math.ceil(hungUpBy / 1000));
    await eventually(async () => expect((await cac()).data.cac).toEqual([]));
  });
});

/**
 * Two Parley instances (same PostgreSQL + Redis) behind one Kamailio with CONTROL_CON and CONTROL_CON2:
 * each control call goes to one instance by a hash of its Call-ID, and to the other when that one is down.
 */
describe.skipIf(!RUN || !stores.databaseUrl)(`two Parley instances behind one Kamailio [${storeKind}]`, () => {
  let parley2: Parley;
  let edge2: Kamailio;

  beforeAll(async () => {
    parley2 = await startParley(stores);
    // The scale-out edge also spreads dialog events over four queues (each call's in one, in order).
    edge2 = await startKamailio({ controlPort: parley.controlPort, control2Port: parley2.controlPort, node: "edge-e2e-2", defines: ["EVENT_SHARDS=4"] });
    // A user only this edge registers, so its one contact can only come from there.
    await addSipUser(parley, tenant, "2001");
  }, 180_000);

  afterAll(async () => {
    if (process.env.SIP_E2E_LOG && edge2) await Bun.write(`${process.env.SIP_E2E_LOG}.2`, edge2.log());
    for (const p of [edge2, parley2]) await p?.stop();
  });

  const target = () => `127.0.0.1:${edge2.port}`;
  /** The connection (ctl: the first instance, ctl2: the second) that answered `what` for a Call-ID. */
  const via = (callId: string | undefined, what: string) =>
    callId ? new RegExp(`ctl ${escapeRe(what)} rc=200 .*call=${escapeRe(callId)} via=(ctl2?)\\b`).exec(edge2.log())?.[1] : undefined;
  const register2 = (user: string) =>
    runSipp("register.xml", target(), ["-s", user, "-au", user, "-ap", PASSWORD, "-key", "domain", tenant.domain, "-key", "contact_port", String(devicePort), "-key", "expires", "300", "-m", "1", "-timeout", "15s"]);
  const invite2 = (from: string, to: string, scenario = "invite.xml", extra: string[] = []) =>
    runSipp(scenario, target(), ["-s", to, "-au", from, "-ap", PASSWORD, "-key", "from_user", from, "-key", "domain", tenant.domain, ...(extra.includes("-d") ? [] : ["-d", "300"]), "-m", "1", "-timeout", "20s", ...extra]);

  test("registered through one instance, the call routed by the other finds the contact", async () => {
    const reg = await register2("2001");
    expect(reg.code, reg.stderr).toBe(0);
    const registeredVia = via(reg.callIds[0], "/presence/event register");
    expect(registeredVia).toBeOneOf(["ctl", "ctl2"]);
    // The Call-ID hash picks the instance: call until one is routed by the other (1/2 per call).
    const seen: string[] = [];
    for (let i = 0; i < 12 && !seen.some((v) => v !== registeredVia); i++) {
      const r = await invite2("1001", "2001");
      expect(r.code, r.stderr).toBe(0);
      expect(r.statuses).toContain(200);
      seen.push(via(r.callIds[0], "/route") ?? "none");
    }
    expect(seen.filter((v) => v !== registeredVia && v !== "none").length).toBe(1);
  });

  test("a CAC limit holds across both instances; the held call's CDR ends completed", async () => {
    const before = new Set((await calls()).map((c) => c.id));
    const first = invite2("1003", tenant.trunkNumber, "invite.xml", ["-d", "12000"]);
    // The first call is up (answered, holding its slots) before any second one is tried: a counter left
    // by an earlier test must not let the loop start early.
    await eventually(async () => expect((await calls()).some((c) => !before.has(c.id) && c.status === "answered")).toBe(true), 4000);
    const seen = new Set<string>();
    // The Call-ID hash picks the instance; random Call-IDs make each try an independent coin toss
    // (sipp's default embeds its process id, and consecutive ones can hash alike).
    for (let i = 0; i < 16 && seen.size < 2; i++) {
      const second = await invite2("1003", tenant.trunkNumber, "invite-refused.xml", ["-cid_str", `cac-${crypto.randomUUID()}-%u@%s`]);
      expect(second.code, second.stderr).toBe(0);
      expect(second.statuses.at(-1)).toBeOneOf([486, 503]);
      seen.add(via(second.callIds[0], "/route") ?? "none");
    }
    // Refused by both instances: the counter is shared (Redis), not per process.
    expect([...seen].sort()).toEqual(["ctl", "ctl2"]);
    const done = await first;
    expect(done.code, done.stderr).toBe(0);
    const cdr = await eventually(async () => {
      const list = (await api("GET", `${parley2.publicUrl}/v1/calls?limit=100`, undefined, { "x-api-key": tenant.key })).body.data as any[];
      const c = list.find((x) => x.sip_call_id === done.callIds[0]);
      expect(c).toMatchObject({ status: "completed", hangup_cause: "NORMAL_CLEARING" });
      return c;
    });
    expect(cdr.billsec).toBeGreaterThan(0);
    await eventually(async () => expect((await cac()).data.cac).toEqual([]));
  });

  test("failover: with one instance down, registrations and calls still go through the other", async () => {
    await parley2.stop();
    const reg = await register2("2001");
    expect(reg.code, reg.stderr).toBe(0);
    let retried = 0;
    for (let i = 0; i < 12 && retried === 0; i++) {
      const r = await invite2("1001", "2001");
      expect(r.code, r.stderr).toBe(0);
      expect(r.statuses).toContain(200);
      expect(via(r.callIds[0], "/route")).toBe("ctl");
      if (new RegExp(`ctl /route rc=\\d+ via=ctl2 key=${escapeRe(r.callIds[0]!)}: connection failed`).test(edge2.log())) retried++;
    }
    // At least one call hashed to the dead instance and was retried on the live one.
    expect(retried).toBe(1);
  });
});

/**
 * Overload at the edge: one SIP worker, at most two requests waiting for it, and a control plane that
 * takes 1.5 s to answer. The INVITEs beyond those are refused at once with 503 + Retry-After instead
 * of blocking a UDP receiver; once the queue drains, the next INVITE is taken again.
 */
describe.skipIf(!RUN)("overload at the edge", () => {
  let slow: ReturnType<typeof Bun.serve>;
  let edge: Kamailio;
  let routed = 0;

  beforeAll(async () => {
    slow = Bun.serve({
      port: 0,
      hostname: "127.0.0.1",
      async fetch(req) {
        if (new URL(req.url).pathname === "/route") routed++;
        await Bun.sleep(1500);
        return new Response(JSON.stringify({ error: { code: "unavailable", message: "slow on purpose" } }), { status: 500 });
      },
    });
    edge = await startKamailio({ controlPort: slow.port!, node: "edge-overload", defines: ["SIP_WORKERS=1", "SIP_QUEUE_MAX=2"] });
  }, 60_000);

  afterAll(async () => {
    await edge?.stop();
    slow?.stop(true);
  });

  test("INVITEs beyond the waiting limit get 503 Service Unavailable with Retry-After at once; the edge takes calls again after", async () => {
    const burst = await inviteBurst(edge.port, 6);
    const refused = burst.filter((r) => / 503 Service Unavailable\r\n/.test(r.reply));
    const taken = burst.filter((r) => / 503 Routing Unavailable\r\n/.test(r.reply));
    // Two waiting, and a third if the worker picked up the first before the burst was through; the
    // rest refused.
    expect(taken.length).toBeGreaterThanOrEqual(2);
    expect(taken.length).toBeLessThanOrEqual(3);
    expect(taken.length + refused.length).toBe(6);
    for (const r of refused) {
      expect(r.reply).toMatch(/\r\nRetry-After: 5\r\n/i);
      expect(r.ms).toBeLessThan(1000); // not held behind the slow control plane
    }
    expect(routed).toBe(taken.length);
    expect(edge.log()).toMatch(/overload: 2 requests waiting for a SIP worker, INVITE refused with 503/);
    // The count of waiting requests went back to zero: a lone INVITE is taken again.
    const [again] = await inviteBurst(edge.port, 1);
    expect(again!.reply).toMatch(/ 503 Routing Unavailable\r\n/);
  }, 30_000);
});

/** Sends `n` INVITEs without credentials at once; each one's final reply and how long it took. */
async function inviteBurst(port: number, n: number): Promise<Array<{ reply: string; ms: number }>> {
  const finals = new Map<string, { reply: string; ms: number }>();
  const sent = new Map<string, number>();
  const sock = await Bun.udpSocket({
    hostname: "127.0.0.1",
    port: 0,
    socket: {
      data(_s, buf) {
        const reply = Buffer.from(buf).toString();
        const callId = /\r\nCall-ID: *([^\r]+)/i.exec(reply)?.[1];
        if (callId && !/^SIP\/2\.0 1\d\d/.test(reply) && !finals.has(callId)) finals.set(callId, { reply, ms: performance.now() - sent.get(callId)! });
      },
      error() {},
    },
  });
  try {
    for (let i = 0; i < n; i++) {
      const callId = `${crypto.randomUUID()}@overload`;
      const msg = [
        `INVITE sip:2000@127.0.0.1 SIP/2.0`,
        `Via: SIP/2.0/UDP 127.0.0.1:${sock.port};branch=z9hG4bK${crypto.randomUUID().slice(0, 12)};rport`,
        "Max-Forwards: 70",
        `From: <sip:1000@127.0.0.1>;tag=ov${i}`,
        "To: <sip:2000@127.0.0.1>",
        `Call-ID: ${callId}`,
        "CSeq: 1 INVITE",
        `Contact: <sip:1000@127.0.0.1:${sock.port}>`,
        "Content-Length: 0",
        "",
        "",
      ].join("\r\n");
      sent.set(callId, performance.now());
      sock.send(msg, port, "127.0.0.1");
    }
    const deadline = Date.now() + 15_000;
    while (finals.size < n && Date.now() < deadline) await Bun.sleep(50);
    return [...sent.keys()].map((id) => finals.get(id) ?? { reply: "no final reply", ms: Infinity });
  } finally {
    sock.close();
  }
}

/** A SIP client by hand over UDP: raw requests out, each request's final reply back. */
/** Two distinct UDP ports free now (sipp listens on UDP). */
/** `p`'s exit code once it exits, or "still running" after `ms`. */
function exitOf(p: Proc, ms = 10_000): Promise<number | "still running"> {
  return Promise.race([p.proc.exited, Bun.sleep(ms).then(() => "still running" as const)]);
}

/** The messages of a sipp -trace_msg file, one string each (sipp separates them with a line of dashes). */
function sippMessages(trace: string): string[] {
  return trace.split(/^-{20,}.*$/m);
}

async function twoUdpPorts(): Promise<[number, number]> {
  const first = await freeUdpPort();
  let second = await freeUdpPort();
  while (second === first) second = await freeUdpPort();
  return [first, second];
}

/** A callee that answers its INVITE with `code` (uas-reply.template.xml), written into `dir`. */
function replyingUas(dir: string, code: number, reason: string): string {
  const path = join(dir, `uas-${code}.xml`);
  writeFileSync(path, readFileSync(join(import.meta.dir, "scenarios", "uas-reply.template.xml"), "utf8").replaceAll("{{code}}", String(code)).replaceAll("{{reason}}", reason));
  return path;
}

/**
 * A tenant configuration plus two outbound carrier trunks over UDP (`<name>-primary`, `<name>-backup`
 * at `ports`) and routes for `prefix` to them, the primary first; `extra` adds fields to each trunk.
 */
function withTrunkPair(config: Record<string, unknown>, name: string, prefix: string, ports: [number, number], extra: [object, object] = [{}, {}]) {
  const trunk = (role: string, port: number, more: object) => ({ name: `${name}-${role}`, role: "carrier", direction: "outbound", proxy: `127.0.0.1:${port}`, transport: "udp", ...more });
  return {
    ...config,
    trunks: [...(config.trunks as unknown[]), trunk("primary", ports[0], extra[0]), trunk("backup", ports[1], extra[1])],
    outbound_routes: [
      ...(config.outbound_routes as unknown[]),
      { name: `${name}-1`, match_prefix: prefix, via: "trunk", trunk: `${name}-primary`, priority: 10 },
      { name: `${name}-2`, match_prefix: prefix, via: "trunk", trunk: `${name}-backup`, priority: 20 },
    ],
  };
}

/** A callee like uas.xml that also answers OPTIONS probes with `optionsCode`, written into `dir`. */
function probedUas(dir: string, optionsCode: number): string {
  const path = join(dir, `uas-probed-${optionsCode}.xml`);
  const scenario = readFileSync(join(import.meta.dir, "scenarios", "uas.xml"), "utf8")
    .replace('<recv request="INVITE" crlf="true"/>', '<recv request="OPTIONS" optional="true" next="options"/>\n  <recv request="INVITE" crlf="true"/>')
    .replace(
      /<timewait milliseconds="2000"\/>\s*<\/scenario>/,
      `<nop hide="true" next="end"/>
  <label id="options"/>
  <send>
    <![CDATA[
      SIP/2.0 ${optionsCode} ${optionsCode === 200 ? "OK" : "Service Unavailable"}
      [last_Via:]
      [last_From:]
      [last_To:];tag=[pid]opt[call_number]
      [last_Call-ID:]
      [last_CSeq:]
      Content-Length: 0
    ]]>
  </send>
  <label id="end"/>
  <timewait milliseconds="2000"/>
</scenario>`,
    );
  writeFileSync(path, scenario);
  return path;
}

/** A carrier that challenges an INVITE and, answered, challenges it again (as one does for wrong credentials), written into `dir`. */
function challengingTwice(dir: string): string {
  const path = join(dir, "uas-challenging-twice.xml");
  const challenge = (tag: string) => `
  <recv request="INVITE" crlf="true"/>
  <send>
    <![CDATA[
      SIP/2.0 401 Unauthorized
      [last_Via:]
      [last_From:]
      [last_To:];tag=[pid]${tag}[call_number]
      [last_Call-ID:]
      [last_CSeq:]
      WWW-Authenticate: Digest realm="carrier.test", nonce="${tag}5e0c", qop="auth"
      Content-Length: 0
    ]]>
  </send>
  <recv request="ACK"/>`;
  writeFileSync(path, `<?xml version="1.0" encoding="ISO-8859-1" ?>\n<scenario name="challenging twice">${challenge("first")}${challenge("second")}\n  <timewait milliseconds="500"/>\n</scenario>\n`);
  return path;
}

/** A callee like uas.xml whose INVITE must pass `eregs` (sipp <ereg> actions assigning `variables`), written into `dir`. */
/**
 * An edge on one port for UDP and TCP both, chosen free for TCP: the same number may be in use for UDP
 * (another test's socket), when Kamailio exits on it; then another port, up to three times.
 */
async function startEdgeOnFreePort(options: (port: number) => Parameters<typeof startKamailio>[0]): Promise<Kamailio> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await startKamailio(options(freePorts(1)[0]!));
    } catch (error) {
      if (attempt >= 3 || !/Address already in use/.test(String(error))) throw error;
    }
  }
}

function checkingUas(dir: string, name: string, variables: string[], eregs: string): string {
  const path = join(dir, name);
  const checks = `<recv request="INVITE" crlf="true"><action>${eregs}\n    </action></recv>`;
  const scenario = readFileSync(join(import.meta.dir, "scenarios", "uas.xml"), "utf8")
    .replace('<recv request="INVITE" crlf="true"/>', checks)
    .replace("</scenario>", `<Reference variables="${variables.join(",")}"/>\n</scenario>`);
  writeFileSync(path, scenario);
  return path;
}

async function handClient() {
  const replies: string[] = [];
  let wake: () => void = () => {};
  const sock = await Bun.udpSocket({ hostname: "127.0.0.1", port: 0, socket: { data(_s, buf) { replies.push(Buffer.from(buf).toString()); wake(); }, error() {} } });
  return {
    port: sock.port,
    send(message: Buffer, port: number) {
      sock.send(message, port, "127.0.0.1");
    },
    /** The next final (non-1xx) reply. */
    async next(): Promise<string> {
      const deadline = Date.now() + 3000;
      while (Date.now() < deadline) {
        const final = replies.findIndex((r) => !/^SIP\/2\.0 1\d\d/.test(r));
        if (final >= 0) return replies.splice(0, final + 1).at(-1)!;
        await new Promise<void>((res) => {
          wake = res;
          setTimeout(res, 100);
        });
      }
      throw new Error("no reply");
    },
    close: () => sock.close(),
  };
}


/**
 * REGISTER by hand: answer the challenge once, then send the very same Authorization again. With
 * `userAgent`, every REGISTER carries those bytes as its User-Agent.
 */
async function replayRegister(port: number, domain: string, user: string, password: string, userAgent?: Buffer): Promise<{ first: number; replayed: number; callId: string }> {
  const client = await handClient();
  const callId = `${crypto.randomUUID()}@replay`;
  const send = (cseq: number, auth?: string) =>
    client.send(
      sipMessage([
        `REGISTER sip:${domain} SIP/2.0`,
        ...(userAgent ? [Buffer.concat([Buffer.from("User-Agent: "), userAgent])] : []),
        `Via: SIP/2.0/UDP 127.0.0.1:${client.port};branch=z9hG4bK${crypto.randomUUID().slice(0, 12)};rport`,
        "Max-Forwards: 70",
        `From: <sip:${user}@${domain}>;tag=rp1`,
        `To: <sip:${user}@${domain}>`,
        `Call-ID: ${callId}`,
        `CSeq: ${cseq} REGISTER`,
        `Contact: <sip:${user}@127.0.0.1:${client.port}>`,
        "Expires: 300",
        ...(auth ? [`Authorization: ${auth}`] : []),
        "Content-Length: 0",
      ]),
      port,
    );
  try {
    send(1);
    const auth = digestAnswer(await client.next(), "REGISTER", `sip:${domain}`, user, domain, password);
    send(2, auth);
    const first = Number((await client.next()).slice(8, 11));
    send(3, auth);
    const replayed = Number((await client.next()).slice(8, 11));
    return { first, replayed, callId };
  } finally {
    client.close();
  }
}

/**
 * An INVITE by hand from `user` to `to`, answering the 407 with the digest; `fromUser`,
 * `displayName` and `callId` may be any bytes. Returns the final reply to the authenticated INVITE and its Call-ID.
 */
async function handInvite(
  port: number,
  domain: string,
  user: string,
  password: string,
  to: string,
  from: { fromUser?: Buffer; displayName?: Buffer; callId?: Buffer } = {},
): Promise<{ status: number; callId: string }> {
  const client = await handClient();
  const callId = from.callId ?? Buffer.from(`${crypto.randomUUID()}@hand`);
  const uri = `sip:${to}@${domain}`;
  const fromHeader = Buffer.concat([
    Buffer.from("From: "),
    ...(from.displayName ? [Buffer.from('"'), from.displayName, Buffer.from('" ')] : []),
    Buffer.from("<sip:"),
    from.fromUser ?? Buffer.from(user),
    Buffer.from(`@${domain}>;tag=hi1`),
  ]);
  const send = (cseq: number, auth?: string) =>
    client.send(
      sipMessage([
        `INVITE ${uri} SIP/2.0`,
        `Via: SIP/2.0/UDP 127.0.0.1:${client.port};branch=z9hG4bK${crypto.randomUUID().slice(0, 12)};rport`,
        "Max-Forwards: 70",
        fromHeader,
        `To: <${uri}>`,
        Buffer.concat([Buffer.from("Call-ID: "), callId]),
        `CSeq: ${cseq} INVITE`,
        `Contact: <sip:${user}@127.0.0.1:${client.port}>`,
        ...(auth ? [`Proxy-Authorization: ${auth}`] : []),
        "Content-Length: 0",
      ]),
      port,
    );
  try {
    send(1);
    const challenge = await client.next();
    if (!challenge.startsWith("SIP/2.0 407")) throw new Error(`expected 407, got ${challenge.slice(0, 40)}`);
    send(2, digestAnswer(challenge, "INVITE", uri, user, domain, password));
    return { status: Number((await client.next()).slice(8, 11)), callId: callId.toString() };
  } finally {
    client.close();
  }
}
