/**
 * The grantable scopes (SPEC.md section 5). `*` grants everything. A credential may only mint
 * another credential with scopes it holds itself.
 */

/** Every scope with what it grants, in the order GET /v1/scopes lists them. */
export const SCOPE_CATALOG = [
  { name: "*", description: "Everything." },
  { name: "account", description: "Read and edit the account's self-service settings." },
  { name: "keys", description: "List, mint and revoke API keys." },
  { name: "accounts", description: "List subaccounts (resellers and operators)." },
  { name: "usage", description: "Usage, spend and balance." },
  { name: "cdr", description: "Calls / CDR read and export; live snapshot; logs; CAC reset." },
  { name: "calls", description: "Click to call and live call control." },
  { name: "agents", description: "Read agent state; drive agent state." },
  { name: "queues", description: "Read queues and KPIs; manage queues, members and options." },
  { name: "numbers", description: "Read and manage numbers (DIDs)." },
  { name: "extensions", description: "Manage extensions." },
  { name: "ringgroups", description: "Manage ring groups." },
  { name: "schedules", description: "Manage business-hours schedules." },
  { name: "users", description: "Manage users and their devices." },
  { name: "flows", description: "Manage, validate, test and publish call flows." },
  { name: "recordings", description: "Recordings, transcripts and summaries." },
  { name: "voicemail", description: "Voicemail boxes and messages." },
  { name: "media", description: "Upload and manage prompts, music on hold and greetings." },
  { name: "fax", description: "Send, list and delete faxes." },
  { name: "dnc", description: "Manage the do-not-call list." },
  { name: "campaign", description: "Manage dialer campaigns." },
  { name: "webhooks", description: "Manage webhooks." },
  { name: "events", description: "Mint tickets for the realtime event stream." },
  { name: "wallboard", description: "Realtime wallboard data and socket." },
  { name: "messaging", description: "Send messages; the omnichannel inbox; templates." },
  { name: "channels", description: "Manage messaging channels." },
  { name: "contacts", description: "Phonebook and internal directory." },
  { name: "scripts", description: "Agent scripts." },
  { name: "fields", description: "Custom fields." },
  { name: "conferences", description: "Conferences and their moderation." },
  { name: "softphone", description: "Mint ephemeral WebRTC SIP credentials." },
  { name: "caller_id", description: "Manage per-user caller-ID (console)." },
  { name: "teams", description: "Direct routing for a team-collaboration suite." },
  { name: "reports", description: "Queue, agent, team and pause reports; live polled snapshots." },
] as const;

export type Scope = (typeof SCOPE_CATALOG)[number]["name"];

const KNOWN = new Set<string>(SCOPE_CATALOG.map((s) => s.name));

/** True when `name` is a grantable scope. */
export function isScope(name: string): name is Scope {
  return KNOWN.has(name);
}

/** True when a credential holding `held` may act with `needed`. */
export function hasScope(held: readonly string[], needed: string): boolean {
  return held.includes("*") || held.includes(needed);
}

/** The scopes in `requested` that `held` cannot grant (empty when all are grantable). */
export function ungrantable(held: readonly string[], requested: readonly string[]): string[] {
  if (held.includes("*")) return [];
  return requested.filter((s) => !held.includes(s));
}
