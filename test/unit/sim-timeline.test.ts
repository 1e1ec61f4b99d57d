import { describe, expect, it } from '@jest/globals';
import { buildTimeline, type TimelineInput } from '../../src/sim/timeline.js';
import { renderTimelineSvg, spanColour } from '../../src/sim/timeline-svg.js';
import { timelinePath } from '../../src/cli/simulate-options.js';

const base: TimelineInput = {
  endMs: 1000,
  concurrency: 1,
  nodes: ['a', 'b'],
  phases: [],
  outages: [],
  slotChanges: [],
};

describe('buildTimeline', () => {
  it.each([
    {
      name: 'a phase lasts until the next change of the same node',
      phases: [
        { atMs: 0, node: 'a', phase: 'pending', reason: '' },
        { atMs: 100, node: 'b', phase: 'draining', reason: '' },
        { atMs: 300, node: 'a', phase: 'draining', reason: '' },
      ],
      spans: [
        ['a', 'pending', 'pending', 0, 300],
        ['a', 'draining', 'draining', 300, 1000],
        ['b', 'draining', 'draining', 100, 1000],
      ],
    },
    {
      name: 'quiet phases (idle, completed, starting) draw nothing',
      phases: [
        { atMs: 0, node: 'a', phase: 'starting', reason: '' },
        { atMs: 10, node: 'a', phase: 'idle', reason: 'reboot not required' },
        { atMs: 20, node: 'a', phase: 'verifying', reason: '' },
        { atMs: 40, node: 'a', phase: 'completed', reason: '' },
      ],
      spans: [['a', 'verifying', 'verifying', 20, 40]],
    },
    {
      name: 'a blocked phase is labelled by the blocker its reason names',
      phases: [
        { atMs: 0, node: 'a', phase: 'blocked', reason: 'pdb: web-pdb allows no disruption' },
        { atMs: 50, node: 'a', phase: 'blocked', reason: 'alert HighErrorRate firing' },
        { atMs: 90, node: 'a', phase: 'waiting-for-lock', reason: '' },
      ],
      spans: [
        ['a', 'blocked', 'blocked: pdb', 0, 50],
        ['a', 'blocked', 'blocked: prometheus', 50, 90],
        ['a', 'waiting-for-lock', 'waiting-for-lock', 90, 1000],
      ],
    },
    {
      name: 'a phase that lasted no time draws nothing',
      phases: [
        { atMs: 5, node: 'a', phase: 'draining', reason: '' },
        { atMs: 5, node: 'a', phase: 'rebooting', reason: '' },
      ],
      spans: [['a', 'rebooting', 'rebooting', 5, 1000]],
    },
  ])('$name', ({ phases, spans }) => {
    const t = buildTimeline({ ...base, phases });
    expect(t.spans.map((s) => [s.node, s.kind, s.label, s.fromMs, s.toMs])).toEqual(spans);
  });

  it('closes an outage still open at the end, and counts hosts down over time', () => {
    const t = buildTimeline({
      ...base,
      concurrency: 2,
      outages: [
        { node: 'a', downAtMs: 100, upAtMs: 400 },
        { node: 'b', downAtMs: 300 },
      ],
    });
    expect(t.spans.filter((s) => s.kind === 'down').map((s) => [s.node, s.fromMs, s.toMs])).toEqual([
      ['a', 100, 400],
      ['b', 300, 1000],
    ]);
    expect(t.down).toEqual([
      { atMs: 0, count: 0 },
      { atMs: 100, count: 1 },
      { atMs: 300, count: 2 },
      { atMs: 400, count: 1 },
      { atMs: 1000, count: 0 },
    ]);
  });

  it('keeps the last slot count of changes at the same instant', () => {
    const t = buildTimeline({
      ...base,
      slotChanges: [
        { atMs: 10, slots: 1 },
        { atMs: 10, slots: 2 },
        { atMs: 50, slots: 0 },
      ],
    });
    expect(t.slots).toEqual([
      { atMs: 0, count: 0 },
      { atMs: 10, count: 2 },
      { atMs: 50, count: 0 },
    ]);
  });
});

describe('the timeline picture', () => {
  it('escapes node names and the title', () => {
    const svg = renderTimelineSvg(
      buildTimeline({
        ...base,
        nodes: ['a<b'],
        phases: [{ atMs: 0, node: 'a<b', phase: 'draining', reason: '' }],
      }),
      'wave & "C=1"',
    );
    expect(svg).toContain('wave &amp; &quot;C=1&quot;');
    expect(svg).toContain('data-node="a&lt;b"');
    expect(svg).not.toContain('a<b');
  });

  it.each([
    ['a known blocker', { kind: 'blocked', label: 'blocked: pdb' }, '#f28e2b'],
    ['a blocker with no colour of its own', { kind: 'blocked', label: 'blocked: custom' }, '#ff9da7'],
    ['a phase', { kind: 'draining', label: 'draining' }, '#4e79a7'],
  ] as const)('colours %s', (_name, span, colour) => {
    expect(spanColour(span)).toBe(colour);
  });
});

describe('simulate --timeline', () => {
  it.each(['wave.svg', 'out/wave.html', 'WAVE.SVG'])('accepts %s', (path) => {
    expect(timelinePath(path)).toBe(path);
  });

  it.each(['wave.png', 'wave', 'wave.svg.txt'])('refuses %s, naming the extensions', (path) => {
    expect(() => timelinePath(path)).toThrow('the file name must end in .svg or .html');
  });
});
