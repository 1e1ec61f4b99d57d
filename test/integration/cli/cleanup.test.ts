// `kured-ts cleanup` through the real client against the fake API server: what it takes off the
// nodes and the lock's DaemonSet, what it leaves (others' keys, a cycle, a quarantine's cordon), and
// that a node changed meanwhile or a write answered with an error is never half-cleaned nor lost.
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { registerCleanup, runCleanup, type CleanupOptions } from '../../../src/cli/cleanup.js';
import type { Kube, V1DaemonSet, V1Node, V1Pod } from '../../../src/kube/kube.js';
import {
  CLUSTER_AUTOSCALER_ANNOTATION,
  KARPENTER_ANNOTATION,
  PROTECTION_ANNOTATION,
} from '../../../src/node/autoscaler.js';
import { EXCLUDE_LB_LABEL } from '../../../src/node/cycle-marks.js';
import { CYCLE_ANNOTATION, CYCLE_LABEL, formatCycle } from '../../../src/node/cycle.js';
import { formatQuarantine, QUARANTINE_ANNOTATION, QUARANTINE_LABEL } from '../../../src/node/quarantine.js';
import { STATUS_ANNOTATION } from '../../../src/node/status.js';
import { NODE_PAUSE_ANNOTATION } from '../../../src/node/node.js';
import { FLEET_PAUSE_ANNOTATION } from '../../../src/pause/fleet-pause.js';
import type { FakeApiServer } from '../../../src/sim/fake-api-server.js';
import { startClusterApiServer } from '../../fakes/cluster-api-server.js';
import { commandLine } from '../../fakes/command-line.js';
import { instantClock } from '../../fakes/fake-clock.js';
import { kuredDaemonSet, readyNode } from '../../fakes/kube-objects.js';

const LOCK = 'weave.works/kured-node-lock';
const STARTED = '2026-01-05T09:00:00Z';

let server: FakeApiServer;
let out: string[];
let errs: string[];

beforeEach(async () => {
  server = await startClusterApiServer();
  out = [];
  errs = [];
});

afterEach(async () => {
  await server.close();
});

interface Seed {
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  /** Cordoned by kured-ts's client (its field manager), or by someone else (an admin's kubectl). */
  cordonedBy?: 'kured-ts' | 'admin';
}

async function seedNode(name: string, seed: Seed = {}): Promise<void> {
  const node = readyNode(name);
  node.metadata = { name, labels: seed.labels ?? {}, annotations: seed.annotations ?? {} };
  if (seed.cordonedBy === 'admin') node.spec = { unschedulable: true };
  server.create<V1Node>('nodes', node);
  if (seed.cordonedBy === 'kured-ts')
    await server.kubeInMemory().mergePatchNode(name, { spec: { unschedulable: true } });
}

function nodeOf(name: string): V1Node {
  const node = server.get<V1Node>('nodes', undefined, name);
  if (node === undefined) throw new Error(`no node ${name}`);
  return node;
}

/** A cycle record as the agent writes it, with `cordoned` and the load-balancer label of its own. */
function cycle(cordoned: boolean): Record<string, string> {
  return {
    [CYCLE_ANNOTATION]: formatCycle({
      bootID: 'boot-1',
      cordoned,
      attempts: 0,
      started: STARTED,
      lbExcludedAt: STARTED,
    }),
  };
}

function cleanup(
  overrides: Partial<CleanupOptions> = {},
  kube: Kube = server.kubeInMemory(),
): Promise<number> {
  const options: CleanupOptions = {
    dsNamespace: 'kube-system',
    dsName: 'kured',
    dryRun: false,
    endCycles: false,
    force: false,
    ...overrides,
  };
  return runCleanup(options, {
    kube,
    out: (l) => out.push(l),
    err: (l) => errs.push(l),
    clock: instantClock(STARTED),
  });
}

const nodePatches = (): number =>
  server.requests.filter((r) => r.method === 'PATCH' && r.path.includes('/nodes/')).length;

