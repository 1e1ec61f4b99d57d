// Issue 54: the data on the node comes first. After the drain the node waits until the volumes of
// the pods it evicted are detached from it and unmounted, as its status says (volumesAttached, the
// attach-detach controller's; volumesInUse, the kubelet's), before the re-verify and the reboot.
// Through the real client against the fake API server, which serves the claims and volumes and keeps
// the Node's status as kube-apiserver does; the test plays the attach-detach controller and the
// kubelet. The rebooter checks the invariant at the moment of the reboot (DESIGN §2.8).
import { createHash } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { Agent, type Outcome } from '../../../src/agent/agent.js';
import type { Config } from '../../../src/config/config.js';
import { defaultConfig } from '../../../src/config/parse.js';
import { runCheck } from '../../../src/cli/check.js';
import type { CoreV1Event, V1Node, V1Pod } from '../../../src/kube/kube.js';
import { CYCLE_ANNOTATION, CYCLE_LABEL, parseCycle } from '../../../src/node/cycle.js';
import { QUARANTINE_ANNOTATION, parseQuarantine } from '../../../src/node/quarantine.js';
import type { FakeApiServer } from '../../../src/sim/fake-api-server.js';
import { csiVolumeName } from '../../../src/volumes/volumes.js';
import { startClusterApiServer } from '../../fakes/cluster-api-server.js';
import { FakeClock } from '../../fakes/fake-clock.js';
import { kuredDaemonSet, readyNode, webPod } from '../../fakes/kube-objects.js';
import { steppedAgent, steppedConfig, steppedTick, type SteppedTick } from '../../fakes/stepped-agent.js';
import { lockHolders, nodeStatus, storedNode } from '../../fakes/cluster-reads.js';

/** The agents' clock: a Monday morning, inside every window the tests' flags open, whatever day they run. */
const MONDAY = '2026-01-05T10:00:00Z';

const DRIVER = 'driver.longhorn.io';
/** The volume of the web pod the drain evicts. */
const WEB_VOLUME = csiVolumeName(DRIVER, 'pv-web');
/** The volume of the DaemonSet pod the drain leaves. */
const DS_VOLUME = csiVolumeName(DRIVER, 'pv-ds');

let server: FakeApiServer;
/** The volumes attached to n1 at each reboot request, as its status said then. */
let attachedAtReboot: string[][];

beforeEach(async () => {
  server = await startClusterApiServer();
  attachedAtReboot = [];
  server.create('daemonsets', kuredDaemonSet());
  const n1 = readyNode('n1');
  n1.status = {
    ...n1.status,
    volumesAttached: [
      { name: WEB_VOLUME, devicePath: '' },
      { name: DS_VOLUME, devicePath: '' },
    ],
    volumesInUse: [WEB_VOLUME, DS_VOLUME],
  };
  server.create<V1Node>('nodes', n1);
  for (const [claim, pv] of [
    ['data-web', 'pv-web'],
    ['data-ds', 'pv-ds'],
  ] as const) {
    server.create('persistentvolumeclaims', {
      apiVersion: 'v1',
      kind: 'PersistentVolumeClaim',
      metadata: { name: claim, namespace: 'default' },
      spec: { volumeName: pv },
    });
    server.create('persistentvolumes', {
      apiVersion: 'v1',
      kind: 'PersistentVolume',
      metadata: { name: pv },
      spec: { csi: { driver: DRIVER, volumeHandle: pv } },
    });
  }
  const web = webPod('web-1', 'n1');
  web.spec = { ...web.spec!, volumes: [{ name: 'data', persistentVolumeClaim: { claimName: 'data-web' } }] };
  server.create<V1Pod>('pods', web);
  const ds = webPod('storage-agent', 'n1');
  ds.metadata = {
    ...ds.metadata,
    ownerReferences: [
      { apiVersion: 'apps/v1', kind: 'DaemonSet', name: 'storage', uid: 'ds', controller: true },
    ],
  };
  ds.spec = { ...ds.spec!, volumes: [{ name: 'data', persistentVolumeClaim: { claimName: 'data-ds' } }] };
  server.create<V1Pod>('pods', ds);
});

afterEach(async () => {
  await server.close();
});

const node = (): V1Node => storedNode(server, 'n1');
const holders = (): string[] => lockHolders(server);
const status = (): ReturnType<typeof nodeStatus> => nodeStatus(server, 'n1');

/** The attach-detach controller detaches `volume` from n1, and the kubelet has unmounted it. */
function detach(volume: string): void {
  const n = node();
  n.status = {
    ...n.status,
    volumesAttached: (n.status?.volumesAttached ?? []).filter((v) => v.name !== volume),
    volumesInUse: (n.status?.volumesInUse ?? []).filter((v) => v !== volume),
  };
  server.update('nodes', n);
}

