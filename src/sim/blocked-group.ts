// The report's blocked time, grouped by the blocker a status reason names.
/** Phases in which a node that needs a reboot is held back (the report's blocked time). */
export const HELD_BACK = ['blocked', 'waiting-for-lock', 'outside-window', 'awaiting-approval'];

const BLOCKERS: [RegExp, string][] = [
  [/^halted: .* quarantined/, 'max-quarantined'],
  [/^quarantined/, 'quarantine'],
  [/other nodes? unhealthy/, 'health'],
  [/alert/i, 'prometheus'],
  [/blocking pod/i, 'pods'],
  [/PodDisruptionBudget|\bPDB\b/, 'pdb'],
  [/paus/i, 'pause'],
];

/** The fleet gates that hold a waiter back (its reason names one), shown apart from a plain wait. */
const GATES: [RegExp, string][] = [
  [/(^|: )halted: .* quarantined/, 'max-quarantined'],
  [/other nodes? unhealthy/, 'max-unhealthy-nodes'],
];

/** "blocked: pods", "blocked: prometheus", "waiting-for-lock", … — grouped by the blocker the reason names. */
export function blockedGroup(phase: string, reason: string): string {
  if (phase === 'waiting-for-lock') {
    const gate = GATES.find(([pattern]) => pattern.test(reason));
    return gate ? `waiting-for-lock: ${gate[1]}` : phase;
  }
  if (phase !== 'blocked') return phase;
  const known = BLOCKERS.find(([pattern]) => pattern.test(reason));
  if (known) return `blocked: ${known[1]}`;
  const head = /^[a-z-]+/i.exec(reason.trim())?.[0];
  return head ? `blocked: ${head}` : 'blocked';
}
