// `kured-ts unlock` through the real client against the fake API server: what it removes, what it
// refuses, and that it never loses an entry another writer adds meanwhile.
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { commandLine } from '../../fakes/command-line.js';
import { startClusterApiServer } from '../../fakes/cluster-api-server.js';
import { NOTHING_SELECTED, registerUnlock, runUnlock, type UnlockOptions } from '../../../src/cli/unlock.js';
import { SystemClock } from '../../../src/clock/clock.js';
import { ClientNodeKube } from '../../../src/kube/client.js';
import type { V1DaemonSet, V1Node } from '../../../src/kube/kube.js';
import { DaemonSetLock } from '../../../src/lock/daemonset-lock.js';
import { entriesOf, parseLockAnnotation } from '../../../src/lock/kured-lock-format.js';
import { MemoryLogger } from '../../../src/log/logger.js';
import { CYCLE_LABEL } from '../../../src/node/cycle.js';
import { type FakeApiServer } from '../../../src/sim/fake-api-server.js';
import { FakeClock } from '../../fakes/fake-clock.js';
import { kuredDaemonSet, readyNode } from '../../fakes/kube-objects.js';

const LOCK = 'weave.works/kured-node-lock';
const MANUAL = '{"nodeID":"manual"}';

let server: FakeApiServer;
let out: string[];
let errs: string[];
let clock: FakeClock;

beforeEach(async () => {
  server = await startClusterApiServer();
  out = [];
  errs = [];
  clock = new FakeClock('2026-01-05T10:00:00Z');
});

afterEach(async () => {
  await server.close();
});

function entry(nodeID: string): string {
  return JSON.stringify({
    nodeID,
    metadata: { unschedulable: false },
    created: '2026-01-05T09:00:00Z',
    TTL: 0,
  });
}

function multi(maxOwners: number, ...entries: string[]): string {
  return `{"maxOwners":${maxOwners},"locks":[${entries.join(',')}]}`;
}

/** Nodes as the cluster shows them: in a kured-ts cycle, cordoned (by kured or an admin), or idle. */
function seed(
  lock: string | undefined,
  nodes: { name: string; cycle?: boolean; cordoned?: boolean }[],
): void {
  const ds = kuredDaemonSet();
  ds.metadata = { ...ds.metadata, annotations: { 'owner/other': 'keep-me' } };
  if (lock !== undefined) ds.metadata.annotations = { ...ds.metadata.annotations, [LOCK]: lock };
  server.create('daemonsets', ds);
  for (const n of nodes) {
    const node = readyNode(n.name);
    if (n.cycle === true) node.metadata = { ...node.metadata, labels: { [CYCLE_LABEL]: 'true' } };
    if (n.cordoned === true) node.spec = { ...node.spec, unschedulable: true };
    server.create<V1Node>('nodes', node);
  }
}

function annotations(): Record<string, string> {
  return server.get<V1DaemonSet>('daemonsets', 'kube-system', 'kured')?.metadata?.annotations ?? {};
}

function holders(): string[] {
  const text = annotations()[LOCK];
  return text === undefined ? [] : entriesOf(parseLockAnnotation(text)).map((e) => e.nodeID);
}

function options(overrides: Partial<UnlockOptions>): UnlockOptions {
  return {
    dsNamespace: 'kube-system',
    dsName: 'kured',
    lockAnnotation: LOCK,
    nodes: [],
    manual: false,
    stale: false,
    force: false,
    dryRun: false,
    ...overrides,
  };
}

function unlock(overrides: Partial<UnlockOptions>, kube = server.kubeInMemory()): Promise<number> {
  return runUnlock(options(overrides), {
    kube,
    out: (l) => out.push(l),
    err: (l) => errs.push(l),
    clock,
  });
}

const writes = (): number => server.requests.filter((r) => r.method === 'PATCH').length;

