// Who gets a turn at the lock now: the coordinator's decision, pure, from its view of the fleet and
// of the lock. Each free slot goes to the waiting node whose reboot has been needed longest (overdue
// first, then the oldest need, then by name: compareWaiters, the order the agents record), as far
// as its group has room. A turn not taken within the grace (its agent gone or stuck) is taken back
// and its node goes to the back of the queue, so a dead head costs one grace per hand-off at most;
// an agent that was only slow says so by writing its status, and gets its place back (coordinator.ts).
//
// Whether a waiter may go is asked of the agents' own rule (roomFor, src/capacity/room.ts) over this
// view: the slots, the nodes in a cycle and the turns already promised, the unavailable nodes, the
// groups, the control plane, the caps. A new gate is one edit there. Nothing here is safety: the
// agent takes its slot by the lock's guarded write and judges every gate itself from the cluster's
// records, so a plan from a stale view, or a forged one, can only change who goes first.
import { FLEETLOCK_TURN_GRACE_MS } from '../fleetlock/fleetlock.js';
import type { LockEntry } from '../lock/kured-lock-format.js';
import type { FleetGate } from '../capacity/gates.js';
import {
  allTaken,
  gateOf,
  roomFor,
  type NodeInCycle,
  type NoRoom,
  type RoomQuestion,
} from '../capacity/room.js';
import { describeRoom } from './room-words.js';
import type { PlanGates } from '../capacity/plan-budgets.js';
import { compareWaiters, type Waiter } from '../queue/wait-queue.js';
import { waiterOfRecord, waitersOf } from './waiters.js';
import { hasTurnAnnotation, type NodeRecord } from './fleet-view.js';
import { WaveRefusals, waveFactsOf, type WaveKey, type WavePlanConfig } from './wave-plan.js';

/** A slot of the lock as the coordinator counts it. */
export interface SlotHolder {
  node: string;
  /** The group the slot records; undefined: none recorded (counts against every group). */
  group: string | undefined;
  /** The slot records a control-plane node. */
  controlPlane?: boolean;
}

/**
 * How long, in all, a node that the FleetLock server keeps refusing (its group full) holds every
 * other turn back: past this its turn no longer counts against the slots and other turns are given
 * (one node cannot freeze the queue, however often it asks); it keeps its turn while it asks.
 */
export const FLEETLOCK_TURN_MAX_MS = 30 * 60_000;

/** A plan's input: the view's nodes, the lock's slots, the gates (PlanGates), the turns and the time. */
export interface PlanInput extends PlanGates {
  /** The nodes that wait, hold a turn or are in a cycle (others may be left out). */
  nodes: Iterable<NodeRecord>;
  /**
   * Of those, the ones with a turn annotation (a turn or a lapsed one) and the ones in a cycle, when
   * the caller keeps them apart (the view does): all a plan reads while every slot is taken.
   * Undefined: picked out of `nodes`.
   */
  index?: { withTurn: Iterable<NodeRecord>; inCycle: Iterable<NodeRecord> };
  /** Live slots of the lock (expired ones left out). */
  slots: readonly SlotHolder[];
  /** Why the lock gives no slot to anyone now (a manual lock, unparsable, forged); undefined: it does. */
  lockHeld: string | undefined;
  /**
   * --fleetlock-url is configured: a node holding a turn that is seen asking the FleetLock server
   * anew (fleetLockAsks) keeps it, and no other turn is given meanwhile, up to FLEETLOCK_TURN_MAX_MS
   * from the turn. Without it (default), those questions count for nothing.
   */
  fleetLock?: boolean;
  now: Date;
  /** Monotonic ms now, and when each outstanding turn was given or first seen by this coordinator. */
  nowMs: number;
  turnSince: ReadonlyMap<string, number>;
  graceMs: number;
  /**
   * Monotonic ms each node holding a turn was last seen asking the FleetLock server anew (its status'
   * fleetLockAsked changed: fleetlock-asks.ts). Default none.
   */
  fleetLockAsks?: ReadonlyMap<string, number>;
  /** Nodes whose turn lapsed while they still wait: behind every other waiter. */
  passedOver: ReadonlySet<string>;
  /** The wave's gates (wave-plan.ts), when any is configured. Default none. */
  wave?: WavePlanConfig;
}

