// The agent's liveness: a clock that reports the loop alive whenever it waits on purpose.
import { monotonicMs, type Clock } from '../clock/clock.js';

/**
 * Wraps the clock the agent and its seams (drainer, lock, node operations, events) sleep on, so that
 * every wait they choose beats the heart (`beat`, which feeds /healthz) when it starts, at least
 * every `beatEveryMs` while it lasts, and when it ends.
 *
 * What "stuck" means, then: for 2 periods nothing the agent awaits has come back to a timer, i.e.
 * an API request, watch or command hangs past every bound. A wait the agent chose is not stuck,
 * however long: the jittered period, --drain-delay, --reboot-delay, --lock-release-delay, drain polls
 * and eviction back-offs (with --drain-timeout 0 a drain may poll forever: by request), the
 * post-reboot readiness polls, the wait for a lock slot. Killing the pod would end none of these
 * sooner (the agent resumes them from the cluster's records); the status annotation says what it
 * waits for. Sleeps longer than `beatEveryMs` are split into slices, which also keeps each timer
 * well below setTimeout's 24.8-day limit.
 */
export class HeartbeatClock implements Clock {
  constructor(
    private readonly inner: Clock,
    private readonly beat: (at: Date) => void,
    /** Longest quiet stretch inside one sleep; > 0. The agent uses half its --period. */
    private readonly beatEveryMs: number,
  ) {
    if (!(beatEveryMs > 0))
      throw new Error(`heartbeat interval must be positive, got ${String(beatEveryMs)}`);
  }

  now(): Date {
    return this.inner.now();
  }

  monotonicMs(): number {
    return monotonicMs(this.inner);
  }

  async sleep(ms: number, signal?: AbortSignal): Promise<void> {
    this.beat(this.inner.now());
    let left = ms;
    while (left > this.beatEveryMs) {
      await this.inner.sleep(this.beatEveryMs, signal);
      this.beat(this.inner.now());
      left -= this.beatEveryMs;
    }
    await this.inner.sleep(left, signal);
    this.beat(this.inner.now());
  }
}
