import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { dump, load } from 'js-yaml';
import type { AddressInfo } from 'node:net';
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { commandLine } from '../../fakes/command-line.js';
import { Command } from 'commander';
import { runPause, registerPause } from '../../../src/cli/pause.js';
import { registerResume, runResume } from '../../../src/cli/resume.js';
import {
  FLEET_PAUSE_ANNOTATION,
  type CommandDeps,
  type CommandIo,
  type KubeTarget,
} from '../../../src/cli/shared.js';
import { type StatusOptions, type StatusReport } from '../../../src/cli/status.js';
import { registerStatus, runStatus } from '../../../src/cli/status-command.js';
import { registerUnlock } from '../../../src/cli/unlock.js';
import { connectKube } from '../../../src/kube/client.js';
import { IN_CLUSTER_TOKEN, missingKubeconfig } from '../../../src/kube/default-config.js';
import type { Kube, V1DaemonSet, V1Lease, V1Node } from '../../../src/kube/kube.js';
import { TURN_ANNOTATION, formatLapsedTurn, formatTurn } from '../../../src/queue/turn.js';
import { startFakeApiServer, type FakeApiServer } from '../../../src/sim/fake-api-server.js';
import { FakeClock } from '../../fakes/fake-clock.js';

const LOCK = 'weave.works/kured-node-lock';
const DS = { dsNamespace: 'kube-system', dsName: 'kured' };
const STATUS: StatusOptions = { ...DS, lockAnnotation: LOCK, lockTtlMs: 0, output: 'table' };

let server: FakeApiServer;
let out: string[];
let errs: string[];
let io: CommandIo;
let clock: FakeClock;

function node(name: string, annotations: Record<string, string> = {}, unschedulable = false): V1Node {
  return {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: { name, annotations },
    spec: { unschedulable },
    status: { nodeInfo: { bootID: `boot-${name}` } as NonNullable<V1Node['status']>['nodeInfo'] },
  };
}

function daemonSet(annotations: Record<string, string> = {}): V1DaemonSet {
  return {
    apiVersion: 'apps/v1',
    kind: 'DaemonSet',
    metadata: {
      name: 'kured',
      namespace: 'kube-system',
      annotations: { 'owner/other': 'keep-me', ...annotations },
    },
    spec: {
      selector: { matchLabels: { app: 'kured' } },
      template: {
        metadata: { labels: { app: 'kured' } },
        spec: { containers: [{ name: 'kured', image: 'kured-ts' }] },
      },
    },
  };
}

function status(phase: string, reason: string, since = '2026-01-05T09:00:00Z', extra: object = {}): string {
  return JSON.stringify({ phase, reason, since, bootID: 'b', ...extra });
}

function writes(): { method: string; path: string }[] {
  return server.requests
    .filter((r) => !['GET', 'HEAD'].includes(r.method))
    .map((r) => ({ method: r.method, path: r.path }));
}

function dsAnnotations(): Record<string, string> {
  return server.get<V1DaemonSet>('daemonsets', 'kube-system', 'kured')?.metadata?.annotations ?? {};
}

beforeEach(async () => {
  server = await startFakeApiServer();
  out = [];
  errs = [];
  clock = new FakeClock('2026-01-05T10:00:00Z');
  io = {
    kube: server.kubeInMemory(),
    out: (l) => out.push(l),
    err: (l) => errs.push(l),
    clock,
  };
});

afterEach(async () => {
  await server.close();
});

