// What the agent keeps between passes (everything else is read from the cluster each pass), and its
// one writer: a handler states the change it wants as data (MemoryChange) through Pass.remember,
// and `remember` (pure) makes the next memory of it. The fields are readonly everywhere else.

/** What the agent keeps of its soak between passes (monotonic ms): an agent restarted soaks anew (wave.ts). */
export interface SoakMemory {
  /** The wave the soak belongs to. */
  readonly wave: string;
  /** First seen back (the start of --health-check-timeout). */
  readonly backSince: number;
  /** First seen back and Ready, and Ready at every look since (the start of --soak); undefined while not Ready. */
  readonly readySince?: number;
  /** When the next pass is due for the soak (ms since the epoch), if one is. */
  readonly dueAt?: number;
}

/** What the agent keeps between passes (everything else is read from the cluster each pass). */
export interface Memory {
  /**
   * No slot, taint or cycle record of ours on the cluster, as the last full read and our writes since
   * left it: a clean agent asks only the sentinel while no reboot is required. Only a pass ending idle
   * sets it.
   */
  readonly clean: boolean;
  /**
   * The cycle record (annotation text) of a reboot attempt this agent wrote, or tried to write, and
   * has not asked the host for yet. A write answered with an error may have been committed all the
   * same: a record found equal to it is this agent's own request, never carried out, not another
   * agent's reboot that may still come (issue: one ambiguous write stalled the wave for the grace).
   */
  readonly unsent?: string;
  /** The end of the autoscaler protection's settle (ms since the epoch) as last seen, if one runs. */
  readonly settleUntil?: number;
  /** This agent instance's id, written as the record's requestedBy with each attempt it counts. */
  readonly instance: string;
  /**
   * With --fleetlock-url: the FleetLock slot was granted to this agent ('held'), or may be held from
   * before (at start, or a release that failed: 'owed'); undefined: none to give back (fleetlock.ts).
   */
  readonly fleetLock?: 'held' | 'owed';
  /** A node back in its wave: its soak as this agent measures it (wave.ts). */
  readonly soak?: SoakMemory;
}

/** A change of the memory a handler wants, by what happened. */
export type MemoryChange =
  /** A pass judged whether anything of ours is left on the cluster (see Memory.clean). */
  | { kind: 'judged-clean'; clean: boolean }
  /** A reboot attempt's record written, or tried (Memory.unsent). */
  | { kind: 'attempt-written'; record: string }
  /** The host was asked for the reboot, or the attempt is over: nothing unsent. */
  | { kind: 'attempt-sent' }
  /** The autoscaler protection's settle as last seen on the node. */
  | { kind: 'settle-seen'; until: number | undefined }
  /**
   * The FleetLock slot: granted ('held'), perhaps still held ('owed': a release failed), or given
   * back (undefined). A slot owed keeps the agent from being clean: the release is tried each pass.
   */
  | { kind: 'fleet-lock'; state: 'held' | 'owed' | undefined }
  /** The soak in the node's wave as measured now; undefined: none runs (over, or not back). */
  | { kind: 'soak'; soak: SoakMemory | undefined };

/** The memory of a new agent instance (`instance`); with a FleetLock server, a slot may be owed from before. */
export function initialMemory(instance: string, fleetLock: boolean): Memory {
  return { clean: false, instance, ...(fleetLock ? { fleetLock: 'owed' as const } : {}) };
}

/** Keeps `change` in what holds the memory (a pass's environment): the one writer of it. */
export function keepIn(holder: { memory: Memory }, change: MemoryChange): void {
  holder.memory = remember(holder.memory, change);
}

/** The memory after `change`. */
export function remember(memory: Memory, change: MemoryChange): Memory {
  switch (change.kind) {
    case 'judged-clean':
      return { ...memory, clean: change.clean };
    case 'attempt-written':
      return { ...memory, unsent: change.record };
    case 'attempt-sent':
      return { ...memory, unsent: undefined };
    case 'settle-seen':
      return { ...memory, settleUntil: change.until };
    case 'fleet-lock':
      return change.state === 'owed'
        ? { ...memory, fleetLock: 'owed', clean: false }
        : { ...memory, fleetLock: change.state };
    case 'soak':
      return { ...memory, soak: change.soak };
  }
}
