// The node's hooks (--before-reboot-hook, --after-reboot-hook; issue 56): a Job from the hook's
// template (hook-job.ts) for this node and cycle, started once and awaited within --hook-timeout.
//
// Found by its name before it is made: a restarted agent, or a second agent of the node, awaits the
// Job the first one started (a create answered 409 is the same Job, read again). The timeout counts
// from the Job's creation, so that a restart does not reset it. Every read has the client's deadline;
// a read that fails is tried again at the next look, until the timeout. A Job that failed, was deleted,
// or did not finish in time fails the hook, with the reason; the cycle decides what follows.
import type { Clock } from '../clock/clock.js';
import { isConflict, isNotFound, statusMessage } from '../kube/errors.js';
import type { Kube, ObjectRef } from '../kube/kube.js';
import { shortDuration } from '../text/duration.js';
import { errorText } from '../text/error-text.js';
import {
  createdAt,
  hookJobName,
  jobFromTemplate,
  jobState,
  nodeLabelProblem,
  type HookName,
  type JobState,
} from './hook-job.js';

/** An API error in words: the server's message, else the error's. */
function why(err: unknown): string {
  return statusMessage(err) || errorText(err);
}

/** How often a running hook Job is read again. */
const POLL_MS = 5_000;

/** How a hook ended: its Job completed, failed (why), or the cycle lost its slot meanwhile. */
export type HookEnd = { done: true; job: string } | { failed: string; job: string } | { lost: string };

/** What the wait asks of the cycle while the Job runs. */
export interface HookWatch {
  signal?: AbortSignal;
  /** Why the cycle cannot go on (its slot lost), or undefined to go on waiting. */
  keepGoing(): Promise<string | undefined>;
  /** Says how the Job stands (the node's status). */
  progress(reason: string): Promise<void>;
}

export interface HooksOptions {
  kube: Pick<Kube, 'getObject' | 'createObject'>;
  clock: Clock;
  nodeId: string;
  /** Where the templates are and the Jobs go. */
  namespace: string;
  /** The CronJob that is each hook's template; a hook without one does not run. */
  templates: Partial<Record<HookName, string>>;
  /** --hook-timeout. */
  timeoutMs: number;
}

export class Hooks {
  constructor(private readonly o: HooksOptions) {}

  /** Where the templates are and the Jobs go. */
  get namespace(): string {
    return this.o.namespace;
  }

  /** Does `hook` run (a template is named for it)? */
  has(hook: HookName): boolean {
    return this.o.templates[hook] !== undefined;
  }

  private ref(resource: 'jobs' | 'cronjobs', name: string): ObjectRef {
    return { group: 'batch', version: 'v1', resource, namespace: this.o.namespace, name };
  }

  /**
   * Runs `hook` for the cycle begun at `cycleStarted` (once: the Job of an earlier look is awaited,
   * not made again) and awaits its end.
   */
  async run(hook: HookName, cycleStarted: string, watch: HookWatch): Promise<HookEnd> {
    const template = this.o.templates[hook];
    if (template === undefined) return { failed: `no template for the ${hook} hook`, job: '' };
    const name = hookJobName(template, this.o.nodeId, cycleStarted);
    const what = `${hook} hook Job ${this.o.namespace}/${name}`;
    const started = await this.startOnce(hook, template, name, watch.signal);
    if ('problem' in started) return { failed: `${what}: ${started.problem}`, job: name };
    let job: unknown = started.job;
    const now = this.o.clock.now().getTime();
    const since = Math.min(createdAt(job) ?? now, now);
    for (;;) {
      const state = jobState(job);
      const waited = this.o.clock.now().getTime() - since;
      const end = this.endOf(state, waited, what, name);
      if (end !== undefined) return end;
      const lost = await watch.keepGoing();
      if (lost !== undefined) return { lost };
      const running = 'running' in state ? state.running : '';
      await watch.progress(
        `waiting for the ${what} (${running}; at most --hook-timeout ${shortDuration(this.o.timeoutMs)})`,
      );
      await this.o.clock.sleep(Math.min(POLL_MS, this.o.timeoutMs - waited), watch.signal);
      const read = await this.read(name, watch.signal);
      if ('gone' in read) return { failed: `${what} was deleted before it completed`, job: name };
      // a read that failed: the Job as last read, looked at again at the next poll
      if ('job' in read) job = read.job;
    }
  }

