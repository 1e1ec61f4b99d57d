// The node's hooks (--before-reboot-hook, --after-reboot-hook; issue 56): a Job from the hook's
// template (hook-job.ts) for this node and cycle, started once and awaited within --hook-timeout.
//
// Found by its name before it is made: a restarted agent, or a second agent of the node, awaits the
// Job the first one started (a create answered 409 is the same Job, read again). The timeout counts
// from the Job's creation, so that a restart does not reset it. Every read has the client's deadline;
// a read that fails is tried again at the next look, until the timeout. A Job that failed, was deleted,
// or did not finish in time fails the hook, with the reason; the cycle decides what follows.
import type { Clock } from '../clock/clock.js';
import { isConflict, isNotFound, statusCode, statusMessage } from '../kube/errors.js';
import type { Kube, ObjectRef } from '../kube/kube.js';
import { shortDuration } from '../text/duration.js';
import { errorText } from '../text/error-text.js';
import {
  createdAt,
  HOOK_LABEL,
  HOOK_NODE_LABEL,
  hookJobName,
  jobFromTemplate,
  jobState,
  nodeLabelProblem,
  type HookName,
  type JobState,
} from './hook-job.js';

/** What one run of a hook is about. */
interface Run {
  hook: HookName;
  template: string;
  /** The Job's name. */
  name: string;
  /** The Job, in words. */
  what: string;
}

/** A run's wait: its Job as last read (undefined until made), why it is not made yet, when the run began. */
interface Wait {
  job: unknown;
  trouble: string;
  began: number;
}

/** How starting the Job went: made (or found), failed for good, or to be tried again. */
type Started = { job: unknown } | { problem: string } | { retry: string };

