// A hand-written Alertmanager of our SilenceApi: the silences in memory, with their state by the
// given clock (active until endsAt), every save recorded; `down` makes every call fail.
import type { Clock } from '../../src/clock/clock.js';
import type { Silence, SilenceApi, SilenceBody } from '../../src/silence/alertmanager.js';

export class FakeAlertmanager implements SilenceApi {
  readonly silences = new Map<string, SilenceBody & { id: string }>();
  readonly saves: (SilenceBody & { id: string })[] = [];
  down = false;
  private next = 0;

  constructor(private readonly clock: Clock) {}

  list(): Promise<Silence[]> {
    if (this.down) return Promise.reject(new Error('connect ECONNREFUSED'));
    const now = this.clock.now().getTime();
    return Promise.resolve(
      [...this.silences.values()].map((s) => ({
        ...s,
        state: Date.parse(s.endsAt) > now ? 'active' : 'expired',
      })),
    );
  }

  save(silence: SilenceBody): Promise<string> {
    if (this.down) return Promise.reject(new Error('connect ECONNREFUSED'));
    const id = silence.id ?? `s${++this.next}`;
    const saved = { ...silence, id };
    this.silences.set(id, saved);
    this.saves.push(saved);
    return Promise.resolve(id);
  }

  /** The silences live at the clock's now. */
  live(): (SilenceBody & { id: string })[] {
    const now = this.clock.now().getTime();
    return [...this.silences.values()].filter((s) => Date.parse(s.endsAt) > now);
  }
}
