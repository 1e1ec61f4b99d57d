// The Helm chart as rendered by the real Helm (fetched by scripts/ensure-helm.mjs): lint, render,
// offline validation with kubernetes-models, and the invariants an SRE relies on (least privilege,
// privileged only for method command, every flag reachable from values with the agent's defaults,
// the coordinator reading the agents' own lock flags).
import { beforeAll, describe, expect, test } from '@jest/globals';
import { execFile, execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse, parseAllDocuments, stringify } from 'yaml';
import { DaemonSet } from 'kubernetes-models/apps/v1/DaemonSet';
import { Deployment } from 'kubernetes-models/apps/v1/Deployment';
import { PodDisruptionBudget } from 'kubernetes-models/policy/v1/PodDisruptionBudget';
import { Service } from 'kubernetes-models/v1/Service';
import { ServiceAccount } from 'kubernetes-models/v1/ServiceAccount';
import { ClusterRole } from 'kubernetes-models/rbac.authorization.k8s.io/v1/ClusterRole';
import { ClusterRoleBinding } from 'kubernetes-models/rbac.authorization.k8s.io/v1/ClusterRoleBinding';
import { Role } from 'kubernetes-models/rbac.authorization.k8s.io/v1/Role';
import { RoleBinding } from 'kubernetes-models/rbac.authorization.k8s.io/v1/RoleBinding';
import { ConfigMap } from 'kubernetes-models/v1/ConfigMap';
import { ValidatingAdmissionPolicy } from 'kubernetes-models/admissionregistration.k8s.io/v1/ValidatingAdmissionPolicy';
import { ValidatingAdmissionPolicyBinding } from 'kubernetes-models/admissionregistration.k8s.io/v1/ValidatingAdmissionPolicyBinding';
import {
  POLICY_KINDS,
  agentPolicies,
  agentPolicyParams,
  type PolicyValueKey,
} from '../../../src/admission/agent-policy.js';
import {
  COORDINATOR_POLICY_KINDS,
  coordinatorPolicies,
  coordinatorPolicyParams,
} from '../../../src/admission/coordinator-policy.js';
import { COORDINATOR_FLAGS } from '../../../src/cli/coordinator.js';
import { coordinatorLeaseName } from '../../../src/queue/coordinator-lease.js';
import { PrometheusMetrics } from '../../../src/metrics/prometheus-metrics.js';
import { chartSchemaErrors } from '../../../src/migrate/chart-schema.js';
import { migrateKuredValues } from '../../../src/migrate/kured-chart-values.js';
import { FLAGS } from '../../../src/config/flags.js';
import { parseDrainRules } from '../../../src/config/drain-rules.js';
import { defaultConfig, parseConfig, parseFlags, type FlagValues } from '../../../src/config/parse.js';

const root = fileURLToPath(new URL('../../../', import.meta.url));
const chart = join(root, 'charts/kured-ts');
const ciFiles = readdirSync(join(chart, 'ci'))
  .filter((f) => f.endsWith('.yaml'))
  .sort();
const RELEASE = 'kured-ts';
const NAMESPACE = 'kube-system';
let helmBin = '';

interface Meta {
  name: string;
  namespace?: string;
  labels?: Record<string, string>;
}
interface K8sObject {
  apiVersion: string;
  kind: string;
  metadata: Meta;
  [key: string]: unknown;
}
interface Rule {
  apiGroups?: string[];
  resources?: string[];
  resourceNames?: string[];
  verbs: string[];
}
interface Binding extends K8sObject {
  roleRef: { name: string };
  subjects: { kind: string; name: string; namespace: string }[];
}
interface SecurityContext {
  privileged?: boolean;
  runAsUser?: number;
  runAsNonRoot?: boolean;
  allowPrivilegeEscalation?: boolean;
  readOnlyRootFilesystem?: boolean;
  capabilities?: { add?: string[]; drop?: string[] };
}
interface Container {
  name: string;
  args: string[];
  env: { name: string; valueFrom?: { fieldRef?: { fieldPath: string } } }[];
  ports: { name: string; containerPort: number }[];
  securityContext: SecurityContext;
  livenessProbe: { httpGet: { path: string; port: string } };
  readinessProbe: { httpGet: { path: string; port: string } };
  volumeMounts: { name: string; mountPath: string; readOnly?: boolean }[];
  resources?: { limits?: Record<string, string>; requests?: Record<string, string> };
}
interface PodSpec {
  hostPID?: boolean;
  hostNetwork?: boolean;
  serviceAccountName: string;
  containers: Container[];
  tolerations?: { key?: string; operator?: string; effect?: string }[];
  volumes: { name: string; hostPath?: { path: string; type?: string } }[];
}
interface DaemonSetShape extends K8sObject {
  spec: {
    updateStrategy: { type: string; rollingUpdate?: { maxUnavailable: number } };
    template: { spec: PodSpec };
  };
}

interface Selector {
  matchLabels: Record<string, string>;
}
interface DeploymentShape extends K8sObject {
  spec: {
    replicas: number;
    selector: Selector;
    template: {
      metadata: { labels: Record<string, string> };
      spec: PodSpec & {
        automountServiceAccountToken?: boolean;
        securityContext?: SecurityContext & { runAsGroup?: number; seccompProfile?: { type: string } };
        nodeSelector?: Record<string, string>;
        affinity?: unknown;
        priorityClassName?: string;
      };
    };
  };
}

/** What one run of Helm answered. */
interface HelmRun {
  status: number;
  stdout: string;
  stderr: string;
}

/**
 * Every run of Helm in this file, by its arguments and values: a render that several tests read
 * (the defaults, each CI file) runs once. The tests that run Helm are test.concurrent, so their runs
 * overlap (jest's maxConcurrency) instead of following one another.
 */
const helmRuns = new Map<string, Promise<HelmRun>>();

/** Helm with these arguments, and `values` as a values file of their own (`-f`) when given. */
function helm(args: string[], values?: string): Promise<HelmRun> {
  const key = JSON.stringify([args, values ?? null]);
  let run = helmRuns.get(key);
  if (run === undefined) {
    run = runHelm(args, values);
    helmRuns.set(key, run);
  }
  return run;
}

async function runHelm(args: string[], values: string | undefined): Promise<HelmRun> {
  const dir = values === undefined ? undefined : mkdtempSync(join(tmpdir(), 'kured-ts-values-'));
  try {
    const file = dir === undefined ? [] : ['-f', join(dir, 'values.yaml')];
    if (dir !== undefined) writeFileSync(join(dir, 'values.yaml'), values ?? '');
    return await new Promise<HelmRun>((resolve) => {
      const options = { cwd: root, encoding: 'utf8' as const, timeout: 60_000, maxBuffer: 64 << 20 };
      execFile(helmBin, [...args, ...file], options, (err, stdout, stderr) => {
        const status = err === null ? 0 : typeof err.code === 'number' ? err.code : -1;
        resolve({ status, stdout, stderr });
      });
    });
  } finally {
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
  }
}

function valuesArgs(files: readonly string[], sets: readonly string[]): string[] {
  return [...files.flatMap((f) => ['-f', join(chart, 'ci', f)]), ...sets.flatMap((s) => ['--set', s])];
}

/** `helm template` → the rendered objects; fails the test with Helm's message when it fails. */
async function render(files: readonly string[] = [], sets: readonly string[] = []): Promise<K8sObject[]> {
  const out = await helm(['template', RELEASE, chart, '--namespace', NAMESPACE, ...valuesArgs(files, sets)]);
  if (out.status !== 0) throw new Error(`helm template failed: ${out.stderr}`);
  return parseAllDocuments(out.stdout)
    .map((doc): unknown => {
      const js: unknown = doc.toJS();
      return js;
    })
    .filter((o): o is K8sObject => typeof o === 'object' && o !== null);
}

/** Helm with these values as a file of their own (`-f`), removed afterwards. */
function helmWithValues(args: string[], values: string): Promise<HelmRun> {
  return helm(args, values);
}

const TEMPLATE = ['template', RELEASE, chart, '--namespace', NAMESPACE];

/** Which part of the chart an object belongs to: the coordinator's carry its component label. */
type Part = 'agent' | 'coordinator';
const partOf = (o: K8sObject): Part =>
  o.metadata.labels?.['app.kubernetes.io/component'] === 'coordinator' ? 'coordinator' : 'agent';

/** The one object of `kind` of that part (the agents' by default). */
function only(objects: readonly K8sObject[], kind: string, part: Part = 'agent'): K8sObject {
  const found = objects.filter((o) => o.kind === kind && partOf(o) === part);
  expect(found).toHaveLength(1);
  return found[0]!;
}

function agent(objects: readonly K8sObject[]): { pod: PodSpec; container: Container; ds: DaemonSetShape } {
  const ds = only(objects, 'DaemonSet') as DaemonSetShape;
  const pod = ds.spec.template.spec;
  expect(pod.containers).toHaveLength(1);
  return { ds, pod, container: pod.containers[0]! };
}

/** The container's args as parseConfig's input: `--x=v` → {x: [v]}; a bare `--x` means true. */
function flagValues(args: readonly string[]): Record<string, string[]> {
  const values: Record<string, string[]> = {};
  for (const arg of args) {
    const match = /^--([a-z0-9-]+)(?:=(.*))?$/s.exec(arg);
    if (match === null) throw new Error(`not a --flag=value argument: ${arg}`);
    const name = match[1]!;
    (values[name] ??= []).push(match[2] ?? 'true');
  }
  return values;
}

const camel = (flag: string): string => flag.replace(/-([a-z0-9])/g, (_m, c: string) => c.toUpperCase());

/** Flags the chart sets itself instead of through `configuration`. */
/** drain-rules: the chart's top-level drainRules (the rules) rendered into a ConfigMap it points the flag at. */
const SET_BY_CHART = ['node-id', 'kubeconfig', 'drain-rules', 'host-root'];

const validators: Record<string, (o: K8sObject) => void> = {
  'apps/v1/DaemonSet': (o) => {
    new DaemonSet(o).validate();
  },
  'apps/v1/Deployment': (o) => {
    new Deployment(o).validate();
  },
  'policy/v1/PodDisruptionBudget': (o) => {
    new PodDisruptionBudget(o).validate();
  },
  'v1/Service': (o) => {
    new Service(o).validate();
  },
  'v1/ConfigMap': (o) => {
    new ConfigMap(o).validate();
  },
  'v1/ServiceAccount': (o) => {
    new ServiceAccount(o).validate();
  },
  'rbac.authorization.k8s.io/v1/ClusterRole': (o) => {
    new ClusterRole(o).validate();
  },
  'rbac.authorization.k8s.io/v1/ClusterRoleBinding': (o) => {
    new ClusterRoleBinding(o as never).validate();
  },
  'admissionregistration.k8s.io/v1/ValidatingAdmissionPolicy': (o) => {
    new ValidatingAdmissionPolicy(o).validate();
  },
  'admissionregistration.k8s.io/v1/ValidatingAdmissionPolicyBinding': (o) => {
    new ValidatingAdmissionPolicyBinding(o).validate();
  },
  'rbac.authorization.k8s.io/v1/Role': (o) => {
    new Role(o).validate();
  },
  'rbac.authorization.k8s.io/v1/RoleBinding': (o) => {
    new RoleBinding(o as never).validate();
  },
  // prometheus-operator CRDs: kubernetes-models has no schema for them; check their shape.
  'monitoring.coreos.com/v1/ServiceMonitor': (o) => {
    expect(o).toMatchObject({
      spec: {
        selector: { matchLabels: expect.any(Object) },
        endpoints: [{ port: 'metrics', path: '/metrics' }],
      },
    });
  },
  'monitoring.coreos.com/v1/PodMonitor': (o) => {
    expect(o).toMatchObject({
      spec: { selector: { matchLabels: expect.any(Object) }, podMetricsEndpoints: [{ port: 'metrics' }] },
    });
  },
  'monitoring.coreos.com/v1/PrometheusRule': (o) => {
    expect(o).toMatchObject({ spec: { groups: [{ name: 'kured-ts', rules: expect.any(Array) }] } });
  },
};

beforeAll(() => {
  helmBin = execFileSync('node', [join(root, 'scripts/ensure-helm.mjs')], { encoding: 'utf8' }).trim();
}, 180_000);

describe('helm lint and helm template', () => {
  test.concurrent.each([['(defaults)'], ...ciFiles.map((f) => [f])])(
    'helm lint --strict is clean for %s',
    async (file) => {
      const files = file === '(defaults)' ? [] : [file];
      const out = await helm(['lint', '--strict', chart, ...valuesArgs(files, [])]);
      expect(out.stderr).toBe('');
      expect(out.status).toBe(0);
      expect(out.stdout).not.toMatch(/\[(INFO|WARNING|ERROR)\]/);
    },
  );

  test.concurrent.each([['(defaults)'], ...ciFiles.map((f) => [f])])(
    'every object rendered for %s validates offline',
    async (file) => {
      const objects = await render(file === '(defaults)' ? [] : [file]);
      expect(objects.length).toBeGreaterThan(0);
      for (const object of objects) {
        const validate = validators[`${object.apiVersion}/${object.kind}`];
        if (validate === undefined) throw new Error(`no validator for ${object.apiVersion} ${object.kind}`);
        validate(object);
        expect(object.metadata.name).toMatch(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/);
      }
    },
  );

  test('the four CI values files exist: command, signal, concurrency with Prometheus, minimal', () => {
    expect(ciFiles).toEqual([
      'command-values.yaml',
      'concurrency-prometheus-values.yaml',
      'minimal-values.yaml',
      'signal-values.yaml',
    ]);
  });

  test.concurrent('the optional objects appear only when enabled', async () => {
    const kinds = async (files: string[]): Promise<string[]> =>
      (await render(files)).map((o) => o.kind).sort();
    expect(await kinds(['minimal-values.yaml'])).toEqual(['DaemonSet']);
    // agents and coordinator: two of each RBAC object and ServiceAccount; 4 + 3 policies
    const two = (kind: string): string[] => [kind, kind];
    const policyCount = POLICY_KINDS.length + COORDINATOR_POLICY_KINDS.length;
    const policies = [
      ...Array<string>(policyCount).fill('ValidatingAdmissionPolicy'),
      ...Array<string>(policyCount).fill('ValidatingAdmissionPolicyBinding'),
    ];
    expect(await kinds([])).toEqual([
      ...two('ClusterRole'),
      ...two('ClusterRoleBinding'),
      'DaemonSet',
      'Deployment',
      'PodDisruptionBudget',
      ...two('Role'),
      ...two('RoleBinding'),
      ...two('ServiceAccount'),
      ...policies,
    ]);
    expect(await kinds(['concurrency-prometheus-values.yaml'])).toEqual([
      ...two('ClusterRole'),
      ...two('ClusterRoleBinding'),
      'ConfigMap',
      'DaemonSet',
      'Deployment',
      'PodDisruptionBudget',
      'PodMonitor',
      'PrometheusRule',
      ...two('Role'),
      ...two('RoleBinding'),
      'Service',
      ...two('ServiceAccount'),
      'ServiceMonitor',
      ...policies,
    ]);
  });
});