/** Is `err` the API server's own trouble (5xx, 429, no status: no answer), not an answer about the request? */
function serverTrouble(err: unknown): boolean {
  const code = statusCode(err);
  return code === undefined || code === 429 || code >= 500;
}

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
   * not made again) and awaits its end. An answer about the API server (5xx, 429, no answer) is tried
   * again at the next look, within --hook-timeout; an answer about the request (the template missing,
   * a denial, an invalid Job, a name taken by another node's Job) fails the hook at once.
   */
  async run(hook: HookName, cycleStarted: string, watch: HookWatch): Promise<HookEnd> {
    const template = this.o.templates[hook];
    if (template === undefined) return { failed: `no template for the ${hook} hook`, job: '' };
    if (cycleStarted === '')
      return { failed: `the cycle record has no start to name the ${hook} hook's Job by`, job: '' };
    const name = hookJobName(template, this.o.nodeId, cycleStarted);
    const run: Run = { hook, template, name, what: `${hook} hook Job ${this.o.namespace}/${name}` };
    const wait: Wait = { job: undefined, trouble: '', began: this.o.clock.now().getTime() };
    for (;;) {
      const look = await this.look(run, wait, watch.signal);
      if (!('waited' in look)) return look;
      const lost = await watch.keepGoing();
      if (lost !== undefined) return { lost };
      const limit = shortDuration(this.o.timeoutMs);
      await watch.progress(`waiting for the ${run.what} (${look.running}; at most --hook-timeout ${limit})`);
      await this.o.clock.sleep(Math.min(POLL_MS, this.o.timeoutMs - look.waited), watch.signal);
      if (wait.job === undefined) continue;
      const read = await this.read(name, watch.signal);
      if ('gone' in read) return { failed: `${run.what} was deleted before it completed`, job: name };
      // a read that failed: the Job as last read, looked at again at the next poll
      if ('job' in read) wait.job = read.job;
    }
  }

  /** One look: the Job made when it is not yet, then its end, or how long it has run and how it stands. */
  private async look(
    run: Run,
    wait: Wait,
    signal: AbortSignal | undefined,
  ): Promise<HookEnd | { waited: number; running: string }> {
    const problem = wait.job === undefined ? await this.start(run, wait, signal) : undefined;
    if (problem !== undefined) return { failed: `${run.what}: ${problem}`, job: run.name };
    const job = wait.job;
    if (job !== undefined && !this.ours(job, run.hook))
      return { failed: `${run.what}: the name is taken by a Job for another node or hook`, job: run.name };
    const now = this.o.clock.now().getTime();
    // from the Job's creation (a restart does not reset it), never later than this process began
    const since = Math.min(job === undefined ? wait.began : (createdAt(job) ?? wait.began), wait.began, now);
    const state: JobState = job === undefined ? { running: `not made yet: ${wait.trouble}` } : jobState(job);
    const end = this.endOf(state, now - since, run.what, run.name);
    if (end !== undefined) return end;
    return { waited: now - since, running: 'running' in state ? state.running : '' };
  }

  /** Starts the run's Job into `wait` (or notes the API server's trouble); a problem for good, in words. */
  private async start(run: Run, wait: Wait, signal: AbortSignal | undefined): Promise<string | undefined> {
    const started = await this.startOnce(run.hook, run.template, run.name, signal);
    if ('problem' in started) return started.problem;
    if ('job' in started) wait.job = started.job;
    else wait.trouble = started.retry;
    return undefined;
  }

  /** Is `job` this node's Job of `hook` (its labels), not one another node's token made under its name? */
  private ours(job: unknown, hook: HookName): boolean {
    const labels = (job as { metadata?: { labels?: Record<string, string> } }).metadata?.labels ?? {};
    return labels[HOOK_LABEL] === hook && labels[HOOK_NODE_LABEL] === this.o.nodeId;
  }

  /** The hook's end for the Job's `state` after `waited` ms; undefined while it may still run. */
  private endOf(state: JobState, waited: number, what: string, job: string): HookEnd | undefined {
    if ('done' in state) return { done: true, job };
    if ('failed' in state) return { failed: `${what} failed: ${state.failed}`, job };
    if (waited < this.o.timeoutMs) return undefined;
    const limit = shortDuration(this.o.timeoutMs);
    return { failed: `${what} did not complete within --hook-timeout ${limit} (${state.running})`, job };
  }

  /**
   * The hook's Job: the one already made for this cycle, else made now from its template; or why it
   * cannot be (`problem`: for good; `retry`: the API server's trouble, tried again at the next look).
   */
  private async startOnce(
    hook: HookName,
    template: string,
    name: string,
    signal: AbortSignal | undefined,
  ): Promise<Started> {
    const found = await this.read(name, signal);
    if ('job' in found) return found;
    if ('error' in found) return { retry: `the Job cannot be read: ${found.error}` };
    const unfit = nodeLabelProblem(this.o.nodeId);
    if (unfit !== undefined) return { problem: unfit };
    const made = await this.fromTemplate(hook, template, name, signal);
    return 'job' in made ? this.create(name, made.job, signal) : made;
  }

  /** Creates the Job; a 409 is the same Job, made by another agent of the node or by a create whose answer was lost. */
  private async create(name: string, job: object, signal: AbortSignal | undefined): Promise<Started> {
    const create = this.o.kube.createObject?.bind(this.o.kube);
    if (create === undefined) return { problem: 'this client cannot make Jobs' };
    try {
      const { group, version, resource, namespace } = this.ref('jobs', name);
      return { job: await create({ group, version, resource, namespace }, job, signal) };
    } catch (err) {
      const again = isConflict(err) ? await this.read(name, signal) : undefined;
      if (again !== undefined && 'job' in again) return again;
      return serverTrouble(err)
        ? { retry: `not created: ${why(err)}` }
        : { problem: `not created: ${why(err)}` };
    }
  }

  /** The Job the template makes for this node, or why it makes none. */
  private async fromTemplate(
    hook: HookName,
    template: string,
    name: string,
    signal: AbortSignal | undefined,
  ): Promise<{ job: object } | { problem: string } | { retry: string }> {
    const where = `its template cronjob ${this.o.namespace}/${template}`;
    const get = this.o.kube.getObject?.bind(this.o.kube);
    if (get === undefined) return { problem: 'this client cannot read the template' };
    let cronJob: unknown;
    try {
      cronJob = await get(this.ref('cronjobs', template), signal);
    } catch (err) {
      if (serverTrouble(err)) return { retry: `${where}: ${why(err)}` };
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
