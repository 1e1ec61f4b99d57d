import { createServer, type Server } from 'node:http';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CYCLE_ANNOTATION, CYCLE_LABEL } from '../../../src/node/cycle.js';
import type { AddressInfo } from 'node:net';
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { startClusterApiServer } from '../../fakes/cluster-api-server.js';
import { Command } from 'commander';
import { evaluateCheck, runCheck, type CheckConfig, type CheckIo } from '../../../src/cli/check.js';
import type { CheckReport } from '../../../src/cli/check-report.js';
import { registerCheck } from '../../../src/cli/check-command.js';
import { connectKube } from '../../../src/kube/client.js';
import type { V1DaemonSet, V1Node, V1Pod, V1PodDisruptionBudget } from '../../../src/kube/kube.js';
import { defaultConfig } from '../../../src/config/parse.js';
import { parseDrainRules } from '../../../src/config/drain-rules.js';
import { parseLabelSelector } from '../../../src/selector/label-selector.js';
import type { SentinelVerdict } from '../../../src/sentinel/sentinel.js';
import { type FakeApiServer } from '../../../src/sim/fake-api-server.js';
import { FakeClock } from '../../fakes/fake-clock.js';

const LOCK = 'weave.works/kured-node-lock';
const PAUSE = 'kured-ts.dev/paused';

let api: FakeApiServer;
let prometheus: Server | undefined;
let out: string[];
let errs: string[];
let io: CheckIo;

function node(name: string, bootID = `boot-${name}`): V1Node {
  return {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: { name },
    spec: {},
    status: {
      nodeInfo: { bootID } as NonNullable<V1Node['status']>['nodeInfo'],
      conditions: [{ type: 'Ready', status: 'True' }],
    },
  };
}

function daemonSet(annotations: Record<string, string> = {}): V1DaemonSet {
  return {
    apiVersion: 'apps/v1',
    kind: 'DaemonSet',
    metadata: { name: 'kured', namespace: 'kube-system', annotations },
    spec: {
      selector: { matchLabels: { app: 'kured' } },
      template: {
        metadata: { labels: { app: 'kured' } },
        spec: { containers: [{ name: 'kured', image: 'kured-ts' }] },
      },
    },
  };
}

function pod(name: string, labels: Record<string, string>): V1Pod {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name,
      namespace: 'default',
      labels,
      ownerReferences: [
        { apiVersion: 'apps/v1', kind: 'ReplicaSet', name: 'rs', uid: 'rs-1', controller: true },
      ],
    },
    spec: { nodeName: 'n1', containers: [{ name: 'c', image: 'img' }] },
    status: { phase: 'Running' },
  };
}

function pdb(name: string, app: string): V1PodDisruptionBudget {
  return {
    apiVersion: 'policy/v1',
    kind: 'PodDisruptionBudget',
    metadata: { name, namespace: 'default' },
    spec: { minAvailable: 1, selector: { matchLabels: { app } } },
  };
}

function lockHeldBy(holder: string): string {
  return JSON.stringify({
    nodeID: holder,
    metadata: { unschedulable: false },
    created: '2026-01-05T09:00:00Z',
    TTL: 0,
  });
}

/** A local server speaking Prometheus' instant-query API, with these alerts active. */
async function startPrometheus(alerts: { alertname: string; alertstate: string }[]): Promise<string> {
  const body = JSON.stringify({
    status: 'success',
    data: {
      resultType: 'vector',
      result: alerts.map((a) => ({ metric: { __name__: 'ALERTS', ...a }, value: [1767607200, '1'] })),
    },
  });
  const server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    if (url.pathname !== '/api/v1/query' || url.searchParams.get('query') !== 'ALERTS') {
      res.statusCode = 404;
      res.end();
      return;
    }
    res.setHeader('Content-Type', 'application/json');
    res.end(body);
  });
  prometheus = server;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

function config(overrides: Partial<CheckConfig> = {}): CheckConfig {
  return { ...defaultConfig(), ...overrides };
}

/** Every request that is not a read. */
/** Requests that could change something: every one but reads and dry runs (the PDB pre-flight's). */
function writes(): string[] {
  return api.requests
    .filter((r) => r.method !== 'GET' && r.query.dryRun !== 'All')
    .map((r) => `${r.method} ${r.path}`);
}

