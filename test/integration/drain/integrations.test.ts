// docs/integrations.md's storage recipes, read from the page itself and tried through the real
// client against the fake API server with the storage system's objects: Longhorn's instance
// manager under its PodDisruptionBudget (the PDB pre-flight's deadlock without the rule, the drain
// and the volumes check with it), and Rook's OSDs drained after the workloads.
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { readFileSync } from 'node:fs';
import { dump, load } from 'js-yaml';
import { PdbBlocker } from '../../../src/blockers/pdb.js';
import { NodeChecks } from '../../../src/blockers/node-check.js';
import { InlineCel } from '../../../src/cel/inline-cel.js';
import type { DrainRule } from '../../../src/config/config.js';
import { parseDrainRules } from '../../../src/config/drain-rules.js';
import { nodeCheck } from '../../../src/config/wave-values.js';
import { KubeDrainer } from '../../../src/drain/kube-drainer.js';
import type { V1Pod, V1PodDisruptionBudget } from '../../../src/kube/kube.js';
import type { FakeApiServer } from '../../../src/sim/fake-api-server.js';
import { startClusterApiServer } from '../../fakes/cluster-api-server.js';
import { readyNode } from '../../fakes/kube-objects.js';
import { testDrainer } from '../../fakes/drainer.js';
import { markdownSection } from '../../fakes/markdown.js';

const NODE = 'n1';
const page = readFileSync(new URL('../../../docs/integrations.md', import.meta.url), 'utf8');

interface Recipe {
  drainRules?: unknown[];
  configuration?: { nodeCheck?: string[] };
}

/** The first yaml block of the page's section `heading`. */
function recipe(heading: string): Recipe {
  const block = /```yaml\n([\s\S]*?)```/.exec(markdownSection(page, `## ${heading}`))?.[1];
  if (block === undefined) throw new Error(`no yaml block under ## ${heading}`);
  return load(block) as Recipe;
}

function rulesOf(r: Recipe): DrainRule[] {
  return parseDrainRules(dump(r.drainRules ?? []));
}

let server: FakeApiServer;

beforeEach(async () => {
  server = await startClusterApiServer();
  server.create('nodes', readyNode(NODE));
});

afterEach(async () => {
  await server.close();
});

function pod(namespace: string, name: string, labels: Record<string, string>): V1Pod {
  return {
    metadata: { namespace, name, labels },
    spec: { nodeName: NODE, containers: [{ name: 'c', image: 'busybox' }], terminationGracePeriodSeconds: 0 },
    status: { phase: 'Running', conditions: [{ type: 'Ready', status: 'True' }] },
  };
}

function drainer(rules: DrainRule[]): KubeDrainer {
  return testDrainer(server.kubeInMemory(), NODE, { rules, parallelism: 1 });
}

/** The pods named in eviction requests (from the `from`th request on), in order of arrival. */
function evictions(from = 0): string[] {
  return server.requests
    .slice(from)
    .filter((r) => r.method === 'POST' && r.path.endsWith('/eviction'))
    .map((r) => r.path.split('/').at(-2) ?? '');
}

describe('Longhorn (docs/integrations.md)', () => {
  const INSTANCE_MANAGER = { 'longhorn.io/component': 'instance-manager', 'longhorn.io/node': NODE };

  beforeEach(() => {
    // Longhorn's instance manager, guarded by the budget Longhorn keeps while volumes depend on it
    server.create('pods', pod('longhorn-system', 'instance-manager-0a1b', INSTANCE_MANAGER));
    server.create<V1PodDisruptionBudget>('poddisruptionbudgets', {
      metadata: { namespace: 'longhorn-system', name: 'instance-manager-0a1b' },
      spec: { minAvailable: 1, selector: { matchLabels: INSTANCE_MANAGER } },
    });
    server.create('pods', pod('db', 'postgres-0', { app: 'postgres' }));
  });

  function preflight(rules: DrainRule[]): PdbBlocker {
    return new PdbBlocker({
      kube: server.kubeInMemory(),
      nodeId: NODE,
      drainPodSelector: [],
      drainRules: rules,
      drainGracePeriodSeconds: -1,
    });
  }

  it("holds the node before the lock on the instance manager's budget without the recipe's rule", async () => {
    const verdict = await preflight([]).check();
    expect(verdict).toMatchObject({
      blocked: true,
      reason: expect.stringContaining('instance-manager-0a1b'),
    });
  });

  it('lets the pre-flight through with the rule, and the drain evicts the workload but not the instance manager', async () => {
    const rules = rulesOf(recipe('Longhorn'));
    expect(await preflight(rules).check()).toEqual({ blocked: false });
    const drainStart = server.requests.length; // the pre-flight's dry-run evictions are before it
    const result = await drainer(rules).drain();
    expect(result).toMatchObject({ ok: true, evicted: ['db/postgres-0'] });
    expect(evictions(drainStart)).toEqual(['postgres-0']);
    expect(server.get('pods', 'longhorn-system', 'instance-manager-0a1b')).toBeDefined();
  });

  it("holds the reboot while a Longhorn volume's engine is on the node, and lets it go once it moved", async () => {
    const check = (recipe('Longhorn').configuration?.nodeCheck ?? [])
      .map(nodeCheck)
      .find((c) => c.resource === 'volumes');
    if (check === undefined) throw new Error('no volumes check in the recipe');
    const checks = new NodeChecks({
      kube: server.kubeInMemory(),
      nodeId: NODE,
      checks: [check],
      cel: new InlineCel(),
    });
    const volume = {
      apiVersion: 'longhorn.io/v1beta2',
      kind: 'Volume',
      metadata: { namespace: 'longhorn-system', name: 'pvc-1' },
    };
    server.create('volumes', { ...volume, status: { currentNodeID: NODE } });
    expect((await checks.evaluate([check]))[0]).toMatchObject({ ok: false });
    const stored = server.get<Record<string, unknown>>('volumes', 'longhorn-system', 'pvc-1');
    server.update('volumes', { ...stored, status: { currentNodeID: 'n2' } });
    expect((await checks.evaluate([check]))[0]).toMatchObject({ ok: true });
  });
});

describe('Rook/Ceph (docs/integrations.md)', () => {
  it('drains the OSD after the workloads that use it', async () => {
    server.create('pods', pod('rook-ceph', 'rook-ceph-osd-3', { app: 'rook-ceph-osd' }));
    server.create('pods', pod('web', 'web-0', { app: 'web' }));
    const result = await drainer(rulesOf(recipe('Rook/Ceph'))).drain();
    expect(result.ok).toBe(true);
    expect(evictions()).toEqual(['web-0', 'rook-ceph-osd-3']);
  });
});
