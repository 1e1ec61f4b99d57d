// Issue 56, item 4: per-node hooks as Jobs (--before-reboot-hook, --after-reboot-hook). The agent makes
// a Job from the hook's template (a suspended CronJob, as the chart renders it) for its node and cycle,
// after the drain and after the node is Ready again, and awaits it within --hook-timeout. Through the
// real client against the fake API server; no Job controller runs there, so the test writes each
// Job's status as the controller would. The rebooter records every reboot.
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { Agent, type Outcome } from '../../../src/agent/agent.js';
import type { Config } from '../../../src/config/config.js';
import { HOOK_LABEL, HOOK_NODE_ENV, HOOK_NODE_LABEL, hookJobName } from '../../../src/hooks/hook-job.js';
import { CYCLE_ANNOTATION, CYCLE_LABEL, parseCycle } from '../../../src/node/cycle.js';
import type { V1DaemonSet, V1Node } from '../../../src/kube/kube.js';
import { QUARANTINE_ANNOTATION, QUARANTINE_LABEL, parseQuarantine } from '../../../src/node/quarantine.js';
import type { FakeApiServer } from '../../../src/sim/fake-api-server.js';
import { startClusterApiServer } from '../../fakes/cluster-api-server.js';
import { lockHolders, nodeStatus, storedNode } from '../../fakes/cluster-reads.js';
import { FakeClock } from '../../fakes/fake-clock.js';
import { kuredDaemonSet, readyNode, webPod } from '../../fakes/kube-objects.js';
import { steppedAgent, steppedConfig } from '../../fakes/stepped-agent.js';
import { waitFor } from '../../fakes/wait-for.js';

/** The agents' clock: a Monday morning, inside every window the tests' flags open, whatever day they run. */
const MONDAY = '2026-01-05T10:00:00Z';
const NS = 'kube-system';
const BEFORE = 'kured-ts-before-reboot';
const AFTER = 'kured-ts-after-reboot';

interface Job {
  metadata: { name: string; namespace: string; labels?: Record<string, string> };
  spec: {
    template: {
      metadata?: { labels?: Record<string, string> };
      spec: { containers: { image: string; env?: { name: string }[] }[] };
    };
  };
  status?: { conditions?: { type: string; status: string; reason?: string; message?: string }[] };
}

let server: FakeApiServer;
let reboots: number;
/** The host's need: cleared by the reboot, as a package manager's sentinel is. */
let needed: boolean;

/** A hook's template as the chart renders it: suspended, the node's name given by the downward API. */
function template(name: string, hook: string, image: string): object {
  return {
    apiVersion: 'batch/v1',
    kind: 'CronJob',
    metadata: { name, namespace: NS, labels: { [HOOK_LABEL]: hook } },
    spec: {
      schedule: '0 0 31 2 *',
      suspend: true,
      jobTemplate: {
        spec: {
          backoffLimit: 0,
          template: {
            metadata: { labels: { app: 'ceph-noout' } },
            spec: {
              restartPolicy: 'Never',
              containers: [
                {
                  name: 'hook',
                  image,
                  env: [
                    {
                      name: HOOK_NODE_ENV,
                      valueFrom: { fieldRef: { fieldPath: `metadata.labels['${HOOK_NODE_LABEL}']` } },
                    },
                  ],
                },
              ],
            },
          },
        },
      },
    },
  };
}

beforeEach(async () => {
  server = await startClusterApiServer();
  reboots = 0;
  needed = true;
  server.create('daemonsets', kuredDaemonSet());
  server.create<V1Node>('nodes', readyNode('n1'));
  server.create('pods', webPod('web-1', 'n1'));
  server.create('cronjobs', template(BEFORE, 'before-reboot', 'quay.io/ceph/ceph:v18'));
  server.create('cronjobs', template(AFTER, 'after-reboot', 'quay.io/ceph/ceph:v18'));
});

afterEach(async () => {
  await server.close();
});

const node = (): V1Node => storedNode(server, 'n1');
const jobs = (): Job[] => server.list<Job>('jobs', NS);

/** n1's agent with these hooks; its reboot comes back at once with a new bootID and no need. */
function agent(clock: FakeClock, overrides: Partial<Config>): Agent {
  const atReboot = (): void => {
    reboots++;
    needed = false;
  };
  const config = steppedConfig({ hookNamespace: NS, ...overrides });
  return steppedAgent(server, clock, config, { atReboot, required: () => needed });
}