export interface Plan {
  /** Nodes to give a turn now, in queue order. */
  grant: string[];
  /** Nodes whose turn annotation goes (a turn, or a lapsed one): they no longer wait. */
  revoke: string[];
  /**
   * Nodes whose turn lapsed: their annotation records it (LapsedTurn), and they are passed over
   * until their agent writes its status again or they stop waiting.
   */
  lapse: string[];
  /**
   * The waiting nodes in queue order (for logs), sorted only when a slot is free or the lock held:
   * empty while every slot is held or promised.
   */
  queue: string[];
  /** Why no turn is given now, when none is though nodes wait: the first waiter's refusal, in words. */
  held: string | undefined;
  /** The fleet gate that holds the queue back, when one does (for the waiters' metric). */
  gate?: FleetGate;
  /** When the first pending turn lapses (monotonic ms): the plan is made again then. None pending: undefined. */
  nextLapseMs?: number;
}

/** The live slots, and the nodes in a cycle whose slot is missing: node to the group it counts against. */
function holdersOf(
  input: PlanInput,
  inCycle: Iterable<NodeRecord>,
  groups: boolean,
): Map<string, string | undefined> {
  const holders = new Map<string, string | undefined>();
  for (const slot of input.slots) holders.set(slot.node, groups ? slot.group : undefined);
  for (const r of inCycle)
    if (r.inCycle && !holders.has(r.name)) holders.set(r.name, groups ? r.group : undefined);
  return holders;
}

/**
 * What becomes of a node's turn annotation: it goes, stays, lapses now, is a pending turn (a claim
 * on a slot), or is kept for the FleetLock server past FLEETLOCK_TURN_MAX_MS (no claim, no hold).
 */
type TurnFate = 'revoke' | 'keep' | 'lapse' | 'pending' | 'kept';

function fateOf(
  input: PlanInput,
  r: NodeRecord,
  waiter: Waiter | undefined,
  holding: ReadonlySet<string>,
): TurnFate {
  // A used turn stays until the node's cycle ends: a write of ours to a node in its cycle would
  // refuse the agent's next guarded write (the count of its reboot attempt) for nothing.
  if (waiter === undefined) return holding.has(r.name) || r.inCycle ? 'keep' : 'revoke';
  // a lapsed turn stays on a waiting node: its agent reads there that it lapsed
  if (r.turn === undefined) return 'keep';
  if (input.nowMs >= lapseAt(input, r.name)) return 'lapse';
  return fleetLockAsked(input, r.name) !== undefined && !holdsBack(input, r.name) ? 'kept' : 'pending';
}

/**
 * When the FleetLock server last refused `node` since its turn (only with FleetLock configured);
 * undefined when that does not count.
 */
function fleetLockAsked(input: PlanInput, node: string): number | undefined {
  if (input.fleetLock !== true) return undefined;
  const since = input.turnSince.get(node) ?? input.nowMs;
  const asked = input.fleetLockAsks?.get(node);
  return asked === undefined || asked < since ? undefined : asked;
}

/** Does `node`'s turn, kept for the FleetLock server, still hold other turns back (FLEETLOCK_TURN_MAX_MS)? */
function holdsBack(input: PlanInput, node: string): boolean {
  return input.nowMs < (input.turnSince.get(node) ?? input.nowMs) + FLEETLOCK_TURN_MAX_MS;
}

/**
 * When a pending turn lapses (monotonic ms): the grace after it was given, or, once its agent was
 * seen asking the FleetLock server since (alive, waiting on another cluster: every other waiter
 * would be refused as well), FLEETLOCK_TURN_GRACE_MS after the last such question.
 */