describe('the values schema', () => {
  test.concurrent.each([
    ['configuration.concurrency=three', '/configuration/concurrency'],
    ['configuration.concurrency=0', '/configuration/concurrency'],
    ['configuration.rebootMethod=reboot', '/configuration/rebootMethod'],
    ['configuration.logFormat=xml', '/configuration/logFormat'],
    ['configuration.onPostRebootTimeout=ignore', '/configuration/onPostRebootTimeout'],
    ['configuration.onUncordonedDuringDelay=wait', '/configuration/onUncordonedDuringDelay'],
    ['configuration.hostExec=ssh', '/configuration/hostExec'],
    ['configuration.period=1 hour', '/configuration/period'],
    ['configuration.lockTtl=5', '/configuration/lockTtl'],
    ['configuration.forceReboot=yes', '/configuration/forceReboot'],
    ['configuration.metricsPort=70000', '/configuration/metricsPort'],
    ['configuration.endTime=25:00', '/configuration/endTime'],
    ['configuration.rebootSentinel=relative/path', '/configuration/rebootSentinel'],
    ['configuration.blockingPodSelector=app=x', '/configuration/blockingPodSelector'],
    ['configuration.preRebootNodeLabels[0]=nolabel', '/configuration/preRebootNodeLabels/0'],
    ['configuration.rebootSentinelComand=/bin/true', "additional properties 'rebootSentinelComand'"],
    ['metrics.serviceMonitor.enabled=maybe', '/metrics/serviceMonitor/enabled'],
    ['image.pullPolicy=Sometimes', '/image/pullPolicy'],
    ['coordinator.replicas=two', '/coordinator/replicas'],
    ['coordinator.replicas=0', '/coordinator/replicas'],
    ['coordinator.enabled=maybe', '/coordinator/enabled'],
    ['coordinator.replica=2', "additional properties 'replica'"],
  ])('helm template with %s fails and names %s', async (set, where) => {
    const out = await helm(['template', RELEASE, chart, '--set', set]);
    expect(out.status).not.toBe(0);
    expect(out.stderr).toContain("values don't meet the specifications of the schema");
    expect(out.stderr).toContain(where);
  });

  test.concurrent.each([
    ['configuration.rebootDelay=0'],
    ['configuration.period=1h30m'],
    ['configuration.drainTimeout=1.5h'],
  ])('helm template accepts %s', async (set) => {
    expect((await helm(['template', RELEASE, chart, '--set', set])).status).toBe(0);
  });

  test.concurrent.each([
    [
      'a sentinel command with method signal (nsenter would need a privileged pod)',
      ['configuration.rebootMethod=signal', 'configuration.rebootSentinelCommand=/usr/bin/needs-reboot'],
      'rebootSentinelCommand',
    ],
    [
      'a sentinel directly under / (the whole host filesystem would be mounted into the container)',
      ['configuration.rebootSentinel=/reboot-required'],
      'its directory / would be mounted',
    ],
    [
      "a sentinel in /etc (the host's /etc, its secrets included, would be mounted into the container)",
      ['configuration.rebootSentinel=/etc/reboot-required'],
      'its directory /etc would be mounted',
    ],
    [
      'a loopback metrics host (the kubelet probes the pod IP)',
      ['configuration.metricsHost=127.0.0.1'],
      'metricsHost',
    ],
  ])('the chart refuses %s', async (_label, sets, message) => {
    const out = await helm(['template', RELEASE, chart, ...sets.flatMap((s) => ['--set', s])]);
    expect(out.status).not.toBe(0);
    expect(out.stderr).toContain(message);
  });

  test('each configuration key has the type of its flag, and enums list the flag’s choices', () => {
    const schema = JSON.parse(readFileSync(join(chart, 'values.schema.json'), 'utf8')) as {
      properties: {
        configuration: {
          properties: Record<
            string,
            { type?: string; enum?: string[]; anyOf?: { type?: string; enum?: string[] }[] }
          >;
        };
      };
    };
    // each key's own shape is its first alternative; the others are "" (the flag left out) and,
    // for integers, the quoted integers kured's values carry
    const props = Object.fromEntries(
      Object.entries(schema.properties.configuration.properties).map(([k, v]) => [k, v.anyOf?.[0] ?? v]),
    );
    for (const flag of FLAGS.filter((f) => !SET_BY_CHART.includes(f.name))) {
      const prop = props[camel(flag.name)];
      expect({ flag: flag.name, present: prop !== undefined }).toEqual({ flag: flag.name, present: true });
      // Durations are strings (or the integer 0), so a missing `type` means the duration shape.
      const type = prop!.type ?? 'string';
      expect({ flag: flag.name, type }).toEqual({ flag: flag.name, type: flag.type });
      if (flag.choices !== undefined) {
        expect({ flag: flag.name, enum: prop!.enum }).toEqual({ flag: flag.name, enum: [...flag.choices] });
      }
    }
  });
});

describe('every flag is reachable from values', () => {
  const values = parse(readFileSync(join(chart, 'values.yaml'), 'utf8')) as {
    configuration: Record<string, unknown>;
  };

  test('configuration has exactly one key per flag (camelCase), apart from node-id and kubeconfig', () => {
    const expected = FLAGS.map((f) => f.name)
      .filter((n) => !SET_BY_CHART.includes(n))
      .map(camel)
      .sort();
    expect(Object.keys(values.configuration).sort()).toEqual(expected);
  });

  test.concurrent(
    'the default values render to exactly the agent’s defaults, except the chart’s taint, lock DaemonSet and sentinel mount',
    async () => {
      const { container, ds } = agent(await render());
      const config = parseConfig(flagValues(container.args), {});
      const expected = {
        ...defaultConfig(),
        preferNoScheduleTaint: 'weave.works/kured-node-reboot',
        // the host's /var/run/reboot-required, seen through the sentinel's mount
        rebootSentinel: '/sentinel/reboot-required',
        // the host's files the agent reads are mounted under /host
        hostRoot: '/host',
        dsName: ds.metadata.name,
        dsNamespace: NAMESPACE,
      };
      expect(config).toEqual(expected);
    },
  );

  test.concurrent(
    'the default values render no flag that only repeats an agent default: the taint, the sentinel in its mount and the lock DaemonSet only',
    async () => {
      const { container, ds } = agent(await render());
      expect(container.args).toEqual([
        '--prefer-no-schedule-taint=weave.works/kured-node-reboot',
        '--reboot-sentinel=/sentinel/reboot-required',
        '--host-root=/host',
        `--ds-name=${ds.metadata.name}`,
        `--ds-namespace=${NAMESPACE}`,
      ]);
    },
  );

  test.concurrent.each([
    ['KURED_PERIOD', '10m', 'periodMs', 600_000],
    ['KURED_CONCURRENCY', '3', 'concurrency', { count: 3 }],
    ['KURED_LOG_FORMAT', 'json', 'logFormat', 'json'],
    ['KURED_BLOCK_ON_PDB', 'false', 'blockOnPdb', false],
  ] as const)(
    'a %s set through extraEnvVars takes effect: no default flag overrides it',
    async (name, value, field, expected) => {
      const { container } = agent(
        await render([], [`extraEnvVars[0].name=${name}`, `extraEnvVars[0].value=${value}`]),
      );
      const env = Object.fromEntries(
        (container as unknown as { env: { name: string; value?: string }[] }).env
          .filter((e) => e.value !== undefined)
          .map((e) => [e.name, e.value!]),
      );
      expect(env[name]).toBe(value);
      const config = parseConfig(flagValues(container.args), env) as unknown as Record<string, unknown>;
      expect(config[field]).toEqual(expected);
    },
  );

  test.concurrent.each(ciFiles.map((f) => [f]))(
    'the args rendered for %s are accepted by the agent’s parser',
    async (file) => {
      const { container } = agent(await render([file]));
      expect(() => parseConfig(flagValues(container.args) as FlagValues, {})).not.toThrow();
    },
  );

  test.concurrent('a non-default value of every key reaches its flag', async () => {
    const sets: string[] = [];
    const wants: string[] = [];
    for (const flag of FLAGS.filter((f) => !SET_BY_CHART.includes(f.name))) {
      const key = camel(flag.name);
      const [value, arg] = sampleValue(flag.name, flag.type, flag.choices, values.configuration[key]);
      sets.push(`configuration.${key}${flag.type === 'array' ? '[0]' : ''}=${value}`);
      // the sentinel's host directory is mounted at /sentinel: the agent gets its file there
      wants.push(flag.name === 'reboot-sentinel' ? `--${flag.name}=/sentinel/${basename(value)}` : arg);
    }
    const { container, pod } = agent(await render([], sets));
    expect(container.args).toEqual(expect.arrayContaining(wants));
    expect(() => parseConfig(flagValues(container.args), {})).not.toThrow();
    const sentinel = pod.volumes.find((v) => v.name === 'sentinel');
    expect(sentinel?.hostPath?.path).toBe(dirname(SAMPLES['reboot-sentinel'] ?? ''));
  });
});

/** Values that differ from every default and that the schema and the agent accept, by flag. */
const SAMPLES: Record<string, string> = {
  period: '42m',
  'reboot-sentinel': '/x/y',
  'reboot-delay': '42m',
  'drain-delay': '42m',
  'drain-timeout': '42m',
  'lock-ttl': '42m',
  'lock-release-delay': '42m',
  'post-reboot-timeout': '42m',
  'eviction-retry-delay': '42m',
  'start-time': '7am',
  'end-time': '7pm',
  'time-zone': 'Europe/Paris',
  'reboot-schedule': '0 3 * * *',
  blackout: '2026-12-20/2027-01-03',
  'group-label': 'topology.kubernetes.io/zone',
  'max-unhealthy-nodes': '10%',
  'quarantine-retry': '42m',
  'max-quarantined': '2',
  'approval-ttl': '42m',
  'reboot-deadline': '72h',
  'settle-time': '42m',
  'lb-drain-wait': '42m',
  'hold-timeout': '42m',
  'volume-detach-timeout': '42m',
  'volume-detach-timeout-action': 'reboot',
  'single-replica-timeout': '42m',
  'hold-after-drain-annotation': 'example.com/firmware-update',
  'group-concurrency': '2',
  'history-limit': '7',
  'taint-timing': 'unblocked',
  'prometheus-url': 'http://p:9090',
  'alertmanager-url': 'http://am:9093',
  'silence-duration': '42m',
  'silence-tail': '42m',
  'before-reboot-hook': 'my-before',
  'after-reboot-hook': 'my-after',
  'hook-namespace': 'other',
  'hook-timeout': '42m',
  'silence-matcher': 'node=x',
  'fleetlock-url': 'https://fleetlock.example:8443',
  'notify-url': 'https://hooks.example/x',
  'slack-hook-url': 'https://hooks.slack.com/services/a/b/c',
  'ds-name': 'other',
  'ds-namespace': 'other',
  'lock-annotation': 'example.com/lock',
  'prefer-no-schedule-taint': 'example.com/reboot',
  'drain-pod-selector': 'app=x',
  'reboot-days': 'mon',
  'blocking-pod-selector': 'app=x',
  'pre-reboot-node-labels': 'a=b',
  'post-reboot-node-labels': 'a=b',
  'readiness-gate': 'NetworkReady',
  'metrics-port': '9',
  'reboot-signal': '9',
  concurrency: '7',
  'reboot-retries': '7',
  'max-reboots-per-need': '5',
  'package-manager-wait': '42m',
  'drain-grace-period': '7',
  'skip-wait-for-delete-timeout': '7',
  'wave-start': '2',
  'wave-growth': 'x2',
  soak: '42m',
  'max-failures': '2',
  'group-order': 'sequential',
  'health-check': 'core/v1/nodes n1: true',
  'node-check': 'always core/v1/configmaps ops: self.items.size() == 0',
  'health-check-timeout': '42m',
  'notify-events': 'wave-halted',
};

/** [value for --set, the argument it must render to]. */
function sampleValue(
  name: string,
  type: string,
  choices: readonly string[] | undefined,
  current: unknown,
): [string, string] {
  if (type === 'boolean') {
    return current === true ? ['false', `--${name}=false`] : ['true', `--${name}`];
  }
  const value = choices?.find((c) => c !== current) ?? SAMPLES[name] ?? 'x';
  return [value, `--${name}=${value}`];
}

