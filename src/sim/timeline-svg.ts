// The timeline of a simulated wave as an SVG picture: one row per node with its phases as coloured
// bars (the host's outage in black over its `rebooting` phase), a time axis, the lock slots taken
// and the hosts down over time against the concurrency limit, and a legend. Plain SVG 1.1, no
// script, no external resources: it opens in any browser and renders on GitHub.
//
// Each bar carries its data (data-node, data-kind, data-from-ms, data-to-ms) so that tests and tools
// can read the picture back.
import { shortDuration } from '../text/duration.js';
import type { Span, Step, Timeline } from './timeline.js';

/** Bar colours (Tableau 10), by span label; blocked reasons have their own. */
export const TIMELINE_COLOURS: Readonly<Record<string, string>> = {
  pending: '#bab0ac',
  'outside-window': '#9ecae9',
  'blocked: pdb': '#f28e2b',
  'blocked: pods': '#9c755f',
  'blocked: prometheus': '#e15759',
  'blocked: pause': '#b07aa1',
  'waiting-for-lock: max-unhealthy-nodes': '#8c564b',
  'waiting-for-lock: max-quarantined': '#e377c2',
  'awaiting-approval': '#17becf',
  blocked: '#ff9da7',
  'waiting-for-lock': '#edc948',
  draining: '#4e79a7',
  rebooting: '#76b7b2',
  down: '#222222',
  verifying: '#59a14f',
  failed: '#d62728',
};

/** The colour of a span: its label's, else its kind's (another blocked reason: `blocked`). */
export function spanColour(span: Pick<Span, 'kind' | 'label'>): string {
  return TIMELINE_COLOURS[span.label] ?? TIMELINE_COLOURS[span.kind] ?? '#999999';
}

const LEFT = 120;
const WIDTH = 900;
const TOP = 48;
const ROW = 14;
const BAR = 10;
const CHART = 90;
const FONT = 'font-family="sans-serif" font-size="11"';

function esc(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}

const fixed = (n: number): string => (Math.round(n * 10) / 10).toString();

/** A round tick step so that the axis has about 8 ticks. */
function tickStep(endMs: number): number {
  const steps = [
    60_000, 300_000, 600_000, 1_800_000, 3_600_000, 7_200_000, 21_600_000, 43_200_000, 86_400_000,
  ];
  return steps.find((s) => endMs / s <= 10) ?? Math.ceil(endMs / 10 / 86_400_000) * 86_400_000;
}

class Scale {
  constructor(private readonly endMs: number) {}
  x(ms: number): number {
    return LEFT + (this.endMs > 0 ? (ms / this.endMs) * WIDTH : 0);
  }
}

function axis(timeline: Timeline, scale: Scale, bottom: number): string[] {
  const out: string[] = [];
  const step = tickStep(timeline.endMs);
  for (let t = 0; t <= timeline.endMs; t += step) {
    const x = fixed(scale.x(t));
    out.push(
      `<line class="tick" x1="${x}" y1="${TOP - 4}" x2="${x}" y2="${bottom}" stroke="#e6e6e6"/>`,
      `<text x="${x}" y="${TOP - 8}" text-anchor="middle" ${FONT}>${esc(t === 0 ? '0' : shortDuration(t))}</text>`,
    );
  }
  return out;
}

function rows(timeline: Timeline, scale: Scale): string[] {
  const byNode = new Map<string, Span[]>();
  for (const s of timeline.spans) byNode.set(s.node, [...(byNode.get(s.node) ?? []), s]);
  return timeline.nodes.map((node, i) => {
    const y = TOP + i * ROW;
    // The outage last, so that it is drawn over the rebooting phase.
    const spans = [...(byNode.get(node) ?? [])].sort(
      (a, b) => Number(a.kind === 'down') - Number(b.kind === 'down'),
    );
    const bars = spans.map((s) => {
      const x = scale.x(s.fromMs);
      const w = Math.max(0.5, scale.x(s.toMs) - x);
      return (
        `<rect class="span" data-node="${esc(node)}" data-kind="${s.kind}" data-label="${esc(s.label)}" ` +
        `data-from-ms="${s.fromMs}" data-to-ms="${s.toMs}" x="${fixed(x)}" y="${y + 1}" width="${fixed(w)}" ` +
        `height="${BAR}" fill="${spanColour(s)}"><title>${esc(`${node} ${s.label} ${shortDuration(s.fromMs)}–${shortDuration(s.toMs)}`)}</title></rect>`
      );
    });
    return [
      `<g class="row" data-node="${esc(node)}">`,
      `<text x="${LEFT - 6}" y="${y + BAR}" text-anchor="end" ${FONT}>${esc(node)}</text>`,
      ...bars,
      '</g>',
    ].join('');
  });
}