beforeEach(async () => {
  api = await startClusterApiServer();
  out = [];
  errs = [];
  io = {
    kube: api.kubeInMemory(),
    out: (l) => out.push(l),
    err: (l) => errs.push(l),
    clock: new FakeClock('2026-01-05T10:00:00Z'),
  };
  api.create('nodes', node('n1'));
  api.create('nodes', node('n2'));
});

afterEach(async () => {
  await api.close();
  const server = prometheus;
  prometheus = undefined;
  if (server) {
    server.closeAllConnections();
    await new Promise<void>((resolve) =>
      server.close(() => {
        resolve();
      }),
    );
  }
});

interface Scenario {
  setup: () => Promise<Partial<CheckConfig>>;
  blocker: string;
  reason: RegExp;
}

const scenarios: [string, Scenario][] = [
  [
    'a firing alert',
    {
      setup: async () => {
        api.create('daemonsets', daemonSet());
        return {
          prometheusUrl: await startPrometheus([{ alertname: 'HighErrorRate', alertstate: 'firing' }]),
        };
      },
      blocker: 'prometheus',
      reason: /^1 active alert\(s\): HighErrorRate$/,
    },
  ],
  [
    'a blocking pod',
    {
      setup: () => {
        api.create('daemonsets', daemonSet());
        api.create('pods', pod('backup-1', { app: 'backup' }));
        return Promise.resolve({
          blockingPodSelectors: [parseLabelSelector('app=backup')],
          blockOnPdb: false,
        });
      },
      blocker: 'pods',
      reason: /default\/backup-1/,
    },
  ],
  [
    'a PodDisruptionBudget that allows no disruption',
    {
      setup: () => {
        api.create('daemonsets', daemonSet());
        api.create('pods', pod('web-1', { app: 'web' }));
        api.create('poddisruptionbudgets', pdb('web-pdb', 'web'));
        return Promise.resolve({});
      },
      blocker: 'pdb',
      reason: /default\/web-pdb/,
    },
  ],
  [
    'a fleet pause',
    {
      setup: () => {
        api.create(
          'daemonsets',
          daemonSet({
            [PAUSE]: JSON.stringify({ reason: 'kernel freeze', by: 'alice', since: '2026-01-05T09:30:00Z' }),
          }),
        );
        return Promise.resolve({});
      },
      blocker: 'pause',
      reason: /^fleet paused by alice since 2026-01-05T09:30:00Z: kernel freeze$/,
    },
  ],
];