function lapseAt(input: PlanInput, node: string): number {
  const since = input.turnSince.get(node) ?? input.nowMs;
  const asked = fleetLockAsked(input, node);
  return asked === undefined ? since + input.graceMs : asked + FLEETLOCK_TURN_GRACE_MS;
}

/** The outstanding turns judged: moot ones revoked, those past the grace lapsed, the rest pending. */
function judgeTurns(
  input: PlanInput,
  records: Iterable<NodeRecord>,
  holders: ReadonlyMap<string, string | undefined>,
  groups: boolean,
): {
  revoke: string[];
  lapse: string[];
  pending: Map<string, string | undefined>;
  kept: Set<string>;
  nextLapseMs: number | undefined;
} {
  const revoke: string[] = [];
  const lapse: string[] = [];
  const pending = new Map<string, string | undefined>();
  const kept = new Set<string>();
  let nextLapseMs: number | undefined;
  const holding = new Set(input.slots.map((s) => s.node));
  const file: Record<TurnFate, (r: NodeRecord, group: string | undefined) => void> = {
    revoke: (r) => revoke.push(r.name),
    keep: () => undefined,
    lapse: (r) => lapse.push(r.name),
    pending: (r, group) => pending.set(r.name, group),
    kept: (r) => kept.add(r.name),
  };
  for (const r of records) {
    if (!hasTurnAnnotation(r)) continue;
    const waiter = holders.has(r.name) ? undefined : waiterOfRecord(r, input.now, groups);
    const fate = fateOf(input, r, waiter, holding);
    file[fate](r, waiter?.group);
    if (fate === 'pending' || fate === 'kept')
      nextLapseMs = Math.min(nextLapseMs ?? Infinity, lapseAt(input, r.name));
  }
  return { revoke, lapse, pending, kept, nextLapseMs };
}

/** The waiters in queue order, the `late` ones (passed over, lapsed now, quarantined) behind all others. */
function queueOf(waiters: ReadonlyMap<string, Waiter>, late: ReadonlySet<string>): string[] {
  return [...waiters.values()]
    .sort((a, b) => Number(late.has(a.node)) - Number(late.has(b.node)) || compareWaiters(a, b))
    .map((w) => w.node);
}

/** The nodes with a turn and those in a cycle, picked out of `nodes`. */
function indexOf(nodes: Iterable<NodeRecord>): NonNullable<PlanInput['index']> {
  const all = [...nodes];
  return { withTurn: all.filter(hasTurnAnnotation), inCycle: all.filter((r) => r.inCycle) };
}

export function planTurns(input: PlanInput): Plan {
  const groups = input.groupConcurrency !== undefined;
  const index = input.index ?? indexOf(input.nodes);
  const holders = holdersOf(input, index.inCycle, groups);
  const { revoke, lapse, pending, kept, nextLapseMs } = judgeTurns(input, index.withTurn, holders, groups);
  const judged = {
    revoke: revoke.sort(),
    lapse: lapse.sort(),
    ...(nextLapseMs === undefined ? {} : { nextLapseMs }),
  };
  // every slot held or promised: nobody's place matters now, so the queue is not sorted (the
  // common case on patch night, when nearly every node waits and a plan follows every change);
  // the rule would answer every waiter "full" (it counts these and maybe unavailable nodes too)
  if (input.lockHeld === undefined && allTaken(holders.size + pending.size, input.concurrency))
    return { ...judged, grant: [], queue: [], held: undefined };
  const records = [...input.nodes];
  const waiters = waitersOf(records, holders, input.now, groups);
  // a quarantined node that may try again (its pods changed, or its retry passed) goes behind the
  // others: one undrainable node must not take every free slot first (issue 33)
  const late = new Set([...input.passedOver, ...lapse]);
  for (const r of records) if (r.quarantined && waiters.has(r.name)) late.add(r.name);
  // a node kept for the FleetLock server holds its turn already: it is not given another
  const queue = queueOf(waiters, late).filter((n) => !kept.has(n));
  if (input.lockHeld !== undefined) return { ...judged, grant: [], queue, held: input.lockHeld };
  const fleet = fleetLockWait(input, pending);
  if (fleet !== undefined) return { ...judged, grant: [], queue, held: fleet };
  const rooms = new Rooms(input, { records, holders, pending, groups });
  return { ...judged, ...rooms.pick(queue), queue };
}

