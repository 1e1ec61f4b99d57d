// `kured-ts status --watch` through the real client against the fake API server: what it prints as
// nodes and the lock change, and that it keeps watching when watches end or fail.
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { WAIT_FOR_MS, realDelay } from '../../fakes/wait-for.js';
import { load } from 'js-yaml';
import { watchStatus } from '../../../src/cli/status-watch.js';
import type { StatusOptions, StatusReport } from '../../../src/cli/status.js';
import { SystemClock } from '../../../src/clock/clock.js';
import { ClientNodeKube } from '../../../src/kube/client.js';
import type { V1DaemonSet, V1Node } from '../../../src/kube/kube.js';
import { FLEET_PAUSE_ANNOTATION } from '../../../src/cli/shared.js';
import { startFakeApiServer, type FakeApiServer } from '../../../src/sim/fake-api-server.js';

/** ANSI cursor home and clear screen. */
const CLEAR = '\x1b[H\x1b[2J';

const OPTIONS: StatusOptions = {
  dsNamespace: 'kube-system',
  dsName: 'kured',
  lockAnnotation: 'weave.works/kured-node-lock',
  lockTtlMs: 0,
  output: 'table',
};

let server: FakeApiServer;
let kube: ClientNodeKube;
let out: string[];
let errs: string[];
let stop: AbortController;

function node(name: string, phase?: string): V1Node {
  const annotations: Record<string, string> =
    phase === undefined
      ? {}
      : {
          'kured-ts.dev/status': JSON.stringify({
            phase,
            reason: `${phase} now`,
            since: '2026-01-05T09:00:00Z',
          }),
        };
  return { apiVersion: 'v1', kind: 'Node', metadata: { name, annotations }, spec: {} };
}

function daemonSet(annotations: Record<string, string> = {}): V1DaemonSet {
  return {
    apiVersion: 'apps/v1',
    kind: 'DaemonSet',
    metadata: { name: 'kured', namespace: 'kube-system', annotations },
    spec: {
      selector: { matchLabels: { app: 'kured' } },
      template: { metadata: { labels: { app: 'kured' } }, spec: { containers: [{ name: 'k', image: 'k' }] } },
    },
  };
}

function setPhase(name: string, phase: string): void {
  const current = server.get<V1Node>('nodes', undefined, name);
  if (!current) throw new Error(`no node ${name}`);
  const fresh = node(name, phase);
  server.update('nodes', {
    ...current,
    metadata: { ...current.metadata, annotations: fresh.metadata?.annotations },
  });
}

