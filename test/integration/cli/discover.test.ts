// The operator commands find the chart's lock DaemonSet with no flags: NOTES.txt's commands run as
// printed, against the chart's own DaemonSet as `helm install` would create it, in the fake API server.
import { spawnSync } from 'node:child_process';
import { afterEach, beforeAll, beforeEach, describe, expect, it } from '@jest/globals';
import { commandLine } from '../../fakes/command-line.js';
import { startClusterApiServer } from '../../fakes/cluster-api-server.js';
import { parseAllDocuments } from 'yaml';
import { registerCheck } from '../../../src/cli/check-command.js';
import { registerPause } from '../../../src/cli/pause.js';
import { registerResume } from '../../../src/cli/resume.js';
import { FLEET_PAUSE_ANNOTATION } from '../../../src/cli/shared.js';
import { registerStatus } from '../../../src/cli/status-command.js';
import { registerUnlock } from '../../../src/cli/unlock.js';
import type { V1DaemonSet } from '../../../src/kube/kube.js';
import { type FakeApiServer } from '../../../src/sim/fake-api-server.js';
import { FakeClock } from '../../fakes/fake-clock.js';
import { kuredDaemonSet, readyNode } from '../../fakes/kube-objects.js';

let helm = '';
let server: FakeApiServer;
let out: string[];
let errs: string[];

beforeAll(() => {
  helm = spawnSync(process.execPath, ['scripts/ensure-helm.mjs'], { encoding: 'utf8' }).stdout.trim();
});

beforeEach(async () => {
  server = await startClusterApiServer();
  out = [];
  errs = [];
  server.create('nodes', readyNode('n1'));
});

afterEach(async () => {
  await server.close();
});

/** The chart's DaemonSet as `helm template` renders it, in `namespace`, with `sets`. */
function chartDaemonSet(namespace = 'kube-system', sets: string[] = [], release = 'kured-ts'): V1DaemonSet {
  const args = [
    'template',
    release,
    'charts/kured-ts',
    '--namespace',
    namespace,
    ...sets.flatMap((s) => ['--set', s]),
  ];
  const rendered = spawnSync(helm, args, { encoding: 'utf8' });
  if (rendered.status !== 0) throw new Error(rendered.stderr);
  const ds = parseAllDocuments(rendered.stdout)
    .map((d) => d.toJS() as V1DaemonSet | null)
    .find((o) => o?.kind === 'DaemonSet');
  if (!ds) throw new Error('the chart renders no DaemonSet');
  return ds;
}

