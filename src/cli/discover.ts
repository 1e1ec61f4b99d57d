// Which DaemonSet carries the lock and the fleet pause, when the operator did not say: the one the
// agents of the chart's DaemonSet(s) name with their own --ds-namespace/--ds-name (the chart
// renders both; the agent's defaults, kube-system/kured, otherwise). The chart's DaemonSets are
// found by its label; more than one lock between them is ambiguous and said so in one line.
import type { Kube, V1DaemonSet } from '../kube/kube.js';
import { flagDefault } from '../config/flags.js';

/** The label every DaemonSet of the kured-ts chart carries. */
export const CHART_SELECTOR = 'app.kubernetes.io/name=kured-ts';

/** kured's and the agent's defaults. */
/** The DaemonSet that carries the lock. */
export interface DaemonSetRef {
  /** --ds-namespace. */
  dsNamespace: string;
  /** --ds-name. */
  dsName: string;
}

const DEFAULT_REF: DaemonSetRef = {
  dsNamespace: flagDefault('ds-namespace'),
  dsName: flagDefault('ds-name'),
};

export type Discovery =
  { kind: 'found'; ref: DaemonSetRef } | { kind: 'none' } | { kind: 'ambiguous'; candidates: string[] };

/** The value of `--name=value` / `--name value` in `args`, else of env `envName`, else undefined. */
function flagValue(
  args: readonly string[],
  env: readonly { name: string; value?: string }[],
  flag: string,
  envName: string,
): string | undefined {
  for (let i = 0; i < args.length; i++) {
    const arg = args[i] ?? '';
    if (arg.startsWith(`--${flag}=`)) return arg.slice(flag.length + 3);
    if (arg === `--${flag}`) return args[i + 1];
  }
  const fromEnv = env.find((e) => e.name === envName)?.value;
  return fromEnv === '' ? undefined : fromEnv;
}

/** The lock DaemonSet the agents of `ds` use, from their container's args and env. */
function lockOf(ds: V1DaemonSet): DaemonSetRef {
  const container = ds.spec?.template.spec?.containers[0];
  const args = container?.args ?? [];
  const env = container?.env ?? [];
  return {
    dsNamespace: flagValue(args, env, 'ds-namespace', 'KURED_DS_NAMESPACE') ?? DEFAULT_REF.dsNamespace,
    dsName: flagValue(args, env, 'ds-name', 'KURED_DS_NAME') ?? DEFAULT_REF.dsName,
  };
}

/** Finds the lock DaemonSet of the chart's agents, in `namespace` or everywhere. */
export async function discoverDaemonSet(
  kube: Kube,
  namespace: string | undefined,
  signal?: AbortSignal,
): Promise<Discovery> {
  const found = await kube.listDaemonSets(namespace, { labelSelector: CHART_SELECTOR }, signal);
  const locks = new Map<string, { ref: DaemonSetRef; from: string[] }>();
  for (const ds of found) {
    const ref = lockOf(ds);
    const key = `${ref.dsNamespace}/${ref.dsName}`;
    const from = `${ds.metadata?.namespace ?? ''}/${ds.metadata?.name ?? ''}`;
    const entry = locks.get(key) ?? { ref, from: [] };
    entry.from.push(from);
    locks.set(key, entry);
  }
  const all = [...locks.values()];
  const [only] = all;
  if (only === undefined) return { kind: 'none' };
  if (all.length === 1) return { kind: 'found', ref: only.ref };
  return {
    kind: 'ambiguous',
    candidates: all.map((l) => `${l.ref.dsNamespace}/${l.ref.dsName} (agents of ${l.from.join(', ')})`),
  };
}
