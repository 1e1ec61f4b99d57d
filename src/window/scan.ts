// Finding a window's next open/close by scanning: simple, zone- and DST-proof, and bounded.

/** How far ahead `next()` looks: a little over a week, so every weekly window is found. */
export const HORIZON_MS = 8 * 24 * 3600 * 1000;

const MINUTE = 60_000;
const SECOND = 1000;

/**
 * The first instant after `at` at which `contains` differs from its value at `at`, to the second.
 * Steps a minute at a time, then refines second by second inside the minute where the state
 * flipped; windows shorter than a minute may therefore be stepped over (none is that short in
 * practice: cron windows last whole minutes).
 */
export function nextChange(
  contains: (at: Date) => boolean,
  at: Date,
  horizonMs = HORIZON_MS,
): { inside: boolean; change: Date | undefined } {
  const inside = contains(at);
  const start = at.getTime();
  for (let t = start + MINUTE; t <= start + horizonMs; t += MINUTE) {
    if (contains(new Date(t)) !== inside) {
      return { inside, change: refine(contains, inside, t - MINUTE, t) };
    }
  }
  return { inside, change: undefined };
}

function refine(contains: (at: Date) => boolean, inside: boolean, from: number, to: number): Date {
  for (let t = Math.floor(from / SECOND) * SECOND + SECOND; t < to; t += SECOND) {
    if (contains(new Date(t)) !== inside) return new Date(t);
  }
  return new Date(to);
}
