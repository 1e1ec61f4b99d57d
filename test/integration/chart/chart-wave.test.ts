// The chart's part of issue 45, rendered by the real Helm: the agent is granted `get` on exactly the
// objects its health checks name (a Role in the object's namespace, a ClusterRole for a
// cluster-scoped one), and the coordinator gets the wave's flags, so that it plans the same gates.
import { beforeAll, describe, expect, it } from '@jest/globals';
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseAllDocuments, stringify } from 'yaml';

const root = fileURLToPath(new URL('../../../', import.meta.url));
const chart = join(root, 'charts/kured-ts');
let helmBin = '';

interface K8sObject {
  kind: string;
  metadata: { name: string; namespace?: string };
  rules?: { apiGroups: string[]; resources: string[]; resourceNames?: string[]; verbs: string[] }[];
  roleRef?: { kind: string; name: string };
  subjects?: { kind: string; name: string; namespace: string }[];
  spec?: { template: { spec: { containers: { name: string; args: string[] }[] } } };
}

beforeAll(() => {
  helmBin = execFileSync('node', [join(root, 'scripts/ensure-helm.mjs')], { encoding: 'utf8' }).trim();
}, 180_000);

/** `helm template` with these values (as a file, so that checks keep their spaces and commas). */
function render(configuration: Record<string, unknown>): {
  objects: K8sObject[];
  stderr: string;
  status: number;
} {
  const dir = mkdtempSync(join(tmpdir(), 'kured-ts-wave-'));
  try {
    writeFileSync(join(dir, 'values.yaml'), stringify({ configuration }));
    const run = spawnSync(
      helmBin,
      ['template', 'kured-ts', chart, '--namespace', 'kube-system', '-f', join(dir, 'values.yaml')],
      { cwd: root, encoding: 'utf8', timeout: 60_000 },
    );
    const objects = parseAllDocuments(run.stdout)
      .map((d) => d.toJS() as unknown)
      .filter((o): o is K8sObject => typeof o === 'object' && o !== null);
    return { objects, stderr: run.stderr, status: run.status ?? -1 };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const healthRbac = (objects: K8sObject[]): K8sObject[] =>
  objects.filter((o) => o.metadata.name.includes('-health-check-'));

describe('health checks', () => {
  it('grant get on exactly the objects they name: a Role in its namespace, a ClusterRole when cluster-scoped', () => {
    const { objects } = render({
      healthCheck: [
        'apps/v1/deployments web/api: self.status.readyReplicas == self.spec.replicas',
        "ceph.rook.io/v1/cephclusters rook-ceph/rook-ceph: self.status.ceph.health == 'HEALTH_OK'",
        'core/v1/nodes cp1: !has(self.spec.unschedulable)',
      ],
    });
    const rbac = healthRbac(objects);
    expect(rbac.map((o) => [o.kind, o.metadata.namespace ?? '', o.metadata.name]).sort()).toEqual([
      ['ClusterRole', '', 'kured-ts-health-check-2'],
      ['ClusterRoleBinding', '', 'kured-ts-health-check-2'],
      ['Role', 'rook-ceph', 'kured-ts-health-check-1'],
      ['Role', 'web', 'kured-ts-health-check-0'],
      ['RoleBinding', 'rook-ceph', 'kured-ts-health-check-1'],
      ['RoleBinding', 'web', 'kured-ts-health-check-0'],
    ]);
    const rules = (name: string): K8sObject['rules'] =>
      rbac.find((o) => o.rules !== undefined && o.metadata.name === name)?.rules;
    expect(rules('kured-ts-health-check-0')).toEqual([
      { apiGroups: ['apps'], resources: ['deployments'], resourceNames: ['api'], verbs: ['get'] },
    ]);
    expect(rules('kured-ts-health-check-1')).toEqual([
      {
        apiGroups: ['ceph.rook.io'],
        resources: ['cephclusters'],
        resourceNames: ['rook-ceph'],
        verbs: ['get'],
      },
    ]);
    expect(rules('kured-ts-health-check-2')).toEqual([
      { apiGroups: [''], resources: ['nodes'], resourceNames: ['cp1'], verbs: ['get'] },
    ]);
    for (const binding of rbac.filter((o) => o.subjects !== undefined))
      expect(binding.subjects).toEqual([
        { kind: 'ServiceAccount', name: 'kured-ts', namespace: 'kube-system' },
      ]);
  });

  it('none without a check', () => {
    expect(healthRbac(render({}).objects)).toEqual([]);
    expect(healthRbac(render({ healthCheck: '' }).objects)).toEqual([]);
  });

  it('a check the chart cannot read fails the install, naming it', () => {
    const out = render({ healthCheck: ['deployments api'] });
    expect(out.status).not.toBe(0);
    expect(out.stderr).toContain('/configuration/healthCheck/0');
  });
});

describe('node checks', () => {
  const nodeRbac = (objects: K8sObject[]): K8sObject[] =>
    objects.filter((o) => o.metadata.name.includes('-node-check-'));

  it('grant list on exactly the resources they name: a Role in the namespace, a ClusterRole without one', () => {
    const { objects, stderr } = render({
      nodeCheck: [
        'longhorn.io/v1beta2/volumes longhorn-system: !self.items.exists(v, v.status.currentNodeID == node.metadata.name)',
        "at-slot ceph.rook.io/v1/cephclusters: self.items.all(c, c.status.ceph.health == 'HEALTH_OK')",
        'always longhorn.io/v1beta2/replicas longhorn-system: self.items.size() >= 0',
      ],
    });
    expect(stderr).toBe('');
    const rbac = nodeRbac(objects);
    expect(rbac.map((o) => [o.kind, o.metadata.namespace ?? '', o.metadata.name]).sort()).toEqual([
      ['ClusterRole', '', 'kured-ts-node-check-1'],
      ['ClusterRoleBinding', '', 'kured-ts-node-check-1'],
      ['Role', 'longhorn-system', 'kured-ts-node-check-0'],
      ['Role', 'longhorn-system', 'kured-ts-node-check-2'],
      ['RoleBinding', 'longhorn-system', 'kured-ts-node-check-0'],
      ['RoleBinding', 'longhorn-system', 'kured-ts-node-check-2'],
    ]);
    const rules = (name: string): K8sObject['rules'] =>
      rbac.find((o) => o.rules !== undefined && o.metadata.name === name)?.rules;
    expect(rules('kured-ts-node-check-0')).toEqual([
      { apiGroups: ['longhorn.io'], resources: ['volumes'], verbs: ['list'] },
    ]);
    expect(rules('kured-ts-node-check-1')).toEqual([
      { apiGroups: ['ceph.rook.io'], resources: ['cephclusters'], verbs: ['list'] },
    ]);
    const args = objects.find((o) => o.kind === 'DaemonSet')?.spec?.template.spec.containers[0]?.args ?? [];
    expect(rules('kured-ts-node-check-2')).toEqual([
      { apiGroups: ['longhorn.io'], resources: ['replicas'], verbs: ['list'] },
    ]);
    expect(args.filter((a) => a.startsWith('--node-check='))).toHaveLength(3);
  });

  it('a check the chart cannot read fails the install, naming it', () => {
    const out = render({ nodeCheck: ['volumes: true'] });
    expect(out.status).not.toBe(0);
    expect(out.stderr).toContain('/configuration/nodeCheck/0');
  });
});

it('the coordinator gets the wave flags the agents get', () => {
  const { objects } = render({
    waveStart: 1,
    waveGrowth: 'x2',
    soak: '10m',
    maxFailures: 1,
    groupLabel: 'zone',
    groupOrder: 'sequential',
  });
  const coordinator = objects.find(
    (o) => o.kind === 'Deployment' && o.metadata.name.endsWith('-coordinator'),
  );
  const args = coordinator?.spec?.template.spec.containers[0]?.args ?? [];
  expect(args).toEqual(
    expect.arrayContaining([
      '--wave-start=1',
      '--wave-growth=x2',
      '--soak=10m',
      '--max-failures=1',
      '--group-order=sequential',
      '--group-label=zone',
    ]),
  );
});
