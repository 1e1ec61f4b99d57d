// Who gets a turn at the lock now (src/coordinator/turn-plan.ts): the coordinator's pure decision
// over its view of the fleet and of the lock.
import { describe, expect, it } from '@jest/globals';
import { FleetView, concernsQueue, type NodeRecord } from '../../src/coordinator/fleet-view.js';
import { FakeClock } from '../fakes/fake-clock.js';
import { FakeKube } from '../fakes/fake-kube.js';
import { MemoryLogger } from '../../src/log/logger.js';
import {
  FLEETLOCK_TURN_MAX_MS,
  planTurns,
  type Plan,
  type PlanInput,
  type SlotHolder,
} from '../../src/coordinator/turn-plan.js';
import type { Phase } from '../../src/node/status.js';
import { FLEETLOCK_TURN_GRACE_MS } from '../../src/fleetlock/fleetlock.js';

const NOW = new Date('2026-01-05T10:00:00Z');
const NOW_MS = 1_000_000;
const GRACE_MS = 30_000;
const MINUTE = 60_000;

interface Shape {
  /** Its status phase; default 'waiting-for-lock'. */
  phase?: Phase;
  /** Its reboot has been needed for this many minutes; default 10. */
  neededFor?: number;
  /** Past its --reboot-deadline. */
  overdue?: boolean;
  group?: string;
  inCycle?: boolean;
  unhealthy?: string;
  /** Labelled node-role.kubernetes.io/control-plane. */
  controlPlane?: boolean;
  /** It carries a turn given this many ms ago (by this coordinator's monotonic clock). */
  turnAgoMs?: number;
  /** It carries a lapsed turn (LapsedTurn) in its turn annotation. */
  lapsed?: boolean;
  /** It carries the quarantine label (its drain failed before). */
  quarantined?: boolean;
}

function node(name: string, shape: Shape = {}): NodeRecord {
  const required = new Date(NOW.getTime() - (shape.neededFor ?? 10) * MINUTE).toISOString();
  return {
    name,
    status: {
      phase: shape.phase ?? 'waiting-for-lock',
      reason: 'r',
      requiredSince: required,
      ...(shape.overdue === true ? { due: new Date(NOW.getTime() - MINUTE).toISOString() } : {}),
    },
    group: shape.group ?? '',
    inCycle: shape.inCycle ?? false,
    unhealthy: shape.unhealthy,
    controlPlane: shape.controlPlane ?? false,
    waiting: (shape.phase ?? 'waiting-for-lock') === 'waiting-for-lock',
    reported: true,
    quarantined: shape.quarantined ?? false,
    turn: shape.turnAgoMs === undefined ? undefined : '{"since":"2026-01-05T09:59:00Z","by":"c-0"}',
    lapsedTurn:
      shape.lapsed === true
        ? '{"lapsed":{"since":"2026-01-05T09:58:00Z","by":"c-0","at":"2026-01-05T09:58:30Z"}}'
        : undefined,
  };
}

const slot = (name: string, group?: string): SlotHolder => ({ node: name, group });

/** The plan for the nodes `shapes` names, with the rest of the input as given (or its defaults). */
function plan(shapes: Record<string, Shape>, input: Partial<PlanInput> = {}): Plan {
  const turnSince = new Map<string, number>();
  for (const [name, shape] of Object.entries(shapes))
    if (shape.turnAgoMs !== undefined) turnSince.set(name, NOW_MS - shape.turnAgoMs);
  return planTurns({
    nodes: Object.entries(shapes).map(([name, shape]) => node(name, shape)),
    slots: [],
    lockHeld: undefined,
    concurrency: 1,
    groupConcurrency: undefined,
    now: NOW,
    nowMs: NOW_MS,
    turnSince,
    graceMs: GRACE_MS,
    passedOver: new Set(),
    ...input,
  });
}

/** A case: the nodes by name and shape, the rest of the input, and what the plan must say. */
type Case = [string, Record<string, Shape>, Partial<PlanInput>, Partial<Plan>];

