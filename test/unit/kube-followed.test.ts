// A view of one object (src/kube/followed.ts) over a scripted ListWatch and a virtual clock: what
// it answers when its watch breaks, when its reader has read the object past it, and how stale it
// may be (issue 53).
import { describe, expect, it } from '@jest/globals';
import { Followed, FollowedObject } from '../../src/kube/followed.js';
import type { WatchEvent } from '../../src/kube/kube.js';
import { WATCH_SILENCE_MS, type ListWatch } from '../../src/kube/reflector.js';
import { MemoryLogger } from '../../src/log/logger.js';
import { FakeClock, flushMicrotasks } from '../fakes/fake-clock.js';

interface Obj {
  metadata: { name: string; resourceVersion: string };
  ready: boolean;
}

const obj = (resourceVersion: number, ready: boolean): Obj => ({
  metadata: { name: 'n1', resourceVersion: String(resourceVersion) },
  ready,
});

/** One watch as the script says it goes: what it sends, then whether it ends or stays open. */
type WatchScript = { send: Obj[]; then: 'end' | 'open' };

/** A ListWatch of one object whose list answers `listed` and whose watches go as `scripts` say, in turn. */
function scripted(
  listed: Obj,
  scripts: WatchScript[],
): ListWatch<Obj> & { watches: string[]; lists: number } {
  const watches: string[] = [];
  const source = {
    what: 'Node n1',
    watches,
    lists: 0,
    list: () => {
      source.lists++;
      return Promise.resolve({ items: [listed], resourceVersion: listed.metadata.resourceVersion });
    },
    watch: (resourceVersion: string, onEvent: (e: WatchEvent<Obj>) => void, signal: AbortSignal) => {
      watches.push(resourceVersion);
      const script = scripts.shift() ?? { send: [], then: 'open' };
      for (const o of script.send) onEvent({ type: 'MODIFIED', object: o });
      if (script.then === 'end') return Promise.resolve();
      return new Promise<void>((resolve) => {
        signal.addEventListener(
          'abort',
          () => {
            resolve();
          },
          { once: true },
        );
      });
    },
  };
  return source;
}

function view(
  source: ListWatch<Obj>,
  clock: FakeClock,
  log = new MemoryLogger(),
): { followed: Followed<Obj>; object: FollowedObject<Obj>; stop: AbortController } {
  const followed = new Followed(source, {
    clock,
    log,
    random: () => 0,
    key: (o) => o.metadata.name,
    needs: 'get and watch on nodes',
    silenceMs: WATCH_SILENCE_MS,
  });
  const object = new FollowedObject(followed, 'n1');
  const stop = new AbortController();
  object.hold(stop.signal);
  return { followed, object, stop };
}

