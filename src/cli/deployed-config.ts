// `kured-ts check` judges with the deployed agent's configuration (issue 58, item 2): the flags and
// KURED_* variables of the chart's DaemonSet whose pods run on the node, with the flags given on
// check's own command line over them. A laptop's defaults (no Prometheus, an all-day window) would
// otherwise answer for an agent that has neither.
//
// What cannot be read from here is said, not guessed: a variable taken from a Secret or a field
// (valueFrom), a flag this kured-ts does not know. --drain-rules names a file on the node; the
// chart mounts it from a ConfigMap, which is read instead.
import { Command } from 'commander';
import { FLAGS } from '../config/flags.js';
import { optionValues, type Env, type FlagValues } from '../config/parse.js';
import type { Kube, V1DaemonSet } from '../kube/kube.js';
import { CHART_SELECTOR } from './discover.js';
import { addFlags } from './shared.js';

/** The deployed agent's configuration, as read from its DaemonSet. */
export interface DeployedConfig {
  /** namespace/name of the DaemonSet read. */
  from: string;
  /** Its container's flags, by name. */
  values: FlagValues;
  /** Its container's KURED_* variables with a literal value. */
  env: Env;
  /** What could not be read: variables from elsewhere (valueFrom), flags this kured-ts does not know. */
  unread: string[];
  /** Files the agent reads on the node that the chart mounts from a ConfigMap: path → content. */
  files: Record<string, string>;
  /** Other DaemonSets of the chart whose pods could run on the node too. */
  others: string[];
  /** A path in the agent's container as the host sees it (its hostPath mounts); undefined where none mounts it. */
  onHost: (path: string) => string | undefined;
}

/** The flags whose values are paths in the agent's container, which `check --local` reads on the host. */
export const CONTAINER_PATH_FLAGS = ['reboot-sentinel', 'host-root'];

/** The agent's flags in `args`, and the arguments this flag table does not know. */
function parseArgs(args: readonly string[]): { values: FlagValues; unknown: string[] } {
  const cmd = addFlags(new Command().exitOverride().allowUnknownOption().allowExcessArguments(), FLAGS);
  cmd.configureOutput({ writeErr: () => undefined, writeOut: () => undefined });
  cmd.parse([...args], { from: 'user' });
  const unknown = cmd.args.filter((a) => a.startsWith('--')).map((a) => a.replace(/=.*$/, ''));
  return { values: optionValues(cmd.opts(), FLAGS), unknown };
}

/** Does the DaemonSet's nodeSelector let its pods run on a node with `labels`? */
function runsOn(ds: V1DaemonSet, labels: Readonly<Record<string, string>>): boolean {
  const selector = ds.spec?.template.spec?.nodeSelector ?? {};
  return Object.entries(selector).every(([k, v]) => labels[k] === v);
}

const nameOf = (ds: V1DaemonSet): string => `${ds.metadata?.namespace ?? ''}/${ds.metadata?.name ?? ''}`;

/** Where the DaemonSet mounts `path` from a ConfigMap: the ConfigMap's name and key; undefined otherwise. */
function configMapOf(ds: V1DaemonSet, path: string): { name: string; key: string } | undefined {
  const pod = ds.spec?.template.spec;
  if (pod === undefined) return undefined;
  const dir = (m: { mountPath: string }): string => m.mountPath.replace(/\/$/, '');
  const mount = (pod.containers[0]?.volumeMounts ?? []).find((m) => path.startsWith(`${dir(m)}/`));
  const name = pod.volumes?.find((v) => v.name === mount?.name)?.configMap?.name;
  if (mount === undefined || name === undefined) return undefined;
  return { name, key: path.slice(dir(mount).length + 1) };
}

/** Where the host has a path of the agent's container: the hostPath volume mounted over it. */
function hostPathOf(ds: V1DaemonSet): (path: string) => string | undefined {
  const pod = ds.spec?.template.spec;
  const mounts = [...(pod?.containers[0]?.volumeMounts ?? [])].sort(
    (a, b) => b.mountPath.length - a.mountPath.length,
  );
  return (path) => {
    const trim = (p: string): string => p.replace(/\/$/, '');
    const mount = mounts.find((m) => path === trim(m.mountPath) || path.startsWith(`${trim(m.mountPath)}/`));
    const host = pod?.volumes?.find((v) => v.name === mount?.name)?.hostPath?.path;
    if (mount === undefined || host === undefined) return undefined;
    const rest = path.slice(trim(mount.mountPath).length);
    return `${trim(host)}${rest}` || '/';
  };
}