/** The operator commands NOTES.txt prints after `helm install` (one per line, as printed). */
function notesCommands(): string[][] {
  const installed = spawnSync(
    helm,
    ['install', 'kured-ts', 'charts/kured-ts', '-n', 'kube-system', '--dry-run=client'],
    {
      encoding: 'utf8',
    },
  );
  if (installed.status !== 0) throw new Error(installed.stderr);
  const notes = installed.stdout.slice(installed.stdout.indexOf('NOTES:'));
  return notes
    .split('\n')
    .filter((l) => l.startsWith('  kured-ts '))
    .map((l) => (l.trim().match(/"[^"]*"|\S+/g) ?? []).slice(1).map((w) => w.replace(/^"|"$/g, '')));
}

/** The command line as a user types it, with no KURED_* in the environment. */
function run(args: string[]): Promise<number | undefined> {
  return commandLine([registerStatus, registerPause, registerResume, registerUnlock, registerCheck], {
    env: {},
    out: (l) => out.push(l),
    err: (l) => errs.push(l),
    connect: () => server.kubeInMemory(),
    clock: new FakeClock(),
  })(args);
}

const annotations = (namespace: string, name: string): Record<string, string> =>
  server.get<V1DaemonSet>('daemonsets', namespace, name)?.metadata?.annotations ?? {};

describe('the operator commands with no --ds-name', () => {
  it("run NOTES.txt's commands as printed against the chart's DaemonSet", async () => {
    server.create('daemonsets', chartDaemonSet());
    const commands = notesCommands();
    expect(commands.map((c) => c[0])).toEqual(['status', 'pause', 'resume']);
    const [status, pause, resume] = commands;
    expect(await run(status!)).toBe(0);
    expect(await run(pause!)).toBe(0);
    expect(annotations('kube-system', 'kured-ts')[FLEET_PAUSE_ANNOTATION]).toContain('change freeze');
    expect(await run(resume!)).toBe(0);
    expect(annotations('kube-system', 'kured-ts')[FLEET_PAUSE_ANNOTATION]).toBeUndefined();
    expect(errs).toEqual([]);
  });

  it("pause the kured-ts agents, not kured's DaemonSet, while both run side by side", async () => {
    server.create('daemonsets', kuredDaemonSet()); // kube-system/kured, kured's own
    server.create('daemonsets', chartDaemonSet('kured-ts-system'));
    expect(await run(['pause', '--reason', 'migration'])).toBe(0);
    expect(annotations('kube-system', 'kured')[FLEET_PAUSE_ANNOTATION]).toBeUndefined();
    expect(annotations('kube-system', 'kured-ts')[FLEET_PAUSE_ANNOTATION]).toBeUndefined();
    // the chart in kured-ts-system keeps its lock on its own DaemonSet
    expect(annotations('kured-ts-system', 'kured-ts')[FLEET_PAUSE_ANNOTATION]).toContain('migration');
  });

  it("use the lock DaemonSet the chart's agents name, e.g. kured's during a migration on kured's lock", async () => {
    server.create('daemonsets', kuredDaemonSet());
    server.create('daemonsets', chartDaemonSet('kube-system', ['configuration.dsName=kured']));
    expect(await run(['pause', '--reason', 'shared lock'])).toBe(0);
    expect(annotations('kube-system', 'kured')[FLEET_PAUSE_ANNOTATION]).toContain('shared lock');
  });

  it('say in one line which DaemonSets they could mean, and exit 2, when two releases use two locks', async () => {
    server.create('daemonsets', chartDaemonSet('team-a', [], 'a'));
    server.create('daemonsets', chartDaemonSet('team-b', [], 'b'));
    expect(await run(['pause', '--reason', 'x'])).toBe(2);
    expect(errs).toHaveLength(1);
    expect(errs[0]).toContain('team-a/');
    expect(errs[0]).toContain('team-b/');
    expect(errs[0]).toContain('--ds-name');
    expect(server.requests.filter((r) => r.method === 'PATCH')).toEqual([]);
  });

  it('find the one in the namespace given with -n', async () => {
    server.create('daemonsets', chartDaemonSet('team-a', [], 'a'));
    server.create('daemonsets', chartDaemonSet('team-b', [], 'b'));
    expect(await run(['pause', '--reason', 'x', '-n', 'team-b'])).toBe(0);
    expect(Object.keys(annotations('team-b', 'b-kured-ts'))).toContain(FLEET_PAUSE_ANNOTATION);
  });

  it("fall back to kured's default, kube-system/kured, when no chart DaemonSet exists", async () => {
    server.create('daemonsets', kuredDaemonSet());
    expect(await run(['pause', '--reason', 'plain'])).toBe(0);
    expect(annotations('kube-system', 'kured')[FLEET_PAUSE_ANNOTATION]).toContain('plain');
  });

  it('look nothing up when --ds-name names it', async () => {
    server.create('daemonsets', kuredDaemonSet());
    server.create('daemonsets', chartDaemonSet());
    expect(await run(['pause', '--reason', 'named', '--ds-name', 'kured'])).toBe(0);
    expect(annotations('kube-system', 'kured')[FLEET_PAUSE_ANNOTATION]).toContain('named');
    expect(server.requests.filter((r) => r.path === '/apis/apps/v1/daemonsets')).toEqual([]);
  });

  it("check --node reads the chart's lock DaemonSet, and sees the fleet paused there", async () => {
    server.create('daemonsets', chartDaemonSet('kured-ts-system'));
    expect(await run(['pause', '--reason', 'freeze'])).toBe(0);
    out = [];
    expect(await run(['check', '--node', 'n1'])).toBe(3);
    expect(out.join('\n')).toContain('freeze');
  });
});
