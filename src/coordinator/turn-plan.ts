// Who gets a turn at the lock now: the coordinator's decision, pure, from its view of the fleet and
// of the lock. Each free slot goes to the waiting node whose reboot has been needed longest (overdue
// first, then the oldest need, then by name: compareWaiters, the order the agents record), as far
// as its group has room. A turn not taken within the grace (its agent gone or stuck) is taken back
// and its node goes to the back of the queue, so a dead head costs one grace per hand-off at most;
// an agent that was only slow says so by writing its status, and gets its place back (coordinator.ts).
// Nothing here is safety: the agent takes its slot by the lock's guarded write and rules, so a plan
// from a stale view can only change who goes first.
import { resolveLimit } from '../lock/budget.js';
import { FLEETLOCK_TURN_GRACE_MS } from '../fleetlock/fleetlock.js';
import type { FleetHealth } from '../lock/fleet-health.js';
import { compareWaiters, type Waiter } from '../queue/wait-queue.js';
import { isOverdue } from '../node/status.js';
import { hasTurnAnnotation, type NodeRecord } from './fleet-view.js';

/** A slot of the lock as the coordinator counts it. */
export interface SlotHolder {
  node: string;
  /** The group the slot records; undefined: none recorded (counts against every group). */
  group: string | undefined;
  /** The slot records a control-plane node. */
  controlPlane?: boolean;
}

export interface PlanInput {
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
   * --max-unhealthy-nodes resolved for the fleet (undefined: no gate) and how many nodes are
   * unhealthy: a waiter gets a turn only while the others (itself not counted) are within the limit,
   * as its own health blocker judges.
   */
  health: { count: number; max: number | undefined };
  /**
   * --max-quarantined resolved for the fleet (undefined: no cap) and how many nodes are quarantined:
   * a waiter gets a turn only while the others (itself not counted) are within the cap, as its own
   * max-quarantined blocker judges. Judged here too, on the view the turn comes from, so that the slot
   * a node frees as it is quarantined goes to nobody (the agents read the count from the Lease, which
   * may not say it yet). Default none.
   */
  quarantine?: { count: number; max: number | undefined };
  /** --concurrency, resolved for the fleet now. */
  concurrency: number;
  /** --group-concurrency; undefined without groups. */
  groupConcurrency: number | undefined;
  /** --group-concurrency N%, resolved for a group; undefined: `groupConcurrency` for every group. */
  groupSlots?: (group: string) => number;
  /**
   * --count-unavailable: the unavailable nodes (not ready, unreachable, cordoned by someone else) in
   * no cycle, to their group; those holding no slot take slots, as the agents count them. Undefined: none counted.
   */
  unavailable?: ReadonlyMap<string, string>;
  /** --control-plane-last: no turn for a control-plane node while a worker waits or is in its cycle. */
  controlPlaneLast?: boolean;
  /**
   * Workers still wanting their reboot (blocked, outside the window, waiting…) or in their cycle, as
   * the fleet view counts them; undefined: judged from `nodes` (which may leave blocked ones out).
   */
  workersAhead?: number;
  now: Date;
  /** Monotonic ms now, and when each outstanding turn was given or first seen by this coordinator. */
  nowMs: number;
  turnSince: ReadonlyMap<string, number>;
  graceMs: number;
  /**
   * Monotonic ms each node holding a turn was last seen asking the FleetLock server anew (its status'
   * fleetLockAsked changed: fleetlock-asks.ts). After such a sighting the turn lapses only
   * FLEETLOCK_TURN_GRACE_MS after the last one. Default none.
   */
  fleetLockAsks?: ReadonlyMap<string, number>;
  /** Nodes whose turn lapsed while they still wait: behind every other waiter. */
  passedOver: ReadonlySet<string>;
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
  /** Why no turn is given now, when none is. */
  held: string | undefined;
  /** When the first pending turn lapses (monotonic ms): the plan is made again then. None pending: undefined. */
  nextLapseMs?: number;
}

