// kured-ts simulate, what holds a wave back: a firing alert and a blocking pod, the health gate,
// approvals, the cluster autoscaler, blocking jobs that keep arriving (in memory: see
// test/fakes/simulate.ts; the other scenario files are named in simulate-wave.test.ts).
import { describe, expect, it, jest } from '@jest/globals';
import { DEFAULT_SIMULATE_OPTIONS, type SimulateOptions } from '../../../src/cli/simulate.js';
import { runSimulation, type SimulationResult } from '../../../src/sim/simulation.js';
import { SIMULATION_TIMEOUT_MS, memorySimulationOptions, simulate } from '../../fakes/simulate.js';

jest.setTimeout(SIMULATION_TIMEOUT_MS);

const small: SimulateOptions = { ...DEFAULT_SIMULATE_OPTIONS, nodes: 5, seed: 42 };

describe('kured-ts simulate with the real agents', () => {
  it('takes no lock while an alert fires, and reboots the node with a blocking pod only after it ends', async () => {
    const r = await simulate({ ...small, nodes: 3, alertFiringForMs: 1_800_000, blockingPodMs: 3_600_000 });
    expect(r.violations).toEqual([]);
    expect(r.rebooted).toBe(3);
    expect(r.firstLockMs).toBeGreaterThanOrEqual(1_800_000);
    expect(r.blockedMs['blocked: prometheus']).toBeGreaterThan(0);
    expect(r.blockedMs['blocked: pods']).toBeGreaterThan(0);
    const blocked = r.nodes.find((n) => n.name === 'node-01');
    expect(blocked?.lockedAtMs).toBeGreaterThanOrEqual(3_600_000);
  });

  it('takes no slot while more nodes than --max-unhealthy-nodes are NotReady, then reboots them all', async () => {
    const unhealthy = { nodes: 2, durationMs: 1_800_000 };
    const options = { ...small, nodes: 6, needsReboot: 4, unhealthy, periodMs: 600_000 };
    const gated = await simulate({ ...options, maxUnhealthyNodes: { count: 1 } });
    expect(gated.violations).toEqual([]);
    expect(gated.rebooted).toBe(4);
    expect(gated.firstLockMs).toBeGreaterThanOrEqual(1_800_000);
    expect(gated.blockedMs['waiting-for-lock: max-unhealthy-nodes']).toBeGreaterThan(0);
    // without the gate, and without --count-unavailable (whose NotReady nodes would take the slots)
    const ungated = await simulate({ ...options, agent: { countUnavailable: false } });
    expect(ungated.firstLockMs).toBeLessThan(1_800_000);
    expect(ungated.blockedMs['waiting-for-lock: max-unhealthy-nodes']).toBeUndefined();
  });

  it.each(['karpenter', 'autoscaler'] as const)(
    'with another operator (%s) taking nodes out by its taint, takes no slot while theirs and the slots fill --concurrency, and reboots every node',
    async (kind) => {
      const r = await simulate({ ...small, nodes: 10, otherOperator: { kind, nodes: 2 } });
      expect(r.violations).toEqual([]);
      expect(r.rebooted).toBe(10);
      expect(r.otherOperator?.taken).toHaveLength(2);
    },
  );

  it("without the coordinator the agents' printed rows hold no taints: a slot is taken beside another operator's node, and the check says so", async () => {
    const r = await simulate({
      ...small,
      nodes: 10,
      coordinators: 0,
      otherOperator: { kind: 'karpenter', nodes: 1 },
    });
    expect(r.otherOperator?.taken).toHaveLength(1);
    expect(r.violations.map((v) => v.rule)).toContain('other-operator-exceeded');
  });

  it('with --approve-every, no node takes a slot before the operator approves it, each approval used once', async () => {
    const r = await simulate({ ...small, nodes: 4, approveEveryMs: 1_200_000, periodMs: 600_000 });
    expect(r.violations).toEqual([]);
    expect(r.rebooted).toBe(4);
    expect(r.firstLockMs).toBeGreaterThanOrEqual(1_200_000);
    expect(r.approvals).toBe(4);
    expect(r.blockedMs['awaiting-approval']).toBeGreaterThan(0);
    expect(r.timeline.spans.some((s) => s.kind === 'awaiting-approval')).toBe(true);
  });

  it('with --autoscaler, no node is removed in its reboot cycle or settle time, and the empty ones are after it', async () => {
    const SETTLE = 600_000;
    const r = await simulate({ ...small, nodes: 4, autoscaler: true });
    expect(r.violations).toEqual([]);
    expect(r.rebooted).toBe(4);
    const removals = r.autoscalerRemovals ?? [];
    expect(removals.filter((x) => x.when !== 'after')).toEqual([]);
    expect(removals.length).toBeGreaterThan(0);
    for (const removal of removals) {
      const released = r.nodes.find((n) => n.name === removal.node)?.releasedAtMs ?? Infinity;
      expect(removal.atMs).toBeGreaterThanOrEqual(released + SETTLE);
    }
    const unprotected = await simulate({
      ...small,
      nodes: 4,
      autoscaler: true,
      agent: { autoscalerProtection: false },
    });
    expect(unprotected.autoscalerRemovals?.filter((x) => x.when === 'cycle').length).toBeGreaterThan(0);
  });

  it(
    'with --load-balancer, every slot grows by --lb-drain-wait, through the policy, 0 violations',
    async () => {
      const held = (r: SimulationResult): number[] =>
        r.nodes.map((n) => (n.releasedAtMs ?? 0) - (n.lockedAtMs ?? 0));
      const plain = await simulate({ ...small, nodes: 4, concurrency: 2 });
      const behind = await simulate({ ...small, nodes: 4, concurrency: 2, loadBalancer: true });
      expect(behind.violations).toEqual([]);
      expect(behind.rebooted).toBe(4);
      expect(behind.admission?.denied).toBe(0);
      expect(Math.min(...held(behind))).toBeGreaterThanOrEqual(Math.min(...held(plain)) + 110_000);
      // the label is the agents' own: without it (--exclude-from-lb=false) no wait
      const off = await simulate({
        ...small,
        nodes: 4,
        concurrency: 2,
        loadBalancer: true,
        agent: { excludeFromLb: false },
      });
      expect(Math.min(...held(off))).toBeLessThan(Math.min(...held(behind)) - 100_000);
    },
    SIMULATION_TIMEOUT_MS,
  );

  it.each([
    ['the early taint sends them to the nodes that need no reboot', 'required' as const, 0],
    ["kured's timing lets them land on blocked nodes that need one", 'unblocked' as const, 1],
  ])('with blocking jobs that keep arriving, %s', async (_name, taintTiming, minOnPending) => {
    const churn = { perHour: 60, durationMs: 20 * 60_000 };
    const r = await simulate({
      ...small,
      nodes: 20,
      needsReboot: 10,
      podsPerNode: 2,
      blockingChurn: churn,
      agent: { taintTiming },
      seed: 2,
    });
    expect(r.violations).toEqual([]);
    expect(r.rebooted).toBe(10);
    expect(r.churnJobs).toBeGreaterThan(10);
    if (minOnPending === 0) expect(r.blockingOnPendingNodes).toBe(0);
    else expect(r.blockingOnPendingNodes).toBeGreaterThanOrEqual(minOnPending);
  });

  it('completes a wave over single-replica Deployments with 0 seconds of one unavailable under --single-replica restart', async () => {
    const r = await simulate({
      ...small,
      nodes: 6,
      singleReplicaWorkloads: 5,
      agent: { singleReplica: 'restart' },
    });
    expect(r.violations).toEqual([]);
    expect(r.stop).toBe('done');
    expect(r.rebooted).toBe(6);
    expect(r.singleReplicas).toEqual({ deployments: 5, unavailableSeconds: {} });
  });

  it('leaves single-replica Deployments without a ready replica during their drain without --single-replica restart', async () => {
    const r = await simulate({ ...small, nodes: 6, singleReplicaWorkloads: 5 });
    expect(r.violations).toEqual([]);
    expect(r.rebooted).toBe(6);
    expect(Object.keys(r.singleReplicas?.unavailableSeconds ?? {}).length).toBeGreaterThan(0);
  });

  it('names the nodes a PDB over a single replica blocks without --single-replica restart', async () => {
    const options = memorySimulationOptions({
      ...small,
      nodes: 6,
      singleReplicaWorkloads: 5,
      pdb: { kind: 'minAvailable', value: 1 },
    });
    options.limitMs = 2 * 3_600_000;
    const r = await runSimulation(options);
    expect(r.violations).toEqual([]);
    expect(Object.keys(r.blockedNodes).sort()).toEqual([
      'node-01',
      'node-02',
      'node-03',
      'node-04',
      'node-05',
    ]);
    for (const why of Object.values(r.blockedNodes))
      expect(why).toMatch(/^PodDisruptionBudget apps\/solo-\d allows no disruption/);
    expect(r.singleReplicas?.unavailableSeconds).toEqual({});
  });
});
