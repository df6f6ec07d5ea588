/**
 * A TCP address that drops connection attempts, as a firewalled or dead host does: a listener whose
 * accept queue is full and never drained, so the kernel drops every further SYN (the connecting side
 * waits until its own timeout). Python, because JavaScript runtimes accept at once.
 */
export interface Blackhole {
  port: number;
  /** Ends the listener: later SYN retries are refused (RST), so pending connects end. */
  stop(): Promise<void>;
}

/**
 * Starts one on `host` (default 127.0.0.1) and `port` (default: any free one). With `acceptAfterMs`,
 * it starts accepting (and keeps what it accepts) that long after it is up: a connect whose SYN was
 * dropped then opens at the kernel's next retransmission (a second after the first SYN).
 * @example const hole = await startBlackhole("127.0.0.2", receiver.port); … await hole.stop();
 */
export async function startBlackhole(host = "127.0.0.1", port = 0, options: { acceptAfterMs?: number } = {}): Promise<Blackhole> {
  const wait =
    options.acceptAfterMs === undefined
      ? ["sys.stdin.read()"]
      : [
          `time.sleep(${options.acceptAfterMs / 1000})`,
          "ls.settimeout(0.2); kept = []",
          "while True:",
          "  try: kept.append(ls.accept()[0])",
          "  except socket.timeout: pass",
        ];
  const script = [
    "import socket, time, sys",
    `ls = socket.socket(); ls.bind((${JSON.stringify(host)}, ${port})); ls.listen(0)`,
    "held = [socket.socket() for _ in range(3)]",
    "for h in held:",
    "  h.setblocking(False)",
    "  try: h.connect(ls.getsockname())",
    "  except BlockingIOError: pass",
    "time.sleep(0.2)",
    "print(ls.getsockname()[1], flush=True)",
    ...wait,
  ].join("\n");
  const child = Bun.spawn(["python3", "-c", script], { stdin: "pipe", stdout: "pipe", stderr: "inherit" });
  const reader = child.stdout.getReader();
  let text = "";
  while (!text.includes("\n")) {
    const { value, done } = await reader.read();
    if (done) throw new Error("the blackhole listener did not start");
    text += new TextDecoder().decode(value);
  }
  reader.releaseLock();
  return {
    port: Number(text.trim()),
    async stop() {
      child.kill();
      await child.exited;
    },
  };
}
