/**
 * IPv4/IPv6 CIDR matching for the control plane's allowlist. IPv4-mapped IPv6 addresses
 * (::ffff:127.0.0.1, what a dual-stack socket reports) match IPv4 ranges.
 */

/** A parsed CIDR: family, network as a bigint, prefix length. */
export interface Cidr {
  family: 4 | 6;
  network: bigint;
  prefix: number;
  /** As written, for messages and docs. */
  text: string;
}

/**
 * Dotted-decimal IPv4. A part with a leading zero ("010") is refused: URL parsers and inet_aton read
 * it as octal (8), other tools as decimal (10), so an allowlist entry or a trunk's address written so
 * could mean another host than the one its writer had in mind.
 */
function parseIpv4(text: string): bigint | null {
  const parts = text.split(".");
  if (parts.length !== 4) return null;
  let value = 0n;
  for (const part of parts) {
    if (!/^(0|[1-9]\d{0,2})$/.test(part)) return null;
    const n = Number(part);
    if (n > 255) return null;
    value = (value << 8n) | BigInt(n);
  }
  return value;
}

function parseIpv6(text: string): bigint | null {
  let head = text;
  let v4tail: bigint | null = null;
  const lastColon = text.lastIndexOf(":");
  if (text.includes(".") && lastColon >= 0) {
    v4tail = parseIpv4(text.slice(lastColon + 1));
    if (v4tail === null) return null;
    head = text.slice(0, lastColon) + ":0:0";
  }
  const halves = head.split("::");
  if (halves.length > 2) return null;
  const groupsOf = (s: string) => (s === "" ? [] : s.split(":"));
  const left = groupsOf(halves[0] ?? "");
  const right = halves.length === 2 ? groupsOf(halves[1] ?? "") : [];
  const missing = 8 - left.length - right.length;
  // "::" stands for one or more zero groups (RFC 4291 2.2), never for none.
  if ((halves.length === 1 && missing !== 0) || (halves.length === 2 && missing < 1)) return null;
  const groups = [...left, ...Array<string>(halves.length === 2 ? missing : 0).fill("0"), ...right];
  let value = 0n;
  for (const g of groups) {
    if (!/^[0-9a-fA-F]{1,4}$/.test(g)) return null;
    value = (value << 16n) | BigInt(parseInt(g, 16));
  }
  if (v4tail !== null) value = (value & ~0xffffffffn) | v4tail;
  return value;
}

/** Parses an address to family and value, unwrapping IPv4-mapped IPv6. Null when not an address. */
export function parseIp(text: string): { family: 4 | 6; value: bigint } | null {
  // Brackets only as a pair around IPv6 text (`[2001:db8::1]`, as a URI writes it): `[10.0.0.1`,
  // `10.0.0.1]` and `[10.0.0.1]` are not addresses.
  const bracketed = text.startsWith("[") && text.endsWith("]");
  const unbracketed = bracketed ? text.slice(1, -1) : text;
  if (/[[\]]/.test(unbracketed) || (bracketed && !unbracketed.includes(":"))) return null;
  // A zone (`fe80::1%eth0`) belongs to IPv6 link-local text, and is not empty (RFC 6874: unreserved
  // characters); after an IPv4 address it is junk.
  const zone = unbracketed.indexOf("%");
  if (zone >= 0 && !/^[A-Za-z0-9._~-]+$/.test(unbracketed.slice(zone + 1))) return null;
  const bare = unbracketed.includes(":") && zone >= 0 ? unbracketed.slice(0, zone) : unbracketed;
  const v4 = parseIpv4(bare);
  if (v4 !== null) return { family: 4, value: v4 };
  const v6 = parseIpv6(bare);
  if (v6 === null) return null;
  if (v6 >> 32n === 0xffffn) return { family: 4, value: v6 & 0xffffffffn };
  return { family: 6, value: v6 };
}

/** Parses `a.b.c.d/n` or `x::y/n`; a bare address is a single-host range. Throws on bad input. */
export function parseCidr(text: string): Cidr {
  const parts = text.trim().split("/");
  if (parts.length > 2) throw new Error(`'${text}' is not an IP address or CIDR`);
  const [addr, len] = parts;
  const ip = parseIp(addr ?? "");
  if (!ip) throw new Error(`'${text}' is not an IP address or CIDR`);
  const bits = ip.family === 4 ? 32 : 128;
  // An IPv4-mapped IPv6 range (::ffff:192.0.2.0/120) is the IPv4 range it maps (192.0.2.0/24), as its
  // single addresses are their IPv4 address: its prefix counts the 96 bits of the mapping too.
  const mapped = ip.family === 4 && (addr ?? "").includes(":");
  const written = len === undefined ? (mapped ? 128 : bits) : Number(len);
  // Decimal without leading zeros, like the address's own parts.
  if (!Number.isInteger(written) || written < 0 || written > (mapped ? 128 : bits) || (len !== undefined && !/^(0|[1-9]\d{0,2})$/.test(len))) {
    throw new Error(`'${text}' has a bad prefix length`);
  }
  if (mapped && written < 96) throw new Error(`'${text}': a range of IPv4-mapped addresses needs a prefix of 96 or more`);
  const prefix = mapped ? written - 96 : written;
  const mask = prefix === 0 ? 0n : ((1n << BigInt(prefix)) - 1n) << BigInt(bits - prefix);
  return { family: ip.family, network: ip.value & mask, prefix, text: text.trim() };
}

/** Parses a comma-separated list; an empty list allows nothing. */
export function parseCidrList(text: string): Cidr[] {
  return text.split(",").map((s) => s.trim()).filter(Boolean).map(parseCidr);
}

/** True when `address` falls in any of `ranges`. Unparseable addresses match nothing. */
export function ipAllowed(address: string | null | undefined, ranges: Cidr[]): boolean {
  if (!address) return false;
  const ip = parseIp(address);
  if (!ip) return false;
  for (const range of ranges) {
    if (range.family !== ip.family) continue;
    const bits = ip.family === 4 ? 32 : 128;
    const mask = range.prefix === 0 ? 0n : ((1n << BigInt(range.prefix)) - 1n) << BigInt(bits - range.prefix);
    if ((ip.value & mask) === range.network) return true;
  }
  return false;
}

function formatIpv4(value: bigint): string {
  return [24n, 16n, 8n, 0n].map((shift) => String((value >> shift) & 255n)).join(".");
}

/** RFC 5952 text of an IPv6 address: lower case, no leading zeros, the longest run (≥ 2) of zero groups as `::`. */
function formatIpv6(value: bigint): string {
  const groups: number[] = [];
  for (let i = 7; i >= 0; i--) groups.push(Number((value >> BigInt(i * 16)) & 0xffffn));
  // RFC 5952: the longest run (≥ 2) of zero groups becomes ::, the first one on a tie.
  let bestStart = -1;
  let bestLength = 1;
  for (let i = 0; i < 8; ) {
    if (groups[i] !== 0) {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && groups[j] === 0) j++;
    if (j - i > bestLength) {
      bestStart = i;
      bestLength = j - i;
    }
    i = j;
  }
  const hex = groups.map((g) => g.toString(16));
  if (bestStart < 0) return hex.join(":");
  return `${hex.slice(0, bestStart).join(":")}::${hex.slice(bestStart + bestLength).join(":")}`;
}

/** The canonical text of an address value (dotted quad, or RFC 5952 IPv6). */
export function formatIp(family: 4 | 6, value: bigint): string {
  return family === 4 ? formatIpv4(value) : formatIpv6(value);
}
