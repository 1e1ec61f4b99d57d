// Issue 54, item 2: the storage system's word about this node (--node-check). One LIST of the
// resource and a CEL expression over it with this Node bound as `node`: after the drain the reboot
// waits until it holds (within --volume-detach-timeout, and its action); an `at-slot` check holds
// the node back before it takes a slot instead, an `always` check both. A list too large, an error, a 403 or a resource that is
// not served fails closed, with the reason. Through the real client against the fake API server,
// which serves Longhorn's Volume as kube-apiserver does once its CRD is installed; the CEL runs in its
// worker thread (dist/cel-worker.js). The rebooter records whether a Longhorn volume still named the
// node at the moment of the reboot.
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { Agent } from '../../../src/agent/agent.js';
import type { Config } from '../../../src/config/config.js';
import { nodeCheck } from '../../../src/config/wave-values.js';
import type { V1Node } from '../../../src/kube/kube.js';
import { CYCLE_ANNOTATION, CYCLE_LABEL, parseCycle } from '../../../src/node/cycle.js';
import { QUARANTINE_ANNOTATION, parseQuarantine } from '../../../src/node/quarantine.js';
import type { FakeApiServer } from '../../../src/sim/fake-api-server.js';
import { startClusterApiServer } from '../../fakes/cluster-api-server.js';
import { FakeClock } from '../../fakes/fake-clock.js';
import { kuredDaemonSet, readyNode, webPod } from '../../fakes/kube-objects.js';
import { waitFor } from '../../fakes/wait-for.js';
import { steppedAgent, steppedConfig, steppedTick, type SteppedTick } from '../../fakes/stepped-agent.js';
import { lockHolders, nodeStatus, storedNode } from '../../fakes/cluster-reads.js';

/** The agents' clock: a Monday morning, inside every window the tests' flags open, whatever day they run. */
const MONDAY = '2026-01-05T10:00:00Z';

const LONGHORN = 'longhorn-system';
const ATTACHED_HERE =
  'longhorn.io/v1beta2/volumes longhorn-system: !self.items.exists(v, v.status.currentNodeID == node.metadata.name)';

let server: FakeApiServer;
/** At each reboot: the Longhorn volumes whose currentNodeID was n1. */
let longhornAtReboot: string[][];

interface LonghornVolume {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace: string };
  status: { currentNodeID: string; robustness: string };
}

function longhornVolume(name: string, currentNodeID: string): LonghornVolume {
  return {
    apiVersion: 'longhorn.io/v1beta2',
    kind: 'Volume',
    metadata: { name, namespace: LONGHORN },
    status: { currentNodeID, robustness: 'healthy' },
  };
}

function attachedToN1(): string[] {
  return server
    .list<LonghornVolume>('volumes', LONGHORN)
    .filter((v) => v.status.currentNodeID === 'n1')
    .map((v) => v.metadata.name);
}

/** Longhorn detaches `name` from the node it was on. */
function detachLonghorn(name: string): void {
  const v = server.get<LonghornVolume>('volumes', LONGHORN, name)!;
  server.update('volumes', { ...v, status: { ...v.status, currentNodeID: '' } });
}

beforeEach(async () => {
  server = await startClusterApiServer();
  longhornAtReboot = [];
  server.create('daemonsets', kuredDaemonSet());
  server.create<V1Node>('nodes', readyNode('n1'));
  server.create('pods', webPod('web-1', 'n1'));
  server.create('volumes', longhornVolume('pvc-web', 'n1'));
  server.create('volumes', longhornVolume('pvc-other', 'n2'));
});

afterEach(async () => {
  await server.close();
});

const node = (): V1Node => storedNode(server, 'n1');
const holders = (): string[] => lockHolders(server);
const status = (): ReturnType<typeof nodeStatus> => nodeStatus(server, 'n1');

/** n1's agent on `clock` with these node checks, over the real client. */
function agent(clock: FakeClock, checks: string[], overrides: Partial<Config> = {}): Agent {
  const config = steppedConfig({ nodeChecks: checks.map(nodeCheck), ...overrides });
  return steppedAgent(server, clock, config, () => {
    longhornAtReboot.push(attachedToN1());
  });
}

/** Starts n1's tick; `next()` moves the clock past the wait's next judgement (10 s). */
function ticking(clock: FakeClock, checks: string[], overrides: Partial<Config> = {}): SteppedTick {
  const phase = 'waiting-for-volumes';
  return steppedTick(agent(clock, checks, overrides), { server, clock, node: 'n1', phase, stepMs: 10_000 });
}

