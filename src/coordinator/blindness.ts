// Whether a leader can plan, and whether it hands the lead over when it cannot (issue 59): a leader
// that cannot see the fleet keeps its Lease and gives no turns, so after a lease duration it steps
// down for its standby. Not for what the standby would meet alike, and would pay again: its first
// list still being answered (every request of it has a deadline and bounded retries, so it ends),
// or the API server turning its reads away (429 of API Priority and Fairness; the standby acts as
// the same ServiceAccount, one flow with it); for at most MAX_BLIND_LEASES all the same. A new
// leader starts its list of every Node over: at 5,000 Nodes on bench:real, with 5,000 agents
// starting, the list took longer than a lease, and the leader handed over three times in a row, each
// new one starting the list over (the warning said lastFailure "": the list had not failed, only not
// ended).

/** Why a leader cannot plan: what it lacks, for how long, and whether the API server turned it away. */
export interface Blindness {
  reason: string;
  forMs: number;
  throttled: boolean;
  /** The view's last failed list or watch, in words ('' when none failed in this term). */
  lastFailure: string;
  /** Its first list (or read) is still being answered: nothing of it has failed yet. */
  answering: boolean;
}

/**
 * A leader waiting for its first list, or turned away (429), hands over all the same once blind this
 * many lease durations: its own path may be what fails (its connections kept on one overloaded
 * kube-apiserver of several, a proxy of its own, a request its deadline does not cover).
 */
export const MAX_BLIND_LEASES = 6;

/** What one of a leader's views says of itself. */
export interface ViewSight {
  /** It has what it needs: a whole list, or its one object read (and there). */
  synced: boolean;
  /** Its reflector has had an answer (a list, even of nothing): it is no longer being answered. */
  answered: boolean;
  /** Since when (monotonic ms) its list or watch has failed; undefined while it follows. */
  blindSince: number | undefined;
  /** Its last failure was a 429. */
  throttled: boolean;
  /** Its last failure, in words ('' when none). */
  lastFailure: string;
}

/** What a reflector (or the fleet view) says of itself; `has`: it holds what the leader needs (default: it is synced). */
export function sightOf(
  view: {
    synced: boolean;
    blindSince: number | undefined;
    failure: { lastFailure: string; throttled: boolean };
  },
  has = view.synced,
): ViewSight {
  return { synced: has, answered: view.synced, blindSince: view.blindSince, ...view.failure };
}

/**
 * Why a leader cannot plan `now`, its term begun at `started` (monotonic ms; blindness counts from
 * then at the earliest), from its two views; undefined: it can.
 */
export function blindnessOf(
  now: number,
  started: number,
  views: { nodes: ViewSight; lock: ViewSight },
): Blindness | undefined {
  const { nodes, lock } = views;
  const since = (view: ViewSight): number => now - Math.max(started, view.blindSince ?? started);
  // a view never synced has been blind since the term began; answering while no answer came and nothing failed
  const blind = (reason: string, view: ViewSight): Blindness => ({
    reason,
    forMs: view.synced ? since(view) : now - started,
    throttled: view.throttled,
    lastFailure: view.lastFailure,
    answering: !view.answered && view.lastFailure === '',
  });
  if (!nodes.synced) return blind('no list of the nodes yet', nodes);
  if (nodes.blindSince !== undefined) return blind('the watch of the nodes is failing', nodes);
  if (!lock.synced) return blind('the lock DaemonSet not read yet', lock);
  if (lock.blindSince !== undefined) return blind('the watch of the lock is failing', lock);
  return undefined;
}

/**
 * 'sees': it can plan; 'waits': blind for less than a lease duration, or its first list still being
 * answered; 'hands-over': blind for longer, for a reason of its own (its path to the server), or for
 * MAX_BLIND_LEASES whatever the reason; 'leads-on': blind for longer because the server turns it
 * away, which the standby would meet alike. The last two come with their warning.
 */
export function leadership(
  blind: Blindness | undefined,
  leaseMs: number,
): {
  verdict: 'sees' | 'waits' | 'hands-over' | 'leads-on';
  warning?: { message: string; fields: { reason: string; for: string; lastFailure: string } };
} {
  if (blind === undefined) return { verdict: 'sees' };
  const bounded = blind.forMs < MAX_BLIND_LEASES * leaseMs;
  if (blind.forMs < leaseMs || (blind.answering && bounded)) return { verdict: 'waits' };
  const fields = {
    reason: blind.reason,
    for: `${Math.round(blind.forMs / 1000)}s`,
    lastFailure: blind.lastFailure,
  };
  return blind.throttled && bounded
    ? {
        verdict: 'leads-on',
        warning: {
          message: 'coordinator cannot see the fleet: the API server turns its reads away (429); leading on',
          fields,
        },
      }
    : {
        verdict: 'hands-over',
        warning: { message: 'coordinator cannot see the fleet: giving up leading', fields },
      };
}