describe('kured-ts unlock', () => {
  it.each([
    {
      name: "removes kured's manual lock with --manual and keeps a holder's entry beside it",
      lock: multi(2, MANUAL, entry('n1')),
      nodes: [{ name: 'n1', cycle: true, cordoned: true }],
      ask: { manual: true },
      left: ['n1'],
    },
    {
      name: 'removes with --stale the entries of a deleted node and of an idle uncordoned node',
      lock: multi(3, entry('gone'), entry('idle'), entry('n1')),
      nodes: [{ name: 'idle' }, { name: 'n1', cycle: true, cordoned: true }],
      ask: { stale: true },
      left: ['n1'],
    },
    {
      name: "keeps with --stale a cordoned node's entry (kured mid-reboot) and the manual lock",
      lock: multi(3, entry('kured-node'), MANUAL),
      nodes: [{ name: 'kured-node', cordoned: true }],
      ask: { stale: true },
      left: ['kured-node', 'manual'],
    },
    {
      name: 'removes a named node that is in no cycle, leaving the others',
      lock: multi(2, entry('n1'), entry('n2')),
      nodes: [{ name: 'n1' }, { name: 'n2', cycle: true, cordoned: true }],
      ask: { nodes: ['n1'] },
      left: ['n2'],
    },
    {
      name: 'removes a named node in a reboot cycle only with --force',
      lock: multi(2, entry('n1'), entry('n2')),
      nodes: [{ name: 'n1', cycle: true, cordoned: true }, { name: 'n2' }],
      ask: { nodes: ['n1'], force: true },
      left: ['n2'],
    },
  ])('$name', async ({ lock, nodes, ask, left }) => {
    seed(lock, nodes);
    expect(await unlock(ask)).toBe(0);
    expect(holders()).toEqual(left);
    expect(annotations()['owner/other']).toBe('keep-me');
    expect(errs).toEqual([]);
  });

  it("deletes an emptied single-form lock and keeps an emptied multi-form lock's maxOwners", async () => {
    seed(MANUAL, []);
    expect(await unlock({ manual: true })).toBe(0);
    expect(annotations()[LOCK]).toBeUndefined();
    await server.close();
    server = await startClusterApiServer();
    seed(multi(3, MANUAL), []);
    expect(await unlock({ manual: true })).toBe(0);
    expect(parseLockAnnotation(annotations()[LOCK] ?? '')).toEqual({
      form: 'multi',
      maxOwners: 3,
      entries: [],
    });
  });

  it('refuses a named node in a reboot cycle without --force, and then writes nothing at all', async () => {
    seed(multi(3, entry('n1'), MANUAL), [{ name: 'n1', cycle: true, cordoned: true }]);
    expect(await unlock({ nodes: ['n1'], manual: true })).toBe(1);
    expect(holders()).toEqual(['n1', 'manual']);
    expect(writes()).toBe(0);
    expect(errs.join('\n')).toContain('n1 is in a kured-ts reboot cycle');
  });

  it('prints what it would remove with --dry-run and writes nothing', async () => {
    seed(multi(2, MANUAL, entry('gone')), []);
    expect(await unlock({ manual: true, stale: true, dryRun: true })).toBe(0);
    expect(holders()).toEqual(['manual', 'gone']);
    expect(writes()).toBe(0);
    expect(out).toEqual([
      "would remove the entry of manual: kured's manual lock (it records no creation time)",
      'would remove the entry of gone: its node no longer exists',
      'the lock is free',
    ]);
  });

  it('removes an unparsable lock only with --stale, naming why it cannot be read', async () => {
    seed('{"locks":"garbage"}', []);
    expect(await unlock({ manual: true })).toBe(1);
    expect(errs).toEqual([
      `the lock annotation ${LOCK} is unparsable ("locks" is not an array): remove it with --stale`,
    ]);
    expect(annotations()[LOCK]).toBe('{"locks":"garbage"}');
    expect(await unlock({ stale: true })).toBe(0);
    expect(annotations()[LOCK]).toBeUndefined();
  });

  it('says the lock is free and exits 0 when there is nothing to remove', async () => {
    seed(undefined, []);
    expect(await unlock({ stale: true })).toBe(0);
    expect(out).toEqual(['the lock is free: DaemonSet kube-system/kured has no weave.works/kured-node-lock']);
    expect(writes()).toBe(0);
  });

  it('keeps an entry an agent adds between its read and its write: the guarded write fails, it reads again', async () => {
    seed(multi(2, MANUAL), [{ name: 'n2' }]);
    let thirdParty = false;
    class RacedKube extends ClientNodeKube {
      override async getDaemonSet(
        namespace: string,
        name: string,
        signal?: AbortSignal,
      ): Promise<V1DaemonSet> {
        const ds = await super.getDaemonSet(namespace, name, signal);
        if (!thirdParty) {
          thirdParty = true; // an agent takes the free slot right after our read
          const now = server.get<V1DaemonSet>('daemonsets', namespace, name)!;
          now.metadata!.annotations = { ...now.metadata!.annotations, [LOCK]: multi(2, MANUAL, entry('n2')) };
          server.update('daemonsets', now);
        }
        return ds;
      }
    }
    const code = await runUnlock(options({ manual: true }), {
      kube: new RacedKube(server.kubeConfig(), { exchange: server.exchange }),
      out: (l) => out.push(l),
      err: (l) => errs.push(l),
      clock: new SystemClock(), // the retry's backoff: real, and under 2 s
    });
    expect(code).toBe(0);
    expect(holders()).toEqual(['n2']);
    expect(server.requests.filter((r) => r.method === 'PATCH').map((r) => r.status)).toEqual([409, 200]);
  });

  it("frees a fleet frozen by kured's manual lock: the next node takes a slot", async () => {
    seed(MANUAL, [{ name: 'n1' }]);
    const lock = new DaemonSetLock({
      kube: server.kubeInMemory(),
      namespace: 'kube-system',
      name: 'kured',
      annotation: LOCK,
      nodeId: 'n1',
      concurrency: { count: 1 },
      ttlMs: 0,
      clock,
      log: new MemoryLogger(),
    });
    const frozen = await lock.acquire({ unschedulable: false });
    if (frozen.acquired) throw new Error('a manual lock gave a slot');
    // the reason names the command that frees it; run exactly that
    const command = /kured-ts (unlock [^;)]*)/.exec(frozen.reason)?.[1] ?? '';
    expect(command).toBe('unlock --manual -n kube-system --ds-name kured');
    expect(await cli(command.split(' '))).toBe(0);
    expect((await lock.acquire({ unschedulable: false })).acquired).toBe(true);
  });
});

/** The command line as a user types it (after `kured-ts`), against the fake API server. */
function cli(args: string[]): Promise<number | undefined> {
  return commandLine([registerUnlock], {
    env: {},
    out: (l) => out.push(l),
    err: (l) => errs.push(l),
    connect: () => server.kubeInMemory(),
    clock,
  })(args);
}

describe('kured-ts unlock as registered with commander', () => {
  it('exits 2 with one line when told nothing to remove', async () => {
    expect(await cli(['unlock'])).toBe(2);
    expect(errs).toEqual([NOTHING_SELECTED]);
    expect(server.requests).toEqual([]);
  });
});
