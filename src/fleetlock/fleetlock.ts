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

/** The header every FleetLock request carries (servers refuse requests without it). */
export const FLEETLOCK_HEADER = 'fleet-lock-protocol';

/** The paths of the protocol's two operations. */
export const FLEETLOCK_PATHS = { preReboot: '/v1/pre-reboot', steadyState: '/v1/steady-state' } as const;

/** The request body: `{"client_params":{"id":…,"group":…}}`. */
export function fleetLockBody(id: string, group: string): string {
  return JSON.stringify({ client_params: { id, group } });
}
