/**
 * The scope_kind / scope_id pair of number transforms and policies. In the file a scope is written
 * with a human key (`scope_kind: user`, `scope: alice`); in the database with the id it names.
 *
 *   account → the account itself (scope_id = the account id; no `scope` in the file)
 *   user    → a user of the account, by username (app_user)
 *   did, number → a DID of the account, by E.164 (number)
 *   trunk   → a trunk of the same file, by name (sip_trunk)
 *   route   → an outbound route of the same file, by name (outbound_route)
 */
import { normalizeE164 } from "../validation/fields.ts";
import type { NameBook, ResolveContext, WriteContext } from "./section.ts";

export type ScopeKind = "account" | "user" | "did" | "number" | "trunk" | "route";

/**
 * Checks a file entry's scope and returns its canonical human key (null for account). Problems are
 * pushed to ctx.errors at `<at>/scope` (the value is kept as written so later checks still run).
 */
export function resolveScope(kind: ScopeKind, scope: string | null | undefined, at: string, ctx: ResolveContext): string | null {
  const path = `${at}/scope`;
  if (kind === "account") {
    if (scope !== undefined && scope !== null) ctx.errors.push({ path, message: "An account-wide entry takes no scope; leave scope out." });
    return null;
  }
  if (scope === undefined || scope === null || scope === "") {
    ctx.errors.push({ path, message: `scope_kind ${kind} needs a scope: ${SCOPE_HINT[kind]}.` });
    return null;
  }
  switch (kind) {
    case "user":
      if (!ctx.book.userIdByName.has(scope)) ctx.errors.push({ path, message: `No user with username '${scope}' in this account.` });
      return scope;
    case "did":
    case "number": {
      const e164 = normalizeE164(scope);
      if (!e164) {
        ctx.errors.push({ path, message: "Not an E.164 number." });
        return scope;
      }
      if (!ctx.book.numberIdByE164.has(e164)) ctx.errors.push({ path, message: `No number ${e164} in this account.` });
      return e164;
    }
    case "trunk":
      if (!ctx.fileTrunks.has(scope)) ctx.errors.push({ path, message: `No trunk named '${scope}' in this file.` });
      return scope;
    case "route":
      if (!ctx.fileRoutes.has(scope)) ctx.errors.push({ path, message: `No outbound route named '${scope}' in this file.` });
      return scope;
  }
}

const SCOPE_HINT: Record<Exclude<ScopeKind, "account">, string> = {
  user: "a username",
  did: "the DID's E.164 number",
  number: "the DID's E.164 number",
  trunk: "a trunk name of this file",
  route: "an outbound route name of this file",
};

/** The id a canonical scope names, for writing. Validation ran first, so a miss is a bug. */
export function scopeIdFor(kind: ScopeKind, scope: string | null, w: WriteContext): string {
  if (kind === "account") return w.accountId;
  const map = kind === "user" ? w.userIdByName : kind === "trunk" ? w.trunkIdByName : kind === "route" ? w.routeIdByName : w.numberIdByE164;
  const id = scope === null ? undefined : map.get(scope);
  if (!id) throw new Error(`unresolved ${kind} scope '${scope}' after validation`);
  return id;
}

/**
 * The human key of a stored scope. A scope whose target is gone (a user deleted since) shows its raw
 * id, so the export stays faithful and applying it back is refused instead of guessed.
 */
export function scopeKeyFor(kind: string, id: string, book: NameBook): string | null {
  switch (kind) {
    case "account":
      return null;
    case "user":
      return book.userNameById.get(id) ?? id;
    case "did":
    case "number":
      return book.numberE164ById.get(id) ?? id;
    case "trunk":
      return book.trunkNameById.get(id) ?? id;
    case "route":
      return book.routeNameById.get(id) ?? id;
    default:
      return id;
  }
}