describe('a followed object', () => {
  it('answers with the newer object the watch brought in the first second of a new watch, not with an older one its reader noted while it was blind', async () => {
    const clock = new FakeClock();
    // the first watch ends at once (a proxy); the second brings the reader's own write and the kubelet's
    const source = scripted(obj(3, false), [
      { send: [], then: 'end' },
      { send: [obj(5, false), obj(6, true)], then: 'open' },
    ]);
    const { followed, object, stop } = view(source, clock);
    await flushMicrotasks();
    expect(followed.following).toBe(false); // the first watch failed: blind
    // the reader reads the Node past the view meanwhile (as ViewedKube does) and notes it
    object.note(obj(5, false));
    await clock.advance(600); // the back-off, then the second watch, events in its first second
    expect(source.watches).toEqual(['3', '3']);
    expect(object.current()).toBeUndefined(); // not followed yet: the reader asks the server
    await clock.advance(1_000);
    expect(followed.following).toBe(true);
    expect(object.current()).toEqual(obj(6, true));
    stop.abort();
  });

  it('answers with what its reader wrote until the watch brings that version', async () => {
    const clock = new FakeClock();
    const { object, stop } = view(scripted(obj(3, false), [{ send: [], then: 'open' }]), clock);
    await clock.advance(1_000);
    expect(object.current()).toEqual(obj(3, false));
    object.note(obj(4, true)); // the answer to the reader's write
    expect(object.current()).toEqual(obj(4, true));
    stop.abort();
  });

  it('answers no read once it has heard nothing for longer than its staleness bound, says so, and reads afresh', async () => {
    const clock = new FakeClock();
    const log = new MemoryLogger();
    // every watch after the first list hangs: open, and never a word
    const source = scripted(obj(3, true), []);
    const { followed, object, stop } = view(source, clock, log);
    await clock.advance(WATCH_SILENCE_MS - 1_000);
    expect(object.current()).toEqual(obj(3, true));
    expect(followed.stale()).toBeUndefined();
    await clock.advance(1_200); // the watch is given up at the bound: blind until it is read again
    expect(object.current()).toBeUndefined();
    expect(followed.stale()).toBe('Node n1: nothing heard for more than 90 s (the log says why)');
    // one silent watch is what a busy kube-apiserver's dropped bookmark looks like: said at info
    const said = (level: string): string[] =>
      log.entries.filter((e) => e.level === level).map((e) => e.message);
    expect(said('info')).toContain('watch silent: no event, no bookmark; watching again');
    expect(said('warn')).toEqual([]);
    await clock.advance(2_000); // a list before the next watch: the view is current again
    expect(source.lists).toBe(2);
    expect(object.current()).toEqual(obj(3, true));
    expect(followed.stale()).toBeUndefined();
    // the new watch hangs too: the second silence in a row is a path that passes nothing, warned
    await clock.advance(WATCH_SILENCE_MS + 2_000);
    expect(said('warn')).toEqual(['view stale: its watch fell silent; watching again']);
    stop.abort();
  });

  it('warns of no silence that a watch which hears again ends (one dropped bookmark)', async () => {
    const clock = new FakeClock();
    const log = new MemoryLogger();
    // silent; a watch that brings a change (and ends); silent again: never two in a row
    const source = scripted(obj(3, true), [
      { send: [], then: 'open' },
      { send: [obj(4, true)], then: 'end' },
    ]);
    const { object, stop } = view(source, clock, log);
    for (let t = 0; t < 2 * WATCH_SILENCE_MS + 10_000; t += 1_000) await clock.advance(1_000);
    expect(source.watches.length).toBeGreaterThanOrEqual(3);
    expect(log.entries.filter((e) => e.level === 'warn')).toEqual([]);
    expect(log.entries.filter((e) => e.message.startsWith('watch silent')).length).toBeGreaterThanOrEqual(2);
    expect(object.current()).toBeDefined();
    stop.abort();
  });

  it('reads afresh while its watch keeps failing, warns once, and says when it follows again', async () => {
    const clock = new FakeClock();
    const log = new MemoryLogger();
    const scripts: WatchScript[] = Array.from({ length: 12 }, () => ({ send: [], then: 'end' as const }));
    const source = scripted(obj(3, true), [...scripts, { send: [obj(4, true)], then: 'open' }]);
    const { followed, object, stop } = view(source, clock, log);
    for (let t = 0; t < 300_000 && source.watches.length < 12; t += 1_000) await clock.advance(1_000);
    // a list before each watch once the view is 30 s old keeps it fresh: never stale, though no watch holds
    expect(followed.stale()).toBeUndefined();
    expect(source.lists).toBeGreaterThan(2);
    for (let t = 0; t < 60_000 && source.watches.length < 13; t += 1_000) await clock.advance(1_000);
    await clock.advance(2_000);
    expect(object.current()).toEqual(obj(4, true));
    expect(followed.stale()).toBeUndefined();
    const said = log.entries.filter((e) => e.level !== 'debug').map((e) => [e.level, e.message]);
    expect(said).toEqual([
      ['warn', 'watch keeps failing'],
      ['info', 'watch holds again'],
    ]);
    stop.abort();
  });
});