const cases: Case[] = [
  [
    'gives each free slot to the node whose reboot has been needed longest',
    { a: { neededFor: 30 }, b: { neededFor: 60 }, c: { neededFor: 10 } },
    { concurrency: 2 },
    { grant: ['b', 'a'], queue: ['b', 'a', 'c'] },
  ],
  [
    'puts an overdue node before an older need',
    { a: { neededFor: 60 }, b: { neededFor: 10, overdue: true } },
    {},
    { grant: ['b'] },
  ],
  ['breaks a tie of needs by name', { b: { neededFor: 30 }, a: { neededFor: 30 } }, {}, { grant: ['a'] }],
  [
    'gives no turn while every slot is held, and sorts no queue for it',
    { a: {} },
    { slots: [slot('x')] },
    { grant: [], queue: [] },
  ],
  [
    'counts slots and nodes in a cycle together: the lock is full with one of each',
    { a: {}, y: { phase: 'rebooting', inCycle: true } },
    { concurrency: 2, slots: [slot('x')] },
    { grant: [] },
  ],
  [
    'counts a node in a cycle without a lock slot against --concurrency',
    { a: { neededFor: 60 }, b: { neededFor: 30 }, y: { phase: 'rebooting', inCycle: true } },
    { concurrency: 2 },
    { grant: ['a'] },
  ],
  [
    'gives no second turn while an outstanding turn, within the grace, occupies the slot',
    { a: { neededFor: 60, turnAgoMs: GRACE_MS - 1 }, b: { neededFor: 30 } },
    {},
    { grant: [], revoke: [], lapse: [] },
  ],
  [
    'does not give a node with an outstanding turn another one, and counts it',
    { a: { neededFor: 60, turnAgoMs: 1_000 }, b: { neededFor: 30 }, c: { neededFor: 10 } },
    { concurrency: 2 },
    { grant: ['b'] },
  ],
  [
    'takes back a turn not taken within the grace and puts its node behind the other waiters',
    { a: { neededFor: 60, turnAgoMs: GRACE_MS }, b: { neededFor: 30 } },
    {},
    { grant: ['b'], lapse: ['a'], revoke: [], queue: ['b', 'a'] },
  ],
  [
    'keeps past the grace the turn of a node whose agent was seen asking the FleetLock server since, and gives no other turn meanwhile',
    { a: { neededFor: 60, turnAgoMs: 5 * MINUTE }, b: { neededFor: 30 } },
    { concurrency: 2, fleetLock: true, fleetLockAsks: new Map([['a', NOW_MS - 4 * MINUTE]]) },
    {
      grant: [],
      lapse: [],
      revoke: [],
      held: 'a has its turn and waits for a slot from the FleetLock server',
      nextLapseMs: NOW_MS - 4 * MINUTE + FLEETLOCK_TURN_GRACE_MS,
    },
  ],
  [
    'takes the turn back once its agent has not asked the FleetLock server for FLEETLOCK_TURN_GRACE_MS',
    { a: { neededFor: 60, turnAgoMs: 30 * MINUTE }, b: { neededFor: 30 } },
    { fleetLock: true, fleetLockAsks: new Map([['a', NOW_MS - FLEETLOCK_TURN_GRACE_MS]]) },
    { grant: ['b'], lapse: ['a'], revoke: [] },
  ],
  [
    'keeps nothing for a question to the FleetLock server seen before the turn was given',
    { a: { neededFor: 60, turnAgoMs: GRACE_MS }, b: { neededFor: 30 } },
    { fleetLock: true, fleetLockAsks: new Map([['a', NOW_MS - GRACE_MS - 1]]) },
    { grant: ['b'], lapse: ['a'], revoke: [] },
  ],
  [
    'keeps nothing for a question to a FleetLock server when none is configured: one agent cannot hold every turn back',
    { a: { neededFor: 60, turnAgoMs: 5 * MINUTE }, b: { neededFor: 30 } },
    { fleetLockAsks: new Map([['a', NOW_MS - 10_000]]) },
    { grant: ['b'], lapse: ['a'], held: undefined },
  ],
  [
    'holds other turns back for the FleetLock server at most FLEETLOCK_TURN_MAX_MS in all, however often its agent asks: then the next waiter gets a turn, and the asking node keeps its own',
    { a: { neededFor: 60, turnAgoMs: FLEETLOCK_TURN_MAX_MS }, b: { neededFor: 30 } },
    { fleetLock: true, fleetLockAsks: new Map([['a', NOW_MS - 10_000]]) },
    { grant: ['b'], lapse: [], revoke: [], held: undefined },
  ],
  [
    'says when the first pending turn lapses, the hand-off grace after it was given',
    { a: { neededFor: 60, turnAgoMs: 10_000 }, b: { neededFor: 30 } },
    {},
    { grant: [], lapse: [], nextLapseMs: NOW_MS - 10_000 + GRACE_MS },
  ],
  [
    'keeps the record of a lapsed turn on a node that still waits, and gives it no turn by it',
    { a: { neededFor: 60, lapsed: true }, b: { neededFor: 30 } },
    { slots: [slot('x')] },
    { grant: [], revoke: [], lapse: [] },
  ],
  [
    'queues a waiting node with a lapsed turn by its need once it is not passed over (a new leader, or its agent spoke)',
    { a: { neededFor: 60, lapsed: true }, b: { neededFor: 30 } },
    {},
    { grant: ['a'], revoke: [], lapse: [] },
  ],
  [
    'takes the record of a lapsed turn off a node that no longer waits',
    { a: { phase: 'blocked', lapsed: true }, b: { neededFor: 30 } },
    {},
    { grant: ['b'], revoke: ['a'], lapse: [] },
  ],
  [
    'puts passed-over nodes behind every other waiter',
    { a: { neededFor: 90, overdue: true }, b: { neededFor: 30 }, c: { neededFor: 10 } },
    { passedOver: new Set(['a']), concurrency: 2 },
    { grant: ['b', 'c'], queue: ['b', 'c', 'a'] },
  ],
  [
    'still gives a passed-over node a turn when nobody else waits',
    { a: { neededFor: 60 }, b: { phase: 'blocked' } },
    { passedOver: new Set(['a']) },
    { grant: ['a'] },
  ],
  [
    'puts a quarantined node that may try again behind every other waiter, however old its need',
    { a: { neededFor: 90, quarantined: true }, b: { neededFor: 30 }, c: { neededFor: 10 } },
    {},
    { grant: ['b'], queue: ['b', 'c', 'a'] },
  ],
  [
    'still gives a quarantined node that may try again a turn when nobody else waits',
    { a: { neededFor: 60, quarantined: true }, b: { phase: 'blocked', quarantined: true } },
    {},
    { grant: ['a'] },
  ],
  [
    'keeps the used turn of a node that now holds a slot until its cycle ends (no write to a node mid-cycle)',
    { a: { turnAgoMs: 1_000 }, b: {} },
    { concurrency: 2, slots: [slot('a')] },
    { revoke: [], grant: ['b'], queue: ['b'] },
  ],
  [
    'revokes a turn on a node that no longer waits',
    { a: { phase: 'blocked', turnAgoMs: 1_000 }, b: {} },
    {},
    { revoke: ['a'], grant: ['b'] },
  ],
  [
    'passes over a waiter whose group is full for a younger one of another group',
    { a: { neededFor: 60, group: 'z1' }, b: { neededFor: 30, group: 'z2' } },
    { concurrency: 3, groupConcurrency: 1, slots: [slot('x', 'z1')] },
    { grant: ['b'], queue: ['a', 'b'] },
  ],
  [
    'gives one turn per group within one plan',
    {
      a: { neededFor: 60, group: 'z1' },
      b: { neededFor: 50, group: 'z1' },
      c: { neededFor: 10, group: 'z2' },
    },
    { concurrency: 3, groupConcurrency: 1 },
    { grant: ['a', 'c'] },
  ],
  [
    'counts a slot that records no group against every group',
    { a: { neededFor: 60, group: 'z1' }, b: { neededFor: 30, group: 'z2' } },
    { concurrency: 3, groupConcurrency: 1, slots: [slot('x')] },
    { grant: [] },
  ],
  [
    'gives no turn while the lock is held, but still revokes',
    { a: {}, b: { phase: 'blocked', turnAgoMs: 1_000 } },
    { lockHeld: "kured's manual lock (manual) holds every slot" },
    { grant: [], revoke: ['b'], held: "kured's manual lock (manual) holds every slot" },
  ],
  [
    'gives no turn while more other nodes are unhealthy than allowed, and says why',
    { a: {}, u1: { phase: 'idle', unhealthy: 'not ready' }, u2: { phase: 'idle', unhealthy: 'not ready' } },
    { maxUnhealthy: 1 },
    {
      grant: [],
      held: '2 other nodes unhealthy (--max-unhealthy-nodes 1): u1, u2',
      gate: 'max-unhealthy-nodes',
    },
  ],
  [
    'lets an unhealthy waiter go when the others are within the limit',
    { a: { unhealthy: 'not ready' }, u1: { phase: 'idle', unhealthy: 'not ready' } },
    { maxUnhealthy: 1 },
    { grant: ['a'], held: undefined },
  ],
  [
    'gives a control-plane node no turn while a worker waits, even with a slot free and the older need',
    { cp1: { neededFor: 60, controlPlane: true }, w1: { neededFor: 10 } },
    { concurrency: 2, controlPlaneLast: true },
    { grant: ['w1'] },
  ],
  [
    'gives a control-plane node no turn while a worker is in its cycle',
    { cp1: { neededFor: 60, controlPlane: true }, w1: { phase: 'rebooting', inCycle: true } },
    { concurrency: 2, controlPlaneLast: true },
    { grant: [] },
  ],
  [
    'gives a control-plane node its turn once no worker waits or reboots',
    { cp1: { neededFor: 60, controlPlane: true }, w1: { phase: 'completed' } },
    { controlPlaneLast: true },
    { grant: ['cp1'] },
  ],
  [
    'without --control-plane-last, a control-plane node queues by its need like any other',
    { cp1: { neededFor: 60, controlPlane: true }, w1: { neededFor: 10 } },
    { concurrency: 2, controlPlaneLast: false },
    { grant: ['cp1', 'w1'] },
  ],
  [
    'gives no second control-plane node a turn while one holds a slot',
    { cp1: { neededFor: 60, controlPlane: true }, cp2: { neededFor: 50, controlPlane: true } },
    { concurrency: 3, slots: [{ node: 'cp3', group: undefined, controlPlane: true }] },
    { grant: [] },
  ],
  [
    'gives one control-plane node a turn at a time, even with slots for two',
    { cp1: { neededFor: 60, controlPlane: true }, cp2: { neededFor: 50, controlPlane: true } },
    { concurrency: 3 },
    { grant: ['cp1'] },
  ],
  [
    'counts an unavailable node against --concurrency: no turn at concurrency 1',
    { a: { neededFor: 60 } },
    { countUnavailable: true, unhealthy: new Map([['z', '']]) },
    { grant: [], held: 'every slot taken; z unavailable (--count-unavailable)', gate: 'count-unavailable' },
  ],
  [
    'lets an unavailable waiter take the slot it already counts against, and nobody else',
    { a: { neededFor: 60 }, z: { neededFor: 10, unhealthy: 'cordoned' } },
    { countUnavailable: true },
    { grant: ['z'] },
  ],
  [
    'counts no unavailable node that holds a slot twice',
    { a: { neededFor: 60 } },
    { concurrency: 2, slots: [slot('z')], countUnavailable: true, unhealthy: new Map([['z', '']]) },
    { grant: ['a'] },
  ],
  [
    "resolves a group's share for each group (--group-concurrency N%)",
    {
      a: { neededFor: 60, group: 'big' },
      b: { neededFor: 50, group: 'big' },
      c: { neededFor: 40, group: 'small' },
    },
    { concurrency: 5, groupConcurrency: 1, groupSlots: (g: string) => (g === 'big' ? 2 : 1) },
    { grant: ['a', 'b', 'c'] },
  ],
  [
    'gives no turn while more other nodes are quarantined than --max-quarantined allows, and says why',
    { a: {}, q1: { phase: 'blocked', quarantined: true }, q2: { phase: 'blocked', quarantined: true } },
    { maxQuarantined: 1 },
    {
      grant: [],
      held: 'halted: 2 other nodes quarantined (--max-quarantined 1): q1, q2',
      gate: 'max-quarantined',
    },
  ],
  [
    'lets a quarantined waiter try again when the other quarantined nodes are within the cap',
    { a: { quarantined: true }, q1: { phase: 'blocked', quarantined: true } },
    { maxQuarantined: 1 },
    { grant: ['a'], held: undefined },
  ],
];