/**
 * Has a node with a pending turn been seen asking the FleetLock server anew since its turn (the
 * server gave it no slot)? Then no further turn is given: the group it asks for is full for every
 * node of the cluster alike, and a turn given would only cost a wake-up, a question and a status
 * write. Only with FleetLock configured, and for FLEETLOCK_TURN_MAX_MS at most. Why, when so.
 */
function fleetLockWait(
  input: PlanInput,
  pending: ReadonlyMap<string, string | undefined>,
): string | undefined {
  for (const node of pending.keys()) {
    if (fleetLockAsked(input, node) !== undefined && holdsBack(input, node))
      return `${node} has its turn and waits for a slot from the FleetLock server`;
  }
  return undefined;
}

/** A slot holder as a lock entry, for the room rule (a creation time: never kured's manual lock). */
function entryOf(slot: SlotHolder): LockEntry {
  return {
    nodeID: slot.node,
    created: 'slot',
    createdMs: 0,
    ttlNs: 0,
    metadata: {
      unschedulable: false,
      ...(slot.group === undefined ? {} : { group: slot.group }),
      ...(slot.controlPlane === true ? { controlPlane: true } : {}),
    },
  };
}

/** Why no waiter goes, by the first refusal (none: nobody waits). */
function heldBy(first: NoRoom | undefined): Pick<Plan, 'held' | 'gate'> {
  if (first === undefined) return { held: undefined };
  const gate = gateOf(first);
  return { held: describeRoom(first), ...(gate === undefined ? {} : { gate }) };
}

/** The room rule (roomFor) asked for each waiter of a plan, over the view, as turns are given. */
class Rooms {
  private readonly live: LockEntry[];
  private readonly byName: ReadonlyMap<string, NodeRecord>;
  private readonly unhealthy: ReadonlyMap<string, string>;
  private readonly quarantined: ReadonlySet<string>;
  private readonly controlPlane: ReadonlySet<string>;
  /** Nodes that count like a slot: in a cycle without one, promised a turn, and given one in this plan. */
  private readonly claims: NodeInCycle[];
  private readonly workersAhead: number;

  private readonly groups: boolean;

  constructor(
    private readonly input: PlanInput,
    claimed: {
      records: readonly NodeRecord[];
      holders: ReadonlyMap<string, string | undefined>;
      pending: ReadonlyMap<string, string | undefined>;
      groups: boolean;
    },
  ) {
    const { records, holders, pending } = claimed;
    this.groups = claimed.groups;
    this.live = input.slots.map(entryOf);
    this.byName = new Map(records.map((r) => [r.name, r]));
    const slotted = new Set(input.slots.map((s) => s.node));
    const claim = (name: string, group: string | undefined): NodeInCycle => ({ name, group: group ?? '' });
    this.claims = [
      ...[...holders].filter(([n]) => !slotted.has(n)).map(([n, g]) => claim(n, g)),
      ...[...pending].map(([n, g]) => claim(n, g)),
    ];
    this.unhealthy =
      input.unhealthy ??
      new Map(records.filter((r) => r.unhealthy !== undefined && !r.inCycle).map((r) => [r.name, r.group]));
    this.quarantined = input.quarantined ?? new Set(records.filter((r) => r.quarantined).map((r) => r.name));
    this.controlPlane = new Set([
      ...(input.controlPlaneNodes ?? records.filter((r) => r.controlPlane).map((r) => r.name)),
      ...input.slots.filter((s) => s.controlPlane === true).map((s) => s.node),
    ]);
    this.workersAhead =
      input.workersAhead ?? records.filter((r) => !r.controlPlane && (r.inCycle || r.waiting)).length;
  }