/** The Job's controller's word: `type` (Complete or Failed) True. */
function finish(job: Job, type: 'Complete' | 'Failed', message = ''): void {
  const condition = {
    type,
    status: 'True',
    reason: type === 'Failed' ? 'BackoffLimitExceeded' : type,
    message,
  };
  server.update('jobs', { ...job, status: { conditions: [condition] } });
}

/** Starts a tick; resolves once it waits for a hook Job (one exists and the clock has a sleep pending). */
async function tickUntilJob(
  a: Agent,
  clock: FakeClock,
  signal?: AbortSignal,
): Promise<{ tick: Promise<Outcome> }> {
  const tick = a.tick(signal);
  await waitFor(() => jobs().length > 0 && clock.pending > 0, 'the agent waits for its hook Job');
  return { tick };
}

/** The one hook Job there is. */
function onlyJob(): Job {
  const all = jobs();
  if (all.length !== 1) throw new Error(`expected one hook Job, found ${all.length}`);
  return all[0]!;
}

describe('the before-reboot hook', () => {
  it('runs the template for this node after the drain, and reboots only once its Job completes', async () => {
    const clock = new FakeClock(MONDAY);
    const { tick } = await tickUntilJob(agent(clock, { beforeRebootHook: BEFORE }), clock);
    const job = onlyJob();
    expect(job.metadata.labels).toEqual({ [HOOK_LABEL]: 'before-reboot', [HOOK_NODE_LABEL]: 'n1' });
    expect(job.spec.template.metadata?.labels).toEqual({
      app: 'ceph-noout',
      [HOOK_LABEL]: 'before-reboot',
      [HOOK_NODE_LABEL]: 'n1',
    });
    expect(job.spec.template.spec.containers[0]?.env?.map((e) => e.name)).toEqual([HOOK_NODE_ENV]);
    // drained and cordoned, holding its slot, not rebooted while the hook runs
    expect(
      server.list('pods').filter((p) => (p as { spec?: { nodeName?: string } }).spec?.nodeName === 'n1'),
    ).toEqual([]);
    expect(node().spec?.unschedulable).toBe(true);
    expect(lockHolders(server)).toEqual(['n1']);
    expect(nodeStatus(server, 'n1')?.reason).toMatch(
      /^drained; waiting for the before-reboot hook Job kube-system\//,
    );
    await clock.advance(5_000);
    expect(reboots).toBe(0);
    finish(job, 'Complete');
    await clock.advance(5_000);
    expect((await tick).kind).toBe('rebooting');
    expect(reboots).toBe(1);
    expect(jobs()).toHaveLength(1);
  }, 30_000);

  it.each([
    [
      'its Job fails',
      20 * 60_000,
      (job: Job): void => {
        finish(job, 'Failed', 'Job has reached the specified backoff limit');
      },
      /failed: BackoffLimitExceeded: Job has reached/,
    ],
    [
      'its Job outlasts --hook-timeout',
      20_000,
      () => undefined,
      /did not complete within --hook-timeout 20s/,
    ],
  ])(
    'ends the cycle as a failed drain when %s: quarantined hook-failed naming the Job, no reboot',
    async (_, timeout, act, why) => {
      const clock = new FakeClock(MONDAY);
      const { tick } = await tickUntilJob(
        agent(clock, { beforeRebootHook: BEFORE, hookTimeoutMs: timeout }),
        clock,
      );
      const job = onlyJob();
      act(job);
      let outcome: Outcome | undefined;
      void tick.then((o) => (outcome = o));
      for (let step = 0; step < 10 && outcome === undefined; step++) {
        await clock.advance(5_000);
        await waitFor(() => outcome !== undefined || clock.pending > 0, 'the agent looks again');
      }
      expect(outcome?.kind).toBe('quarantined');
      expect(outcome?.reason).toMatch(why);
      expect(reboots).toBe(0);
      expect(node().metadata?.labels?.[QUARANTINE_LABEL]).toBe('hook-failed');
      const record = parseQuarantine(node().metadata?.annotations?.[QUARANTINE_ANNOTATION]);
      expect(record).toMatchObject({ kind: 'before-reboot-hook', hook: `${NS}/${job.metadata.name}` });
      expect(lockHolders(server)).toEqual([]);
      expect(node().spec?.unschedulable).toBeFalsy();
    },
    30_000,
  );

  it('awaits, after a restart, the Job the agent before it started, and never starts a second', async () => {
    const clock = new FakeClock(MONDAY);
    const first = new AbortController();
    const { tick } = await tickUntilJob(agent(clock, { beforeRebootHook: BEFORE }), clock, first.signal);
    first.abort(new Error('the pod was replaced'));
    await tick.catch(() => undefined);
    const again = agent(clock, { beforeRebootHook: BEFORE }).tick();
    await waitFor(
      () => clock.pending > 0 && nodeStatus(server, 'n1')?.phase === 'held-after-drain',
      'the new agent waits',
    );
    expect(jobs()).toHaveLength(1);
    finish(onlyJob(), 'Complete');
    await clock.advance(5_000);
    expect((await again).kind).toBe('rebooting');
    expect(jobs()).toHaveLength(1);
    expect(reboots).toBe(1);
  }, 30_000);

  it('ends the cycle before the reboot when its slot is lost while the hook runs (another node in its cycle took it): no reboot', async () => {
    const clock = new FakeClock(MONDAY);
    const { tick } = await tickUntilJob(agent(clock, { beforeRebootHook: BEFORE }), clock);
    // the lock wiped by an operator meanwhile, and its slot taken by n2, in its own cycle
    const n2 = readyNode('n2');
    n2.metadata = { ...n2.metadata, labels: { [CYCLE_LABEL]: 'true' } };
    n2.spec = { unschedulable: true };
    server.create<V1Node>('nodes', n2);
    const ds = server.get<V1DaemonSet>('daemonsets', NS, 'kured')!;
    const entry = { nodeID: 'n2', metadata: { unschedulable: false }, created: MONDAY, TTL: 0 };
    ds.metadata = { ...ds.metadata, annotations: { 'weave.works/kured-node-lock': JSON.stringify(entry) } };
    server.update('daemonsets', ds);
    let outcome: Outcome | undefined;
    void tick.then((o) => (outcome = o));
    for (let step = 0; step < 3 && outcome === undefined; step++) {
      // the Job completes too late: the slot was lost first
      if (step === 1) finish(onlyJob(), 'Complete');
      await clock.advance(5_000);
      await waitFor(() => outcome !== undefined || clock.pending > 0, 'n1 looks again');
    }
    expect(outcome?.kind).toBe('aborted');
    expect(outcome?.reason).toMatch(/while the before-reboot hook ran/);
    expect(reboots).toBe(0);
    expect(node().spec?.unschedulable).toBeFalsy();
    expect(lockHolders(server)).toEqual(['n2']);
  }, 30_000);

  it("makes its Job through the API server's 500s within --hook-timeout, and runs the hook once they pass", async () => {
    const clock = new FakeClock(MONDAY);
    server.injectFailure({ method: 'POST', pathIncludes: '/jobs' }, 500, 2, {
      message: 'etcdserver: request timed out',
    });
    const tick = agent(clock, { beforeRebootHook: BEFORE }).tick();
    await waitFor(
      () => clock.pending > 0 && nodeStatus(server, 'n1')?.phase === 'held-after-drain',
      'n1 waits for its hook',
    );
    expect(nodeStatus(server, 'n1')?.reason).toMatch(
      /not made yet: not created: etcdserver: request timed out/,
    );
    expect(jobs()).toEqual([]);
    // two looks fail (the 500s), the third makes the Job; the agent then sleeps until its next look
    for (let look = 0; look < 2; look++) {
      await clock.advance(5_000);
      await waitFor(() => clock.pending > 0, 'n1 looks again');
    }
    finish(onlyJob(), 'Complete');
    await clock.advance(5_000);
    expect((await tick).kind).toBe('rebooting');
    expect(reboots).toBe(1);
  }, 30_000);

  it("refuses a Job another node's token made under its Job's name: quarantined, no reboot", async () => {
    const clock = new FakeClock(MONDAY);
    // hold the agent's own create back while the thief, who read the cycle's start, takes the name
    server.injectFailure({ method: 'POST', pathIncludes: '/jobs' }, 500, 1);
    const tick = agent(clock, { beforeRebootHook: BEFORE }).tick();
    await waitFor(
      () => clock.pending > 0 && nodeStatus(server, 'n1')?.phase === 'held-after-drain',
      'n1 waits for its hook',
    );
    const started = parseCycle(node().metadata?.annotations?.[CYCLE_ANNOTATION])?.started ?? '';
    const squat = template(BEFORE, 'before-reboot', 'quay.io/ceph/ceph:v18') as {
      spec: { jobTemplate: { spec: object } };
    };
    server.create('jobs', {
      apiVersion: 'batch/v1',
      kind: 'Job',
      metadata: {
        name: hookJobName(BEFORE, 'n1', started),
        namespace: NS,
        labels: { [HOOK_LABEL]: 'before-reboot', [HOOK_NODE_LABEL]: 'n2' },
      },
      spec: squat.spec.jobTemplate.spec,
    });
    await clock.advance(5_000);
    const outcome = await tick;
    expect(outcome.kind).toBe('quarantined');
    expect(outcome.reason).toMatch(/the name is taken by a Job for another node or hook/);
    expect(reboots).toBe(0);
  }, 30_000);

  it('refuses to run a hook whose template is missing: the cycle ends quarantined, naming the template', async () => {
    const clock = new FakeClock(MONDAY);
    const outcome = await agent(clock, { beforeRebootHook: 'no-such-template' }).tick();
    expect(outcome.kind).toBe('quarantined');
    expect(outcome.reason).toMatch(/its template cronjob kube-system\/no-such-template: not found/);
    expect(reboots).toBe(0);
    expect(jobs()).toEqual([]);
  }, 30_000);
});