describe('kured-ts cleanup', () => {
  it("takes every kured-ts label and annotation off an idle node and keeps everyone else's", async () => {
    await seedNode('n1', {
      labels: { [QUARANTINE_LABEL]: 'true', 'kured-ts.dev/wave': 'w1', team: 'web' },
      annotations: { [STATUS_ANNOTATION]: '{}', 'kured-ts.dev/history': '[]', 'owner/other': 'keep' },
    });
    await seedNode('n2', { labels: { team: 'db' } });
    expect(await cleanup()).toBe(0);
    expect(nodeOf('n1').metadata?.labels).toEqual({ team: 'web' });
    expect(nodeOf('n1').metadata?.annotations).toEqual({ 'owner/other': 'keep' });
    expect(nodePatches()).toBe(1); // n2 carried nothing of ours: not written
    expect(out.at(-1)).toBe("1 node(s) cleaned, 1 carried nothing of kured-ts's");
  });

  it.each<{ name: string; annotations: Record<string, string>; left: Record<string, string> }>([
    {
      name: 'removes an autoscaler annotation the record says kured-ts added',
      annotations: {
        [CLUSTER_AUTOSCALER_ANNOTATION]: 'true',
        [PROTECTION_ANNOTATION]: JSON.stringify({ added: [CLUSTER_AUTOSCALER_ANNOTATION] }),
      },
      left: {},
    },
    {
      name: 'keeps an autoscaler annotation an admin set, which the record does not name',
      annotations: {
        [CLUSTER_AUTOSCALER_ANNOTATION]: 'true',
        [KARPENTER_ANNOTATION]: 'true',
        [PROTECTION_ANNOTATION]: JSON.stringify({ added: [KARPENTER_ANNOTATION] }),
      },
      left: { [CLUSTER_AUTOSCALER_ANNOTATION]: 'true' },
    },
    {
      name: 'keeps an annotation the record names once someone gave it another value',
      annotations: {
        [KARPENTER_ANNOTATION]: 'false',
        [PROTECTION_ANNOTATION]: JSON.stringify({ added: [KARPENTER_ANNOTATION] }),
      },
      left: { [KARPENTER_ANNOTATION]: 'false' },
    },
  ])('$name', async ({ annotations, left }) => {
    await seedNode('n1', { annotations });
    expect(await cleanup()).toBe(0);
    expect(nodeOf('n1').metadata?.annotations ?? {}).toEqual(left);
  });

  it('leaves a node in a reboot cycle whole, names it and exits 1, cleaning the others', async () => {
    const record = cycle(true);
    await seedNode('n1', {
      labels: { [CYCLE_LABEL]: 'true', [EXCLUDE_LB_LABEL]: 'true' },
      annotations: record,
      cordonedBy: 'kured-ts',
    });
    await seedNode('n2', { annotations: { [STATUS_ANNOTATION]: '{}' } });
    expect(await cleanup()).toBe(1);
    expect(nodeOf('n1').metadata?.labels).toEqual({ [CYCLE_LABEL]: 'true', [EXCLUDE_LB_LABEL]: 'true' });
    expect(nodeOf('n1').metadata?.annotations).toEqual(record);
    expect(nodeOf('n1').spec?.unschedulable).toBe(true);
    expect(nodeOf('n2').metadata?.annotations).toEqual({});
    expect(errs.join('\n')).toContain(
      `n1: left whole: in a kured-ts reboot cycle since ${STARTED} (cordoned by kured-ts)`,
    );
  });

  it.each<{ name: string; record: boolean; seed: Seed; cordoned: boolean; says?: string }>([
    {
      name: "with --end-cycles uncordons a node whose cycle cordoned it and removes the cycle's load-balancer label",
      record: true,
      seed: { cordonedBy: 'kured-ts' },
      cordoned: false,
    },
    {
      name: 'with --end-cycles leaves cordoned a node that was cordoned before its cycle began',
      record: false,
      seed: { cordonedBy: 'kured-ts' },
      cordoned: true,
      says: 'no record of kured-ts says the cordon was its own',
    },
    {
      name: 'with --end-cycles leaves cordoned a node whose cordon an admin took over during the cycle, naming who',
      record: true,
      seed: { cordonedBy: 'admin' },
      cordoned: true,
      says: 'left cordoned: cordoned by fake-api-server, not by kured-ts',
    },
    {
      name: 'with --end-cycles leaves cordoned a node an operator paused',
      record: true,
      seed: { cordonedBy: 'kured-ts', annotations: { [NODE_PAUSE_ANNOTATION]: 'true' } },
      cordoned: true,
      says: 'paused by an operator',
    },
  ])('$name', async ({ record, seed, cordoned, says }) => {
    await seedNode('n1', {
      ...seed,
      labels: { [CYCLE_LABEL]: 'true', [EXCLUDE_LB_LABEL]: 'true' },
      annotations: { ...cycle(record), ...seed.annotations },
    });
    expect(await cleanup({ endCycles: true })).toBe(0);
    const node = nodeOf('n1');
    expect(node.metadata?.labels).toEqual({});
    expect(node.spec?.unschedulable === true).toBe(cordoned);
    if (says !== undefined) expect(out.join('\n')).toContain(says);
    expect(out.at(-1)).toContain(
      'the lock may still hold the slots of the cycles ended (n1): `kured-ts unlock --stale` frees them',
    );
  });

  it('keeps a quarantined node cordoned by kured-ts cordoned, and says why', async () => {
    const quarantine = formatQuarantine({
      since: STARTED,
      kind: 'after-reboot-hook',
      pods: [],
      cordoned: true,
    });
    await seedNode('n1', {
      labels: { [QUARANTINE_LABEL]: 'hook-failed' },
      annotations: { [QUARANTINE_ANNOTATION]: quarantine },
      cordonedBy: 'kured-ts',
    });
    expect(await cleanup()).toBe(0);
    expect(nodeOf('n1').spec?.unschedulable).toBe(true);
    expect(nodeOf('n1').metadata?.labels).toEqual({});
    expect(out.join('\n')).toContain(
      'left cordoned: quarantined (after-reboot-hook since 2026-01-05T09:00:00Z)',
    );
  });

  it("refuses while the chart's agents still run, writing nothing; --force cleans", async () => {
    const agents = kuredDaemonSet();
    agents.metadata = {
      name: 'kured-ts',
      namespace: 'kube-system',
      labels: { 'app.kubernetes.io/name': 'kured-ts' },
    };
    server.create('daemonsets', agents);
    await seedNode('n1', { annotations: { [STATUS_ANNOTATION]: '{}' } });
    expect(await cleanup()).toBe(1);
    expect(errs.join('\n')).toContain('kured-ts still runs (DaemonSet kube-system/kured-ts)');
    expect(nodePatches()).toBe(0);
    expect(await cleanup({ force: true })).toBe(0);
    expect(nodeOf('n1').metadata?.annotations).toEqual({});
  });

  it("takes the fleet pause off the lock's DaemonSet and keeps kured's lock annotation", async () => {
    const ds = kuredDaemonSet();
    ds.metadata = {
      ...ds.metadata,
      annotations: { [LOCK]: '{"nodeID":"manual"}', [FLEET_PAUSE_ANNOTATION]: '{"reason":"rollback"}' },
    };
    server.create('daemonsets', ds);
    expect(await cleanup()).toBe(0);
    const after = server.get<V1DaemonSet>('daemonsets', 'kube-system', 'kured');
    expect(after?.metadata?.annotations).toEqual({ [LOCK]: '{"nodeID":"manual"}' });
  });

  it("refuses while a pod of kured-ts's coordinator still terminates after the uninstall, writing nothing", async () => {
    server.create<V1Pod>('pods', {
      metadata: {
        name: 'kured-ts-coordinator-7d9f',
        namespace: 'kube-system',
        labels: { 'app.kubernetes.io/name': 'kured-ts-coordinator' },
      },
      spec: { containers: [{ name: 'coordinator', image: 'kured-ts' }] },
    });
    await seedNode('n1', { annotations: { [STATUS_ANNOTATION]: '{}' } });
    expect(await cleanup()).toBe(1);
    expect(errs.join('\n')).toContain('kured-ts still runs (pod kube-system/kured-ts-coordinator-7d9f)');
    expect(nodeOf('n1').metadata?.annotations).toEqual({ [STATUS_ANNOTATION]: '{}' });
  });

  it('names a node it cleans that stays cordoned with no record of kured-ts saying why', async () => {
    await seedNode('n1', { annotations: { [STATUS_ANNOTATION]: '{}' }, cordonedBy: 'kured-ts' });
    expect(await cleanup()).toBe(0);
    expect(nodeOf('n1').spec?.unschedulable).toBe(true);
    expect(out[0]).toContain(
      'left cordoned: cordoned, and no record of kured-ts says the cordon was its own',
    );
  });

  it('with --dry-run says what it would remove and writes nothing', async () => {
    await seedNode('n1', {
      labels: { [CYCLE_LABEL]: 'true' },
      annotations: cycle(true),
      cordonedBy: 'kured-ts',
    });
    const seeded = server.requests.length;
    expect(await cleanup({ dryRun: true, endCycles: true })).toBe(0);
    expect(server.requests.slice(seeded).filter((r) => r.method === 'PATCH')).toHaveLength(0);
    expect(out[0]).toBe(
      `n1: would remove labels ${CYCLE_LABEL}; annotations ${CYCLE_ANNOTATION}; would uncordon (the cycle's cordon)`,
    );
  });

  it('judges again a node that entered a cycle between its read and the write, and leaves it whole', async () => {
    await seedNode('n1', { annotations: { [STATUS_ANNOTATION]: '{}' } });
    const kube = server.kubeInMemory();
    const racing: Kube = Object.create(kube) as Kube;
    let raced = false;
    racing.mergePatchNode = async (name, patch, signal) => {
      if (!raced) {
        raced = true; // the agent, still running somewhere, starts a cycle on n1 meanwhile
        const node = nodeOf('n1');
        node.metadata = {
          ...node.metadata,
          labels: { [CYCLE_LABEL]: 'true' },
          annotations: { ...node.metadata?.annotations, ...cycle(true) },
        };
        node.spec = { unschedulable: true };
        server.update('nodes', node);
      }
      return kube.mergePatchNode(name, patch, signal);
    };
    expect(await cleanup({}, racing)).toBe(1);
    expect(nodeOf('n1').metadata?.labels).toEqual({ [CYCLE_LABEL]: 'true' });
    expect(nodeOf('n1').metadata?.annotations?.[STATUS_ANNOTATION]).toBe('{}');
    expect(nodeOf('n1').spec?.unschedulable).toBe(true);
  });

  it('finds clean, and says so, a node whose write was accepted but answered 500', async () => {
    await seedNode('n1', { annotations: { [STATUS_ANNOTATION]: '{}' } });
    server.injectFailure({ method: 'PATCH', pathIncludes: '/nodes/n1' }, 500, 1, {
      mode: 'commit-then-fail',
    });
    expect(await cleanup()).toBe(0);
    expect(nodeOf('n1').metadata?.annotations).toEqual({});
    expect(out).toContain("n1: clean when read again after the write's answer was lost or refused");
    expect(out.at(-1)).toBe("1 node(s) cleaned, 0 carried nothing of kured-ts's");
  });

  it('names a node whose write is refused, cleans the others, and a second run finishes it', async () => {
    await seedNode('n1', { annotations: { [STATUS_ANNOTATION]: '{}' } });
    await seedNode('n2', { annotations: { [STATUS_ANNOTATION]: '{}' } });
    server.injectFailure({ method: 'PATCH', pathIncludes: '/nodes/n1' }, 403, 1);
    expect(await cleanup()).toBe(1);
    expect(nodeOf('n1').metadata?.annotations).toEqual({ [STATUS_ANNOTATION]: '{}' });
    expect(nodeOf('n2').metadata?.annotations).toEqual({});
    expect(out.at(-1)).toBe(
      "1 node(s) cleaned, 0 carried nothing of kured-ts's, 1 could not be written (n1)",
    );
    out = [];
    expect(await cleanup()).toBe(0);
    expect(out.at(-1)).toBe("1 node(s) cleaned, 1 carried nothing of kured-ts's");
  });

  it('reads a fleet larger than one page and cleans its last node', async () => {
    for (let i = 0; i < 501; i++) await seedNode(`n${String(i).padStart(3, '0')}`);
    const last = nodeOf('n500');
    last.metadata = { ...last.metadata, annotations: { [STATUS_ANNOTATION]: '{}' } };
    server.update('nodes', last);
    expect(await cleanup()).toBe(0);
    expect(nodeOf('n500').metadata?.annotations).toEqual({});
    expect(server.requests.filter((r) => r.method === 'GET' && r.path === '/api/v1/nodes')).toHaveLength(2);
  });

  it('runs as `kured-ts cleanup --dry-run` from the command line', async () => {
    await seedNode('n1', { annotations: { [STATUS_ANNOTATION]: '{}' } });
    const cli = commandLine([registerCleanup], {
      env: {},
      out: (l) => out.push(l),
      err: (l) => errs.push(l),
      connect: () => server.kubeInMemory(),
    });
    expect(await cli(['cleanup', '--dry-run'])).toBe(0);
    expect(out).toContain(`n1: would remove annotations ${STATUS_ANNOTATION}`);
    expect(nodeOf('n1').metadata?.annotations).toEqual({ [STATUS_ANNOTATION]: '{}' });
  });
});
