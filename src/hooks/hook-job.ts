// A per-node hook's Job, from its template (issue 56): the chart renders each hook (hooks.beforeReboot,
// hooks.afterReboot) as a suspended CronJob, its template; the agent instantiates it for its node and
// cycle as a Job named from both, so that a restarted agent finds the Job it started and never starts a
// second. The Job is the template's Job spec as the API server stored it, plus two labels on the Job and
// its pods (the hook, the node); the node's name reaches the containers through the downward API
// (HOOK_NODE_ENV, which the chart writes into every container of the template). Nothing else differs,
// so that the admission policy can admit exactly the template's pods (docs/security.md).
import { createHash } from 'node:crypto';

/** The two hooks: after the drain (and the data waits), and after the node is Ready again. */
export type HookName = 'before-reboot' | 'after-reboot';

/** On the template, the Job and its pods: which hook. */
export const HOOK_LABEL = 'kured-ts.dev/hook';
/** On the Job and its pods: the node the hook runs for. */
export const HOOK_NODE_LABEL = 'kured-ts.dev/hook-node';
/** The variable in every container of a hook's pods that holds the node's name (downward API). */
export const HOOK_NODE_ENV = 'KURED_TS_NODE';

/** A CronJob or Job name is at most this long with the suffix we add (a label value: 63). */
const JOB_NAME_MAX = 63;
const SUFFIX_LENGTH = 10;

/** A label value: at most 63 characters, alphanumeric at both ends. */
const LABEL_VALUE = /^(?:[A-Za-z0-9](?:[-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)$/;

/**
 * The Job of `template` for `node`'s cycle begun at `cycleStarted`: the template's name (cut to fit)
 * and a digest of the node and the cycle. The same for every agent of the node in the same cycle.
 */
export function hookJobName(template: string, node: string, cycleStarted: string): string {
  const digest = createHash('sha256')
    .update(`${node}\n${cycleStarted}`)
    .digest('hex')
    .slice(0, SUFFIX_LENGTH);
  const head = template.slice(0, JOB_NAME_MAX - SUFFIX_LENGTH - 1).replace(/[-.]+$/, '');
  return `${head}-${digest}`;
}

/** Why `node` cannot be a hook's node label, or undefined when it can. */
export function nodeLabelProblem(node: string): string | undefined {
  return LABEL_VALUE.test(node)
    ? undefined
    : `the node's name "${node}" is not a label value (at most 63 characters): hooks need it as ${HOOK_NODE_LABEL}`;
}

type Json = Record<string, unknown>;

function isObject(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function stringMap(value: unknown): Record<string, string> {
  if (!isObject(value)) return {};
  return Object.fromEntries(
    Object.entries(value).filter((e): e is [string, string] => typeof e[1] === 'string'),
  );
}

/** What the Job is made for. */
export interface HookJobFor {
  hook: HookName;
  /** The Job's name (hookJobName). */
  name: string;
  namespace: string;
  node: string;
}

/**
 * The Job of `cronJob` (the template, as read from the API server) for `to`, or why the template cannot
 * make one. The template's Job spec and pod spec are taken as they are; only the labels are added.
 */
export function jobFromTemplate(cronJob: unknown, to: HookJobFor): { job: Json } | { problem: string } {
  const jobSpec = at(cronJob, ['spec', 'jobTemplate', 'spec']);
  const pod = at(jobSpec, ['template']);
  if (jobSpec === undefined || pod === undefined || !isObject(pod.spec))
    return { problem: 'the template has no spec.jobTemplate.spec.template.spec' };
  const podMeta = at(pod, ['metadata']) ?? {};
  const ours = { [HOOK_LABEL]: to.hook, [HOOK_NODE_LABEL]: to.node };
  const annotations = stringMap(podMeta.annotations);
  return {
    job: {
      apiVersion: 'batch/v1',
      kind: 'Job',
      metadata: { name: to.name, namespace: to.namespace, labels: ours },
      spec: {
        ...jobSpec,
        template: {
          metadata: {
            labels: { ...stringMap(podMeta.labels), ...ours },
            ...(Object.keys(annotations).length === 0 ? {} : { annotations }),
          },
          spec: pod.spec,
        },
      },
    },
  };
}

/** The object at `path` under `value`, or undefined where one step is not an object. */
function at(value: unknown, path: readonly string[]): Json | undefined {
  let here: unknown = value;
  for (const key of path) here = isObject(here) ? here[key] : undefined;
  return isObject(here) ? here : undefined;
}

/** A hook Job as last read: finished, failed (why), or still running (how far). */
export type JobState = { done: true } | { failed: string } | { running: string };

/** Where `job` stands, from its conditions (Complete, Failed) and counts. */
export function jobState(job: unknown): JobState {
  const status = isObject(job) && isObject(job.status) ? job.status : {};
  const conditions = Array.isArray(status.conditions) ? status.conditions.filter(isObject) : [];
  const holds = (type: string): Json | undefined =>
    conditions.find((c) => c.type === type && c.status === 'True');
  if (holds('Complete') !== undefined) return { done: true };
  const failed = holds('Failed');
  if (failed !== undefined) {
    const reason = typeof failed.reason === 'string' ? failed.reason : 'Failed';
    const message = typeof failed.message === 'string' && failed.message !== '' ? `: ${failed.message}` : '';
    return { failed: `${reason}${message}` };
  }
  const count = (key: string): number => (typeof status[key] === 'number' ? status[key] : 0);
  return { running: `${count('active')} active, ${count('failed')} failed` };
}

/** The Job's creationTimestamp in ms since the epoch, or undefined when it has none readable. */
export function createdAt(job: unknown): number | undefined {
  const meta = isObject(job) && isObject(job.metadata) ? job.metadata : {};
  const at = typeof meta.creationTimestamp === 'string' ? Date.parse(meta.creationTimestamp) : NaN;
  return Number.isNaN(at) ? undefined : at;
}
