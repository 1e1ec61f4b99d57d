import { describe, expect, it } from '@jest/globals';
import { Agent, type AgentConfig, type Outcome } from '../../src/agent/agent.js';
import { CYCLE_ANNOTATION, CYCLE_LABEL, parseCycle, type CycleRecord } from '../../src/node/cycle.js';
import { STATUS_ANNOTATION, parseStatus } from '../../src/node/status.js';
import { EXCLUDE_LB_LABEL } from '../../src/node/cycle-marks.js';
import { REBOOT_GRACE_MS } from '../../src/agent/decision/phase.js';
import { AGENT_DEFAULTS, FakeBlocker, FakeCluster, settle } from '../fakes/fake-cluster.js';

const TAINT = AGENT_DEFAULTS.preferNoScheduleTaint;

function agentOn(cluster: FakeCluster, config: Partial<AgentConfig> = {}): Agent {
  return new Agent({ ...AGENT_DEFAULTS, ...config }, cluster.deps());
}

async function tick(cluster: FakeCluster, config: Partial<AgentConfig> = {}): Promise<Outcome> {
  return settle(cluster.clock, agentOn(cluster, config).tick());
}

function cycleOf(cluster: FakeCluster): CycleRecord | undefined {
  return parseCycle(cluster.node.annotations[CYCLE_ANNOTATION]);
}

function inCycle(cluster: FakeCluster): boolean {
  return (
    cluster.node.labels[CYCLE_LABEL] === 'true' && cluster.node.annotations[CYCLE_ANNOTATION] !== undefined
  );
}

function hasTaint(cluster: FakeCluster): boolean {
  return cluster.node.taints.some((t) => t.key === TAINT && t.effect === 'PreferNoSchedule');
}

