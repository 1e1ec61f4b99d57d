// One rule for "is there room in the lock for this node" (src/capacity/room.ts), and the wait for a slot
// (LockView.hasRoom, which decides whether a waiter wakes) agreeing with the acquisition
// (DaemonSetLock.wouldAcquire) on every lock whose slots both can see.
import { describe, expect, it } from '@jest/globals';
import type { V1Node } from '../../src/kube/kube.js';
import { FleetCensus } from '../../src/capacity/fleet-census.js';
import { DaemonSetLock } from '../../src/lock/daemonset-lock.js';
import {
  LockFormatError,
  entriesOf,
  newEntry,
  parseLockAnnotation,
  type LockEntry,
} from '../../src/lock/kured-lock-format.js';
import { LeaseObserver } from '../../src/lock/lease.js';
import { declaredSlots, type LockState } from '../../src/lock/lock-state.js';
import { LockView } from '../../src/lock/lock-view.js';
import { roomFor, type Room, type RoomQuestion } from '../../src/capacity/room.js';
import { silentLogger } from '../../src/log/logger.js';
import { FakeClock } from '../fakes/fake-clock.js';
import { FakeKube } from '../fakes/fake-kube.js';

const NOW = new Date('2026-01-05T10:00:00Z');
const GROUPS = { label: 'zone', concurrency: 1 };

function entry(nodeID: string, group?: string): LockEntry {
  return newEntry(nodeID, { unschedulable: false, ...(group === undefined ? {} : { group }) }, NOW, 0);
}

/** kured's manual lock: no creation time. */
const MANUAL: LockEntry = { nodeID: 'manual', created: '', createdMs: undefined, ttlNs: 0, metadata: {} };

function ask(q: Partial<RoomQuestion>): Room {
  return roomFor({
    live: [],
    nodeId: 'n1',
    declared: Number.POSITIVE_INFINITY,
    group: undefined,
    concurrency: 1,
    groups: undefined,
    ...q,
  });
}

describe('roomFor', () => {
  it.each<[string, Partial<RoomQuestion>, Room]>([
    ['an empty lock has room', {}, { room: true }],
    [
      "kured's manual lock holds every slot, at any concurrency",
      { live: [MANUAL], concurrency: 5 },
      { room: false, why: 'manual', entry: MANUAL },
    ],
    [
      'a lock naming more entries than its own maxOwners gives no slot to anyone',
      { live: [entry('n2'), entry('n3')], declared: 1, concurrency: 3 },
      { room: false, why: 'forged' },
    ],
    [
      'a lock naming more entries than --concurrency gives no slot to anyone',
      { live: [entry('n2'), entry('n3')], concurrency: 1 },
      { room: false, why: 'forged' },
    ],
    [
      "this node's own entry counts in the lock's claim, never as a slot held against it",
      { live: [entry('n1')] },
      { room: true },
    ],
    [
      "this node's own entry makes a lock at its maxOwners claim too many",
      { live: [entry('n1'), entry('n2')], declared: 1, concurrency: 2 },
      { room: false, why: 'forged' },
    ],
    [
      'every slot held by other nodes',
      { live: [entry('n2')] },
      { room: false, why: 'full', others: [entry('n2')], inCycle: [] },
    ],
    [
      'a node in a reboot cycle without an entry still takes a slot',
      { inCycle: [{ name: 'n3', group: '' }] },
      { room: false, why: 'full', others: [], inCycle: ['n3'] },
    ],
    [
      'the nodes in a cycle, when not looked up, are not counted (the wait for a slot)',
      { live: [entry('n2')], concurrency: 2 },
      { room: true },
    ],
    [
      "a slot of this node's group fills the group",
      { live: [entry('n2', 'a')], concurrency: 3, groups: GROUPS, group: 'a' },
      { room: false, why: 'group-full', group: 'a', holders: ['n2'] },
    ],
    [
      'a slot that records no group (kured) counts against every group',
      { live: [entry('n2')], concurrency: 3, groups: GROUPS, group: 'a' },
      { room: false, why: 'group-full', group: 'a', holders: ['n2'] },
    ],
    [
      "a node of this node's group in a cycle without an entry fills the group",
      { inCycle: [{ name: 'n3', group: 'a' }], concurrency: 3, groups: GROUPS, group: 'a' },
      { room: false, why: 'group-full', group: 'a', holders: ['n3'] },
    ],
    [
      "another group's slot and another group's node in a cycle leave room",
      {
        live: [entry('n2', 'b')],
        inCycle: [{ name: 'n3', group: 'b' }],
        concurrency: 3,
        groups: GROUPS,
        group: 'a',
      },
      { room: true },
    ],
    [
      'without a group for this node, no group limit',
      { live: [entry('n2', 'a')], concurrency: 3, groups: GROUPS },
      { room: true },
    ],
    [
      'an unavailable node takes a slot (--count-unavailable): one NotReady node fills --concurrency 1',
      { unavailable: { nodes: [{ name: 'n5', group: '' }], more: 0, moreInGroup: 0 } },
      { room: false, why: 'full', others: [], inCycle: [], unavailable: { names: ['n5'], more: 0 } },
    ],
    [
      'unavailable nodes a census did not name take slots too',
      { live: [entry('n2')], concurrency: 3, unavailable: { nodes: [], more: 2, moreInGroup: 0 } },
      { room: false, why: 'full', others: [entry('n2')], inCycle: [], unavailable: { names: [], more: 2 } },
    ],
    [
      'an unavailable node with a slot left over leaves room',
      { concurrency: 2, unavailable: { nodes: [{ name: 'n5', group: '' }], more: 0, moreInGroup: 0 } },
      { room: true },
    ],
    [
      "an unavailable node of this node's group fills the group",
      {
        concurrency: 3,
        groups: GROUPS,
        group: 'a',
        unavailable: { nodes: [{ name: 'n5', group: 'a' }], more: 0, moreInGroup: 0 },
      },
      { room: false, why: 'group-full', group: 'a', holders: ['n5'] },
    ],
    [
      'a control-plane node while another control-plane node holds a slot: one at a time, whatever the room',
      {
        live: [entry('cp2')],
        concurrency: 3,
        controlPlane: { peers: ['cp2', 'cp3'], workersAhead: undefined },
      },
      { room: false, why: 'control-plane-busy', holder: 'cp2' },
    ],
    [
      'a control-plane node while another is in its cycle without an entry: one at a time',
      {
        inCycle: [{ name: 'cp3', group: '' }],
        concurrency: 3,
        controlPlane: { peers: ['cp2', 'cp3'], workersAhead: undefined },
      },
      { room: false, why: 'control-plane-busy', holder: 'cp3' },
    ],
    [
      'a control-plane node while a worker waits: workers first',
      { concurrency: 3, controlPlane: { peers: ['cp2'], workersAhead: { count: 2, names: ['w1', 'w2'] } } },
      { room: false, why: 'workers-first', count: 2, names: ['w1', 'w2'] },
    ],
    [
      'a control-plane node beside a worker slot, no other control-plane node busy and no worker ahead',
      {
        live: [entry('w1')],
        concurrency: 2,
        controlPlane: { peers: ['cp2'], workersAhead: { count: 0, names: [] } },
      },
      { room: true },
    ],
  ])('%s', (_name, question, room) => {
    expect(ask(question)).toEqual(room);
  });
});