/** A step line of `steps` in the chart whose top is `top` and whose y range is 0..max. */
function stepPath(
  steps: readonly Step[],
  scale: Scale,
  box: { top: number; max: number; endMs: number },
): string {
  const y = (n: number): string => fixed(box.top + CHART - (n / box.max) * CHART);
  let d = `M${fixed(scale.x(0))},${y(0)}`;
  for (const s of steps) d += ` H${fixed(scale.x(s.atMs))} V${y(s.count)}`;
  return `${d} H${fixed(scale.x(box.endMs))}`;
}

function chart(timeline: Timeline, scale: Scale, top: number): string[] {
  const peak = Math.max(...timeline.slots.map((s) => s.count), ...timeline.down.map((s) => s.count), 0);
  const max = Math.max(timeline.concurrency, peak) + 1;
  const box = { top, max, endMs: timeline.endMs };
  const limitY = fixed(top + CHART - (timeline.concurrency / max) * CHART);
  const x0 = fixed(scale.x(0));
  const x1 = fixed(scale.x(timeline.endMs));
  return [
    `<text x="${LEFT - 6}" y="${top + 10}" text-anchor="end" ${FONT}>nodes</text>`,
    `<rect x="${x0}" y="${top}" width="${WIDTH}" height="${CHART}" fill="none" stroke="#cccccc"/>`,
    `<line class="limit" data-concurrency="${timeline.concurrency}" x1="${x0}" y1="${limitY}" x2="${x1}" y2="${limitY}" stroke="#d62728" stroke-dasharray="6 3"/>`,
    `<text x="${LEFT - 6}" y="${limitY}" text-anchor="end" ${FONT} fill="#d62728">C=${timeline.concurrency}</text>`,
    `<path class="slots" d="${stepPath(timeline.slots, scale, box)}" fill="none" stroke="#4e79a7" stroke-width="2"/>`,
    `<path class="down" d="${stepPath(timeline.down, scale, box)}" fill="none" stroke="#222222" stroke-width="1.5"/>`,
  ];
}

function legend(timeline: Timeline, top: number): string[] {
  const used = new Set(
    timeline.spans.map((s) => (TIMELINE_COLOURS[s.label] !== undefined ? s.label : s.kind)),
  );
  const entries: [string, string, string][] = Object.entries(TIMELINE_COLOURS)
    .filter(([label]) => used.has(label))
    .map(([label, colour]) => [label, colour, 'rect']);
  entries.push(
    ['lock slots taken', '#4e79a7', 'line'],
    ['hosts down', '#222222', 'line'],
    ['concurrency', '#d62728', 'dash'],
  );
  return entries.map(([label, colour, shape], i) => {
    const x = LEFT + (i % 5) * 180;
    const y = top + Math.floor(i / 5) * 16;
    const mark =
      shape === 'rect'
        ? `<rect x="${x}" y="${y}" width="14" height="10" fill="${colour}"/>`
        : `<line x1="${x}" y1="${y + 5}" x2="${x + 14}" y2="${y + 5}" stroke="${colour}" stroke-width="2"${shape === 'dash' ? ' stroke-dasharray="4 2"' : ''}/>`;
    return `<g class="legend" data-label="${esc(label)}">${mark}<text x="${x + 20}" y="${y + 9}" ${FONT}>${esc(label)}</text></g>`;
  });
}

/** The SVG document for a timeline, titled `title`. */
export function renderTimelineSvg(timeline: Timeline, title: string): string {
  const scale = new Scale(timeline.endMs);
  const rowsBottom = TOP + timeline.nodes.length * ROW;
  const chartTop = rowsBottom + 16;
  const legendTop = chartTop + CHART + 16;
  const legendRows = Math.ceil((new Set(timeline.spans.map((s) => s.label)).size + 3) / 5);
  const height = legendTop + legendRows * 16 + 8;
  const width = LEFT + WIDTH + 20;
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}">`,
    `<rect width="100%" height="100%" fill="#ffffff"/>`,
    `<text x="${LEFT}" y="18" font-family="sans-serif" font-size="13" font-weight="bold">${esc(title)}</text>`,
    ...axis(timeline, scale, rowsBottom),
    ...rows(timeline, scale),
    ...chart(timeline, scale, chartTop),
    ...legend(timeline, legendTop),
    '</svg>',
    '',
  ].join('\n');
}

/** An HTML page with the picture and the report under it. */
export function renderTimelineHtml(timeline: Timeline, title: string, report: readonly string[]): string {
  return [
    '<!doctype html>',
    '<html lang="en"><head><meta charset="utf-8">',
    `<title>${esc(title)}</title>`,
    '<style>body{font-family:sans-serif;margin:16px}pre{font-size:12px}</style>',
    '</head><body>',
    renderTimelineSvg(timeline, title),
    `<pre>${esc(report.join('\n'))}</pre>`,
    '</body></html>',
    '',
  ].join('\n');
}
