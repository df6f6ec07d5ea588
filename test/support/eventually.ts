/**
 * Retries `check` until it passes (returns without throwing) or `timeoutMs` has passed, then throws
 * its last error: for what happens asynchronously (events reaching a process, a timer firing).
 * @example const row = await eventually(async () => { const r = await find(); expect(r).toBeDefined(); return r; });
 */
export async function eventually<T>(check: () => Promise<T> | T, timeoutMs = 5000, everyMs = 25): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      return await check();
    } catch (error) {
      if (Date.now() > deadline) throw error;
      await Bun.sleep(everyMs);
    }
  }
}
