// `kured-ts reboot NODE --reason TEXT [--now]` (issue 33, kured #110) through the real client against
// the fake API server: the command as registered with commander writes the request with the admin's
// identity (SelfSubjectReview) and an Event; the agents over the real seams take it as a reboot need,
// through the lock, the PDBs and the drain; --now past a closed window and a blocking pod.
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { Agent } from '../../../src/agent/agent.js';
import { createAgentDeps } from '../../../src/agent/create-agent.js';
import { registerCheck } from '../../../src/cli/check-command.js';
import { rebootOptions, registerReboot } from '../../../src/cli/reboot.js';
import type { Clock } from '../../../src/clock/clock.js';
import type { Config } from '../../../src/config/config.js';
import { defaultConfig } from '../../../src/config/parse.js';
import type {
  CoreV1Event,
  V1DaemonSet,
  V1Node,
  V1Pod,
  V1PodDisruptionBudget,
} from '../../../src/kube/kube.js';
import { entriesOf, parseLockAnnotation } from '../../../src/lock/kured-lock-format.js';
import { MemoryLogger } from '../../../src/log/logger.js';
import { HISTORY_ANNOTATION, parseHistory } from '../../../src/node/history.js';
import { REBOOT_REQUEST_ANNOTATION, parseRebootRequest } from '../../../src/node/reboot-request.js';
import { parseLabelSelector } from '../../../src/selector/label-selector.js';
import type { FakeApiServer } from '../../../src/sim/fake-api-server.js';
import { startClusterApiServer } from '../../fakes/cluster-api-server.js';
import { commandLine } from '../../fakes/command-line.js';
import { realTimeFrom } from '../../fakes/fake-clock.js';
import { testConfig } from '../../fakes/config.js';
import { kuredDaemonSet, nodeInfo, readyNode, webPod } from '../../fakes/kube-objects.js';
import { storedNode } from '../../fakes/cluster-reads.js';

const LOCK = 'weave.works/kured-node-lock';
const ADMIN = 'alice@example.com';
/** The commands' day: a Monday, so that a window of Sundays only is closed whatever today is. */
const MONDAY = '2026-01-05T10:00:00Z';

let server: FakeApiServer;
/** The agents' and the commands' clock, one per test so that time runs on across commands. */
let clock: Clock;
let out: string[];
let errs: string[];
/** Nodes whose host was asked to reboot, in order. */
let rebooted: string[];
/** Every node that ever held a lock slot. */
let lockHolders: Set<string>;

beforeEach(async () => {
  clock = realTimeFrom(MONDAY);
  server = await startClusterApiServer();
  out = [];
  errs = [];
  rebooted = [];
  lockHolders = new Set();
  server.create('daemonsets', kuredDaemonSet());
  for (const name of ['n1', 'n2']) {
    server.create<V1Node>('nodes', readyNode(name, `boot-${name}-1`));
    server.create<V1Pod>('pods', webPod(`web-${name}`, name));
  }
  server.onWrite((e) => {
    if (e.resource === 'daemonsets') for (const h of holders()) lockHolders.add(h);
  });
});

afterEach(async () => {
  await server.close();
});

function node(name: string): V1Node {
  return storedNode(server, name);
}

function holders(): string[] {
  const text = server.get<V1DaemonSet>('daemonsets', 'kube-system', 'kured')?.metadata?.annotations?.[LOCK];
  return text === undefined ? [] : entriesOf(parseLockAnnotation(text)).map((e) => e.nodeID);
}

function events(reason: string): CoreV1Event[] {
  return server.list<CoreV1Event>('events', 'default').filter((e) => e.reason === reason);
}

/** The commands as an admin types them, each request made as `user` (impersonation stands in for a token). */
function kuredTs(user = ADMIN): (args: readonly string[]) => Promise<number | undefined> {
  return commandLine([registerReboot, registerCheck], {
    env: {},
    out: (l) => out.push(l),
    err: (l) => errs.push(l),
    connect: () => server.kubeInMemory().impersonating({ user }),
    clock,
  });
}

/**
 * The agent of `name` over the real seams; no sentinel asks for a reboot; a requested reboot
 * brings the host back at once on a new boot, Ready.
 */
