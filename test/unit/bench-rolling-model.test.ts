import { describe, expect, it } from '@jest/globals';
import { runRollingModel, type RollingModelInput } from '../../bench/rolling-model.js';
import { WatchFeed, newKubeCounters, SerialGate, TrackedKube } from '../../src/sim/tracked-kube.js';
import { VirtualTime } from '../../src/sim/virtual-time.js';
import type { Kube, V1DaemonSet, WatchEvent } from '../../src/kube/kube.js';

const input: RollingModelInput = {
  nodes: 10,
  concurrency: 1,
  periodMs: 3_600_000,
  workMs: 165_000,
  wakeUp: 'watch',
  firstTickMaxMs: 60_000,
  seed: 1,
};

describe('the lock hand-off model', () => {
  it('hands the lock on at once with watch wake-up: the wave takes its lower bound', () => {
    const r = runRollingModel(input);
    expect(r.lowerBoundMs).toBe(1_650_000);
    expect(r.rollingMs / r.lowerBoundMs).toBeGreaterThanOrEqual(1);
    expect(r.rollingMs / r.lowerBoundMs).toBeLessThan(1.01);
  });

  it("waits for each node's next jittered tick when it only polls, like kured", () => {
    const r = runRollingModel({ ...input, wakeUp: 'poll', firstTickMaxMs: 3_600_000 });
    expect(r.rollingMs / r.lowerBoundMs).toBeGreaterThan(2);
  });

  it('gives the same answer for the same seed', () => {
    expect(runRollingModel({ ...input, seed: 9, wakeUp: 'poll' })).toEqual(
      runRollingModel({ ...input, seed: 9, wakeUp: 'poll' }),
    );
  });
});

/** Calls the server would answer; only the DaemonSet read matters here. */
function fakeInner(calls: string[]): Kube {
  const answer = (name: string) => () => {
    calls.push(name);
    return Promise.resolve(JSON.parse('{"metadata":{"name":"kured"}}') as V1DaemonSet);
  };
  return { getDaemonSet: answer('getDaemonSet') } as unknown as Kube;
}

interface Feed {
  emit(rv: number): void;
  onWrite: ConstructorParameters<typeof WatchFeed>[0]['onWrite'];
}

function feed(): Feed {
  const listeners: Parameters<Feed['onWrite']>[0][] = [];
  return {
    onWrite: (l) => {
      listeners.push(l);
      return () => undefined;
    },
    emit: (rv) => {
      for (const l of listeners)
        l({
          type: 'MODIFIED',
          resource: 'daemonsets',
          object: { metadata: { name: 'kured', namespace: 'kube-system', resourceVersion: String(rv) } },
        });
    },
  };
}

describe('the tracked client of a simulated agent', () => {
  const setup = (): { kube: TrackedKube; time: VirtualTime; writes: Feed; calls: string[] } => {
    const time = new VirtualTime(new Date('2026-01-05T00:00:00Z'));
    const writes = feed();
    const calls: string[] = [];
    const kube = new TrackedKube({
      inner: fakeInner(calls),
      time,
      gate: new SerialGate(),
      feed: new WatchFeed(writes),
      counters: newKubeCounters(),
    });
    return { kube, time, writes, calls };
  };

  it('replays lock changes after the given resourceVersion and delivers later ones as tasks', async () => {
    const { kube, time, writes } = setup();
    writes.emit(5);
    writes.emit(7);
    const seen: string[] = [];
    const ac = new AbortController();
    const watching = kube.watchDaemonSet(
      'kube-system',
      'kured',
      (e: WatchEvent<V1DaemonSet>) => seen.push(e.object.metadata?.resourceVersion ?? ''),
      { resourceVersion: '5', signal: ac.signal },
    );
    writes.emit(9);
    await time.run(() => seen.length === 2, Infinity);
    expect(seen).toEqual(['7', '9']);
    ac.abort();
    await watching;
  });

  it('never answers once killed, like a process that died in the reboot', async () => {
    const { kube, time, calls } = setup();
    await expect(kube.getDaemonSet('kube-system', 'kured')).resolves.toMatchObject({
      metadata: { name: 'kured' },
    });
    kube.kill();
    let answered = false;
    void kube.getDaemonSet('kube-system', 'kured').then(() => (answered = true));
    expect(await time.run(() => false, Infinity)).toBe('idle');
    expect(answered).toBe(false);
    expect(calls).toEqual(['getDaemonSet']);
  });
});