describe('agent: before the lock', () => {
  it('records in the cycle when the need began, as the status kept it across an agent restart', async () => {
    const cluster = new FakeCluster();
    cluster.sentinel = true;
    cluster.windowOpen = false;
    expect((await tick(cluster)).kind).toBe('outside-window');
    const since = parseStatus(cluster.node.annotations[STATUS_ANNOTATION])?.requiredSince;
    expect(since).toBe(cluster.clock.now().toISOString());
    await cluster.clock.advance(2 * 3_600_000);
    cluster.windowOpen = true;
    await tick(cluster); // each tick is a new agent: a restart two hours on
    expect(inCycle(cluster)).toBe(true);
    expect(cycleOf(cluster)?.requiredAt).toBe(since);
  });

  it('reports idle and removes a leftover taint when no reboot is required', async () => {
    const cluster = new FakeCluster();
    cluster.node.taints.push(
      { key: TAINT, effect: 'PreferNoSchedule' },
      { key: 'user', effect: 'NoSchedule' },
    );
    const outcome = await tick(cluster);
    expect(outcome.kind).toBe('idle');
    expect(cluster.node.taints).toEqual([{ key: 'user', effect: 'NoSchedule' }]);
    expect(cluster.phases()).toEqual(['idle']);
    expect(cluster.metrics.rebootRequired).toBe(false);
  });

  it('treats a sentinel error as not required, leaves the taint alone and counts it', async () => {
    const cluster = new FakeCluster();
    cluster.sentinel = 'needs-restarting: exit 2';
    cluster.node.taints.push({ key: TAINT, effect: 'PreferNoSchedule' });
    const outcome = await tick(cluster);
    expect(outcome).toEqual({ kind: 'sentinel-error', reason: 'needs-restarting: exit 2' });
    expect(hasTaint(cluster)).toBe(true);
    expect(cluster.metrics.sentinelErrors).toBe(1);
    expect(cluster.table.holders()).toEqual([]);
    expect(cluster.reboots).toEqual([]);
  });

  it('taints at once but waits outside the maintenance window, without the lock', async () => {
    const cluster = new FakeCluster();
    cluster.sentinel = true;
    cluster.windowOpen = false;
    const outcome = await tick(cluster);
    expect(outcome.kind).toBe('outside-window');
    expect(outcome.reason).toContain('opens 2026-01-06T02:00:00.000Z');
    expect(hasTaint(cluster)).toBe(true);
    expect(cluster.table.holders()).toEqual([]);
    expect(cluster.eventReasons()).toEqual(['RebootRequired']);
  });

  it.each([
    [
      'a blocking verdict',
      { blocked: true as const, reason: 'alert HighErrorRate firing' },
      'alert HighErrorRate firing',
    ],
    ['a blocker that throws', new Error('prometheus unreachable'), 'prometheus: prometheus unreachable'],
  ])('is blocked by %s, taints anyway and takes no lock', async (_name, verdict, reason) => {
    const cluster = new FakeCluster();
    cluster.sentinel = true;
    const blocker = new FakeBlocker('prometheus');
    blocker.verdict = verdict;
    cluster.blockers.push(new FakeBlocker('pause'), blocker);
    const outcome = await tick(cluster);
    expect(outcome).toEqual({ kind: 'blocked', reason, blocker: 'prometheus' });
    expect(hasTaint(cluster)).toBe(true);
    expect(cluster.table.holders()).toEqual([]);
    expect(cluster.eventReasons()).toEqual(['RebootRequired', 'RebootBlocked']);
    expect(cluster.node.statuses.at(-1)).toMatchObject({ phase: 'blocked', reason, bootID: 'boot-1' });
    expect(cluster.metrics.blocked).toBe('prometheus');
  });

  it.each([
    {
      name: 'a blocked node stays untainted',
      setup: (c: FakeCluster) => {
        const blocker = new FakeBlocker('pods');
        blocker.verdict = { blocked: true, reason: 'blocking pod batch/job-1' };
        c.blockers.push(blocker);
      },
      kind: 'blocked',
      tainted: false,
    },
    {
      name: 'a node outside the window stays untainted',
      setup: (c: FakeCluster) => {
        c.windowOpen = false;
      },
      kind: 'outside-window',
      tainted: false,
    },
    {
      name: 'a node waiting for a slot is tainted, as kured does on lock contention',
      setup: (c: FakeCluster) => {
        c.table.takeFor('n2');
      },
      kind: 'waiting-for-lock',
      tainted: true,
    },
  ])('with --taint-timing unblocked, $name', async ({ setup, kind, tainted }) => {
    const cluster = new FakeCluster({ concurrency: 1 });
    cluster.sentinel = true;
    setup(cluster);
    const outcome = await tick(cluster, { taintTiming: 'unblocked' });
    expect(outcome.kind).toBe(kind);
    expect(hasTaint(cluster)).toBe(tainted);
  });

  it('does not take the lock for a node that reports no bootID', async () => {
    const cluster = new FakeCluster();
    cluster.sentinel = true;
    cluster.node.bootID = '';
    const outcome = await tick(cluster);
    expect(outcome.kind).toBe('blocked');
    expect(cluster.table.holders()).toEqual([]);
  });

  it('waits for the lock while other nodes hold every slot', async () => {
    const cluster = new FakeCluster({ concurrency: 1 });
    cluster.sentinel = true;
    cluster.table.takeFor('n2');
    const outcome = await tick(cluster);
    expect(outcome).toMatchObject({ kind: 'waiting-for-lock', holders: ['n2'] });
    expect(cluster.node.unschedulable).toBe(false);
    expect(cluster.phases()).toEqual(['waiting-for-lock']);
  });

  it('removes the taint once the reboot is no longer required', async () => {
    const cluster = new FakeCluster();
    cluster.sentinel = true;
    cluster.windowOpen = false;
    await tick(cluster);
    expect(hasTaint(cluster)).toBe(true);
    cluster.sentinel = false;
    await tick(cluster);
    expect(hasTaint(cluster)).toBe(false);
  });

  it('leaves the taint off when no taint key is configured', async () => {
    const cluster = new FakeCluster();
    cluster.sentinel = true;
    cluster.windowOpen = false;
    await tick(cluster, { preferNoScheduleTaint: '' });
    expect(cluster.node.taints).toEqual([]);
  });
});

