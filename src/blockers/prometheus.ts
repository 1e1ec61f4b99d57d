// PrometheusBlocker: active ALERTS block a reboot, with kured's filter semantics.
import type { Blocker, Verdict } from './blocker.js';
import {
  parseAlertsResponse,
  queryPrometheus,
  type PrometheusOptions,
  type Sample,
} from './prometheus-client.js';
import { errorText } from '../text/error-text.js';
import type { Cover } from '../silence/cover.js';

export interface PrometheusBlockerOptions extends PrometheusOptions {
  /** --alert-filter-regexp: undefined = every alert counts. */
  filter: RegExp | undefined;
  /** --alert-filter-match-only: the filter selects the alerts that count instead of ignoring them. */
  matchOnly: boolean;
  /** --alert-firing-only: pending alerts do not count. */
  firingOnly: boolean;
  /**
   * The alerts not counted: those our silences for other nodes in their cycle cover (--alertmanager-url,
   * src/silence/cover.ts). When it cannot be had, every alert counts.
   */
  cover?: (signal?: AbortSignal) => Promise<Cover>;
}

/** kured's matchesRegex: no filter counts everything; else match == matchOnly. */
function counts(filter: RegExp | undefined, matchOnly: boolean, alertName: string): boolean {
  if (filter === undefined) return true;
  filter.lastIndex = 0;
  return filter.test(alertName) === matchOnly;
}

/** An alert's own labels, as Alertmanager matches them: ALERTS' series less its name and state. */
function labelsOf(sample: Sample): Record<string, string> {
  const labels = { ...sample.metric };
  delete labels.__name__;
  delete labels.alertstate;
  return labels;
}

export class PrometheusBlocker implements Blocker {
  readonly name = 'prometheus';

  constructor(private readonly options: PrometheusBlockerOptions) {}

  /** Names of the alerts that block now, sorted; throws when Prometheus cannot say. */
  async activeAlerts(signal?: AbortSignal): Promise<string[]> {
    const samples = parseAlertsResponse(await queryPrometheus(this.options, 'ALERTS', signal));
    const counted = samples.filter(
      (s) => s.metric.alertname !== undefined && this.counts(s.metric.alertname, s),
    );
    // Alertmanager is asked only when an alert would block (kube-prometheus' Watchdog, filtered, never does)
    const covered = counted.length === 0 ? undefined : await this.coverOf(signal);
    const names = new Set<string>();
    for (const sample of counted)
      if (covered?.(labelsOf(sample)) !== true) names.add(sample.metric.alertname ?? '');
    return [...names].sort();
  }

  /** The cover of our silences for other nodes; undefined (every alert counts) when there is none. */
  private async coverOf(signal?: AbortSignal): Promise<Cover | undefined> {
    if (this.options.cover === undefined) return undefined;
    try {
      return await this.options.cover(signal);
    } catch {
      return undefined;
    }
  }

  private counts(name: string, sample: Sample): boolean {
    if (sample.value === 0) return false;
    if (!counts(this.options.filter, this.options.matchOnly, name)) return false;
    return !this.options.firingOnly || sample.metric.alertstate === 'firing';
  }

  async check(signal?: AbortSignal): Promise<Verdict> {
    let alerts: string[];
    try {
      alerts = await this.activeAlerts(signal);
    } catch (err) {
      if (signal?.aborted) throw err;
      const text = errorText(err);
      return { blocked: true, reason: `cannot query Prometheus alerts: ${text}` };
    }
    if (alerts.length === 0) return { blocked: false };
    return { blocked: true, reason: `${alerts.length} active alert(s): ${alerts.join(', ')}` };
  }
}
