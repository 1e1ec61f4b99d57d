// kured's Helm chart keys (chart 2.x to 6.x) and where each goes in the kured-ts chart: the rules
// kured-chart-values.ts migrates by, and the chart README's migration table is rendered from.
import { FLAGS, valuesKey as camel, type FlagSpec } from '../config/flags.js';

/** How a kured key fared: lost, refused by design, or carried with a change (MigrationNote.kind). */
export type NoteKind = 'lost' | 'refused' | 'changed' | 'proposed';

export type Json = Record<string, unknown>;

/** One kured key: where it goes (undefined = dropped), and why (for the note and the table). */
export interface Rule {
  kured: string;
  to?: string;
  why: string;
  /** For a dropped key: kured's default, which needs no note. */
  kuredDefault?: unknown;
  /** Turns the value into kured-ts keys and values (and a note); default: `to` gets it unchanged. */
  convert?: (value: unknown) => Converted;
}

export interface Converted {
  set: [string, unknown][];
  note?: string;
  /** The note's kind; default `changed`. */
  kind?: NoteKind;
}

export const kebab = (key: string): string => key.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);

/** Flags the chart renders its admission policy and RBAC from: only as configuration keys. */
export const POLICY_FLAGS = new Set([
  'concurrency',
  'lock-annotation',
  'prefer-no-schedule-taint',
  'drain-grace-period',
  'ds-name',
  'ds-namespace',
  'group-label',
  'group-concurrency',
]);

/** Flags set by the chart itself, never from values. */
export const CHART_FLAGS = new Set(['node-id', 'kubeconfig']);

export const FLAG_BY_KEY = new Map<string, FlagSpec>(
  FLAGS.filter((f) => !CHART_FLAGS.has(f.name)).map((f) => [camel(f.name), f]),
);

const same = (path: string, why = 'same key'): Rule => ({ kured: path, to: path, why });

/** The same key, left to the kured-ts chart's own default where it holds kured's default. */
const sameUnlessDefault = (path: string, kuredDefault: unknown, why = 'same key'): Rule => ({
  kured: path,
  to: path,
  why,
  kuredDefault,
});

const dropped = (path: string, why: string, kuredDefault?: unknown): Rule => ({
  kured: path,
  why,
  kuredDefault,
});

const DEFAULT_PROBE = {
  httpGet: { path: '/metrics', port: 'metrics', scheme: 'HTTP' },
  initialDelaySeconds: 10,
  periodSeconds: 30,
  timeoutSeconds: 5,
  successThreshold: 1,
  failureThreshold: 5,
};

/** The probe timing fields the kured-ts chart has. */
const PROBE_TIMING = ['initialDelaySeconds', 'periodSeconds', 'timeoutSeconds', 'failureThreshold'];

/** kured probes /metrics; kured-ts has its own endpoint: only changed timing is carried over. */
function probe(key: string, path: string): Rule {
  return {
    kured: key,
    to: key,
    why: `kured-ts probes ${path} (kured: /metrics); changed timing fields are carried over`,
    convert: (v) => {
      if (!isObject(v) || equal(v, DEFAULT_PROBE)) return { set: [] };
      const timing = PROBE_TIMING.filter((f) => typeof v[f] === 'number').map((f): [string, unknown] => [
        `${key}.${f}`,
        v[f],
      ]);
      return {
        set: timing,
        note: `kured-ts probes ${path}, not ${JSON.stringify(v.httpGet ?? {})}: only the timing is carried over`,
        kind: 'refused',
      };
    },
  };
}

/** Bytes of a Kubernetes memory quantity (Ki, Mi, Gi, k, M, G, plain), NaN when unreadable. */
export function memoryBytes(quantity: unknown): number {
  const m = /^(\d+(?:\.\d+)?)(Ki|Mi|Gi|Ti|k|M|G|T)?$/.exec(String(quantity));
  if (!m) return NaN;
  const unit: Record<string, number> = {
    Ki: 2 ** 10,
    Mi: 2 ** 20,
    Gi: 2 ** 30,
    Ti: 2 ** 40,
    k: 1e3,
    M: 1e6,
    G: 1e9,
    T: 1e12,
  };
  return Number(m[1]) * (m[2] === undefined ? 1 : (unit[m[2]] ?? NaN));
}

/** The agent's peak is about 61-67 MiB (bench/RESULTS.md): a lower limit gets it OOM-killed. */
const MIN_MEMORY_LIMIT = 128 * 2 ** 20;

function resources(value: unknown): Converted {
  const limits = isObject(value) && isObject(value.limits) ? value.limits : {};
  const limit =
    typeof limits.memory === 'number' || typeof limits.memory === 'string' ? String(limits.memory) : '';
  const low = limit !== '' && memoryBytes(limit) < MIN_MEMORY_LIMIT;
  return {
    set: [['resources', value]],
    note: low
      ? `carried, but a memory limit of ${limit} is below the agent's needs (peak about 90Mi through a 100-pod drain on Node 24; the chart's default limit is 192Mi)`
      : undefined,
  };
}

