import { describe, expect, it } from '@jest/globals';
import { Agent, pollRebootRequest, REQUEST_POLL_MS, type AgentConfig } from '../../src/agent/agent.js';
import { waitsAgainWhenQuiet, type Outcome } from '../../src/agent/outcome.js';
import type { LockWait } from '../../src/lock/lock.js';
import { MemoryLogger } from '../../src/log/logger.js';
import {
  formatRebootRequest,
  REBOOT_REQUEST_ANNOTATION,
  rebootRequestOf,
} from '../../src/node/reboot-request.js';
import { CYCLE_ANNOTATION, CYCLE_LABEL } from '../../src/node/cycle.js';
import type { AgentDeps } from '../../src/agent/agent.js';
import { AGENT_DEFAULTS, FakeBlocker, FakeCluster, settle } from '../fakes/fake-cluster.js';

const PERIOD = 3_600_000;
const TAINT = AGENT_DEFAULTS.preferNoScheduleTaint;

/** An agent whose sentinel records the virtual time of every tick. */
function recordingAgent(
  cluster: FakeCluster,
  randoms: number[],
  config: Partial<AgentConfig> = {},
  extra: Partial<AgentDeps> = {},
): { agent: Agent; ticks: number[] } {
  const ticks: number[] = [];
  const start = cluster.clock.now().getTime();
  const deps = cluster.deps(extra);
  const inner = deps.sentinel;
  let i = 0;
  const agent = new Agent(
    { ...AGENT_DEFAULTS, periodMs: PERIOD, ...config },
    {
      ...deps,
      random: () => randoms[i++ % randoms.length] ?? 0.5,
      sentinel: {
        rebootRequired: (signal) => {
          ticks.push(cluster.clock.now().getTime() - start);
          return inner.rebootRequired(signal);
        },
      },
    },
  );
  return { agent, ticks };
}