/** A fleet of three: n1 rebooting with the lock, n2 blocked, n3 idle after a reboot, n4 unknown to kured-ts. */
function seedFleet(dsExtra: Record<string, string> = {}): void {
  server.create(
    'daemonsets',
    daemonSet({
      [LOCK]: '{"nodeID":"n1","metadata":{"unschedulable":false},"created":"2026-01-05T09:50:00Z","TTL":0}',
      ...dsExtra,
    }),
  );
  server.create(
    'nodes',
    node(
      'n1',
      {
        'kured-ts.dev/status': status('draining', 'lock acquired (n1)', '2026-01-05T09:50:00Z', {
          requiredSince: '2026-01-05T06:00:00Z',
          due: '2026-01-05T08:00:00Z',
        }),
      },
      true,
    ),
  );
  server.create(
    'nodes',
    node('n2', {
      'kured-ts.dev/status': status('blocked', 'alert HighErrorRate firing', '2026-01-05T09:00:00Z', {
        requiredSince: '2026-01-05T09:00:00Z',
        due: '2026-01-06T09:00:00Z',
      }),
    }),
  );
  server.create(
    'nodes',
    node('n3', {
      'kured-ts.dev/status': status('idle', 'reboot not required', '2026-01-05T08:00:00Z', {
        lastReboot: '2026-01-05T07:59:00Z',
      }),
      'kured-ts.dev/reboot-paused': 'true',
    }),
  );
  server.create('nodes', node('n4', { 'weave.works/kured-reboot-in-progress': '2026-01-05T09:00:00Z' }));
}