describe('hostSettings: the host files behind graceful node shutdown in the status (issue 44)', () => {
  const volume = (pod: PodSpec, name: string): unknown => pod.volumes.find((v) => v.name === name);

  test.concurrent(
    "mount the host's /etc/systemd read-only under --host-root by default, and no kubelet file",
    async () => {
      const { container, pod } = agent(await render());
      expect(volume(pod, 'host-systemd')).toEqual({
        name: 'host-systemd',
        hostPath: { path: '/etc/systemd', type: 'Directory' },
      });
      expect(container.volumeMounts).toContainEqual({
        name: 'host-systemd',
        mountPath: '/host/etc/systemd',
        readOnly: true,
      });
      expect(container.args).toContain('--host-root=/host');
      expect(volume(pod, 'host-kubelet-config')).toBeUndefined();
    },
  );

  test.concurrent("mount the kubelet's configuration file read-only where it is, when asked", async () => {
    const path = '/etc/kubernetes/kubelet/config.json';
    const { container, pod } = agent(
      await render(
        [],
        [
          'hostSettings.kubeletConfig=true',
          `configuration.kubeletConfig=${path}`,
          'hostSettings.logind=false',
        ],
      ),
    );
    expect(volume(pod, 'host-kubelet-config')).toEqual({
      name: 'host-kubelet-config',
      hostPath: { path, type: 'File' },
    });
    expect(container.volumeMounts).toContainEqual({
      name: 'host-kubelet-config',
      mountPath: `/host${path}`,
      readOnly: true,
    });
    expect(container.args).toContain(`--kubelet-config=${path}`);
    expect(volume(pod, 'host-systemd')).toBeUndefined();
  });
});

describe('drainRules', () => {
  const rules = [
    'drainRules[0].namespace=rook-ceph',
    'drainRules[0].selector=app=rook-ceph-osd',
    'drainRules[0].drain=evict',
    'drainRules[0].order=10',
    'drainRules[1].selector=app=node-agent',
    'drainRules[1].drain=skip',
  ];

  test.concurrent(
    'are rendered into a ConfigMap mounted into the agent, which --drain-rules points at and the agent reads',
    async () => {
      const objects = await render([], rules);
      const { container, pod, ds } = agent(objects);
      const map = only(objects, 'ConfigMap') as K8sObject & { data: Record<string, string> };
      const volume = pod.volumes.find((v) => v.name === 'drain-rules') as unknown as {
        configMap: { name: string };
      };
      expect(volume.configMap.name).toBe(map.metadata.name);
      expect(container.volumeMounts).toContainEqual({
        name: 'drain-rules',
        mountPath: '/etc/kured-ts/drain-rules',
        readOnly: true,
      });
      expect(container.args).toContain('--drain-rules=/etc/kured-ts/drain-rules/drain-rules.yaml');
      const parsed = parseDrainRules(map.data['drain-rules.yaml'] ?? '');
      expect(parsed.map((r) => [r.namespace, r.drain, r.order])).toEqual([
        ['rook-ceph', 'evict', 10],
        [undefined, 'skip', undefined],
      ]);
      // a change of the rules rolls the agents (they read them at start-up)
      const annotations = (
        ds.spec.template as unknown as { metadata: { annotations?: Record<string, string> } }
      ).metadata.annotations;
      expect(annotations?.['checksum/drain-rules']).toMatch(/^[0-9a-f]{64}$/);
    },
  );

  test.concurrent('render nothing without rules', async () => {
    const objects = await render();
    expect(objects.filter((o) => o.kind === 'ConfigMap')).toEqual([]);
    expect(agent(objects).container.args.some((a) => a.startsWith('--drain-rules'))).toBe(false);
  });

  test.concurrent.each([
    ['drainRules[0].drain=skp', '/drainRules/0/drain'],
    ['drainRules[0].drian=skip', "additional properties 'drian'"],
    ['drainRules[0].order=ten', '/drainRules/0/order'],
  ])('a bad rule (%s) fails helm template naming it', async (set, where) => {
    const out = await helm(['template', RELEASE, chart, '--set', 'drainRules[0].namespace=x', '--set', set]);
    expect(out.status).not.toBe(0);
    expect(out.stderr).toContain(where);
  });
});

describe('hooks (issue 56): per-node Jobs from templates the chart renders', () => {
  const HOOKS = `
hooks:
  beforeReboot:
    template:
      metadata:
        labels: { app: noout }
      spec:
        containers:
          - name: noout
            image: quay.io/ceph/ceph:v18
            env: [{ name: MODE, value: set }]
  afterReboot:
    backoffLimit: 2
    template:
      spec:
        restartPolicy: OnFailure
        containers:
          - name: unset
            image: quay.io/ceph/ceph:v18
`;
  const parse = (stdout: string): K8sObject[] =>
    parseAllDocuments(stdout)
      .map((d): unknown => {
        const js: unknown = d.toJS();
        return js;
      })
      .filter((o): o is K8sObject => typeof o === 'object' && o !== null);
  const hooked = async (): Promise<K8sObject[]> => {
    const out = await helmWithValues(TEMPLATE, HOOKS);
    if (out.status !== 0) throw new Error(`helm template failed: ${out.stderr}`);
    return parse(out.stdout);
  };
  interface CronJobShape {
    metadata: Meta;
    spec: {
      suspend: boolean;
      jobTemplate: {
        spec: Record<string, unknown> & {
          template: { spec: { restartPolicy: string; containers: { env: unknown[] }[] } };
        };
      };
    };
  }

  test.concurrent(
    'render each hook as a suspended CronJob with the node in every container, and point the agent at it',
    async () => {
      const objects = await hooked();
      const cronJobs = objects.filter((o) => o.kind === 'CronJob') as unknown as CronJobShape[];
      expect(cronJobs.map((c) => [c.metadata.name, c.metadata.labels?.['kured-ts.dev/hook']])).toEqual([
        [`${RELEASE}-after-reboot`, 'after-reboot'],
        [`${RELEASE}-before-reboot`, 'before-reboot'],
      ]);
      const [after, before] = cronJobs;
      for (const c of cronJobs) {
        expect(c.spec.suspend).toBe(true);
        expect(c.spec.jobTemplate.spec).toMatchObject({
          parallelism: 1,
          completions: 1,
          ttlSecondsAfterFinished: 86400,
        });
      }
      const node = {
        name: 'KURED_TS_NODE',
        valueFrom: { fieldRef: { fieldPath: "metadata.labels['kured-ts.dev/hook-node']" } },
      };
      expect(before?.spec.jobTemplate.spec.template.spec.containers[0]?.env).toEqual([
        { name: 'MODE', value: 'set' },
        node,
      ]);
      expect(before?.spec.jobTemplate.spec.template.spec.restartPolicy).toBe('Never');
      expect(before?.spec.jobTemplate.spec.backoffLimit).toBe(0);
      expect(after?.spec.jobTemplate.spec.template.spec.restartPolicy).toBe('OnFailure');
      expect(after?.spec.jobTemplate.spec.backoffLimit).toBe(2);
      expect(agent(objects).container.args).toEqual(
        expect.arrayContaining([
          `--before-reboot-hook=${RELEASE}-before-reboot`,
          `--after-reboot-hook=${RELEASE}-after-reboot`,
          `--hook-namespace=${NAMESPACE}`,
        ]),
      );
    },
  );

  test.concurrent(
    "grant the agent Jobs' create and get in the release namespace and its templates by name, each hook Job held to its template by a policy bound with the template as its parameter",
    async () => {
      const objects = await hooked();
      const role = objects.find((o) => o.kind === 'Role' && o.metadata.name.endsWith('-hooks')) as
        (K8sObject & { rules: Rule[] }) | undefined;
      expect(role?.metadata.namespace).toBe(NAMESPACE);
      expect(role?.rules).toEqual([
        { apiGroups: ['batch'], resources: ['jobs'], verbs: ['create', 'get'] },
        {
          apiGroups: ['batch'],
          resources: ['cronjobs'],
          resourceNames: [`${RELEASE}-after-reboot`, `${RELEASE}-before-reboot`],
          verbs: ['get'],
        },
      ]);
      const bindings = objects.filter(
        (o) => o.kind === 'ValidatingAdmissionPolicyBinding' && o.metadata.name.includes('-hook-'),
      ) as unknown as { metadata: Meta; spec: Record<string, unknown> }[];
      expect(bindings.map((b) => [b.metadata.name, b.spec.paramRef, b.spec.matchResources])).toEqual([
        [`${RELEASE}-agent-hook-jobs`, undefined, undefined],
        [
          `${RELEASE}-agent-hook-template-after-reboot`,
          { name: `${RELEASE}-after-reboot`, namespace: NAMESPACE, parameterNotFoundAction: 'Deny' },
          { objectSelector: { matchLabels: { 'kured-ts.dev/hook': 'after-reboot' } } },
        ],
        [
          `${RELEASE}-agent-hook-template-before-reboot`,
          {
            name: `${RELEASE}-before-reboot`,
            namespace: NAMESPACE,
            parameterNotFoundAction: 'Deny',
          },
          { objectSelector: { matchLabels: { 'kured-ts.dev/hook': 'before-reboot' } } },
        ],
      ]);
    },
  );

  test.concurrent('render nothing of hooks without them', async () => {
    const objects = await render();
    expect(objects.filter((o) => o.kind === 'CronJob' || o.metadata.name.includes('hook'))).toEqual([]);
    expect(agent(objects).container.args.filter((a) => a.includes('hook'))).toEqual([]);
  });

  test.concurrent('refuse a hook rendered by the chart and named by configuration at once', async () => {
    const out = await helmWithValues(TEMPLATE, `${HOOKS}\nconfiguration:\n  beforeRebootHook: mine\n`);
    expect(out.status).not.toBe(0);
    expect(out.stderr).toContain('leave configuration.beforeRebootHook empty');
  });
});

describe('the DaemonSet', () => {
  test.concurrent.each([['(defaults)'], ...ciFiles.map((f) => [f])])(
    'for %s: hostPID, KURED_NODE_ID from spec.nodeName, read-only sentinel hostPath, probes, maxUnavailable 1',
    async (file) => {
      const files = file === '(defaults)' ? [] : [file];
      const objects = await render(files);
      const { pod, container, ds } = agent(objects);
      expect(pod.hostPID).toBe(true);
      expect(pod.hostNetwork).toBeUndefined();
      expect(container.env).toContainEqual({
        name: 'KURED_NODE_ID',
        valueFrom: { fieldRef: { fieldPath: 'spec.nodeName' } },
      });
      const config = parseConfig(flagValues(container.args), {});
      // the host's sentinel directory at /sentinel, never over the container's /var/run (= /run),
      // where the kubelet mounts the ServiceAccount token
      const sentinelDir = config.rebootSentinel.replace(/\/[^/]+$/, '');
      expect(sentinelDir).toBe('/sentinel');
      const volume = pod.volumes.find((v) => v.name === 'sentinel');
      expect(volume?.hostPath).toBeDefined();
      expect(container.volumeMounts).toContainEqual({
        name: volume!.name,
        mountPath: sentinelDir,
        readOnly: true,
      });
      for (const m of container.volumeMounts) {
        expect(['/var/run', '/run', '/var/run/secrets', '/run/secrets']).not.toContain(m.mountPath);
      }
      for (const v of pod.volumes.filter((x) => x.hostPath !== undefined)) {
        expect(container.volumeMounts.find((m) => m.name === v.name)?.readOnly).toBe(true);
      }
      expect(container.ports).toContainEqual(
        expect.objectContaining({ name: 'metrics', containerPort: config.metricsPort }),
      );
      expect(container.livenessProbe.httpGet).toEqual({ path: '/healthz', port: 'metrics' });
      expect(container.readinessProbe.httpGet).toEqual({ path: '/readyz', port: 'metrics' });
      expect(ds.spec.updateStrategy).toEqual({ type: 'RollingUpdate', rollingUpdate: { maxUnavailable: 1 } });
      // The lock lives on this DaemonSet: --ds-name/--ds-namespace must name it.
      expect(config.dsName).toBe(ds.metadata.name);
      expect(config.dsNamespace).toBe(ds.metadata.namespace);
    },
  );

  test.concurrent.each([
    ['(defaults)', 'command'],
    ['command-values.yaml', 'command'],
    ['concurrency-prometheus-values.yaml', 'command'],
    ['minimal-values.yaml', 'command'],
    ['signal-values.yaml', 'signal'],
  ])('for %s (method %s) the pod is privileged exactly when the method is command', async (file, method) => {
    const { container } = agent(await render(file === '(defaults)' ? [] : [file]));
    expect(parseConfig(flagValues(container.args), {}).rebootMethod).toBe(method);
    const sc = container.securityContext;
    if (method === 'command') {
      expect(sc.privileged).toBe(true);
      expect(sc.runAsUser).toBe(0);
    } else {
      expect(sc.privileged).toBe(false);
      expect(sc.allowPrivilegeEscalation).toBe(false);
      expect(sc.capabilities).toEqual({ drop: ['ALL'], add: ['KILL'] });
      expect(sc.readOnlyRootFilesystem).toBe(true);
    }
  });

  test.concurrent.each([
    ['(defaults)', 'command'],
    ['signal-values.yaml', 'signal'],
  ])(
    "for %s (method %s) the host's package-manager lock files are mounted read-only under /host exactly when the method is command",
    async (file, method) => {
      const { container, pod } = agent(await render(file === '(defaults)' ? [] : [file]));
      const mounts = container.volumeMounts.filter((m) =>
        ['/host/var/lib', '/host/var/cache', '/host/run'].includes(m.mountPath),
      );
      if (method === 'signal') {
        expect(mounts).toEqual([]);
        return;
      }
      expect(mounts.map((m) => [m.mountPath, m.readOnly])).toEqual([
        ['/host/var/lib', true],
        ['/host/var/cache', true],
        ['/host/run', true],
      ]);
      const paths = mounts.map((m) => pod.volumes.find((v) => v.name === m.name)?.hostPath);
      expect(paths).toEqual([
        { path: '/var/lib', type: 'Directory' },
        { path: '/var/cache', type: 'Directory' },
        { path: '/run', type: 'Directory' },
      ]);
    },
  );

  test.concurrent.each([
    ['Local', true],
    ['UTC', false],
    ['Europe/Berlin', false],
  ])('with timeZone %s the host /etc/localtime is mounted read-only: %s', async (zone, mounted) => {
    const { pod, container } = agent(await render([], [`configuration.timeZone=${zone}`]));
    const volume = pod.volumes.find((v) => v.hostPath?.path === '/etc/localtime');
    const mount = container.volumeMounts.find((m) => m.mountPath === '/etc/localtime');
    expect(volume !== undefined).toBe(mounted);
    expect(mount !== undefined).toBe(mounted);
    if (mounted) expect(mount).toEqual({ name: volume!.name, mountPath: '/etc/localtime', readOnly: true });
  });

  test.concurrent('control-plane nodes are tolerated by default, and resources are set', async () => {
    const { pod, container } = agent(await render());
    expect(pod.tolerations).toContainEqual({
      key: 'node-role.kubernetes.io/control-plane',
      operator: 'Exists',
      effect: 'NoSchedule',
    });
    expect(container.resources?.requests).toEqual({ cpu: '10m', memory: '128Mi' });
    expect(container.resources?.limits?.memory).toBeDefined();
  });

  test.concurrent('the notify URL can come from a Secret as KURED_NOTIFY_URL', async () => {
    const { container } = agent(await render(['concurrency-prometheus-values.yaml']));
    expect(container.env).toContainEqual({
      name: 'KURED_NOTIFY_URL',
      valueFrom: { secretKeyRef: { name: 'kured-ts-notify', key: 'url' } },
    });
  });
});