/** The files of the agent's flags that the DaemonSet mounts from a ConfigMap, read through `kube`. */
async function mountedFiles(
  kube: Pick<Kube, 'getObject'>,
  ds: V1DaemonSet,
  paths: readonly string[],
  signal?: AbortSignal,
): Promise<Record<string, string>> {
  const files: Record<string, string> = {};
  const get = kube.getObject?.bind(kube);
  for (const path of paths) {
    const source = configMapOf(ds, path);
    if (source === undefined || get === undefined) continue;
    const ref = {
      group: '',
      version: 'v1',
      resource: 'configmaps',
      namespace: ds.metadata?.namespace,
      name: source.name,
    };
    const text = ((await get(ref, signal)) as { data?: Record<string, string> }).data?.[source.key];
    if (text !== undefined) files[path] = text;
  }
  return files;
}

/** The container's KURED_* variables with a literal value, and those it takes from elsewhere. */
function variablesOf(
  env: readonly { name: string; value?: string; valueFrom?: { secretKeyRef?: unknown } }[],
): {
  env: Record<string, string>;
  unread: string[];
} {
  const literal: Record<string, string> = {};
  const unread: string[] = [];
  for (const e of env) {
    if (!e.name.startsWith('KURED_') || e.name === 'KURED_NODE_ID') continue;
    if (e.value !== undefined) literal[e.name] = e.value;
    else
      unread.push(`${e.name} (from ${e.valueFrom?.secretKeyRef === undefined ? 'elsewhere' : 'a Secret'})`);
  }
  return { env: literal, unread };
}

/**
 * The configuration of the chart's agent on a node with `labels`: the first of the chart's DaemonSets
 * (by name) whose pods run there; undefined when none does.
 */
export async function deployedConfig(
  kube: Pick<Kube, 'listDaemonSets' | 'getObject'>,
  labels: Readonly<Record<string, string>>,
  signal?: AbortSignal,
): Promise<DeployedConfig | undefined> {
  const all = await kube.listDaemonSets(undefined, { labelSelector: CHART_SELECTOR }, signal);
  const here = all.filter((ds) => runsOn(ds, labels)).sort((a, b) => nameOf(a).localeCompare(nameOf(b)));
  const [ds, ...others] = here;
  const container = ds?.spec?.template.spec?.containers[0];
  if (ds === undefined || container === undefined) return undefined;
  const { values, unknown } = parseArgs(container.args ?? []);
  const variables = variablesOf(container.env ?? []);
  const unread = [...unknown.map((flag) => `${flag} (not a flag of this kured-ts)`), ...variables.unread];
  const env = variables.env;
  const paths = (values['drain-rules'] ?? []).filter((p) => p !== '');
  const files = await mountedFiles(kube, ds, paths, signal);
  return { from: nameOf(ds), values, env, unread, files, others: others.map(nameOf), onHost: hostPathOf(ds) };
}

/**
 * What check judged with, in one line: the deployed agent's configuration, or (`source` a reason) the
 * command line's and why not the deployed agent's.
 */
export function configurationWords(source: DeployedConfig | string, given: FlagValues): string {
  const cli = Object.keys(given).map((f) => `--${f}`);
  const over = cli.length === 0 ? '' : `; from the command line: ${cli.join(', ')}`;
  if (typeof source === 'string') return `this command line's and its KURED_* variables (${source})${over}`;
  const flags = Object.keys(source.values).length;
  const vars = Object.keys(source.env).length;
  const unread = source.unread.length === 0 ? '' : `; not read: ${source.unread.join(', ')}`;
  const others = source.others.length === 0 ? '' : `; also on the node: ${source.others.join(', ')}`;
  return `the deployed agent's (DaemonSet ${source.from}: ${flags} flags, ${vars} KURED_* variables)${over}${unread}${others}`;
}
