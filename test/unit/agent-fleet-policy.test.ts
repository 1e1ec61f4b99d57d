// The agent's fleet policies over hand-written fakes: the approval gate and the reboot history.
import { REBOOT_GRACE_MS } from '../../src/agent/decision/phase.js';
import { describe, expect, it } from '@jest/globals';
import { Agent, type AgentConfig, type Outcome } from '../../src/agent/agent.js';
import { APPROVAL_ANNOTATION, formatApproval } from '../../src/node/approval.js';
import { HISTORY_ANNOTATION, parseHistory } from '../../src/node/history.js';
import { AGENT_DEFAULTS, FakeCluster, settle } from '../fakes/fake-cluster.js';

async function tick(cluster: FakeCluster, config: Partial<AgentConfig> = {}): Promise<Outcome> {
  return settle(cluster.clock, new Agent({ ...AGENT_DEFAULTS, ...config }, cluster.deps()).tick());
}

const APPROVAL = { requireApproval: true, approvalTtlMs: 3_600_000 };

function approve(cluster: FakeCluster, at: string, by = 'alice@laptop'): void {
  cluster.node.annotations[APPROVAL_ANNOTATION] = formatApproval({ by, at });
}

describe('the approval gate (--require-approval)', () => {
  it('keeps a node ready to reboot in awaiting-approval, without the lock, and tells how to approve', async () => {
    const cluster = new FakeCluster();
    cluster.sentinel = true;
    const outcome = await tick(cluster, APPROVAL);
    expect(outcome).toEqual({
      kind: 'awaiting-approval',
      reason: 'waiting for approval: run kured-ts approve n1',
    });
    expect(cluster.table.holders()).toEqual([]);
    expect(cluster.phases()).toEqual(['awaiting-approval']);
    expect(cluster.eventReasons()).toEqual(['RebootRequired', 'AwaitingApproval']);
    expect(cluster.reboots).toEqual([]);
  });

  it.each([
    ['an approval within --approval-ttl lets it go', '2026-01-05T09:30:00Z', 'rebooting'],
    ['an approval older than --approval-ttl does not', '2026-01-05T08:59:59Z', 'awaiting-approval'],
    ['an approval from the future (clock skew) lets it go', '2026-01-05T10:05:00Z', 'rebooting'],
  ])('%s', async (_name, at, kind) => {
    const cluster = new FakeCluster();
    cluster.sentinel = true;
    approve(cluster, at);
    const outcome = await tick(cluster, APPROVAL);
    expect(outcome.kind).toBe(kind);
    if (kind === 'awaiting-approval')
      expect(outcome.reason).toBe(
        `approval by alice@laptop at ${at} expired (--approval-ttl); run kured-ts approve n1`,
      );
  });

  it('never expires an approval with --approval-ttl 0', async () => {
    const cluster = new FakeCluster();
    cluster.sentinel = true;
    approve(cluster, '2020-01-01T00:00:00Z');
    expect((await tick(cluster, { requireApproval: true, approvalTtlMs: 0 })).kind).toBe('rebooting');
  });

  it('does not count an annotation it cannot read as an approval', async () => {
    const cluster = new FakeCluster();
    cluster.sentinel = true;
    cluster.node.annotations[APPROVAL_ANNOTATION] = 'yes please';
    const outcome = await tick(cluster, APPROVAL);
    expect(outcome.kind).toBe('awaiting-approval');
    expect(outcome.reason).toMatch(/^unreadable approval yes please: .*; run kured-ts approve n1$/);
  });

  it('uses one approval for one reboot: it is gone when the reboot completes', async () => {
    const cluster = new FakeCluster();
    cluster.sentinel = true;
    approve(cluster, '2026-01-05T09:59:00Z');
    expect((await tick(cluster, APPROVAL)).kind).toBe('rebooting');
    expect(cluster.node.annotations[APPROVAL_ANNOTATION]).toBeDefined();
    expect((await tick(cluster, APPROVAL)).kind).toBe('completed');
    expect(cluster.node.annotations[APPROVAL_ANNOTATION]).toBeUndefined();
    cluster.sentinel = true;
    expect((await tick(cluster, APPROVAL)).kind).toBe('awaiting-approval');
  });

  it('does not ask without --require-approval', async () => {
    const cluster = new FakeCluster();
    cluster.sentinel = true;
    expect((await tick(cluster)).kind).toBe('rebooting');
  });
});

