/**
 * One written form per address range, so the same range written two ways ("10.0.0.1", "10.0.0.1/32")
 * is one ACL entry and an export reads back unchanged: the network address, compressed IPv6
 * (RFC 5952), and an explicit prefix length.
 */
import { parseCidr, parseIp } from "../net/cidr.ts";

function formatIpv4(value: bigint): string {
  return [24n, 16n, 8n, 0n].map((shift) => String((value >> shift) & 255n)).join(".");
}

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
  const network = range.family === 4 ? formatIpv4(range.network) : formatIpv6(range.network);
  if (address && address.value !== range.network) {
    return { error: `'${text}' has host bits set below /${range.prefix}; the range is ${network}/${range.prefix}.` };
  }
  return { cidr: `${network}/${range.prefix}` };
}