/** Resolves once `predicate` holds for the output, or fails after WAIT_FOR_MS with what was printed. */
async function until(predicate: () => boolean, what: string): Promise<void> {
  // eslint-disable-next-line no-restricted-syntax -- real time: the command under test runs on the system clock
  const deadline = Date.now() + WAIT_FOR_MS;
  while (!predicate()) {
    // eslint-disable-next-line no-restricted-syntax -- real time: the command under test runs on the system clock
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; printed:\n${out.join('\n')}`);
    await realDelay(10); // polls: the command runs on real time
  }
}

function start(output: StatusOptions['output'] = 'table', isTTY = false): Promise<number> {
  return watchStatus(
    { ...OPTIONS, output },
    {
      kube,
      out: (l) => out.push(l),
      err: (l) => errs.push(l),
      clock: new SystemClock(),
      isTTY,
      signal: stop.signal,
      random: () => 0,
    },
  );
}

beforeEach(async () => {
  server = await startFakeApiServer();
  kube = server.kubeInMemory();
  out = [];
  errs = [];
  stop = new AbortController();
  server.create('daemonsets', daemonSet());
  server.create('nodes', node('n1', 'idle'));
  server.create('nodes', node('n2', 'idle'));
});

afterEach(async () => {
  stop.abort();
  kube.close();
  await server.close();
});

describe('kured-ts status --watch', () => {
  it('prints the table, then only the rows that change, a fleet pause, and a deleted node', async () => {
    const done = start();
    await until(() => out.length === 3, 'the first table');
    expect(out[0]).toMatch(/^NODE +REBOOT +PHASE +AGE +OVERDUE +REASON +LOCK +LAST REBOOT$/);
    expect(out.slice(1).map((l) => l.split(/ +/).slice(0, 3))).toEqual([
      ['n1', 'no', 'idle'],
      ['n2', 'no', 'idle'],
    ]);
    setPhase('n2', 'draining');
    await until(() => out.length === 4, 'the changed row');
    expect(out[3]).toMatch(/^n2 +yes +draining +- +- +draining now/);
    server.update(
      'daemonsets',
      daemonSet({ [FLEET_PAUSE_ANNOTATION]: '{"reason":"freeze","by":"ops","since":"x"}' }),
    );
    await until(() => out.some((l) => l.startsWith('Fleet PAUSED')), 'the pause');
    expect(out.at(-1)).toBe('Fleet PAUSED by ops since x: freeze');
    server.delete('nodes', undefined, 'n1');
    await until(() => out.at(-1) === 'n1   (node deleted)', 'the deletion');
    // Nothing else changed: nothing else was printed.
    expect(out).toHaveLength(6);
    stop.abort();
    expect(await done).toBe(0);
    expect(errs).toEqual([]);
  });

  it('keeps watching after the API server ends every watch, and after watches fail with 500', async () => {
    const nodeWatches = (): { status: number }[] =>
      server.requests.filter((r) => r.path === '/api/v1/nodes' && r.query.watch === 'true');
    const done = start();
    await until(() => out.length === 3 && nodeWatches().length === 1, 'the first table and watch');
    server.injectFailure({ method: 'GET', pathIncludes: '/api/v1/nodes?allowWatchBookmarks' }, 500, 2);
    server.endWatches();
    // The ended watch, two refused ones (backing off 0.5 s, then 1 s), then one that stays open.
    await until(() => nodeWatches().length === 4, 'the fourth node watch');
    expect(nodeWatches().map((r) => r.status)).toEqual([200, 500, 500, 200]);
    setPhase('n1', 'blocked');
    await until(() => out.some((l) => /^n1 +yes +blocked/.test(l)), 'the change after the watches came back');
    stop.abort();
    expect(await done).toBe(0);
  });

  it('redraws the whole table on a terminal', async () => {
    const done = start('table', true);
    await until(() => out.some((l) => l.includes('watching for changes')), 'the first drawing');
    expect(out[0]?.startsWith(`${CLEAR}NODE `)).toBe(true);
    const first = out.length;
    setPhase('n1', 'verifying');
    await until(() => out.length > first + 3, 'the redraw');
    expect(out[first]?.startsWith(`${CLEAR}NODE `)).toBe(true);
    expect(out.slice(first).some((l) => /^n1 +yes +verifying/.test(l))).toBe(true);
    stop.abort();
    expect(await done).toBe(0);
  });

  it.each([
    ['json', (text: string) => JSON.parse(text) as StatusReport],
    ['yaml', (text: string) => load(text) as StatusReport],
  ] as const)('prints the whole report again as %s on each change', async (output, parse) => {
    const done = start(output);
    await until(() => out.length === 1, 'the first report');
    setPhase('n2', 'draining');
    await until(() => out.length === 2, 'the second report');
    const reports = out.map(parse);
    expect(reports.map((r) => r.nodes.map((n) => n.phase))).toEqual([
      ['idle', 'idle'],
      ['idle', 'draining'],
    ]);
    if (output === 'json') expect(out.every((l) => !l.includes('\n'))).toBe(true);
    else expect(out.every((l) => l.startsWith('---\n'))).toBe(true);
    stop.abort();
    expect(await done).toBe(0);
  });

  it('exits 1 with one line when the DaemonSet is deleted', async () => {
    const done = start();
    await until(() => out.length === 3, 'the first table');
    server.delete('daemonsets', 'kube-system', 'kured');
    expect(await done).toBe(1);
    expect(errs).toEqual(['DaemonSet kube-system/kured was deleted: nothing left to watch']);
  });
});
