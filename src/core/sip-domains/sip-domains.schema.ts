import { index, pgTable, text } from "drizzle-orm/pg-core";
import { epochSeconds, flag } from "../db/columns.ts";

/**
 * SIP domains (config-managed): the realms an account answers on. A domain is unique platform-wide
 * and the edge looks an incoming realm up by it, so this is a global reference table keyed by domain.
 */
export const sipDomains = pgTable(
  "sip_domain",
  {
    domain: text("domain").primaryKey(),
    account_id: text("account_id").notNull(),
    is_primary: flag("is_primary").notNull().default(0),
    created_at: epochSeconds("created_at").notNull(),
  },
  (t) => [index("sip_domain_account_idx").on(t.account_id)],
);