describe('a node check after the drain', () => {
  it('refuses the reboot while a Longhorn volume names this node, and reboots once none does', async () => {
    const clock = new FakeClock(MONDAY);
    const run = ticking(clock, [ATTACHED_HERE]);
    await run.waiting();
    for (let look = 0; look < 3; look++) {
      expect(status()?.reason).toMatch(
        /^drained; reboot waits: node check longhorn\.io\/v1beta2\/volumes longhorn-system: .*: false \(waiting since /,
      );
      expect(node().spec?.unschedulable).toBe(true);
      expect(holders()).toEqual(['n1']);
      expect(longhornAtReboot).toEqual([]);
      await run.next();
    }
    detachLonghorn('pvc-web');
    await run.next();
    expect((await run.tick).kind).toBe('rebooting');
    expect(longhornAtReboot).toEqual([[]]);
  }, 30_000);

  it('ends the cycle as a failed drain past --volume-detach-timeout, quarantined naming the check', async () => {
    const clock = new FakeClock(MONDAY);
    const run = ticking(clock, [ATTACHED_HERE], { volumeDetachTimeoutMs: 30_000 });
    await run.waiting();
    for (let move = 0; move < 6 && !run.settled(); move++) await run.next();
    expect(await run.tick).toMatchObject({
      kind: 'quarantined',
      reason: expect.stringContaining('past --volume-detach-timeout 30s'),
    });
    expect(longhornAtReboot).toEqual([]);
    expect(node().spec?.unschedulable).not.toBe(true);
    expect(node().metadata?.labels?.[CYCLE_LABEL]).toBeUndefined();
    expect(holders()).toEqual([]);
    expect(parseQuarantine(node().metadata?.annotations?.[QUARANTINE_ANNOTATION])).toMatchObject({
      kind: 'node-check-timeout',
      nodeChecks: [ATTACHED_HERE],
    });
  }, 30_000);

  it('reboots past the timeout with --volume-detach-timeout-action reboot, saying so', async () => {
    const clock = new FakeClock(MONDAY);
    const run = ticking(clock, [ATTACHED_HERE], {
      volumeDetachTimeoutMs: 20_000,
      volumeDetachTimeoutAction: 'reboot',
    });
    await run.waiting();
    for (let move = 0; move < 6 && !run.settled(); move++) await run.next();
    expect((await run.tick).kind).toBe('rebooting');
    expect(longhornAtReboot).toEqual([['pvc-web']]);
  }, 30_000);

  it('a restarted agent in the wait goes on counting from when the wait began', async () => {
    const clock = new FakeClock(MONDAY);
    const controller = new AbortController();
    const first = agent(clock, [ATTACHED_HERE], { volumeDetachTimeoutMs: 60_000 }).tick(controller.signal);
    await waitFor(() => status()?.phase === 'waiting-for-volumes' && clock.pending > 0, 'n1 waits', 10_000);
    const began = parseCycle(node().metadata?.annotations?.[CYCLE_ANNOTATION])?.volumesSince;
    expect(began).toBeDefined();
    await clock.advance(40_000);
    controller.abort(new Error('the pod is replaced'));
    await first.catch(() => undefined);
    const run = ticking(clock, [ATTACHED_HERE], { volumeDetachTimeoutMs: 60_000 });
    for (let move = 0; move < 6 && !run.settled(); move++) await run.next();
    expect(await run.tick).toMatchObject({
      kind: 'quarantined',
      reason: expect.stringContaining('past --volume-detach-timeout 1m'),
    });
    expect(parseCycle(node().metadata?.annotations?.[CYCLE_ANNOTATION])).toBeUndefined();
    expect(longhornAtReboot).toEqual([]);
  }, 30_000);
});

describe('an at-slot node check', () => {
  it.each<[string, () => void, string[], string]>([
    ['while a list item names this node', () => undefined, [ATTACHED_HERE], ': false'],
    [
      'on a list of more than 500 items',
      () => {
        for (let i = 0; i < 501; i++) server.create('volumes', longhornVolume(`pvc-${String(i)}`, 'n9'));
      },
      [ATTACHED_HERE],
      'more than 500 items',
    ],
    [
      'on a 403',
      () => {
        server.injectFailure({ method: 'GET', pathIncludes: '/longhorn.io/v1beta2/' }, 403, 100);
      },
      [ATTACHED_HERE],
      'cannot list longhorn.io/v1beta2/volumes in longhorn-system: ',
    ],
    [
      'on a 500 that persists past the read retries',
      () => {
        server.injectFailure({ method: 'GET', pathIncludes: '/longhorn.io/v1beta2/' }, 500, 100);
      },
      [ATTACHED_HERE],
      'cannot list longhorn.io/v1beta2/volumes',
    ],
    [
      'on a resource that is not served (its CRD not installed)',
      () => undefined,
      ['example.com/v1/things: self.items.size() == 0'],
      'the resource is not served (is its CRD installed?)',
    ],
    [
      'on an expression that errs',
      () => undefined,
      ['longhorn.io/v1beta2/volumes longhorn-system: self.items[0].status.nothing == 1'],
      'error',
    ],
  ])(
    'refuses the slot %s, fails closed with the reason',
    async (_name, arrange, checks, why) => {
      arrange();
      const outcome = await agent(
        new FakeClock(MONDAY),
        checks.map((c) => `at-slot ${c}`),
      ).tick();
      expect(outcome).toMatchObject({ kind: 'blocked', reason: expect.stringContaining(why) });
      expect(outcome.reason).toContain('node check at-slot ');
      expect(node().spec?.unschedulable).not.toBe(true);
      expect(holders()).toEqual([]);
      expect(longhornAtReboot).toEqual([]);
    },
    30_000,
  );

  it.each([
    ['at-slot', 'at the slot only', 1],
    ['always', 'at the slot and again after the drain', 2],
  ] as const)(
    'lets the node take its slot when no item names it: %s is judged %s',
    async (when, _judged, lists) => {
      detachLonghorn('pvc-web');
      const outcome = await agent(new FakeClock(MONDAY), [`${when} ${ATTACHED_HERE}`]).tick();
      expect(outcome.kind).toBe('rebooting');
      const reads = server.requests.filter((r) => r.method === 'GET' && r.path.includes('/volumes'));
      expect(reads.length).toBe(lists);
      expect(longhornAtReboot).toEqual([[]]);
    },
    30_000,
  );
});