describe('kured-ts check', () => {
  it.each(scenarios)('names %s as the blocking reason and writes nothing', async (_name, scenario) => {
    const overrides = await scenario.setup();
    expect(await runCheck({ node: 'n1', config: config(overrides) }, io)).toBe(3);
    const line = out.find((l) => l.trimStart().startsWith(`${scenario.blocker} `));
    expect(line).toMatch(/BLOCKS/);
    expect(line?.split('BLOCKS')[1]?.trim()).toMatch(scenario.reason);
    expect(out[out.length - 1]).toMatch(new RegExp(`^decision: blocked: ${scenario.blocker}: `));
    expect(writes()).toEqual([]);
  });

  it('waits for a lock held by another node, and writes nothing', async () => {
    api.create('daemonsets', daemonSet({ [LOCK]: lockHeldBy('n2') }));
    expect(await runCheck({ node: 'n1', config: config() }, io)).toBe(3);
    expect(out).toEqual([
      'node n1',
      '  sentinel         skipped    not evaluated here (run with --local on the node); no status recorded',
      '  window           ok         inside maintenance window every day 00:00-23:59:59 UTC',
      '  pause            ok         does not block',
      '  reboot-loop      ok         does not block',
      '  quarantine       ok         does not block',
      '  pdb              ok         does not block',
      '  package-manager  skipped    not checked: the host is read on the node itself only (kured-ts check --local there)',
      '  node             ok         bootID boot-n1',
      '  volumes          ok         none attached',
      '  lock             BLOCKS     all 1 lock slot(s) held by n2',
      '  shutdown         skipped    not published by the agent of this node (not read, or an agent of an older version)',
      'drain: no pod on the node',
      'decision: waiting-for-lock: all 1 lock slot(s) held by n2',
    ]);
    expect(writes()).toEqual([]);
  });

  it.each([
    ['gce://p/z/n1', 30 * 60_000, 'WARNING', /longer than GKE node auto-repair's 10m NotReady/],
    ['gce://p/z/n1', 10 * 60_000, 'ok', /is within GKE node auto-repair's 10m NotReady/],
    ['aws:///eu-west-1a/i-0abc', 30 * 60_000, 'ok', /is within EKS node auto-repair's 30m NotReady/],
    ['aws:///eu-west-1a/i-0abc', 45 * 60_000, 'WARNING', /longer than EKS node auto-repair's 30m/],
  ])(
    'warns when --post-reboot-timeout outlasts the repair threshold of the provider (%s, %d ms), and still decides as the agent',
    async (providerID, timeoutMs, verdict, detail) => {
      const n1 = api.get<V1Node>('nodes', undefined, 'n1')!;
      api.update<V1Node>('nodes', { ...n1, spec: { ...n1.spec, providerID } });
      api.create('daemonsets', daemonSet());
      expect(await runCheck({ node: 'n1', config: config({ postRebootTimeoutMs: timeoutMs }) }, io)).toBe(0);
      const line = out.find((l) => l.trimStart().startsWith('repair '));
      expect(line?.trim().split(/\s{2,}/)[1]).toBe(verdict);
      expect(line).toMatch(detail);
      expect(out[out.length - 1]).toMatch(/^decision: would-reboot/);
    },
  );

  it("lists what the drain would do with each pod, in the drain's order, and which label or rule decided", async () => {
    api.create('daemonsets', daemonSet());
    api.create('pods', pod('web', { app: 'web' }));
    api.create('pods', pod('osd', { app: 'osd' }));
    api.create('pods', pod('agent', { app: 'agent', 'kured-ts.dev/drain': 'skip' }));
    api.create('pods', pod('batch', { app: 'batch', 'cluster.x-k8s.io/drain': 'wait-completed' }));
    api.create('pods', pod('typo', { app: 'typo', 'kured-ts.dev/drain': 'skp' }));
    const rules = parseDrainRules('- namespace: default\n  selector: app=osd\n  order: 10\n');
    const report = await evaluateCheck(
      { node: 'n1', config: config({ drainRules: rules }) },
      io,
      AbortSignal.timeout(5000),
    );
    expect(report.drain).toEqual([
      {
        pod: 'default/typo',
        action: 'invalid',
        order: 0,
        reason: 'bad drain label: label kured-ts.dev/drain="skp" is not one of evict, skip, wait-completed',
      },
      {
        pod: 'default/batch',
        action: 'wait-completed',
        order: 0,
        reason: 'label cluster.x-k8s.io/drain=wait-completed',
      },
      { pod: 'default/web', action: 'evict', order: 0, reason: 'default' },
      {
        pod: 'default/osd',
        action: 'evict',
        order: 10,
        reason: 'evict by default, order 10 by --drain-rules entry 1 (namespace default, selector app=osd)',
      },
      { pod: 'default/agent', action: 'skip', order: 0, reason: 'label kured-ts.dev/drain=skip' },
    ]);
    expect(report.decision).toEqual({
      kind: 'would-reboot',
      reason: expect.stringContaining(
        'but its drain would fail before any eviction on default/typo (bad drain label: label kured-ts.dev/drain="skp"',
      ) as unknown as string,
    });
    expect(writes()).toEqual([]);
  });

  it('prints every reason at once when everything blocks, the first one deciding as in the agent', async () => {
    const url = await startPrometheus([{ alertname: 'DiskFull', alertstate: 'pending' }]);
    api.create(
      'daemonsets',
      daemonSet({
        [LOCK]: lockHeldBy('n2'),
        [PAUSE]: JSON.stringify({ reason: 'freeze', by: 'bob', since: 's' }),
      }),
    );
    api.create('pods', pod('backup-1', { app: 'backup' }));
    api.create('pods', pod('web-1', { app: 'web' }));
    api.create('poddisruptionbudgets', pdb('web-pdb', 'web'));
    const code = await runCheck(
      {
        node: 'n1',
        config: config({ prometheusUrl: url, blockingPodSelectors: [parseLabelSelector('app=backup')] }),
      },
      io,
    );
    expect(code).toBe(3);
    const blocking = out.filter((l) => l.includes(' BLOCKS ')).map((l) => l.trim().split(/\s+/)[0]);
    expect(blocking).toEqual(['pause', 'prometheus', 'pods', 'pdb', 'lock']);
    expect(out[out.length - 1]).toBe('decision: blocked: pause: fleet paused by bob since s: freeze');
    expect(writes()).toEqual([]);
  });

  it.each<[string, 'required' | 'unblocked', RegExp]>([
    [
      'leaves the PDB pre-flight to the slot under --taint-timing required, as the agent does: it waits for the lock',
      'required',
      /^decision: waiting-for-lock: /,
    ],
    [
      'judges the PDB pre-flight before the lock under --taint-timing unblocked, as the agent does',
      'unblocked',
      /^decision: blocked: pdb: /,
    ],
  ])('%s', async (_name, taintTiming, decision) => {
    api.create('daemonsets', daemonSet({ [LOCK]: lockHeldBy('n2') }));
    api.create('pods', pod('web-1', { app: 'web' }));
    api.create('poddisruptionbudgets', pdb('web-pdb', 'web'));
    expect(await runCheck({ node: 'n1', config: config({ taintTiming }) }, io)).toBe(3);
    expect(out[out.length - 1]).toMatch(decision);
    expect(writes()).toEqual([]);
  });

  it('says the agent would reboot when nothing blocks, without taking the free lock', async () => {
    api.create('daemonsets', daemonSet());
    expect(await runCheck({ node: 'n1', config: config() }, io)).toBe(0);
    expect(out[out.length - 1]).toBe(
      'decision: would-reboot: the agent would take the lock, drain and reboot if a reboot is required',
    );
    expect(writes()).toEqual([]);
    expect(
      api.get<V1DaemonSet>('daemonsets', 'kube-system', 'kured')?.metadata?.annotations?.[LOCK],
    ).toBeUndefined();
  });

  it('says under --fleetlock-url that FleetLock is asked by the agent only, and asks it nothing', async () => {
    api.create('daemonsets', daemonSet());
    let asked = 0;
    const fleetlock = createServer((_req, res) => {
      asked++;
      res.end('{}');
    });
    prometheus = fleetlock;
    await new Promise<void>((resolve) => fleetlock.listen(0, '127.0.0.1', resolve));
    const port = (fleetlock.address() as AddressInfo).port;
    const fleetlockUrl = `http://user:secret@127.0.0.1:${port}`;
    const code = await runCheck({ node: 'n1', config: config({ fleetlockUrl, fleetlockGroup: 'eu' }) }, io);
    expect(code).toBe(0);
    const item = out.find((line) => line.trimStart().startsWith('fleetlock'));
    expect(item).toMatch(/skipped +group eu at http:\/\/<redacted>@127\.0\.0\.1:\d+.*without taking a slot/);
    expect(out.join('\n')).not.toContain('secret');
    expect(out[out.length - 1]).toBe(
      'decision: would-reboot: the agent would take the lock, drain and reboot if a reboot is required, once the FleetLock server grants a slot',
    );
    expect(asked).toBe(0);
    expect(writes()).toEqual([]);
  });

  it('under --require-approval waits for an approval, and would reboot once there is one', async () => {
    api.create('daemonsets', daemonSet());
    const c = config({ requireApproval: true, approvalTtlMs: 3_600_000 });
    expect(await runCheck({ node: 'n1', config: c }, io)).toBe(3);
    expect(out.find((l) => l.trimStart().startsWith('approval '))).toBe(
      '  approval         BLOCKS     waiting for approval: run kured-ts approve n1',
    );
    expect(out[out.length - 1]).toBe(
      'decision: awaiting-approval: waiting for approval: run kured-ts approve n1',
    );
    const n = api.get<V1Node>('nodes', undefined, 'n1')!;
    n.metadata = {
      ...n.metadata,
      annotations: { 'kured-ts.dev/approved': JSON.stringify({ by: 'alice', at: '2026-01-05T09:30:00Z' }) },
    };
    api.update('nodes', n);
    out = [];
    expect(await runCheck({ node: 'n1', config: c }, io)).toBe(0);
    expect(out.find((l) => l.trimStart().startsWith('approval '))).toBe(
      '  approval         ok         approved by alice at 2026-01-05T09:30:00Z',
    );
    expect(writes()).toEqual([]);
  });

  it("names the node's group under --group-concurrency, and the full group that holds it back", async () => {
    const full = JSON.stringify({
      maxOwners: 3,
      locks: [
        {
          nodeID: 'n2',
          metadata: { unschedulable: false, group: 'a' },
          created: '2026-01-05T09:00:00Z',
          TTL: 0,
        },
      ],
    });
    api.create('daemonsets', daemonSet({ [LOCK]: full }));
    const n = api.get<V1Node>('nodes', undefined, 'n1')!;
    n.metadata = { ...n.metadata, labels: { zone: 'b' } };
    api.update('nodes', n);
    const c = config({ concurrency: { count: 3 }, groupLabel: 'zone', groupConcurrency: { count: 1 } });
    expect(await runCheck({ node: 'n1', config: c }, io)).toBe(0);
    expect(out.find((l) => l.trimStart().startsWith('lock '))).toBe(
      "  lock             ok         a slot is free (3 slot(s), 1 per zone; this node's group zone=b)",
    );
    n.metadata = { ...n.metadata, labels: { zone: 'a' } };
    api.update('nodes', n);
    out = [];
    expect(await runCheck({ node: 'n1', config: c }, io)).toBe(3);
    // the lock item names the gate that holds it back, as kured_ts_blocked does
    expect(out.find((l) => l.trimStart().startsWith('lock '))).toBe(
      '  lock             BLOCKS     [group-concurrency] group zone=a: all 1 slot(s) of the group held by n2',
    );
    expect(out[out.length - 1]).toBe(
      'decision: waiting-for-lock: group zone=a: all 1 slot(s) of the group held by n2',
    );
    expect(writes()).toEqual([]);
  });

  it("names the other operator taking a node out, in the coordinator's words, as the waiter's status does", async () => {
    api.create('daemonsets', daemonSet());
    const n2 = api.get<V1Node>('nodes', undefined, 'n2')!;
    n2.spec = { ...n2.spec, taints: [{ key: 'karpenter.sh/disrupted', effect: 'NoSchedule' }] };
    api.update('nodes', n2);
    // the coordinator's Lease as it publishes it when the other operator's node fills the budget
    const held = {
      gate: 'count-unavailable',
      reason: '1 of 1 slot(s) taken by nodes out: n2: taken out by Karpenter (karpenter.sh/disrupted)',
    };
    api.create('leases', {
      apiVersion: 'coordination.k8s.io/v1',
      kind: 'Lease',
      metadata: {
        name: 'kured-coordinator',
        namespace: 'kube-system',
        annotations: {
          'kured-ts.dev/fleet-advice': JSON.stringify({ by: 'coordinator-1', seq: 1, nodes: 2, held }),
        },
      },
      spec: { holderIdentity: 'coordinator-1', leaseDurationSeconds: 30 },
    });
    expect(await runCheck({ node: 'n1', config: config({ concurrency: { count: 1 } }) }, io)).toBe(3);
    expect(out.find((l) => l.trimStart().startsWith('lock '))).toMatch(
      /n2: taken out by Karpenter \(karpenter\.sh\/disrupted\)/,
    );
    expect(writes()).toEqual([]);
  });

  /** n1's cycle record (and label), begun on `bootID`, as its agent writes it. */
  function inCycle(bootID: string, fields: object = {}): void {
    const n = api.get<V1Node>('nodes', undefined, 'n1')!;
    const record = { bootID, cordoned: true, attempts: 0, started: '2026-01-05T09:00:00Z', ...fields };
    n.metadata = {
      ...n.metadata,
      labels: { ...n.metadata?.labels, [CYCLE_LABEL]: 'true' },
      annotations: { ...n.metadata?.annotations, [CYCLE_ANNOTATION]: JSON.stringify(record) },
    };
    n.spec = { ...n.spec, unschedulable: true };
    api.update('nodes', n);
  }

  it.each<[string, () => void, string, RegExp]>([
    [
      'the node holds the lock with its cycle record, on the same boot: the agent drains and reboots',
      () => {
        inCycle('boot-n1');
      },
      'in-progress',
      /^a reboot cycle is in progress on this node \(drain: same boot, no reboot requested yet\); the agent drains/,
    ],
    [
      'the bootID changed since the record: the agent waits for readiness',
      () => {
        inCycle('boot-before');
      },
      'in-progress',
      /\(readiness: bootID boot-before -> boot-n1\); rebooted: the agent waits for readiness/,
    ],
    [
      'a reboot requested a minute ago: the agent waits for it',
      () => {
        inCycle('boot-n1', { attempts: 1, rebootRequestedAt: '2026-01-05T09:59:00Z' });
      },
      'in-progress',
      /\(reboot-requested: reboot requested 60s ago; it may still come\)/,
    ],
    [
      'the lock names the node and no cycle of its own proves it: judged as a new acquisition, as the agent does',
      () => undefined,
      'would-reboot',
      /^the agent would take the lock/,
    ],
  ])('%s', async (_name, arrange, kind, reason) => {
    api.create('daemonsets', daemonSet({ [LOCK]: lockHeldBy('n1') }));
    arrange();
    const report = await evaluateCheck({ node: 'n1', config: config() }, io, AbortSignal.timeout(5000));
    expect(report.decision.kind).toBe(kind);
    expect(report.decision.reason).toMatch(reason);
    const lock = report.items.find((i) => i.name === 'lock');
    if (kind === 'would-reboot') {
      expect(lock?.detail).toMatch(/; the entry naming this node is not proven by a cycle of its own$/);
    } else expect(lock?.detail).toBe('held by this node since 2026-01-05T09:00:00.000Z');
    expect(writes()).toEqual([]);
  });

  it("adopts kured's slot for a node kured cordoned, as the agent does", async () => {
    api.create('daemonsets', daemonSet({ [LOCK]: lockHeldBy('n1') }));
    const n = api.get<V1Node>('nodes', undefined, 'n1')!;
    n.spec = { ...n.spec, unschedulable: true };
    api.update('nodes', n);
    const report = await evaluateCheck({ node: 'n1', config: config() }, io, AbortSignal.timeout(5000));
    expect(report.decision).toMatchObject({
      kind: 'in-progress',
      reason: expect.stringContaining("kured's slot for this node: the agent adopts kured's cordon"),
    });
    expect(writes()).toEqual([]);
  });

  interface DecisionCase {
    overrides: Partial<CheckConfig>;
    verdict?: SentinelVerdict;
    kind: string;
    code: number;
  }

  it.each<[string, DecisionCase]>([
    [
      'outside the window',
      { overrides: { window: { ...defaultConfig().window, days: [] } }, kind: 'outside-window', code: 3 },
    ],
    [
      'a local sentinel saying no reboot',
      { overrides: {}, verdict: { required: false }, kind: 'idle', code: 3 },
    ],
    [
      'a local sentinel that fails',
      {
        overrides: {},
        verdict: { required: false, error: 'exit status 2' },
        kind: 'sentinel-error',
        code: 3,
      },
    ],
    [
      'a local sentinel saying reboot',
      { overrides: {}, verdict: { required: true }, kind: 'would-reboot', code: 0 },
    ],
  ])('decides from %s', async (_name, { overrides, verdict, kind, code }) => {
    api.create('daemonsets', daemonSet());
    const withSentinel: CheckIo = verdict
      ? { ...io, sentinel: { rebootRequired: () => Promise.resolve(verdict) } }
      : io;
    const options = {
      node: 'n1',
      config: config(overrides),
      local: verdict !== undefined,
      output: 'json' as const,
    };
    expect(await runCheck(options, withSentinel)).toBe(code);
    expect((JSON.parse(out.join('\n')) as CheckReport).decision.kind).toBe(kind);
    expect(writes()).toEqual([]);
  });

  it('blocks a node without a bootID, as the agent does', async () => {
    api.create('daemonsets', daemonSet());
    api.create('nodes', node('n3', ''));
    expect(await runCheck({ node: 'n3', config: config() }, io)).toBe(3);
    expect(out[out.length - 1]).toBe(
      'decision: blocked: node: node reports no bootID: a reboot could not be proven',
    );
  });

  it('fails with one line for a node that does not exist', async () => {
    api.create('daemonsets', daemonSet());
    expect(await runCheck({ node: 'nope', config: config() }, io)).toBe(1);
    expect(errs).toHaveLength(1);
    expect(errs[0]).toMatch(/^cannot check node nope: .*\(404\)$/);
  });

  it('fails with one line when the cluster is unreachable', async () => {
    const url = api.url;
    await api.close();
    api = await startClusterApiServer();
    expect(await runCheck({ node: 'n1', config: config() }, { ...io, kube: connectKube({ url }) })).toBe(1);
    expect(errs).toHaveLength(1);
    expect(errs[0]).toMatch(/^cannot reach the Kubernetes API \(check node n1\): .*ECONNREFUSED/);
  });
});

describe('check as registered with commander', () => {
  it('takes the agent flags and KURED_* environment, and prints the decision', async () => {
    api.create('daemonsets', {
      ...daemonSet({ [LOCK]: lockHeldBy('n2') }),
      metadata: { name: 'ds', namespace: 'ops', annotations: { [LOCK]: lockHeldBy('n2') } },
    });
    let code: number | undefined;
    const program = new Command().exitOverride();
    registerCheck(program, {
      env: { KURED_DS_NAMESPACE: 'ops' },
      out: (l) => out.push(l),
      err: (l) => errs.push(l),
      exit: (c) => (code = c),
      connect: () => api.kubeInMemory(),
      clock: io.clock,
    });
    await program.parseAsync(['check', '--node', 'n1', '--ds-name', 'ds', '--block-on-pdb=false'], {
      from: 'user',
    });
    expect(errs).toEqual([]);
    expect(code).toBe(3);
    expect(out.some((l) => l.trim().startsWith('pdb '))).toBe(false);
    expect(out[out.length - 1]).toBe('decision: waiting-for-lock: all 1 lock slot(s) held by n2');
  });

  it('takes a bool flag given alone as true', async () => {
    api.create('daemonsets', daemonSet());
    api.create('pods', pod('web-1', { app: 'web' }));
    api.create('poddisruptionbudgets', pdb('web-pdb', 'web'));
    const run = async (args: string[]): Promise<number | undefined> => {
      let code: number | undefined;
      const program = new Command().exitOverride();
      registerCheck(program, {
        env: { KURED_BLOCK_ON_PDB: 'false' },
        out: (l) => out.push(l),
        err: (l) => errs.push(l),
        exit: (c) => (code = c),
        connect: () => api.kubeInMemory(),
        clock: io.clock,
      });
      await program.parseAsync(args, { from: 'user' });
      return code;
    };
    expect(await run(['check', '--node', 'n1'])).toBe(0);
    expect(await run(['check', '--node', 'n1', '--block-on-pdb'])).toBe(3);
    expect(out[out.length - 1]).toMatch(/^decision: blocked: pdb: /);
    expect(errs).toEqual([]);
  });

  describe("judges with the deployed agent's configuration", () => {
    /** The chart's agent DaemonSet in kured-ts, with these container args and env, on nodes with `selector`. */
    function chartAgent(
      name: string,
      args: string[],
      env: { name: string; value?: string; valueFrom?: object }[] = [],
      selector: Record<string, string> = {},
    ): void {
      api.create('daemonsets', {
        apiVersion: 'apps/v1',
        kind: 'DaemonSet',
        metadata: { name, namespace: 'kured-ts', labels: { 'app.kubernetes.io/name': 'kured-ts' } },
        spec: {
          selector: { matchLabels: { app: name } },
          template: {
            metadata: { labels: { app: name } },
            spec: {
              nodeSelector: selector,
              containers: [
                {
                  name: 'agent',
                  image: 'kured-ts',
                  args,
                  env,
                  volumeMounts: [
                    { name: 'drain-rules', mountPath: '/etc/kured-ts/drain-rules', readOnly: true },
                  ],
                },
              ],
              volumes: [{ name: 'drain-rules', configMap: { name: `${name}-drain-rules` } }],
            },
          },
        },
      });
    }
    async function check(args: string[], env: Record<string, string> = {}): Promise<number | undefined> {
      let code: number | undefined;
      const program = new Command().exitOverride();
      registerCheck(program, {
        env,
        out: (l) => out.push(l),
        err: (l) => errs.push(l),
        exit: (c) => (code = c),
        connect: () => api.kubeInMemory(),
        clock: io.clock,
      });
      await program.parseAsync(['check', '--node', 'n1', ...args], { from: 'user' });
      return code;
    }
    const line = (name: string): string | undefined => out.find((l) => l.trimStart().startsWith(`${name} `));

    it("blocks as the deployed agent would: its window, not the laptop's all-day one, and says whose it is", async () => {
      api.create('daemonsets', daemonSet());
      // the clock says Monday 10:00 UTC; the deployed window is the night
      chartAgent(
        'kured-ts',
        ['--start-time=22:00', '--end-time=04:00', '--ds-name=kured', '--ds-namespace=kube-system'],
        [
          { name: 'KURED_TIME_ZONE', value: 'UTC' },
          { name: 'KURED_NOTIFY_URL', valueFrom: { secretKeyRef: { name: 'n', key: 'url' } } },
        ],
      );
      expect(await check([])).toBe(3);
      expect(out[1]).toBe(
        "configuration: the deployed agent's (DaemonSet kured-ts/kured-ts: 4 flags, 1 KURED_* variables); not read: KURED_NOTIFY_URL (from a Secret)",
      );
      expect(line('window')).toMatch(/BLOCKS/);
      out = [];
      // a flag on the command line wins over the deployed one, and is named
      expect(await check(['--start-time=00:00', '--end-time=23:59'])).toBe(0);
      expect(out[1]).toMatch(/; from the command line: --start-time, --end-time/);
      expect(line('window')).toMatch(/ ok /);
    });

    it("takes the agent of the node's own pool, and its drain rules from the chart's ConfigMap", async () => {
      api.create('daemonsets', daemonSet());
      const n1 = api.get<V1Node>('nodes', undefined, 'n1')!;
      n1.metadata = { ...n1.metadata, labels: { pool: 'gpu' } };
      api.update('nodes', n1);
      api.create('pods', pod('web-1', { app: 'web' }));
      chartAgent('kured-ts-cpu', ['--drain-pod-selector=app=none'], [], { pool: 'cpu' });
      chartAgent('kured-ts-gpu', ['--drain-rules=/etc/kured-ts/drain-rules/drain-rules.yaml'], [], {
        pool: 'gpu',
      });
      api.create('configmaps', {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { name: 'kured-ts-gpu-drain-rules', namespace: 'kured-ts' },
        data: { 'drain-rules.yaml': '- namespace: default\n  drain: skip\n' },
      } as never);
      await check([]);
      expect(out[1]).toMatch(
        /^configuration: the deployed agent's \(DaemonSet kured-ts\/kured-ts-gpu: 1 flags/,
      );
      expect(out.find((l) => l.includes('default/web-1'))).toMatch(
        /skip .*--drain-rules entry 1 \(namespace default\)/,
      );
    });

    it("with --local on the node, reads the deployed sentinel where the host has it (its hostPath), not at the container's path", async () => {
      api.create('daemonsets', daemonSet());
      const hostDir = mkdtempSync(join(tmpdir(), 'kured-ts-sentinel-'));
      try {
        writeFileSync(join(hostDir, 'reboot-required'), '');
        api.create('daemonsets', {
          apiVersion: 'apps/v1',
          kind: 'DaemonSet',
          metadata: {
            name: 'kured-ts',
            namespace: 'kured-ts',
            labels: { 'app.kubernetes.io/name': 'kured-ts' },
          },
          spec: {
            selector: { matchLabels: { app: 'kured-ts' } },
            template: {
              metadata: { labels: { app: 'kured-ts' } },
              spec: {
                containers: [
                  {
                    name: 'agent',
                    image: 'kured-ts',
                    args: ['--reboot-sentinel=/sentinel/reboot-required', '--host-root=/host'],
                    volumeMounts: [{ name: 'sentinel', mountPath: '/sentinel', readOnly: true }],
                  },
                ],
                volumes: [{ name: 'sentinel', hostPath: { path: hostDir } }],
              },
            },
          },
        });
        await check(['--local']);
        expect(out[1]).toMatch(/not read: --host-root=\/host \(a path in the container\)/);
        expect(line('sentinel')).toMatch(/ ok +reboot required/);
      } finally {
        rmSync(hostDir, { recursive: true, force: true });
      }
    });

    it('says so when no agent of the chart runs on the node, and judges with the command line', async () => {
      api.create('daemonsets', daemonSet());
      chartAgent('kured-ts', ['--start-time=22:00', '--end-time=04:00'], [], { pool: 'elsewhere' });
      expect(await check([])).toBe(0);
      expect(out[1]).toBe(
        "configuration: this command line's and its KURED_* variables (no kured-ts DaemonSet runs on the node)",
      );
    });
  });

  it('exits 2 naming the flag for a bad value, before any API call', async () => {
    let code: number | undefined;
    const program = new Command().exitOverride();
    registerCheck(program, {
      env: {},
      out: (l) => out.push(l),
      err: (l) => errs.push(l),
      exit: (c) => (code = c),
      connect: () => api.kubeInMemory(),
      clock: io.clock,
    });
    await program.parseAsync(['check', '--node', 'n1', '--lock-ttl', 'soon'], { from: 'user' });
    expect(code).toBe(2);
    expect(errs[0]).toContain('--lock-ttl');
    expect(api.requests).toEqual([]);
  });
});
