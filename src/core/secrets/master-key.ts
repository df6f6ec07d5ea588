/**
 * The master key that encrypts the secret store. Scale-out deployments pass it in the environment;
 * the embedded default keeps it in `DATA_DIR/master.key` so a fresh install works with no setup.
 */
import { chmodSync, linkSync, mkdirSync, readFileSync, unlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";

/** Master keys are AES-256 keys. */
export const MASTER_KEY_BYTES = 32;

const HEX_KEY = /^[0-9a-fA-F]{64}$/;
const BASE64_KEY = /^[A-Za-z0-9+/_-]+={0,2}$/;

/**
 * Parses a master key given as 64 hex characters or as base64 / base64url (padded or not) of exactly
 * 32 bytes. Surrounding whitespace is ignored. Throws when the value is anything else; the message
 * never includes the value, since a near-miss is likely to be most of a real key.
 */
export function parseMasterKey(value: string): Uint8Array {
  const text = value.trim();
  if (HEX_KEY.test(text)) return new Uint8Array(Buffer.from(text, "hex"));
  if (BASE64_KEY.test(text)) {
    const bytes = Buffer.from(text, "base64");
    // Node's decoder skips what it does not understand; re-encoding catches stray padding and
    // non-canonical trailing bits, so only a faithful encoding of 32 bytes gets through.
    const canonical = text.replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
    if (bytes.length === MASTER_KEY_BYTES && bytes.toString("base64url") === canonical) {
      return new Uint8Array(bytes);
    }
  }
  throw new Error(
    `The master key must be ${MASTER_KEY_BYTES} bytes written as 64 hex characters or as base64/base64url; ` +
      "the value given is not (it is not shown here on purpose).",
  );
}

/**
 * The embedded-mode master key: reads `dataDir/master.key`, or creates it (32 random bytes as hex,
 * mode 0600, `dataDir` created if missing) on first start. Losing this file makes every stored
 * secret unreadable, so it is never overwritten: when two processes race to create it, both end up
 * with the one that landed first.
 */
export function loadOrCreateMasterKey(dataDir: string): Uint8Array {
  const path = join(dataDir, "master.key");
  const existing = readKeyFile(path);
  if (existing) return existing;

  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const key = crypto.getRandomValues(new Uint8Array(MASTER_KEY_BYTES));
  // Write the whole key under a temporary name, then hard-link it into place: link() fails when
  // the target exists, so a concurrent starter can never see a half-written or replaced key.
  const temp = join(dataDir, `.master.key.${process.pid}.${Date.now()}.tmp`);
  try {
    writeFileSync(temp, `${Buffer.from(key).toString("hex")}\n`, { mode: 0o600, flag: "wx" });
    chmodSync(temp, 0o600); // the mode above is filtered by the umask; be explicit.
    try {
      linkSync(temp, path);
      return key;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
    }
  } finally {
    try {
      unlinkSync(temp);
    } catch {
      // Already gone or never created; nothing to clean up.
    }
  }
  const raced = readKeyFile(path);
  if (!raced) throw new Error(`${path} disappeared while it was being created.`);
  return raced;
}

/** The key in `path`, or null when the file does not exist. */
function readKeyFile(path: string): Uint8Array | null {
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return null;
    throw error;
  }
  try {
    return parseMasterKey(text);
  } catch (error) {
    throw new Error(`${path} does not hold a valid master key.`, { cause: error });
  }
}