describe('the reboot history (--history-limit)', () => {
  it('records a completed reboot: boots, kernels, OS images and the time of each phase', async () => {
    const cluster = new FakeCluster();
    cluster.node.kernelVersion = '6.1.0-28-amd64';
    cluster.node.osImage = 'Debian GNU/Linux 12 (bookworm)';
    cluster.kernelAfterReboot = '6.1.0-29-amd64';
    cluster.sentinel = true;
    expect((await tick(cluster, { rebootDelayMs: 60_000 })).kind).toBe('rebooting');
    expect((await tick(cluster)).kind).toBe('completed');
    const [record, ...rest] = parseHistory(cluster.node.annotations[HISTORY_ANNOTATION]);
    expect(rest).toEqual([]);
    expect(record).toEqual({
      result: 'success',
      bootIDBefore: 'boot-1',
      bootIDAfter: 'boot-2',
      kernelBefore: '6.1.0-28-amd64',
      kernelAfter: '6.1.0-29-amd64',
      osImageBefore: 'Debian GNU/Linux 12 (bookworm)',
      osImageAfter: 'Debian GNU/Linux 12 (bookworm)',
      requiredAt: '2026-01-05T10:00:00.000Z',
      lockedAt: expect.any(String),
      drainedAt: '2026-01-05T10:00:00.000Z',
      rebootRequestedAt: '2026-01-05T10:01:00.000Z',
      upAt: '2026-01-05T10:01:00.000Z',
      endedAt: '2026-01-05T10:01:00.000Z',
    });
    expect(cluster.metrics.phases).toEqual([
      ['wait', 0],
      ['drain', 0],
      ['reboot', 0],
      ['ready', 0],
    ]);
  });

  it('records a reboot that never came once, when the agent gives up on it', async () => {
    const cluster = new FakeCluster();
    cluster.sentinel = true;
    cluster.rebootWorks = false;
    const config = { rebootRetries: 2 };
    expect((await tick(cluster, config)).kind).toBe('rebooting');
    await cluster.clock.advance(REBOOT_GRACE_MS);
    expect((await tick(cluster, config)).kind).toBe('rebooting');
    await cluster.clock.advance(REBOOT_GRACE_MS);
    expect((await tick(cluster, config)).kind).toBe('failed');
    expect((await tick(cluster, config)).kind).toBe('failed');
    const history = parseHistory(cluster.node.annotations[HISTORY_ANNOTATION]);
    expect(history.map((r) => [r.result, r.bootIDBefore, r.bootIDAfter])).toEqual([
      ['failed', 'boot-1', 'boot-1'],
    ]);
  });

  it('keeps the latest --history-limit records', async () => {
    const cluster = new FakeCluster();
    for (let i = 0; i < 4; i++) {
      cluster.sentinel = true;
      expect((await tick(cluster, { historyLimit: 3 })).kind).toBe('rebooting');
      expect((await tick(cluster, { historyLimit: 3 })).kind).toBe('completed');
    }
    const history = parseHistory(cluster.node.annotations[HISTORY_ANNOTATION]);
    expect(history.map((r) => [r.bootIDBefore, r.bootIDAfter])).toEqual([
      ['boot-2', 'boot-3'],
      ['boot-3', 'boot-4'],
      ['boot-4', 'boot-5'],
    ]);
  });

  it('records a failed drain, and nothing with --history-limit 0', async () => {
    const failing = new FakeCluster();
    failing.sentinel = true;
    failing.drainFails = true;
    expect((await tick(failing)).kind).toBe('quarantined');
    expect(parseHistory(failing.node.annotations[HISTORY_ANNOTATION]).map((r) => r.result)).toEqual([
      'drain-failed',
    ]);
    const off = new FakeCluster();
    off.sentinel = true;
    await tick(off, { historyLimit: 0 });
    await tick(off, { historyLimit: 0 });
    expect(off.node.annotations[HISTORY_ANNOTATION]).toBeUndefined();
  });
});
