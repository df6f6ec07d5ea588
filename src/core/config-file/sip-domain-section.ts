/**
 * SIP domains as a section of the config file. A domain is unique platform-wide (the edge finds the
 * account by the realm), so claiming one another account holds is a 409, and removing one that
 * devices still authenticate in is refused: they would stop registering.
 */
import type { Static } from "@sinclair/typebox";
import type { ConfigFileModel } from "./config-file.model.ts";
import { deleteSipDomain, devicesInRealm, domainsOfOtherAccounts, insertSipDomain, listSipDomains, updateSipDomain } from "./config.store.ts";
import { byText, rejectDuplicateKeys, type Section } from "./section.ts";

export type SipDomainCanonical = { domain: string; is_primary: number };

type SipDomainEntry = Static<typeof ConfigFileModel.SipDomainEntry>;

/** The sip_domains section: keyed by domain (which is also the row's id). */
export const sipDomainSection: Section<SipDomainCanonical> = {
  name: "sip_domains",
  label: "SIP domain",
  keyFields: ["domain"],
  keyOf: (e) => e.domain,
  compare: (a, b) => b.is_primary - a.is_primary || byText(a.domain, b.domain),

  async canonicalize(entries, ctx) {
    const out = (entries as SipDomainEntry[]).map((raw, i) => ({ entry: { domain: raw.domain, is_primary: raw.is_primary ?? 0 }, at: `/sip_domains/${i}` }));
    const unique = rejectDuplicateKeys(this, out, ctx.errors, "domain");
    const primaries = unique.filter((d) => d.entry.is_primary === 1);
    if (unique.length > 0 && primaries.length !== 1) {
      const at = primaries[1]?.at ?? unique[0]!.at;
      ctx.errors.push({ path: `${at}/is_primary`, message: `Exactly one SIP domain must have is_primary: 1 (the file has ${primaries.length}).` });
    }
    return unique;
  },

  async load(db, accountId) {
    return (await listSipDomains(db, accountId)).map((row) => ({ id: row.domain, entry: { domain: row.domain, is_primary: row.is_primary } }));
  },

  async checkCreates(db, accountId, creates) {
    const taken = new Set(await domainsOfOtherAccounts(db, accountId, creates.map((c) => c.entry.domain)));
    return creates
      .filter((c) => taken.has(c.entry.domain))
      .map((c) => ({ path: `${c.at}/domain`, message: `${c.entry.domain} is already the SIP domain of another account.` }));
  },

  async checkDeletes(db, accountId, doomed) {
    const problems: Array<{ kind: string; id: string; message: string }> = [];
    for (const { entry } of doomed) {
      for (const id of await devicesInRealm(db, accountId, entry.domain, 5)) {
        problems.push({ kind: "device", id, message: `SIP domain ${entry.domain} is the realm of device ${id}` });
      }
    }
    return problems;
  },

  async create(tx, w, entry) {
    await insertSipDomain(tx, { domain: entry.domain, account_id: w.accountId, is_primary: entry.is_primary, created_at: w.now });
    return entry.domain;
  },

  async update(tx, w, id, entry) {
    await updateSipDomain(tx, w.accountId, id, entry.is_primary);
  },

  async remove(tx, w, id) {
    await deleteSipDomain(tx, w.accountId, id);
  },
};
