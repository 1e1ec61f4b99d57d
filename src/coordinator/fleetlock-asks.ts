// When the coordinator last saw each node holding a turn say that the FleetLock server refused it
// (its status' fleetLockAsked changed to another time): a node whose agent keeps asking keeps its turn
// (turn-plan.ts, FLEETLOCK_TURN_GRACE_MS), on this coordinator's own monotonic clock. A value first
// seen is only a baseline (taken as the turn is given, or as this coordinator first sees the turn
// after taking the lead): it may be from before the turn, and says nothing of the agent being alive
// now; only a change to another time does. A status that no longer carries one (the agent waits for
// something else now) ends the keeping: the turn's own grace applies again.
import type { NodeRecord } from './fleet-view.js';

interface Sighting {
  asked: string | undefined;
  /** Monotonic ms the value was seen to change; undefined for a baseline. */
  seenMs: number | undefined;
}

export class FleetLockAsks {
  private sightings = new Map<string, Sighting>();

  /** Takes in the nodes holding a turn now; the others are forgotten. */
  note(withTurn: Iterable<NodeRecord>, nowMs: number): void {
    const next = new Map<string, Sighting>();
    for (const r of withTurn) {
      if (r.turn === undefined) continue;
      const asked = r.status?.fleetLockAsked;
      next.set(r.name, sighting(this.sightings.get(r.name), asked, nowMs));
    }
    this.sightings = next;
  }

  /**
   * A turn was just given to `node`, whose status says `asked`: the baseline, taken before its agent
   * can answer (else a question asked before the next plan would read as the baseline, not news).
   */
  granted(node: string, asked: string | undefined): void {
    this.sightings.set(node, { asked, seenMs: undefined });
  }

  /** Monotonic ms each node holding a turn was last seen asking the FleetLock server anew. */
  seen(): ReadonlyMap<string, number> {
    const seen = new Map<string, number>();
    for (const [node, s] of this.sightings) if (s.seenMs !== undefined) seen.set(node, s.seenMs);
    return seen;
  }
}

/**
 * What a look at a node holding a turn makes of its status' `asked`, seen `prev` before: a question
 * other than the last seen is news (seen now); the same one changes nothing; none (the agent waits
 * for something else now) or a first sight is a baseline.
 */
function sighting(prev: Sighting | undefined, asked: string | undefined, nowMs: number): Sighting {
  if (prev === undefined || asked === undefined) return { asked, seenMs: undefined };
  return asked === prev.asked ? prev : { asked, seenMs: nowMs };
}