describe('agent.run', () => {
  it('ticks at once at start-up, then within ±50% of the period while idle', async () => {
    const cluster = new FakeCluster();
    const { agent, ticks } = recordingAgent(cluster, [0.5, 0, 0.99, 0.25]);
    const controller = new AbortController();
    const running = agent.run(controller.signal);
    await cluster.clock.advance(4 * PERIOD);
    controller.abort();
    await running;
    // start-up at 0; then (0.5 + r) * period for r = 0.5, 0, 0.99, 0.25
    expect(ticks).toEqual([
      0,
      3_600_000,
      3_600_000 + 1_800_000,
      3_600_000 + 1_800_000 + 5_364_000,
      3_600_000 + 1_800_000 + 5_364_000 + 2_700_000,
    ]);
  });

  it.each([
    ['6 s later', 0.1, 6_000],
    ['half a minute later', 0.5, 30_000],
    ['just under a minute later', 0.99, 59_400],
  ])(
    'taints at start-up and jitters the first lock attempt within a minute (%s)',
    async (_name, r, firstAttempt) => {
      const cluster = new FakeCluster();
      cluster.sentinel = true;
      const { agent, ticks } = recordingAgent(cluster, [r]);
      const controller = new AbortController();
      const done = agent.run(controller.signal);
      await cluster.clock.advance(0);
      expect(ticks).toEqual([0]);
      expect(cluster.node.taints).toEqual([{ key: TAINT, effect: 'PreferNoSchedule' }]);
      expect(cluster.calls).not.toContain('lock.acquire');
      await cluster.clock.advance(60_000);
      expect(ticks).toEqual([0, firstAttempt]);
      expect(cluster.calls.indexOf('node.addTaint')).toBeLessThan(cluster.calls.indexOf('lock.acquire'));
      expect(cluster.reboots).toHaveLength(1);
      expect(cluster.eventReasons().filter((e) => e === 'RebootRequired')).toHaveLength(1);
      controller.abort();
      await done;
    },
  );

  it('never overlaps ticks, even when a tick takes longer than the period', async () => {
    const cluster = new FakeCluster();
    let running = 0;
    let maxRunning = 0;
    const slowSentinel = {
      rebootRequired: async (signal?: AbortSignal) => {
        running++;
        maxRunning = Math.max(maxRunning, running);
        await cluster.clock.sleep(2 * PERIOD, signal);
        running--;
        return { required: false };
      },
    };
    const agent = new Agent(
      { ...AGENT_DEFAULTS, periodMs: PERIOD },
      { ...cluster.deps(), sentinel: slowSentinel, random: () => 0 },
    );
    const controller = new AbortController();
    const done = agent.run(controller.signal);
    await cluster.clock.advance(10 * PERIOD);
    controller.abort();
    await done;
    expect(maxRunning).toBe(1);
    expect(cluster.metrics.heartbeats).toBeGreaterThan(3);
  });

  it('wakes at once when the lock changes while waiting for a slot', async () => {
    const cluster = new FakeCluster();
    cluster.sentinel = true;
    cluster.table.takeFor('n2');
    const { agent, ticks } = recordingAgent(cluster, [0]);
    const controller = new AbortController();
    const done = agent.run(controller.signal);
    await cluster.clock.advance(60_000);
    expect(ticks).toEqual([0, 0]); // start-up, then the first lock attempt (random 0)
    expect(cluster.node.statuses.at(-1)?.phase).toBe('waiting-for-lock');
    cluster.table.set('n2', undefined);
    await cluster.clock.advance(1000);
    expect(ticks).toEqual([0, 0, 60_000]);
    expect(cluster.reboots).toHaveLength(1);
    controller.abort();
    await done;
  });

  it('says again within an error retry that it waits, when its status write failed (the queue is read from the statuses)', async () => {
    const cluster = new FakeCluster();
    cluster.sentinel = true;
    cluster.table.takeFor('n2');
    const deps = cluster.deps();
    const node = deps.node;
    let failures = 1;
    const flaky = Object.create(node) as typeof node;
    flaky.setStatus = (status, signal) =>
      status.phase === 'waiting-for-lock' && failures-- > 0
        ? Promise.reject(new Error('etcdserver: request timed out'))
        : node.setStatus(status, signal);
    const { agent, ticks } = recordingAgent(cluster, [0], {}, { node: flaky });
    const controller = new AbortController();
    const done = agent.run(controller.signal);
    await cluster.clock.advance(60_000);
    // start-up, the first lock attempt (its waiting status not written), and again 15 s later
    // (ERROR_RETRY_MS jittered by random 0), not half a period later
    expect(ticks).toEqual([0, 0, 15_000]);
    expect(cluster.node.statuses.at(-1)?.phase).toBe('waiting-for-lock');
    // written now: the next look is the period's
    await cluster.clock.advance(PERIOD / 4);
    expect(ticks).toHaveLength(3);
    controller.abort();
    await done;
  });

  it('polls every few seconds, not every period, while verifying a reboot', async () => {
    const cluster = new FakeCluster();
    cluster.sentinel = true;
    cluster.conditionsAfterReboot = [{ type: 'Ready', status: 'False' }];
    const agent = new Agent(
      { ...AGENT_DEFAULTS, periodMs: PERIOD },
      { ...cluster.deps(), random: () => 0.5 },
    );
    const controller = new AbortController();
    const done = agent.run(controller.signal);
    await cluster.clock.advance(30_000 + PERIOD + 1); // first tick reboots, second one verifies
    expect(cluster.node.statuses.at(-1)?.phase).toBe('verifying');
    cluster.node.conditions = [{ type: 'Ready', status: 'True' }];
    await cluster.clock.advance(1_998);
    expect(cluster.table.holders()).toEqual(['n1']);
    await cluster.clock.advance(1); // the next poll comes (0.5 + 0.5) * 2 s after the last
    expect(cluster.table.holders()).toEqual([]);
    expect(cluster.node.unschedulable).toBe(false);
    controller.abort();
    await done;
  });

  it('continues a reboot in progress at once after a restart, without the first-tick jitter', async () => {
    const cluster = new FakeCluster();
    cluster.sentinel = true;
    await settle(cluster.clock, new Agent(AGENT_DEFAULTS, cluster.deps()).tick());
    expect(cluster.reboots).toHaveLength(1); // the host came back with a new bootID
    const { agent } = recordingAgent(cluster, [0.99]);
    const controller = new AbortController();
    const done = agent.run(controller.signal);
    await cluster.clock.advance(0);
    expect(cluster.table.holders()).toEqual([]);
    expect(cluster.phases().at(-1)).toBe('completed');
    expect(cluster.node.unschedulable).toBe(false);
    controller.abort();
    await done;
  });

  it('exits cleanly when aborted in the middle of a tick, leaving no timers behind', async () => {
    const cluster = new FakeCluster();
    cluster.sentinel = true;
    const agent = new Agent(
      { ...AGENT_DEFAULTS, rebootDelayMs: 600_000 },
      { ...cluster.deps(), random: () => 0 },
    );
    const controller = new AbortController();
    const done = agent.run(controller.signal);
    await cluster.clock.advance(1000);
    expect(cluster.node.statuses.at(-1)?.phase).toBe('draining');
    controller.abort(new Error('SIGTERM'));
    await expect(done).resolves.toBeUndefined();
    expect(cluster.clock.pending).toBe(0);
    expect(cluster.reboots).toEqual([]);
  });

  it('retries soon after a failed tick', async () => {
    const cluster = new FakeCluster();
    let fail = true;
    const deps = cluster.deps();
    const node = deps.node;
    const flaky = Object.create(node) as typeof node;
    flaky.get = (signal) => (fail ? Promise.reject(new Error('connect ECONNREFUSED')) : node.get(signal));
    const { agent, ticks } = recordingAgent(cluster, [0.5], {}, { node: flaky });
    const controller = new AbortController();
    const done = agent.run(controller.signal);
    await cluster.clock.advance(30_000);
    expect(cluster.logger.entries.map((e) => e.message)).toContain('tick failed');
    fail = false;
    await cluster.clock.advance(30_000);
    expect(ticks).toEqual([60_000]);
    controller.abort();
    await done;
  });

  it('re-checks a blocked node within five minutes, not a whole period', async () => {
    const cluster = new FakeCluster();
    cluster.sentinel = true;
    const blocker = new FakeBlocker('pdb');
    blocker.verdict = { blocked: true, reason: 'PodDisruptionBudget default/web allows no disruption' };
    cluster.blockers.push(blocker);
    const { agent, ticks } = recordingAgent(cluster, [0.5]);
    const controller = new AbortController();
    const done = agent.run(controller.signal);
    await cluster.clock.advance(30_000 + 2 * 300_000 + 1000);
    // A PDB block also watches the lock, but with no lock change each re-check comes on its delay.
    expect(ticks).toEqual([0, 30_000, 330_000, 630_000]);
    controller.abort();
    await done;
  });

  it.each([
    ['a PodDisruptionBudget block ends at once (no queue)', 'pdb', 'none', [0, 30_000, 60_000]],
    // with the coordinated queue a blocked node does not follow the lock: on patch night every
    // PDB-blocked node of the fleet would list its pods and PDBs at each hand-off
    [
      'a PodDisruptionBudget block waits for its re-check (the coordinated queue)',
      'pdb',
      'fair',
      [0, 30_000, 330_000],
    ],
    ['an alert block waits for its re-check', 'prometheus', 'none', [0, 30_000, 330_000]],
  ] as const)('when the lock changes, %s', async (_name, name, lockQueue, expected) => {
    const cluster = new FakeCluster();
    cluster.sentinel = true;
    const blocker = new FakeBlocker(name);
    blocker.verdict = { blocked: true, reason: 'not now' };
    cluster.blockers.push(blocker);
    cluster.table.takeFor('n2');
    const { agent, ticks } = recordingAgent(cluster, [0.5], { lockQueue });
    const controller = new AbortController();
    const done = agent.run(controller.signal);
    await cluster.clock.advance(60_000);
    blocker.verdict = { blocked: false };
    cluster.table.set('n2', undefined); // the wave moved on
    await cluster.clock.advance(300_000);
    expect(ticks).toEqual([...expected]);
    expect(cluster.reboots).toHaveLength(1);
    controller.abort();
    await done;
  });

  it('ticks right after the maintenance window opens instead of up to a period later', async () => {
    const cluster = new FakeCluster(); // window opens 2026-01-06T02:00Z, 16 h after the start
    cluster.sentinel = true;
    cluster.windowOpen = false;
    const { agent, ticks } = recordingAgent(cluster, [0.5], { periodMs: 24 * PERIOD });
    const controller = new AbortController();
    const done = agent.run(controller.signal);
    await cluster.clock.advance(60_000);
    expect(ticks).toEqual([0, 30_000]);
    cluster.windowOpen = true;
    await cluster.clock.advance(16 * PERIOD);
    // 30 s + (16 h - 30 s) + 0.5 * 60 s of spread
    expect(ticks).toEqual([0, 30_000, 16 * PERIOD + 30_000]);
    expect(cluster.reboots).toHaveLength(1);
    controller.abort();
    await done;
  });
});