describe('kured-ts status', () => {
  it('prints one row per node with reboot, phase, reason, lock and last reboot', async () => {
    seedFleet();
    expect(await runStatus(STATUS, io)).toBe(0);
    expect(out).toEqual([
      'NODE   REBOOT   PHASE      AGE     OVERDUE   REASON                                                LOCK   LAST REBOOT',
      'n1     yes      draining   4h00m   yes       lock acquired (n1)                                    held   -',
      'n2     yes      blocked    1h00m   no        alert HighErrorRate firing                            -      -',
      'n3     no       idle       -       -         [node paused] reboot not required                     -      2026-01-05T07:59:00Z',
      'n4     yes      -          -       -         kured reboot in progress since 2026-01-05T09:00:00Z   -      -',
    ]);
    expect(writes()).toEqual([]);
  });

  it('shows a fleet pause, an expired slot and a lock holder that is not a node', async () => {
    server.create(
      'daemonsets',
      daemonSet({
        [LOCK]: JSON.stringify({
          maxOwners: 2,
          locks: [
            {
              nodeID: 'n1',
              metadata: { unschedulable: false },
              created: '2026-01-05T08:00:00Z',
              TTL: 3600e9,
            },
            { nodeID: 'manual', metadata: { unschedulable: false }, created: '2026-01-05T09:00:00Z', TTL: 0 },
          ],
        }),
        [FLEET_PAUSE_ANNOTATION]: JSON.stringify({
          reason: 'kernel freeze',
          by: 'alice',
          since: '2026-01-05T09:30:00Z',
        }),
      }),
    );
    server.create(
      'nodes',
      node('n1', { 'kured-ts.dev/status': status('completed', 'reboot verified', '2026-01-05T09:10:00Z') }),
    );
    expect(await runStatus(STATUS, io)).toBe(0);
    expect(out[0]).toBe('Fleet PAUSED by alice since 2026-01-05T09:30:00Z: kernel freeze');
    expect(out[1]).toBe('Lock also held by: manual (not a node)');
    expect(out[3]).toMatch(
      /^n1 +no +completed +- +- +reboot verified +held \(expired\) +2026-01-05T09:10:00Z$/,
    );
  });

  it.each<[string, V1Lease['spec'], Record<string, string>, string]>([
    [
      'names the coordinator that leads, when it renewed, and why it gives no turn now, as it advises',
      { holderIdentity: 'kured-coordinator-7f9c', renewTime: '2026-01-05T09:59:50.000000Z' },
      {
        'kured-ts.dev/fleet-advice': JSON.stringify({
          by: 'kured-coordinator-7f9c',
          seq: 3,
          nodes: 4,
          held: { gate: 'max-unhealthy-nodes', reason: '1 other node unhealthy (max 0): n4' },
        }),
      },
      'Coordinator: kured-coordinator-7f9c (Lease kube-system/kured-coordinator, renewed 2026-01-05T09:59:50.000000Z; no turn now: 1 other node unhealthy (max 0): n4)',
    ],
    [
      "shows no advice written under another coordinator's name",
      { holderIdentity: 'kured-coordinator-7f9c', renewTime: '2026-01-05T09:59:50.000000Z' },
      {
        'kured-ts.dev/fleet-advice': JSON.stringify({
          by: 'thief',
          seq: 3,
          nodes: 4,
          held: { reason: 'lies' },
        }),
      },
      'Coordinator: kured-coordinator-7f9c (Lease kube-system/kured-coordinator, renewed 2026-01-05T09:59:50.000000Z)',
    ],
    [
      'says so when the coordinator has released its Lease',
      { holderIdentity: '' },
      {},
      'Coordinator: none leading (Lease kube-system/kured-coordinator released; agents go first come if no standby takes it within 30s)',
    ],
  ])('%s, and the node whose turn it is', async (_name, spec, annotations, line) => {
    seedFleet();
    server.create<V1Lease>('leases', {
      metadata: { name: 'kured-coordinator', namespace: 'kube-system', annotations },
      spec,
    });
    const n2 = server.get<V1Node>('nodes', undefined, 'n2')!;
    n2.metadata = {
      ...n2.metadata,
      annotations: { ...n2.metadata?.annotations, [TURN_ANNOTATION]: formatTurn({ since: 's', by: 'c' }) },
    };
    server.update('nodes', n2);
    expect(await runStatus(STATUS, io)).toBe(0);
    expect(out[0]).toBe(line);
    expect(out[3]).toMatch(/^n2 .* its turn +- *$/);
    expect(writes()).toEqual([]);
  });

  it('shows a turn that lapsed unused, which is no turn', async () => {
    seedFleet();
    const n2 = server.get<V1Node>('nodes', undefined, 'n2')!;
    const lapsed = formatLapsedTurn({ turn: { since: 's', by: 'c' }, at: 'a' });
    n2.metadata = { ...n2.metadata, annotations: { ...n2.metadata?.annotations, [TURN_ANNOTATION]: lapsed } };
    server.update('nodes', n2);
    expect(await runStatus(STATUS, io)).toBe(0);
    expect(out.find((l) => l.startsWith('n2 '))).toMatch(/^n2 .* turn lapsed +- *$/);
    out.length = 0;
    expect(await runStatus({ ...STATUS, output: 'json' }, io)).toBe(0);
    const report = JSON.parse(out.join('\n')) as StatusReport;
    expect(report.nodes[1]).toMatchObject({
      node: 'n2',
      turn: null,
      lapsedTurn: { turn: { since: 's', by: 'c' } },
    });
  });

  it('prints the whole report as JSON with -o json', async () => {
    seedFleet();
    expect(await runStatus({ ...STATUS, output: 'json' }, io)).toBe(0);
    const report = JSON.parse(out.join('\n')) as StatusReport;
    expect(report.lock).toEqual({ holders: ['n1'], maxOwners: 1, error: null });
    expect(report.pause).toBeNull();
    expect(report.coordinator).toBeNull(); // none installed: no Lease
    expect(report.nodes.map((n) => n.node)).toEqual(['n1', 'n2', 'n3', 'n4']);
    expect(report.nodes[0]).toEqual({
      node: 'n1',
      rebootRequired: true,
      phase: 'draining',
      reason: 'lock acquired (n1)',
      since: '2026-01-05T09:50:00Z',
      need: {
        since: '2026-01-05T06:00:00Z',
        forMs: 4 * 3_600_000,
        due: '2026-01-05T08:00:00Z',
        overdue: true,
      },
      bootID: 'boot-n1',
      turn: null,
      lapsedTurn: null,
      lock: { held: true, since: '2026-01-05T09:50:00Z', expired: false, group: null },
      lastReboot: null,
      staleView: null,
      approval: null,
      history: [],
      quarantine: null,
      paused: false,
      unschedulable: true,
      kured: { rebootInProgress: null, mostRecentRebootNeeded: null },
    });
    expect(report.nodes[2]?.paused).toBe(true);
    expect(report.nodes[2]?.need).toBeNull();
  });

  it('reports an unreadable lock annotation instead of failing', async () => {
    server.create('daemonsets', daemonSet({ [LOCK]: 'garbage' }));
    server.create('nodes', node('n1'));
    expect(await runStatus(STATUS, io)).toBe(0);
    expect(out[0]).toMatch(
      /^Lock: unreadable lock annotation: not JSON: garbage \(agents treat it as held\)$/,
    );
    expect(out[2]).toMatch(/^n1 +\? +- +- +- +- +- +-$/);
  });

  it('fails with one line naming the flags when the DaemonSet does not exist', async () => {
    server.create('nodes', node('n1'));
    expect(await runStatus(STATUS, io)).toBe(1);
    expect(errs).toEqual(['DaemonSet kube-system/kured not found (set --ds-namespace and --ds-name)']);
    expect(out).toEqual([]);
  });
});

