// The chart's ValidatingAdmissionPolicies (src/admission/agent-policy.ts and coordinator-policy.ts),
// evaluated with a CEL engine by the fake API server on every HTTP write: the agent's and the
// coordinator's own writes pass, a stolen agent or coordinator token's forged writes do not, and
// nobody else is affected. Requests go through the real client, each agent and the coordinator as
// itself (kube's impersonation headers standing in for its bound token).
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { readFileSync } from 'node:fs';
import { load } from 'js-yaml';
import {
  AGENT_NODE_ANNOTATIONS,
  agentPolicyParams,
  agentPolicySpecs,
  NODE_NAME_EXTRA,
  POLICY_KINDS,
  type PolicyConfig,
} from '../../../src/admission/agent-policy.js';
import {
  COORDINATOR_POLICY_KINDS,
  coordinatorPolicies,
  coordinatorPolicyParams,
  coordinatorPolicySpecs,
} from '../../../src/admission/coordinator-policy.js';
import { SystemClock } from '../../../src/clock/clock.js';
import { defaultConfig } from '../../../src/config/parse.js';
import { Coordinator } from '../../../src/coordinator/coordinator.js';
import { ClientNodeKube, type Identity } from '../../../src/kube/client.js';
import type { Kube, V1DaemonSet, V1Lease, V1Node, V1Pod } from '../../../src/kube/kube.js';
import { coordinatorLeaseName } from '../../../src/queue/coordinator-lease.js';
import { TURN_ANNOTATION, formatLapsedTurn, formatTurn } from '../../../src/queue/turn.js';
import { MemoryLogger } from '../../../src/log/logger.js';
import { STATUS_ANNOTATION, formatStatus } from '../../../src/node/status.js';
import {
  WAVE_ANNOTATION,
  WAVE_LABEL,
  WAVE_RESUMED_ANNOTATION,
  WAVE_STATE_LABEL,
  waveLabels,
} from '../../../src/node/wave.js';
import {
  FLEET_PAUSE_ANNOTATION,
  HALT_BY,
  formatFleetPause,
  parseFleetPause,
} from '../../../src/pause/fleet-pause.js';
import {
  AUTOSCALER_ANNOTATIONS,
  CLUSTER_AUTOSCALER_ANNOTATION as CA,
  KARPENTER_ANNOTATION as KARPENTER,
  PROTECTION_ANNOTATION as PROTECTION,
} from '../../../src/node/autoscaler.js';
import {
  DO_NOT_REPAIR_ANNOTATION as DO_NOT_REPAIR,
  EXCLUDE_LB_LABEL as LB,
} from '../../../src/node/cycle-marks.js';
import { CYCLE_ANNOTATION as CYCLE } from '../../../src/node/cycle.js';
import {
  CelAdmission,
  boundAgentPolicies,
  type BoundPolicy,
  type ReviewRecord,
} from '../../../src/sim/fake-api/cel-admission.js';
import { startFakeApiServer, type FakeApiServer } from '../../../src/sim/fake-api-server.js';
import { DEFAULT_SIMULATE_OPTIONS, simulate, type SimulateOptions } from '../../../src/cli/simulate.js';
import type { Config } from '../../../src/config/config.js';
import { runSimulation } from '../../../src/sim/simulation.js';
import { memorySimulationOptions, SIMULATION_TIMEOUT_MS } from '../../fakes/simulate.js';
import { storedNode } from '../../fakes/cluster-reads.js';

const SA = { namespace: 'kube-system', name: 'kured-ts' };
const USER = `system:serviceaccount:${SA.namespace}:${SA.name}`;
const COORDINATOR_SA = { namespace: 'kube-system', name: 'kured-ts-coordinator' };
const COORDINATOR_USER = `system:serviceaccount:${COORDINATOR_SA.namespace}:${COORDINATOR_SA.name}`;
/** The coordinator's Lease for the lock DaemonSet kube-system/kured. */
const LEASE = coordinatorLeaseName('kured');
const TURN = formatTurn({ since: '2026-01-05T10:00:00Z', by: 'kured-ts-coordinator-0_ab12' });
const LOCK = 'weave.works/kured-node-lock';
const TAINT = 'weave.works/kured-node-reboot';

const CONFIG: PolicyConfig = {
  ...defaultConfig(),
  dsNamespace: 'kube-system',
  dsName: 'kured',
  preferNoScheduleTaint: TAINT,
  preRebootNodeLabels: { 'example.com/rebooting': 'true' },
  postRebootNodeLabels: { 'example.com/rebooting': 'false' },
};

let server: FakeApiServer;
let admission: CelAdmission;

/** The coordinator's policies as the chart names and binds them (`<release>-coordinator-<kind>`). */
function boundCoordinatorPolicies(): BoundPolicy[] {
  const specs = coordinatorPolicies(coordinatorPolicyParams(CONFIG, COORDINATOR_SA));
  return COORDINATOR_POLICY_KINDS.map((kind) => ({
    name: `kured-ts-coordinator-${kind}`,
    binding: `kured-ts-coordinator-${kind}`,
    spec: specs[kind],
  }));
}

function start(requireNodeClaim = true): Promise<FakeApiServer> {
  admission = new CelAdmission([
    ...boundAgentPolicies(agentPolicyParams(CONFIG, { serviceAccount: SA, requireNodeClaim })),
    ...boundCoordinatorPolicies(),
  ]);
  return startFakeApiServer({ admission });
}

function seed(): void {
  for (const name of ['n1', 'n2']) {
    server.create<V1Node>('nodes', {
      metadata: {
        name,
        labels: { 'kubernetes.io/hostname': name, 'team.example.com/pool': 'web' },
        annotations: {
          'kured-ts.dev/approved': '{"by":"alice","at":"2026-01-05T09:00:00Z"}',
          'kured-ts.dev/reboot-requested':
            '{"by":"alice","reason":"CVE","at":"2026-01-05T09:00:00Z","now":false}',
          'kured-ts.dev/reboot-paused': 'false',
          'example.com/owner': 'team-a',
        },
      },
      spec: {
        providerID: `aws:///eu-west-1a/${name}`,
        taints: [{ key: 'dedicated', value: 'web', effect: 'NoSchedule' }],
      },
    });
  }
  for (const name of ['kured', 'other']) {
    server.create<V1DaemonSet>('daemonsets', {
      metadata: {
        name,
        namespace: 'kube-system',
        labels: { app: name },
        annotations: { 'kured-ts.dev/paused': '{"reason":"freeze","by":"alice","since":"s"}' },
      },
      spec: {
        selector: { matchLabels: { app: name } },
        template: {
          metadata: { labels: { app: name } },
          spec: { containers: [{ name: 'kured-ts', image: 'kured-ts:1' }] },
        },
      },
    });
  }
  server.create<V1Pod>('pods', {
    metadata: { name: 'web-1', namespace: 'default' },
    spec: { nodeName: 'n1', containers: [{ name: 'c', image: 'nginx' }] },
  });
  // n2 has its turn; another component's leader election shares the lock's namespace
  const n2 = node('n2');
  server.update<V1Node>('nodes', {
    ...n2,
    metadata: { ...n2.metadata, annotations: { ...n2.metadata?.annotations, [TURN_ANNOTATION]: TURN } },
  });
  server.create<V1Lease>('leases', lease('kube-controller-manager', 'cm-0'));
}

function lease(name: string, holder: string, namespace = 'kube-system'): V1Lease {
  return {
    apiVersion: 'coordination.k8s.io/v1',
    kind: 'Lease',
    metadata: { name, namespace },
    spec: { holderIdentity: holder, leaseDurationSeconds: 30 },
  };
}

const admin = (): ClientNodeKube => server.kubeInMemory();

function as(identity: Identity): Kube {
  return admin().impersonating(identity);
}

/** The agent of `node`, with its bound token's node claim. */
const agent = (node: string): Kube => as({ user: USER, extra: { [NODE_NAME_EXTRA]: node } });
/** A coordinator replica: a Deployment's pod, its token bound to no node. */
const coordinator = (): Kube => as({ user: COORDINATOR_USER });