describe('planTurns', () => {
  it.each(cases)('%s', (_name, shapes, input, expected) => {
    expect(plan(shapes, input)).toMatchObject(expected);
  });

  it('never gives more turns than there are free slots, nor one to a holder or a pending turn', () => {
    const random = mulberry32(20260105);
    const violations: unknown[] = [];
    for (let round = 0; round < 2_000; round++) {
      const { shapes, input } = randomCase(random);
      const result = plan(shapes, input);
      const holders = new Set(input.slots.map((s) => s.node));
      for (const [name, shape] of Object.entries(shapes)) if (shape.inCycle === true) holders.add(name);
      const pending = Object.entries(shapes)
        .filter(([name, shape]) => isPending(shape) && !holders.has(name))
        .map(([name]) => name);
      const free = Math.max(0, input.concurrency - holders.size - pending.length);
      const wrong = result.grant.filter((n) => holders.has(n) || pending.includes(n));
      if (result.grant.length > free || wrong.length > 0)
        violations.push({ round, grant: result.grant, free, wrong, shapes, input });
    }
    expect(violations).toEqual([]);
  });

  it("plans the same from the nodes that concern the queue, and from the view's index of turns and cycles, as from the whole fleet", () => {
    const random = mulberry32(20261125);
    const differences: unknown[] = [];
    for (let round = 0; round < 2_000; round++) {
      const { shapes, input: drawn } = randomCase(random);
      // the fleet's gates as the coordinator's view gives them, from every node (not only those planned)
      const all = Object.entries(shapes).map(([name, shape]) => node(name, shape));
      const input = {
        ...drawn,
        unhealthy: new Map(
          all.filter((r) => r.unhealthy !== undefined && !r.inCycle).map((r) => [r.name, r.group]),
        ),
        quarantined: new Set(all.filter((r) => r.quarantined).map((r) => r.name)),
        controlPlaneNodes: new Set(all.filter((r) => r.controlPlane).map((r) => r.name)),
        workersAhead: all.filter((r) => !r.controlPlane && (r.inCycle || r.waiting)).length,
      };
      const whole = plan(shapes, input);
      const some = Object.fromEntries(
        Object.entries(shapes).filter(([name, shape]) => concernsQueue(node(name, shape))),
      );
      const part = plan(some, input);
      // the view keeps the nodes with a turn and those in a cycle apart (FleetView.withTurn/inCycle)
      const records = Object.entries(some).map(([name, shape]) => node(name, shape));
      const index = {
        withTurn: records.filter((r) => r.turn !== undefined || r.lapsedTurn !== undefined),
        inCycle: records.filter((r) => r.inCycle),
      };
      const indexed = plan(some, { ...input, index });
      if (JSON.stringify(part) !== JSON.stringify(whole) || JSON.stringify(indexed) !== JSON.stringify(whole))
        differences.push({ round, whole, part, indexed, shapes, input });
    }
    expect(differences).toEqual([]);
  });
});