/** The node as a waiter, when its status says it waits for the lock and since when it needs a reboot. */
export function waiterOfRecord(record: NodeRecord, now: Date, groups: boolean): Waiter | undefined {
  const status = record.status;
  if (status?.phase !== 'waiting-for-lock') return undefined;
  return {
    node: record.name,
    // an agent that records no need (an older kured-ts during a rollout) queues behind those that do
    requiredSinceMs:
      status.requiredSince === undefined ? Number.MAX_SAFE_INTEGER : Date.parse(status.requiredSince),
    overdue: isOverdue(status, now),
    group: groups ? record.group : undefined,
  };
}

/** The slots each group has taken: its own, those in a cycle without a slot, and slots that record none. */
function groupUse(holders: ReadonlyMap<string, string | undefined>): (g: string) => number {
  const counts = new Map<string, number>();
  let everyGroup = 0;
  for (const group of holders.values()) {
    if (group === undefined) everyGroup++;
    else counts.set(group, (counts.get(group) ?? 0) + 1);
  }
  return (g) => (counts.get(g) ?? 0) + everyGroup;
}

/** Would the health gate let `record` go: the other unhealthy nodes within the limit? */
function healthy(input: PlanInput, record: NodeRecord | undefined): boolean {
  const { count, max } = input.health;
  if (max === undefined) return true;
  return count - (record?.unhealthy === undefined ? 0 : 1) <= max;
}

type Limit = { count: number } | { percent: number } | undefined;

/** The health gate's and the quarantine cap's inputs of a plan, from the fleet's health and the flags. */
export function gatesOf(
  health: FleetHealth,
  limits: { maxUnhealthyNodes?: Limit; maxQuarantined?: Limit },
): Pick<PlanInput, 'health' | 'quarantine'> {
  const resolve = (limit: Limit): number | undefined =>
    limit === undefined ? undefined : resolveLimit(limit, health.total);
  return {
    health: { count: health.count, max: resolve(limits.maxUnhealthyNodes) },
    quarantine: { count: health.quarantinedCount ?? 0, max: resolve(limits.maxQuarantined) },
  };
}

/** Would --max-quarantined let `record` go: the other quarantined nodes within the cap? */
function withinQuarantineCap(input: PlanInput, record: NodeRecord | undefined): boolean {
  const max = input.quarantine?.max;
  if (max === undefined) return true;
  return (input.quarantine?.count ?? 0) - (record?.quarantined === true ? 1 : 0) <= max;
}

/** Who holds or claims a slot, and each waiter, as planTurns sorts them out of the fleet. */
interface Claims {
  /** The records of the nodes the plan looks at, by name. */
  byName: ReadonlyMap<string, NodeRecord>;
  /** A control-plane node holds a slot, is in its cycle or has a pending turn (one at a time). */
  controlPlaneBusy: boolean;
  /** A worker waits for a slot or is in its cycle (control plane last). */
  workersAhead: boolean;
  /** Live slots, and nodes in a cycle whose slot is missing (they still count): node to group. */
  holders: ReadonlyMap<string, string | undefined>;
  /** Waiting nodes that hold no slot. */
  waiters: ReadonlyMap<string, Waiter>;
  /** Nodes with an outstanding turn, within the grace: node to group. */
  pending: ReadonlyMap<string, string | undefined>;
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

/** The waiting nodes that hold no slot. */
function waitersOf(
  records: readonly NodeRecord[],
  holders: ReadonlyMap<string, string | undefined>,
  now: Date,
  groups: boolean,
): Map<string, Waiter> {
  const waiters = new Map<string, Waiter>();
  for (const r of records) {
    const w = holders.has(r.name) ? undefined : waiterOfRecord(r, now, groups);
    if (w !== undefined) waiters.set(r.name, w);
  }
  return waiters;
}

/** What becomes of a node's turn annotation: it goes, stays, lapses now, or is a pending turn. */
type TurnFate = 'revoke' | 'keep' | 'lapse' | 'pending';

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
  return input.nowMs >= lapseAt(input, r.name) ? 'lapse' : 'pending';
}

/**
 * When a pending turn lapses (monotonic ms): the grace after it was given, or, once its agent was
 * seen asking the FleetLock server since (alive, waiting on another cluster: every other waiter
 * would be refused as well), FLEETLOCK_TURN_GRACE_MS after the last such question.
 */