/** The agent's container in the kured-ts chart (kured's is `kured`). */
const CONTAINER = 'kured-ts';

/**
 * Pod annotations bound to a container by name (`container.apparmor.security.beta.kubernetes.io/kured`)
 * follow the agent to its container: left naming `kured`, the API server rejects the DaemonSet.
 */
function podAnnotations(value: unknown): Converted {
  if (!isObject(value)) return { set: [['podAnnotations', value]] };
  const renamed: string[] = [];
  const out = Object.fromEntries(
    Object.entries(value).map(([key, v]): [string, unknown] => {
      const bound = /^(container\.[a-z0-9.-]+\/)kured$/.exec(key);
      if (bound === null) return [key, v];
      renamed.push(key);
      return [`${bound[1] ?? ''}${CONTAINER}`, v];
    }),
  );
  return {
    set: [['podAnnotations', out]],
    note:
      renamed.length > 0
        ? `${renamed.join(', ')}: renamed to name the ${CONTAINER} container (kured's container is kured)`
        : undefined,
  };
}

/** Every key of kured's chart besides `configuration.*` (those are rules made from FLAGS). */
export const KURED_CHART_RULES: readonly Rule[] = [
  dropped(
    'image.repository',
    'kured-ts runs its own image: set image.repository and image.tag to where you pushed it',
  ),
  dropped('image.tag', 'kured-ts runs its own image (see image.repository)'),
  same('image.pullPolicy'),
  same('image.pullSecrets'),
  same('revisionHistoryLimit'),
  same('maxUnavailable'),
  sameUnlessDefault('updateStrategy', 'RollingUpdate'),
  {
    kured: 'podAnnotations',
    to: 'podAnnotations',
    why: "same key; annotations naming kured's container (AppArmor, seccomp) name kured-ts's",
    convert: podAnnotations,
  },
  same('podLabels'),
  same('dsAnnotations'),
  same('priorityClassName'),
  same('tolerations'),
  same('affinity'),
  same('nodeSelector'),
  {
    kured: 'resources',
    to: 'resources',
    why: 'same key; a memory limit below 128Mi is noted',
    convert: resources,
  },
  same('rbac.create'),
  same('serviceAccount.create'),
  same('serviceAccount.name'),
  same('serviceAccount.extraAnnotations', 'same key (merged into serviceAccount.annotations)'),
  dropped('podSecurityPolicy.create', 'PodSecurityPolicy was removed in Kubernetes 1.25', false),
  sameUnlessDefault(
    'containerSecurityContext',
    { privileged: true, readOnlyRootFilesystem: true },
    'same key, merged over the security context the chart sets from rebootMethod (privileged for "command", only CAP_KILL for "signal"); kured\'s default is left out',
  ),
  same('podSecurityContext'),
  sameUnlessDefault('hostNetwork', false),
  probe('livenessProbe', '/healthz'),
  probe('readinessProbe', '/readyz'),
  same('volumes'),
  same('volumeMounts'),
  same('initContainers'),
  {
    kured: 'metrics.create',
    to: 'metrics.serviceMonitor.enabled',
    why: 'a ServiceMonitor (and the Service it scrapes)',
    convert: (v) => ({
      set:
        v === true
          ? [
              ['metrics.serviceMonitor.enabled', true],
              ['metrics.service.enabled', true],
            ]
          : [],
    }),
  },
  same('metrics.namespace', "same key: the ServiceMonitor's namespace"),
  { kured: 'metrics.labels', to: 'metrics.serviceMonitor.labels', why: 'ServiceMonitor labels' },
  { kured: 'metrics.interval', to: 'metrics.serviceMonitor.interval', why: 'scrape interval' },
  { kured: 'metrics.scrapeTimeout', to: 'metrics.serviceMonitor.scrapeTimeout', why: 'scrape timeout' },
  { kured: 'service.create', to: 'metrics.service.enabled', why: 'the metrics Service' },
  { kured: 'service.port', to: 'metrics.service.port', why: 'the metrics Service port' },
  { kured: 'service.annotations', to: 'metrics.service.annotations', why: 'the metrics Service annotations' },
  same('service.name'),
  sameUnlessDefault('service.type', 'ClusterIP'),
  same('service.nodePort'),
  // Charts before 2.x kept these two at the top level.
  { kured: 'metricsHost', to: 'configuration.metricsHost', why: '--metrics-host' },
  { kured: 'metricsPort', to: 'configuration.metricsPort', why: '--metrics-port' },
  dropped(
    'configuration.useRebootSentinelHostPath',
    "not a flag: kured-ts always mounts the sentinel file's directory read-only (not used with rebootSentinelCommand)",
    true,
  ),
];

export function isObject(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

export function equal(a: unknown, b: unknown): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}