/** A waiter whose turn is still within the grace. */
function isPending(shape: Shape): boolean {
  const waits = (shape.phase ?? 'waiting-for-lock') === 'waiting-for-lock';
  return waits && shape.turnAgoMs !== undefined && shape.turnAgoMs < GRACE_MS;
}

/** Up to six nodes in random states, random slots, limits, health and passed-over nodes. */
function randomCase(random: () => number): {
  shapes: Record<string, Shape>;
  input: Partial<PlanInput> & { slots: SlotHolder[]; concurrency: number };
} {
  const pickOne = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)]!;
  const names = ['a', 'b', 'c', 'd', 'e', 'f'].slice(0, 1 + Math.floor(random() * 6));
  const shapes: Record<string, Shape> = {};
  for (const name of names)
    shapes[name] = {
      phase: pickOne<Phase>(['waiting-for-lock', 'waiting-for-lock', 'blocked', 'rebooting']),
      neededFor: Math.floor(random() * 5),
      overdue: random() < 0.2,
      group: pickOne(['z1', 'z2']),
      inCycle: random() < 0.2,
      unhealthy: random() < 0.2 ? 'not ready' : undefined,
      ...(random() < 0.3
        ? { turnAgoMs: Math.floor(random() * 2 * GRACE_MS) }
        : random() < 0.2
          ? { lapsed: true }
          : {}),
    };
  const slots = [...names, 'x', 'y']
    .filter(() => random() < 0.25)
    .map((name) => slot(name, random() < 0.8 ? pickOne(['z1', 'z2']) : undefined));
  return {
    shapes,
    input: {
      slots,
      concurrency: 1 + Math.floor(random() * 3),
      groupConcurrency: random() < 0.5 ? 1 + Math.floor(random() * 2) : undefined,
      passedOver: new Set(names.filter(() => random() < 0.2)),
      ...(random() < 0.5 ? {} : { maxUnhealthy: Math.floor(random() * 2) }),
      lockHeld: random() < 0.1 ? 'held' : undefined,
    },
  };
}

