/** TypeBox models of credentials: API keys, console login, whoami, the scope catalog. */
import { Type as T, type Static } from "@sinclair/typebox";
import "../validation/formats.ts";

const ScopeName = T.String({ pattern: "^(\\*|[a-z_]+)$", maxLength: 40, description: "A scope name from GET /v1/scopes." });

export namespace AuthModel {
  /** GET /v1/whoami: exactly the fields SPEC.md shows. */
  export const Whoami = T.Object({
    accountId: T.String(),
    scopes: T.Array(T.String()),
    via: T.Union([T.Literal("key"), T.Literal("token")], { description: "key for an API key, token for a session token." }),
  });
  export type Whoami = Static<typeof Whoami>;

  export const ScopeEntry = T.Object({ name: T.String(), description: T.String() });

  /** An API key as listed: never its secret. */
  export const ApiKey = T.Object({
    id: T.String({ description: "sk_… id (not the secret)." }),
    label: T.Union([T.String(), T.Null()]),
    scopes: T.Array(T.String()),
    secret_hint: T.String({ description: "Last four characters of the secret, to tell keys apart." }),
    created_at: T.Integer({ description: "Epoch seconds." }),
  });
  export type ApiKey = Static<typeof ApiKey>;

  /** A freshly minted key: the only time its secret is ever shown. */
  export const ApiKeyCreated = T.Object({
    id: T.String(),
    secret: T.String({ description: "The API key (sk_…). Shown once; store it now." }),
    label: T.Union([T.String(), T.Null()]),
    scopes: T.Array(T.String()),
    secret_hint: T.String(),
    created_at: T.Integer(),
  });
  export type ApiKeyCreated = Static<typeof ApiKeyCreated>;

  /** POST /v1/keys. Scopes default to the caller's own; a key can only grant scopes its creator holds. */
  export const CreateKey = T.Object(
    {
      label: T.Optional(T.String({ minLength: 1, maxLength: 100 })),
      scopes: T.Optional(T.Array(ScopeName, { minItems: 1, maxItems: 64, uniqueItems: true })),
    },
    { additionalProperties: false },
  );
  export type CreateKey = Static<typeof CreateKey>;

  /** DELETE /v1/keys with a body (the id may also be in the path). */
  export const RevokeKey = T.Object({ id: T.String({ minLength: 1, maxLength: 64 }) }, { additionalProperties: false });

  /** POST /admin/keys (control host). */
  export const AdminCreateKey = T.Object(
    {
      account_id: T.String({ minLength: 1 }),
      label: T.Optional(T.String({ minLength: 1, maxLength: 100 })),
      scopes: T.Optional(T.Array(ScopeName, { minItems: 1, maxItems: 64, uniqueItems: true })),
    },
    { additionalProperties: false },
  );
  export type AdminCreateKey = Static<typeof AdminCreateKey>;

  /** A console user as shown: never the password hash. */
  export const ConsoleUser = T.Object({
    id: T.String({ description: "cu_… id." }),
    account_id: T.String(),
    email: T.String(),
    scopes: T.Array(T.String()),
    user_id: T.Union([T.String(), T.Null()]),
    status: T.String(),
    created_at: T.Integer(),
  });
  export type ConsoleUser = Static<typeof ConsoleUser>;

  /** POST /admin/console-users (control host). */
  export const AdminCreateConsoleUser = T.Object(
    {
      account_id: T.String({ minLength: 1 }),
      email: T.String({ format: "email", maxLength: 254 }),
      password: T.String({ minLength: 10, maxLength: 200, description: "At least 10 characters." }),
      scopes: T.Optional(T.Array(ScopeName, { minItems: 1, maxItems: 64, uniqueItems: true })),
      user_id: T.Optional(
        T.String({ minLength: 1, maxLength: 64, description: "The account's user (us_…) this login acts as: an agent's own call (GET /v1/calls/mine) is this user's." }),
      ),
    },
    { additionalProperties: false },
  );
  export type AdminCreateConsoleUser = Static<typeof AdminCreateConsoleUser>;

  /** POST /login (console host). */
  export const Login = T.Object(
    {
      email: T.String({ minLength: 1, maxLength: 254 }),
      password: T.String({ minLength: 1, maxLength: 200 }),
    },
    { additionalProperties: false },
  );
  export type Login = Static<typeof Login>;

  /** POST /login reply: exactly the fields SPEC.md shows. */
  export const LoginReply = T.Object({
    ok: T.Literal(true),
    token: T.String(),
    token_type: T.Literal("Bearer"),
    expires_in: T.Integer({ description: "Seconds; 43200 (12 hours)." }),
    scopes: T.Array(T.String()),
  });
  export type LoginReply = Static<typeof LoginReply>;
}
