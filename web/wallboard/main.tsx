/**
 * The supervisor wallboard. It checks the host is up and says plainly that live tiles arrive with the
 * realtime event feed; it shows no made-up numbers.
 */
import { createRoot } from "react-dom/client";
import { useEffect, useState } from "react";

function Wallboard() {
  const [ready, setReady] = useState<boolean | null>(null);
  useEffect(() => {
    fetch("/readyz").then((r) => setReady(r.ok), () => setReady(false));
  }, []);
  return (
    <main>
      <h1>Parley wallboard</h1>
      <section className="card">
        <p>Realtime host: {ready === null ? "checking…" : ready ? "ready" : "not ready"}.</p>
        <p>Live queue and agent tiles appear here once the realtime event feed is enabled on this platform.</p>
      </section>
    </main>
  );
}

createRoot(document.getElementById("root")!).render(<Wallboard />);
