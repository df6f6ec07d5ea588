/**
 * Latency of SIP digest verification (POST /auth), the edge's hot path: every call authenticates.
 *
 *   bun bench/auth.ts                      # PGlite + in-process live store
 *   TEST_DATABASE_URL=postgres://postgres@127.0.0.1:5432/<db> TEST_REDIS_URL=redis://127.0.0.1:6379 bun bench/auth.ts
 *
 * Measures, in one run: (0) `select 1` on the same handle (the store's floor), (1) the bare identity lookup (one prepared query: the baseline of the store),
 * (2) the whole verification in process (lookup + digest + replay check in the live store),
 * (3) POST /auth over loopback HTTP with BENCH_CONCURRENCY concurrent clients, against (4) a bare
 * Bun.serve that parses the same JSON body and answers a fixed reply (the HTTP baseline).
 * Environment: BENCH_N (requests per measurement, default 5000), BENCH_CONCURRENCY (default 32).
 */
import { createHash, randomUUID } from "node:crypto";
import { sql } from "drizzle-orm";
import { testPlatform, seedTenant, storeKind } from "../test/support/platform.ts";
import { createUser } from "../src/core/users/users.service.ts";
import { createDevice } from "../src/core/devices/devices.service.ts";
import { defaultRealm } from "../src/core/devices/realm.ts";
import { findDigestIdentity } from "../src/core/sip-auth/sip-auth.store.ts";
import { authenticateDigest } from "../src/core/sip-auth/sip-auth.service.ts";
import { createControlApp } from "../src/control/app.ts";
import { edgeAuthRoutes } from "../src/control/routes/edge-auth.ts";

const N = Number(process.env.BENCH_N ?? 5000);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 32);
const md5 = (s: string) => createHash("md5").update(s).digest("hex");

const platform = await testPlatform();
const t = await seedTenant(platform);
const realm = defaultRealm(t.accountId);
const USERS = Number(process.env.BENCH_USERS ?? 200);
console.error(`seeding ${USERS} devices on ${storeKind}…`);
for (let i = 0; i < USERS; i++) {
  const user = await createUser(platform.db, t.accountId, { username: String(1000 + i) });
  await createDevice(platform.db, t.accountId, { user_id: user.id, password: `pw-${i}-secret` });
}

function body(i: number) {
  const u = i % USERS;
  const username = String(1000 + u);
  const nonce = randomUUID();
  const cnonce = randomUUID().slice(0, 8);
  const uri = `sip:${realm}`;
  const ha1 = md5(`${username}:${realm}:pw-${u}-secret`);
  const response = md5(`${ha1}:${nonce}:00000001:${cnonce}:auth:${md5(`INVITE:${uri}`)}`);
  return { username, realm, nonce, uri, response, method: "INVITE", qop: "auth" as const, nc: "00000001", cnonce, source_ip: "127.0.0.1" };
}

function stats(samples: number[]) {
  const s = [...samples].sort((a, b) => a - b);
  const q = (p: number) => s[Math.min(s.length - 1, Math.floor(p * s.length))]!;
  return { p50_us: Math.round(q(0.5) * 1000), p99_us: Math.round(q(0.99) * 1000), mean_us: Math.round((s.reduce((a, b) => a + b, 0) / s.length) * 1000) };
}

async function sequential(fn: (i: number) => Promise<unknown>) {
  for (let i = 0; i < 200; i++) await fn(i); // warm-up (prepares statements, JIT)
  const samples: number[] = [];
  for (let i = 0; i < N; i++) {
    const t0 = performance.now();
    await fn(i);
    samples.push(performance.now() - t0);
  }
  return stats(samples);
}

async function concurrent(fn: (i: number) => Promise<unknown>) {
  let next = 0;
  const t0 = performance.now();
  const samples: number[] = [];
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < N) {
        const i = next++;
        const s = performance.now();
        await fn(i);
        samples.push(performance.now() - s);
      }
    }),
  );
  const secs = (performance.now() - t0) / 1000;
  return { rps: Math.round(N / secs), ...stats(samples) };
}

console.error("measuring…");
const bodies = Array.from({ length: N + 200 }, (_, i) => body(i));
let k = 0;
const select1 = await sequential(() => platform.db.execute(sql`select 1`));
const lookup = await sequential((i) => findDigestIdentity(platform.db, realm, String(1000 + (i % USERS))));
const verify = await sequential(async () => {
  const r = await authenticateDigest({ db: platform.db, live: platform.live }, bodies[k++ % bodies.length]!);
  if (!r.ok) throw new Error("auth failed");
});

const server = createControlApp(platform, [edgeAuthRoutes]).listen({ hostname: "127.0.0.1", port: 0 });
const bare = Bun.serve({
  hostname: "127.0.0.1",
  port: 0,
  async fetch(req) {
    await req.json();
    return Response.json({ ok: true, account_id: "acc_x", user_id: "us_x", device_id: "dev_x", webrtc: 0 });
  },
});
const post = (port: number) => async (i: number) => {
  const b = body(i + N * 10);
  const r = await fetch(`http://127.0.0.1:${port}/auth`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(b) });
  if (r.status !== 200) throw new Error(`status ${r.status}: ${await r.text()}`);
  await r.arrayBuffer();
};
await concurrent(post(bare.port as number)); // warm-up
const httpBare = await concurrent(post(bare.port as number));
const httpAuth = await concurrent(post(server.server!.port as number));

const result = {
  stores: storeKind,
  n: N,
  concurrency: CONCURRENCY,
  select_1_baseline: select1,
  lookup_only: lookup,
  lookup_over_select1_ratio: +(lookup.mean_us / select1.mean_us).toFixed(2),
  verify_in_process: verify,
  verify_over_lookup_ratio: +(verify.mean_us / lookup.mean_us).toFixed(2),
  http_bare_baseline: httpBare,
  http_post_auth: httpAuth,
  http_auth_over_bare_rps_ratio: +(httpAuth.rps / httpBare.rps).toFixed(2),
};
console.log(JSON.stringify(result, null, 2));
await server.stop();
bare.stop(true);
await platform.close();
process.exit(0);