describe('agent.run while no reboot is required', () => {
  const RECORD = {
    [CYCLE_ANNOTATION]: '{"bootID":"boot-1","cordoned":true,"attempts":0,"started":"2026-01-05T09:00:00Z"}',
  };
  const LABEL = { [CYCLE_LABEL]: 'true' };
  it.each([
    { name: 'a clean node', unschedulable: false, annotations: {}, labels: {}, taints: [] },
    {
      name: 'our taint left behind',
      unschedulable: false,
      annotations: {},
      labels: {},
      taints: [{ key: TAINT, effect: 'PreferNoSchedule' }],
    },
    {
      name: 'our cordon and cycle left behind',
      unschedulable: true,
      annotations: RECORD,
      labels: LABEL,
      taints: [],
    },
  ])(
    'repairs $name at start-up, then makes no cluster call in a day of ticks',
    async ({ unschedulable, annotations, labels, taints }) => {
      const cluster = new FakeCluster();
      Object.assign(cluster.node, {
        unschedulable,
        unschedulableOwners: unschedulable ? ['kured-ts'] : [],
        annotations: { ...annotations },
        labels: { ...labels },
        taints: [...taints],
      });
      const { agent, ticks } = recordingAgent(cluster, [0.5, 0, 0.99, 0.25]);
      const controller = new AbortController();
      const done = agent.run(controller.signal);
      await cluster.clock.advance(0);
      expect(cluster.calls).toContain('node.get');
      expect(cluster.calls).toContain('lock.holding');
      const afterStartUp = cluster.calls.length;
      await cluster.clock.advance(24 * PERIOD);
      controller.abort();
      await done;
      expect(ticks.length).toBeGreaterThan(20);
      expect(cluster.calls.slice(afterStartUp).filter((op) => op !== 'sentinel')).toEqual([]);
      expect(cluster.node).toMatchObject({ unschedulable: false, taints: [] });
      expect(cluster.node.annotations[CYCLE_ANNOTATION]).toBeUndefined();
      expect(cluster.node.labels[CYCLE_LABEL]).toBeUndefined();
      expect(cluster.phases()).toEqual(['idle']);
    },
  );

  it('writes the status only when a sentinel error starts or ends', async () => {
    const cluster = new FakeCluster();
    const { agent } = recordingAgent(cluster, [0.5]);
    const controller = new AbortController();
    const done = agent.run(controller.signal);
    await cluster.clock.advance(0);
    const afterStartUp = cluster.calls.length;
    cluster.sentinel = 'needs-restarting: exit 2';
    await cluster.clock.advance(5 * PERIOD);
    cluster.sentinel = false;
    await cluster.clock.advance(5 * PERIOD);
    controller.abort();
    await done;
    expect(cluster.calls.slice(afterStartUp).filter((op) => op !== 'sentinel')).toEqual([
      'node.setStatus',
      'node.setStatus',
    ]);
    expect(cluster.phases()).toEqual(['idle', 'idle', 'idle']);
    expect(cluster.node.statuses.map((s) => s.reason)).toEqual([
      'reboot not required',
      'needs-restarting: exit 2',
      'reboot not required',
    ]);
    expect(cluster.metrics.sentinelErrors).toBe(5);
  });

  it('reads the cluster again, taints and reboots once a reboot becomes required', async () => {
    const cluster = new FakeCluster();
    const { agent } = recordingAgent(cluster, [0.5]);
    const controller = new AbortController();
    const done = agent.run(controller.signal);
    await cluster.clock.advance(3 * PERIOD);
    cluster.sentinel = true;
    await cluster.clock.advance(PERIOD);
    expect(cluster.reboots).toEqual([{ cordoned: true, drained: true }]);
    expect(cluster.violations).toEqual([]);
    controller.abort();
    await done;
  });

  it('after a tick that failed halfway, reads the cluster again and removes the taint it left', async () => {
    const cluster = new FakeCluster();
    const { agent } = recordingAgent(cluster, [0.5]);
    expect((await settle(cluster.clock, agent.tick())).kind).toBe('idle');
    cluster.sentinel = true;
    // sentinel, node.get, lock.holding, node.addTaint, then the crash at lock.acquire
    cluster.crashAt = cluster.calls.length + 5;
    expect((await settle(cluster.clock, agent.tick())).kind).toBe('error');
    expect(cluster.calls.at(-1)).toBe('lock.acquire');
    expect(cluster.node.taints).toEqual([{ key: TAINT, effect: 'PreferNoSchedule' }]);
    cluster.sentinel = false;
    expect((await settle(cluster.clock, agent.tick())).kind).toBe('idle');
    expect(cluster.node.taints).toEqual([]);
  });
});