function lapseAt(input: PlanInput, node: string): number {
  const since = input.turnSince.get(node) ?? input.nowMs;
  const asked = input.fleetLockAsks?.get(node);
  return asked !== undefined && asked >= since ? asked + FLEETLOCK_TURN_GRACE_MS : since + input.graceMs;
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
  nextLapseMs: number | undefined;
} {
  const revoke: string[] = [];
  const lapse: string[] = [];
  const pending = new Map<string, string | undefined>();
  let nextLapseMs: number | undefined;
  const holding = new Set(input.slots.map((s) => s.node));
  for (const r of records) {
    if (!hasTurnAnnotation(r)) continue;
    const waiter = holders.has(r.name) ? undefined : waiterOfRecord(r, input.now, groups);
    const fate = fateOf(input, r, waiter, holding);
    if (fate === 'revoke') revoke.push(r.name);
    else if (fate === 'lapse') lapse.push(r.name);
    else if (fate === 'pending') {
      pending.set(r.name, waiter?.group);
      nextLapseMs = Math.min(nextLapseMs ?? Infinity, lapseAt(input, r.name));
    }
  }
  return { revoke, lapse, pending, nextLapseMs };
}

/** The waiters in queue order, the `late` ones (passed over, lapsed now, quarantined) behind all others. */
function queueOf(waiters: ReadonlyMap<string, Waiter>, late: ReadonlySet<string>): string[] {
  return [...waiters.values()]
    .sort((a, b) => Number(late.has(a.node)) - Number(late.has(b.node)) || compareWaiters(a, b))
    .map((w) => w.node);
}

/**
 * Why no turn is given: the lock's own reason, else the health gate or the quarantine cap when it
 * holds back every waiter.
 */
function heldReason(input: PlanInput, queued: number, eligible: number): string | undefined {
  if (input.lockHeld !== undefined) return input.lockHeld;
  if (eligible >= queued || eligible > 0) return undefined;
  const q = input.quarantine;
  if (q?.max !== undefined && q.count > q.max) return `${q.count} nodes quarantined (max ${q.max} others)`;
  return `${input.health.count} nodes unhealthy (max ${input.health.max ?? 0} others)`;
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
  const { revoke, lapse, pending, nextLapseMs } = judgeTurns(input, index.withTurn, holders, groups);
  const judged = {
    revoke: revoke.sort(),
    lapse: lapse.sort(),
    ...(nextLapseMs === undefined ? {} : { nextLapseMs }),
  };
  // every slot held or promised: nobody's place matters now, so the queue is not sorted (the
  // common case on patch night, when nearly every node waits and a plan follows every change)
  if (input.lockHeld === undefined && holders.size + pending.size >= input.concurrency)
    return { ...judged, grant: [], queue: [], held: undefined };
  const records = [...input.nodes];
  const waiters = waitersOf(records, holders, input.now, groups);
  // a quarantined node that may try again (its pods changed, or its retry passed) goes behind the
  // others: one undrainable node must not take every free slot first (issue 33)
  const late = new Set([...input.passedOver, ...lapse]);
  for (const r of records) if (r.quarantined && waiters.has(r.name)) late.add(r.name);
  const queue = queueOf(waiters, late);
  const byName = new Map(records.map((r) => [r.name, r]));
  const eligible = queue.filter(
    (n) => healthy(input, byName.get(n)) && withinQuarantineCap(input, byName.get(n)),
  );
  const held = heldReason(input, queue.length, eligible.length);
  const claims: Claims = {
    byName,
    holders,
    waiters,
    pending,
    ...controlPlaneClaims(input, byName, holders, pending),
  };
  const fleet = fleetLockWait(input, pending);
  return { ...judged, ...grantOf(input, eligible, claims, fleet), queue, held: held ?? fleet };
}

/**
 * The turns to give: none while the lock gives no slot, nor while a node the FleetLock server refused
 * holds a turn (`fleet`: no other node of the cluster is asked meanwhile); else pick's.
 */
function grantOf(
  input: PlanInput,
  eligible: readonly string[],
  claims: Claims,
  fleet: string | undefined,
): Pick<Plan, 'grant'> {
  const held = input.lockHeld !== undefined || fleet !== undefined;
  return { grant: held ? [] : pick(input, eligible, claims) };
}

/**
 * Has a node with a pending turn been seen asking the FleetLock server anew since its turn (the
 * server gave it no slot)? Then no further turn is given: the group it asks for is full (or the server
 * does not answer) for every node of the cluster alike, and a turn given would only cost a wake-up, a
 * question and a status write. Why, when so; undefined otherwise.
 */
