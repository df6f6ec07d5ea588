/** A tenant for the SIP tests, built the way an operator would: admin endpoints, config apply, /v1. */
import { ADMIN_TOKEN, api, type Parley } from "./harness.ts";

export const PASSWORD = "e2e-secret-1";

export interface SipTenant {
  accountId: string;
  key: string;
  domain: string;
  /** username → { user_id, device_id } */
  users: Record<string, { userId: string; deviceId: string }>;
  dnc: string;
  trunkNumber: string;
  /** The account's configuration file as applied (config apply replaces it whole: see applyTenantConfig). */
  config: Record<string, unknown>;
}

export interface TenantOptions {
  /** Port of the sipp UAS standing in for the carrier behind the trunk. */
  carrierPort: number;
  /** Account ceiling of outbound calls (CAC overflow test); null = none. */
  maxOut?: number | null;
  /** Users to create, each with one device (password PASSWORD); `max` sets max_simultaneous. */
  users: Array<{ username: string; max?: number }>;
  /** Source addresses of an IP-authenticated inbound trunk ("pbx-in"); none: no such trunk. */
  inboundAcl?: string[];
}

function expectOk<T>(what: string, r: { status: number; body: T }): T {
  if (r.status >= 300) throw new Error(`${what}: ${r.status} ${JSON.stringify(r.body)}`);
  return r.body;
}

/** Creates the account, its SIP domain, a trunk to the carrier with a route for +1…, users with devices, a DNC number. */
export async function createSipTenant(parley: Parley, options: TenantOptions): Promise<SipTenant> {
  const admin = { "x-admin-token": ADMIN_TOKEN };
  const tag = crypto.randomUUID().slice(0, 8);
  const domain = `sip-${tag}.example.net`;
  const account = expectOk("account", await api("POST", `${parley.controlUrl}/admin/accounts`, { name: `SIP e2e ${tag}`, max_out: options.maxOut ?? null }, admin)) as any;
  const accountId = account.data.id as string;
  const key = (expectOk("key", await api("POST", `${parley.controlUrl}/admin/keys`, { account_id: accountId, label: "e2e", scopes: ["*"] }, admin)) as any).data.secret as string;
  const config = {
    version: 1,
    sip_domains: [{ domain, is_primary: 1 }],
    trunks: [
      { name: "carrier", role: "carrier", direction: "outbound", proxy: `127.0.0.1:${options.carrierPort}`, transport: "udp" },
      ...(options.inboundAcl?.length ? [{ name: "pbx-in", role: "pbx", direction: "inbound", inbound_auth: "ip", acl: options.inboundAcl }] : []),
    ],
    outbound_routes: [{ name: "north-america", match_prefix: "1", via: "trunk", trunk: "carrier", priority: 10 }],
  };
  expectOk("config apply", await api("POST", `${parley.controlUrl}/admin/config/apply`, { account_id: accountId, format: "json", content: JSON.stringify(config) }, admin));
  const h = { "x-api-key": key };
  const users: SipTenant["users"] = {};
  for (const u of options.users) {
    const user = (expectOk(`user ${u.username}`, await api("POST", `${parley.publicUrl}/v1/users`, { username: u.username, display_name: `User ${u.username}`, ...(u.max ? { max_simultaneous: u.max } : {}) }, h)) as any).data;
    const device = (expectOk(`device ${u.username}`, await api("POST", `${parley.publicUrl}/v1/devices`, { user_id: user.id, password: PASSWORD, auth_username: u.username, realm: domain }, h)) as any).data;
    users[u.username] = { userId: user.id, deviceId: device.id };
  }
  const dnc = "14155550199";
  expectOk("dnc", await api("POST", `${parley.publicUrl}/v1/dnc`, { numbers: [dnc], reason: "asked not to be called" }, h));
  return { accountId, key, domain, users, dnc, trunkNumber: "14155550123", config };
}

/**
 * Applies the tenant's configuration with `sections` added or replaced (policies that name users, once
 * the users exist): the file is the account's whole configuration, so what it leaves out is removed.
 */
export async function applyTenantConfig(parley: Parley, tenant: SipTenant, sections: Record<string, unknown>): Promise<void> {
  const config = { ...tenant.config, ...sections };
  expectOk(
    "config apply",
    await api("POST", `${parley.controlUrl}/admin/config/apply`, { account_id: tenant.accountId, format: "json", content: JSON.stringify(config) }, { "x-admin-token": ADMIN_TOKEN }),
  );
  tenant.config = config;
}

/** Adds a user with one device (password PASSWORD) to an existing tenant. */
export async function addSipUser(parley: Parley, tenant: SipTenant, username: string, max?: number): Promise<{ userId: string; deviceId: string }> {
  const h = { "x-api-key": tenant.key };
  const user = (expectOk(`user ${username}`, await api("POST", `${parley.publicUrl}/v1/users`, { username, display_name: `User ${username}`, ...(max ? { max_simultaneous: max } : {}) }, h)) as any).data;
  const device = (expectOk(`device ${username}`, await api("POST", `${parley.publicUrl}/v1/devices`, { user_id: user.id, password: PASSWORD, auth_username: username, realm: tenant.domain }, h)) as any).data;
  tenant.users[username] = { userId: user.id, deviceId: device.id };
  return tenant.users[username]!;
}