describe('agent.wake', () => {
  it('taints at once when woken during an idle wait, and tries the lock within the start-up jitter', async () => {
    const cluster = new FakeCluster();
    const { agent, ticks } = recordingAgent(cluster, [0.5]);
    const controller = new AbortController();
    const done = agent.run(controller.signal);
    await cluster.clock.advance(10 * 60_000);
    expect(ticks).toEqual([0]);
    cluster.sentinel = true;
    agent.wake();
    await cluster.clock.advance(0);
    // the start-up pass ran at once (10 min, not 1 h) and tainted without taking the lock
    expect(ticks).toEqual([0, 600_000]);
    expect(cluster.node.taints).toEqual([{ key: TAINT, effect: 'PreferNoSchedule' }]);
    expect(cluster.calls).not.toContain('lock.acquire');
    await cluster.clock.advance(30_000);
    expect(cluster.calls).toContain('lock.acquire');
    controller.abort();
    await done;
  });

  it("is woken for an admin's reboot request within REQUEST_POLL_MS, and reads it off the node though it was clean", async () => {
    const cluster = new FakeCluster();
    const { agent, ticks } = recordingAgent(cluster, [0.5]);
    const controller = new AbortController();
    const done = agent.run(controller.signal);
    await cluster.clock.advance(0);
    const polling = pollRebootRequest({
      requested: () => Promise.resolve(rebootRequestOf(cluster.node.annotations) !== undefined),
      clock: cluster.clock,
      logger: new MemoryLogger(),
      signal: controller.signal,
      onRequested: () => {
        agent.wake();
      },
    });
    await cluster.clock.advance(60_000);
    cluster.node.annotations[REBOOT_REQUEST_ANNOTATION] = formatRebootRequest({
      by: 'alice',
      reason: 'CVE',
      at: '2026-01-05T10:00:00Z',
      now: false,
    });
    await cluster.clock.advance(REQUEST_POLL_MS - 60_000);
    expect(ticks).toEqual([0, REQUEST_POLL_MS]); // not a period (1 h) later
    expect(cluster.node.taints).toEqual([{ key: TAINT, effect: 'PreferNoSchedule' }]);
    controller.abort();
    await Promise.all([done, polling]);
  });

  it('does nothing when the agent is not idle', async () => {
    const cluster = new FakeCluster();
    cluster.sentinel = true;
    const { agent, ticks } = recordingAgent(cluster, [0.5]);
    const controller = new AbortController();
    const done = agent.run(controller.signal);
    await cluster.clock.advance(0);
    agent.wake();
    await cluster.clock.advance(0);
    // start-up pass only: the wake did not add a pass while the first lock attempt is pending
    expect(ticks).toEqual([0]);
    controller.abort();
    await done;
  });
});

