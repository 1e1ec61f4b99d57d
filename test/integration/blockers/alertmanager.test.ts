// A node's silences for its reboot cycle (src/silence/) against a real Alertmanager (Debian's
// prometheus-alertmanager), and the alert blocker's cover by them against a real Prometheus.
// Alertmanager judges a silence's times by its own clock: the agents' fake clock starts at the real
// time of the test's start, and moves on from there by the test's steps only.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { join } from 'node:path';
import { PrometheusBlocker } from '../../../src/blockers/prometheus.js';
import { MemoryLogger } from '../../../src/log/logger.js';
import { AlertmanagerClient, type Silence } from '../../../src/silence/alertmanager.js';
import { otherNodesCover } from '../../../src/silence/cover.js';
import { parseMatcherSet } from '../../../src/silence/matchers.js';
import { SilenceKeeper } from '../../../src/silence/silence-keeper.js';
import { FakeClock } from '../../fakes/fake-clock.js';
import { freePort, startDaemon, startPrometheus, type RealDaemon } from '../../fakes/real-daemon.js';

const MINUTE = 60_000;
const RULES = `
groups:
  - name: reboots
    interval: 1s
    rules:
      - alert: NodeExporterDown
        expr: vector(1)
        labels: { node: n1, job: node-exporter }
      - alert: KubeletDown
        expr: vector(1)
        labels: { node: n3, job: kubelet }
`;

let alertmanager: RealDaemon;
let prometheus: RealDaemon;

async function ok(url: string): Promise<boolean> {
  return (await fetch(url)).ok;
}

beforeAll(async () => {
  alertmanager = await startDaemon({
    binary: '/usr/bin/prometheus-alertmanager',
    files: { 'alertmanager.yml': "route:\n  receiver: 'null'\nreceivers:\n  - name: 'null'\n" },
    args: (port, dir) => [
      `--config.file=${join(dir, 'alertmanager.yml')}`,
      `--storage.path=${join(dir, 'data')}`,
      `--web.listen-address=127.0.0.1:${port}`,
      '--cluster.listen-address=',
    ],
    ready: (url) => ok(`${url}/-/ready`),
    waitMs: 20_000,
  });
  prometheus = await startPrometheus(RULES, async (url) => {
    const blocker = new PrometheusBlocker({ url, filter: undefined, matchOnly: false, firingOnly: true });
    return (await blocker.activeAlerts()).length === 2;
  });
}, 60_000);

afterAll(async () => {
  await alertmanager.stop();
  await prometheus.stop();
});

const SETS = ['{node="{{.node}}"}', 'instance=~"{{.node}}:.*", job="node-exporter"'].map(parseMatcherSet);

/** A keeper for `node` on `clock`, counting its failures. */
function keeper(node: string, clock: FakeClock, url = alertmanager.url) {
  const failures = { count: 0 };
  const log = new MemoryLogger();
  const k = new SilenceKeeper({
    api: new AlertmanagerClient({ url }),
    node,
    sets: SETS,
    durationMs: 15 * MINUTE,
    tailMs: 5 * MINUTE,
    clock,
    log,
    failed: () => {
      failures.count++;
    },
  });
  return { keeper: k, failures, log };
}

/** The live silences (active or pending) of `node`'s, by comment. */
async function liveOf(node: string): Promise<Silence[]> {
  const all = await new AlertmanagerClient({ url: alertmanager.url }).list();
  return all
    .filter((s) => s.comment.startsWith(`kured-ts: reboot of ${node}, `) && s.state !== 'expired')
    .sort((a, b) => a.comment.localeCompare(b.comment));
}

const minutesLeft = (s: Silence, from: Date): number => (Date.parse(s.endsAt) - from.getTime()) / MINUTE;

/** A test clock from the real Alertmanager's now on: it judges a silence's times on its own clock. */
function alertmanagersNow(): FakeClock {
  // eslint-disable-next-line no-restricted-syntax -- real time: the real Alertmanager's clock
  return new FakeClock(new Date());
}