  /** The free slots, each to the first waiter in `queue` the rule lets go; why none, when none go. */
  pick(queue: readonly string[]): Pick<Plan, 'grant' | 'held' | 'gate'> {
    const grant: string[] = [];
    let first: NoRoom | undefined;
    const refusals = new WaveRefusals((node) => this.waveKey(node));
    for (const node of queue) {
      if (this.claims.some((c) => c.name === node) || refusals.holds(node)) continue;
      const room = roomFor(this.question(node));
      if (room.room) {
        grant.push(node);
        this.claims.push({ name: node, group: this.groupOf(node) ?? '' });
        refusals.clear();
      } else {
        first ??= room;
        refusals.note(node, room);
      }
      if (this.full()) break;
    }
    return { grant, ...(grant.length > 0 ? { held: undefined } : heldBy(first)) };
  }

  /** The wave and group `node` waits in, when the wave's gates are configured (the key of its refusals). */
  private waveKey(node: string): WaveKey | undefined {
    const record = this.byName.get(node);
    if (this.input.wave === undefined || record?.wave === undefined) return undefined;
    return { wave: record.wave, group: record.group };
  }

  /**
   * No slot is left for anyone, by the rule's own count (allTaken); while unavailable nodes count,
   * one of them that waits counts already and may still go: the plan asks on.
   */
  private full(): boolean {
    const down = this.input.countUnavailable === true ? this.unhealthy.size : 0;
    return down === 0 && allTaken(this.live.length + this.claims.length, this.input.concurrency);
  }

  private groupOf(node: string): string | undefined {
    return this.groups ? (this.byName.get(node)?.group ?? '') : undefined;
  }

  /** The room question for `node`, as its agent would ask it of the cluster. */
  private question(node: string): RoomQuestion {
    const { input } = this;
    const group = this.groupOf(node);
    const counted = new Set([node, ...this.live.map((e) => e.nodeID), ...this.claims.map((c) => c.name)]);
    const down = [...this.unhealthy].filter(([n]) => !counted.has(n));
    const others = (names: Iterable<string>): string[] => [...names].filter((n) => n !== node);
    return {
      live: this.live,
      nodeId: node,
      declared: Number.POSITIVE_INFINITY,
      group,
      concurrency: input.concurrency,
      groups:
        input.groupConcurrency === undefined || group === undefined
          ? undefined
          : { label: '', concurrency: input.groupSlots?.(group) ?? input.groupConcurrency },
      inCycle: this.claims,
      ...(input.countUnavailable === true
        ? { unavailable: { nodes: down.map(([name, g]) => ({ name, group: g })), more: 0, moreInGroup: 0 } }
        : {}),
      ...(this.controlPlane.has(node)
        ? {
            controlPlane: {
              peers: others(this.controlPlane),
              workersAhead:
                input.controlPlaneLast === true ? { count: this.workersAhead, names: [] } : undefined,
            },
          }
        : {}),
      ...(input.maxUnhealthy === undefined
        ? {}
        : { health: { max: input.maxUnhealthy, nodes: down.map(([name]) => name).sort() } }),
      ...(input.maxQuarantined === undefined
        ? {}
        : { quarantine: { max: input.maxQuarantined, nodes: others(this.quarantined).sort() } }),
      ...this.waveOf(node),
    };
  }

  /** The wave's facts for `node`, from the view (its agent counts the same from the nodes' labels). */
  private waveOf(node: string): Pick<RoomQuestion, 'wave'> {
    const config = this.input.wave;
    const record = this.byName.get(node);
    if (config === undefined || record === undefined) return {};
    const facts = waveFactsOf(config, record, { live: this.live, claims: this.claims });
    return facts === undefined ? {} : { wave: facts };
  }
}
