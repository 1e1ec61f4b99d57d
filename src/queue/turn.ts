// A node's turn at the lock: the coordinator (src/coordinator) names the waiting node whose reboot
// has been needed longest for each free slot by this annotation on that node, and the node's agent,
// which follows only its own Node while it waits, takes the slot. The turn is a wake-up call, not
// authority: the agent still takes its slot by the lock's own guarded write and rules (room,
// --concurrency, groups, the cycle records), so a stale, duplicated or forged turn can change who
// goes first, never how many go.

/** Node annotation: the coordinator's turn for this node (JSON `{"since":"…","by":"…"}`). */
export const TURN_ANNOTATION = 'kured-ts.dev/lock-turn';

/** What the turn annotation records. */
export interface Turn {
  /** RFC 3339, the coordinator's wall clock: for people; nobody compares it with another clock. */
  since: string;
  /** The coordinator (its Lease holder identity) that gave the turn. */
  by: string;
}

/** The JSON object in an annotation's text; undefined when absent or not an object. */
function objectOf(text: string | undefined): Record<string, unknown> | undefined {
  if (text === undefined || text === '') return undefined;
  try {
    const value: unknown = JSON.parse(text);
    return typeof value === 'object' && value !== null ? (value as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

/** The turn an object records (its since and by), if it records one. */
function turnOf(value: Record<string, unknown> | undefined): Turn | undefined {
  const since = value?.since;
  const by = value?.by;
  return typeof since === 'string' && typeof by === 'string' ? { since, by } : undefined;
}

/** The turn in an annotation's text; undefined when absent or unreadable (no turn: fail safe). */
export function parseTurn(text: string | undefined): Turn | undefined {
  return turnOf(objectOf(text));
}

export function formatTurn(turn: Turn): string {
  return JSON.stringify({ since: turn.since, by: turn.by });
}

/**
 * A turn the coordinator took back unused after the grace, written in the turn annotation in its
 * place (`{"lapsed":{"since","by","at"}}`): no turn to any reader (an older agent's parseTurn finds
 * no since and by at the top), and to this node's agent, on its next look whatever it remembers (a
 * restarted agent, or one that was not watching), the word to say it is alive (lapsedTurnReason).
 */
export interface LapsedTurn {
  turn: Turn;
  /** RFC 3339, the coordinator's wall clock: when the turn was taken back. */
  at: string;
}

/** The lapsed turn in an annotation's text; undefined when it holds none. */
export function parseLapsedTurn(text: string | undefined): LapsedTurn | undefined {
  const lapsed = objectOf(text)?.lapsed;
  if (typeof lapsed !== 'object' || lapsed === null) return undefined;
  const record = lapsed as Record<string, unknown>;
  const turn = turnOf(record);
  return turn === undefined || typeof record.at !== 'string' ? undefined : { turn, at: record.at };
}

export function formatLapsedTurn(lapsed: LapsedTurn): string {
  return JSON.stringify({ lapsed: { since: lapsed.turn.since, by: lapsed.turn.by, at: lapsed.at } });
}
