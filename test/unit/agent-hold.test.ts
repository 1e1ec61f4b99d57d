// The hold after the drain (--hold-after-drain-annotation) on the fake cluster: its back-off on the
// clock, a slot lost while held, and the pass's abort signal.
import { describe, expect, it } from '@jest/globals';
import { Agent, type AgentConfig, type Outcome } from '../../src/agent/agent.js';
import { HOLD_POLL_FIRST_MS, HOLD_POLL_MAX_MS } from '../../src/agent/decision/hold.js';
import { CYCLE_ANNOTATION, CYCLE_LABEL } from '../../src/node/cycle.js';
import { AGENT_DEFAULTS, FakeCluster, settle } from '../fakes/fake-cluster.js';

const HOLD = 'example.com/backup';
const CONFIG: Partial<AgentConfig> = { holdAfterDrainAnnotations: [HOLD], holdTimeoutMs: 3_600_000 };

function ticking(cluster: FakeCluster, signal?: AbortSignal): Promise<Outcome> {
  return new Agent({ ...AGENT_DEFAULTS, ...CONFIG }, cluster.deps()).tick(signal);
}

function tick(cluster: FakeCluster): Promise<Outcome> {
  return settle(cluster.clock, ticking(cluster));
}

/** Records every sleep of the agent (ms), running `at(n)` as the n-th (from 0) begins. */
function everySleep(cluster: FakeCluster, at: (n: number) => void): number[] {
  const sleeps: number[] = [];
  const arm = (): void => {
    cluster.duringSleep = (ms) => {
      sleeps.push(ms);
      arm();
      at(sleeps.length - 1);
    };
  };
  arm();
  return sleeps;
}

function held(): FakeCluster {
  const cluster = new FakeCluster();
  cluster.sentinel = true;
  cluster.node.annotations[HOLD] = 'nightly';
  return cluster;
}

function release(cluster: FakeCluster): void {
  cluster.node.annotations = Object.fromEntries(
    Object.entries(cluster.node.annotations).filter(([key]) => key !== HOLD),
  );
}

describe('agent: the hold after the drain', () => {
  it('looks at the node again after 5, 10, 20, 30 and 30 s while held, then reboots once the annotation is gone', async () => {
    const cluster = held();
    const sleeps = everySleep(cluster, (n) => {
      if (n === 4) release(cluster);
    });
    const outcome = await tick(cluster);
    expect(outcome.kind).toBe('rebooting');
    expect(sleeps).toEqual([
      HOLD_POLL_FIRST_MS,
      2 * HOLD_POLL_FIRST_MS,
      4 * HOLD_POLL_FIRST_MS,
      HOLD_POLL_MAX_MS,
      HOLD_POLL_MAX_MS,
    ]);
    expect(cluster.phases()).toEqual(['draining', 'held-after-drain', 'rebooting']);
    expect(cluster.eventReasons()).toContain('RebootHeld');
    expect(cluster.reboots).toEqual([{ cordoned: true, drained: true }]);
  });

  it('ends the cycle and undoes its cordon when its slot is taken by another while held', async () => {
    const cluster = held();
    everySleep(cluster, (n) => {
      if (n !== 0) return;
      cluster.table.set('n1', undefined);
      cluster.table.takeFor('n2');
    });
    const outcome = await tick(cluster);
    expect(outcome).toMatchObject({
      kind: 'aborted',
      reason: expect.stringContaining(`while held after the drain by ${HOLD}=nightly`),
    });
    expect(cluster.reboots).toEqual([]);
    expect(cluster.node.unschedulable).toBe(false);
    expect(cluster.node.labels[CYCLE_LABEL]).toBeUndefined();
    expect(cluster.table.holders()).toEqual(['n2']);
  });

  it('stops waiting when the pass is aborted, the node left cordoned in its cycle with its slot', async () => {
    const cluster = held();
    const shutdown = new AbortController();
    everySleep(cluster, (n) => {
      if (n === 1) shutdown.abort(new Error('SIGTERM'));
    });
    const ended = await settle(
      cluster.clock,
      ticking(cluster, shutdown.signal).catch((err: unknown) => err),
    );
    expect(ended).toEqual(new Error('SIGTERM'));
    expect(cluster.reboots).toEqual([]);
    expect(cluster.node.unschedulable).toBe(true);
    expect(cluster.node.annotations[CYCLE_ANNOTATION]).toBeDefined();
    expect(cluster.table.holders()).toEqual(['n1']);
  });
});
