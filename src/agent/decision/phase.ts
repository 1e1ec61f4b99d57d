// Where a node is in its reboot cycle, from what the cluster records: pure, so that every state a
// crash, a second agent, an operator or a wiped lock can leave is one row of a table
// (test/unit/agent-phase.test.ts), and each phase has one handler (decision.ts).
//
// The facts: does the lock name this node (and does the entry look like kured's), the node's cycle
// record and its label, the node's bootID now against the record's, and the cordon. One fact comes
// from the agent's memory: whether the record is its own reboot attempt, counted but never asked of
// the host (ownUnsent). A fresh agent after a crash, or a second agent of the same node, has no such
// attempt, and finds the phase from the cluster alone.
import type { LockHolder } from '../../lock/lock.js';
import {
  CYCLE_ANNOTATION,
  CYCLE_LABEL,
  needRebootsIn,
  parseCycle,
  type CycleRecord,
} from '../../node/cycle.js';
import type { NodeState } from '../../node/node.js';

/** What one read of the node and the lock tells. */
export interface CycleFacts {
  /** The lock's live entry naming this node, if any (an entry alone proves nothing: DESIGN §12). */
  entry: LockHolder | undefined;
  /** The node's cycle record, if any (src/node/cycle.ts). */
  record: CycleRecord | undefined;
  /** The cycle label stands (an operator who removes it releases the node). */
  labelled: boolean;
  /** The node's bootID now ('' = unknown). */
  bootID: string;
  /** The node is cordoned now. */
  unschedulable: boolean;
  /** --reboot-retries. */
  rebootRetries: number;
  /** --max-reboots-per-need. */
  maxRebootsPerNeed: number;
  /**
   * The record is the reboot attempt this agent counted (a write whose answer was an error, committed
   * all the same) and never asked the host for (Memory.unsent): no reboot is coming from it.
   */
  ownUnsent: boolean;
  /** Now (ms since the epoch, this host's clock: the one the record's rebootRequestedAt was written on). */
  nowMs: number;
}

/**
 * A reboot requested this recently on the node's current boot may still be coming (the host shutting
 * down, kubelet's graceful shutdown under way): no agent of the node drains or asks again before it
 * has passed. This keeps a second agent of the node (a rollout overlap) that reads the record between
 * the counted attempt and the request from requesting the same boot's reboot again.
 */
export const REBOOT_GRACE_MS = 5 * 60_000;

/** What each phase carries besides its name (in the order phaseOf tries them on the same boot). */
interface PhaseData {
  /** No slot and no cycle: detect, taint, window and blockers, lock (DESIGN §1 up to the lock). */
  'before-lock': object;
  /** The lock names this node and no cycle record proves it: asked for anew, as a new acquisition. */
  'unproven-entry': { entry: LockHolder };
  /** kured's slot for this node, with kured's cordon (a migration): adopted as a cycle of ours. */
  'kured-entry': { entry: LockHolder };
  /** An operator removed the cycle label: the node is theirs; our record and slot go. */
  released: { record: CycleRecord };
  /** Our cycle on the same boot without its slot: take it back, else end the cycle. */
  'retake-before-reboot': { record: CycleRecord };
  /** Our cycle on a new boot without its slot: take it back, else finish once ready. */
  'retake-after-reboot': { record: CycleRecord };
  /** The same boot after --reboot-retries reboot requests: left cordoned, for an operator. */
  'given-up': { record: CycleRecord };
  /** A reboot was requested on this boot less than REBOOT_GRACE_MS ago: it may still come; wait. */
  'reboot-requested': { record: CycleRecord };
  /** As reboot-requested, but the attempt is this agent's own, never asked for (ownUnsent): ask now. */
  'unsent-reboot': { record: CycleRecord };
  /**
   * The cycle's need has survived --max-reboots-per-need reboots, or how many it survived cannot be
   * read: no reboot again; the node is quarantined reboot-loop for an operator.
   */
  'reboot-loop': { record: CycleRecord };
  /** We cordoned, and someone uncordoned the node before the reboot: drain again or give way. */
  'uncordoned-meanwhile': { record: CycleRecord };
  /** Our cycle on the same boot: drain (a no-op on a drained node), delay, re-verify, reboot. */
  drain: { record: CycleRecord };
  /** The bootID changed: the reboot is proven; readiness, uncordon, release. */
  readiness: { record: CycleRecord };
}

