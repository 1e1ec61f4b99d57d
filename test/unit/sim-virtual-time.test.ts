import { describe, expect, it } from '@jest/globals';
import { VirtualTime } from '../../src/sim/virtual-time.js';
import { forkRandom, randomBootId, seededRandom } from '../../src/sim/random.js';
import { lockHolders } from '../../src/sim/lock-holders.js';
import { blockedGroup } from '../../src/sim/blocked-group.js';
import { parsePdb } from '../../src/cli/simulate-options.js';

const start = new Date('2026-01-05T00:00:00Z');

describe('VirtualTime', () => {
  it('wakes sleepers in time order and jumps the clock to each', async () => {
    const time = new VirtualTime(start);
    const clock = time.clock();
    const woke: [string, number][] = [];
    const sleeper = async (name: string, ms: number): Promise<void> => {
      await clock.sleep(ms);
      woke.push([name, time.nowMs() - start.getTime()]);
    };
    void sleeper('late', 3_600_000);
    void sleeper('early', 1_000);
    void sleeper('middle', 60_000);
    const stop = await time.run(() => woke.length === 3, Infinity);
    expect(stop).toBe('done');
    expect(woke).toEqual([
      ['early', 1_000],
      ['middle', 60_000],
      ['late', 3_600_000],
    ]);
  });

  it('does not advance while tracked work is in flight', async () => {
    const time = new VirtualTime(start);
    const clock = time.clock();
    const seen: number[] = [];
    void (async () => {
      // eslint-disable-next-line no-restricted-syntax -- real time: virtual time waits for real work
      await time.track(() => new Promise<void>((resolve) => setTimeout(resolve, 30)));
      seen.push(time.nowMs() - start.getTime());
      await clock.sleep(500);
      seen.push(time.nowMs() - start.getTime());
    })();
    void clock.sleep(100).then(() => seen.push(time.nowMs() - start.getTime()));
    await time.run(() => seen.length === 3, Infinity);
    // The tracked request (30 ms of real time) finished at virtual 0, before the 100 ms sleeper.
    expect(seen).toEqual([0, 100, 500]);
  });

  it('stops at the virtual time limit and reports idle when nothing is left', async () => {
    const time = new VirtualTime(start);
    void time.clock().sleep(10_000);
    expect(await time.run(() => false, start.getTime() + 5_000)).toBe('time-limit');
    expect(await time.run(() => false, Infinity)).toBe('idle');
  });

  it('freezes a killed clock: pending and later sleeps never resolve', async () => {
    const time = new VirtualTime(start);
    const clock = time.clock();
    let resolved = 0;
    void clock.sleep(1_000).then(() => resolved++);
    clock.kill();
    void clock.sleep(1).then(() => resolved++);
    expect(await time.run(() => false, Infinity)).toBe('idle');
    expect(resolved).toBe(0);
    expect(clock.killed).toBe(true);
  });

  it('rejects a sleep whose signal aborts', async () => {
    const time = new VirtualTime(start);
    const ac = new AbortController();
    const sleep = time.clock().sleep(1_000, ac.signal);
    ac.abort(new Error('stop'));
    await expect(sleep).rejects.toThrow('stop');
  });

  it('runs cancelled tasks as no-ops', async () => {
    const time = new VirtualTime(start);
    let ran = false;
    const cancel = time.after(10, () => {
      ran = true;
    });
    cancel();
    await time.run(() => false, Infinity);
    expect(ran).toBe(false);
  });
});

describe('seeded randomness', () => {
  it('gives the same numbers for the same seed and name, others for another', () => {
    const a = Array.from({ length: 5 }, seededRandom(7));
    const b = Array.from({ length: 5 }, seededRandom(7));
    expect(a).toEqual(b);
    const x = forkRandom(7, 'node-01');
    const y = forkRandom(7, 'node-02');
    expect(x()).not.toBe(y());
    for (const v of a) expect(v >= 0 && v < 1).toBe(true);
  });

  it('makes boot IDs in the kernel UUID shape', () => {
    expect(randomBootId(seededRandom(1))).toMatch(
      /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/,
    );
  });
});

describe('lockHolders', () => {
  it.each([
    ['no annotation', undefined, []],
    ['empty', '', []],
    [
      'single',
      '{"nodeID":"n1","metadata":{"unschedulable":false},"created":"2026-01-05T00:00:00Z","TTL":0}',
      ['n1'],
    ],
    ['single released', '{"nodeID":"","metadata":{"unschedulable":false},"TTL":0}', []],
    ['multi', '{"maxOwners":2,"locks":[{"nodeID":"a"},{"nodeID":"b"}]}', ['a', 'b']],
    ['multi empty', '{"maxOwners":2,"locks":[]}', []],
    ['garbage', 'not json', undefined],
  ])('reads %s', (_name, value, holders) => {
    expect(lockHolders(value)).toEqual(holders);
  });
});

describe('report helpers', () => {
  it.each([
    ['blocked', 'blocking pods match "a=b": batch/x', 'blocked: pods'],
    ['blocked', '1 active alert(s): HighErrorRate', 'blocked: prometheus'],
    ['blocked', 'PodDisruptionBudget apps/a allows no disruption of pod apps/a-1', 'blocked: pdb'],
    ['blocked', 'fleet paused by ops: upgrade', 'blocked: pause'],
    ['blocked', 'window closed', 'blocked: window'],
    ['waiting-for-lock', 'held by node-02', 'waiting-for-lock'],
    ['blocked', '', 'blocked'],
  ])('groups %s "%s" as %s', (phase, reason, group) => {
    expect(blockedGroup(phase, reason)).toBe(group);
  });

  it.each([
    ['none', { kind: 'none' }],
    ['max-unavailable=1', { kind: 'maxUnavailable', value: 1 }],
    ['min-available=50%', { kind: 'minAvailable', value: '50%' }],
  ])('parses --pdb %s', (text, spec) => {
    expect(parsePdb(text)).toEqual(spec);
  });

  it('rejects a malformed --pdb', () => {
    expect(() => parsePdb('max=1')).toThrow('expected none');
  });
});