/** The coordinator's Deployment, its pod and its one container. */
function coordinator(objects: readonly K8sObject[]): {
  deployment: DeploymentShape;
  pod: DeploymentShape['spec']['template']['spec'];
  container: Container & { env: { name: string; value?: string }[] };
} {
  const deployment = only(objects, 'Deployment', 'coordinator') as DeploymentShape;
  const pod = deployment.spec.template.spec;
  expect(pod.containers).toHaveLength(1);
  return { deployment, pod, container: pod.containers[0]! };
}

/** The variables given by value, by name. */
const envValues = (container: { env: { name: string; value?: string }[] }): Record<string, string> =>
  Object.fromEntries(container.env.filter((e) => e.value !== undefined).map((e) => [e.name, e.value!]));

/** What the coordinator's own parse of its flags (src/cli/coordinator.ts) makes of these args and env. */
const coordinatorConfig = (args: readonly string[], env: Record<string, string>): unknown =>
  parseFlags([...COORDINATOR_FLAGS], flagValues(args), env);

/** The flags of `--flag=value` arguments. */
const flagNames = (args: readonly string[]): string[] => [...new Set(Object.keys(flagValues(args)))].sort();

/** The coordinator's flags the chart renders: all but --kubeconfig (it uses its ServiceAccount). */
const CHART_COORDINATOR_FLAGS: readonly string[] = COORDINATOR_FLAGS.filter((f) => !SET_BY_CHART.includes(f));
/** Their KURED_* variables. */
const COORDINATOR_ENV = FLAGS.filter((f) => CHART_COORDINATOR_FLAGS.includes(f.name)).map((f) => f.env);

/** The agent's arguments of the coordinator's flags, in the agent's order. */
const coordinatorArgsOf = (agentArgs: readonly string[]): string[] =>
  agentArgs.filter((a) => CHART_COORDINATOR_FLAGS.includes(flagNames([a])[0]!));

describe('the coordinator', () => {
  test.concurrent.each([
    ['the default concurrency (no flag)', 1, [] as string[]],
    ['configuration.concurrency 3', 3, ['configuration.concurrency=3']],
    ['configuration.concurrency 7', 7, ['configuration.concurrency=7']],
    [
      'KURED_CONCURRENCY 4 in extraEnvVars',
      4,
      ['extraEnvVars[0].name=KURED_CONCURRENCY', 'extraEnvVars[0].value=4'],
    ],
    [
      'KURED_CONCURRENCY 5 in extraEnv, beside a proxy',
      5,
      [
        'extraEnv[0].name=HTTPS_PROXY',
        'extraEnv[0].value=http://proxy:3128',
        'extraEnv[1].name=KURED_CONCURRENCY',
        'extraEnv[1].value=5',
      ],
    ],
    [
      'one node per zone, three in all',
      3,
      [
        'configuration.concurrency=3',
        'configuration.groupLabel=topology.kubernetes.io/zone',
        'configuration.groupConcurrency=1',
      ],
    ],
    ['a lock shared with kured', 1, ['configuration.dsName=kured', 'configuration.dsNamespace=kured-system']],
    ['a lock TTL in extraArgs', 1, ['extraArgs.lock-ttl=2h', 'configuration.maxUnhealthyNodes=10%']],
    [
      'a notify URL from a Secret, KURED_PERIOD (not its flag) and KURED_LOG_FORMAT (its flag)',
      1,
      [
        'notifyUrlSecret.name=notify',
        'extraEnvVars[0].name=KURED_PERIOD',
        'extraEnvVars[0].value=5m',
        'extraEnvVars[1].name=KURED_LOG_FORMAT',
        'extraEnvVars[1].value=json',
      ],
    ],
  ])(
    'with %s the Deployment runs 2 replicas of `coordinator` with the DaemonSet’s own lock flags (concurrency %i)',
    async (_label, concurrency, sets) => {
      const objects = await render([], sets);
      const { deployment, container } = coordinator(objects);
      const ds = agent(objects).container;
      expect(deployment.spec.replicas).toBe(2);
      expect(deployment.metadata.namespace).toBe(NAMESPACE);
      expect(container.args[0]).toBe('coordinator');
      const args = container.args.slice(1);
      // the same words, flag by flag, as the agents get; the agents' variables of its flags only
      expect(args).toEqual(coordinatorArgsOf(ds.args));
      expect(container.env).toEqual([
        { name: 'POD_NAME', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } },
        ...ds.env.filter((e) => COORDINATOR_ENV.includes(e.name)),
      ]);
      const config = coordinatorConfig(args, envValues(container));
      expect(config).toEqual(coordinatorConfig(ds.args, envValues(ds)));
      expect(config).toMatchObject({ concurrency: { count: concurrency } });
      expect(parseConfig(flagValues(ds.args), envValues(ds)).concurrency).toEqual({ count: concurrency });
    },
  );

  test.concurrent(
    'with every configuration key set to a non-default value, it gets exactly the agent’s arguments of its own flags',
    async () => {
      const values = parse(readFileSync(join(chart, 'values.yaml'), 'utf8')) as {
        configuration: Record<string, unknown>;
      };
      const sets = ['extraArgs.force-reboot=', 'extraArgs.lock-release-delay=5m'];
      for (const flag of FLAGS.filter((f) => !SET_BY_CHART.includes(f.name))) {
        const key = camel(flag.name);
        const [value] = sampleValue(flag.name, flag.type, flag.choices, values.configuration[key]);
        sets.push(`configuration.${key}${flag.type === 'array' ? '[0]' : ''}=${value}`);
      }
      const objects = await render([], sets);
      const ds = agent(objects).container;
      const args = coordinator(objects).container.args.slice(1);
      expect(flagNames(args)).toEqual([...CHART_COORDINATOR_FLAGS].sort());
      expect(args).toEqual(coordinatorArgsOf(ds.args));
      expect(ds.args).toEqual(expect.arrayContaining(['--force-reboot', '--lock-release-delay=5m']));
    },
  );

  test.concurrent(
    'runs non-root, read-only and unprivileged, every capability dropped, its token mounted, POD_NAME from the pod',
    async () => {
      const { pod, container } = coordinator(await render());
      expect(pod.automountServiceAccountToken).toBe(true);
      expect(pod.hostPID).toBeUndefined();
      expect(pod.hostNetwork).toBeUndefined();
      expect(pod.securityContext).toMatchObject({
        runAsNonRoot: true,
        seccompProfile: { type: 'RuntimeDefault' },
      });
      expect(pod.securityContext?.runAsUser).not.toBe(0);
      expect(container.securityContext).toEqual({
        privileged: false,
        allowPrivilegeEscalation: false,
        readOnlyRootFilesystem: true,
        runAsNonRoot: true,
        capabilities: { drop: ['ALL'] },
      });
      expect(container.env).toEqual([
        { name: 'POD_NAME', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } },
      ]);
      // nothing of the host, and no volume at all
      expect(container.volumeMounts as unknown).toBeUndefined();
      expect(pod.volumes as unknown).toBeUndefined();
      expect(container.resources).toEqual({
        requests: { cpu: '10m', memory: '128Mi' },
        limits: { memory: '256Mi' },
      });
    },
  );

  test.concurrent(
    'spreads its replicas over nodes by default, tolerates control-plane nodes as the DaemonSet does',
    async () => {
      const objects = await render();
      const { deployment, pod } = coordinator(objects);
      expect(pod.affinity).toEqual({
        podAntiAffinity: {
          preferredDuringSchedulingIgnoredDuringExecution: [
            {
              weight: 100,
              podAffinityTerm: {
                topologyKey: 'kubernetes.io/hostname',
                labelSelector: { matchLabels: deployment.spec.selector.matchLabels },
              },
            },
          ],
        },
      });
      expect(pod.tolerations).toEqual(agent(objects).pod.tolerations);
      expect(pod.nodeSelector).toEqual({ 'kubernetes.io/os': 'linux' });
      const custom = coordinator(
        await render(
          [],
          [
            'coordinator.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].key=pool',
            'coordinator.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].operator=Exists',
            'coordinator.priorityClassName=system-cluster-critical',
          ],
        ),
      ).pod;
      expect(Object.keys(custom.affinity as object)).toEqual(['nodeAffinity']);
      expect(custom.priorityClassName).toBe('system-cluster-critical');
    },
  );

  test.concurrent(
    'its pods are not the agents’: neither the DaemonSet nor the metrics Service selects them, nor it theirs',
    async () => {
      const objects = await render([], ['metrics.service.enabled=true']);
      const { deployment } = coordinator(objects);
      const ds = agent(objects).ds as DaemonSetShape & {
        spec: { selector: Selector; template: { metadata: { labels: Record<string, string> } } };
      };
      const service = only(objects, 'Service') as K8sObject & { spec: { selector: Record<string, string> } };
      const matches = (selector: Record<string, string>, labels: Record<string, string>): boolean =>
        Object.entries(selector).every(([k, v]) => labels[k] === v);
      const coordinatorPod = deployment.spec.template.metadata.labels;
      expect(matches(ds.spec.selector.matchLabels, coordinatorPod)).toBe(false);
      expect(matches(service.spec.selector, coordinatorPod)).toBe(false);
      expect(matches(deployment.spec.selector.matchLabels, ds.spec.template.metadata.labels)).toBe(false);
      expect(matches(deployment.spec.selector.matchLabels, coordinatorPod)).toBe(true);
    },
  );

  test.concurrent.each([
    [2, true],
    [1, false],
    [3, true],
  ])(
    'with %i replicas a PodDisruptionBudget of maxUnavailable 1 keeps a drain from evicting all of them: %s',
    async (replicas, pdb) => {
      const objects = await render([], [`coordinator.replicas=${replicas}`]);
      const { deployment } = coordinator(objects);
      expect(deployment.spec.replicas).toBe(replicas);
      const budgets = objects.filter((o) => o.kind === 'PodDisruptionBudget') as (K8sObject & {
        spec: { maxUnavailable: number; selector: Selector };
      })[];
      expect(budgets.length).toBe(pdb ? 1 : 0);
      if (pdb) {
        expect(budgets[0]!.metadata.namespace).toBe(NAMESPACE);
        expect(budgets[0]!.spec).toEqual({ maxUnavailable: 1, selector: deployment.spec.selector });
      }
    },
  );

  test.concurrent(
    'coordinator.enabled=false renders no coordinator object, and the agents’ objects as before',
    async () => {
      const on = await render();
      const off = await render([], ['coordinator.enabled=false']);
      expect(off.filter((o) => partOf(o) === 'coordinator')).toEqual([]);
      expect(off.filter((o) => o.metadata.name.includes('coordinator'))).toEqual([]);
      expect(off.filter((o) => ['Deployment', 'PodDisruptionBudget'].includes(o.kind))).toEqual([]);
      // the agents are told not to read its Lease (first come): --coordinator=false, nothing else changes
      const agents = (objects: K8sObject[]): string =>
        JSON.stringify(objects.filter((o) => partOf(o) === 'agent')).replaceAll('"--coordinator=false",', '');
      expect(agents(off)).toEqual(agents(on));
      const args = (objects: K8sObject[]): string[] =>
        (
          only(objects, 'DaemonSet') as unknown as {
            spec: { template: { spec: { containers: { args: string[] }[] } } };
          }
        ).spec.template.spec.containers[0]!.args;
      expect(args(off)).toContain('--coordinator=false');
      expect(args(on)).not.toContain('--coordinator=false');
    },
  );

  test.concurrent.each([
    ['replicas as a word', { coordinator: { replicas: 'two' } }, '/coordinator/replicas'],
    ['an unknown key', { coordinator: { replica: 2 } }, "additional properties 'replica' not allowed"],
    ['resources as a list', { coordinator: { resources: [] } }, '/coordinator/resources'],
  ])('helm lint and the schema refuse %s under coordinator', async (_label, values, where) => {
    const lint = await helmWithValues(['lint', '--strict', chart], stringify(values));
    expect(lint.status).not.toBe(0);
    expect(`${lint.stdout}${lint.stderr}`).toContain(where);
    const template = await helmWithValues(TEMPLATE, stringify(values));
    expect(template.status).not.toBe(0);
    expect(template.stderr).toContain(where);
    expect(chartSchemaErrors(values).length).toBeGreaterThan(0);
  });
});

/** Where a permission is granted: the ClusterRole, or the Role in the lock's namespace (by name). */
type Scope = 'cluster' | 'lock';

/**
 * Every call of the Kube seam (src/kube/kube.ts), the permission it needs, and who makes it: the
 * agent, the coordinator (each with the scope its role grants it in), or neither (the operator
 * commands, with the operator's own credentials). A method added to the seam fails the first test
 * below until it is listed here, and the RBAC templates follow.
 */
const PERMISSIONS: Record<
  string,
  { group: string; resource: string; verb: string; agent?: Scope; coordinator?: Scope }