function fleetLockWait(
  input: PlanInput,
  pending: ReadonlyMap<string, string | undefined>,
): string | undefined {
  for (const node of pending.keys()) {
    const asked = input.fleetLockAsks?.get(node);
    if (asked !== undefined && asked >= (input.turnSince.get(node) ?? input.nowMs)) {
      return `${node} has its turn and waits for a slot from the FleetLock server`;
    }
  }
  return undefined;
}

/** Whether a control-plane node holds or is promised a slot, and whether workers are still ahead. */
function controlPlaneClaims(
  input: PlanInput,
  byName: ReadonlyMap<string, NodeRecord>,
  holders: ReadonlyMap<string, string | undefined>,
  pending: ReadonlyMap<string, string | undefined>,
): Pick<Claims, 'controlPlaneBusy' | 'workersAhead'> {
  const slotIsControlPlane = new Set(input.slots.filter((s) => s.controlPlane === true).map((s) => s.node));
  const busy = [...holders.keys(), ...pending.keys()].some(
    (n) => slotIsControlPlane.has(n) || byName.get(n)?.controlPlane === true,
  );
  const ahead =
    input.workersAhead === undefined
      ? [...byName.values()].some((r) => !r.controlPlane && (r.inCycle || r.waiting))
      : input.workersAhead > 0;
  return { controlPlaneBusy: busy, workersAhead: ahead };
}

/** The unavailable nodes that take slots: those neither holding nor promised one. */
function unavailableTaking(
  input: PlanInput,
  taken: ReadonlyMap<string, string | undefined>,
): Map<string, string> {
  const down = new Map<string, string>();
  for (const [node, group] of input.unavailable ?? []) if (!taken.has(node)) down.set(node, group);
  return down;
}

/**
 * The free slots, each to the first waiter in `queue` whose group has room (unavailable nodes
 * holding no slot take slots, a waiter not counting itself); a control-plane node only when no other
 * holds or is promised a slot, and with --control-plane-last only once no worker waits or reboots.
 */
function pick(input: PlanInput, queue: readonly string[], claims: Claims): string[] {
  const taken = new Map([...claims.holders, ...claims.pending]);
  const down = unavailableTaking(input, taken);
  let free = input.concurrency - taken.size - down.size;
  const room = groupRoom(input, groupUse(new Map([...taken, ...down])));
  const controlPlane = controlPlaneGate(input, claims);
  const grant: string[] = [];
  for (const node of queue) {
    const own = down.has(node) ? 1 : 0;
    if (free + own <= 0 || claims.pending.has(node) || !controlPlane.mayGo(node)) continue;
    if (!room(claims.waiters.get(node)?.group, own)) continue;
    grant.push(node);
    free -= 1 - own;
    controlPlane.went(node);
  }
  return grant;
}

/** One control-plane node at a time, and with --control-plane-last only once no worker is ahead. */
function controlPlaneGate(
  input: PlanInput,
  claims: Claims,
): { mayGo: (node: string) => boolean; went: (node: string) => void } {
  let busy = claims.controlPlaneBusy;
  const isControlPlane = (node: string): boolean => claims.byName.get(node)?.controlPlane === true;
  return {
    mayGo: (node) =>
      !isControlPlane(node) || !(busy || (input.controlPlaneLast === true && claims.workersAhead)),
    went: (node) => {
      busy ||= isControlPlane(node);
    },
  };
}

/**
 * With --group-concurrency: a test of whether a waiter of `group` has room (`own`: 1 when it is an
 * unavailable node counted in `used` already), which counts the turns it lets through against the
 * group; without groups (or for a waiter without one) always room.
 */
function groupRoom(
  input: PlanInput,
  used: (g: string) => number,
): (group: string | undefined, own: number) => boolean {
  const extra = new Map<string, number>();
  const { groupConcurrency, groupSlots } = input;
  return (group, own) => {
    if (group === undefined || groupConcurrency === undefined) return true;
    const limit = groupSlots?.(group) ?? groupConcurrency;
    const given = extra.get(group) ?? 0;
    if (used(group) + given - own >= limit) return false;
    extra.set(group, given + 1 - own);
    return true;
  };
}
