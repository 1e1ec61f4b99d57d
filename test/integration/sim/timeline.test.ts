// `kured-ts simulate --timeline`: the picture of a wave, read back by a strict XML parser (rows,
// bars, never more than C nodes holding a slot or down at once) and rendered by a real headless
// Chromium (Debian's chromium-headless-shell) into a PNG whose pixels show the bars.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DOMParser, type Document, type Element } from '@xmldom/xmldom';
import { PNG } from 'pngjs';
import { DEFAULT_SIMULATE_OPTIONS, runSimulate, type SimulateOptions } from '../../../src/cli/simulate.js';
import { TIMELINE_COLOURS } from '../../../src/sim/timeline-svg.js';
import { inMemory, SIMULATION_TIMEOUT_MS } from '../../fakes/simulate.js';

const CHROMIUM = '/usr/bin/chromium-headless-shell';

interface Bar {
  node: string;
  kind: string;
  label: string;
  fromMs: number;
  toMs: number;
  x: number;
  width: number;
  fill: string;
}

interface Picture {
  width: number;
  height: number;
  rows: string[];
  bars: Bar[];
  concurrency: number;
}

/** Parses strictly: any XML error (an attribute given twice, a bad entity) fails the test. */
function parseStrict(svg: string): Document {
  const parser = new DOMParser({
    onError: (level, message) => {
      throw new Error(`${level}: ${message}`);
    },
  });
  return parser.parseFromString(svg, 'image/svg+xml');
}

/** Reads the picture back: every row and bar with its data attributes and geometry. */
function readSvg(svg: string): Picture {
  const root = parseStrict(svg).documentElement;
  if (!root) throw new Error('no root element');
  const attr = (e: Element, name: string): string => e.getAttribute(name) ?? '';
  const rows = Array.from(root.getElementsByTagName('g')).filter((g) => attr(g, 'class') === 'row');
  const bars = rows.flatMap((g) =>
    Array.from(g.getElementsByTagName('rect')).map((r) => ({
      node: attr(r, 'data-node'),
      kind: attr(r, 'data-kind'),
      label: attr(r, 'data-label'),
      fromMs: Number(attr(r, 'data-from-ms')),
      toMs: Number(attr(r, 'data-to-ms')),
      x: Number(attr(r, 'x')),
      width: Number(attr(r, 'width')),
      fill: attr(r, 'fill'),
    })),
  );
  const limit = Array.from(root.getElementsByTagName('line')).find((l) => attr(l, 'class') === 'limit');
  return {
    width: Number(attr(root, 'width')),
    height: Number(attr(root, 'height')),
    rows: rows.map((g) => attr(g, 'data-node')),
    bars,
    concurrency: Number(limit ? attr(limit, 'data-concurrency') : NaN),
  };
}

/** The most bars of `kinds` open at one instant (ends are exclusive). */
function peak(bars: readonly Bar[], kinds: readonly string[]): number {
  const edges = bars
    .filter((b) => kinds.includes(b.kind))
    .flatMap((b) => [
      { at: b.fromMs, d: 1 },
      { at: b.toMs, d: -1 },
    ])
    .sort((a, b) => a.at - b.at || a.d - b.d);
  let open = 0;
  let most = 0;
  for (const e of edges) {
    open += e.d;
    most = Math.max(most, open);
  }
  return most;
}

const OPTIONS: SimulateOptions = {
  ...DEFAULT_SIMULATE_OPTIONS,
  nodes: 8,
  concurrency: 2,
  seed: 7,
  blockingPodMs: 40 * 60_000,
  alertFiringForMs: 20 * 60_000,
};

let dir: string;
let svg: string;
let picture: Picture;
let code: number;
let printed: string;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'kured-ts-timeline-'));
  const files = new Map<string, string>();
  printed = '';
  code = await runSimulate(
    OPTIONS,
    inMemory({
      out: { write: (t) => (printed += t), isTTY: false },
      progress: false,
      timeline: join(dir, 'wave.svg'),
      writeFile: (path, text) => {
        files.set(path, text);
        return Promise.resolve();
      },
    }),
  );
  svg = files.get(join(dir, 'wave.svg')) ?? '';
  picture = readSvg(svg);
}, SIMULATION_TIMEOUT_MS);

afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
});