> = {
  getNode: { group: '', resource: 'nodes', verb: 'get', agent: 'cluster' },
  // getObject, the seam's read of any object, by what reads it: the wait for the volumes after the
  // drain reads the claims of the pods the drain leaves and their volumes (src/drain/volume-reads.ts)
  'getObject persistentvolumeclaims': {
    group: '',
    resource: 'persistentvolumeclaims',
    verb: 'get',
    agent: 'cluster',
  },
  'getObject volumeattachments': {
    group: 'storage.k8s.io',
    resource: 'volumeattachments',
    verb: 'get',
    agent: 'cluster',
  },
  'getObject persistentvolumes': { group: '', resource: 'persistentvolumes', verb: 'get', agent: 'cluster' },
  // listObjects of other operators' NodeMaintenance objects, by the coordinator (node-maintenance.ts)
  'listObjects medik8s nodemaintenances': {
    group: 'nodemaintenance.medik8s.io',
    resource: 'nodemaintenances',
    verb: 'list',
    coordinator: 'cluster',
  },
  'listObjects NVIDIA nodemaintenances': {
    group: 'maintenance.nvidia.com',
    resource: 'nodemaintenances',
    verb: 'list',
    coordinator: 'cluster',
  },
  listNodes: { group: '', resource: 'nodes', verb: 'list', agent: 'cluster' },
  listNodeRows: { group: '', resource: 'nodes', verb: 'list', agent: 'cluster' },
  // The coordinator's one list of the fleet, to watch from (also `kured-ts status --watch`).
  listNodesPage: { group: '', resource: 'nodes', verb: 'list', coordinator: 'cluster' },
  // The agent: its own Node while it waits for its turn (fieldSelector metadata.name); the
  // coordinator: every Node.
  watchNodes: { group: '', resource: 'nodes', verb: 'watch', agent: 'cluster', coordinator: 'cluster' },
  jsonPatchNode: { group: '', resource: 'nodes', verb: 'patch', agent: 'cluster' },
  mergePatchNode: { group: '', resource: 'nodes', verb: 'patch', agent: 'cluster', coordinator: 'cluster' },
  listPods: { group: '', resource: 'pods', verb: 'list', agent: 'cluster' },
  // The agent's own pods (fieldSelector spec.nodeName), followed while a reboot is wanted (issue 42).
  listPodsPage: { group: '', resource: 'pods', verb: 'list', agent: 'cluster' },
  watchPods: { group: '', resource: 'pods', verb: 'watch', agent: 'cluster' },
  evictPod: { group: '', resource: 'pods/eviction', verb: 'create', agent: 'cluster' },
  // The PDB pre-flight: a dry-run eviction of each pod the drain would evict (nothing evicted).
  dryRunEviction: { group: '', resource: 'pods/eviction', verb: 'create', agent: 'cluster' },
  listPodDisruptionBudgets: {
    group: 'policy',
    resource: 'poddisruptionbudgets',
    verb: 'list',
    agent: 'cluster',
  },
  // --exclude-from-lb (default on): is there a Service of type LoadBalancer to wait for?
  listServicesPage: { group: '', resource: 'services', verb: 'list', agent: 'cluster' },
  createEvent: { group: '', resource: 'events', verb: 'create', agent: 'cluster' },
  mergePatchEvent: { group: '', resource: 'events', verb: 'patch', agent: 'cluster' },
  getDaemonSet: { group: 'apps', resource: 'daemonsets', verb: 'get', agent: 'lock', coordinator: 'lock' },
  mergePatchDaemonSet: { group: 'apps', resource: 'daemonsets', verb: 'patch', agent: 'lock' },
  watchDaemonSet: {
    group: 'apps',
    resource: 'daemonsets',
    verb: 'watch',
    agent: 'lock',
    coordinator: 'lock',
  },
  // Only the operator commands finding the chart's DaemonSet: granted to neither.
  listDaemonSets: { group: 'apps', resource: 'daemonsets', verb: 'list' },
  // Only with configuration.drainFallback delete (a test of its own below): granted to neither by default.
  deletePod: { group: '', resource: 'pods', verb: 'delete' },
  // Only with configuration.singleReplica restart (a test of its own below): granted to neither by default.
  getDeployment: { group: 'apps', resource: 'deployments', verb: 'get' },
  mergePatchDeployment: { group: 'apps', resource: 'deployments', verb: 'patch' },
  getReplicaSet: { group: 'apps', resource: 'replicasets', verb: 'get' },
  getLease: {
    group: 'coordination.k8s.io',
    resource: 'leases',
    verb: 'get',
    agent: 'lock',
    coordinator: 'lock',
  },
  createLease: { group: 'coordination.k8s.io', resource: 'leases', verb: 'create', coordinator: 'lock' },
  replaceLease: { group: 'coordination.k8s.io', resource: 'leases', verb: 'update', coordinator: 'lock' },
};

/** The documented RBAC of the agents, as a table: resource → verbs. */
const CLUSTER_RULES: Rule[] = [
  { apiGroups: [''], resources: ['nodes'], verbs: ['get', 'list', 'patch', 'watch'] },
  { apiGroups: [''], resources: ['pods'], verbs: ['list', 'watch'] },
  { apiGroups: [''], resources: ['services'], verbs: ['list'] },
  { apiGroups: [''], resources: ['persistentvolumeclaims', 'persistentvolumes'], verbs: ['get'] },
  { apiGroups: ['storage.k8s.io'], resources: ['volumeattachments'], verbs: ['get'] },
  { apiGroups: [''], resources: ['pods/eviction'], verbs: ['create'] },
  { apiGroups: ['policy'], resources: ['poddisruptionbudgets'], verbs: ['list'] },
  { apiGroups: [''], resources: ['events'], verbs: ['create', 'patch'] },
];

/** The agents' Role in the lock's namespace: the lock DaemonSet, and the coordinator's Lease (read). */
const lockRules = (dsName: string): Rule[] => [
  {
    apiGroups: ['apps'],
    resources: ['daemonsets'],
    resourceNames: [dsName],
    verbs: ['get', 'patch', 'watch'],
  },
  {
    apiGroups: ['coordination.k8s.io'],
    resources: ['leases'],
    resourceNames: [coordinatorLeaseName(dsName)],
    verbs: ['get'],
  },
];

/** The documented RBAC of the coordinator: cluster-wide, and in the lock's namespace. */
const COORDINATOR_CLUSTER_RULES: Rule[] = [
  { apiGroups: [''], resources: ['nodes'], verbs: ['list', 'patch', 'watch'] },
  {
    apiGroups: ['nodemaintenance.medik8s.io', 'maintenance.nvidia.com'],
    resources: ['nodemaintenances'],
    verbs: ['list'],
  },
];
const coordinatorLockRules = (dsName: string): Rule[] => [
  { apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['create'] },
  {
    apiGroups: ['coordination.k8s.io'],
    resources: ['leases'],
    resourceNames: [coordinatorLeaseName(dsName)],
    verbs: ['get', 'update'],
  },
  { apiGroups: ['apps'], resources: ['daemonsets'], resourceNames: [dsName], verbs: ['get', 'watch'] },
];

function needed(who: Part, scope: Scope): Map<string, Set<string>> {
  const map = new Map<string, Set<string>>();
  for (const p of Object.values(PERMISSIONS).filter((x) => x[who] === scope)) {
    const key = `${p.group}/${p.resource}`;
    map.set(key, (map.get(key) ?? new Set()).add(p.verb));
  }
  return map;
}

function granted(rules: readonly Rule[]): Map<string, Set<string>> {
  const map = new Map<string, Set<string>>();
  for (const rule of rules) {
    for (const group of rule.apiGroups ?? []) {
      for (const resource of rule.resources ?? []) {
        const key = `${group}/${resource}`;
        map.set(key, new Set([...(map.get(key) ?? []), ...rule.verbs]));
      }
    }
  }
  return map;
}

type RoleShape = K8sObject & { rules: Rule[] };

/** The objects of a rendered chart. */
function parseObjects(stdout: string): K8sObject[] {
  return parseAllDocuments(stdout)
    .map((d): unknown => {
      const js: unknown = d.toJS();
      return js;
    })
    .filter((o): o is K8sObject => typeof o === 'object' && o !== null);
}

/** Adds `verbs` to what `who` may do with `resource` in `grants`. */
function grant(
  grants: Map<string, Set<string>>,
  who: string,
  resource: string,
  verbs: readonly string[],
): void {
  const key = `${who} ${resource}`;
  const set = grants.get(key) ?? new Set<string>();
  for (const v of verbs) set.add(v);
  grants.set(key, set);
}

/** "who resource" → its verbs, sorted. */
function sortedGrants(grants: Map<string, Set<string>>): Record<string, string[]> {
  const keys = [...grants.keys()].sort();
  return Object.fromEntries(keys.map((k): [string, string[]] => [k, [...(grants.get(k) ?? [])].sort()]));
}

/** What the rendered Roles and ClusterRoles grant the agent and the coordinator, through their bindings. */
function renderedGrants(objects: readonly K8sObject[]): Record<string, string[]> {
  const grants = new Map<string, Set<string>>();
  const bindings = objects.filter(
    (o) => o.kind === 'RoleBinding' || o.kind === 'ClusterRoleBinding',
  ) as Binding[];
  for (const b of bindings) {
    const who = b.subjects[0]?.name.endsWith('-coordinator') === true ? 'coordinator' : 'agent';
    const kind = b.kind.replace('Binding', '');
    const role = objects.find((o) => o.kind === kind && o.metadata.name === b.roleRef.name) as
      RoleShape | undefined;
    for (const rule of role?.rules ?? [])
      for (const r of rule.resources ?? []) grant(grants, who, r, rule.verbs);
  }
  return sortedGrants(grants);
}

/** What the chart README's RBAC table says the agent and the coordinator may do. */
function documentedGrants(readme: string): Record<string, string[]> {
  const grants = new Map<string, Set<string>>();
  const rows = readme
    .slice(readme.indexOf('## RBAC'))
    .split('\n')
    .filter((l) => /^\| (agent|coordinator) /.test(l));
  for (const row of rows) {
    const [who = '', , resources = '', verbs = ''] = row
      .split('|')
      .slice(1)
      .map((c) => c.trim());
    for (const r of resources.replace(/ \(.*\)$/, '').split(', ')) grant(grants, who, r, verbs.split(', '));
  }
  return sortedGrants(grants);
}

function expectLeastPrivilege(rules: readonly Rule[]): void {
  for (const rule of rules) {
    expect(rule.verbs).not.toContain('*');
    expect(rule.resources).not.toContain('*');
    expect(rule.resources).not.toContain('secrets');
    expect(rule.verbs).not.toContain('delete');
  }
}