export type PhaseName = keyof PhaseData;

/**
 * A phase, with why the facts put the node there, and whether the cycle (before any reboot request)
 * ends at once when the sentinel no longer asks for a reboot.
 */
export type CyclePhase<K extends PhaseName = PhaseName> = {
  [P in K]: { name: P; reason: string; cancellable: boolean } & PhaseData[P];
}[K];

/** What the agent brings to the facts: its limits, and the attempt it has not asked for (Memory.unsent). */
export interface AgentSide {
  rebootRetries: number;
  maxRebootsPerNeed: number;
  unsent?: string | undefined;
}

/**
 * The facts of one read of the node and of the lock's entry for it (the agent's pass and `kured-ts
 * check` read them alike; check has no attempt of its own).
 */
export function cycleFacts(
  node: NodeState,
  entry: LockHolder | undefined,
  agent: AgentSide,
  now: Date,
): CycleFacts {
  const { rebootRetries, maxRebootsPerNeed, unsent } = agent;
  return {
    entry,
    record: recordOf(node),
    labelled: node.labels[CYCLE_LABEL] !== undefined,
    bootID: node.bootID,
    unschedulable: node.unschedulable,
    rebootRetries,
    maxRebootsPerNeed,
    ownUnsent: unsent !== undefined && unsent === node.annotations[CYCLE_ANNOTATION],
    nowMs: now.getTime(),
  };
}

/**
 * The node's cycle record. The label stands without it only when someone removed the annotation (our
 * writes set and remove both in one patch): a record lost, read as an unreadable one, so that no
 * count of reboots for the need is lost with it (fail safe: the need stops in reboot-loop).
 */
function recordOf(node: NodeState): CycleRecord | undefined {
  const raw = node.annotations[CYCLE_ANNOTATION];
  if (raw === undefined && node.labels[CYCLE_LABEL] !== undefined) return parseCycle('');
  return parseCycle(raw);
}

/** The record's boot is gone: the reboot happened (an unknown bootID on either side proves nothing). */
function rebooted(bootID: string, record: CycleRecord): boolean {
  return record.bootID !== '' && bootID !== '' && bootID !== record.bootID;
}

/**
 * kured's entry for this node: kured records no bootID and `unschedulable: false` for a node it
 * cordons itself, and the node is cordoned. (kured-ts records the bootID in every entry it writes.)
 */
function kuredEntry(entry: LockHolder, unschedulable: boolean): boolean {
  return entry.metadata.bootID === undefined && !entry.metadata.unschedulable && unschedulable;
}

/** The phase the facts put the node in. */
export function phaseOf(facts: CycleFacts): CyclePhase {
  const { entry, record } = facts;
  if (record === undefined) {
    if (entry === undefined)
      return { name: 'before-lock', reason: 'no slot and no cycle', cancellable: false };
    if (kuredEntry(entry, facts.unschedulable)) {
      // not cancellable before it is adopted: ending the adopted cycle undoes kured's cordon too
      return { name: 'kured-entry', entry, reason: "kured's slot for this node", cancellable: false };
    }
    return {
      name: 'unproven-entry',
      entry,
      reason: 'the lock names this node; no cycle of ours proves it',
      cancellable: true,
    };
  }
  if (!facts.labelled) {
    return { name: 'released', record, reason: 'the cycle label was removed', cancellable: false };
  }
  const newBoot = rebooted(facts.bootID, record);
  if (entry === undefined) return retake(record, newBoot);
  if (newBoot)
    return {
      name: 'readiness',
      record,
      reason: `bootID ${record.bootID} -> ${facts.bootID}`,
      cancellable: false,
    };
  return sameBoot(facts, record);
}

function retake(record: CycleRecord, newBoot: boolean): CyclePhase {
  if (newBoot) {
    return { name: 'retake-after-reboot', record, reason: 'rebooted; the slot is gone', cancellable: false };
  }
  const reason = 'the slot is gone before the reboot';
  return { name: 'retake-before-reboot', record, reason, cancellable: record.attempts === 0 };
}

