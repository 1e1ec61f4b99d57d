// A node's Alertmanager silences for its reboot cycle (issue 56): created before the drain, one per
// --silence-matcher, as a lease of --silence-duration renewed at half of it while the cycle runs
// (after the reboot by the node's new agent), and ended --silence-tail after the uncordon. A node that
// does not come back renews nothing: its silences run out and its failure pages.
//
// Its silences are found by their comment, which names the node and the cycle (its start): a
// restarted agent, or one whose create was answered with an error after Alertmanager kept it,
// renews the silence it finds and never makes a second. A silence is a courtesy, not a gate:
// Alertmanager down is said as a warning and counted, and the cycle goes on.
import type { Clock } from '../clock/clock.js';
import type { Logger } from '../log/logger.js';
import { errorText } from '../text/error-text.js';
import type { Silence, SilenceApi, SilenceBody } from './alertmanager.js';
import { forNode, type Matcher } from './matchers.js';

/** Read through a call so that the compiler does not narrow it across awaits. */
function aborted(signal: AbortSignal): boolean {
  return signal.aborted;
}

/** How often keep() looks whether the silences held are due for renewal (at most). */
const KEEP_EVERY_MS = 60_000;

/** The author of every silence of ours. */
export const SILENCE_CREATOR = 'kured-ts';

/** How the comment of a node's silences begins: "kured-ts: reboot of NODE, ". */
function commentPrefix(node: string): string {
  return `kured-ts: reboot of ${node}, `;
}

/** The node a comment of ours names; undefined when the comment is not one of ours. */
export function nodeOfComment(comment: string): string | undefined {
  return /^kured-ts: reboot of (.+?), cycle /.exec(comment)?.[1];
}

/** `s` as written again, ending at `endsAt`. */
function ended(s: Silence, endsAt: string): SilenceBody {
  const { id, matchers, startsAt, createdBy, comment } = s;
  return { id, matchers, startsAt, endsAt, createdBy, comment };
}

export interface SilenceKeeperOptions {
  api: SilenceApi;
  node: string;
  /** The --silence-matcher sets ({{.node}} not yet replaced). */
  sets: readonly (readonly Matcher[])[];
  /** --silence-duration and --silence-tail. */
  durationMs: number;
  tailMs: number;
  clock: Clock;
  log: Logger;
  /** A request to Alertmanager failed (kured_ts_silence_errors_total). */
  failed: () => void;
}

export class SilenceKeeper {
  /** When the silences held now are next renewed (ms since the epoch); undefined: look first. */
  private renewAt: number | undefined;
  /** Whether this node may still hold a silence whose tail is not set (unknown at the start). */
  private mayHold = true;
  /** The start of the cycle whose silences are held (the decision's last word), renewed by keep(). */
  private cycle: string | undefined;

  constructor(private readonly o: SilenceKeeperOptions) {}

  /**
   * In the cycle begun at `started`: each silence live for another --silence-duration when less than
   * half of it is left (created when missing). Never rejects.
   */
  async hold(started: string, signal?: AbortSignal): Promise<void> {
    this.cycle = started;
    const now = this.o.clock.now().getTime();
    if (this.renewAt !== undefined && now < this.renewAt) return;
    await this.guarded('hold its silences', async () => {
      const ours = await this.ours(signal);
      const comment = `${commentPrefix(this.o.node)}cycle ${started}`;
      let firstEnd = Number.POSITIVE_INFINITY;
      const until = new Date(now + this.o.durationMs).toISOString();
      for (const [i, set] of this.o.sets.entries()) {
        const text = this.o.sets.length === 1 ? comment : `${comment} (${i + 1}/${this.o.sets.length})`;
        const found = ours.find((s) => s.comment === text);
        const left = found === undefined ? 0 : Date.parse(found.endsAt) - now;
        if (left >= this.o.durationMs / 2) {
          firstEnd = Math.min(firstEnd, now + left);
          continue;
        }
        const body = {
          matchers: forNode(set, this.o.node),
          startsAt: found?.startsAt ?? new Date(now).toISOString(),
          endsAt: until,
          createdBy: SILENCE_CREATOR,
          comment: text,
        };
        await this.o.api.save(found === undefined ? body : { ...body, id: found.id }, signal);
        firstEnd = Math.min(firstEnd, now + this.o.durationMs);
      }
      this.mayHold = true;
      // renewed when the first of them has half its lease left
      this.renewAt = firstEnd - this.o.durationMs / 2;
    });
  }

  /** No cycle (it ended): every live silence of this node's ends within --silence-tail. Never rejects. */
  async release(signal?: AbortSignal): Promise<void> {
    this.cycle = undefined;
    if (!this.mayHold) return;
    const now = this.o.clock.now().getTime();
    await this.guarded('end its silences', async () => {
      const end = new Date(now + this.o.tailMs).toISOString();
      for (const s of await this.ours(signal))
        if (Date.parse(s.endsAt) > now + this.o.tailMs) await this.o.api.save(ended(s, end), signal);
      this.mayHold = false;
      this.renewAt = undefined;
    });
  }

  /**
   * Renews the silences of the cycle held last while `signal` lives: a pass can last an hour (a
   * drain) and the wait after the reboot has none while nothing changes. Never rejects.
   */
  async keep(signal: AbortSignal): Promise<void> {
    const every = Math.min(KEEP_EVERY_MS, this.o.durationMs / 4);
    while (!signal.aborted) {
      await this.o.clock.sleep(every, signal).catch(() => undefined);
      if (!aborted(signal) && this.cycle !== undefined) await this.hold(this.cycle, signal);
    }
  }

  /** The live silences of this node's (ours, active or pending). */
  private async ours(signal?: AbortSignal): Promise<Silence[]> {
    const prefix = commentPrefix(this.o.node);
    return (await this.o.api.list(signal)).filter(
      (s) => s.createdBy === SILENCE_CREATOR && s.comment.startsWith(prefix) && s.state !== 'expired',
    );
  }

  private async guarded(what: string, work: () => Promise<void>): Promise<void> {
    try {
      await work();
    } catch (err) {
      this.o.failed();
      this.o.log.warn(`cannot ${what} in Alertmanager; the cycle goes on without them`, {
        error: errorText(err),
      });
    }
  }
}
