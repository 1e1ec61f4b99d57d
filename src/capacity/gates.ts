// The gates of the fleet's capacity by name: the words a refusal, a turn's hold and the waiters'
// metric share (a turn's gate is another writer's word: fleetGate checks it before it becomes a label).

/**
 * A gate of the fleet's capacity that holds a node back beyond the plain slots (room.ts): unavailable
 * nodes taking slots, the group's slots, the control plane one at a time and last, the caps.
 */
export const FLEET_GATES = [
  'count-unavailable',
  'group-concurrency',
  'control-plane',
  'control-plane-last',
  'max-unhealthy-nodes',
  'max-quarantined',
  /** The wave's failure budget is spent (--max-failures): halted until `kured-ts resume`. */
  'max-failures',
  /** The wave's slow start (--wave-start, --wave-growth, --soak). */
  'slow-start',
  /** Another group of the wave goes first (--group-order sequential). */
  'group-order',
  /** The census of the fleet could not be read: unknown is not healthy. */
  'fleet-census',
] as const;
export type FleetGate = (typeof FLEET_GATES)[number];

/** `name` as a fleet gate, when it is one (a word from another writer, checked before it becomes a label). */
export function fleetGate(name: string | undefined): FleetGate | undefined {
  return FLEET_GATES.find((g) => g === name);
}