describe('agent: the reboot cycle', () => {
  it('renders notification templates as kured does: every %s is the node, %% a percent sign', async () => {
    const cluster = new FakeCluster();
    cluster.sentinel = true;
    await tick(cluster, {
      messageTemplateDrain: 'Draining %s (%s is 100%% ours)',
      messageTemplateReboot: 'Rebooting %s',
    });
    expect(cluster.notifications.map((n) => n.message)).toEqual([
      'Draining n1 (n1 is 100% ours)',
      'Rebooting n1',
    ]);
  });

  it('takes the lock, cordons, drains, reboots, then verifies, uncordons and releases', async () => {
    const cluster = new FakeCluster();
    cluster.sentinel = true;
    const config = { preRebootNodeLabels: { phase: 'pre' }, postRebootNodeLabels: { phase: 'post' } };
    const first = await tick(cluster, config);
    expect(first.kind).toBe('rebooting');
    expect(cluster.reboots).toEqual([{ cordoned: true, drained: true }]);
    expect(cluster.table.slots.get('n1')?.metadata).toEqual({ unschedulable: false, bootID: 'boot-1' });
    expect(cycleOf(cluster)).toMatchObject({ bootID: 'boot-1', cordoned: true, attempts: 1 });
    // out of the cloud load balancers with the cordon (--exclude-from-lb), the record says it is ours
    expect(cluster.node.labels).toEqual({ phase: 'pre', [CYCLE_LABEL]: 'true', [EXCLUDE_LB_LABEL]: 'true' });
    expect(cycleOf(cluster)?.lbExcludedAt).toBeDefined();
    expect(cluster.phases()).toEqual(['draining', 'rebooting']);

    // The host came back with a new bootID; the pod starts again: a fresh agent.
    const second = await tick(cluster, config);
    expect(second).toMatchObject({ kind: 'completed', uncordoned: true });
    expect(cluster.node.unschedulable).toBe(false);
    expect(inCycle(cluster)).toBe(false);
    expect(cluster.node.annotations[CYCLE_ANNOTATION]).toBeUndefined();
    expect(hasTaint(cluster)).toBe(false);
    expect(cluster.node.labels).toEqual({ phase: 'post' });
    expect(cluster.table.holders()).toEqual([]);
    expect(cluster.notifications.map((n) => n.event)).toEqual(['drain', 'reboot', 'uncordon']);
    expect(cluster.notifications[0]?.message).toBe('Draining node n1');
    expect(cluster.eventReasons()).toEqual([
      'RebootRequired',
      'LockAcquired',
      'Draining',
      'Rebooting',
      'RebootVerified',
      'RebootCompleted',
      'Uncordoned',
    ]);
    expect(cluster.metrics.results).toEqual(['success']);
    expect(cluster.metrics.evictions).toEqual({ evicted: 2 });

    const third = await tick(cluster, config);
    expect(third.kind).toBe('idle');
    expect(cluster.phases().slice(-2)).toEqual(['completed', 'idle']);
    expect(cluster.node.statuses.at(-1)).toMatchObject({
      bootID: 'boot-2',
      lastReboot: '2026-01-05T10:00:00.000Z',
    });
    expect(cluster.violations).toEqual([]);
  });

  it('waits drain-delay, reboot-delay and lock-release-delay on the clock', async () => {
    const cluster = new FakeCluster();
    cluster.sentinel = true;
    const config = { drainDelayMs: 60_000, rebootDelayMs: 120_000, lockReleaseDelayMs: 300_000 };
    const start = cluster.clock.now().getTime();
    await tick(cluster, config);
    expect(cluster.clock.now().getTime() - start).toBe(180_000);
    await tick(cluster, config);
    expect(cluster.clock.now().getTime() - start).toBe(480_000);
    expect(cluster.metrics.reboots).toEqual([480]);
  });

  it('keeps a node that was cordoned before us cordoned after the reboot', async () => {
    const cluster = new FakeCluster();
    cluster.sentinel = true;
    cluster.node.unschedulable = true;
    await tick(cluster);
    expect(cluster.table.slots.get('n1')?.metadata.unschedulable).toBe(true);
    expect(cycleOf(cluster)?.cordoned).toBe(false);
    const outcome = await tick(cluster);
    expect(outcome).toMatchObject({ kind: 'completed', uncordoned: false });
    expect(cluster.node.unschedulable).toBe(true);
    expect(cluster.table.holders()).toEqual([]);
    expect(cluster.eventReasons()).not.toContain('Uncordoned');
  });

  it('on drain failure uncordons before releasing the lock and does not reboot', async () => {
    const cluster = new FakeCluster();
    cluster.sentinel = true;
    cluster.drainFails = true;
    const outcome = await tick(cluster, { lockReleaseDelayMs: 600_000 });
    expect(outcome.kind).toBe('quarantined');
    expect(outcome.reason).toContain('default/web-1 (PDB refused)');
    expect(cluster.reboots).toEqual([]);
    expect(cluster.node.unschedulable).toBe(false);
    expect(cluster.table.holders()).toEqual([]);
    const uncordon = cluster.calls.indexOf('node.uncordon');
    const release = cluster.calls.indexOf('lock.release');
    expect(uncordon).toBeGreaterThan(-1);
    expect(uncordon).toBeLessThan(release);
    expect(cluster.clock.now().toISOString()).toBe('2026-01-05T10:00:00.000Z');
    expect(cluster.eventReasons()).toContain('DrainFailed');
    expect(cluster.events.find((e) => e.reason === 'DrainFailed')?.type).toBe('Warning');
    expect(hasTaint(cluster)).toBe(true);
  });

  it('on drain failure leaves a node that was cordoned before us cordoned', async () => {
    const cluster = new FakeCluster();
    cluster.sentinel = true;
    cluster.drainFails = true;
    cluster.node.unschedulable = true;
    await tick(cluster);
    expect(cluster.node.unschedulable).toBe(true);
    expect(cluster.table.holders()).toEqual([]);
  });

  it('with --force-reboot reboots even though the drain failed', async () => {
    const cluster = new FakeCluster();
    cluster.sentinel = true;
    cluster.drainFails = true;
    const outcome = await tick(cluster, { forceReboot: true });
    expect(outcome.kind).toBe('rebooting');
    expect(cluster.reboots).toEqual([{ cordoned: true, drained: false }]);
  });

  it('aborts when someone uncordons the node during the reboot delay (abort mode)', async () => {
    const cluster = new FakeCluster();
    cluster.sentinel = true;
    cluster.duringSleep = () => {
      cluster.uncordonByOther();
    };
    const outcome = await tick(cluster, { rebootDelayMs: 60_000 });
    expect(outcome.kind).toBe('aborted');
    expect(cluster.reboots).toEqual([]);
    expect(cluster.node.unschedulable).toBe(false);
    expect(inCycle(cluster)).toBe(false);
    expect(cluster.table.holders()).toEqual([]);
    expect(cluster.eventReasons()).toContain('RebootAborted');
    expect(cluster.calls.filter((c) => c === 'node.cordon')).toHaveLength(1);
    expect(cluster.metrics.results).toEqual(['aborted']);
  });

  it('drains again when someone uncordons the node during the reboot delay (redrain mode)', async () => {
    const cluster = new FakeCluster();
    cluster.sentinel = true;
    cluster.duringSleep = () => {
      cluster.uncordonByOther();
    };
    const outcome = await tick(cluster, { rebootDelayMs: 60_000, onUncordonedDuringDelay: 'redrain' });
    expect(outcome.kind).toBe('rebooting');
    expect(cluster.calls.filter((c) => c === 'node.cordon')).toHaveLength(2);
    expect(cluster.calls.filter((c) => c === 'drain')).toHaveLength(2);
    expect(cluster.reboots).toEqual([{ cordoned: true, drained: true }]);
    expect(cluster.violations).toEqual([]);
  });

  it('takes its slot back when it was lost during the reboot delay and nobody took it, then reboots', async () => {
    const cluster = new FakeCluster();
    cluster.sentinel = true;
    cluster.duringSleep = () => {
      cluster.table.set('n1', undefined);
    };
    const outcome = await tick(cluster, { rebootDelayMs: 60_000 });
    expect(outcome.kind).toBe('rebooting');
    expect(cluster.reboots).toEqual([{ cordoned: true, drained: true }]);
    expect(cluster.violations).toEqual([]);
  });

  it('aborts and undoes its cordon when its slot was lost during the reboot delay and taken by another', async () => {
    const cluster = new FakeCluster();
    cluster.sentinel = true;
    cluster.duringSleep = () => {
      cluster.table.set('n1', undefined);
      cluster.table.takeFor('n2');
    };
    const outcome = await tick(cluster, { rebootDelayMs: 60_000 });
    expect(outcome.kind).toBe('aborted');
    expect(outcome.reason).toContain('lock slot lost');
    expect(cluster.reboots).toEqual([]);
    expect(cluster.node.unschedulable).toBe(false);
    expect(inCycle(cluster)).toBe(false);
    expect(cluster.table.holders()).toEqual(['n2']);
  });

  it('keeps the lock and retries later when the reboot request fails', async () => {
    const cluster = new FakeCluster();
    cluster.sentinel = true;
    cluster.rebootError = new Error('nsenter: not found');
    const outcome = await tick(cluster);
    expect(outcome.kind).toBe('failed');
    expect(outcome.reason).toContain('nsenter: not found');
    expect(cycleOf(cluster)?.attempts).toBe(1);
    expect(cluster.node.unschedulable).toBe(true);
    // a failed request is not coming: the retry does not wait for it
    expect(cycleOf(cluster)?.rebootRequestedAt).toBeUndefined();
    cluster.rebootError = undefined;
    const retried = await tick(cluster);
    expect(retried).toMatchObject({ kind: 'rebooting', reason: expect.stringContaining('attempt 2 of 3') });
    expect((await tick(cluster)).kind).toBe('completed');
  });

  it('gives the slot back when the reboot is no longer required before any reboot request', async () => {
    const cluster = new FakeCluster();
    cluster.sentinel = true;
    cluster.crashAt = cluster.calls.length + 9; // crash while draining, after cordon
    await tick(cluster).catch(() => undefined);
    expect(cluster.table.holders()).toEqual(['n1']);
    cluster.sentinel = false;
    const outcome = await tick(cluster);
    expect(outcome.kind).toBe('idle');
    expect(cluster.table.holders()).toEqual([]);
    expect(cluster.node.unschedulable).toBe(false);
    expect(hasTaint(cluster)).toBe(false);
  });
});

