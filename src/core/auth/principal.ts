/** Who is calling: resolved from an API key or a session token, never from a path or query. */
export interface Principal {
  accountId: string;
  scopes: string[];
  /** `key` for an API key, `token` for a console session token (JWT). */
  via: "key" | "token";
  /** The API key's id (sk_…) when via is key. */
  keyId?: string;
  /** The console user's id (cu_…) when via is token. */
  consoleUserId?: string;
  /** Epoch ms the session token expires at, when via is token. */
  expiresAt?: number;
}
