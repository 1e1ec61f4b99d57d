// FleetLock: a reboot slot from a server that several clusters share (the protocol Zincati speaks to
// airlock and poseidon/fleetlock): `POST /v1/pre-reboot` takes a slot of a group for an id,
// `POST /v1/steady-state` gives it back. The in-cluster lock stays as it is; this is one more
// permission asked before it, so that clusters sharing a group never reboot more than its slots.

/**
 * A server's answer, as data with its reason. `granted: false` carries the server's error `kind`
 * (`failed_lock` when no slot is free) or, when no answer could be read, `unreachable` or
 * `bad-answer`; `reason` is the text for the node's status ("fleetlock: failed_lock: …").
 */
export type FleetLockAnswer =
  { granted: true } | { granted: false; kind: string; reason: string; attempts: number };

/** A FleetLock server, as this node's agent sees it (its id and group are fixed at construction). */
export interface FleetLock {
  /** The server's base URL, for messages. */
  readonly url: string;
  /** The group whose slots this node takes. */
  readonly group: string;
  /** Asks for a slot (idempotent for a holder); `granted` is the only yes. Never throws but on abort. */
  preReboot(signal: AbortSignal | undefined): Promise<FleetLockAnswer>;
  /** Gives the slot back (idempotent: also when none is held). Never throws but on abort. */
  steadyState(signal: AbortSignal | undefined): Promise<FleetLockAnswer>;
}

/**
 * Ask the FleetLock server again after this (capped by --period) while it gives no slot, doubling
 * with each refusal in a row up to FLEETLOCK_RETRY_MAX_MS: no watch tells of a slot freed in another
 * cluster, and each pass reads the node and the lock (the wait of a whole fleet stays bounded).
 */
export const FLEETLOCK_RETRY_MS = 30_000;
export const FLEETLOCK_RETRY_MAX_MS = 5 * 60_000;

/**
 * How long the coordinator keeps a node's turn at the lock after it last saw the node's agent say
 * the FleetLock server gave it no slot (status fleetLockAsked): two of the agent's longest pauses
 * between questions (FLEETLOCK_RETRY_MAX_MS, jittered up to 1.5 times). The node the server
 * refuses keeps its turn: any other node of the cluster would be refused by the same group, and
 * passing the turn round would cost every waiter a wake-up, a question and a status write per
 * hand-off grace. An agent that stops asking (gone, stuck) loses the turn this long after its last
 * question.
 */
export const FLEETLOCK_TURN_GRACE_MS = 2 * FLEETLOCK_RETRY_MAX_MS;

/** The header every FleetLock request carries (servers refuse requests without it). */
export const FLEETLOCK_HEADER = 'fleet-lock-protocol';

/** The paths of the protocol's two operations. */
export const FLEETLOCK_PATHS = { preReboot: '/v1/pre-reboot', steadyState: '/v1/steady-state' } as const;

/** The request body: `{"client_params":{"id":…,"group":…}}`. */
export function fleetLockBody(id: string, group: string): string {
  return JSON.stringify({ client_params: { id, group } });
}