describe('a node silenced for its reboot cycle, in a real Alertmanager', () => {
  it('creates one silence per --silence-matcher, by kured-ts, for this node, naming the node and the cycle, for --silence-duration', async () => {
    const clock = alertmanagersNow();
    const { keeper: k, failures } = keeper('n1', clock);
    await k.hold('2026-11-29T10:00:00.000Z');
    const live = await liveOf('n1');
    expect(live.map((s) => s.comment)).toEqual([
      'kured-ts: reboot of n1, cycle 2026-11-29T10:00:00.000Z (1/2)',
      'kured-ts: reboot of n1, cycle 2026-11-29T10:00:00.000Z (2/2)',
    ]);
    expect(live.map((s) => s.createdBy)).toEqual(['kured-ts', 'kured-ts']);
    expect(live[0]?.matchers).toEqual([{ name: 'node', value: 'n1', isRegex: false, isEqual: true }]);
    expect(live[1]?.matchers).toContainEqual({
      name: 'instance',
      value: 'n1:.*',
      isRegex: true,
      isEqual: true,
    });
    for (const s of live) expect(minutesLeft(s, clock.now())).toBeCloseTo(15, 1);
    expect(failures.count).toBe(0);
  });

  it('renews at half the lease, and a restarted agent renews the silences it finds instead of making others', async () => {
    const clock = alertmanagersNow();
    const started = '2026-11-29T11:00:00.000Z';
    await keeper('n2', clock).keeper.hold(started);
    // 5 minutes on: 10 left, more than half: nothing written
    await clock.advance(5 * MINUTE);
    const again = keeper('n2', clock).keeper; // the agent restarted (after the reboot, say)
    await again.hold(started);
    let live = await liveOf('n2');
    expect(live).toHaveLength(2);
    for (const s of live) expect(minutesLeft(s, clock.now())).toBeCloseTo(10, 1);
    // 4 minutes more: 6 left, less than half: renewed for 15 from now, still two
    await clock.advance(4 * MINUTE);
    await again.hold(started);
    live = await liveOf('n2');
    expect(live).toHaveLength(2);
    for (const s of live) expect(minutesLeft(s, clock.now())).toBeCloseTo(15, 1);
  });

  it('ends every silence of the node --silence-tail after its cycle ends', async () => {
    const clock = alertmanagersNow();
    const { keeper: k } = keeper('n4', clock);
    await k.hold('2026-11-29T12:00:00.000Z');
    await clock.advance(2 * MINUTE);
    await k.release();
    const live = await liveOf('n4');
    expect(live).toHaveLength(2);
    for (const s of live) expect(minutesLeft(s, clock.now())).toBeCloseTo(5, 1);
  });

  it('with Alertmanager down, says so as a warning, counts it, and goes on', async () => {
    const clock = alertmanagersNow();
    const { keeper: k, failures, log } = keeper('n5', clock, `http://127.0.0.1:${await freePort()}`);
    await expect(k.hold('2026-11-29T13:00:00.000Z')).resolves.toBeUndefined();
    expect(failures.count).toBe(1);
    expect(log.entries.filter((e) => e.level === 'warn').map((e) => e.message)).toEqual([
      'cannot hold its silences in Alertmanager; the cycle goes on without them',
    ]);
  });
});

describe('the alert blocker and our silences, in a real Prometheus and Alertmanager', () => {
  it('does not count an alert our silence for another node in its cycle covers, and counts the others and its own', async () => {
    const clock = alertmanagersNow();
    await keeper('n1', clock).keeper.hold('2026-11-29T14:00:00.000Z');
    const api = new AlertmanagerClient({ url: alertmanager.url });
    const blockerOf = (node: string): PrometheusBlocker =>
      new PrometheusBlocker({
        url: prometheus.url,
        filter: undefined,
        matchOnly: false,
        firingOnly: true,
        cover: (signal) => otherNodesCover(api, node, SETS, signal),
      });
    // n2 judges: n1's reboot makes NodeExporterDown, which n1's silence covers; KubeletDown (n3) counts
    expect(await blockerOf('n2').check()).toEqual({
      blocked: true,
      reason: '1 active alert(s): KubeletDown',
    });
    // n1 judges itself: its own silence does not hide its own alerts
    expect(await blockerOf('n1').check()).toEqual({
      blocked: true,
      reason: '2 active alert(s): KubeletDown, NodeExporterDown',
    });
  });

  it('does not honour a silence in our name whose matchers are not our own for the node it names', async () => {
    const clock = alertmanagersNow();
    const api = new AlertmanagerClient({ url: alertmanager.url });
    // whoever may write silences, in our name, for node n9, but hiding every kubelet alert
    await api.save({
      matchers: [{ name: 'job', value: 'kubelet', isRegex: false, isEqual: true }],
      startsAt: clock.now().toISOString(),
      endsAt: new Date(clock.now().getTime() + 15 * MINUTE).toISOString(),
      createdBy: 'kured-ts',
      comment: 'kured-ts: reboot of n9, cycle 2026-11-29T15:00:00.000Z',
    });
    const blocker = new PrometheusBlocker({
      url: prometheus.url,
      filter: undefined,
      matchOnly: false,
      firingOnly: true,
      cover: (signal) => otherNodesCover(api, 'n2', SETS, signal),
    });
    expect(await blocker.activeAlerts()).toContain('KubeletDown');
  });

  it('counts every alert when Alertmanager cannot say which are covered', async () => {
    const down = new AlertmanagerClient({ url: `http://127.0.0.1:${await freePort()}` });
    const blocker = new PrometheusBlocker({
      url: prometheus.url,
      filter: undefined,
      matchOnly: false,
      firingOnly: true,
      cover: (signal) => otherNodesCover(down, 'n2', SETS, signal),
    });
    expect(await blocker.activeAlerts()).toEqual(['KubeletDown', 'NodeExporterDown']);
  });
});
