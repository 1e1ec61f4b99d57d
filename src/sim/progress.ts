// Live progress of a simulation: one phase bar per node on a terminal, plain lines otherwise.
import type { PhaseChange } from './observer.js';
import { shortDuration } from '../text/duration.js';

/** Where progress goes. */
export interface ProgressOutput {
  /** Writes text as is (the TTY view uses cursor movement). */
  write(text: string): void;
  isTTY: boolean;
  /** Terminal width; default 80. */
  columns?: number;
}

/** The phases of one reboot, in order; the bar fills up to the current one. */
const STEPS = ['pending', 'waiting-for-lock', 'draining', 'rebooting', 'verifying', 'completed'];

const SYMBOL: Record<string, string> = {
  idle: '·',
  pending: 'p',
  'outside-window': 'o',
  blocked: 'B',
  'waiting-for-lock': 'w',
  'awaiting-approval': 'a',
  draining: 'D',
  rebooting: 'R',
  verifying: 'v',
  completed: '✓',
  failed: '✗',
};

/** How far through its reboot a node is, 0..1 (blocked counts as pending). */
function fraction(phase: string, rebooted: boolean): number {
  if (rebooted && (phase === 'idle' || phase === 'completed')) return 1;
  const held = ['blocked', 'outside-window', 'awaiting-approval'].includes(phase);
  const step = STEPS.indexOf(held ? 'pending' : phase);
  return step < 0 ? 0 : (step + 1) / STEPS.length;
}

export class ProgressView {
  private readonly phases = new Map<string, { phase: string; reason: string; rebooted: boolean }>();
  private drawnLines = 0;
  private lastDraw = 0;

  constructor(
    private readonly out: ProgressOutput,
    private readonly nodes: readonly string[],
    /** Wall-clock source for throttling redraws. */
    private readonly wallNow: () => number = Date.now,
  ) {
    for (const n of nodes) this.phases.set(n, { phase: 'starting', reason: '', rebooted: false });
  }

  /** A node changed phase at `atMs` of virtual time. */
  update(change: PhaseChange): void {
    const prev = this.phases.get(change.node);
    const rebooted =
      (prev?.rebooted ?? false) || change.phase === 'verifying' || change.phase === 'completed';
    this.phases.set(change.node, { phase: change.phase, reason: change.reason, rebooted });
    if (!this.out.isTTY) {
      const reason = change.reason === '' ? '' : ` (${change.reason})`;
      this.out.write(`+${shortDuration(change.atMs).padStart(6)} ${change.node} ${change.phase}${reason}\n`);
      return;
    }
    if (this.wallNow() - this.lastDraw >= 100) this.draw(change.atMs);
  }

  /** Final redraw (TTY) so that the last state stays on screen. */
  finish(atMs: number): void {
    if (this.out.isTTY) this.draw(atMs);
  }

  private draw(atMs: number): void {
    this.lastDraw = this.wallNow();
    const width = Math.max(40, this.out.columns ?? 80);
    const barWidth = 20;
    const shown = this.nodes.slice(0, 60);
    const lines = shown.map((name) => {
      const p = this.phases.get(name) ?? { phase: 'starting', reason: '', rebooted: false };
      const filled = Math.round(fraction(p.phase, p.rebooted) * barWidth);
      const bar = '█'.repeat(filled) + '░'.repeat(barWidth - filled);
      const text = `${name} ${bar} ${SYMBOL[p.phase] ?? '?'} ${p.phase}${p.reason === '' ? '' : `: ${p.reason}`}`;
      return text.slice(0, width - 1);
    });
    if (this.nodes.length > shown.length) lines.push(`… ${this.nodes.length - shown.length} more nodes`);
    lines.push(`simulated time +${shortDuration(atMs)}`);
    const up = this.drawnLines > 0 ? `\x1b[${this.drawnLines}A` : '';
    this.out.write(up + lines.map((l) => `\x1b[2K${l}\n`).join(''));
    this.drawnLines = lines.length;
  }
}
