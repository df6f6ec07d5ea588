/**
 * The digest realm of an account that has no SIP domain of its own. Every account answers on it,
 * so a device can always be created, and because the realm embeds the account id, the same
 * username in two accounts is two different digest identities.
 */

/** The domain under which default realms live. */
export const DEFAULT_REALM_SUFFIX = "sip.parley.local";

/**
 * The default realm of an account: `<account id lower-cased>.sip.parley.local`. Used for a device
 * created without a realm when the account has no SIP domain; the edge may rely on it to map a
 * realm back to its account.
 * @example defaultRealm("acc_01JABCDEFGHJKMNPQRSTVWXYZ0") // "acc_01jabcdefghjkmnpqrstvwxyz0.sip.parley.local"
 */
export function defaultRealm(accountId: string): string {
  return `${accountId.toLowerCase()}.${DEFAULT_REALM_SUFFIX}`;
}
