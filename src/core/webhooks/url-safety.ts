/**
 * The SSRF guard for webhook targets: a subscription URL must be https:// and its host must resolve
 * only to public addresses, so a tenant cannot make the platform POST into its own network
 * (loopback, private ranges, the cloud metadata address 169.254.169.254 and the like).
 */
import { lookup } from "node:dns/promises";
import { formatIp, ipAllowed, parseCidr, parseIp, type Cidr } from "../net/cidr.ts";
import { validationFailed } from "../errors/app-error.ts";

/** Most characters a webhook URL may have. */
export const MAX_WEBHOOK_URL_LENGTH = 2048;

/** Ranges no webhook may target, each with the reason given to the client. */
const BLOCKED: Array<{ cidr: string; why: string; range: Cidr }> = [
  { cidr: "0.0.0.0/8", why: "'this network' (0.0.0.0/8)" },
  { cidr: "10.0.0.0/8", why: "private (10.0.0.0/8)" },
  { cidr: "100.64.0.0/10", why: "carrier-grade NAT (100.64.0.0/10)" },
  { cidr: "127.0.0.0/8", why: "loopback (127.0.0.0/8)" },
  { cidr: "192.0.0.0/24", why: "IETF protocol assignments (192.0.0.0/24)" },
  { cidr: "192.0.2.0/24", why: "documentation (192.0.2.0/24)" },
  { cidr: "198.18.0.0/15", why: "benchmarking (198.18.0.0/15)" },
  { cidr: "198.51.100.0/24", why: "documentation (198.51.100.0/24)" },
  { cidr: "203.0.113.0/24", why: "documentation (203.0.113.0/24)" },
  { cidr: "169.254.0.0/16", why: "link-local (169.254.0.0/16, includes the cloud metadata address)" },
  { cidr: "172.16.0.0/12", why: "private (172.16.0.0/12)" },
  { cidr: "192.168.0.0/16", why: "private (192.168.0.0/16)" },
  { cidr: "224.0.0.0/4", why: "multicast (224.0.0.0/4)" },
  { cidr: "240.0.0.0/4", why: "reserved (240.0.0.0/4, includes broadcast)" },
  { cidr: "::/128", why: "unspecified (::)" },
  { cidr: "::1/128", why: "loopback (::1)" },
  // ::a.b.c.d (deprecated IPv4-compatible) and ::ffff:0:a.b.c.d (IPv4-translated): the IPv4 address
  // inside may be reached by a host's stack; neither is a public address of its own.
  { cidr: "::/96", why: "IPv4-compatible (::/96, deprecated)" },
  { cidr: "::ffff:0:0:0/96", why: "IPv4-translated (::ffff:0:0:0/96)" },
  { cidr: "100::/64", why: "discard-only (100::/64)" },
  { cidr: "2001:db8::/32", why: "documentation (2001:db8::/32)" },
  { cidr: "fc00::/7", why: "private (fc00::/7)" },
  { cidr: "fe80::/10", why: "link-local (fe80::/10)" },
  { cidr: "fec0::/10", why: "site-local (fec0::/10, deprecated)" },
  { cidr: "3fff::/20", why: "documentation (3fff::/20)" },
  { cidr: "5f00::/16", why: "SRv6 segment identifier (5f00::/16)" },
  { cidr: "ff00::/8", why: "multicast (ff00::/8)" },
  // Where the IPv4 address inside cannot be read off plainly: refused whole.
  { cidr: "64:ff9b:1::/48", why: "local-use NAT64 (64:ff9b:1::/48)" },
  { cidr: "2001::/32", why: "Teredo (2001::/32)" },
].map(({ cidr, why }) => ({ cidr, why, range: parseCidr(cidr) }));

/**
 * Why `address` (an IP literal, IPv4-mapped IPv6 included) must not be a webhook target, or null
 * when it is public. Text that is not an address is refused too.
 * @example blockedReason("169.254.169.254") // "link-local (169.254.0.0/16, …)"
 */
export function blockedReason(address: string): string | null {
  const ip = parseIp(address);
  if (!ip) return "not an IP address";
  for (const b of BLOCKED) if (ipAllowed(address, [b.range])) return b.why;
  // An IPv4 address carried inside IPv6 (NAT64's well-known prefix, 6to4) reaches that IPv4 host
  // through a gateway: it is judged as that address.
  const embedded = ip.family === 6 ? embeddedIpv4(ip.value) : null;
  if (embedded !== null) {
    const why = blockedReason(formatIp(4, embedded));
    if (why !== null) return `${why}, carried inside an IPv6 one`;
  }
  return null;
}

/** The IPv4 address inside 64:ff9b::/96 (NAT64, its last 32 bits) or 2002::/16 (6to4, the 32 after the prefix). */
function embeddedIpv4(value: bigint): bigint | null {
  if (value >> 32n === 0x64ff9b0000000000000000n) return value & 0xffffffffn;
  if (value >> 112n === 0x2002n) return (value >> 80n) & 0xffffffffn;
  return null;
}

/** The host of a URL without IPv6 brackets. */
function bareHost(url: URL): string {
  return url.hostname.replace(/^\[|\]$/g, "");
}

/** Resolves a host name to every address; an IP literal is its own answer. Empty when it does not resolve. */
export async function resolveHost(host: string): Promise<string[]> {
  if (parseIp(host)) return [host];
  try {
    return (await lookup(host, { all: true, verbatim: true })).map((a) => a.address);
  } catch {
    return [];
  }
}

/**
 * Checks a webhook target and returns it normalized (WHATWG serialization). 400 at `path` when it is
 * not an https:// URL, carries credentials, is too long, does not resolve, or resolves to any
 * non-public address (unless `allowPrivate`).
 */
export async function checkWebhookUrl(text: string, options: { path?: string; allowPrivate?: boolean } = {}): Promise<string> {
  const path = options.path ?? "/url";
  const fail = (message: string) => validationFailed([{ path, message }]);
  if (text.length > MAX_WEBHOOK_URL_LENGTH) throw fail(`At most ${MAX_WEBHOOK_URL_LENGTH} characters.`);
  // The URL parser drops these silently (leading and trailing spaces and controls, tabs and line
  // breaks anywhere): a client's mistake would be stored as another URL.
  if (/^[\x00-\x20]|[\x00-\x20]$|[\t\n\r]/.test(text)) throw fail("Must not hold spaces at either end, tabs or line breaks.");
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw fail("Not a URL.");
  }
  if (url.protocol !== "https:") throw fail("Must be an https:// URL.");
  if (url.username || url.password) throw fail("Must not carry a user name or password; sign deliveries with the secret instead.");
  // An empty fragment ("…/in#") has no hash but is kept by the serialization.
  if (url.hash || url.href.endsWith("#")) throw fail("Must not have a #fragment.");
  const host = bareHost(url);
  if (!host) throw fail("Has no host.");
  if (url.port === "0") throw fail("Port 0 cannot be delivered to.");
  const addresses = await resolveHost(host);
  if (!addresses.length) throw fail(`The host '${host}' does not resolve.`);
  if (!options.allowPrivate) {
    for (const address of addresses) {
      const why = blockedReason(address);
      if (why) throw fail(`The host '${host}' resolves to ${address}, not a public address: ${why}. Webhooks may only target public addresses.`);
    }
  }
  const normalized = url.toString();
  if (normalized.length > MAX_WEBHOOK_URL_LENGTH) throw fail(`At most ${MAX_WEBHOOK_URL_LENGTH} characters.`);
  return normalized;
}
