/**
 * One written form per address range, so the same range written two ways ("10.0.0.1", "10.0.0.1/32")
 * is one ACL entry and an export reads back unchanged: the network address, compressed IPv6
 * (RFC 5952), and an explicit prefix length.
 */
import { formatIp, parseCidr, parseIp } from "../net/cidr.ts";

/**
 * The canonical form of a CIDR or single address, or an error message. Host bits set below the
 * prefix ("10.0.0.1/8") are refused rather than silently widened: the writer probably meant something else.
 * @example canonicalCidr("10.1.2.3") // { cidr: "10.1.2.3/32" }
 * @example canonicalCidr("2001:DB8:0:0::/32") // { cidr: "2001:db8::/32" }
 */
export function canonicalCidr(text: string): { cidr: string } | { error: string } {
  let range;
  try {
    range = parseCidr(text);
  } catch {
    return { error: `'${text}' is not an IP address or CIDR range.` };
  }
  const address = parseIp(text.trim().split("/")[0] ?? "");
  const network = formatIp(range.family, range.network);
  if (address && address.value !== range.network) {
    return { error: `'${text}' has host bits set below /${range.prefix}; the range is ${network}/${range.prefix}.` };
  }
  return { cidr: `${network}/${range.prefix}` };
}