describe('agent: restart and proof of reboot', () => {
  it('resumes instead of releasing when the pod restarts on the same boot', async () => {
    const cluster = new FakeCluster();
    cluster.sentinel = true;
    cluster.rebootWorks = false;
    expect((await tick(cluster)).kind).toBe('rebooting');
    // restarted at once: the reboot asked for may still come; not asked again, not drained again
    const waiting = await tick(cluster);
    expect(waiting.kind).toBe('rebooting');
    expect(waiting.reason).toMatch(/^reboot attempt 1 of 3 requested at .*; waiting for it/);
    expect(cluster.reboots).toHaveLength(1);
    expect(cluster.calls.filter((c) => c === 'drain')).toHaveLength(1);
    await cluster.clock.advance(REBOOT_GRACE_MS);
    const resumed = await tick(cluster);
    expect(resumed.kind).toBe('rebooting');
    expect(resumed.reason).toContain('attempt 2 of 3');
    expect(cluster.table.holders()).toEqual(['n1']);
    expect(cluster.reboots).toHaveLength(2);
    expect(cluster.violations).toEqual([]);
  });

  it('after --reboot-retries unchanged boots fails, keeps the node cordoned and the lock', async () => {
    const cluster = new FakeCluster();
    cluster.sentinel = true;
    cluster.rebootWorks = false;
    const kinds: string[] = [];
    for (let i = 0; i < 5; i++) {
      kinds.push((await tick(cluster, { rebootRetries: 2 })).kind);
      await cluster.clock.advance(REBOOT_GRACE_MS); // the reboot asked for did not come in time
    }
    expect(kinds).toEqual(['rebooting', 'rebooting', 'failed', 'failed', 'failed']);
    expect(cluster.reboots).toHaveLength(2);
    expect(cluster.node.unschedulable).toBe(true);
    expect(cluster.table.holders()).toEqual(['n1']);
    expect(cluster.eventReasons()).toContain('RebootFailed');
    expect(cluster.node.statuses.at(-1)?.phase).toBe('failed');
  });

  it('waits for the last reboot asked for before giving up on it', async () => {
    const cluster = new FakeCluster();
    cluster.sentinel = true;
    cluster.rebootWorks = false;
    expect((await tick(cluster, { rebootRetries: 1 })).kind).toBe('rebooting');
    const waiting = await tick(cluster, { rebootRetries: 1 });
    expect(waiting).toMatchObject({ kind: 'rebooting', reason: expect.stringContaining('the last attempt') });
    expect(cluster.eventReasons()).not.toContain('RebootFailed');
    await cluster.clock.advance(REBOOT_GRACE_MS);
    expect((await tick(cluster, { rebootRetries: 1 })).kind).toBe('failed');
    expect(cluster.reboots).toHaveLength(1);
  });

  it('counts a failed reboot once per agent, not once per tick', async () => {
    const cluster = new FakeCluster();
    cluster.sentinel = true;
    cluster.rebootWorks = false;
    const agent = agentOn(cluster, { rebootRetries: 1 });
    for (let i = 0; i < 4; i++) {
      const outcome = await settle(cluster.clock, agent.tick());
      await cluster.clock.advance(agent.nextDelay(outcome)); // the next tick comes as the loop would
    }
    expect(cluster.metrics.results).toEqual(['failed']);
  });

  it('passes the readiness gate once Ready and every gate condition are True', async () => {
    const cluster = new FakeCluster();
    cluster.sentinel = true;
    cluster.conditionsAfterReboot = [
      { type: 'Ready', status: 'False' },
      { type: 'example.com/NetworkReady', status: 'False' },
    ];
    const config = { readinessGates: ['example.com/NetworkReady'] };
    await tick(cluster, config);
    const waiting = await tick(cluster, config);
    expect(waiting.kind).toBe('verifying');
    expect(waiting.reason).toContain('condition Ready=False');
    expect(cluster.node.unschedulable).toBe(true);
    cluster.node.conditions = [
      { type: 'Ready', status: 'True' },
      { type: 'example.com/NetworkReady', status: 'False' },
    ];
    expect((await tick(cluster, config)).reason).toContain('example.com/NetworkReady=False');
    cluster.node.conditions[1] = { type: 'example.com/NetworkReady', status: 'True' };
    expect((await tick(cluster, config)).kind).toBe('completed');
    expect(cluster.node.unschedulable).toBe(false);
  });

  it('keeps the cordon and the slot after the reboot while a readiness.k8s.io/ taint, or one --post-reboot-wait-taint names, is on the node', async () => {
    const cluster = new FakeCluster();
    cluster.sentinel = true;
    const config = { postRebootWaitTaints: ['example.com/gpu-ready', 'storage.example.com/'] };
    await tick(cluster, config);
    // after the reboot: the node-readiness-controller's taint, ours, another's, and one nobody waits for
    cluster.node.taints.push(
      { key: 'readiness.k8s.io/cni-ready', effect: 'NoSchedule' },
      { key: 'example.com/gpu-ready', effect: 'NoSchedule' },
      { key: 'storage.example.com/csi', effect: 'NoExecute' },
      { key: 'example.com/dedicated', value: 'db', effect: 'NoSchedule' },
    );
    const waiting = await tick(cluster, config);
    expect(waiting.kind).toBe('verifying');
    expect(waiting.reason).toContain(
      'taint readiness.k8s.io/cni-ready:NoSchedule, example.com/gpu-ready:NoSchedule, storage.example.com/csi:NoExecute',
    );
    expect(waiting.reason).not.toContain('dedicated');
    expect(cluster.node.unschedulable).toBe(true);
    expect(cluster.table.holders()).toEqual(['n1']);
    const without = (key: string): void => {
      cluster.node.taints = cluster.node.taints.filter((t) => t.key !== key);
    };
    without('readiness.k8s.io/cni-ready');
    without('storage.example.com/csi');
    const still = await tick(cluster, config);
    expect(still.kind).toBe('verifying');
    expect(still.reason).toContain('taint example.com/gpu-ready:NoSchedule');
    expect(cluster.table.holders()).toEqual(['n1']);
    without('example.com/gpu-ready');
    expect((await tick(cluster, config)).kind).toBe('completed');
    expect(cluster.node.unschedulable).toBe(false);
    expect(cluster.table.holders()).toEqual([]);
    expect(cluster.node.taints.map((t) => t.key)).toEqual(['example.com/dedicated']);
  });

  it('with --wait-for-daemonset-pods waits for this node DaemonSet pods', async () => {
    const cluster = new FakeCluster();
    cluster.sentinel = true;
    cluster.node.dsPodsNotReady = ['kube-system/cilium-x'];
    const config = { waitForDaemonSetPods: true };
    await tick(cluster, config);
    const waiting = await tick(cluster, config);
    expect(waiting.kind).toBe('verifying');
    expect(waiting.reason).toContain('kube-system/cilium-x');
    cluster.node.dsPodsNotReady = [];
    expect((await tick(cluster, config)).kind).toBe('completed');
  });

  it('holds the lock when not ready within --post-reboot-timeout, across agent restarts', async () => {
    const cluster = new FakeCluster();
    cluster.sentinel = true;
    cluster.conditionsAfterReboot = [{ type: 'Ready', status: 'False' }];
    const config = { postRebootTimeoutMs: 600_000 };
    await tick(cluster, config);
    expect((await tick(cluster, config)).kind).toBe('verifying');
    await cluster.clock.advance(400_000);
    expect((await tick(cluster, config)).kind).toBe('verifying');
    await cluster.clock.advance(200_000);
    const held = await tick(cluster, config);
    expect(held.kind).toBe('holding');
    expect(held.reason).toContain('not ready 10m after the reboot');
    expect(cluster.table.holders()).toEqual(['n1']);
    expect(cluster.node.unschedulable).toBe(true);
    expect(cluster.eventReasons()).toContain('RebootFailed');
    expect(cluster.node.statuses.at(-1)?.phase).toBe('failed');
    // Ready at last: the held node completes.
    cluster.node.conditions = [{ type: 'Ready', status: 'True' }];
    expect((await tick(cluster, config)).kind).toBe('completed');
  });

  it('releases the lock when not ready within --post-reboot-timeout in release mode', async () => {
    const cluster = new FakeCluster();
    cluster.sentinel = true;
    cluster.conditionsAfterReboot = [{ type: 'Ready', status: 'Unknown' }];
    const config = { postRebootTimeoutMs: 600_000, onPostRebootTimeout: 'release' as const };
    await tick(cluster, config);
    expect((await tick(cluster, config)).kind).toBe('verifying');
    await cluster.clock.advance(600_000);
    const outcome = await tick(cluster, config);
    expect(outcome.kind).toBe('timed-out');
    expect(cluster.table.holders()).toEqual([]);
    expect(cluster.node.unschedulable).toBe(false);
    expect(cluster.metrics.results).toEqual(['timeout']);
  });

  it('ends a cycle left without its slot before any reboot request once no reboot is required', async () => {
    const cluster = new FakeCluster();
    cluster.node.unschedulable = true;
    cluster.node.unschedulableOwners = ['kured-ts'];
    cluster.node.labels[CYCLE_LABEL] = 'true';
    cluster.node.annotations[CYCLE_ANNOTATION] = JSON.stringify({
      bootID: 'boot-1',
      cordoned: true,
      attempts: 0,
      started: '2026-01-05T09:00:00Z',
    });
    const outcome = await tick(cluster);
    expect(outcome.kind).toBe('idle');
    expect(cluster.node.unschedulable).toBe(false);
    expect(inCycle(cluster)).toBe(false);
    expect(cluster.table.holders()).toEqual([]);
    expect(cluster.calls).not.toContain('lock.acquire');
  });

  it.each([
    ['already rebooted: uncordons and releases', false, 'idle', 0],
    ['still required: drains, records the bootID and reboots', true, 'rebooting', 1],
  ])('adopts a slot kured took for this node (migration), %s', async (_name, required, kind, reboots) => {
    const cluster = new FakeCluster();
    cluster.sentinel = required;
    cluster.kuredTookSlot();
    const outcome = await tick(cluster);
    expect(outcome.kind).toBe(kind);
    expect(cluster.reboots).toHaveLength(reboots);
    if (!required) {
      expect(cluster.node.unschedulable).toBe(false);
      expect(cluster.table.holders()).toEqual([]);
      return;
    }
    expect(cycleOf(cluster)).toMatchObject({ bootID: 'boot-1', cordoned: true, attempts: 1 });
    expect((await tick(cluster)).kind).toBe('completed');
    expect(cluster.node.unschedulable).toBe(false);
  });

  it('lets an operator release a node by removing its cycle label: slot and record go, the cordon stays', async () => {
    const cluster = new FakeCluster();
    cluster.sentinel = true;
    cluster.rebootWorks = false;
    for (let i = 0; i < 4; i++) await tick(cluster, { rebootRetries: 1 });
    expect(cluster.table.holders()).toEqual(['n1']); // failed: keeps the lock to stop the wave
    cluster.node.labels = {};
    const released = await tick(cluster, { rebootRetries: 1 });
    expect(released.kind).toBe('released');
    expect(cluster.table.holders()).toEqual([]);
    expect(cluster.node.annotations[CYCLE_ANNOTATION]).toBeUndefined();
    expect(cluster.node.unschedulable).toBe(true);
  });

  it('leaves a cordon it did not make alone when nothing is in progress', async () => {
    const cluster = new FakeCluster();
    cluster.node.unschedulable = true;
    await tick(cluster);
    expect(cluster.node.unschedulable).toBe(true);
  });

  it('with --annotate-nodes writes and clears kured progress annotations', async () => {
    const cluster = new FakeCluster();
    cluster.sentinel = true;
    await tick(cluster, { annotateNodes: true });
    expect(cluster.node.annotations['weave.works/kured-reboot-in-progress']).toBe('2026-01-05T10:00:00.000Z');
    await tick(cluster, { annotateNodes: true });
    expect(cluster.node.annotations['weave.works/kured-reboot-in-progress']).toBeUndefined();
    expect(cluster.node.annotations['weave.works/kured-most-recent-reboot-needed']).toBeDefined();
  });
});