describe('agent.run with --lock-ttl', () => {
  it('renews its slot every third of the TTL while it holds one, also during a long --reboot-delay, and not while idle', async () => {
    const cluster = new FakeCluster();
    const ttl = 60_000;
    const { agent } = recordingAgent(cluster, [0], { lockTtlMs: ttl, rebootDelayMs: 5 * ttl });
    const controller = new AbortController();
    const done = agent.run(controller.signal);
    await cluster.clock.advance(2 * ttl);
    expect(cluster.table.renewals).toBe(0); // idle: no slot, no renewal, no request
    expect(cluster.calls.filter((c) => c === 'lock.renew')).toEqual([]);
    cluster.sentinel = true;
    agent.wake();
    await cluster.clock.advance(0);
    await cluster.clock.advance(0); // start-up pass then the first lock attempt (random 0)
    expect(cluster.table.holders()).toEqual(['n1']);
    await cluster.clock.advance(4 * ttl); // inside the 5-TTL --reboot-delay
    expect(cluster.table.renewals).toBe(12);
    controller.abort();
    await done;
  });
});

describe('a wait for the lock that timed out with nothing changed (waitsAgainWhenQuiet)', () => {
  const waiting = (wait?: LockWait): Outcome => ({
    kind: 'waiting-for-lock',
    reason: 'every slot is taken',
    holders: ['n2'],
    ...(wait === undefined ? {} : { wait }),
  });

  it.each<[string, Outcome, boolean]>([
    ['a wait for a slot is waited again', waiting({ for: 'slot' }), true],
    ['a wait for a turn is waited again', waiting({ for: 'turn' }), true],
    ['a wait that names no way of waiting (a slot) is waited again', waiting(), true],
    [
      'a recheck of the fleet gates (a NotReady node that comes back writes nothing to the lock) ends in a pass',
      waiting({ for: 'slot', recheck: true }),
      false,
    ],
    ['a recheck while waiting for a turn ends in a pass', waiting({ for: 'turn', recheck: true }), false],
    ['a back-off after a contended write ends in a pass', waiting({ for: 'contended' }), false],
    ['an error retry (the fleet could not be read) ends in a pass', waiting({ for: 'retry' }), false],
    [
      'a wait after any other outcome ends in a pass',
      { kind: 'blocked', reason: 'pdb', blocker: 'pdb' },
      false,
    ],
  ])('%s', (_name, outcome, again) => {
    expect(waitsAgainWhenQuiet(outcome)).toBe(again);
  });
});
