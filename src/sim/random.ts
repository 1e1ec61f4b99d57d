// Seeded randomness: every random choice of a simulation comes from here, so a seed fixes the run.

/** A source of uniform numbers in [0, 1), like Math.random. */
export type Random = () => number;

/** mulberry32: small, fast, good enough for jitter and placement. */
export function seededRandom(seed: number): Random {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** An independent stream for one named actor: same seed and name, same numbers. */
export function forkRandom(seed: number, name: string): Random {
  let h = 2166136261 ^ (seed >>> 0);
  for (let i = 0; i < name.length; i++) h = Math.imul(h ^ name.charCodeAt(i), 16777619);
  return seededRandom(h >>> 0);
}

/** A random id of hex digits (boot IDs, pod name suffixes). */
export function randomHex(random: Random, digits: number): string {
  let out = '';
  for (let i = 0; i < digits; i++) out += Math.floor(random() * 16).toString(16);
  return out;
}

/** A boot ID in the kernel's UUID format. */
export function randomBootId(random: Random): string {
  const h = randomHex(random, 32);
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}