describe('kured-ts pause and resume', () => {
  it('writes the pause annotation as a merge patch of that key only, and resume removes it', async () => {
    seedFleet();
    expect(await runPause({ ...DS, reason: 'kernel freeze', by: 'alice@laptop' }, io)).toBe(0);
    expect(JSON.parse(dsAnnotations()[FLEET_PAUSE_ANNOTATION] ?? '')).toEqual({
      reason: 'kernel freeze',
      by: 'alice@laptop',
      since: '2026-01-05T10:00:00.000Z',
    });
    expect(dsAnnotations()['owner/other']).toBe('keep-me');
    expect(dsAnnotations()[LOCK]).toContain('"nodeID":"n1"');
    const patch = server.requests.find((r) => r.method === 'PATCH');
    expect(patch?.contentType).toBe('application/merge-patch+json');
    expect(out).toEqual([
      'fleet paused by alice@laptop at 2026-01-05T10:00:00.000Z: kernel freeze',
      'agents will not take the lock until `kured-ts resume`; reboots already under way finish',
    ]);

    out.length = 0;
    expect(await runResume(DS, io)).toBe(0);
    expect(dsAnnotations()[FLEET_PAUSE_ANNOTATION]).toBeUndefined();
    expect(dsAnnotations()['owner/other']).toBe('keep-me');
    expect(dsAnnotations()[LOCK]).toContain('"nodeID":"n1"');
    expect(out).toEqual([
      'fleet resumed (was paused by alice@laptop since 2026-01-05T10:00:00.000Z: kernel freeze)',
    ]);
  });

  it('says so when pausing a paused fleet, and replaces the pause', async () => {
    server.create(
      'daemonsets',
      daemonSet({
        [FLEET_PAUSE_ANNOTATION]: JSON.stringify({ reason: 'old', by: 'bob', since: 'yesterday' }),
      }),
    );
    expect(await runPause({ ...DS, reason: 'new', by: 'alice' }, io)).toBe(0);
    expect(out[0]).toBe('fleet was already paused by bob since yesterday: old');
    expect(JSON.parse(dsAnnotations()[FLEET_PAUSE_ANNOTATION] ?? '')).toMatchObject({
      reason: 'new',
      by: 'alice',
    });
  });

  it('resumes a fleet that is not paused without writing', async () => {
    server.create('daemonsets', daemonSet());
    expect(await runResume(DS, io)).toBe(0);
    expect(out).toEqual(['fleet is not paused: nothing to do']);
    expect(writes()).toEqual([]);
  });

  it.each(['', '   '])('refuses an empty reason %j without calling the API', async (reason) => {
    server.create('daemonsets', daemonSet());
    expect(await runPause({ ...DS, reason, by: 'alice' }, io)).toBe(2);
    expect(errs).toEqual(['--reason must not be empty: say why the fleet is paused']);
    expect(server.requests).toEqual([]);
  });

  it('fails with one clear line when the API forbids the patch', async () => {
    server.create('daemonsets', daemonSet());
    server.injectFailure({ method: 'PATCH' }, 403, 1);
    expect(await runPause({ ...DS, reason: 'x', by: 'alice' }, io)).toBe(1);
    expect(errs).toHaveLength(1);
    expect(errs[0]).toMatch(/^not allowed to pause the fleet \(DaemonSet kube-system\/kured\): .*\(403\)$/);
  });
});

