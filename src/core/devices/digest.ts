/**
 * SIP digest hashes (RFC 2617 HA1) of a device credential. The plaintext password exists only
 * while these are computed; only the hashes are stored.
 */

function md5hex(text: string): string {
  return new Bun.CryptoHasher("md5").update(text).digest("hex");
}

/** The two hashes the edge verifies against. */
export interface DigestHashes {
  /** md5(`auth_username:realm:password`): HA1 for a digest username without a domain. */
  ha1: string;
  /** md5(`auth_username@realm:realm:password`): Kamailio's ha1b, for phones that send user@domain as username. */
  ha1b: string;
}

/**
 * Computes ha1 and ha1b. They depend on all three inputs, so a new username or realm needs the password.
 * @example digestHashes("1001", "acme.example.com", "s3cret-pass").ha1 // 32 hex characters
 */
export function digestHashes(authUsername: string, realm: string, password: string): DigestHashes {
  return {
    ha1: md5hex(`${authUsername}:${realm}:${password}`),
    ha1b: md5hex(`${authUsername}@${realm}:${realm}:${password}`),
  };
}