describe('RBAC', () => {
  test.concurrent(
    "the chart README's RBAC table says exactly what the chart grants the agent and the coordinator (with hooks)",
    async () => {
      const out = await helmWithValues(
        TEMPLATE,
        'hooks:\n  beforeReboot:\n    template:\n      spec:\n        containers: [{ name: c, image: i }]\n',
      );
      expect(out.status).toBe(0);
      const readme = readFileSync(join(chart, 'README.md'), 'utf8');
      expect(documentedGrants(readme)).toEqual(renderedGrants(parseObjects(out.stdout)));
    },
  );

  test('every method of the Kube seam has a permission listed in this test', () => {
    const source = readFileSync(join(root, 'src/kube/kube.ts'), 'utf8');
    const body = /export interface Kube \{([\s\S]*?)\n\}/.exec(source)?.[1] ?? '';
    const methods = [...body.matchAll(/^ {2}([a-zA-Z]+)\(/gm)].map((m) => m[1]!).sort();
    expect(methods.length).toBeGreaterThan(0);
    expect(methods).toEqual(
      Object.keys(PERMISSIONS)
        .filter((k) => !k.includes(' '))
        .sort(),
    );
  });

  test.concurrent(
    'the ClusterRole grants exactly the documented verbs, which are exactly what the seam needs',
    async () => {
      const role = only(await render(), 'ClusterRole') as RoleShape;
      expect(role.rules).toEqual(CLUSTER_RULES);
      expect(granted(role.rules)).toEqual(needed('agent', 'cluster'));
      expectLeastPrivilege(role.rules);
      for (const rule of role.rules) expect(rule.verbs).not.toContain('update');
    },
  );

  test.concurrent.each([
    ['(defaults)', [] as string[], RELEASE, NAMESPACE],
    [
      'a lock shared with kured',
      ['configuration.dsName=kured', 'configuration.dsNamespace=kured-system'],
      'kured',
      'kured-system',
    ],
  ])(
    'with %s the Role is limited by resourceNames to the lock DaemonSet and the coordinator Lease',
    async (_label, sets, dsName, dsNamespace) => {
      const objects = await render([], sets);
      const role = only(objects, 'Role') as RoleShape;
      const binding = only(objects, 'RoleBinding') as Binding;
      const { container, pod } = agent(objects);
      const config = parseConfig(flagValues(container.args), {});
      expect(config.dsName).toBe(dsName);
      expect(config.dsNamespace).toBe(dsNamespace);
      expect(role.metadata.namespace).toBe(dsNamespace);
      expect(role.rules).toEqual(lockRules(dsName));
      expect(granted(role.rules)).toEqual(needed('agent', 'lock'));
      expect(binding.metadata.namespace).toBe(dsNamespace);
      expect(binding.roleRef.name).toBe(role.metadata.name);
      expect(binding.subjects).toEqual([
        { kind: 'ServiceAccount', name: pod.serviceAccountName, namespace: NAMESPACE },
      ]);
    },
  );

  test.concurrent(
    'with drainFallback delete, and only then, the ClusterRole also grants delete on pods (the admission policy confines it to the own node)',
    async () => {
      const role = only(await render([], ['configuration.drainFallback=delete']), 'ClusterRole') as RoleShape;
      const deletes = role.rules.filter((r) => r.verbs.includes('delete'));
      expect(deletes).toEqual([{ apiGroups: [''], resources: ['pods'], verbs: ['delete'] }]);
      expect(role.rules.filter((r) => !r.verbs.includes('delete'))).toEqual(CLUSTER_RULES);
      const { container } = agent(await render([], ['configuration.drainFallback=delete']));
      expect(parseConfig(flagValues(container.args), {}).drainFallback).toBe('delete');
    },
  );

  test.concurrent(
    'with singleReplica restart, and only then, the ClusterRole also grants get/patch on deployments and get on replicasets (the admission policy confines the patch to the restart annotation)',
    async () => {
      const set = ['configuration.singleReplica=restart'];
      const role = only(await render([], set), 'ClusterRole') as RoleShape;
      const apps = role.rules.filter((r) => r.apiGroups?.includes('apps'));
      expect(apps).toEqual([
        { apiGroups: ['apps'], resources: ['replicasets'], verbs: ['get'] },
        { apiGroups: ['apps'], resources: ['deployments'], verbs: ['get', 'patch'] },
      ]);
      expect(role.rules.filter((r) => !r.apiGroups?.includes('apps'))).toEqual(CLUSTER_RULES);
      const rendered = await render([], set);
      const policy = rendered.find(
        (d) =>
          (d as { kind?: string; metadata?: { name?: string } }).kind === 'ValidatingAdmissionPolicy' &&
          (d as { metadata?: { name?: string } }).metadata?.name?.endsWith('-agent-deployments') === true,
      );
      expect(JSON.stringify(policy)).toContain("'true' == 'true'");
      const { container } = agent(rendered);
      expect(parseConfig(flagValues(container.args), {}).singleReplica).toBe('restart');
    },
  );

  test.concurrent(
    "the agent's Role grants get on the coordinator's Lease only, and on no other Lease",
    async () => {
      const role = only(await render(), 'Role') as RoleShape;
      const leases = role.rules.filter((r) => r.apiGroups?.includes('coordination.k8s.io'));
      expect(leases).toEqual([
        {
          apiGroups: ['coordination.k8s.io'],
          resources: ['leases'],
          resourceNames: [`${RELEASE}-coordinator`],
          verbs: ['get'],
        },
      ]);
    },
  );

  test.concurrent('both bindings name the ServiceAccount the DaemonSet runs as', async () => {
    const objects = await render();
    const sa = only(objects, 'ServiceAccount');
    const { pod } = agent(objects);
    expect(pod.serviceAccountName).toBe(sa.metadata.name);
    const crb = only(objects, 'ClusterRoleBinding') as Binding;
    expect(crb.subjects).toEqual([{ kind: 'ServiceAccount', name: sa.metadata.name, namespace: NAMESPACE }]);
  });

  test.concurrent.each([
    ['(defaults)', [] as string[], RELEASE, NAMESPACE],
    [
      'a lock shared with kured',
      ['configuration.dsName=kured', 'configuration.dsNamespace=kured-system'],
      'kured',
      'kured-system',
    ],
  ])(
    "with %s the coordinator's ClusterRole and Role grant exactly nodes list/patch/watch, list of other operators' NodeMaintenances, leases create and get/update of its own, and get/watch of the lock DaemonSet",
    async (_label, sets, dsName, dsNamespace) => {
      const objects = await render([], sets);
      const clusterRole = only(objects, 'ClusterRole', 'coordinator') as RoleShape;
      const role = only(objects, 'Role', 'coordinator') as RoleShape;
      expect(clusterRole.rules).toEqual(COORDINATOR_CLUSTER_RULES);
      expect(granted(clusterRole.rules)).toEqual(needed('coordinator', 'cluster'));
      expect(role.metadata.namespace).toBe(dsNamespace);
      expect(role.rules).toEqual(coordinatorLockRules(dsName));
      expect(granted(role.rules)).toEqual(needed('coordinator', 'lock'));
      expectLeastPrivilege([...clusterRole.rules, ...role.rules]);
      // it writes only nodes (a merge patch) and its Lease; never the lock, events or pods
      const writes = [...clusterRole.rules, ...role.rules].filter((r) =>
        r.verbs.some((v) => ['create', 'update', 'patch'].includes(v)),
      );
      expect(writes.map((r) => `${r.resources!.join()}:${r.verbs.join()}`)).toEqual([
        'nodes:list,patch,watch',
        'leases:create',
        'leases:get,update',
      ]);
    },
  );

  test.concurrent(
    'the coordinator runs as a ServiceAccount of its own, which its two bindings name',
    async () => {
      const objects = await render();
      const sa = only(objects, 'ServiceAccount', 'coordinator');
      const deployment = only(objects, 'Deployment', 'coordinator') as DeploymentShape;
      expect(sa.metadata.name).toBe(`${RELEASE}-coordinator`);
      expect(deployment.spec.template.spec.serviceAccountName).toBe(sa.metadata.name);
      expect(sa.metadata.name).not.toBe(only(objects, 'ServiceAccount').metadata.name);
      const subject = { kind: 'ServiceAccount', name: sa.metadata.name, namespace: NAMESPACE };
      for (const kind of ['ClusterRoleBinding', 'RoleBinding']) {
        const binding = only(objects, kind, 'coordinator') as Binding;
        expect(binding.roleRef.name).toBe(`${RELEASE}-coordinator`);
        expect(binding.subjects).toEqual([subject]);
      }
    },
  );
});

interface AlertRule {
  alert: string;
  expr: string;
  for: string;
  labels: Record<string, string>;
  annotations: Record<string, string>;
}

describe("values migrated from kured's chart (kured-ts migrate-values)", () => {
  const fixtures = join(root, 'test/fixtures/kured-chart');
  test.concurrent.each(readdirSync(fixtures).filter((f) => f.endsWith('.yaml')))(
    'the values from %s install with this chart (schema, lint) and reach the agent as flags',
    async (file) => {
      const migrated = migrateKuredValues(parse(readFileSync(join(fixtures, file), 'utf8')), {
        dsName: 'kured',
        dsNamespace: 'kube-system',
      });
      const values = stringify(migrated.values);
      const lint = await helmWithValues(['lint', '--strict', chart], values);
      expect([lint.status, lint.stderr]).toEqual([0, '']);
      expect(chartSchemaErrors(migrated.values)).toEqual([]);
      const out = await helmWithValues(TEMPLATE, values);
      expect([out.status, out.stderr]).toEqual([0, '']);
      const objects = parseAllDocuments(out.stdout).map((d) => d.toJS() as K8sObject);
      const { container } = agent(objects);
      const config = parseConfig(flagValues(container.args), {});
      const configuration = (migrated.values.configuration ?? {}) as Record<string, unknown>;
      expect(config.dsName).toBe('kured');
      if (configuration.concurrency !== undefined)
        expect(config.concurrency).toEqual({ count: configuration.concurrency });
      if (typeof configuration.startTime === 'string')
        expect(container.args).toContain(`--start-time=${configuration.startTime}`);
    },
  );
});

describe("a kured user's values file → kured-ts migrate-values → helm template → the DaemonSet", () => {
  interface Case {
    file: string;
    /** migrate-values' exit status (1: something the user set is lost, and named). */
    status: number;
    lost: string[];
    args: string[];
    env: Record<string, string>;
    volumes: string[];
    tolerations: unknown[];
    podAnnotations?: Record<string, string>;
  }
  const cases: Case[] = [
    {
      file: 'chart-2.x-invalid.yaml',
      status: 1,
      lost: [
        'configuration.startTime',
        'configuration.period',
        'configuration.notifyUrl',
        'configuration.rebootDays',
        'unknownTopLevel',
      ],
      args: ['--metrics-host=0.0.0.0', '--metrics-port=9101', '--concurrency=3'],
      env: {},
      volumes: [],
      tolerations: [],
    },
    {
      file: 'chart-5.x-defaults.yaml',
      status: 0,
      lost: [],
      args: [],
      env: {},
      volumes: [],
      tolerations: [],
    },
    {
      file: 'chart-5.x-proxy-private-ca.yaml',
      status: 0,
      lost: [],
      args: [
        '--period=30m',
        '--prometheus-url=https://prometheus.corp.internal',
        '--reboot-days=sa',
        '--reboot-days=su',
        '--start-time=2am',
        '--end-time=6am',
        '--time-zone=America/New_York',
        '--concurrency=2',
        '--log-format=json',
        '--alert-filter-regexp=^Watchdog$',
      ],
      env: {
        HTTPS_PROXY: 'http://proxy.corp.internal:3128',
        NO_PROXY: '.svc,.cluster.local,10.0.0.0/8',
        SSL_CERT_FILE: '/etc/corp-ca/ca.crt',
        NODE_EXTRA_CA_CERTS: '/etc/corp-ca/ca.crt',
        KURED_NOTIFY_URL: 'secret kured-notify/url',
      },
      volumes: ['corp-ca'],
      tolerations: [{ key: 'dedicated', operator: 'Exists' }],
      podAnnotations: { 'container.apparmor.security.beta.kubernetes.io/kured-ts': 'runtime/default' },
    },
    {
      file: 'chart-6.x-production.yaml',
      status: 1,
      lost: ['extraArgs.debug'],
      args: [
        '--period=10m',
        '--start-time=22:00',
        '--time-zone=Europe/Berlin',
        '--concurrency=2',
        '--blocking-pod-selector=app=etcd-backup',
        '--blocking-pod-selector=job-name',
        '--drain-grace-period=120',
        '--force-reboot=true',
        '--skip-wait-for-delete-timeout=300',
      ],
      env: { KURED_SLACK_HOOK_URL: 'secret kured-slack/url', HTTPS_PROXY: 'http://proxy.internal:3128' },
      volumes: ['extra'],
      tolerations: [
        { key: 'node-role.kubernetes.io/control-plane', operator: 'Exists', effect: 'NoSchedule' },
        { key: 'dedicated', operator: 'Equal', value: 'gpu', effect: 'NoSchedule' },
      ],
    },
  ];

  test.concurrent.each(cases)('$file', async (c) => {
    const run = spawnSync(
      process.execPath,
      [join(root, 'dist/cli.js'), 'migrate-values', join(root, 'test/fixtures/kured-chart', c.file)],
      { cwd: root, encoding: 'utf8' },
    );
    expect(run.status).toBe(c.status);
    const lostHeading = /^# Lost: .*\((\d+)\):$/m.exec(run.stdout);
    const lost = run.stdout
      .split('\n')
      .slice(lostHeading === null ? 0 : run.stdout.split('\n').indexOf(lostHeading[0]) + 1)
      .slice(0, lostHeading === null ? 0 : Number(lostHeading[1]))
      .map((line) => /^# {3}([^:]+):/.exec(line)?.[1]);
    expect(lost).toEqual(c.lost);
    const lint = await helmWithValues(['lint', '--strict', chart], run.stdout);
    expect([lint.status, lint.stderr]).toEqual([0, '']);
    const out = await helmWithValues(TEMPLATE, run.stdout);
    expect([out.status, out.stderr]).toEqual([0, '']);
    const { ds, pod, container } = agent(parseAllDocuments(out.stdout).map((d) => d.toJS() as K8sObject));
    expect(container.args).toEqual(expect.arrayContaining(c.args));
    expect(() => parseConfig(flagValues(container.args), {})).not.toThrow();
    const shaped = container as unknown as {
      env: { name: string; value?: string; valueFrom?: { secretKeyRef: { name: string; key: string } } }[];
    };
    const env = Object.fromEntries(
      shaped.env
        .filter((e) => e.name !== 'KURED_NODE_ID')
        .map((e) => [
          e.name,
          e.valueFrom === undefined
            ? e.value
            : `secret ${e.valueFrom.secretKeyRef.name}/${e.valueFrom.secretKeyRef.key}`,
        ]),
    );
    expect(env).toEqual(c.env);
    const podShape = pod as unknown as { volumes: { name: string }[]; tolerations?: unknown[] };
    expect(podShape.volumes.map((v) => v.name)).toEqual(expect.arrayContaining(c.volumes));
    expect(podShape.tolerations ?? []).toEqual(expect.arrayContaining(c.tolerations));
    if (c.podAnnotations !== undefined) {
      const template = (
        ds as unknown as { spec: { template: { metadata: { annotations?: Record<string, string> } } } }
      ).spec.template.metadata;
      expect(template.annotations).toMatchObject(c.podAnnotations);
    }
  });
});

describe("migrate-values' own check of its output agrees with helm's", () => {
  test.concurrent.each([
    ['the empty file', {}],
    ['a typo at the top', { tolerations: [], tolerationz: [] }],
    ['a quoted number', { configuration: { drainGracePeriod: '30' } }],
    ['a duration in Go syntax', { configuration: { period: '1h30m' } }],
    ['a duration helm refuses', { configuration: { period: '1 hour' } }],
    ['maxUnavailable as a share', { maxUnavailable: '10%' }],
    ['maxUnavailable as a word', { maxUnavailable: 'one' }],
    ["kured's extraArgs map with a bare flag", { extraArgs: { 'force-reboot': '' } }],
    ['an env list that is a map', { extraEnvVars: { KURED_PERIOD: '1h' } }],
    ['null removing a default', { configuration: { period: null } }],
  ])('for %s', async (_name, values) => {
    const out = await helmWithValues(TEMPLATE, stringify(values));
    const helmRefuses =
      out.status !== 0 && out.stderr.includes("values don't meet the specifications of the schema");
    expect(chartSchemaErrors(values).length > 0).toBe(helmRefuses);
  });
});

/** Every metric of the agent's /metrics with its label names (histograms with their series). */
async function exportedMetrics(): Promise<Map<string, Set<string>>> {
  const metrics = new PrometheusMetrics('n1');
  metrics.observeDrain(1);
  metrics.observeReboot(1);
  metrics.observePhase('drain', 1);
  const text = await metrics.metrics();
  const found = new Map<string, Set<string>>();
  for (const line of text.split('\n')) {
    const sample = /^([a-z_:][a-z0-9_:]*)(?:\{(.*)\})? /.exec(line);
    if (sample === null) continue;
    const labels = [...(sample[2] ?? '').matchAll(/([a-z_][a-z0-9_]*)="/g)].map((m) => m[1]!);
    const set = found.get(sample[1]!) ?? new Set<string>();
    for (const label of labels) set.add(label);
    found.set(sample[1]!, set);
  }
  return found;
}

/** Labels every scraped series has besides its own (the scrape target's). */
const TARGET_LABELS = ['job', 'instance', 'pod', 'namespace', 'node'];

/**
 * What a PromQL expression asks for that the agent does not export: unknown kured metrics, and label
 * matchers naming a label the metric does not have.
 */
function unknownInExpr(expr: string, exported: Map<string, Set<string>>): string[] {
  const problems: string[] = [];
  for (const m of expr.matchAll(/\b(kured_[a-z0-9_]+)(\{([^}]*)\})?/g)) {
    const labels = exported.get(m[1]!);
    if (labels === undefined) {
      problems.push(`metric ${m[1]!}`);
      continue;
    }
    for (const l of (m[3] ?? '').matchAll(/([a-z_][a-z0-9_]*)\s*(=~|!~|!=|=)/g)) {
      if (!labels.has(l[1]!) && !TARGET_LABELS.includes(l[1]!)) problems.push(`label ${l[1]!} of ${m[1]!}`);
    }
  }
  return problems;
}

describe('the Grafana dashboard', () => {
  interface Panel {
    id: number;
    title: string;
    gridPos: { x: number; y: number; w: number; h: number };
    targets: { expr: string; refId: string }[];
  }
  const configMap = async (): Promise<K8sObject & { data: Record<string, string> }> =>
    only(
      await render(['concurrency-prometheus-values.yaml'], ['admissionPolicy.enabled=false']),
      'ConfigMap',
    ) as K8sObject & {
      data: Record<string, string>;
    };
  const dashboard = async (): Promise<{ uid: string; panels: Panel[] }> =>
    JSON.parse((await configMap()).data['kured-ts.json']!) as { uid: string; panels: Panel[] };

  test.concurrent("is a ConfigMap with the sidecar's label, in the namespace asked for", async () => {
    const cm = await configMap();
    expect(cm.metadata).toMatchObject({
      name: 'kured-ts-dashboard',
      namespace: 'monitoring',
      labels: { grafana_dashboard: '1' },
      annotations: { grafana_folder: 'Infrastructure' },
    });
    expect(Object.keys(cm.data)).toEqual(['kured-ts.json']);
    expect((await dashboard()).uid).toBe('kured-ts');
  });

  test.concurrent('queries only metrics and labels the agent exports', async () => {
    const exported = await exportedMetrics();
    const exprs = (await dashboard()).panels.flatMap((p) => p.targets.map((t) => t.expr));
    expect(exprs.length).toBeGreaterThan(10);
    expect(exprs.flatMap((e) => unknownInExpr(e, exported))).toEqual([]);
    // Every kured metric of the agent appears on the dashboard.
    const shown = new Set(exprs.flatMap((e) => [...e.matchAll(/\bkured_[a-z0-9_]+/g)].map((m) => m[0])));
    const kured = [...exported.keys()].filter((n) => n.startsWith('kured_') && !/_(sum|count)$/.test(n));
    expect(kured.filter((n) => !shown.has(n) && !shown.has(`${n}_bucket`))).toEqual([]);
  });

  test('the metric check finds a metric or label the agent does not export', async () => {
    const exported = await exportedMetrics();
    expect(unknownInExpr('sum(kured_ts_reboot_total)', exported)).toEqual(['metric kured_ts_reboot_total']);
    expect(unknownInExpr('kured_ts_phase{state="x"}', exported)).toEqual(['label state of kured_ts_phase']);
    expect(unknownInExpr('kured_ts_phase{phase="draining",job=~"$job"}', exported)).toEqual([]);
  });

  test.concurrent('every query is valid PromQL (promtool check rules)', async () => {
    const exprs = (await dashboard()).panels.flatMap((p) =>
      p.targets.map((t) => t.expr.replace(/\$job/g, '.+')),
    );
    const dir = mkdtempSync(join(tmpdir(), 'kured-ts-dashboard-'));
    try {
      const rules = {
        groups: [{ name: 'dashboard', rules: exprs.map((expr, i) => ({ record: `dashboard:q${i}`, expr })) }],
      };
      writeFileSync(join(dir, 'rules.yaml'), stringify(rules));
      const run = spawnSync('promtool', ['check', 'rules', 'rules.yaml'], { cwd: dir, encoding: 'utf8' });
      expect(`${run.stdout}${run.stderr}`).toContain(`SUCCESS: ${exprs.length} rules found`);
      expect(run.status).toBe(0);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test.concurrent(
    'has unique panel ids and panels that fit the 24-column grid without overlapping',
    async () => {
      const panels = (await dashboard()).panels;
      expect(new Set(panels.map((p) => p.id)).size).toBe(panels.length);
      const cells = new Set<string>();
      for (const p of panels) {
        expect(p.gridPos.x + p.gridPos.w).toBeLessThanOrEqual(24);
        for (let x = p.gridPos.x; x < p.gridPos.x + p.gridPos.w; x++)
          for (let y = p.gridPos.y; y < p.gridPos.y + p.gridPos.h; y++) {
            expect(cells.has(`${x},${y}`)).toBe(false);
            cells.add(`${x},${y}`);
          }
      }
    },
  );
});

describe('the PrometheusRule', () => {
  const objects = (): Promise<K8sObject[]> => render(['concurrency-prometheus-values.yaml']);
  const groups = async (): Promise<{ name: string; rules: AlertRule[] }[]> =>
    (
      only(await objects(), 'PrometheusRule') as K8sObject & {
        spec: { groups: { name: string; rules: AlertRule[] }[] };
      }
    ).spec.groups;

  function promtool(args: string[], files: Record<string, string>): { status: number; output: string } {
    const dir = mkdtempSync(join(tmpdir(), 'kured-ts-rules-'));
    try {
      for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
      const run = spawnSync('promtool', args, { cwd: dir, encoding: 'utf8', timeout: 60_000 });
      if (run.error !== undefined)
        throw new Error(`promtool (Debian package prometheus) is needed: ${run.error.message}`);
      return { status: run.status ?? -1, output: `${run.stdout}${run.stderr}` };
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }

  test.concurrent('has its alerts, and promtool check rules accepts them', async () => {
    const rules = (await groups())[0]!.rules;
    expect(rules.map((r) => r.alert)).toEqual([
      'KuredTsRebootRequiredTooLong',
      'KuredTsNodeCordonedTooLong',
      'KuredTsRebootFailed',
      'KuredTsLockStalled',
      'KuredTsNodeQuarantined',
      'KuredTsRebootLoop',
      'KuredTsQuarantineHalted',
      'KuredTsWaveHalted',
      'KuredTsWaveNodeFailed',
      'KuredTsRebootOverdue',
    ]);
    const out = promtool(['check', 'rules', 'rules.yaml'], {
      'rules.yaml': stringify({ groups: await groups() }),
    });
    expect(out.output).toContain('SUCCESS: 10 rules found');
    expect(out.status).toBe(0);
  });

  test.concurrent(
    'the alerts fire when they should, across the scrape gap of a reboot, and not before',
    async () => {
      const rules = (await groups())[0]!.rules;
      const expected = (name: string, node: string): object => {
        const rule = rules.find((r) => r.alert === name)!;
        const fill = (text: string): string => text.replace(/\{\{ \$labels\.node \}\}/g, node);
        return {
          exp_labels: { ...rule.labels, node },
          exp_annotations: Object.fromEntries(Object.entries(rule.annotations).map(([k, v]) => [k, fill(v)])),
        };
      };
      const test = {
        rule_files: ['rules.yaml'],
        evaluation_interval: '1m',
        tests: [
          {
            interval: '1m',
            input_series: [
              // n1 needs a reboot for 13 h (the values file alerts after 12 h); n0 never did.
              { series: 'kured_reboot_required{node="n1",pod="a"}', values: '1x800' },
              { series: 'kured_reboot_required{node="n0",pod="b"}', values: '0x800' },
              // n2: cordoned (rebooting) for 30 min, its pod gone (stale) for 8 min while the node
              // boots, then verifying from a new pod (the values file alerts after 90 min in all).
              { series: 'kured_ts_phase{node="n2",phase="rebooting",pod="c"}', values: '1x30 stale' },
              { series: 'kured_ts_phase{node="n2",phase="verifying",pod="d"}', values: '_x38 1x100' },
              // n3 failed; n4's failed phase is 0.
              { series: 'kured_ts_phase{node="n3",phase="failed",pod="e"}', values: '1x10' },
              { series: 'kured_ts_phase{node="n4",phase="failed",pod="f"}', values: '0x10' },
              // n5 waits 8 h behind the same holders (the default alerts after 6 h); n6 waits as long,
              // but the holders change every 3 h (a wave that moves).
              { series: 'kured_ts_lock_stalled_seconds{node="n5",pod="g"}', values: '0+60x480' },
              {
                series: 'kured_ts_lock_stalled_seconds{node="n6",pod="h"}',
                values: '0+60x180 0+60x180 0+60x120',
              },
              // n7 goes past its deadline at 2 h and stays there; n8 never does.
              { series: 'kured_ts_reboot_overdue{node="n7",pod="i"}', values: '0x120 1x200' },
              { series: 'kured_ts_reboot_overdue{node="n8",pod="j"}', values: '0x320' },
              // n9 is quarantined from 10 min on; n10 never is. From 20 min on, n11 says new cycles
              // are halted (--max-quarantined).
              { series: 'kured_ts_blocked{node="n9",blocker="quarantine",pod="k"}', values: '0x10 1x60' },
              { series: 'kured_ts_blocked{node="n10",blocker="quarantine",pod="l"}', values: '0x70' },
              {
                series: 'kured_ts_blocked{node="n11",blocker="max-quarantined",pod="m"}',
                values: '0x20 1x60',
              },
              // n12 is quarantined reboot-loop from 30 min on (its need survived its reboots)
              { series: 'kured_ts_blocked{node="n12",blocker="reboot-loop",pod="n"}', values: '0x30 1x60' },
            ],
            alert_rule_test: [
              { eval_time: '11h', alertname: 'KuredTsRebootRequiredTooLong', exp_alerts: [] },
              {
                eval_time: '12h30m',
                alertname: 'KuredTsRebootRequiredTooLong',
                exp_alerts: [expected('KuredTsRebootRequiredTooLong', 'n1')],
              },
              { eval_time: '80m', alertname: 'KuredTsNodeCordonedTooLong', exp_alerts: [] },
              {
                eval_time: '100m',
                alertname: 'KuredTsNodeCordonedTooLong',
                exp_alerts: [expected('KuredTsNodeCordonedTooLong', 'n2')],
              },
              {
                eval_time: '5m',
                alertname: 'KuredTsRebootFailed',
                exp_alerts: [expected('KuredTsRebootFailed', 'n3')],
              },
              { eval_time: '5h50m', alertname: 'KuredTsLockStalled', exp_alerts: [] },
              {
                eval_time: '7h',
                alertname: 'KuredTsLockStalled',
                exp_alerts: [expected('KuredTsLockStalled', 'n5')],
              },
              { eval_time: '30m', alertname: 'KuredTsRebootLoop', exp_alerts: [] },
              {
                eval_time: '32m',
                alertname: 'KuredTsRebootLoop',
                exp_alerts: [expected('KuredTsRebootLoop', 'n12')],
              },
              { eval_time: '12m', alertname: 'KuredTsNodeQuarantined', exp_alerts: [] },
              {
                eval_time: '16m',
                alertname: 'KuredTsNodeQuarantined',
                exp_alerts: [expected('KuredTsNodeQuarantined', 'n9')],
              },
              { eval_time: '22m', alertname: 'KuredTsQuarantineHalted', exp_alerts: [] },
              {
                eval_time: '26m',
                alertname: 'KuredTsQuarantineHalted',
                exp_alerts: [
                  {
                    exp_labels: rules.find((r) => r.alert === 'KuredTsQuarantineHalted')!.labels,
                    exp_annotations: rules.find((r) => r.alert === 'KuredTsQuarantineHalted')!.annotations,
                  },
                ],
              },
              { eval_time: '2h3m', alertname: 'KuredTsRebootOverdue', exp_alerts: [] },
              {
                eval_time: '2h10m',
                alertname: 'KuredTsRebootOverdue',
                exp_alerts: [expected('KuredTsRebootOverdue', 'n7')],
              },
            ],
          },
        ],
      };
      const out = promtool(['test', 'rules', 'test.yaml'], {
        'rules.yaml': stringify({ groups: await groups() }),
        'test.yaml': stringify(test),
      });
      expect(out.output).toContain('SUCCESS');
      expect(out.status).toBe(0);
    },
  );
});

describe('the admission policy', () => {
  type Policy = K8sObject & { spec: unknown };
  type Binding = K8sObject & { spec: Record<string, unknown> };
  const policiesOf = (objects: K8sObject[]): Policy[] =>
    objects.filter((o) => o.kind === 'ValidatingAdmissionPolicy') as Policy[];
  const bindingsOf = (objects: K8sObject[]): Binding[] =>
    objects.filter((o) => o.kind === 'ValidatingAdmissionPolicyBinding') as Binding[];
  const policyObjects = async (files: string[], sets: string[] = []): Promise<K8sObject[]> =>
    (await render(files, sets)).filter((o) => o.kind.startsWith('ValidatingAdmissionPolicy'));
  /** What the agent's own flags give, as the policies' values. */
  const valuesOf = (objects: K8sObject[], requireNodeClaim = true): Record<PolicyValueKey, string> => {
    const { pod, container } = agent(objects);
    const config = parseConfig(flagValues(container.args), {});
    const serviceAccount = { namespace: NAMESPACE, name: pod.serviceAccountName };
    return agentPolicyParams(config, { serviceAccount, requireNodeClaim });
  };

  test.concurrent.each([
    ['(defaults)'],
    ['command-values.yaml'],
    ['signal-values.yaml'],
    ['concurrency-prometheus-values.yaml'],
  ])(
    "ships one policy per kind with the generated specs and the values the agent's own flags give, for %s",
    async (file) => {
      const objects = await render(file === '(defaults)' ? [] : [file]);
      const policies = policiesOf(objects).filter((p) => partOf(p) === 'agent');
      const expected = agentPolicies(valuesOf(objects));
      expect(policies.map((p) => p.metadata.name)).toEqual(POLICY_KINDS.map((k) => `${RELEASE}-agent-${k}`));
      for (const kind of POLICY_KINDS) {
        expect(policies.find((p) => p.metadata.name.endsWith(`-${kind}`))?.spec).toEqual(expected[kind]);
      }
      expect(bindingsOf(objects).map((b) => b.spec)).toEqual([
        ...POLICY_KINDS.map((k) => ({ policyName: `${RELEASE}-agent-${k}`, validationActions: ['Deny'] })),
        ...COORDINATOR_POLICY_KINDS.map((k) => ({
          policyName: `${RELEASE}-coordinator-${k}`,
          validationActions: ['Deny'],
        })),
      ]);
    },
  );

  test.concurrent.each([
    ['(defaults)', [] as string[], NAMESPACE, RELEASE],
    [
      'a lock shared with kured',
      ['configuration.dsName=kured', 'configuration.dsNamespace=kured-system'],
      'kured-system',
      'kured',
    ],
  ])(
    "ships the coordinator's policies on nodes, leases and its Lease's writers with its ServiceAccount and its Lease written in, for %s",
    async (_label, sets, dsNamespace, dsName) => {
      const objects = await render([], sets);
      const policies = policiesOf(objects).filter((p) => partOf(p) === 'coordinator');
      const { pod } = coordinator(objects);
      const values = coordinatorPolicyParams(
        { dsNamespace, dsName },
        { namespace: NAMESPACE, name: pod.serviceAccountName },
      );
      expect(values).toEqual({
        coordinatorServiceAccount: `system:serviceaccount:${NAMESPACE}:${RELEASE}-coordinator`,
        coordinatorLease: `${dsNamespace}/${dsName}-coordinator`,
        coordinatorLeaseName: `${dsName}-coordinator`,
      });
      const expected = coordinatorPolicies(values);
      expect(policies.map((p) => p.metadata.name)).toEqual(
        COORDINATOR_POLICY_KINDS.map((k) => `${RELEASE}-coordinator-${k}`),
      );
      for (const kind of COORDINATOR_POLICY_KINDS) {
        expect(policies.find((p) => p.metadata.name.endsWith(`-${kind}`))?.spec).toEqual(expected[kind]);
      }
      expect(
        (await policyObjects([], [...sets, 'coordinator.enabled=false'])).map((o) => o.metadata.name),
      ).toEqual(
        (await policyObjects([], sets)).filter((o) => partOf(o) === 'agent').map((o) => o.metadata.name),
      );
    },
  );

  test.concurrent(
    'takes no parameter: no paramKind, no paramRef, no ConfigMap a reinstall could lose',
    async () => {
      const objects = await render([]);
      const text = JSON.stringify(await policyObjects([]));
      expect(text).not.toMatch(/paramKind|paramRef|parameterNotFoundAction|__KURED_TS_/);
      expect(objects.filter((o) => o.kind === 'ConfigMap' && o.metadata.name.includes('-agent'))).toEqual([]);
    },
  );

  test.concurrent(
    'writes the pre- and post-reboot labels, a foreign lock DaemonSet, the grace period and the concurrency into the policies',
    async () => {
      const objects = await render(
        [],
        [
          'configuration.preRebootNodeLabels={example.com/rebooting=true}',
          'configuration.postRebootNodeLabels={example.com/rebooted=yes,example.com/rebooting=false}',
          'configuration.dsName=kured',
          'configuration.drainGracePeriod=60',
          'configuration.concurrency=3',
          'admissionPolicy.requireNodeClaim=false',
        ],
      );
      const values = valuesOf(objects, false);
      expect(values).toMatchObject({
        nodeLabels:
          'kured-ts.dev/rebooting,kured-ts.dev/quarantined,kured-ts.dev/wave,kured-ts.dev/wave-state,example.com/rebooting,example.com/rebooted',
        lockDaemonSet: `${NAMESPACE}/kured`,
        drainGracePeriod: '60',
        requireNodeClaim: 'false',
        maxOwners: '1|2|3',
      });
      const expected = agentPolicies(values);
      for (const p of policiesOf(objects).filter((o) => partOf(o) === 'agent')) {
        const kind = POLICY_KINDS.find((k) => p.metadata.name.endsWith(`-${k}`))!;
        expect(p.spec).toEqual(expected[kind]);
      }
    },
  );

  test.concurrent(
    'is left out when disabled, and before Kubernetes 1.30 (no admissionregistration.k8s.io/v1 policies)',
    async () => {
      expect(await policyObjects([], ['admissionPolicy.enabled=false'])).toEqual([]);
      const old = await helm([
        'template',
        RELEASE,
        chart,
        '--namespace',
        NAMESPACE,
        '--kube-version',
        '1.29.4',
      ]);
      expect(old.status).toBe(0);
      expect(old.stdout).not.toContain('ValidatingAdmissionPolicy');
      const current = await helm([
        'template',
        RELEASE,
        chart,
        '--namespace',
        NAMESPACE,
        '--kube-version',
        '1.30.0',
      ]);
      expect(current.stdout).toContain('kind: ValidatingAdmissionPolicyBinding');
    },
  );

  test.concurrent(
    'only reports instead of denying with validationActions [Warn, Audit], and refuses an unknown action',
    async () => {
      const bindings = bindingsOf(await render([], ['admissionPolicy.validationActions={Warn,Audit}']));
      expect(bindings.map((b) => b.spec.validationActions)).toEqual(
        Array(POLICY_KINDS.length + COORDINATOR_POLICY_KINDS.length).fill(['Warn', 'Audit']),
      );
      const bad = await helm([
        'template',
        RELEASE,
        chart,
        '--set',
        'admissionPolicy.validationActions={Allow}',
      ]);
      expect(bad.status).not.toBe(0);
      expect(bad.stderr).toMatch(/validationActions/);
    },
  );
});

describe('NOTES.txt', () => {
  /** NOTES.txt as `helm install` prints it (a client-side dry run: Kubernetes 1.35, the policies on). */
  const notes = async (sets: readonly string[]): Promise<string> => {
    const out = await helm([
      'install',
      RELEASE,
      chart,
      '--namespace',
      NAMESPACE,
      '--dry-run=client',
      ...valuesArgs([], sets),
    ]);
    if (out.status !== 0) throw new Error(`helm install --dry-run failed: ${out.stderr}`);
    return out.stdout.slice(out.stdout.indexOf('NOTES:'));
  };
  /** The warning's paragraph, one line (undefined when there is none). */
  const warning = (text: string): string | undefined =>
    /\n\nWARNING: ([^]*?)(\n\n|$)/.exec(text)?.[1]?.replace(/\s*\n\s*/g, ' ');
  const AGENT = /a stolen agent token .*cordon, taint or label any node.*pod template/;
  const COORDINATOR = /a stolen coordinator token .*cordon, taint or label any node.*Lease/;

  test.concurrent.each<[string, string[], RegExp[], RegExp[]]>([
    [
      'the policies disabled',
      ['admissionPolicy.enabled=false'],
      [/^the admission policies are OFF \(admissionPolicy\.enabled=false\)/, AGENT, COORDINATOR],
      [],
    ],
    [
      'the policies disabled and no coordinator',
      ['admissionPolicy.enabled=false', 'coordinator.enabled=false'],
      [/are OFF/, AGENT],
      [/coordinator/],
    ],
    [
      'validationActions [Warn, Audit]',
      ['admissionPolicy.validationActions={Warn,Audit}'],
      [
        /^the admission policies only report \(admissionPolicy\.validationActions: \[Warn Audit\]\): they refuse nothing/,
        AGENT,
        COORDINATOR,
      ],
      [],
    ],
    [
      'validationActions [Audit]',
      ['admissionPolicy.validationActions={Audit}'],
      [/only report .*\[Audit\]/, AGENT],
      [],
    ],
  ])('warns that a stolen token is bounded by RBAC alone with %s', async (_name, sets, says, never) => {
    const text = warning(await notes(sets));
    for (const s of says) expect(text).toMatch(s);
    for (const n of never) expect(text).not.toMatch(n);
    expect(text).toMatch(/docs\/security\.md/);
  });

  test.concurrent.each([
    ['(defaults)', [] as string[]],
    ['validationActions [Deny, Audit]', ['admissionPolicy.validationActions={Deny,Audit}']],
  ])('warns of nothing when the policies deny, for %s', async (_name, sets) => {
    expect(warning(await notes(sets))).toBeUndefined();
  });
});

describe("a kured chart user's values", () => {
  const objects = async (): Promise<K8sObject[]> => {
    const file = join(root, 'test', 'fixtures', 'kured-user-values.yaml');
    const out = await helm(['template', RELEASE, chart, '--namespace', NAMESPACE, '-f', file]);
    if (out.status !== 0) throw new Error(`helm template failed: ${out.stderr}`);
    return parseAllDocuments(out.stdout)
      .map((d) => d.toJS() as K8sObject | null)
      .filter((o): o is K8sObject => o !== null);
  };
  type Shaped = K8sObject & { spec: Record<string, unknown> };

  test.concurrent("install unchanged, and each of kured's keys lands where kured put it", async () => {
    const all = await objects();
    const { ds, pod, container } = agent(all);
    const flags = flagValues(container.args);
    // extraArgs as kured's map, "" a bare flag, winning over configuration
    expect(flags['force-reboot']).toEqual(['true']);
    expect(flags['log-format']).toEqual(['json']);
    expect(flags['reboot-days']).toEqual(['sat']);
    // "" leaves the flag out (the agent's default applies); quoted numbers are numbers
    expect(flags.period).toBeUndefined();
    expect(flags['skip-wait-for-delete-timeout']).toBeUndefined();
    expect(flags['message-template-drain']).toBeUndefined();
    expect(flags['drain-grace-period']).toEqual(['30']);
    expect(flags['use-reboot-sentinel-host-path']).toBeUndefined();
    const shaped = ds as unknown as Shaped & { metadata: { annotations?: Record<string, string> } };
    expect(shaped.metadata.annotations).toEqual({ team: 'platform' });
    expect(shaped.spec.updateStrategy).toEqual({ type: 'OnDelete' });
    const env = (container as unknown as { env: { name: string }[] }).env.map((e) => e.name);
    expect(env).toEqual(['KURED_NODE_ID', 'KURED_NOTIFY_URL']);
    const mounts = (container as unknown as { volumeMounts: { name: string }[] }).volumeMounts.map(
      (m) => m.name,
    );
    expect(mounts).toContain('corp-ca');
    expect((pod as unknown as { volumes: { name: string }[] }).volumes.map((v) => v.name)).toContain(
      'corp-ca',
    );
    expect(
      (container as unknown as { livenessProbe: { httpGet: { path: string } } }).livenessProbe.httpGet.path,
    ).toBe('/metrics');
    const sa = only(all, 'ServiceAccount') as K8sObject & {
      metadata: { annotations?: Record<string, string> };
    };
    expect(sa.metadata.annotations).toEqual({
      'eks.amazonaws.com/role-arn': 'arn:aws:iam::123456789012:role/kured',
    });
    const service = only(all, 'Service') as Shaped;
    expect(service.metadata.name).toBe('kured-metrics');
    expect(service.spec.type).toBe('NodePort');
    expect(service.spec.ports).toEqual([
      { name: 'metrics', port: 8080, targetPort: 'metrics', protocol: 'TCP', nodePort: 30080 },
    ]);
    const monitor = only(all, 'ServiceMonitor') as Shaped;
    expect(monitor.metadata.namespace).toBe('monitoring');
    expect(monitor.metadata.labels).toMatchObject({ release: 'prometheus' });
  });

  test.concurrent(
    'with every configuration key "", render no configuration flag at all: the agent\'s defaults apply',
    async () => {
      const empty = Object.fromEntries(
        Object.keys(
          (
            parse(readFileSync(join(chart, 'values.yaml'), 'utf8')) as {
              configuration: Record<string, unknown>;
            }
          ).configuration,
        )
          .filter((k) => k !== 'dsName' && k !== 'dsNamespace')
          .map((k) => [k, '']),
      );
      const out = await helmWithValues(TEMPLATE, stringify({ configuration: empty }));
      expect(out.stderr).toBe('');
      const ds = parseAllDocuments(out.stdout)
        .map((d) => d.toJS() as K8sObject)
        .filter((o) => o.kind === 'DaemonSet');
      // the sentinel's path in its mount is not a configuration flag: the chart's mount needs it
      expect(agent(ds).container.args).toEqual([
        '--reboot-sentinel=/sentinel/reboot-required',
        '--host-root=/host',
        '--ds-name=kured-ts',
        '--ds-namespace=kube-system',
      ]);
    },
  );

  test.concurrent.each([
    ['an unknown top-level key', ['--set', 'foo=bar'], "additional properties 'foo' not allowed"],
    [
      'a typo in a kured key',
      ['--set', 'extraEnvVar[0].name=X'],
      "additional properties 'extraEnvVar' not allowed",
    ],
    [
      'podSecurityPolicy.create',
      ['--set', 'podSecurityPolicy.create=true'],
      'pod-security.kubernetes.io/enforce',
    ],
    [
      'useRebootSentinelHostPath false',
      ['--set', 'configuration.useRebootSentinelHostPath=false'],
      'configuration.rebootSentinelCommand',
    ],
    [
      'a policy-bound flag in extraArgs',
      ['--set-json', 'extraArgs={"concurrency":2}'],
      'set configuration.concurrency instead',
    ],
  ])('refuse %s, naming what to use', async (_name, args, message) => {
    const out = await helm(['template', RELEASE, chart, '--namespace', NAMESPACE, ...args]);
    expect(out.status).not.toBe(0);
    expect(out.stderr).toContain(message);
  });
});
