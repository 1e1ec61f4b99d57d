// A wave: the reboots that follow one another from the first need recorded while no node waits or is
// in a cycle until none does (patch night). Each node says on itself, in two labels its own agent
// writes (under its admission policy: only its own Node), which wave it is in and how far it got:
//
//   kured-ts.dev/wave=<id>          the wave of its current (or last) reboot, from its need on
//   kured-ts.dev/wave-state=waiting  it needs its reboot (waiting, or in its cycle: the cycle label says which)
//                          back     its reboot is done; it soaks (--soak) and its health checks run
//                          soaked   back and Ready for --soak on its own clock, the checks passed
//                          failed   quarantined, reboot failed, not back in time, a check failed after it
//
// The node about to take a slot counts these by label selector (src/capacity/wave-census.ts): the wave's
// slow start, soak, failure budget and group order are judged from what each node says of itself,
// which no single stolen token can say for another node (DESIGN §12). The wave's id itself is kept on
// the lock's DaemonSet (WAVE_ANNOTATION) so that nodes recording their need at the same moment join
// one wave: written with the DaemonSet's resourceVersion, by the node that starts a wave.

/** The wave of the node's current or last reboot (a label value: WAVE_ID). */
export const WAVE_LABEL = 'kured-ts.dev/wave';
/** How far the node got in its wave (WaveState). */
export const WAVE_STATE_LABEL = 'kured-ts.dev/wave-state';
/** On the lock's DaemonSet: the id of the last wave started. */
export const WAVE_ANNOTATION = 'kured-ts.dev/wave';
/**
 * On the lock's DaemonSet: the failures an operator's `kured-ts resume` acknowledged (WaveResume as
 * JSON): they no longer count against the wave's budget. Written by operators only (the agents' policy
 * forbids it).
 */
export const WAVE_RESUMED_ANNOTATION = 'kured-ts.dev/wave-resumed';

export const WAVE_STATES = ['waiting', 'back', 'soaked', 'failed'] as const;
export type WaveState = (typeof WAVE_STATES)[number];

/** A wave id: `w` and the UTC time it started (its starter's clock), and 6 hex digits of its starter. */
export const WAVE_ID = /^w[0-9]{8}-[0-9]{6}-[0-9a-f]{6}$/;

/** The node's wave and state as its labels say (undefined when it carries none, or not ours). */
export function waveOf(
  labels: Readonly<Record<string, string>>,
): { wave: string; state: WaveState | undefined } | undefined {
  const wave = labels[WAVE_LABEL];
  if (wave === undefined || !WAVE_ID.test(wave)) return undefined;
  return { wave, state: WAVE_STATES.find((s) => s === labels[WAVE_STATE_LABEL]) };
}

/** FNV-1a of `text`, 24 bits as 6 hex digits (no crypto: a name, not a secret). */
function shortHash(text: string): string {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return (h & 0xffffff).toString(16).padStart(6, '0');
}

/** A new wave's id, started by `node` at `now`. */
export function newWaveId(now: Date, node: string): string {
  const iso = now.toISOString();
  const day = iso.slice(0, 10).replace(/-/g, '');
  const time = iso.slice(11, 19).replace(/:/g, '');
  return `w${day}-${time}-${shortHash(`${node}@${iso}`)}`;
}

/** The labels that put a node in `wave` at `state`. */
export function waveLabels(wave: string, state: WaveState): Record<string, string> {
  return { [WAVE_LABEL]: wave, [WAVE_STATE_LABEL]: state };
}

/** What `kured-ts resume` acknowledged: these failed nodes of `wave` no longer count against its budget. */
export interface WaveResume {
  wave: string;
  nodes: string[];
  by: string;
  /** RFC 3339. */
  at: string;
}

/** The annotation's value; undefined when absent or unreadable (then nothing is acknowledged). */
export function parseWaveResume(raw: string | undefined): WaveResume | undefined {
  if (raw === undefined) return undefined;
  try {
    const v = JSON.parse(raw) as Record<string, unknown>;
    if (typeof v.wave !== 'string' || !Array.isArray(v.nodes)) return undefined;
    return {
      wave: v.wave,
      // bounded: a resume names the failures of one halt, a few nodes
      nodes: v.nodes.filter((n): n is string => typeof n === 'string').slice(0, 5000),
      by: typeof v.by === 'string' ? v.by.slice(0, 128) : '',
      at: typeof v.at === 'string' ? v.at : '',
    };
  } catch {
    return undefined;
  }
}

export function formatWaveResume(resume: WaveResume): string {
  return JSON.stringify(resume);
}
