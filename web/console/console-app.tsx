/**
 * The management console: sign in with email and password (POST /login), then manage the account
 * and its API keys through the public API with the session token. The token lives in sessionStorage
 * (header credentials, no cookies) and is dropped at sign-out or when it expires.
 */
import { useEffect, useState, type FormEvent } from "react";
import { call, errorText, loadEndpoints, type Endpoints } from "../shared/api.ts";

interface Session {
  token: string;
  scopes: string[];
  expiresAt: number;
}
interface Account {
  id: string;
  name: string;
  status: string;
  timezone: string;
  language: string;
  tone_country: string;
}
interface ApiKey {
  id: string;
  label: string | null;
  scopes: string[];
  secret_hint: string;
  created_at: number;
}

const SESSION_KEY = "parley.session";

function savedSession(): Session | null {
  try {
    const s = JSON.parse(sessionStorage.getItem(SESSION_KEY) ?? "null") as Session | null;
    return s && s.expiresAt > Date.now() ? s : null;
  } catch {
    return null; // A corrupt entry is the same as none: sign in again.
  }
}

export function ConsoleApp() {
  const [endpoints, setEndpoints] = useState<Endpoints | null>(null);
  const [session, setSession] = useState<Session | null>(savedSession);
  useEffect(() => void loadEndpoints().then(setEndpoints), []);
  if (!endpoints) return <main>Loading…</main>;
  if (!session) {
    return (
      <LoginForm
        onLogin={(s) => {
          sessionStorage.setItem(SESSION_KEY, JSON.stringify(s));
          setSession(s);
        }}
      />
    );
  }
  const signOut = () => {
    sessionStorage.removeItem(SESSION_KEY);
    setSession(null);
  };
  return <Dashboard endpoints={endpoints} session={session} onSignOut={signOut} />;
}

function LoginForm({ onLogin }: { onLogin: (s: Session) => void }) {
  const [email, setEmail] = useState("");
  const [password, setPassword] = useState("");
  const [error, setError] = useState<string | null>(null);
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    setError(null);
    try {
      const r = await call<{ token: string; scopes: string[]; expires_in: number }>("/login", {
        method: "POST",
        body: JSON.stringify({ email, password }),
      });
      onLogin({ token: r.token, scopes: r.scopes, expiresAt: Date.now() + r.expires_in * 1000 });
    } catch (err) {
      setError(errorText(err));
    }
  };
  return (
    <main>
      <h1>Parley console</h1>
      <form className="card" onSubmit={submit} aria-label="Sign in">
        <label htmlFor="email">Email</label>
        <input id="email" type="email" autoComplete="username" value={email} onChange={(e) => setEmail(e.target.value)} required />
        <label htmlFor="password">Password</label>
        <input id="password" type="password" autoComplete="current-password" value={password} onChange={(e) => setPassword(e.target.value)} required />
        <button type="submit">Sign in</button>
        {error && <p className="error" role="alert">{error}</p>}
      </form>
    </main>
  );
}

function Dashboard({ endpoints, session, onSignOut }: { endpoints: Endpoints; session: Session; onSignOut: () => void }) {
  const api = endpoints.publicUrl;
  const [account, setAccount] = useState<Account | null>(null);
  const [keys, setKeys] = useState<ApiKey[]>([]);
  const [label, setLabel] = useState("");
  const [newSecret, setNewSecret] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);

  const refresh = async () => {
    try {
      setAccount((await call<{ data: Account }>(`${api}/v1/account`, { token: session.token })).data);
      if (session.scopes.includes("*") || session.scopes.includes("keys")) {
        setKeys((await call<{ data: ApiKey[] }>(`${api}/v1/keys?limit=500`, { token: session.token })).data);
      }
    } catch (err) {
      setError(errorText(err));
      if ((err as { error?: string }).error === "unauthorized") onSignOut();
    }
  };
  useEffect(() => void refresh(), []);

  const mint = async (e: FormEvent) => {
    e.preventDefault();
    setError(null);
    try {
      const r = await call<{ data: { secret: string } }>(`${api}/v1/keys`, {
        method: "POST",
        token: session.token,
        body: JSON.stringify(label ? { label } : {}),
      });
      setNewSecret(r.data.secret);
      setLabel("");
      await refresh();
    } catch (err) {
      setError(errorText(err));
    }
  };
  const revoke = async (id: string) => {
    try {
      await call(`${api}/v1/keys/${id}`, { method: "DELETE", token: session.token });
      await refresh();
    } catch (err) {
      setError(errorText(err));
    }
  };

  return (
    <main>
      <header>
        <h1>{account ? account.name : "Parley console"}</h1>
        <button className="secondary" onClick={onSignOut}>Sign out</button>
      </header>
      {error && <p className="error" role="alert">{error}</p>}
      {account && (
        <section className="card" aria-label="Account">
          <div>Account <code>{account.id}</code> · {account.status}</div>
          <div>Time zone {account.timezone} · language {account.language} · ringback {account.tone_country}</div>
        </section>
      )}
      <h2>API keys</h2>
      <section className="card" aria-label="API keys">
        <table>
          <thead>
            <tr><th>Label</th><th>Key</th><th>Scopes</th><th /></tr>
          </thead>
          <tbody>
            {keys.map((k) => (
              <tr key={k.id}>
                <td>{k.label ?? "—"}</td>
                <td><code>…{k.secret_hint}</code></td>
                <td>{k.scopes.join(", ")}</td>
                <td><button className="secondary" onClick={() => revoke(k.id)}>Revoke</button></td>
              </tr>
            ))}
          </tbody>
        </table>
        <form onSubmit={mint}>
          <label htmlFor="label">New key label</label>
          <input id="label" value={label} onChange={(e) => setLabel(e.target.value)} maxLength={100} />
          <button type="submit">Create key</button>
        </form>
        {newSecret && (
          <p>
            Copy this key now; it is not shown again:
            <br />
            <span className="secret" data-testid="new-secret">{newSecret}</span>
          </p>
        )}
      </section>
    </main>
  );
}