describe('the subcommands as registered with commander', () => {
  function program(connect: (target: KubeTarget) => Kube): {
    run: (args: string[]) => Promise<number | undefined>;
  } {
    const deps = {
      env: {},
      out: (l: string) => out.push(l),
      err: (l: string) => errs.push(l),
      connect,
      clock,
    };
    return { run: commandLine([registerStatus, registerPause, registerResume], deps) };
  }

  it('runs status -o json, pause and resume end to end', async () => {
    seedFleet();
    const cli = program(() => server.kubeInMemory());
    expect(await cli.run(['status', '-o', 'json'])).toBe(0);
    expect((JSON.parse(out.join('\n')) as StatusReport).nodes).toHaveLength(4);
    expect(await cli.run(['pause', '--reason', 'freeze', '--by', 'ci'])).toBe(0);
    expect(dsAnnotations()[FLEET_PAUSE_ANNOTATION]).toContain('"reason":"freeze"');
    expect(await cli.run(['resume'])).toBe(0);
    expect(dsAnnotations()[FLEET_PAUSE_ANNOTATION]).toBeUndefined();
  });

  it.each([
    ['status', ['status']],
    ['pause', ['pause', '--reason', 'x']],
    ['resume', ['resume']],
  ])('%s exits 1 with one line when the cluster is unreachable', async (_name, args) => {
    const url = server.url;
    // the next server (for afterEach) is bound before the old one closes, so that it cannot be given
    // the old port (a freed ephemeral port is handed out again: under load it was, and answered)
    const next = await startFakeApiServer();
    await server.close();
    server = next; // the old URL now refuses connections
    const cli = program(() => connectKube({ url }));
    expect(await cli.run(args)).toBe(1);
    expect(errs).toHaveLength(1);
    expect(errs[0]).toMatch(/^cannot reach the Kubernetes API \(.*\): .*ECONNREFUSED/);
    expect(out).toEqual([]);
  });

  it('gives up on an API server that never answers, with one line, within the command timeout', async () => {
    const hanging = createServer(() => undefined);
    await new Promise<void>((resolve) => hanging.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(hanging.address() as AddressInfo).port}`;
    try {
      // The command's own timeout (300 ms) ends it, not the request deadline (30 s).
      const code = await runStatus(STATUS, { ...io, kube: connectKube({ url }), timeoutMs: 300 });
      expect(code).toBe(1);
      expect(errs).toEqual(['cannot reach the Kubernetes API (read node status): no answer in time']);
    } finally {
      hanging.closeAllConnections();
      await new Promise<void>((resolve) =>
        hanging.close(() => {
          resolve();
        }),
      );
    }
  });

  it('rejects an unknown output format with exit 2', async () => {
    const cli = program(() => server.kubeInMemory());
    expect(await cli.run(['status', '-o', 'xml'])).toBe(2);
    expect(errs).toEqual(['invalid value for -o/--output: xml (table, wide, json or yaml)']);
    expect(server.requests).toEqual([]);
  });

  it('prints the same report as YAML with -o yaml as with -o json', async () => {
    seedFleet();
    const cli = program(() => server.kubeInMemory());
    expect(await cli.run(['status', '-o', 'json'])).toBe(0);
    const json: unknown = JSON.parse(out.join('\n'));
    out.length = 0;
    expect(await cli.run(['status', '-o', 'yaml'])).toBe(0);
    expect(load(out.join('\n'))).toEqual(json);
  });

  it('prints every field with -o wide, the reason whole', async () => {
    seedFleet();
    const cli = program(() => server.kubeInMemory());
    expect(await cli.run(['status', '-o', 'wide'])).toBe(0);
    expect(out[0]?.split(/ {3,}/)).toEqual([
      'NODE',
      'REBOOT',
      'PHASE',
      'SINCE',
      'AGE',
      'DUE',
      'LOCK',
      'LOCK SINCE',
      'SCHEDULABLE',
      'PAUSED',
      'LAST REBOOT',
      'BOOT ID',
      'REASON',
    ]);
    expect(out[1]?.split(/ {3,}/)).toEqual([
      'n1',
      'yes',
      'draining',
      '2026-01-05T09:50:00Z',
      '4h00m',
      '2026-01-05T08:00:00Z',
      'held',
      '2026-01-05T09:50:00Z',
      'no',
      'no',
      '-',
      'boot-n1',
      'lock acquired (n1)',
    ]);
  });

  it("shows with -o wide the group a slot records under --group-label, and a group-less node's slot", async () => {
    seedFleet({
      [LOCK]: JSON.stringify({
        maxOwners: 3,
        locks: [
          {
            nodeID: 'n1',
            metadata: { unschedulable: false, group: 'zone-a' },
            created: '2026-01-05T09:50:00Z',
            TTL: 0,
          },
          {
            nodeID: 'n2',
            metadata: { unschedulable: false, group: '' },
            created: '2026-01-05T09:51:00Z',
            TTL: 0,
          },
        ],
      }),
    });
    const cli = program(() => server.kubeInMemory());
    expect(await cli.run(['status', '-o', 'wide'])).toBe(0);
    expect(out.slice(1, 3).map((l) => l.split(/ {3,}/)[6])).toEqual([
      'held [zone-a]',
      'held [no group label]',
    ]);
  });

  it('reads the DaemonSet name from KURED_DS_NAME when no flag is given', async () => {
    server.create('daemonsets', { ...daemonSet(), metadata: { name: 'other', namespace: 'kube-system' } });
    let code: number | undefined;
    const prog = new Command().exitOverride();
    registerResume(prog, {
      env: { KURED_DS_NAME: 'other' },
      out: (l) => out.push(l),
      err: (l) => errs.push(l),
      exit: (c) => (code = c),
      connect: () => server.kubeInMemory(),
      clock,
    });
    await prog.parseAsync(['resume'], { from: 'user' });
    expect(code).toBe(0);
    expect(out).toEqual(['fleet is not paused: nothing to do']);
  });

  it('takes -n as --ds-namespace, and refuses the two when they disagree', async () => {
    server.create('daemonsets', { ...daemonSet(), metadata: { name: 'kured', namespace: 'ops' } });
    const cli = program(() => server.kubeInMemory());
    expect(await cli.run(['resume', '-n', 'ops'])).toBe(0);
    expect(out).toEqual(['fleet is not paused: nothing to do']);
    expect(await cli.run(['resume', '-n', 'ops', '--ds-namespace', 'kube-system'])).toBe(2);
    expect(errs).toEqual([
      'invalid value "ops" for -n/--namespace: disagrees with --ds-namespace kube-system',
    ]);
  });
  it.each([
    [['status', '--ds-name', 'Kured_DS'], {}, '--ds-name'],
    [['pause', '--reason', 'x', '--ds-namespace', 'Ops!'], {}, '--ds-namespace'],
    [['unlock', '--stale', '-n', 'kube_system'], {}, '--ds-namespace'],
    [['resume'], { KURED_DS_NAME: 'Bad Name' }, 'KURED_DS_NAME'],
  ] as [string[], Record<string, string>, string][])(
    'refuses a DaemonSet name the API server would refuse, before any request, naming it (%j %j)',
    async (args, env, named) => {
      let code: number | undefined;
      const prog = new Command().exitOverride();
      const deps = {
        env,
        out: (l: string) => out.push(l),
        err: (l: string) => errs.push(l),
        exit: (c: number) => (code = c),
        connect: () => server.kubeInMemory(),
        clock,
      };
      registerStatus(prog, deps);
      registerPause(prog, deps);
      registerResume(prog, deps);
      registerUnlock(prog, deps);
      const before = server.requests.length;
      await prog.parseAsync(args, { from: 'user' });
      expect(code).toBe(2);
      expect(errs).toHaveLength(1);
      expect(errs[0]).toContain(named);
      expect(server.requests.length).toBe(before);
    },
  );
});

describe('which cluster the commands talk to', () => {
  let other: FakeApiServer;
  let dir: string;

  beforeEach(async () => {
    other = await startFakeApiServer();
    dir = await mkdtemp(join(tmpdir(), 'kured-ts-kubeconfig-'));
  });

  afterEach(async () => {
    await other.close();
    await rm(dir, { recursive: true, force: true });
  });

  /** A kubeconfig with contexts `one` (current, the main fake server) and `two` (the other). */
  async function kubeconfig(): Promise<string> {
    const path = join(dir, 'config');
    const cluster = (name: string, url: string): object => ({
      name,
      cluster: { server: url, 'insecure-skip-tls-verify': true },
    });
    await writeFile(
      path,
      dump({
        apiVersion: 'v1',
        kind: 'Config',
        clusters: [cluster('one', server.url), cluster('two', other.url)],
        users: [{ name: 'u', user: {} }],
        contexts: [
          { name: 'one', context: { cluster: 'one', user: 'u' } },
          { name: 'two', context: { cluster: 'two', user: 'u' } },
        ],
        'current-context': 'one',
      }),
    );
    return path;
  }

  function run(
    args: string[],
    env: CommandDeps['env'] = {},
    exists: (path: string) => boolean = () => false,
  ): Promise<number | undefined> {
    let code: number | undefined;
    const prog = new Command().exitOverride();
    registerStatus(prog, {
      env,
      out: (l) => out.push(l),
      err: (l) => errs.push(l),
      exit: (c) => (code = c),
      clock,
      exists,
    });
    return prog.parseAsync(args, { from: 'user' }).then(() => code);
  }

  it("uses the kubeconfig's current context, or the one --context names", async () => {
    const path = await kubeconfig();
    server.create('daemonsets', daemonSet());
    server.create('nodes', node('on-one'));
    other.create('daemonsets', daemonSet());
    other.create('nodes', node('on-two'));
    expect(await run(['status', '--kubeconfig', path])).toBe(0);
    expect(out.slice(1).map((l) => l.split(' ')[0])).toEqual(['on-one']);
    out.length = 0;
    expect(await run(['status', '--kubeconfig', path, '--context', 'two'])).toBe(0);
    expect(out.slice(1).map((l) => l.split(' ')[0])).toEqual(['on-two']);
    expect(errs).toEqual([]);
  });

  it('names the contexts there are when --context names none of them, and sends nothing', async () => {
    const path = await kubeconfig();
    expect(await run(['status', '--kubeconfig', path, '--context', 'three'])).toBe(1);
    expect(errs).toEqual([
      'cannot load the Kubernetes configuration: context "three" not found in the kubeconfig (contexts: one, two)',
    ]);
    expect(server.requests).toEqual([]);
    expect(other.requests).toEqual([]);
  });

  it.each([
    {
      name: 'says in one line that no cluster is configured',
      env: { HOME: '/home/sre' },
      exists: (): boolean => false,
      error:
        'no kubeconfig: KUBECONFIG unset, ~/.kube/config missing, not in a cluster; set --kubeconfig or KUBECONFIG',
    },
    {
      name: 'says so too when there is no home directory',
      env: {},
      exists: (): boolean => false,
      error:
        'no kubeconfig: KUBECONFIG unset, no home directory (HOME unset), not in a cluster; set --kubeconfig or KUBECONFIG',
    },
  ])('$name', async ({ env, exists, error }) => {
    expect(await run(['status'], env, exists)).toBe(1);
    expect(errs).toEqual([error]);
    expect(out).toEqual([]);
  });
});

describe('missingKubeconfig', () => {
  it.each<[string, Record<string, string>, string[], boolean]>([
    ['KUBECONFIG is set', { KUBECONFIG: '/x' }, [], false],
    ['~/.kube/config exists', { HOME: '/h' }, ['/h/.kube/config'], false],
    ['a service account token is mounted', {}, [IN_CLUSTER_TOKEN], false],
    ['nothing is there', { HOME: '/h' }, [], true],
    ['KUBECONFIG is empty and nothing else is there', { KUBECONFIG: '', HOME: '/h' }, [], true],
  ])('when %s, a missing kubeconfig is reported: %s', (_name, env, files, missing) => {
    const found = missingKubeconfig(env, (p) => files.includes(p));
    expect(found !== undefined).toBe(missing);
  });
});