  /** The hook's end for the Job's `state` after `waited` ms; undefined while it may still run. */
  private endOf(state: JobState, waited: number, what: string, job: string): HookEnd | undefined {
    if ('done' in state) return { done: true, job };
    if ('failed' in state) return { failed: `${what} failed: ${state.failed}`, job };
    if (waited < this.o.timeoutMs) return undefined;
    const limit = shortDuration(this.o.timeoutMs);
    return { failed: `${what} did not complete within --hook-timeout ${limit} (${state.running})`, job };
  }

  /** The hook's Job: the one already made for this cycle, else made now from its template. */
  private async startOnce(
    hook: HookName,
    template: string,
    name: string,
    signal: AbortSignal | undefined,
  ): Promise<{ job: unknown } | { problem: string }> {
    const found = await this.read(name, signal);
    if ('job' in found) return found;
    if ('error' in found) return { problem: `cannot be read: ${found.error}` };
    const unfit = nodeLabelProblem(this.o.nodeId);
    if (unfit !== undefined) return { problem: unfit };
    const made = await this.fromTemplate(hook, template, name, signal);
    return 'problem' in made ? made : this.create(name, made.job, signal);
  }

  /** Creates the Job; a 409 is the same Job, made by another agent of the node or by a create whose answer was lost. */
  private async create(
    name: string,
    job: object,
    signal: AbortSignal | undefined,
  ): Promise<{ job: unknown } | { problem: string }> {
    const create = this.o.kube.createObject?.bind(this.o.kube);
    if (create === undefined) return { problem: 'this client cannot make Jobs' };
    try {
      const { group, version, resource, namespace } = this.ref('jobs', name);
      return { job: await create({ group, version, resource, namespace }, job, signal) };
    } catch (err) {
      const again = isConflict(err) ? await this.read(name, signal) : undefined;
      if (again !== undefined && 'job' in again) return again;
      return { problem: `not created: ${why(err)}` };
    }
  }

  /** The Job the template makes for this node, or why it makes none. */
  private async fromTemplate(
    hook: HookName,
    template: string,
    name: string,
    signal: AbortSignal | undefined,
  ): Promise<{ job: object } | { problem: string }> {
    const where = `its template cronjob ${this.o.namespace}/${template}`;
    const get = this.o.kube.getObject?.bind(this.o.kube);
    if (get === undefined) return { problem: 'this client cannot read the template' };
    let cronJob: unknown;
    try {
      cronJob = await get(this.ref('cronjobs', template), signal);
    } catch (err) {
      return { problem: `${where}: ${isNotFound(err) ? 'not found' : why(err)}` };
    }
    const made = jobFromTemplate(cronJob, { hook, name, namespace: this.o.namespace, node: this.o.nodeId });
    return 'problem' in made ? { problem: `${where}: ${made.problem}` } : made;
  }

  /** One read of the Job: it, gone (404), or the error. */
  private async read(
    name: string,
    signal: AbortSignal | undefined,
  ): Promise<{ job: unknown } | { gone: true } | { error: string }> {
    const get = this.o.kube.getObject?.bind(this.o.kube);
    if (get === undefined) return { error: 'this client cannot read Jobs' };
    try {
      return { job: await get(this.ref('jobs', name), signal) };
    } catch (err) {
      if (isNotFound(err)) return { gone: true };
      return { error: why(err) };
    }
  }
}