/** A Kube whose DaemonSet carries `text` as the lock; every holder's Node exists, none is in a cycle. */
function kubeWithLock(text: string | undefined): FakeKube {
  const kube = new FakeKube();
  const node = (name: string): Promise<V1Node> => Promise.resolve({ metadata: { name } });
  kube.getNode = node as FakeKube['getNode'];
  kube.daemonSet = {
    metadata: {
      name: 'kured',
      namespace: 'kube-system',
      annotations: text === undefined ? {} : { lock: text },
    },
  };
  return kube;
}

/** The lock as a waiter's view judges it: the same parse as DaemonSetLock's read. */
function stateOf(text: string | undefined): LockState {
  const none = { resourceVersion: '1', text, entries: [], declared: Number.POSITIVE_INFINITY };
  if (text === undefined) return none;
  try {
    const value = parseLockAnnotation(text);
    return { ...none, entries: entriesOf(value), declared: declaredSlots(value) };
  } catch (err) {
    if (!(err instanceof LockFormatError)) throw err;
    return { ...none, malformed: err.message };
  }
}

const single = (e: LockEntry): string =>
  JSON.stringify({
    nodeID: e.nodeID,
    metadata: e.metadata,
    created: e.created || '0001-01-01T00:00:00Z',
    TTL: 0,
  });
const multi = (maxOwners: number, entries: LockEntry[]): string =>
  JSON.stringify({
    maxOwners,
    locks: entries.map((e) => ({ nodeID: e.nodeID, metadata: e.metadata, created: e.created, TTL: 0 })),
  });

describe('the wait for a slot wakes exactly when the acquisition, seeing the same entries, has room', () => {
  it.each<[string, string | undefined, { concurrency: number; group?: string }, boolean]>([
    ['no lock', undefined, { concurrency: 1 }, true],
    ['the only slot held by another node', single(entry('n2')), { concurrency: 1 }, false],
    ["kured's manual lock", single(MANUAL), { concurrency: 3 }, false],
    ['an unparsable lock', '{not json', { concurrency: 3 }, false],
    [
      "the only slot held by this node's own entry, which no cycle proves (the acquisition takes it anew)",
      single(entry('n1')),
      { concurrency: 1 },
      true,
    ],
    [
      'a lock naming more entries than its own maxOwners, under a larger --concurrency',
      multi(1, [entry('n2'), entry('n3')]),
      { concurrency: 3 },
      false,
    ],
    ['a free slot beside a held one', multi(2, [entry('n2')]), { concurrency: 2 }, true],
    ["this node's group full", multi(3, [entry('n2', 'a')]), { concurrency: 3, group: 'a' }, false],
    ["another group's slot", multi(3, [entry('n2', 'b')]), { concurrency: 3, group: 'a' }, true],
  ])('%s', async (_name, text, { concurrency, group }, room) => {
    const clock = new FakeClock(NOW);
    const kube = kubeWithLock(text);
    // n1 in zone a, n2 and n3 in zone b: the labels agree with what the entries record
    kube.nodes = [
      { metadata: { name: 'n1', labels: { zone: 'a' } } },
      { metadata: { name: 'n2', labels: { zone: 'b' } } },
      { metadata: { name: 'n3', labels: { zone: 'b' } } },
    ];
    const options = {
      kube,
      nodeId: 'n1',
      namespace: 'kube-system',
      name: 'kured',
      annotation: 'lock',
      ttlMs: 0,
      concurrency: { count: concurrency },
      clock,
      log: silentLogger,
      ...(group === undefined
        ? {}
        : {
            groups: { label: GROUPS.label, concurrency: { count: GROUPS.concurrency } },
            census: new FleetCensus({ kube, clock, nodeId: 'n1', groupLabel: 'zone' }),
          }),
    };
    const acquisition = await new DaemonSetLock(options).wouldAcquire(
      undefined,
      group === undefined ? {} : { group },
    );
    const waiter = new LockView(options, new LeaseObserver()).hasRoom(stateOf(text), group);
    expect({ acquisition: acquisition.acquired, waiter }).toEqual({ acquisition: room, waiter: room });
  });
});