/** Holding the slot on the record's boot: a crash, a second agent, or a reboot that did not happen. */
function sameBoot(facts: CycleFacts, record: CycleRecord): CyclePhase {
  const cancellable = record.attempts === 0;
  const requested = recentRequest(facts, record);
  if (requested !== undefined) return requested;
  if (record.attempts >= facts.rebootRetries) {
    const reason = `bootID unchanged after ${record.attempts} reboot attempts`;
    return { name: 'given-up', record, reason, cancellable: false };
  }
  const loop = loopReason(record, facts.maxRebootsPerNeed);
  if (loop !== undefined) return { name: 'reboot-loop', record, reason: loop, cancellable: false };
  if (record.cordoned && !facts.unschedulable) {
    return { name: 'uncordoned-meanwhile', record, reason: 'our cordon was lifted', cancellable };
  }
  const reason =
    record.attempts === 0
      ? 'same boot, no reboot requested yet'
      : `same boot after ${record.attempts} reboot request(s)`;
  return { name: 'drain', record, reason, cancellable };
}

/**
 * A reboot asked for on this boot within REBOOT_GRACE_MS, which may still come (reboot-requested),
 * unless this agent counted it and never asked (unsent-reboot); undefined when none is that recent.
 */
function recentRequest(facts: CycleFacts, record: CycleRecord): CyclePhase | undefined {
  const sinceRequest = facts.nowMs - Date.parse(record.rebootRequestedAt ?? '');
  // a request time ahead of now (the clock stepped back) proves nothing: no wait
  if (record.attempts === 0 || !(sinceRequest >= 0 && sinceRequest < REBOOT_GRACE_MS)) return undefined;
  if (facts.ownUnsent) {
    const reason = `reboot attempt ${record.attempts} counted by this agent and never asked for`;
    return { name: 'unsent-reboot', record, reason, cancellable: false };
  }
  const reason = `reboot requested ${Math.round(sinceRequest / 1000)}s ago; it may still come`;
  return { name: 'reboot-requested', record, reason, cancellable: false };
}

/** Why the record's need may not reboot the node again (--max-reboots-per-need), or undefined. */
function loopReason(record: CycleRecord, max: number): string | undefined {
  const survived = needRebootsIn(record);
  if (survived < max) return undefined;
  return Number.isFinite(survived)
    ? `the need survived ${survived} reboots (--max-reboots-per-need ${max})`
    : 'the count of reboots for this need cannot be read';
}

/** What the agent does next in each phase, in words (kured-ts check says it for a cycle in progress). */
export const PHASE_NEXT: Readonly<Record<PhaseName, string>> = {
  'before-lock': 'the agent decides before the lock: sentinel, window, blockers, then a slot',
  'unproven-entry':
    'the lock names this node but no cycle of its own proves it: the agent asks for the slot anew, as a new acquisition',
  'kured-entry':
    "kured's slot for this node: the agent adopts kured's cordon as its cycle, drains and reboots",
  released:
    'an operator removed the cycle label: the agent drops its record and slot and leaves the node as it is',
  'retake-before-reboot':
    'the lock slot is missing: the agent takes it back and continues, or ends the cycle (uncordoning) if it cannot',
  'retake-after-reboot':
    'rebooted, and the lock slot is missing: the agent takes it back, and finishes once the node is ready',
  'reboot-requested': `the reboot asked for may still come: the agent waits, and does not ask again within ${REBOOT_GRACE_MS / 60_000} minutes of the request`,
  'unsent-reboot':
    'the reboot attempt this agent counted was never asked for (its write answered with an error): the agent re-verifies and asks now',
  'given-up':
    'the reboot never came: the node stays cordoned with its lock slot until an operator intervenes',
  'reboot-loop':
    'no reboot again: the agent quarantines the node reboot-loop and gives its slot back; an operator releases it (kubectl label node NODE kured-ts.dev/quarantined-)',
  'uncordoned-meanwhile':
    'someone uncordoned the node: the agent cordons and drains again (--on-uncordoned-during-delay redrain) or ends the cycle',
  drain: 'the agent drains (a no-op on a drained node), waits --reboot-delay, re-verifies and reboots',
  readiness: 'rebooted: the agent waits for readiness, then uncordons and releases the lock',
};