function agent(name: string, overrides: Partial<Config> = {}): Agent {
  const config = testConfig({
    nodeId: name,
    periodMs: 60_000,
    drainTimeoutMs: 5000,
    postRebootTimeoutMs: 60_000,
    lockQueue: 'none',
    ...overrides,
  });
  const deps = createAgentDeps(config, {
    kube: server.kubeInMemory(),
    clock,
    logger: new MemoryLogger(),
    sentinel: { rebootRequired: () => Promise.resolve({ required: false }) },
    rebooter: {
      reboot: () => {
        rebooted.push(name);
        const n = node(name);
        n.status = {
          ...n.status,
          nodeInfo: nodeInfo(`boot-${name}-2`),
          conditions: [{ type: 'Ready', status: 'True' }],
        };
        server.update('nodes', n);
        return Promise.resolve();
      },
    },
  });
  return new Agent(config, deps);
}

/** A maintenance window that never opens, and a pod on every node that blocks reboots. */
const HELD_BACK: Partial<Config> = {
  window: { ...defaultConfig().window, days: [] },
  blockingPodSelectors: [parseLabelSelector('app=web')],
};

describe('kured-ts reboot', () => {
  it('--now reboots exactly that node through the lock, past a closed window and a blocking pod, and clears the request', async () => {
    expect(await kuredTs()(['reboot', 'n1', '--reason', 'CVE-2026-0001 kernel fix', '--now'])).toBe(0);
    const request = parseRebootRequest(node('n1').metadata?.annotations?.[REBOOT_REQUEST_ANNOTATION]);
    expect(request).toMatchObject({ by: ADMIN, reason: 'CVE-2026-0001 kernel fix', now: true });
    expect(request).not.toHaveProperty('byUnverified');
    expect(events('RebootRequested').map((e) => [e.involvedObject.name, e.message])).toEqual([
      ['n1', expect.stringContaining(`by ${ADMIN}`)],
    ]);

    expect((await agent('n2', HELD_BACK).tick()).kind).toBe('idle');
    expect((await agent('n1', HELD_BACK).tick()).kind).toBe('rebooting');
    expect(rebooted).toEqual(['n1']);
    expect([...lockHolders]).toEqual(['n1']);
    expect(server.list<V1Pod>('pods').map((p) => p.metadata?.name)).toEqual(['web-n2']); // drained

    expect((await agent('n1', HELD_BACK).tick()).kind).toBe('completed');
    expect(node('n1').metadata?.annotations?.[REBOOT_REQUEST_ANNOTATION]).toBeUndefined();
    expect(parseHistory(node('n1').metadata?.annotations?.[HISTORY_ANNOTATION])).toEqual([
      expect.objectContaining({
        result: 'success',
        requestedByAdmin: ADMIN,
        requestReason: 'CVE-2026-0001 kernel fix',
      }),
    ]);
    // answered: the next pass finds no need
    expect((await agent('n1', HELD_BACK).tick()).kind).toBe('idle');
    expect(rebooted).toEqual(['n1']);
    expect(holders()).toEqual([]);
  });

  it('without --now waits for the window and the blockers like any reboot need', async () => {
    expect(await kuredTs()(['reboot', 'n1', '--reason', 'patch'])).toBe(0);
    expect((await agent('n1', { window: HELD_BACK.window }).tick()).kind).toBe('outside-window');
    const blocked = await agent('n1', { blockingPodSelectors: HELD_BACK.blockingPodSelectors }).tick();
    expect(blocked.kind).toBe('blocked');
    expect(rebooted).toEqual([]);
    expect(holders()).toEqual([]);
  });

  it('--now never passes the lock: it waits while another node holds the only slot', async () => {
    const ds = server.get<V1DaemonSet>('daemonsets', 'kube-system', 'kured')!;
    // eslint-disable-next-line no-restricted-syntax -- real time: the lock entry is judged on the system clock of the agent under test
    const entry = `{"nodeID":"n2","metadata":{"unschedulable":false},"created":"${new Date().toISOString()}","TTL":0}`;
    server.update('daemonsets', { ...ds, metadata: { ...ds.metadata, annotations: { [LOCK]: entry } } });
    expect(await kuredTs()(['reboot', 'n1', '--reason', 'patch', '--now'])).toBe(0);
    const outcome = await agent('n1').tick();
    expect(outcome.kind).toBe('waiting-for-lock');
    expect(rebooted).toEqual([]);
  });

  it('--now never passes a PodDisruptionBudget that allows no disruption', async () => {
    server.create<V1PodDisruptionBudget>('poddisruptionbudgets', {
      metadata: { name: 'web', namespace: 'default' },
      spec: { minAvailable: 2, selector: { matchLabels: { app: 'web' } } },
    });
    expect(await kuredTs()(['reboot', 'n1', '--reason', 'patch', '--now'])).toBe(0);
    const outcome = await agent('n1').tick();
    expect(outcome).toMatchObject({ kind: 'blocked', blocker: 'pdb' });
    expect(rebooted).toEqual([]);
    expect(holders()).toEqual([]);
  });

  it('--cancel takes the request back before the cycle, with an Event', async () => {
    expect(await kuredTs()(['reboot', 'n1', '--reason', 'patch'])).toBe(0);
    expect(await kuredTs('bob@example.com')(['reboot', 'n1', '--cancel'])).toBe(0);
    expect(node('n1').metadata?.annotations?.[REBOOT_REQUEST_ANNOTATION]).toBeUndefined();
    expect(events('RebootRequestCancelled').map((e) => e.message)).toEqual([
      expect.stringMatching(/by alice@example.com .*cancelled by bob@example.com/),
    ]);
    expect((await agent('n1').tick()).kind).toBe('idle');
    expect(rebooted).toEqual([]);
  });

  it('records a stand-in identity, with the reason, when the API server refuses the SelfSubjectReview', async () => {
    server.injectFailure({ method: 'POST', pathIncludes: 'selfsubjectreviews' }, 403, 1);
    expect(await kuredTs()(['reboot', 'n1', '--reason', 'patch'])).toBe(0);
    const request = parseRebootRequest(node('n1').metadata?.annotations?.[REBOOT_REQUEST_ANNOTATION]);
    expect(request).toMatchObject({
      by: expect.stringContaining('@'),
      byUnverified: expect.stringMatching(/403/),
    });
  });

  it('kured-ts check --node shows the request and the decision it leads to', async () => {
    expect(await kuredTs()(['reboot', 'n1', '--reason', 'patch', '--now'])).toBe(0);
    out = [];
    const code = await kuredTs()(['check', '--node', 'n1', '--reboot-days', 'sun', '--lock-queue', 'none']);
    expect(out.join('\n')).toMatch(
      /request\s+ok\s+reboot requested by alice@example.com at 2026-01-05T.*--now/,
    );
    expect(out.join('\n')).toMatch(/window\s+skipped/);
    expect(out.at(-1)).toMatch(/^decision: would-reboot/);
    expect(code).toBe(0);
  });

  it('fails with exit 1 on a node that does not exist, writing nothing', async () => {
    expect(await kuredTs()(['reboot', 'n9', '--reason', 'patch'])).toBe(1);
    expect(errs).toEqual(['node n9 not found']);
    expect(events('RebootRequested')).toEqual([]);
  });
});

describe('kured-ts reboot usage', () => {
  it.each<[string, string[], { reason?: string; now?: boolean; cancel?: boolean }, RegExp]>([
    ['no node', [], { reason: 'x' }, /name the node/],
    ['two nodes', ['n1', 'n2'], { reason: 'x' }, /one node/],
    ['no reason', ['n1'], {}, /--reason is required/],
    ['--cancel with --now', ['n1'], { cancel: true, now: true }, /either --cancel or --now/],
  ])('refuses %s', (_name, nodes, flags, message) => {
    expect(() => rebootOptions(nodes, flags)).toThrow(message);
  });

  it('exits 2 with one line on bad usage, before any API request', async () => {
    const before = server.requests.length;
    expect(await kuredTs()(['reboot', 'n1'])).toBe(2);
    expect(errs).toEqual(['error: --reason is required: say why the node must reboot']);
    expect(server.requests.length).toBe(before);
  });
});
