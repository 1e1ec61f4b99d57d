// What reaches the notify URL of all the agent could tell: the kinds --notify-events names (default
// all), and of each kind at most one message per node and period, so that a failure judged again on
// every pass (a node holding its slot past its readiness timeout, an overdue node) is told once.
import { monotonicMs, type Clock } from '../clock/clock.js';
import type { Notifier, NotifyEvent } from './notifier.js';

export interface NoticeFilterOptions {
  /** --notify-events: the kinds sent. */
  events: readonly NotifyEvent[];
  /** --period: the same kind for the same node is sent at most once per period. */
  periodMs: number;
  clock: Clock;
}

/** Kinds sent whenever they happen: each is a step of a cycle, told once by the cycle itself. */
const ALWAYS_NEW: ReadonlySet<NotifyEvent> = new Set<NotifyEvent>(['drain', 'reboot', 'uncordon']);

/** `inner` with --notify-events and the once-per-period rule applied. */
export class NoticeFilter implements Notifier {
  private readonly sent = new Map<string, number>();
  private readonly wanted: ReadonlySet<NotifyEvent>;

  constructor(
    private readonly inner: Notifier,
    private readonly o: NoticeFilterOptions,
  ) {
    this.wanted = new Set(o.events);
  }

  async notify(event: NotifyEvent, node: string, message: string): Promise<void> {
    if (!this.wanted.has(event)) return;
    if (!ALWAYS_NEW.has(event)) {
      const key = `${event}\u0000${node}`;
      const now = monotonicMs(this.o.clock);
      const last = this.sent.get(key);
      if (last !== undefined && now - last < this.o.periodMs) return;
      this.sent.set(key, now);
    }
    await this.inner.notify(event, node, message);
  }
}