describe('the after-reboot hook', () => {
  /** Reboots n1, then starts the tick after the reboot and resolves once it waits for the hook's Job. */
  async function rebootedAndWaiting(clock: FakeClock): Promise<{ a: Agent; tick: Promise<Outcome> }> {
    const a = agent(clock, { afterRebootHook: AFTER });
    expect((await a.tick()).kind).toBe('rebooting');
    expect(jobs()).toEqual([]);
    return { a, ...(await tickUntilJob(a, clock)) };
  }

  it('runs once the node is Ready, and uncordons and releases only once its Job completes', async () => {
    const clock = new FakeClock(MONDAY);
    const { tick } = await rebootedAndWaiting(clock);
    expect(onlyJob().metadata.labels?.[HOOK_LABEL]).toBe('after-reboot');
    expect(node().spec?.unschedulable).toBe(true);
    expect(lockHolders(server)).toEqual(['n1']);
    finish(onlyJob(), 'Complete');
    await clock.advance(5_000);
    expect((await tick).kind).toBe('completed');
    expect(node().spec?.unschedulable).toBeFalsy();
    expect(lockHolders(server)).toEqual([]);
  }, 30_000);

  it('does not uncordon a node past --post-reboot-timeout without its hook: kept cordoned and quarantined, no Job', async () => {
    const clock = new FakeClock(MONDAY);
    const a = agent(clock, {
      afterRebootHook: AFTER,
      postRebootTimeoutMs: 60_000,
      onPostRebootTimeout: 'release',
    });
    expect((await a.tick()).kind).toBe('rebooting');
    const n = node();
    n.status = { ...n.status, conditions: [{ type: 'Ready', status: 'False' }] };
    server.update('nodes', n);
    expect((await a.tick()).kind).toBe('verifying');
    await clock.advance(61_000);
    const outcome = await a.tick();
    expect(outcome.kind).toBe('quarantined');
    expect(outcome.reason).toMatch(
      /not ready 1m after the reboot: .*the after-reboot hook cannot run on a node not ready/,
    );
    expect(node().spec?.unschedulable).toBe(true);
    expect(node().metadata?.labels?.[QUARANTINE_LABEL]).toBe('hook-failed');
    expect(lockHolders(server)).toEqual([]);
    expect(jobs()).toEqual([]);
  }, 30_000);

  it('leaves a node whose hook failed cordoned and quarantined until an operator removes the label', async () => {
    const clock = new FakeClock(MONDAY);
    const { a, tick } = await rebootedAndWaiting(clock);
    finish(onlyJob(), 'Failed', 'noout could not be unset');
    await clock.advance(5_000);
    const outcome = await tick;
    expect(outcome.kind).toBe('quarantined');
    expect(outcome.reason).toMatch(
      /^rebooted, but after-reboot hook Job .* failed: BackoffLimitExceeded: noout could not be unset: quarantined/,
    );
    expect(lockHolders(server)).toEqual([]);
    // no reboot needed any more: the quarantine and its cordon stay, pass after pass
    for (let pass = 0; pass < 3; pass++) {
      expect((await a.tick()).kind).toBe('idle');
      expect(node().spec?.unschedulable).toBe(true);
      expect(node().metadata?.labels?.[QUARANTINE_LABEL]).toBe('hook-failed');
    }
    const n = node();
    delete n.metadata?.labels?.[QUARANTINE_LABEL];
    server.update('nodes', n);
    await a.tick();
    expect(node().spec?.unschedulable).toBeFalsy();
    expect(node().metadata?.annotations?.[QUARANTINE_ANNOTATION]).toBeUndefined();
    expect(reboots).toBe(1);
  }, 30_000);
});