beforeEach(async () => {
  server = await start();
  seed();
});

afterEach(async () => {
  await server.close();
});

function node(name = 'n1'): V1Node {
  return storedNode(server, name);
}

type Write = (kube: Kube) => Promise<unknown>;

/** The UID of pod `name` (default/) as the server has it. */
const uidOf = (name: string): string => server.get<V1Pod>('pods', 'default', name)?.metadata?.uid ?? '';

const annotate =
  (name: string, annotations: Record<string, string | null>): Write =>
  (kube) =>
    kube.mergePatchNode(name, { metadata: { annotations } });
const label =
  (name: string, labels: Record<string, string | null>): Write =>
  (kube) =>
    kube.mergePatchNode(name, { metadata: { labels } });
const taints =
  (list: object[]): Write =>
  (kube) =>
    kube.mergePatchNode('n1', { spec: { taints: list } });
const patchDs =
  (name: string, patch: object): Write =>
  (kube) =>
    kube.mergePatchDaemonSet('kube-system', name, patch);
const ENTRY = '{"nodeID":"n1","metadata":{"unschedulable":false},"created":"2026-01-05T10:00:00Z","TTL":0}';
const lockValue = (name: string, value: string | null): Write =>
  patchDs(name, { metadata: { annotations: { [LOCK]: value } } });
const lock = (name: string): Write => lockValue(name, ENTRY);
const DEDICATED = { key: 'dedicated', value: 'web', effect: 'NoSchedule' };

describe('the agent admission policy admits what the agent does to its own node and the lock', () => {
  it.each<[string, Write]>([
    ['cordons its node', (k) => k.mergePatchNode('n1', { spec: { unschedulable: true } })],
    ['uncordons its node', (k) => k.mergePatchNode('n1', { spec: { unschedulable: null } })],
    [
      'adds its PreferNoSchedule taint, keeping the others',
      taints([DEDICATED, { key: TAINT, effect: 'PreferNoSchedule' }]),
    ],
    [
      'writes its status, cycle and history annotations',
      annotate(
        'n1',
        Object.fromEntries(
          AGENT_NODE_ANNOTATIONS.filter(
            (a) => !AUTOSCALER_ANNOTATIONS.includes(a) && a !== DO_NOT_REPAIR,
          ).map((a) => [a, 'x']),
        ),
      ),
    ],
    [
      'sets its cycle label and the configured pre-reboot label',
      label('n1', { 'kured-ts.dev/rebooting': 'true', 'example.com/rebooting': 'true' }),
    ],
    ['removes the approval it used', annotate('n1', { 'kured-ts.dev/approved': null })],
    [
      'quarantines its node: the label with drain-failed, and the record',
      (k) =>
        k.mergePatchNode('n1', {
          metadata: {
            labels: { 'kured-ts.dev/quarantined': 'drain-failed' },
            annotations: { 'kured-ts.dev/quarantine': '{}' },
          },
        }),
    ],
    [
      "removes an admin's reboot request its reboot answered",
      annotate('n1', { 'kured-ts.dev/reboot-requested': null }),
    ],
    ['takes a slot in the lock annotation', lock('kured')],
    ['releases the lock (the annotation goes)', lockValue('kured', null)],
    [
      "evicts a pod with its own grace period, naming the pod's UID as precondition",
      (k) => k.evictPod('default', 'web-1', { uid: uidOf('web-1') }),
    ],
    [
      "asks the dry run of that eviction (the PDB pre-flight), with the pod's UID as precondition",
      (k) => k.dryRunEviction('default', 'web-1', { uid: uidOf('web-1') }),
    ],
  ])('%s', async (_name, write) => {
    await write(agent('n1'));
    expect(admission.counts).toEqual({ admitted: 1, denied: 0 });
  });
});

describe('the agent admission policy allows exactly the autoscaler protection the agent owns', () => {
  const record = (added: string[]): string => JSON.stringify({ added });
  /** n1 with an admin's Karpenter annotation, and the cluster-autoscaler one added by the agent. */
  function protectedByBoth(): void {
    const n1 = node('n1');
    const annotations = {
      ...n1.metadata?.annotations,
      [CA]: 'true',
      [KARPENTER]: 'true',
      [PROTECTION]: record([CA]),
    };
    server.update<V1Node>('nodes', { ...n1, metadata: { ...n1.metadata, annotations } });
  }
  it.each<[string, boolean, Write]>([
    [
      'admits adding both annotations where absent, as "true", named in its record',
      false,
      annotate('n1', { [CA]: 'true', [KARPENTER]: 'true', [PROTECTION]: record([CA, KARPENTER]) }),
    ],
    [
      'admits removing the annotation its record names, with the record',
      true,
      annotate('n1', { [CA]: null, [PROTECTION]: null }),
    ],
    [
      'admits starting the settle (the record rewritten, the annotations kept)',
      true,
      annotate('n1', { [PROTECTION]: JSON.stringify({ added: [CA], until: '2026-01-05T10:10:00Z' }) }),
    ],
  ])('%s', async (_name, seeded, write) => {
    if (seeded) protectedByBoth();
    await write(agent('n1'));
    expect(admission.counts).toEqual({ admitted: 1, denied: 0 });
  });

  it.each<[string, boolean, Write]>([
    [
      'denies adding one with another value than "true"',
      false,
      annotate('n1', { [CA]: 'false', [PROTECTION]: record([CA]) }),
    ],
    ['denies adding one its record does not name', false, annotate('n1', { [CA]: 'true' })],
    ["denies removing an admin's annotation", true, annotate('n1', { [KARPENTER]: null })],
    [
      "denies removing an admin's annotation with a record forged to name it",
      true,
      annotate('n1', { [KARPENTER]: null, [PROTECTION]: record([CA, KARPENTER]) }),
    ],
    ["denies changing an admin's annotation", true, annotate('n1', { [KARPENTER]: 'false' })],
    [
      'denies writing it on another node',
      false,
      annotate('n2', { [CA]: 'true', [PROTECTION]: record([CA]) }),
    ],
  ])('%s', async (_name, seeded, write) => {
    if (seeded) protectedByBoth();
    const before = node('n1');
    await expect(write(agent('n1'))).rejects.toThrow(/HTTP 403/);
    expect(admission.counts).toEqual({ admitted: 0, denied: 1 });
    expect(node('n1').metadata?.annotations).toEqual(before.metadata?.annotations);
  });
});

describe('the agent admission policy allows exactly the cycle marks the agent owns (issue 44)', () => {
  const cycle = (marks: object): string =>
    JSON.stringify({ bootID: 'boot-1', cordoned: true, attempts: 0, started: 'T', ...marks });
  const OURS = { lbExcludedAt: '2026-01-05T10:00:00Z', doNotRepair: true };
  /** n1 in a cycle whose record owns both marks. */
  function marked(owned: object): void {
    const n1 = node('n1');
    server.update<V1Node>('nodes', {
      ...n1,
      metadata: {
        ...n1.metadata,
        labels: { ...n1.metadata?.labels, [LB]: 'true' },
        annotations: { ...n1.metadata?.annotations, [DO_NOT_REPAIR]: 'true', [CYCLE]: cycle(owned) },
      },
    });
  }
  const begin =
    (name: string, marks: object): Write =>
    (kube) =>
      kube.mergePatchNode(name, {
        metadata: {
          labels: { [LB]: 'true' },
          annotations: { [DO_NOT_REPAIR]: 'true', [CYCLE]: cycle(marks) },
        },
      });
  const end: Write = (kube) =>
    kube.mergePatchNode('n1', {
      metadata: { labels: { [LB]: null }, annotations: { [DO_NOT_REPAIR]: null, [CYCLE]: null } },
    });

  it('admits adding the load-balancer label and do-not-repair with the record that names them', async () => {
    await begin('n1', OURS)(agent('n1'));
    expect(admission.counts).toEqual({ admitted: 1, denied: 0 });
  });

  it('admits removing them with the record that names them', async () => {
    marked(OURS);
    await end(agent('n1'));
    expect(admission.counts).toEqual({ admitted: 1, denied: 0 });
  });

  it.each<[string, () => void, Write]>([
    ['denies adding them without a record naming them', () => undefined, begin('n1', {})],
    ['denies adding them on another node', () => undefined, begin('n2', OURS)],
    [
      'denies adding the label with another value than "true"',
      () => undefined,
      (k) =>
        k.mergePatchNode('n1', {
          metadata: { labels: { [LB]: 'x' }, annotations: { [CYCLE]: cycle(OURS) } },
        }),
    ],
    [
      "denies removing someone else's (the record does not name them)",
      () => {
        marked({});
      },
      end,
    ],
    [
      "denies changing someone else's label",
      () => {
        marked({});
      },
      (k) => k.mergePatchNode('n1', { metadata: { labels: { [LB]: 'ops' } } }),
    ],
  ])('%s', async (_name, seed, write) => {
    seed();
    const before = node('n1');
    await expect(write(agent('n1'))).rejects.toThrow(/HTTP 403/);
    expect(admission.counts).toEqual({ admitted: 0, denied: 1 });
    expect(node('n1').metadata?.labels).toEqual(before.metadata?.labels);
  });
});

