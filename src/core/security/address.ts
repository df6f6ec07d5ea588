/**
 * Canonical text of addresses and ranges, so that one address is one row whatever way a node or an
 * operator writes it (`::FFFF:10.0.0.1` and `10.0.0.1`, `2001:DB8:0:0::1` and `2001:db8::1`).
 * Parsing is src/core/net/cidr.ts's; this only formats.
 */
import { formatIp, parseCidr, parseIp, type Cidr } from "../net/cidr.ts";

/** The canonical text of one address, or null when `text` is not an IP address. */
export function canonicalIp(text: string): string | null {
  const ip = parseIp(text.trim());
  if (!ip) return null;
  return formatIp(ip.family, ip.value);
}

/**
 * The canonical text of an address or range: the network address (host bits cleared) and the prefix
 * length, without `/32` or `/128` for a single host. Null when `text` is neither.
 */
export function canonicalRange(text: string): { text: string; cidr: Cidr } | null {
  let cidr: Cidr;
  try {
    cidr = parseCidr(text);
  } catch {
    return null; // parseCidr throws on anything that is not an address or range: that is the answer.
  }
  const bits = cidr.family === 4 ? 32 : 128;
  const network = formatIp(cidr.family, cidr.network);
  const canonical = cidr.prefix === bits ? network : `${network}/${cidr.prefix}`;
  return { text: canonical, cidr: { ...cidr, text: canonical } };
}