/** A small seeded PRNG: the same inputs on every run. */
function mulberry32(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

describe("the view's indexes", () => {
  it('keeps the nodes that concern the queue, those with a turn and those in a cycle as the records say, through any sequence of writes and deletions', () => {
    const random = mulberry32(20261126);
    const view = new FleetView({
      kube: new FakeKube(),
      clock: new FakeClock('2026-01-05T10:00:00Z'),
      log: new MemoryLogger(),
      random,
      groupLabel: undefined,
    });
    const names = ['a', 'b', 'c', 'd', 'e'];
    const wrong: unknown[] = [];
    for (let step = 0; step < 2_000; step++) {
      const name = names[Math.floor(random() * names.length)]!;
      if (random() < 0.15) view.delete(name);
      else
        view.set(
          node(name, {
            phase: random() < 0.5 ? 'waiting-for-lock' : 'idle',
            ...(random() < 0.3 ? { turnAgoMs: 0 } : random() < 0.2 ? { lapsed: true } : {}),
            inCycle: random() < 0.3,
          }),
        );
      const all = names.flatMap((n) => view.get(n) ?? []);
      const got = (it: Iterable<NodeRecord>): string[] => [...it].map((r) => r.name).sort();
      const want = (keep: (r: NodeRecord) => boolean): string[] =>
        all
          .filter(keep)
          .map((r) => r.name)
          .sort();
      const seen = { plan: got(view.inPlan()), turn: got(view.withTurn()), cycle: got(view.inCycle()) };
      const expected = {
        plan: want(concernsQueue),
        turn: want((r) => r.turn !== undefined || r.lapsedTurn !== undefined),
        cycle: want((r) => r.inCycle),
      };
      if (JSON.stringify(seen) !== JSON.stringify(expected)) wrong.push({ step, seen, expected });
    }
    expect(wrong).toEqual([]);
  });
});