describe('simulate --timeline FILE.svg', () => {
  it('finishes the wave and says where the picture is', () => {
    expect(code).toBe(0);
    expect(printed).toContain(`timeline written to ${join(dir, 'wave.svg')}`);
  });

  it('draws one row per node, in order, with the concurrency limit', () => {
    expect(picture.rows).toEqual(Array.from({ length: 8 }, (_, i) => `node-0${i + 1}`));
    expect(picture.concurrency).toBe(2);
  });

  it('shows each node down exactly once, inside its rebooting phase', () => {
    for (const node of picture.rows) {
      const down = picture.bars.filter((b) => b.node === node && b.kind === 'down');
      expect(down).toHaveLength(1);
      const rebooting = picture.bars.filter((b) => b.node === node && b.kind === 'rebooting');
      expect(
        rebooting.some((r) => r.fromMs <= (down[0]?.fromMs ?? -1) && (down[0]?.toMs ?? Infinity) <= r.toMs),
      ).toBe(true);
    }
  });

  it("never overlaps a node's own phases", () => {
    for (const node of picture.rows) {
      const phases = picture.bars.filter((b) => b.node === node && b.kind !== 'down');
      phases.sort((a, b) => a.fromMs - b.fromMs);
      phases.forEach((p, i) => {
        const next = phases[i + 1];
        if (next) expect(p.toMs).toBeLessThanOrEqual(next.fromMs);
      });
    }
  });

  it('never shows more than C nodes holding a slot (draining to verifying) or down at once', () => {
    expect(peak(picture.bars, ['down'])).toBeLessThanOrEqual(2);
    expect(peak(picture.bars, ['draining', 'rebooting', 'verifying'])).toBeLessThanOrEqual(2);
    // The wave used its concurrency: the limit is reached, so the check above could fail.
    expect(peak(picture.bars, ['draining', 'rebooting', 'verifying'])).toBe(2);
  });

  it('shows the blockers by reason, each in its legend colour, at its place on the time axis', () => {
    const labels = new Set(picture.bars.map((b) => b.label));
    expect([...labels]).toEqual(
      expect.arrayContaining([
        'blocked: prometheus',
        'blocked: pods',
        'waiting-for-lock',
        'draining',
        'rebooting',
        'down',
      ]),
    );
    const end = Math.max(...picture.bars.map((b) => b.toMs));
    for (const b of picture.bars) {
      expect(b.fill).toBe(TIMELINE_COLOURS[b.label]);
      expect(b.x).toBeCloseTo(120 + (b.fromMs / end) * 900, 0);
    }
    const prometheus = picture.bars.filter((b) => b.label === 'blocked: prometheus');
    expect(Math.min(...prometheus.map((b) => b.fromMs))).toBeLessThan(60_000);
    expect(Math.max(...prometheus.map((b) => b.toMs))).toBeGreaterThanOrEqual(20 * 60_000);
  });

  it('renders in headless Chromium into a PNG that shows the bars', () => {
    const file = join(dir, 'wave.svg');
    const png = join(dir, 'wave.png');
    writeFileSync(file, svg);
    const run = spawnSync(
      CHROMIUM,
      [
        '--no-sandbox',
        '--disable-gpu',
        `--screenshot=${png}`,
        `--window-size=${picture.width},${picture.height}`,
        `file://${file}`,
      ],
      { encoding: 'utf8', timeout: 60_000 },
    );
    expect(run.status).toBe(0);
    const image = PNG.sync.read(readFileSync(png));
    const counts = new Map<string, number>();
    for (let i = 0; i < image.data.length; i += 4) {
      const hex = `#${[0, 1, 2].map((c) => (image.data[i + c] ?? 0).toString(16).padStart(2, '0')).join('')}`;
      counts.set(hex, (counts.get(hex) ?? 0) + 1);
    }
    const total = image.width * image.height;
    // Not blank: a good part of the page is not white.
    expect(1 - (counts.get('#ffffff') ?? 0) / total).toBeGreaterThan(0.05);
    // The bars themselves, in their colours (an error page or an empty frame has none of them).
    for (const label of ['draining', 'down', 'blocked: prometheus', 'blocked: pods', 'waiting-for-lock']) {
      expect(counts.get(TIMELINE_COLOURS[label] ?? '') ?? 0).toBeGreaterThan(50);
    }
  }, 60_000);
});
