// The one way a test waits for something that happens in real time: poll a condition with a
// generous bound, so no assertion depends on how fast or loaded the machine is.

/** Long enough for a loaded 2-core CI runner; a condition that never holds fails with `what`. */
export const WAIT_FOR_MS = 30_000;

/** Resolves as soon as `condition()` holds; rejects naming `what` after `timeoutMs`. */
export async function waitFor(
  condition: () => boolean,
  what = 'the condition',
  timeoutMs = WAIT_FOR_MS,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting until ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

/**
 * Lets `ms` of real time pass: for code under test that runs on the system clock (an agent's loop, a
 * command, HTTP in flight to a fake server). A test that can inject a clock does instead.
 */
export function realDelay(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}
