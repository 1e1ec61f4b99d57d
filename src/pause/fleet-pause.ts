// The fleet pause: one annotation on the lock's DaemonSet that stops every reboot (`kured-ts pause`,
// DESIGN §4). Its one codec: `pause` writes it, the agent's PauseBlocker, `resume` and `status` read it.

/** The fleet pause annotation on the lock's DaemonSet. */
export const FLEET_PAUSE_ANNOTATION = 'kured-ts.dev/paused';

/** The value of the fleet pause annotation. */
export interface FleetPause {
  reason: string;
  by: string;
  /** RFC 3339. */
  since: string;
  /** Set when the value is not our JSON: it still pauses (someone meant to stop the fleet). */
  unreadable?: string;
  /** A wave halted by its failure budget (by HALT_BY): the wave, and the failed nodes that halted it. */
  wave?: string;
  failed?: string[];
}

/**
 * Who writes a halt: the agent of a node that failed (or of the node about to go) once its wave's
 * --max-failures is spent. Its admission policy lets it add the pause annotation, with this `by`,
 * only where none stands, and never change or remove one: `kured-ts resume` lifts it.
 */
export const HALT_BY = 'kured-ts/max-failures';

/** Is this pause a wave halted by its failure budget (HALT_BY)? */
export function isWaveHalt(pause: FleetPause | undefined): pause is FleetPause {
  return pause?.by === HALT_BY && pause.unreadable === undefined;
}

/**
 * The longest text kept of each field: a pause's reason goes into every node's status, Events and
 * logs, and anyone who can write the annotation chose its size (the API server allows 256 KiB).
 */
const MAX_TEXT = 512;
/** The failed nodes kept of a halt (it names those that spent a budget: a few). */
const MAX_FAILED = 100;

function text(value: unknown): string {
  return typeof value === 'string' ? value.slice(0, MAX_TEXT) : '';
}

/** The annotation's value as read; undefined when there is none. */
export function parseFleetPause(raw: string | undefined): FleetPause | undefined {
  if (raw === undefined) return undefined;
  try {
    const parsed: unknown = JSON.parse(raw);
    if (typeof parsed === 'object' && parsed !== null) {
      const p = parsed as Record<string, unknown>;
      const failed = Array.isArray(p.failed)
        ? p.failed
            .filter((n): n is string => typeof n === 'string')
            .slice(0, MAX_FAILED)
            .map(text)
        : undefined;
      return {
        reason: text(p.reason),
        by: text(p.by),
        since: text(p.since),
        ...(typeof p.wave === 'string' ? { wave: text(p.wave) } : {}),
        ...(failed === undefined ? {} : { failed }),
      };
    }
  } catch {
    // fall through: unreadable, still a pause
  }
  return { reason: '', by: '', since: '', unreadable: raw.slice(0, 80) };
}

/** The annotation's value for a pause. */
export function formatFleetPause(pause: FleetPause): string {
  return JSON.stringify({
    reason: pause.reason,
    by: pause.by,
    since: pause.since,
    ...(pause.wave === undefined ? {} : { wave: pause.wave }),
    ...(pause.failed === undefined ? {} : { failed: pause.failed }),
  });
}

/** "fleet paused by alice since 2026-01-05T10:00:00Z: kernel regression": the agent's reason. */
export function describeFleetPause(pause: FleetPause): string {
  if (pause.unreadable !== undefined) {
    return `fleet paused (${FLEET_PAUSE_ANNOTATION} is not JSON: ${pause.unreadable})`;
  }
  const by = pause.by === '' ? '' : ` by ${pause.by}`;
  const since = pause.since === '' ? '' : ` since ${pause.since}`;
  const reason = pause.reason === '' ? '' : `: ${pause.reason}`;
  return `fleet paused${by}${since}${reason}`;
}
