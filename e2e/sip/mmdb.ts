/**
 * A tiny MaxMind DB (format 2.0) writer for the SIP tests: an IPv4 country database, the shape of
 * GeoLite2-Country that Kamailio's geoip2 module reads (`$gip2(pvc=>cc)` is `country.iso_code`), for
 * networks of the test's choosing (loopback addresses, say). Real deployments use MaxMind's file.
 * Spec: https://maxmind.github.io/MaxMind-DB/ (search tree of 24-bit records, data section, metadata).
 */

/** A network and the ISO 3166-1 alpha-2 country its addresses are in. */
export interface CountryNetwork {
  /** IPv4 CIDR, e.g. "127.0.0.0/8". Networks must not overlap. */
  cidr: string;
  country: string;
}

// ── The data section's encoding (type in the control byte's top 3 bits, size in the low 5).
const T_STRING = 2;
const T_UINT16 = 5;
const T_UINT32 = 6;
const T_MAP = 7;
/** Extended types: control type 0, then a byte holding type - 7. */
const T_UINT64 = 9;
const T_ARRAY = 11;

function control(type: number, size: number): number[] {
  const sizeBytes: number[] = [];
  let bits: number;
  if (size < 29) bits = size;
  else if (size < 29 + 256) {
    bits = 29;
    sizeBytes.push(size - 29);
  } else if (size < 285 + 65536) {
    bits = 30;
    const n = size - 285;
    sizeBytes.push(n >> 8, n & 255);
  } else throw new Error("value too large for this writer");
  return type <= 7 ? [(type << 5) | bits, ...sizeBytes] : [bits, type - 7, ...sizeBytes];
}

function unsigned(type: number, value: number | bigint): number[] {
  const bytes: number[] = [];
  for (let v = BigInt(value); v > 0n; v >>= 8n) bytes.unshift(Number(v & 255n));
  return [...control(type, bytes.length), ...bytes];
}

type Value = string | { u16: number } | { u32: number } | { u64: bigint } | Value[] | { [key: string]: Value };

function encode(value: Value): number[] {
  if (typeof value === "string") {
    const bytes = [...new TextEncoder().encode(value)];
    return [...control(T_STRING, bytes.length), ...bytes];
  }
  if (Array.isArray(value)) return [...control(T_ARRAY, value.length), ...value.flatMap(encode)];
  if ("u16" in value && typeof value.u16 === "number") return unsigned(T_UINT16, value.u16);
  if ("u32" in value && typeof value.u32 === "number") return unsigned(T_UINT32, value.u32);
  if ("u64" in value && typeof value.u64 === "bigint") return unsigned(T_UINT64, value.u64);
  const entries = Object.entries(value as Record<string, Value>);
  return [...control(T_MAP, entries.length), ...entries.flatMap(([k, v]) => [...encode(k), ...encode(v)])];
}

// ── The search tree: one node per prefix bit walked; a record is a node number, "nothing here"
// (node_count), or a pointer into the data section (node_count + 16 + offset).
interface TreeNode {
  kids: [TreeNode | { data: number } | null, TreeNode | { data: number } | null];
}

function ipv4Bits(cidr: string): number[] {
  const [address, lengthText] = cidr.split("/");
  const octets = address!.split(".").map(Number);
  const length = Number(lengthText ?? 32);
  if (octets.length !== 4 || octets.some((o) => !(o >= 0 && o <= 255)) || !(length >= 1 && length <= 32)) throw new Error(`not an IPv4 CIDR: ${cidr}`);
  const value = ((octets[0]! << 24) >>> 0) + (octets[1]! << 16) + (octets[2]! << 8) + octets[3]!;
  return Array.from({ length }, (_, i) => (value >>> (31 - i)) & 1);
}

/**
 * The bytes of an IPv4 country database holding `networks`.
 * @example await Bun.write("geo.mmdb", countryDatabase([{ cidr: "127.0.0.0/8", country: "FR" }]))
 */
export function countryDatabase(networks: CountryNetwork[]): Uint8Array {
  // Data: one record per country, { country: { iso_code } } as GeoLite2-Country has it.
  const data: number[] = [];
  const offsets = new Map<string, number>();
  for (const { country } of networks) {
    if (offsets.has(country)) continue;
    offsets.set(country, data.length);
    data.push(...encode({ country: { iso_code: country } }));
  }
  const root: TreeNode = { kids: [null, null] };
  for (const { cidr, country } of networks) {
    const bits = ipv4Bits(cidr);
    let node = root;
    bits.forEach((bit, i) => {
      const kid = node.kids[bit as 0 | 1];
      if (i === bits.length - 1) {
        if (kid) throw new Error(`${cidr} overlaps another network`);
        node.kids[bit as 0 | 1] = { data: offsets.get(country)! };
        return;
      }
      if (kid && "data" in kid) throw new Error(`${cidr} overlaps another network`);
      node = kid ?? (node.kids[bit as 0 | 1] = { kids: [null, null] });
    });
  }
  // Number the nodes breadth first (the root is node 0).
  const order: TreeNode[] = [root];
  for (let i = 0; i < order.length; i++) for (const kid of order[i]!.kids) if (kid && "kids" in kid) order.push(kid);
  const index = new Map(order.map((n, i) => [n, i]));
  const nodeCount = order.length;
  const record = (kid: TreeNode | { data: number } | null) => (kid === null ? nodeCount : "data" in kid ? nodeCount + 16 + kid.data : index.get(kid)!);
  const tree: number[] = [];
  for (const node of order) {
    for (const kid of node.kids) {
      const r = record(kid);
      if (r >= 2 ** 24) throw new Error("database too large for 24-bit records");
      tree.push((r >> 16) & 255, (r >> 8) & 255, r & 255);
    }
  }
  const metadata = encode({
    node_count: { u32: nodeCount },
    record_size: { u16: 24 },
    ip_version: { u16: 4 },
    database_type: "Parley-Test-Country",
    languages: ["en"],
    binary_format_major_version: { u16: 2 },
    binary_format_minor_version: { u16: 0 },
    build_epoch: { u64: BigInt(Math.floor(Date.now() / 1000)) },
    description: { en: "Parley SIP test country database" },
  });
  const marker = [0xab, 0xcd, 0xef, ...new TextEncoder().encode("MaxMind.com")];
  return new Uint8Array([...tree, ...new Array(16).fill(0), ...data, ...marker, ...metadata]);
}