/** n1's agent on `clock`, over the real client; its host records what was attached at the reboot. */
function agent(clock: FakeClock, overrides: Partial<Config> = {}): Agent {
  const config = steppedConfig(overrides);
  return steppedAgent(server, clock, config, () => {
    attachedAtReboot.push((node().status?.volumesAttached ?? []).map((v) => v.name));
  });
}

/** Starts n1's tick on `clock`; `next()` moves the clock past the wait's next look (2 s without a watch). */
function ticking(clock: FakeClock, overrides: Partial<Config> = {}, signal?: AbortSignal): SteppedTick {
  const phase = 'waiting-for-volumes';
  const o = { server, clock, node: 'n1', phase, stepMs: 2_000 };
  return steppedTick(agent(clock, overrides), signal === undefined ? o : { ...o, signal });
}

describe('the wait for the volumes after the drain', () => {
  it("waits for the evicted pods' volumes, not for a DaemonSet pod's, and reboots once they are detached", async () => {
    const clock = new FakeClock(MONDAY);
    const run = ticking(clock);
    await run.waiting();
    for (let look = 0; look < 3; look++) {
      expect(status()?.reason).toMatch(
        new RegExp(
          `^drained; reboot waits: ${escape(WEB_VOLUME)} still attached \\(waiting since .*not waited for \\(pods left on the node\\): ${escape(DS_VOLUME)}$`,
        ),
      );
      expect(node().spec?.unschedulable).toBe(true);
      expect(holders()).toEqual(['n1']);
      expect(attachedAtReboot).toEqual([]);
      await run.next();
    }
    detach(WEB_VOLUME);
    await run.next();
    expect((await run.tick).kind).toBe('rebooting');
    expect(attachedAtReboot).toEqual([[DS_VOLUME]]);
  });

  it("waits while a volume gone from the node's status still has its VolumeAttachment (the CSI detach still running)", async () => {
    const name = `csi-${createHash('sha256').update(`pv-web${DRIVER}n1`).digest('hex')}`;
    server.create('volumeattachments', {
      apiVersion: 'storage.k8s.io/v1',
      kind: 'VolumeAttachment',
      metadata: { name },
      spec: { attacher: DRIVER, nodeName: 'n1', source: { persistentVolumeName: 'pv-web' } },
    });
    const clock = new FakeClock(MONDAY);
    const run = ticking(clock);
    await run.waiting();
    // the controller drops the volume from the status first, then runs the CSI detach
    detach(WEB_VOLUME);
    await run.next();
    await run.next();
    expect(run.settled()).toBe(false);
    expect(status()?.reason).toContain(`reboot waits: ${WEB_VOLUME} still attached`);
    // the detach ends: the controller deletes its record
    server.delete('volumeattachments', undefined, name);
    await run.next();
    expect((await run.tick).kind).toBe('rebooting');
    expect(attachedAtReboot).toEqual([[DS_VOLUME]]);
  });

  it('reads no VolumeAttachment one by one for a status that lists more volumes than a node attaches, and waits for them all (its kubelet may lie)', async () => {
    const n = node();
    const forged = Array.from({ length: 300 }, (_, i) => csiVolumeName(DRIVER, `forged-${String(i)}`));
    n.status = { ...n.status, volumesInUse: [...(n.status?.volumesInUse ?? []), ...forged] };
    server.update('nodes', n);
    const clock = new FakeClock(MONDAY);
    const run = ticking(clock, { volumeDetachTimeoutMs: 6_000, onDrainFailure: 'requeue' });
    await run.waiting();
    const m = node();
    m.status = { ...m.status, volumesAttached: [], volumesInUse: [] };
    server.update('nodes', m);
    for (let move = 0; move < 10 && !run.settled(); move++) await run.next();
    expect((await run.tick).kind).toBe('drain-failed');
    expect(attachedAtReboot).toEqual([]);
    expect(server.requests.filter((r) => r.path.includes('/volumeattachments/'))).toEqual([]);
  });

  it('reboots without waiting when --volume-detach-timeout is 0, with the volumes attached', async () => {
    const outcome = await agent(new FakeClock(MONDAY), { volumeDetachTimeoutMs: 0 }).tick();
    expect(outcome.kind).toBe('rebooting');
    expect(attachedAtReboot).toEqual([[WEB_VOLUME, DS_VOLUME]]);
  });

  it.each<[string, Partial<Config>, Outcome['kind']]>([
    ['--on-drain-failure requeue', { onDrainFailure: 'requeue' }, 'drain-failed'],
    ['--on-drain-failure quarantine', { onDrainFailure: 'quarantine' }, 'quarantined'],
  ])(
    'ends the cycle as a failed drain when a volume outlasts --volume-detach-timeout (%s), naming it',
    async (_name, overrides, kind) => {
      const clock = new FakeClock(MONDAY);
      const run = ticking(clock, { volumeDetachTimeoutMs: 10_000, ...overrides });
      await run.waiting();
      for (let move = 0; move < 10 && !run.settled(); move++) await run.next();
      const outcome = await run.tick;
      expect(outcome).toMatchObject({
        kind,
        reason: expect.stringContaining(
          `${WEB_VOLUME} still attached 10s after the drain, past --volume-detach-timeout 10s`,
        ),
      });
      expect(attachedAtReboot).toEqual([]);
      expect(node().spec?.unschedulable).not.toBe(true);
      expect(node().metadata?.labels?.[CYCLE_LABEL]).toBeUndefined();
      expect(holders()).toEqual([]);
      const quarantine = parseQuarantine(node().metadata?.annotations?.[QUARANTINE_ANNOTATION]);
      if (kind === 'quarantined')
        expect(quarantine).toMatchObject({ kind: 'volume-detach-timeout', volumes: [WEB_VOLUME] });
      else expect(quarantine).toBeUndefined();
    },
  );

  it('lifts the quarantine once the volume that outlasted the timeout is detached', async () => {
    const clock = new FakeClock(MONDAY);
    const run = ticking(clock, {
      volumeDetachTimeoutMs: 4_000,
      onDrainFailure: 'quarantine',
      quarantineRetryMs: 0,
    });
    await run.waiting();
    for (let move = 0; move < 10 && !run.settled(); move++) await run.next();
    expect((await run.tick).kind).toBe('quarantined');
    expect(await agent(clock, { quarantineRetryMs: 0 }).tick()).toMatchObject({
      kind: 'blocked',
      blocker: 'quarantine',
      reason: expect.stringContaining(
        `volumes still attached after the drain past --volume-detach-timeout: ${WEB_VOLUME}`,
      ),
    });
    detach(WEB_VOLUME);
    expect(await agent(clock, { quarantineRetryMs: 0 }).tick()).toMatchObject({ kind: 'rebooting' });
  });

  it('reboots at the timeout with --volume-detach-timeout-action reboot, the status saying so', async () => {
    const clock = new FakeClock(MONDAY);
    const run = ticking(clock, { volumeDetachTimeoutMs: 4_000, volumeDetachTimeoutAction: 'reboot' });
    await run.waiting();
    for (let move = 0; move < 10 && !run.settled(); move++) await run.next();
    expect((await run.tick).kind).toBe('rebooting');
    expect(attachedAtReboot).toEqual([[WEB_VOLUME, DS_VOLUME]]);
    const said = server
      .list<CoreV1Event>('events', 'default')
      .filter((e) => e.reason === 'WaitingForVolumes')
      .map((e) => e.message);
    expect(said).toContainEqual(
      expect.stringMatching(
        /past --volume-detach-timeout 4s; rebooting with them attached \(--volume-detach-timeout-action reboot\)$/,
      ),
    );
  });

  it("goes on counting the timeout from the wait's start when the agent restarts in the middle of it", async () => {
    const clock = new FakeClock(MONDAY);
    const stop = new AbortController();
    const first = ticking(clock, { volumeDetachTimeoutMs: 10_000 }, stop.signal);
    await first.waiting();
    await first.next(); // 2 s
    await first.next(); // 4 s
    const since = parseCycle(node().metadata?.annotations?.[CYCLE_ANNOTATION])?.volumesSince;
    expect(since).toBeDefined();
    stop.abort();
    await first.tick.catch(() => undefined);
    // a new agent: it drains again (a no-op on a drained node) and waits only what is left
    const second = ticking(clock, { volumeDetachTimeoutMs: 10_000, onDrainFailure: 'requeue' });
    await second.waiting();
    let moved = 0;
    for (; moved < 20_000 && !second.settled(); moved += 2_000) await second.next();
    expect(await second.tick).toMatchObject({ kind: 'drain-failed' });
    expect(moved).toBeLessThanOrEqual(8_000);
    expect(parseCycle(node().metadata?.annotations?.[CYCLE_ANNOTATION])).toBeUndefined();
  });
});

describe('kured-ts check --node', () => {
  it('shows the volumes the wait after the drain would wait for, and those of the pods it leaves', async () => {
    const out: string[] = [];
    const io = {
      kube: server.kubeInMemory(),
      out: (l: string) => out.push(l),
      clock: new FakeClock(MONDAY),
    };
    await runCheck({ node: 'n1', config: { ...defaultConfig(), blockOnPdb: false } }, io);
    expect(out.find((l) => l.trimStart().startsWith('volumes '))).toMatch(
      new RegExp(
        `volumes +ok +after the drain the reboot waits until detached: ${escape(WEB_VOLUME)} \\(at most --volume-detach-timeout 10m\\); not waited for \\(pods left on the node\\): ${escape(DS_VOLUME)}$`,
      ),
    );
  });
});

/** `text` as a literal inside a RegExp. */
function escape(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