describe('the agent admission policy denies a stolen agent token', () => {
  it.each<[string, Write, RegExp]>([
    [
      'cordoning another node',
      (k) => k.mergePatchNode('n2', { spec: { unschedulable: true } }),
      /agent on node n1 may change only its own node, not n2/,
    ],
    ['annotating another node', annotate('n2', { 'kured-ts.dev/status': 'x' }), /only its own node/],
    [
      'adding a label not its own to its node',
      label('n1', { 'node-role.kubernetes.io/control-plane': '' }),
      /only the labels/,
    ],
    ['removing a label another actor set', label('n1', { 'team.example.com/pool': null }), /only the labels/],
    [
      'quarantining another node',
      label('n2', { 'kured-ts.dev/quarantined': 'drain-failed' }),
      /only its own node/,
    ],
    [
      'setting the quarantine label to another word than drain-failed',
      label('n1', { 'kured-ts.dev/quarantined': 'forever' }),
      /kured-ts.dev\/quarantined only to drain-failed/,
    ],
    [
      'removing a taint another actor added',
      taints([{ key: TAINT, effect: 'PreferNoSchedule' }]),
      /only its own PreferNoSchedule taint/,
    ],
    [
      'adding its taint key as NoExecute',
      taints([DEDICATED, { key: TAINT, effect: 'NoExecute' }]),
      /only its own PreferNoSchedule taint/,
    ],
    [
      'writing an annotation not its own',
      annotate('n1', { 'example.com/owner': 'mallory' }),
      /only the annotations/,
    ],
    [
      'writing a 200 KB status on its own node',
      annotate('n1', {
        'kured-ts.dev/status': JSON.stringify({ phase: 'idle', reason: 'x'.repeat(200_000) }),
      }),
      /within its bound in bytes \(kured-ts.dev\/status 4096/,
    ],
    [
      'writing a status over its bound in bytes though not in characters (1,400 three-byte characters)',
      annotate('n1', { 'kured-ts.dev/status': '€'.repeat(1_400) }),
      /within its bound in bytes/,
    ],
    [
      "writing kured's in-progress annotation over its bound",
      annotate('n1', { 'weave.works/kured-reboot-in-progress': 'x'.repeat(300) }),
      /within its bound in bytes/,
    ],
    [
      "lifting the operator's per-node pause",
      annotate('n1', { 'kured-ts.dev/reboot-paused': null }),
      /only the annotations/,
    ],
    [
      'approving its own reboot',
      annotate('n1', { 'kured-ts.dev/approved': '{"by":"me","at":"2026-01-05T10:00:00Z"}' }),
      /only the annotations/,
    ],
    [
      'requesting its own reboot',
      annotate('n1', {
        'kured-ts.dev/reboot-requested': '{"by":"me","reason":"x","at":"2026-01-05T10:00:00Z","now":true}',
      }),
      /only the annotations/,
    ],
    [
      'changing the node spec beyond unschedulable and taints',
      (k) => k.mergePatchNode('n1', { spec: { providerID: 'x' } }),
      /only spec.unschedulable/,
    ],
    [
      'adding a finalizer to its node',
      (k) => k.mergePatchNode('n1', { metadata: { finalizers: ['example.com/hold'] } }),
      /only spec.unschedulable/,
    ],
    [
      "rewriting the DaemonSet's pod template",
      patchDs('kured', {
        spec: { template: { spec: { containers: [{ name: 'kured-ts', image: 'evil:1' }] } } },
      }),
      /only the annotation weave.works\/kured-node-lock/,
    ],
    [
      'lifting the fleet pause',
      patchDs('kured', { metadata: { annotations: { 'kured-ts.dev/paused': null } } }),
      /never change or remove a pause/,
    ],
    [
      "changing the DaemonSet's labels",
      patchDs('kured', { metadata: { labels: { app: 'x' } } }),
      /only the annotation/,
    ],
    ['writing a lock annotation on another DaemonSet', lock('other'), /not of kube-system\/other/],
    ["writing kured's manual lock", lockValue('kured', '{"nodeID":"manual"}'), /no manual lock/],
    [
      'writing a slot without a real creation time',
      lockValue('kured', ENTRY.replace('2026-01-05T10:00:00Z', '0001-01-01T00:00:00Z')),
      /no manual lock/,
    ],
    [
      'writing a lock with a larger maxOwners than --concurrency',
      lockValue('kured', `{"maxOwners":3,"locks":[${ENTRY}]}`),
      /maxOwners at most --concurrency \(1\)/,
    ],
    ['writing garbage into the lock', lockValue('kured', 'frozen'), /kured's form/],
    [
      'writing a lock of 100 KB in its form (an entry whose metadata is large)',
      lockValue(
        'kured',
        ENTRY.replace('"unschedulable":false', `"unschedulable":false,"x":"${'x'.repeat(100_000)}"`),
      ),
      /writes the lock within 65536 bytes/,
    ],
    [
      'evicting with a grace period of 0',
      (k) => k.evictPod('default', 'web-1', { gracePeriodSeconds: 0 }),
      /grace period of its configuration \(-1/,
    ],
  ])('%s', async (_name, write, message) => {
    const before = { node: node('n1'), n2: node('n2'), pods: server.list<V1Pod>('pods').length };
    await expect(write(agent('n1'))).rejects.toThrow(/HTTP 403/);
    expect(admission.counts).toEqual({ admitted: 0, denied: 1 });
    expect(admission.denials[0]?.denied).toMatch(message);
    expect([node('n1').metadata?.resourceVersion, node('n2').metadata?.resourceVersion]).toEqual([
      before.node.metadata?.resourceVersion,
      before.n2.metadata?.resourceVersion,
    ]);
    expect(server.list<V1Pod>('pods')).toHaveLength(before.pods);
  });

  it('admits an agent write that leaves an oversized value an older version wrote as it was', async () => {
    const n1 = node('n1');
    n1.metadata = {
      ...n1.metadata,
      annotations: { ...n1.metadata?.annotations, 'kured-ts.dev/history': `[${'"x",'.repeat(20_000)}"x"]` },
    };
    server.update('nodes', n1);
    await annotate('n1', { 'kured-ts.dev/status': '{"phase":"idle"}' })(agent('n1'));
    expect(admission.counts).toEqual({ admitted: 1, denied: 0 });
    await expect(
      annotate('n1', { 'kured-ts.dev/history': `[${'"y",'.repeat(20_000)}"y"]` })(agent('n1')),
    ).rejects.toThrow(/HTTP 403/);
    expect(admission.denials[0]?.denied).toMatch(/kured-ts.dev\/history 32768/);
  });

  it.each<[string, Record<string, string>, boolean]>([
    ['lifts a cordon its cycle record says it set', { [CYCLE]: '{"bootID":"boot-1","cordoned":true}' }, true],
    [
      'lifts the cordon its quarantine kept (--quarantine-cordon)',
      { 'kured-ts.dev/quarantine': '{"since":"2026-01-05T10:00:00Z","pods":[],"cordoned":true}' },
      true,
    ],
    [
      "does not lift an operator's cordon its cycle record says is not its own",
      { [CYCLE]: '{"cordoned":false}' },
      false,
    ],
    ["does not lift an operator's cordon with no record of its own", {}, false],
  ])('the agent %s', async (_name, annotations, admitted) => {
    const n1 = node('n1');
    server.update('nodes', {
      ...n1,
      metadata: { ...n1.metadata, annotations: { ...n1.metadata?.annotations, ...annotations } },
      spec: { ...n1.spec, unschedulable: true },
    });
    const uncordon = agent('n1').mergePatchNode('n1', { spec: { unschedulable: null } });
    if (admitted) {
      await uncordon;
      expect(node('n1').spec?.unschedulable).toBeFalsy();
    } else {
      await expect(uncordon).rejects.toThrow(/HTTP 403/);
      expect(admission.denials[0]?.denied).toMatch(
        /may lift only a cordon its cycle or quarantine record says it set/,
      );
      expect(node('n1').spec?.unschedulable).toBe(true);
    }
  });

  it('denies a node write from a token without the node claim, unless told not to require it', async () => {
    const claimless = as({ user: USER });
    await expect(claimless.mergePatchNode('n1', { spec: { unschedulable: true } })).rejects.toThrow(
      /HTTP 403/,
    );
    expect(admission.denials[0]?.denied).toMatch(/agent token carries no node claim/);
    await server.close();
    server = await start(false);
    seed();
    await as({ user: USER }).mergePatchNode('n1', { spec: { unschedulable: true } });
    expect(node('n1').spec?.unschedulable).toBe(true);
  });

  it('leaves everyone else alone: an operator and another ServiceAccount may do what RBAC allows', async () => {
    await patchDs('kured', {
      spec: { template: { spec: { containers: [{ name: 'kured-ts', image: 'kured-ts:2' }] } } },
    })(admin());
    await label('n2', { 'node-role.kubernetes.io/worker': '' })(
      as({ user: 'system:serviceaccount:kube-system:node-controller' }),
    );
    expect(admission.counts).toEqual({ admitted: 0, denied: 0 });
  });
});

describe("the agent admission policy lets the agent write its wave's records, in their form only", () => {
  const WAVE = 'w20260105-100000-abcdef';
  const HALT = formatFleetPause({
    reason: 'wave halted: n1 failed',
    by: HALT_BY,
    since: '2026-01-05T10:00:00Z',
    wave: WAVE,
    failed: ['n1'],
  });
  const pause = (value: string | null): Write =>
    patchDs('kured', { metadata: { annotations: { [FLEET_PAUSE_ANNOTATION]: value } } });
  const waveId = (value: string | null): Write =>
    patchDs('kured', { metadata: { annotations: { [WAVE_ANNOTATION]: value } } });

  /** The seeded operator's pause lifted (an operator's resume), and the DaemonSet at `annotations`. */
  async function lockDaemonSet(annotations: Record<string, string | null>): Promise<void> {
    await patchDs('kured', {
      metadata: { annotations: { [FLEET_PAUSE_ANNOTATION]: null, ...annotations } },
    })(admin());
  }

  it.each<[string, Record<string, string | null>, Write]>([
    ['labels its node with its wave and state', {}, label('n1', waveLabels(WAVE, 'waiting'))],
    ['says its node failed in its wave', {}, label('n1', { [WAVE_STATE_LABEL]: 'failed' })],
    ['names a new wave on the lock DaemonSet', {}, waveId(WAVE)],
    [
      'names the next wave where one was named',
      { [WAVE_ANNOTATION]: WAVE },
      waveId('w20260106-100000-012345'),
    ],
    ['halts the wave where no pause stands', {}, pause(HALT)],
  ])('%s', async (_name, before, write) => {
    await lockDaemonSet(before);
    await write(agent('n1'));
    expect(admission.counts).toEqual({ admitted: 1, denied: 0 });
  });

  it.each<[string, Record<string, string | null>, Write, RegExp]>([
    [
      'labelling its node with a wave that is no wave id',
      {},
      label('n1', { [WAVE_LABEL]: 'all-done' }),
      /kured-ts.dev\/wave only to a wave id/,
    ],
    [
      'labelling its node with a state of another word',
      {},
      label('n1', { [WAVE_STATE_LABEL]: 'soaked-trust-me' }),
      /kured-ts.dev\/wave-state only to waiting, back, soaked, failed/,
    ],
    [
      'saying another node of the wave soaked',
      {},
      label('n2', waveLabels(WAVE, 'soaked')),
      /may change only its own node, not n2/,
    ],
    [
      'removing the wave id from the DaemonSet',
      { [WAVE_ANNOTATION]: WAVE },
      waveId(null),
      /only to a wave id, and never remove it/,
    ],
    ['naming a wave that is no wave id', {}, waveId('w1'), /only to a wave id/],
    [
      'pausing the fleet as someone else',
      {},
      pause('{"reason":"x","by":"alice","since":"s"}'),
      /only as a halt of its wave/,
    ],
    [
      'a halt that smuggles another field in',
      {},
      pause(HALT.replace('"failed"', '"extra":"x","failed"')),
      /only as a halt of its wave/,
    ],
    [
      'a halt with a quote escaped into its reason',
      {},
      pause(formatFleetPause({ ...parseFleetPause(HALT)!, reason: 'a "quoted" word' })),
      /only as a halt of its wave/,
    ],
    ['lifting a halt', { [FLEET_PAUSE_ANNOTATION]: HALT }, pause(null), /never change or remove a pause/],
    [
      "replacing an operator's pause by a halt",
      { [FLEET_PAUSE_ANNOTATION]: '{"reason":"freeze","by":"alice","since":"s"}' },
      pause(HALT),
      /never change or remove a pause/,
    ],
    [
      'acknowledging the failures of its wave (what only kured-ts resume does)',
      {},
      patchDs('kured', {
        metadata: { annotations: { [WAVE_RESUMED_ANNOTATION]: `{"wave":"${WAVE}","nodes":["n1"]}` } },
      }),
      /may change only the annotation weave.works\/kured-node-lock/,
    ],
  ])('denies %s', async (_name, before, write, message) => {
    await lockDaemonSet(before);
    const ds = server.get<V1DaemonSet>('daemonsets', 'kube-system', 'kured');
    await expect(write(agent('n1'))).rejects.toThrow(/HTTP 403/);
    expect(admission.counts).toEqual({ admitted: 0, denied: 1 });
    expect(admission.denials[0]?.denied).toMatch(message);
    expect(server.get<V1DaemonSet>('daemonsets', 'kube-system', 'kured')?.metadata?.annotations).toEqual(
      ds?.metadata?.annotations,
    );
  });

  it('leaves a value someone else put on its wave labels as it is when the agent writes the other', async () => {
    await label('n1', { [WAVE_LABEL]: 'set-by-hand' })(admin());
    await label('n1', { [WAVE_STATE_LABEL]: 'waiting' })(agent('n1'));
    expect(admission.counts).toEqual({ admitted: 1, denied: 0 });
  });
});

describe('the agent admission policy leaves the turn to the coordinator', () => {
  it.each<[string, string]>([
    ["writing another node's turn annotation", 'n2'],
    ['writing its own turn annotation (the agent never writes one)', 'n1'],
  ])('denies the agent %s', async (_name, target) => {
    await expect(annotate(target, { [TURN_ANNOTATION]: TURN })(agent('n1'))).rejects.toThrow(/HTTP 403/);
    expect(admission.denials[0]?.denied).toMatch(
      target === 'n1' ? /only the annotations/ : /may change only its own node, not n2/,
    );
  });

  it("denies the agent removing another node's turn annotation", async () => {
    await expect(annotate('n2', { [TURN_ANNOTATION]: null })(agent('n1'))).rejects.toThrow(/HTTP 403/);
    expect(node('n2').metadata?.annotations?.[TURN_ANNOTATION]).toBe(TURN);
  });
});

const createLease =
  (name: string, namespace = 'kube-system'): Write =>
  (kube) =>
    kube.createLease(namespace, lease(name, 'kured-ts-coordinator-0_ab12', namespace));
const renewLease =
  (name: string): Write =>
  async (kube) => {
    const current = await kube.getLease('kube-system', name);
    return kube.replaceLease('kube-system', name, {
      ...current,
      spec: { ...current.spec, holderIdentity: 'kured-ts-coordinator-0_ab12' },
    });
  };

describe('the coordinator admission policy admits what the coordinator does', () => {
  it.each<[string, Write]>([
    ['gives n1 its turn', annotate('n1', { [TURN_ANNOTATION]: TURN })],
    ['takes the turn of n2 back', annotate('n2', { [TURN_ANNOTATION]: null })],
    ['gives n2 a new turn', annotate('n2', { [TURN_ANNOTATION]: TURN.replace('ab12', 'cd34') })],
    ['creates its Lease', createLease(LEASE)],
  ])('%s', async (_name, write) => {
    await write(coordinator());
    expect(admission.counts.denied).toBe(0);
    expect(admission.counts.admitted).toBeGreaterThan(0);
  });

  it('renews its Lease, and releases it', async () => {
    server.create<V1Lease>('leases', lease(LEASE, 'kured-ts-coordinator-1_ef56'));
    await renewLease(LEASE)(coordinator());
    const current = server.get<V1Lease>('leases', 'kube-system', LEASE)!;
    await coordinator().replaceLease('kube-system', LEASE, {
      ...current,
      spec: { ...current.spec, holderIdentity: '', leaseDurationSeconds: 1 },
    });
    // each write judged by the policy on its token and by the one on its Lease
    expect(admission.counts).toEqual({ admitted: 4, denied: 0 });
  });

  it('admits every write of a coordinator that leads, gives a waiting node its turn and releases its Lease', async () => {
    const records: ReviewRecord[] = [];
    admission.onReview = (r) => records.push(r);
    const n1 = node('n1');
    const status = formatStatus({
      phase: 'waiting-for-lock',
      reason: 'all 1 lock slot(s) held',
      since: '2026-01-05T09:00:00Z',
      bootID: 'b',
      requiredSince: '2026-01-05T09:00:00Z',
    });
    server.update<V1Node>('nodes', {
      ...n1,
      metadata: { ...n1.metadata, annotations: { ...n1.metadata?.annotations, [STATUS_ANNOTATION]: status } },
    });
    const log = new MemoryLogger();
    const c = new Coordinator({
      kube: coordinator(),
      namespace: 'kube-system',
      dsName: 'kured',
      leaseName: LEASE,
      annotation: LOCK,
      ttlMs: 0,
      concurrency: { count: 1 },
      identity: 'kured-ts-coordinator-0_ab12',
      clock: new SystemClock(),
      log,
      random: () => 0.5,
      settleMs: 10,
    });
    const stop = new AbortController();
    const running = c.run(stop.signal);
    const given = await new Promise<boolean>((resolve) => {
      // eslint-disable-next-line no-restricted-syntax -- real time: the coordinator under test runs on the system clock
      const deadline = Date.now() + 20_000;
      const poll = (): void => {
        if (node('n1').metadata?.annotations?.[TURN_ANNOTATION] !== undefined) resolve(true);
        // eslint-disable-next-line no-restricted-syntax -- real time: the coordinator under test runs on the system clock
        else if (Date.now() > deadline) resolve(false);
        // eslint-disable-next-line no-restricted-syntax -- real time: the coordinator under test runs on the system clock
        else setTimeout(poll, 20); // polls: the coordinator runs on real time
      };
      poll();
    });
    stop.abort();
    await running;
    expect({ given, errors: log.entries.filter((e) => e.level === 'error' || e.level === 'warn') }).toEqual({
      given: true,
      errors: [],
    });
    expect(admission.counts.denied).toBe(0);
    const writes = new Set(records.map((r) => `${r.attributes.operation} ${r.attributes.resource.resource}`));
    expect(writes).toEqual(new Set(['CREATE leases', 'UPDATE nodes', 'UPDATE leases']));
    expect(records.every((r) => r.policy.startsWith('kured-ts-coordinator-'))).toBe(true);
    expect(server.get<V1Lease>('leases', 'kube-system', LEASE)?.spec?.holderIdentity).toBe('');
  });
});

describe('the coordinator admission policy denies a stolen coordinator token', () => {
  it.each<[string, Write, RegExp]>([
    [
      'cordoning a node',
      (k) => k.mergePatchNode('n1', { spec: { unschedulable: true } }),
      /may not change the spec of node n1/,
    ],
    [
      'adding a taint',
      taints([DEDICATED, { key: TAINT, effect: 'PreferNoSchedule' }]),
      /may not change the spec of node n1/,
    ],
    ['removing a taint', taints([]), /may not change the spec/],
    [
      'labelling a node',
      label('n1', { 'node-role.kubernetes.io/control-plane': '' }),
      /labels, owners or finalizers/,
    ],
    [
      'removing a label',
      label('n2', { 'team.example.com/pool': null }),
      /labels, owners or finalizers of node n2/,
    ],
    [
      'adding a finalizer',
      (k) => k.mergePatchNode('n1', { metadata: { finalizers: ['example.com/hold'] } }),
      /labels, owners or finalizers/,
    ],
    [
      "writing the agent's status annotation",
      annotate('n1', { 'kured-ts.dev/status': '{"phase":"rebooting"}' }),
      /may change only the annotation kured-ts.dev\/lock-turn of node n1/,
    ],
    [
      "removing an operator's approval",
      annotate('n1', { 'kured-ts.dev/approved': null }),
      /only the annotation kured-ts.dev\/lock-turn/,
    ],
    [
      'changing another annotation beside the turn',
      annotate('n2', { [TURN_ANNOTATION]: null, 'example.com/owner': 'mallory' }),
      /only the annotation kured-ts.dev\/lock-turn of node n2/,
    ],
    [
      "creating another component's Lease",
      createLease('kube-scheduler'),
      /only its own Lease kube-system\/kured-coordinator, not kube-system\/kube-scheduler/,
    ],
    [
      "taking over another component's Lease",
      renewLease('kube-controller-manager'),
      /not kube-system\/kube-controller-manager/,
    ],
    [
      'creating its Lease in another namespace',
      createLease(LEASE, 'default'),
      /not default\/kured-coordinator/,
    ],
  ])('%s', async (_name, write, message) => {
    const before = [node('n1').metadata?.resourceVersion, node('n2').metadata?.resourceVersion];
    const leases = server.list<V1Lease>('leases').length;
    await expect(write(coordinator())).rejects.toThrow(/HTTP 403/);
    expect(admission.counts).toEqual({ admitted: 0, denied: 1 });
    expect(admission.denials[0]?.denied).toMatch(message);
    expect(admission.denials[0]?.policy).toMatch(/^kured-ts-coordinator-(nodes|lease)$/);
    expect([node('n1').metadata?.resourceVersion, node('n2').metadata?.resourceVersion]).toEqual(before);
    expect(server.list<V1Lease>('leases')).toHaveLength(leases);
    expect(
      server.get<V1Lease>('leases', 'kube-system', 'kube-controller-manager')?.spec?.holderIdentity,
    ).toBe('cm-0');
  });
});

/** The coordinator's advice to the agents on its Lease (it can only hold a node back). */
const ADVICE = 'kured-ts.dev/fleet-advice';
/** What the coordinator published on its Lease before issue 41: it may go, never come back. */
const OLD_HEALTH = 'kured-ts.dev/fleet-health';
/** A JSON object of exactly `bytes` bytes (UTF-8). */
const adviceOf = (bytes: number, filler = 'x'): string => {
  const head = '{"hold":"';
  const fill = filler.repeat(Math.ceil((bytes - head.length - 2) / Buffer.byteLength(filler)));
  const text = `${head}${fill}"}`;
  if (Buffer.byteLength(text) !== bytes)
    throw new Error(`adviceOf(${bytes}) is ${Buffer.byteLength(text)} bytes`);
  return text;
};

describe('the coordinator admission policy bounds the turn annotation', () => {
  const since = '2026-01-05T10:00:00Z';
  const holder128 = 'c'.repeat(128);
  it.each<[string, string, string | null]>([
    ['admits a turn, as the coordinator writes it', 'n1', TURN],
    [
      "admits a turn with milliseconds, as the coordinator's clock writes them",
      'n1',
      formatTurn({ since: '2026-01-05T10:00:00.123Z', by: 'kured-ts-coordinator-5d8f7-x2x9z_ab12cd34' }),
    ],
    ['admits a turn given by a holder of 128 characters', 'n1', formatTurn({ since, by: holder128 })],
    [
      'admits a lapsed turn',
      'n2',
      formatLapsedTurn({ turn: { since, by: 'kured-ts-coordinator-0_ab12' }, at: '2026-01-05T10:00:30.5Z' }),
    ],
    ["admits the turn's removal", 'n2', null],
  ])('%s', async (_name, target, value) => {
    await annotate(target, { [TURN_ANNOTATION]: value })(coordinator());
    expect(admission.counts).toEqual({ admitted: 1, denied: 0 });
    expect(node(target).metadata?.annotations?.[TURN_ANNOTATION]).toBe(value ?? undefined);
  });

  it.each<[string, string]>([
    ['a turn of 200 KB', formatTurn({ since, by: 'x'.repeat(200 * 1024) })],
    ['a value that is not a turn at all', '{"nodeID":"manual"}'],
    ['a turn given by a holder of 129 characters', formatTurn({ since, by: 'c'.repeat(129) })],
    ['a turn with a field more', JSON.stringify({ since, by: 'c', reason: 'go now' })],
    ['a turn with an escaped quote in its holder', formatTurn({ since, by: 'c" ,"x":"y' })],
    ['a turn whose since is not a time', formatTurn({ since: 'tonight', by: 'c' })],
    [
      'a lapsed turn without its time',
      JSON.stringify({ lapsed: { since, by: 'kured-ts-coordinator-0_ab12' } }),
    ],
  ])('refuses %s', async (_name, value) => {
    const before = node('n2').metadata?.annotations?.[TURN_ANNOTATION];
    await expect(annotate('n2', { [TURN_ANNOTATION]: value })(coordinator())).rejects.toThrow(/HTTP 403/);
    expect(admission.counts).toEqual({ admitted: 0, denied: 1 });
    expect(admission.denials[0]?.denied).toMatch(
      /writes the turn of node n2 only as \{"since","by"\} or \{"lapsed":\{"since","by","at"\}\}, at most 300 bytes/,
    );
    expect(node('n2').metadata?.annotations?.[TURN_ANNOTATION]).toBe(before);
  });
});

/** A write to the coordinator's Lease: the stored Lease, changed. */
const changeLease =
  (change: (lease: V1Lease) => V1Lease, name = LEASE): Write =>
  (kube) =>
    kube.replaceLease('kube-system', name, change(server.get<V1Lease>('leases', 'kube-system', name)!));
const leaseSpec =
  (spec: NonNullable<V1Lease['spec']>) =>
  (lease: V1Lease): V1Lease => ({
    ...lease,
    spec: { ...lease.spec, ...spec },
  });
const leaseAnnotations =
  (annotations: Record<string, string | null>) =>
  (lease: V1Lease): V1Lease => {
    const next = Object.entries({ ...lease.metadata?.annotations, ...annotations }).filter(
      (e): e is [string, string] => e[1] !== null,
    );
    return { ...lease, metadata: { ...lease.metadata, annotations: Object.fromEntries(next) } };
  };
/** The coordinator's Lease as a leader of the version before issue 41 left it, and an admin's note. */
function seedLease(): void {
  server.create<V1Lease>('leases', {
    metadata: {
      name: LEASE,
      namespace: 'kube-system',
      annotations: {
        [OLD_HEALTH]: JSON.stringify({ total: 2, count: 0, unhealthy: [] }),
        'example.com/owner': 'team-a',
      },
    },
    spec: {
      holderIdentity: 'kured-ts-coordinator-1_ef56',
      leaseDurationSeconds: 30,
      acquireTime: '2026-01-05T10:00:00.000000Z',
      renewTime: '2026-01-05T10:00:00.000000Z',
      leaseTransitions: 0,
    },
  });
}

describe('the coordinator admission policy bounds what the coordinator writes on its Lease', () => {
  beforeEach(seedLease);

  it.each<[string, (lease: V1Lease) => V1Lease]>([
    [
      'renews it as its holder, for 30 s',
      leaseSpec({ holderIdentity: 'kured-ts-coordinator-0_ab12', leaseDurationSeconds: 30 }),
    ],
    ['writes a lease duration of 1 s', leaseSpec({ leaseDurationSeconds: 1 })],
    ['releases it on SIGTERM: no holder, 1 s', leaseSpec({ holderIdentity: '', leaseDurationSeconds: 1 })],
    ['names a holder of 128 characters', leaseSpec({ holderIdentity: 'c'.repeat(128) })],
    ['publishes its advice, a JSON object', leaseAnnotations({ [ADVICE]: '{"hold":["n3"]}' })],
    ['publishes advice of exactly 2048 bytes', leaseAnnotations({ [ADVICE]: adviceOf(2048) })],
    ['removes the fleet health of the version before', leaseAnnotations({ [OLD_HEALTH]: null })],
  ])('admits the coordinator when it %s', async (_name, given) => {
    // the coordinator removes the retired health annotation in each of its writes
    const change = (l: V1Lease): V1Lease => given(leaseAnnotations({ [OLD_HEALTH]: null })(l));
    const expected = change(server.get<V1Lease>('leases', 'kube-system', LEASE)!);
    await changeLease(change)(coordinator());
    expect(admission.counts.denied).toBe(0);
    const stored = server.get<V1Lease>('leases', 'kube-system', LEASE);
    expect({ spec: stored?.spec, annotations: stored?.metadata?.annotations }).toEqual({
      spec: expected.spec,
      annotations: expected.metadata?.annotations,
    });
  });

  it.each<[string, (lease: V1Lease) => V1Lease, RegExp]>([
    [
      'a lease duration of 2147483647 s',
      leaseSpec({ leaseDurationSeconds: 2147483647 }),
      /leaseDurationSeconds from 1 to 60, not 2147483647/,
    ],
    ['a lease duration of 0 s', leaseSpec({ leaseDurationSeconds: 0 }), /from 1 to 60, not 0/],
    ['a lease duration of 61 s', leaseSpec({ leaseDurationSeconds: 61 }), /from 1 to 60, not 61/],
    [
      'no lease duration',
      (l) => ({ ...l, spec: { holderIdentity: l.spec?.holderIdentity } }),
      /from 1 to 60, not none/,
    ],
    [
      'a holder of 100 KB',
      leaseSpec({ holderIdentity: 'c'.repeat(100 * 1024) }),
      /holderIdentity of at most 128 characters, not 102400/,
    ],
    [
      'a holder of 129 characters',
      leaseSpec({ holderIdentity: 'c'.repeat(129) }),
      /holderIdentity of at most 128 characters, not 129/,
    ],
    [
      'a preferred holder (coordinated leader election)',
      leaseSpec({ preferredHolder: 'mallory' }),
      /only holderIdentity, leaseDurationSeconds, acquireTime, renewTime and leaseTransitions/,
    ],
    [
      'advice of 2049 bytes',
      leaseAnnotations({ [ADVICE]: adviceOf(2049) }),
      /kured-ts.dev\/fleet-advice\) as a JSON object of at most 2048 bytes/,
    ],
    [
      'advice of 1,111 characters but 2,211 bytes',
      leaseAnnotations({ [ADVICE]: adviceOf(2211, 'ü') }),
      /at most 2048 bytes/,
    ],
    ['advice that is no JSON object', leaseAnnotations({ [ADVICE]: 'hold' }), /as a JSON object/],
    [
      'the fleet health of the version before, rewritten',
      leaseAnnotations({ [OLD_HEALTH]: JSON.stringify({ total: 2, count: 2, unhealthy: [] }) }),
      /only the annotation kured-ts.dev\/fleet-advice \(and remove kured-ts.dev\/fleet-health\)/,
    ],
    [
      'another annotation',
      leaseAnnotations({ 'example.com/note': 'x' }),
      /only the annotation kured-ts.dev\/fleet-advice/,
    ],
    [
      "an admin's annotation removed",
      leaseAnnotations({ 'example.com/owner': null }),
      /only the annotation kured-ts.dev\/fleet-advice/,
    ],
    [
      'a label',
      (l) => ({ ...l, metadata: { ...l.metadata, labels: { 'example.com/team': 'x' } } }),
      /may not change the labels, owners or finalizers of its Lease/,
    ],
  ])('refuses the coordinator %s on its Lease', async (_name, given, message) => {
    const change = (l: V1Lease): V1Lease => given(leaseAnnotations({ [OLD_HEALTH]: null })(l));
    const before = server.get<V1Lease>('leases', 'kube-system', LEASE)?.metadata?.resourceVersion;
    await expect(changeLease(change)(coordinator())).rejects.toThrow(/HTTP 403/);
    expect(admission.counts).toEqual({ admitted: 0, denied: 1 });
    expect(admission.denials[0]?.denied).toMatch(message);
    expect(server.get<V1Lease>('leases', 'kube-system', LEASE)?.metadata?.resourceVersion).toBe(before);
  });
});

describe('the coordinator admission policy retires the fleet health of the version before', () => {
  beforeEach(seedLease);

  it('refuses a renewal that keeps it, which agents of that version would still trust while the DaemonSet rolls', async () => {
    await expect(
      changeLease(leaseSpec({ holderIdentity: 'kured-ts-coordinator-0_ab12' }))(coordinator()),
    ).rejects.toThrow(/HTTP 403/);
    expect(admission.denials[0]?.denied).toMatch(
      /removes kured-ts.dev\/fleet-health from its Lease in each write/,
    );
  });
});

describe('the coordinator admission policy bounds the Lease the coordinator creates', () => {
  const created =
    (change: (lease: V1Lease) => V1Lease): Write =>
    (kube) =>
      kube.createLease('kube-system', change(lease(LEASE, 'kured-ts-coordinator-0_ab12')));
  it.each<[string, (lease: V1Lease) => V1Lease, RegExp | undefined]>([
    ['admits it as the coordinator creates it', (l) => l, undefined],
    ['admits it with its advice', leaseAnnotations({ [ADVICE]: '{"hold":[]}' }), undefined],
    ['refuses it with a lease duration of 3600 s', leaseSpec({ leaseDurationSeconds: 3600 }), /from 1 to 60/],
    [
      'refuses it with the fleet health of the version before',
      leaseAnnotations({ [OLD_HEALTH]: '{"total":2,"count":0,"unhealthy":[]}' }),
      /only the annotation kured-ts.dev\/fleet-advice/,
    ],
    [
      'refuses it with a label',
      (l) => ({ ...l, metadata: { ...l.metadata, labels: { 'example.com/team': 'x' } } }),
      /labels, owners or finalizers of its Lease/,
    ],
  ])('%s', async (_name, change, refusal) => {
    const write = created(change)(coordinator());
    if (refusal === undefined) {
      await write;
      expect(admission.counts.denied).toBe(0);
      expect(server.get<V1Lease>('leases', 'kube-system', LEASE)).toBeDefined();
    } else {
      await expect(write).rejects.toThrow(/HTTP 403/);
      expect(admission.denials[0]?.denied).toMatch(refusal);
      expect(server.get<V1Lease>('leases', 'kube-system', LEASE)).toBeUndefined();
    }
  });
});

describe("only the coordinator writes its Lease: every other user's create and update are refused, a delete is not", () => {
  /** A ServiceAccount that RBAC lets write the Leases of the namespace (another component's leader election). */
  const elector = (): Kube => as({ user: 'system:serviceaccount:kube-system:leader-elector' });
  it.each<[string, () => Kube, 'create' | 'update']>([
    ['another ServiceAccount that RBAC lets write Leases, creating it', elector, 'create'],
    ['another ServiceAccount that RBAC lets write Leases, taking it over', elector, 'update'],
    ["the agent's token creating it", () => agent('n1'), 'create'],
    ["the agent's token taking it over", () => agent('n1'), 'update'],
    ['an admin taking it over', admin, 'update'],
  ])('refuses %s', async (_who, who, operation) => {
    if (operation === 'update') seedLease();
    const before = server.get<V1Lease>('leases', 'kube-system', LEASE)?.metadata?.resourceVersion;
    const write =
      operation === 'create'
        ? createLease(LEASE)
        : changeLease(leaseSpec({ holderIdentity: 'mallory', leaseDurationSeconds: 30 }));
    await expect(write(who())).rejects.toThrow(/HTTP 403/);
    expect(admission.counts).toEqual({ admitted: 0, denied: 1 });
    expect(admission.denials[0]).toMatchObject({
      policy: 'kured-ts-coordinator-lease-writer',
      denied: expect.stringMatching(
        /^only the kured-ts coordinator \(system:serviceaccount:kube-system:kured-ts-coordinator\) may create or update the Lease kube-system\/kured-coordinator, not /,
      ) as unknown,
    });
    expect(server.get<V1Lease>('leases', 'kube-system', LEASE)?.metadata?.resourceVersion).toBe(before);
  });

  it('admits an admin deleting it (a recovery), and leaves the other Leases of the namespace to RBAC', async () => {
    seedLease();
    const url = `${server.url}/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/${LEASE}`;
    expect((await fetch(url, { method: 'DELETE' })).status).toBe(200);
    expect(server.get<V1Lease>('leases', 'kube-system', LEASE)).toBeUndefined();
    await changeLease(leaseSpec({ holderIdentity: 'cm-1' }), 'kube-controller-manager')(elector());
    await createLease('kube-scheduler')(elector());
    expect(admission.counts).toEqual({ admitted: 0, denied: 0 });
  });
});

describe('the agents of a simulated wave through the policy', () => {
  it(
    'admits every write of a full wave with every fleet policy on, and the writes cover the cycle',
    async () => {
      const records: ReviewRecord[] = [];
      const options = memorySimulationOptions({
        ...DEFAULT_SIMULATE_OPTIONS,
        nodes: 6,
        concurrency: 2,
        zones: 2,
        groupConcurrency: 1,
        approveEveryMs: 600_000,
        seed: 5,
      });
      options.onAdmission = (r) => records.push(r);
      const result = await runSimulation(options);
      expect(result.violations).toEqual([]);
      expect(result.rebooted).toBe(6);
      expect(result.admission).toEqual({ admitted: records.length, denied: 0 });
      const kinds = new Set(
        records.map(
          (r) =>
            `${r.attributes.operation} ${r.attributes.resource.resource}${r.attributes.subResource ? '/' + r.attributes.subResource : ''}`,
        ),
      );
      expect(kinds).toEqual(new Set(['UPDATE nodes', 'UPDATE daemonsets', 'CREATE pods/eviction']));
      for (const r of records.filter((x) => x.attributes.resource.resource === 'nodes'))
        expect(r.attributes.name).toBe(r.attributes.userInfo.extra[NODE_NAME_EXTRA]?.[0]);
      expect(new Set(records.map((r) => r.attributes.userInfo.extra[NODE_NAME_EXTRA]?.[0])).size).toBe(6);
    },
    SIMULATION_TIMEOUT_MS,
  );

  // Every chart value that changes what the policy admits, each in a wave of its own: the policy is
  // rendered from the agents' configuration, and every request of theirs must pass it (issue 47: with
  // a drain grace period, every PDB pre-flight was denied and no node rebooted).
  it.each<[string, Partial<Config>, Partial<SimulateOptions>]>([
    ['a drain grace period of 5 s (--drain-grace-period=5)', { drainGracePeriodSeconds: 5 }, {}],
    ['a drain grace period of 0 (--drain-grace-period=0)', { drainGracePeriodSeconds: 0 }, {}],
    ["kured's progress annotations (--annotate-nodes)", { annotateNodes: true }, {}],
    [
      'pre- and post-reboot labels',
      {
        preRebootNodeLabels: { 'example.com/rebooting': 'true' },
        postRebootNodeLabels: { 'example.com/rebooting': 'false', 'example.com/patched': 'yes' },
      },
      {},
    ],
    [
      'the drain fallback deleting the pods a budget holds (--drain-fallback=delete)',
      { drainFallback: 'delete', drainGracePeriodSeconds: 5 },
      { pdb: { kind: 'minAvailable', value: '100%' }, drainTimeoutMs: 120_000 },
    ],
  ])(
    'admits every write of a wave with %s, and the wave completes',
    async (_name, agent, over) => {
      const records: ReviewRecord[] = [];
      const options = memorySimulationOptions({
        ...DEFAULT_SIMULATE_OPTIONS,
        nodes: 3,
        seed: 7,
        ...over,
        agent,
      });
      // a budget that never allows a disruption blocks the pre-flight for good: only the fallback drains
      if (agent.drainFallback === 'delete') options.agent.blockOnPdb = false;
      // a wave whose every pre-flight is denied never ends: bounded, it ends with what it did
      options.limitMs = 6 * 3_600_000;
      options.onAdmission = (r) => records.push(r);
      const result = await runSimulation(options);
      expect(result.admission).toEqual({ admitted: records.length, denied: 0 });
      expect(result.violations).toEqual([]);
      expect(result.rebooted).toBe(3);
      const writes = new Set(
        records.map((r) => `${r.attributes.operation} ${r.attributes.resource.resource}`),
      );
      expect(writes.has('CREATE pods')).toBe(true); // evictions: pods/eviction, judged as pods
      if (agent.drainFallback === 'delete') expect(writes.has('DELETE pods')).toBe(true);
    },
    SIMULATION_TIMEOUT_MS,
  );

  it(
    'reports a write the policy denies as an invariant violation',
    async () => {
      // A policy that allows the agents no status annotation: their first status write is denied.
      const options = memorySimulationOptions({ ...DEFAULT_SIMULATE_OPTIONS, nodes: 2, seed: 5 });
      const policies = boundAgentPolicies(
        agentPolicyParams(
          { ...defaultConfig(), dsNamespace: 'kube-system', dsName: 'kured', preferNoScheduleTaint: TAINT },
          { serviceAccount: SA },
        ),
      );
      options.admissionPolicies = policies.map((p) => ({
        ...p,
        spec: {
          ...p.spec,
          validations: p.spec.validations.map((v) => ({
            ...v,
            expression: v.expression.replaceAll(AGENT_NODE_ANNOTATIONS.join(','), 'kured-ts.dev/cycle'),
          })),
        },
      }));
      options.limitMs = 3_600_000;
      const result = await runSimulation(options);
      expect(result.admission?.denied).toBeGreaterThan(0);
      expect(result.violations.map((v) => v.rule)).toContain('write-denied-by-policy');
    },
    SIMULATION_TIMEOUT_MS,
  );

  it(
    'is on in kured-ts simulate by default',
    async () => {
      const r = await simulate({ ...DEFAULT_SIMULATE_OPTIONS, nodes: 3, seed: 2 });
      expect(r.admission?.denied).toBe(0);
      expect(r.admission?.admitted).toBeGreaterThan(3 * 5);
    },
    SIMULATION_TIMEOUT_MS,
  );
});

describe('the policy is written for kube-apiserver', () => {
  const expressions = (kind: (typeof POLICY_KINDS)[number]): string => {
    const spec = agentPolicySpecs()[kind];
    return [
      ...spec.matchConditions.map((c) => c.expression),
      ...spec.variables.map((v) => v.expression),
      ...spec.validations.flatMap((v) => [v.expression, v.messageExpression]),
    ].join('\n');
  };

  it('ranges comprehensions only over maps and lists, never over an object (kube type-checks them)', () => {
    const all = POLICY_KINDS.map(expressions).join('\n');
    const targets = [...all.matchAll(/([\w.]+)\.(all|exists|exists_one|map|filter)\(/g)].map((m) => m[1]);
    expect(targets.length).toBeGreaterThan(0);
    for (const t of targets) expect(t).toMatch(/\.(labels|annotations|taints)$/);
  });

  it.each([
    ['nodes', /object\.spec\.|object\.metadata\.labels/, /deleteOptions/],
    ['lock', /object\.spec|object\.metadata\.annotations/, /deleteOptions|taints|unschedulable/],
    ['eviction', /deleteOptions/, /taints|unschedulable|object\.spec/],
  ] as const)(
    'one policy per kind: the %s policy names only fields of the kind it matches (no type-check warnings)',
    (kind, has, never) => {
      expect(agentPolicySpecs()[kind].matchConstraints.resourceRules).toHaveLength(1);
      expect(expressions(kind)).toMatch(has);
      expect(expressions(kind)).not.toMatch(never);
    },
  );

  it('takes no parameter object: every value is written into it (a reinstall cannot switch it off)', () => {
    const text = JSON.stringify(agentPolicySpecs());
    expect(text).not.toMatch(/params|paramKind|paramRef/);
    const given = Object.keys(agentPolicyParams(CONFIG, { serviceAccount: SA }));
    const named = new Set([...text.matchAll(/__KURED_TS_(\w+)__/g)].map((m) => m[1]));
    expect(given.sort()).toEqual([...named].sort());
  });
});

describe("the coordinator's policy is written for kube-apiserver", () => {
  const expressions = (kind: (typeof COORDINATOR_POLICY_KINDS)[number]): string => {
    const spec = coordinatorPolicySpecs()[kind];
    return [
      ...spec.matchConditions.map((c) => c.expression),
      ...spec.variables.map((v) => v.expression),
      ...spec.validations.flatMap((v) => [v.expression, v.messageExpression]),
    ].join('\n');
  };

  it('ranges comprehensions only over the annotations map, never over an object', () => {
    const all = COORDINATOR_POLICY_KINDS.map(expressions).join('\n');
    const targets = [...all.matchAll(/([\w.]+)\.(all|exists|exists_one|map|filter)\(/g)].map((m) => m[1]);
    expect(targets.length).toBeGreaterThan(0);
    for (const t of targets) expect(t).toMatch(/\.annotations$/);
  });

  it.each([
    ['nodes', /object\.spec|object\.metadata\.annotations/, /leases|holderIdentity|leaseDurationSeconds/],
    ['lease', /object\.spec\.leaseDurationSeconds|object\.metadata\.annotations/, /taints|unschedulable/],
    ['lease-writer', /request\.userInfo\.username/, /object\.spec|annotations|taints/],
  ] as const)(
    'one policy per kind: the %s policy names only fields of the kind it matches (no type-check warnings)',
    (kind, has, never) => {
      expect(coordinatorPolicySpecs()[kind].matchConstraints.resourceRules).toHaveLength(1);
      expect(expressions(kind)).toMatch(has);
      expect(expressions(kind)).not.toMatch(never);
    },
  );

  it('takes no parameter object: every value is written into it', () => {
    const text = JSON.stringify(coordinatorPolicySpecs());
    expect(text).not.toMatch(/params|paramKind|paramRef/);
    const given = Object.keys(coordinatorPolicyParams(CONFIG, COORDINATOR_SA));
    const named = new Set([...text.matchAll(/__KURED_TS_(\w+)__/g)].map((m) => m[1]));
    expect(given.sort()).toEqual([...named].sort());
  });

  it('ships the spec generated from src/admission/coordinator-policy.ts (run `npm run docs` when it fails)', () => {
    const file = readFileSync(
      new URL('../../../charts/kured-ts/files/coordinator-admission-policy.yaml', import.meta.url),
      'utf8',
    );
    expect(load(file)).toEqual(coordinatorPolicySpecs());
  });
});
